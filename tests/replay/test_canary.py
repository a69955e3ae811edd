"""The replay's canary: the listener's arms, one pool, and a history written as PanDA's
records that ``monitor impact`` reads back to the replay's own per-arm figures."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from sqlalchemy import func, select, text
from typer.testing import CliRunner

from scoutless.allocation.arms import RolloutState, assign
from scoutless.bundle import load_bundle
from scoutless.cli.main import app
from scoutless.config import CanaryHarm, get_settings
from scoutless.history.panda_db import make_engine
from scoutless.history.schema import jedi_tasks, jobsarchived4
from scoutless.ops.impact import impact_report
from scoutless.ops.impact_store import collect_impact
from scoutless.ops.rehearsal import RehearsalError, write_rehearsal
from scoutless.ops.rollout import read_rollout
from scoutless.replay.canary import IMPACT_FIGURES
from scoutless.replay.runner import replay_history

runner = CliRunner()
#: the written history rounds allocations to whole MB and limits to whole seconds
ROUNDING = 2e-3


def _replay(small, tmp_path, **replay):  # type: ignore[no-untyped-def]
    folder, url = small
    settings = get_settings()
    cfg = settings.replay.model_copy(update={"strategies": ["scouts", "canary"], **replay})
    settings = settings.model_copy(update={"replay": cfg})
    kept = []
    document = replay_history(
        url, load_bundle(folder / "bundle"), tmp_path / "out", settings, rehearse=kept.append
    )
    return document, kept[0], settings


@pytest.fixture(scope="module")
def rehearsed(small, tmp_path_factory):  # type: ignore[no-untyped-def]
    tmp = tmp_path_factory.mktemp("canary")
    document, rehearsal, settings = _replay(small, tmp)
    target = f"sqlite:///{tmp / 'written.sqlite'}"
    written = write_rehearsal(rehearsal, small[1], target, settings)
    return document, rehearsal, settings, target, written


def test_the_arms_are_the_listeners_and_the_canary_skips_its_scouts(rehearsed) -> None:  # type: ignore[no-untyped-def]
    document, rehearsal, settings, _, _ = rehearsed
    state = RolloutState("canary", 0.5, settings.rollout.seed)
    eligible = rehearsal.arms != "ineligible"
    for tid, arm, ok in zip(rehearsal.work.task_ids, rehearsal.arms, eligible, strict=True):
        assert arm == assign(state, str(int(tid)), bool(ok)).arm
    n, k = int(eligible.sum()), int((rehearsal.arms == "canary").sum())
    assert abs(k - n / 2) <= 3 * math.sqrt(n / 4), (k, n)
    canary = rehearsal.arms == "canary"
    scouts = rehearsal.unit_is_scout
    assert not scouts[canary[rehearsal.work.task]].any()  # no scout in a canary task
    assert scouts[~canary[rehearsal.work.task]].sum() == rehearsal.work.is_scout[
        ~canary[rehearsal.work.task]
    ].sum()  # control tasks keep every scout
    entry = document["strategies"]["canary"]
    assert entry["rollout"] == {"share": 0.5, "seed": 0, "arm": "selective", "harm": None}
    assert sum(a["n_tasks"] for a in entry["arms"].values()) == rehearsal.work.n_tasks
    # the canary arm waits less for its first production job (no scouts) than the control
    fig = {arm: a["figures"] for arm, a in entry["arms"].items()}
    assert fig["canary"]["first_prod_job_h"] < fig["control"]["first_prod_job_h"]


def test_monitor_impact_reads_back_the_replays_per_arm_figures(rehearsed) -> None:  # type: ignore[no-untyped-def]
    document, rehearsal, settings, target, written = rehearsed
    log = rehearsal.result.attempt_log
    assert (written.tasks, written.jobs) == (rehearsal.work.n_tasks, len(log.unit))
    engine = make_engine(target)
    done = collect_impact(engine)
    assert done.n_read == rehearsal.work.n_tasks
    report = impact_report(engine, every="7D", settings=settings.rollout)
    got = report.per_arm.set_index(["arm", "figure"])
    compared = 0
    for arm, entry in document["strategies"]["canary"]["arms"].items():
        for figure in IMPACT_FIGURES:
            want, have = entry["figures"][figure], got.loc[(arm, figure), "value"]
            if want is None:
                assert np.isnan(have), (arm, figure, have)
                continue
            assert have == pytest.approx(want, rel=ROUNDING, abs=1e-9), (arm, figure)
            compared += 1
    assert compared >= 2 * 12  # canary and control: every figure but walltime_vs_scouts
    assert read_rollout(engine).describe() == "canary share 0.5 seed 0"
    with engine.connect() as conn:
        retries = conn.execute(text("SELECT COUNT(*) FROM jobsarchived4 WHERE attemptnr > 1 "
                                    "AND parentid IS NOT NULL")).scalar()  # fmt: skip
        failed = conn.execute(text("SELECT COUNT(*) FROM jobsarchived4 WHERE jobstatus = "
                                   "'failed' AND piloterrorcode IN (1212, 1213)")).scalar()  # fmt: skip
    assert retries == int((log.attempt > 1).sum()) and failed == int((log.outcome != 0).sum())
    engine.dispose()


def test_a_database_holding_the_tasks_is_refused_and_keeps_its_rows(rehearsed) -> None:  # type: ignore[no-untyped-def]
    _, rehearsal, settings, target, _ = rehearsed
    engine = make_engine(target)
    with engine.connect() as conn:
        before = [conn.execute(select(func.count()).select_from(t)).scalar()
                  for t in (jedi_tasks, jobsarchived4)]  # fmt: skip
    with pytest.raises(RehearsalError, match="already holds"):
        write_rehearsal(rehearsal, target, target, settings)
    with engine.connect() as conn:
        after = [conn.execute(select(func.count()).select_from(t)).scalar()
                 for t in (jedi_tasks, jobsarchived4)]  # fmt: skip
    assert after == before
    engine.dispose()


def test_an_injected_harm_raises_the_canarys_walltime_kills(small, tmp_path) -> None:  # type: ignore[no-untyped-def]
    # the family the canary arm holds most tasks of (which tasks the allocation would
    # scout, and so leaves out of the arm, depends on its prices)
    unharmed = _replay(small, tmp_path)[1]
    in_arm = unharmed.work.kind[unharmed.arms == "canary"].tolist()
    family = max(sorted(set(in_arm)), key=in_arm.count)
    harm = CanaryHarm(cputime_factor=0.25, processingtypes=[family])
    document, rehearsal, _ = _replay(small, tmp_path, canary_harm=harm)
    hit = (rehearsal.arms == "canary") & (rehearsal.work.kind == family)
    assert hit.any()
    kills = rehearsal.result.walltime_kills
    assert kills[hit].sum() > 0
    assert kills[hit].mean() > kills[(rehearsal.arms == "canary") & ~hit].mean()
    assert document["strategies"]["canary"]["rollout"]["harm"]["processingtypes"] == [family]


def test_the_cli_writes_the_history_and_says_how_to_read_it(small, tmp_path) -> None:  # type: ignore[no-untyped-def]
    folder, url = small
    target = f"sqlite:///{tmp_path / 'w.sqlite'}"
    base = ["replay", "--db", url, "--bundle", str(folder / "bundle"), "--out", str(tmp_path)]
    refused = runner.invoke(app, [*base, "--write-history", target])  # no canary strategy
    assert refused.exit_code == 2 and "add 'canary'" in refused.output
    done = runner.invoke(app, [*base, "--strategies", "canary", "--canary-share", "0.3",
                               "--write-history", target], env={"COLUMNS": "200"})  # fmt: skip
    assert done.exit_code == 0, done.output
    assert "monitor impact --db" in done.output and "--days" in done.output
    document = json.loads((tmp_path / "replay.json").read_text())
    assert document["strategies"]["canary"]["rollout"]["share"] == 0.3
    bad = runner.invoke(app, [*base, "--strategies", "canary", "--canary-share", "1.5"])
    assert bad.exit_code == 2 and "canary_share" in bad.output
    aa = runner.invoke(app, [*base, "--strategies", "canary", "--canary-arm", "control"])
    assert aa.exit_code == 0, aa.output
    document = json.loads((tmp_path / "replay.json").read_text())
    assert document["strategies"]["canary"]["rollout"]["arm"] == "control"
    typo = runner.invoke(app, [*base, "--strategies", "canary", "--canary-arm", "onlin"])
    assert typo.exit_code == 2 and "canary_arm" in typo.output
