"""The checks between strategies as computed figures: replay.json's ``checks``.

- ``hybrid_vs_scouts``: the hybrid at least as good as the scouts on every metric, each
  row saying which reference, if any, loses it to the scouts too (``bounded_by``: a miss
  there is not the model's to win) and the misses no reference explains (``model_misses``);
- ``gap_closed``: on completion P90, wasted core-hours and memory slack, wherever the
  scouts trail the oracle, the share of that gap the hybrid closes (goal ≥ 75 %);
- ``predicted_vs_bayes``: predicted within 10 % of bayes on wasted core-hours and memory
  slack (|predicted − bayes| ≤ 10 % of bayes);
- ``bounds``: the references bound on the priced total (``replay/priced.py``): ``oracle``
  ≤ every strategy, ``bayes`` ≤ ``predicted``; a strategy that beats a bound says the
  decision's model of the cost is not the replay's;
- ``first_job``: predicted's P50 time to the first production job ≤ 1 % of the scouts';
- ``online_vs_hybrid``: issue 54's goals for the online strategy, each a ratio of its
  figure to the hybrid's (memory kills ≤ 0.5×, walltime kills ≤ 1×, wasted core-hours
  ≤ 0.7× and ≤ the scouts', priced total ≤ 1×, memory slack ≤ 1.05×, jobs killed for
  memory more than once ≤ 0.2×) and completion P90 ≤ the scouts', each row's
  ``bounded_by`` the reference that misses it too; the leakage guard is ``bounds``'
  oracle ≤ online;
- ``selective_vs_request`` (traces): the cost-aware strategy wastes no more core-hours and
  holds no more memory slack than the users' requests, with first-attempt success at
  least theirs.

Every row carries each side's figure, the goal, and whether it is met (None where a figure
is missing or the check does not apply), so a reader sees both numbers, never only a
bound derived from one of them. A check whose strategies did not run is left out; a metric
the replay does not measure is listed under ``not_measured``. The goals are read, never
tuned to: the replay's rules and prices do not look at them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: (label, path in a strategy's replay.json entry, which way is better)
METRICS: tuple[tuple[str, str, str], ...] = (
    ("time to first job P50 (s)", "time_to_first_job_s.p50", "lower"),
    ("time to first job P90 (s)", "time_to_first_job_s.p90", "lower"),
    ("completion P50 (s)", "task_completion_s.p50", "lower"),
    ("completion P90 (s)", "task_completion_s.p90", "lower"),
    ("first-attempt success", "first_attempt_success", "higher"),
    ("memory kills", "memory_kills", "lower"),
    ("walltime kills", "walltime_kills", "lower"),
    ("wasted core-hours", "wasted_core_hours", "lower"),
    ("memory slack (GB·h)", "memory_slack_gb_hours", "lower"),
    ("memory slack, relative", "memory_slack_relative", "lower"),
    ("walltime slack (core·h)", "walltime_slack_core_hours", "lower"),
    ("walltime slack, relative", "walltime_slack_relative", "lower"),
    ("priced total (core·h)", "priced_total_core_hours", "lower"),
)
#: how the retries went (``replay/metrics.py``'s ``retry_figures``; the last: walltime
#: kills at the short queue's maxtime, a queue chosen when the job was released): kept
#: beside METRICS
RETRY_METRICS: tuple[tuple[str, str, str], ...] = (
    ("jobs killed for memory more than once", "jobs_memory_killed_twice", "lower"),
    ("attempts per job that fitted", "attempts_per_fitted_job", "lower"),
    ("GB·h of failed attempts", "failed_attempts_gb_hours", "lower"),
    ("wasted core-hours at the short queue's maxtime", "wasted_core_hours_short_maxtime",
     "lower"),
)
#: the online strategy's goals (issue 54): (label, path, at most this × the reference's,
#: the reference)
ONLINE_GOALS: tuple[tuple[str, str, float, str], ...] = (
    ("memory kills", "memory_kills", 0.5, "hybrid"),
    ("walltime kills", "walltime_kills", 1.0, "hybrid"),
    ("wasted core-hours", "wasted_core_hours", 0.7, "hybrid"),
    ("wasted core-hours", "wasted_core_hours", 1.0, "scouts"),
    ("priced total (core·h)", "priced_total_core_hours", 1.0, "hybrid"),
    ("memory slack (GB·h)", "memory_slack_gb_hours", 1.05, "hybrid"),
    ("jobs killed for memory more than once", "jobs_memory_killed_twice", 0.2, "hybrid"),
    ("completion P90 (s)", "task_completion_s.p90", 1.0, "scouts"),
)
#: a trace's goal: the cost-aware strategy against the users' own requests
TRACE_METRICS: tuple[tuple[str, str, str], ...] = tuple(
    m for m in METRICS
    if m[1] in ("wasted_core_hours", "memory_slack_gb_hours", "first_attempt_success")
)  # fmt: skip
GAP_METRICS: tuple[str, ...] = (
    "task_completion_s.p90", "wasted_core_hours", "memory_slack_gb_hours",
)  # fmt: skip
GAP_GOAL = 0.75
BAYES_METRICS: tuple[str, ...] = ("wasted_core_hours", "memory_slack_gb_hours")
BAYES_TOLERANCE = 0.10
FIRST_JOB_SHARE = 0.01
#: the references a miss is laid against, in this order: perfect foresight, then the same
#: decision fed each task's true distribution
REFERENCES: tuple[str, ...] = ("oracle", "bayes")
_LABEL = {path: label for label, path, _ in METRICS}


def value_at(entry: Mapping[str, Any] | None, path: str) -> Any:
    """A dotted path's value in a strategy's entry (None where absent)."""
    value: Any = entry
    for key in path.split("."):
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def _number(entry: Mapping[str, Any] | None, path: str) -> float | None:
    value = value_at(entry, path)
    return float(value) if isinstance(value, int | float) else None


def _all_met(rows: list[dict[str, Any]]) -> bool | None:
    """Every decided row met (None: no row could be decided)."""
    decided = [r["met"] for r in rows if r["met"] is not None]
    return all(decided) if decided else None


def _as_good(a: float, b: float, better: str) -> bool:
    return a <= b if better == "lower" else a >= b


def reference_bound(
    strategies: Mapping[str, Mapping[str, Any]], path: str, better: str, incumbent: str,
    factor: float = 1.0,
) -> str | None:  # fmt: skip
    """The first of :data:`REFERENCES` that does worse than ``incumbent`` on a metric (on a
    "lower" one, than ``factor`` × it: a ratio goal's bound), or None where every reference
    that ran does at least as well. ``oracle`` doing worse says no allocation wins the
    metric: with every job given exactly its need, what is left is the order in which work
    meets the pool's queues (a task that waits for its scouts leaves the pool to others
    meanwhile). ``bayes`` doing worse says what is known
    at submission does not win it under these prices: a trade the prices chose, not a
    model's error. Either way a strategy's miss there is no sign of a worse model."""
    theirs = _number(strategies.get(incumbent), path)
    if theirs is None:
        return None
    if better == "lower":
        theirs *= factor
    for reference in REFERENCES:
        figure = _number(strategies.get(reference), path)
        if figure is not None and not _as_good(figure, theirs, better):
            return reference
    return None


def at_least_as_good(
    strategies: Mapping[str, Mapping[str, Any]],
    name: str,
    incumbent: str,
    metrics: tuple[tuple[str, str, str], ...] = METRICS,
    *,
    references: bool = False,
) -> dict[str, Any]:
    """``name`` at least as good as ``incumbent`` on each metric (its figure ≤ or ≥);
    with ``references``, each row's :func:`reference_bound` as ``bounded_by`` and the
    missed rows it does not explain as ``model_misses``."""
    ours, theirs = strategies[name], strategies[incumbent]
    rows, missing = [], []
    for label, path, better in metrics:
        key = path.split(".")[0]
        if key not in ours and key not in theirs:
            missing.append(label)
            continue
        a, b = _number(ours, path), _number(theirs, path)
        met = None if a is None or b is None else _as_good(a, b, better)
        sign = "≤" if better == "lower" else "≥"
        row = {"metric": label, "figures": {name: a, incumbent: b},
               "goal": f"{name} {sign} {incumbent}", "met": met}  # fmt: skip
        if references:
            row["bounded_by"] = reference_bound(strategies, path, better, incumbent)
        rows.append(row)
    out = {"rows": rows, "all_met": _all_met(rows), "not_measured": missing}
    if references:
        out["model_misses"] = model_misses(rows)
    return out


def online_goals(strategies: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Each of :data:`ONLINE_GOALS` whose reference ran: online's figure, the reference's,
    their ratio, and whether online ≤ factor × the reference; each row says which of
    :data:`REFERENCES` misses the goal too (``bounded_by``, :func:`reference_bound` at the
    goal's factor): for completion P90 the issue's own bound (``bayes``: the decision
    with each task's true distribution loses it to the scouts), elsewhere what the reader
    weighs a miss against (``met`` is the goal's alone)."""
    ours = strategies["online"]
    rows = []
    for label, path, factor, reference in ONLINE_GOALS:
        if reference not in strategies:
            continue
        a, b = _number(ours, path), _number(strategies[reference], path)
        ratio = a / b if a is not None and b else None
        met = None if a is None or b is None else a <= factor * b
        row = {"metric": label, "path": path, "figures": {"online": a, reference: b},
               "ratio": ratio, "goal": f"online ≤ {factor:g} × {reference}",
               "met": met}  # fmt: skip
        row["bounded_by"] = reference_bound(strategies, path, "lower", reference, factor)
        rows.append(row)
    return {"rows": rows, "all_met": _all_met(rows)}


