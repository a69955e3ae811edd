"""report.html opens with one sentence computed from its metrics, and its chart of all
targets of a task says what its y-axis counts."""

from __future__ import annotations

import copy
import re
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from scoutless.evaluation.conclusion import conclusion
from scoutless.evaluation.plots import pipeline_figure
from scoutless.evaluation.report import render_report

TARGETS = ("memory", "cputime", "io", "walltime")


def _metrics(served: dict[str, float], scouts: dict[str, float]) -> dict[str, Any]:
    """A metrics dict of four targets: the served model's and the scouts' accuracy each."""
    targets = {
        t: {"champion": "xgb", "models": {
            "xgb": {"kind": "model", "accuracy": served[t]},
            "dnn": {"kind": "model", "accuracy": served[t] - 0.1},
            "scouts": {"kind": "baseline", "accuracy": scouts[t]},
        }}
        for t in TARGETS
    }  # fmt: skip
    pipeline = {"champion": {"exact_match": 0.61, "n": 1200, "targets": list(TARGETS)},
                "scouts": {"exact_match": 0.3, "n": 1200, "targets": list(TARGETS)}}  # fmt: skip
    return {"targets": targets, "pipeline": pipeline}


def test_the_sentence_counts_the_wins_and_the_tasks_all_right() -> None:
    metrics = _metrics(dict.fromkeys(TARGETS, 0.8), {**dict.fromkeys(TARGETS, 0.7), "io": 0.9})
    assert conclusion(metrics) == (
        "The models served (xgb on all 4 targets) beat the scouts on 3 of 4 targets; they get "
        "all 4 targets of a task right on 61 % of the 1,200 test tasks (the scouts: 30 %)."
    )


def test_a_missing_baseline_or_pipeline_leaves_its_clause_out() -> None:
    metrics = _metrics(dict.fromkeys(TARGETS, 0.8), dict.fromkeys(TARGETS, 0.7))
    metrics["targets"]["io"]["champion"] = "dnn"
    for entry in metrics["targets"].values():
        del entry["models"]["scouts"]
    del metrics["pipeline"]["scouts"]
    assert conclusion(metrics) == ("The models served (xgb on 3, dnn on 1) get all 4 targets "
                                   "of a task right on 61 % of the 1,200 test tasks.")  # fmt: skip
    del metrics["pipeline"]
    assert conclusion(metrics) == "The models served: xgb on 3, dnn on 1."


@given(st.lists(st.floats(0, 1), min_size=8, max_size=8))
def test_a_tie_is_not_a_win(accuracies: list[float]) -> None:
    served, scouts = (
        dict(zip(TARGETS, accuracies[:4], strict=True)),
        dict(zip(TARGETS, accuracies[4:], strict=True)),
    )
    won = sum(served[t] > scouts[t] for t in TARGETS)
    assert f"beat the scouts on {won} of 4 targets" in conclusion(_metrics(served, scouts))
    tied = conclusion(_metrics(served, copy.copy(served)))
    assert "beat the scouts on 0 of 4 targets" in tied


def test_the_page_opens_with_the_sentence_and_the_chart_has_a_y_label(evaluated) -> None:
    metrics, out = evaluated
    html = (out / "report.html").read_text()
    line = conclusion(metrics)
    assert line and line.startswith("The models served (")
    first = re.search(r'<p class="conclusion">([^<]*)</p>', html)
    assert first and first.group(1) == line.replace("'", "&#39;")
    assert html.index('class="conclusion"') < html.index('id="headline"')
    assert 'class="conclusion"' in render_report(metrics)  # redrawn from metrics.json too
    figure = pipeline_figure(metrics["pipeline"])
    assert figure.axes[0].get_ylabel() == "share of test tasks"
