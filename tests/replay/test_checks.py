"""replay.json's checks as figures, and the headline that prints them."""

from __future__ import annotations

import pytest

from scoutless.replay.checks import replay_checks
from scoutless.replay.tables import headline_line


def _entry(first=0.0, p90=100.0, waste=10.0, slack=50.0, success=0.9, kills=3):
    return {
        "time_to_first_job_s": {"p50": first, "p90": first},
        "task_completion_s": {"p50": p90 / 2, "p90": p90},
        "first_attempt_success": success,
        "memory_kills": kills,
        "walltime_kills": kills,
        "wasted_core_hours": waste,
        "memory_slack_gb_hours": slack,
    }


STRATEGIES = {
    "scouts": _entry(first=4816.0, p90=200.0, waste=30.0, slack=80.0, success=0.8, kills=5),
    "predicted": _entry(first=0.0, waste=21.0, slack=44.0),
    "hybrid": _entry(first=0.0, p90=140.0, waste=15.0, slack=60.0),
    "bayes": _entry(waste=20.0, slack=50.0),
    "oracle": _entry(first=0.0, p90=120.0, waste=10.0, slack=90.0, success=1.0, kills=0),
}


def test_the_hybrid_against_the_scouts_on_every_metric():
    checks = replay_checks(STRATEGIES)["hybrid_vs_scouts"]
    rows = {r["metric"]: r for r in checks["rows"]}
    assert rows["completion P90 (s)"]["figures"] == {"hybrid": 140.0, "scouts": 200.0}
    assert rows["completion P90 (s)"]["met"] and rows["first-attempt success"]["met"]
    assert checks["all_met"] is True
    assert checks["not_measured"] == [  # not in these entries
        "memory slack, relative", "walltime slack (core·h)", "walltime slack, relative",
        "priced total (core·h)",
    ]  # fmt: skip
    worse = dict(STRATEGIES, hybrid=_entry(p90=250.0))
    assert replay_checks(worse)["hybrid_vs_scouts"]["all_met"] is False


def test_the_share_of_the_scouts_gap_to_oracle_that_the_hybrid_closes():
    rows = {r["metric"]: r for r in replay_checks(STRATEGIES)["gap_closed"]["rows"]}
    completion = rows["completion P90 (s)"]
    assert completion["closed"] == pytest.approx((200 - 140) / (200 - 120))  # 75 %
    assert completion["met"] is True
    assert (
        rows["wasted core-hours"]["closed"] == pytest.approx(15 / 20)
        and rows["wasted core-hours"]["met"]
    )
    slack = rows["memory slack (GB·h)"]  # the oracle holds more slack than the scouts
    assert slack["closed"] is None and slack["met"] is None and "do not trail" in slack["note"]


def test_predicted_within_ten_percent_of_bayes():
    rows = {r["metric"]: r for r in replay_checks(STRATEGIES)["predicted_vs_bayes"]["rows"]}
    assert rows["wasted core-hours"]["relative_difference"] == pytest.approx(0.05)
    assert rows["wasted core-hours"]["met"] is True
    assert rows["memory slack (GB·h)"]["relative_difference"] == pytest.approx(-0.12)
    assert rows["memory slack (GB·h)"]["met"] is False


def test_a_check_whose_strategy_did_not_run_is_left_out():
    only = {k: STRATEGIES[k] for k in ("scouts", "hybrid")}
    assert set(replay_checks(only)) == {"hybrid_vs_scouts"}


def test_the_headline_prints_each_sides_figure_and_the_goal_apart():
    document = {"strategies": STRATEGIES, "skipped": {"selective": "no bundle"}}
    text = headline_line(document)
    first = next(line for line in text.splitlines() if line.startswith("first production job"))
    # the scouts' own figure, not 1 % of it; the bound comes with the goal
    assert "predicted 0, scouts 4,816" in first
    assert "goal: predicted ≤ 1% of scouts' (≤ 48.160)" in first and "met" in first
    assert "hybrid vs scouts, completion P90 (s): hybrid 140, scouts 200" in text
    assert "closes 75% of the gap" in text
    assert "predicted vs bayes, memory slack (GB·h): predicted 44, bayes 50" in text
    assert "-12.0%" in text and "missed" in text
    assert "selective not run: no bundle" in text