def model_misses(rows: list[dict[str, Any]]) -> list[str]:
    """The missed rows no reference explains (``bounded_by`` None): the model's to win."""
    return [r["metric"] for r in rows if r["met"] is False and r.get("bounded_by") is None]


def gap_closed(
    hybrid: Mapping[str, Any], scouts: Mapping[str, Any], oracle: Mapping[str, Any]
) -> dict[str, Any]:
    rows = []
    for path in GAP_METRICS:
        h, s, o = (_number(e, path) for e in (hybrid, scouts, oracle))
        row: dict[str, Any] = {
            "metric": _LABEL[path], "figures": {"hybrid": h, "scouts": s, "oracle": o},
            "goal": f"hybrid closes ≥ {GAP_GOAL:.0%} of the scouts' gap to oracle",
            "closed": None, "met": None,
        }  # fmt: skip
        if h is not None and s is not None and o is not None:
            if s > o:
                row["closed"] = (s - h) / (s - o)
                row["met"] = row["closed"] >= GAP_GOAL
            else:
                row["note"] = "the scouts do not trail oracle here"
        rows.append(row)
    return {"rows": rows, "all_met": _all_met(rows)}


def predicted_vs_bayes(predicted: Mapping[str, Any], bayes: Mapping[str, Any]) -> dict[str, Any]:
    rows = []
    for path in BAYES_METRICS:
        p, b = _number(predicted, path), _number(bayes, path)
        diff = None if p is None or b is None or b == 0 else (p - b) / b
        met = None if diff is None else abs(diff) <= BAYES_TOLERANCE
        if p is not None and b == 0:
            met = p == 0
        rows.append({"metric": _LABEL[path], "figures": {"predicted": p, "bayes": b},
                     "relative_difference": diff,
                     "goal": f"|predicted − bayes| ≤ {BAYES_TOLERANCE:.0%} of bayes",
                     "met": met})  # fmt: skip
    return {"rows": rows, "all_met": _all_met(rows)}


