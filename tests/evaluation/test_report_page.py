"""report.html of a small demo: the value/cost allocation table the terminal prints, each
replay check with what it compares and whether a miss is expected at that size, and a page
that renders in headless Chromium without a title over another block."""

from __future__ import annotations

import json
import re

from scoutless.evaluation.tables import ALLOCATION_COLUMNS, under_allocation_noise
from scoutless.replay.report import check_notes, size_noise


def test_the_report_has_the_allocation_table_and_explains_each_check(demo_workdir):
    html = re.sub(r'src="data:[^"]*"', "", (demo_workdir / "report.html").read_text())
    metrics = json.loads((demo_workdir / "metrics.json").read_text())
    section = html[html.index('id="allocation"') : html.index('id="pipeline"')]
    for column in ALLOCATION_COLUMNS:
        assert f">{column}</th>" in section
    for target in metrics["targets"]:
        assert f'<td class="name">{target}</td>' in section
    n = next(iter(metrics["targets"].values()))["allocation"]["rows"]
    assert f"{under_allocation_noise(0.05, n):.3f}" in section
    replay = json.loads((demo_workdir / "replay.json").read_text())
    notes = check_notes(replay)
    checks = html[html.index("<h3>Checks</h3>") :]
    assert checks.count("<tr>") == len(notes) + 1
    assert all(note["compares"] for note in notes if "→" in note["line"])
    for note in notes:
        if note["line"].endswith("→ missed"):
            assert note["expected"], note


def test_a_miss_within_the_noise_of_the_size_is_called_expected():
    row = {"metric": "wasted core-hours", "figures": {"hybrid": 105.0, "scouts": 100.0},
           "goal": "hybrid ≤ scouts", "met": False}  # fmt: skip
    small = {"strategies": {}, "workload": {"tasks": 100},
             "checks": {"hybrid_vs_scouts": {"rows": [row]}}}  # fmt: skip
    large = {**small, "workload": {"tasks": 100_000}}
    assert size_noise(100) == 0.2
    assert "expected" in check_notes(small)[0]["expected"]
    assert "a real gap" in check_notes(large)[0]["expected"]
    kills = {**row, "metric": "memory kills", "figures": {"hybrid": 5, "scouts": 3}}
    counted = {**large, "checks": {"hybrid_vs_scouts": {"rows": [kills]}}}
    assert "expected" in check_notes(counted)[0]["expected"]  # 5 vs 3 kills: Poisson noise


def test_the_report_renders_in_chromium_without_overlapping_titles(demo_workdir, browser_layout):
    layout = browser_layout(demo_workdir / "report.html")
    assert layout["titles"] > 10
    assert layout["images"] > 10 and layout["loaded"] == layout["images"], layout
    assert not layout["overlaps"], layout["overlaps"]
