"""``monitor impact`` on a small hand-made history: per-arm figures computed by hand,
collection that survives PanDA's purge of jobsarchived4, bootstrap differences, and the
clear error for a history without the job columns."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import create_engine, text
from typer.testing import CliRunner

from scoutless.cli.impact_tables import WINDOW_FIGURES
from scoutless.cli.main import app
from scoutless.config import RolloutSettings
from scoutless.history.schema import jedi_tasks, jobsarchived4, metadata
from scoutless.ops.impact import FIGURES, arm_difference, impact_report, task_figures
from scoutless.ops.impact_store import ImpactError, collect_impact
from scoutless.ops.prediction_log import PredictionLog
from scoutless.ops.report import excludes_zero

SETTINGS = RolloutSettings()

T0 = datetime(2026, 3, 2, 8, 0, 0)
H = timedelta(hours=1)


def _task(tid: int, status: str = "done") -> dict:
    return {"jeditaskid": tid, "username": "u", "status": status, "creationdate": T0,
            "modificationtime": T0, "gshare": "MC", "processingtype": "simul",
            "corecount": 1, "ramcount": 2000, "walltime": 7200}  # fmt: skip


def _job(pid: int, tid: int, start_h: float, wall_h: float, *, status: str = "finished",
         attempt: int = 1, code: int = 0, scout: bool = False, ram: int = 2000,
         pss_mb: float = 1000, wlimit: int = 7200) -> dict:  # fmt: skip
    start = T0 + start_h * H
    end = start + wall_h * H
    return {"pandaid": pid, "modificationtime": end, "jeditaskid": tid, "jobstatus": status,
            "specialhandling": "sj" if scout else None, "attemptnr": attempt,
            "creationtime": start, "piloterrorcode": code, "cpuconsumptiontime": 0,
            "nevents": 100, "corecount": 1, "maxpss": int(pss_mb * 1024), "starttime": start,
            "endtime": end, "minramcount": ram, "maxwalltime": wlimit, "maxcpucount": wlimit}  # fmt: skip


#: task 1 (canary): no scouts; a job killed at its walltime limit, retried; one clean job
#: task 2 (canary): two clean jobs; task 3 (control): a scout, then a production job
#: task 4 (control): a scout killed for memory (1212), retried, then a production job
JOBS = [
    _job(11, 1, 0.5, 2.0, status="failed", code=1213, wlimit=7200),
    _job(12, 1, 3.0, 1.0, attempt=2),
    _job(13, 1, 0.5, 1.0),
    _job(21, 2, 1.0, 1.0),
    _job(22, 2, 1.0, 1.0),
    _job(31, 3, 0.25, 1.0, scout=True),
    _job(32, 3, 2.0, 1.0),
    _job(41, 4, 0.25, 0.5, status="failed", code=1212, scout=True, pss_mb=2500),
    _job(42, 4, 1.0, 1.0, attempt=2, scout=True),
    _job(43, 4, 4.0, 1.0),
]
ARMS = {1: "canary", 2: "canary", 3: "control", 4: "control"}


@pytest.fixture
def history(tmp_path):  # type: ignore[no-untyped-def]
    engine = create_engine(f"sqlite:///{tmp_path / 'h.sqlite'}")
    metadata.create_all(engine)
    with engine.begin() as conn:
        conn.execute(jedi_tasks.insert(), [_task(t) for t in ARMS])
        conn.execute(jobsarchived4.insert(), JOBS)
    entry = {"class_id": 0, "class_label": "a", "probabilities": [1.0]}
    PredictionLog(engine).write([
        {"request_id": "r", "jeditaskid": t, "model_version": "v", "policy": "risk",
         "alpha": 0.05, "arm": arm, "created_at": T0,
         "predictions": {"memory": {**entry, "recommended_value": 1500.0},
                         "walltime": {**entry, "recommended_value": 3600.0}}}
        for t, arm in ARMS.items()
    ])  # fmt: skip
    return engine


def test_per_arm_figures_equal_the_hand_computed_ones(history) -> None:  # type: ignore[no-untyped-def]
    done = collect_impact(history)
    assert (done.n_read, done.n_final, done.n_jobs) == (4, 4, len(JOBS))
    report = impact_report(history, settings=SETTINGS)
    got = report.per_arm.set_index(["arm", "figure"])["value"]
    # canary: 4 first attempts (11, 13, 21, 22), 3 finished; one walltime kill; one retry
    assert got["canary", "first_attempt_success"] == pytest.approx(3 / 4)
    assert got["canary", "walltime_kills"] == pytest.approx(1 / 4)
    assert got["canary", "retries_per_job"] == pytest.approx(1 / 4)
    assert got["canary", "wasted_core_hours"] == pytest.approx(2.0 / 2)  # 2 h over 2 tasks
    assert got["canary", "first_prod_job_h"] == pytest.approx((0.5 + 1.0) / 2)
    assert got["canary", "completion_h"] == pytest.approx((4.0 + 2.0) / 2)
    # control: first attempts 31, 41, 32, 43 (42 is the retry); 41 killed for memory
    assert got["control", "first_attempt_success"] == pytest.approx(3 / 4)
    assert got["control", "memory_kills"] == pytest.approx(1 / 4)
    assert got["control", "first_prod_job_h"] == pytest.approx((2.0 + 4.0) / 2)
    # memory slack: every attempt; 31, 32, 42, 43 had 2000 MB, used 1000 for 1 h; 41 used
    # more than it had (2500 MB: no slack, not a negative one)
    assert got["control", "memory_slack_gb_hours"] == pytest.approx(4 * 1000 / 1024 / 2)
    assert got["canary", "memory_slack_rel"] == pytest.approx(0.5)
    # walltime slack: 2 h limits; the four finished jobs ran 1 h -> 1 core-hour each, over
    # two tasks; relative 1/2 (Autopilot's, time-weighted)
    assert got["canary", "walltime_slack_core_hours"] == pytest.approx(4 / 2)
    assert got["canary", "walltime_slack_rel"] == pytest.approx(0.5)
    # the prediction would have set 1500 MB and 1 h against the scouts' 2000 MB and 2 h
    assert got["control", "memory_vs_scouts"] == pytest.approx(0.75)
    assert got["control", "walltime_vs_scouts"] == pytest.approx(0.5)
    diff = report.difference("first_prod_job_h")
    assert diff is not None and diff.value == pytest.approx(0.75 - 3.0)


def test_the_collection_survives_the_purge_and_is_idempotent(history) -> None:  # type: ignore[no-untyped-def]
    collect_impact(history)
    before = impact_report(history, settings=SETTINGS).per_arm
    with history.begin() as conn:  # PanDA's retention: jobsarchived4 is emptied
        conn.execute(text("DELETE FROM jobsarchived4"))
    assert collect_impact(history).n_read == 0  # final tasks are not read again
    pd.testing.assert_frame_equal(impact_report(history, settings=SETTINGS).per_arm, before)


def test_a_running_task_is_read_again_until_final(history) -> None:  # type: ignore[no-untyped-def]
    with history.begin() as conn:
        conn.execute(text("UPDATE jedi_tasks SET status = 'running' WHERE jeditaskid = 2"))
    assert collect_impact(history).n_final == 3
    with history.begin() as conn:
        conn.execute(text("UPDATE jedi_tasks SET status = 'done' WHERE jeditaskid = 2"))
    again = collect_impact(history)
    assert (again.n_read, again.n_final) == (1, 1)


def test_bootstrap_interval_covers_the_difference_and_narrows_with_n() -> None:
    rng = np.random.default_rng(0)

    def arm(n: int, p: float) -> pd.DataFrame:
        ok = rng.binomial(10, p, n).astype(float)
        frame = pd.DataFrame({f"{f}_{k}": 0.0 for f in FIGURES for k in ("num", "den")},
                             index=range(n))  # fmt: skip
        frame["first_attempt_success_num"], frame["first_attempt_success_den"] = ok, 10.0
        return frame

    widths = []
    for n in (200, 800):
        d = next(x for x in arm_difference(arm(n, 0.8), arm(n, 0.9), ("canary", "control"),
                                           n_boot=400, level=0.95) if x.figure ==
                 "first_attempt_success")  # fmt: skip
        assert d.lo < -0.1 < d.hi and d.hi < 0
        widths.append(d.hi - d.lo)
    assert widths[1] == pytest.approx(widths[0] / 2, rel=0.25)  # √4


def test_a_history_without_the_job_columns_is_refused_naming_them(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'old.sqlite'}"
    engine = create_engine(url)
    metadata.create_all(engine)
    with engine.begin() as conn:
        for column in ("minramcount", "maxwalltime"):
            conn.exec_driver_sql(f"ALTER TABLE jobsarchived4 DROP COLUMN {column}")
        conn.execute(jedi_tasks.insert(), [_task(1)])
    entry = {"class_id": 0, "class_label": "a", "recommended_value": 1.0, "probabilities": [1]}
    PredictionLog(engine).write([{"request_id": "r", "jeditaskid": 1, "model_version": "v",
                                  "policy": "risk", "predictions": {"memory": entry}}])  # fmt: skip
    with pytest.raises(ImpactError, match=r"jobsarchived4 lacks maxwalltime, minramcount"):
        collect_impact(engine)
    result = CliRunner().invoke(app, ["monitor", "impact", "--db", url])
    assert result.exit_code == 2
    assert "jobsarchived4" in result.output and "minramcount" in result.output


def test_monitor_impact_cli_prints_tables_and_writes_the_page(history, tmp_path) -> None:  # type: ignore[no-untyped-def]
    url = str(history.url)
    page = tmp_path / "impact.html"
    result = CliRunner().invoke(app, ["monitor", "impact", "--db", url, "--days", "100000",
                                      "--html", str(page)])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "first_attempt_success" in result.output and "canary − control" in result.output
    assert page.read_text().count("<img") >= 3


def test_monitor_impact_whole_in_a_pipe_and_as_json(history) -> None:  # type: ignore[no-untyped-def]
    """Piped, the per-window table keeps its column names whole (rich would cut them at 80
    columns); --format json is the figures alone on stdout, csv one table with its name."""
    args = ["monitor", "impact", "--db", str(history.url), "--days", "100000"]
    drawn = CliRunner().invoke(app, args)
    assert drawn.exit_code == 0, drawn.output
    for name in WINDOW_FIGURES:
        assert name in drawn.stdout
    assert "…" not in drawn.stdout
    as_json = CliRunner().invoke(app, [*args, "--format", "json"])
    doc = json.loads(as_json.stdout)
    assert {"per_arm", "per_window", "differences", "verdict"} <= set(doc)
    assert {row["figure"] for row in doc["per_arm"]} >= {"first_attempt_success"}
    as_csv = CliRunner().invoke(app, [*args, "--format", "csv"])
    assert as_csv.stdout.splitlines()[0].startswith("table,")


def test_task_figures_skip_tasks_without_the_figure() -> None:
    tasks = pd.DataFrame([{**_task(9, status="running")}])
    tasks["final"] = False
    jobs = pd.DataFrame([{**_job(91, 9, 0.1, 1.0, scout=True), "is_scout": True}])
    figures = task_figures(tasks, jobs, settings=SETTINGS)
    assert figures.loc[9, "completion_h_den"] == 0  # not final
    assert figures.loc[9, "first_prod_job_h_den"] == 0  # only a scout so far


def test_promotion_to_full_shows_the_evidence_and_gauges_hold_the_figures(history) -> None:  # type: ignore[no-untyped-def]
    from scoutless.ops.impact import ImpactGauges
    from scoutless.ops.rollout import read_rollout, set_rollout

    collect_impact(history)
    gauges = ImpactGauges()
    gauges.update(impact_report(history, settings=SETTINGS))
    value = gauges.figure.labels("first_attempt_success", "canary")._value.get()
    assert value == pytest.approx(0.75)
    assert gauges.difference.labels("first_prod_job_h", "value")._value.get() == pytest.approx(
        -2.25
    )
    set_rollout(history, "canary", seed=0, share=0.5)
    args = ["rollout", "set", "full", "--reason", "held", "--db", str(history.url)]
    result = CliRunner().invoke(app, args)  # a handful of tasks: not enough evidence
    assert result.exit_code == 2 and "refused: not enough evidence" in result.output
    assert "canary − control" in result.output and "first_attempt_success" in result.output
    assert read_rollout(history).mode == "canary"
    result = CliRunner().invoke(app, [*args, "--force"])
    assert result.exit_code == 0, result.output
    assert read_rollout(history).mode == "full"


def test_the_terminal_shows_the_latest_windows_and_says_how_many_there_are() -> None:
    from types import SimpleNamespace

    from rich.console import Console

    from scoutless.cli.impact_tables import MAX_WINDOWS, print_per_window

    starts = pd.date_range("2026-01-01", periods=MAX_WINDOWS + 5, freq="D")
    rows = [{"window_start": s, "arm": arm, "figure": "first_attempt_success", "value": 0.9,
             "n_tasks": 3} for s in starts for arm in ("canary", "control")]  # fmt: skip
    console = Console(record=True, width=160)
    print_per_window(console, SimpleNamespace(per_window=pd.DataFrame(rows)))
    text = console.export_text()
    assert f"the last {MAX_WINDOWS} of {MAX_WINDOWS + 5} windows" in text
    assert f"{starts[-1]:%Y-%m-%d}" in text and f"{starts[4]:%Y-%m-%d}" not in text
    assert f"{starts[5]:%Y-%m-%d}" in text


def test_the_impact_page_fits_its_window_names_units_marks_and_gives_a_verdict(
    history, tmp_path, browser_layout
) -> None:  # type: ignore[no-untyped-def]
    """Not told a window, `monitor impact` picks one giving at most 40 points; figures carry
    a person's name, their better direction, their unit and say they are means; significant digits, no NaN or -0; rows whose interval
    excludes zero are marked; one verdict line; the page renders without titles overlapping."""
    from scoutless.ops.impact import FIGURE_UNITS, WINDOWS, window_for

    assert set(FIGURE_UNITS) == set(FIGURES)
    for days in (0.5, 30, 400, 5000):
        every = window_for(days)
        assert days / dict(WINDOWS)[every] <= 40 or every == WINDOWS[-1][0]
    assert window_for(400) == "14D" and window_for(30) == "1D"
    page = tmp_path / "impact.html"
    result = CliRunner().invoke(app, ["monitor", "impact", "--db", str(history.url), "--days",
                                      "400", "--html", str(page)])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "window 14D" in result.output and "guard rail would" in result.output
    assert "mean over tasks" in result.output
    html = re.sub(r'src="data:[^"]*"', "", page.read_text())  # the text, not the PNGs
    assert "guard rail would" in html
    assert "time to the first production job per window (h, mean over tasks; lower is better)" in html
    assert "first-attempt success per window (share, pooled over first attempts; higher is better)" in html
    assert not re.findall(r'<td class="t">\w+_\w+</td>', html)  # no figure in snake_case
    assert "<td class=\"t\">memory kills per job</td><td class=\"t\">↓ better</td>" in html
    assert "<td class=\"t\">first-attempt success</td><td class=\"t\">↑ better</td>" in html
    assert "NaN" not in html and ">-0<" not in html and ">nan<" not in html
    marked = html.count('class="excludes-zero"')
    report = impact_report(history, every="14D", settings=SETTINGS)
    assert marked == sum(excludes_zero(d) for d in report.differences if np.isfinite(d.value))
    assert report.per_window["window_start"].nunique() <= 40
    layout = browser_layout(page)
    assert layout["images"] >= 3 and layout["loaded"] == layout["images"], layout
    assert not layout["overlaps"], layout["overlaps"]
