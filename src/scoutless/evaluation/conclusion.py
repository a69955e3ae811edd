"""The evaluation in one sentence, computed from the metrics dict: what the bundle serves
against the incumbents (the scouts, an operator's history heuristic), and how often a task
gets every target right. It says only what the metrics hold: a missing baseline or pipeline
leaves its clause out."""

from __future__ import annotations

from collections import Counter
from typing import Any

#: the baselines the sentence compares with, in order: what PanDA does, what an operator
#: would script
RIVALS: dict[str, str] = {"scouts": "the scouts", "history": "the history baseline"}


def _served(entry: dict[str, Any]) -> str | None:
    """The model the bundle serves for a target: its champion, else its most accurate."""
    models = entry["models"]
    champion = entry.get("champion")
    if champion in models and models[champion].get("accuracy") is not None:
        return str(champion)
    scored = {n: m["accuracy"] for n, m in models.items()
              if m.get("kind") == "model" and m.get("accuracy") is not None}  # fmt: skip
    return max(scored, key=scored.__getitem__) if scored else None


def _who(served: Counter[str], n_targets: int) -> str:
    """``xgb on all 4 targets`` or ``xgb on 3, dnn on 1``."""
    if len(served) == 1:
        name, count = next(iter(served.items()))
        return f"{name} on all {n_targets} targets" if count == n_targets else f"{name} on {count}"
    return ", ".join(f"{name} on {count}" for name, count in served.most_common())


def _wins(metrics: dict[str, Any], served: dict[str, str]) -> list[str]:
    """Per rival present: on how many targets the served model is strictly more accurate."""
    clauses = []
    for rival, words in RIVALS.items():
        pairs = [
            (entry["models"][served[t]]["accuracy"], entry["models"][rival].get("accuracy"))
            for t, entry in metrics["targets"].items()
            if t in served and rival in entry["models"]
        ]
        pairs = [(ours, theirs) for ours, theirs in pairs if theirs is not None]
        if pairs:
            won = sum(ours > theirs for ours, theirs in pairs)
            clauses.append(f"{words} on {won} of {len(pairs)}")
    if clauses:
        clauses[0] += " targets"
    return clauses


def _all_right(metrics: dict[str, Any]) -> str | None:
    """How often the served combination gets every target of a task right (the scouts')."""
    pipeline = metrics.get("pipeline") or {}
    served = pipeline.get("champion")
    if not served or served.get("exact_match") is None:
        return None
    n_targets = len(served.get("targets") or metrics["targets"])
    clause = (f"all {n_targets} targets of a task right on {_percent(served['exact_match'])} "
              f"of the {served['n']:,} test tasks")  # fmt: skip
    scouts = pipeline.get("scouts", {}).get("exact_match")
    return clause + (f" (the scouts: {_percent(scouts)})" if scouts is not None else "")


def _percent(share: float) -> str:
    return f"{100 * share:.0f} %"


def conclusion(metrics: dict[str, Any]) -> str | None:
    """One line for the top of the report, or None when no target has a served model."""
    served = {t: s for t, entry in metrics["targets"].items() if (s := _served(entry))}
    if not served:
        return None
    who = _who(Counter(served.values()), len(metrics["targets"]))
    head = f"The models served ({who})"
    wins, right = _wins(metrics, served), _all_right(metrics)
    if wins:
        head += " beat " + " and ".join(wins)
        return head + (f"; they get {right}." if right else ".")
    return f"{head} get {right}." if right else f"The models served: {who}."