def test_the_report_section_lists_the_checks_and_draws_six_strategies():
    from scoutless.replay.report import replay_section

    names = ["scouts", "predicted", "hybrid", "selective", "bayes", "oracle"]
    strategies = {n: dict(STRATEGIES.get(n, _entry()), tasks_broken=0, tasks_exhausted=0,
                          cdf={"task_completion_s": [1.0, 10.0], "memory_slack_gb_hours": [0.5, 2.0]})
                  for n in names}  # fmt: skip
    section = replay_section({"strategies": strategies})
    assert section["names"] == names and section["figures"]["cdfs"]
    assert any(line.startswith("hybrid vs scouts") for line in section["checks"])
    assert not any("[green]" in line or "[red]" in line for line in section["checks"])


def test_on_a_trace_selective_is_checked_against_the_request():
    trace = {"request": _entry(waste=30.0, slack=80.0, success=0.6),
             "selective": _entry(waste=10.0, slack=90.0, success=0.9)}  # fmt: skip
    checks = replay_checks(trace)
    assert set(checks) == {"selective_vs_request"}
    rows = {r["metric"]: r["met"] for r in checks["selective_vs_request"]["rows"]}
    assert rows == {"first-attempt success": True, "wasted core-hours": True,
                    "memory slack (GB·h)": False}  # fmt: skip
    assert "selective vs the users' requests, wasted core-hours: selective 10, request 30" in (
        headline_line({"strategies": trace})
    )


def test_a_miss_is_laid_at_the_reference_that_does_worse_too():
    """oracle holds more memory slack than the scouts (slots), bayes wastes more core-hours
    than they do, and both finish sooner: only the completion misses are the model's."""
    from scoutless.replay.tables import check_line

    strategies = dict(
        STRATEGIES,
        hybrid=_entry(first=0.0, p90=250.0, waste=15.0, slack=85.0),
        bayes=_entry(waste=40.0, slack=50.0),
    )
    checks = replay_checks(strategies)["hybrid_vs_scouts"]
    rows = {r["metric"]: r for r in checks["rows"]}
    slack = rows["memory slack (GB·h)"]
    assert slack["met"] is False and slack["bounded_by"] == "oracle"
    assert "(oracle does worse than scouts too)" in check_line("hybrid_vs_scouts", slack, False)
    assert rows["wasted core-hours"]["met"] and rows["wasted core-hours"]["bounded_by"] == "bayes"
    assert rows["completion P90 (s)"]["met"] is False
    assert rows["completion P90 (s)"]["bounded_by"] is None
    assert checks["model_misses"] == ["completion P50 (s)", "completion P90 (s)"]
    assert "too" not in check_line("hybrid_vs_scouts", rows["completion P90 (s)"], False)


def test_without_references_no_miss_is_explained():
    only = {k: STRATEGIES[k] for k in ("scouts", "hybrid")}
    worse = dict(only, hybrid=_entry(p90=250.0))
    checks = replay_checks(worse)["hybrid_vs_scouts"]
    assert all(r["bounded_by"] is None for r in checks["rows"])
    assert "completion P90 (s)" in checks["model_misses"]


def test_an_online_goal_is_laid_at_the_reference_that_misses_it_too():
    """Each online row's bound is taken at the goal's factor: bayes's memory slack, 1.1 ×
    the hybrid's, misses 'online ≤ 1.05 × hybrid' too; its waste, 0.6 × the hybrid's,
    meets 'online ≤ 0.7 × hybrid', so that miss is online's alone. ``met`` is unchanged."""
    from scoutless.replay.checks import online_goals

    strategies = dict(
        STRATEGIES,
        hybrid=_entry(p90=140.0, waste=10.0, slack=100.0),
        bayes=_entry(p90=220.0, waste=6.0, slack=110.0),
        online=_entry(p90=210.0, waste=8.0, slack=112.0, kills=1),
        oracle=_entry(p90=120.0, waste=0.0, slack=90.0, success=1.0, kills=0),
    )
    rows = {r["goal"] + " " + r["metric"]: r for r in online_goals(strategies)["rows"]}
    slack = rows["online ≤ 1.05 × hybrid memory slack (GB·h)"]
    assert slack["met"] is False and slack["bounded_by"] == "bayes"
    waste = rows["online ≤ 0.7 × hybrid wasted core-hours"]
    assert waste["met"] is False and waste["bounded_by"] is None
    p90 = rows["online ≤ 1 × scouts completion P90 (s)"]
    assert p90["met"] is False and p90["bounded_by"] == "bayes"  # bayes 220 > scouts 200
    kills = rows["online ≤ 0.5 × hybrid memory kills"]
    assert kills["met"] and kills["bounded_by"] == "bayes"  # met where bayes misses