def first_job(predicted: Mapping[str, Any], scouts: Mapping[str, Any]) -> dict[str, Any]:
    path = "time_to_first_job_s.p50"
    p, s = _number(predicted, path), _number(scouts, path)
    bound = None if s is None else FIRST_JOB_SHARE * s
    met = None if p is None or bound is None else p <= bound
    row = {"metric": _LABEL[path], "figures": {"predicted": p, "scouts": s},
           "goal": f"predicted ≤ {FIRST_JOB_SHARE:.0%} of scouts'", "bound": bound,
           "met": met}  # fmt: skip
    return {"rows": [row], "all_met": met}


PRICED = "priced_total_core_hours"


def bounds(strategies: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """``oracle`` ≤ every other strategy and ``bayes`` ≤ ``predicted`` on the priced total
    (rows for the pairs present)."""
    pairs = [("oracle", name) for name in strategies if name != "oracle" and "oracle" in strategies]
    if "bayes" in strategies and "predicted" in strategies:
        pairs.append(("bayes", "predicted"))
    rows = []
    for bound, other in pairs:
        b, o = _number(strategies[bound], PRICED), _number(strategies[other], PRICED)
        met = None if b is None or o is None else b <= o
        rows.append({"metric": _LABEL[PRICED], "figures": {bound: b, other: o},
                     "goal": f"{bound} ≤ {other}", "met": met})  # fmt: skip
    return {"rows": rows, "all_met": _all_met(rows)}


def replay_checks(strategies: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Every check whose strategies are in ``strategies`` (replay.json's entries)."""
    s = strategies.get
    out: dict[str, Any] = {}
    if s("hybrid") and s("scouts"):
        out["hybrid_vs_scouts"] = at_least_as_good(strategies, "hybrid", "scouts", references=True)
    if s("selective") and s("request"):
        out["selective_vs_request"] = at_least_as_good(
            strategies, "selective", "request", TRACE_METRICS
        )
    if s("hybrid") and s("scouts") and s("oracle"):
        out["gap_closed"] = gap_closed(
            strategies["hybrid"], strategies["scouts"], strategies["oracle"]
        )
    if s("online") and s("hybrid"):
        out["online_vs_hybrid"] = online_goals(strategies)
    if s("predicted") and s("bayes"):
        out["predicted_vs_bayes"] = predicted_vs_bayes(strategies["predicted"], strategies["bayes"])
    if s("predicted") and s("scouts"):
        out["first_job"] = first_job(strategies["predicted"], strategies["scouts"])
    if (s("oracle") or (s("bayes") and s("predicted"))) and all(
        PRICED in entry for entry in strategies.values()
    ):
        out["bounds"] = bounds(strategies)
    return out
