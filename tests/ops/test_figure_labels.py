"""The figures' labels: one per figure, read by the guard rail, the pages and the CLI."""

from __future__ import annotations

from pathlib import Path

from scoutless.ops.figure_labels import FIGURE_LABELS, figure_label
from scoutless.ops.impact import FIGURES, HIGHER_IS_BETTER


def test_every_figure_has_a_persons_name_a_unit_and_a_better_direction() -> None:
    assert set(FIGURE_LABELS) == set(FIGURES)
    for figure, label in FIGURE_LABELS.items():
        assert "_" not in label.name and label.name != figure
        assert label.unit and label.pooled and label.better in ("higher", "lower")


def test_the_guard_rail_reads_its_direction_from_the_labels() -> None:
    assert {"first_attempt_success"} == HIGHER_IS_BETTER
    assert figure_label("first_attempt_success").arrow == "↑ better"
    assert figure_label("memory_kills").direction == "lower is better"


def test_the_monitors_figures_are_named_too() -> None:
    assert figure_label("under_rate").name == "class below the actual"
    assert figure_label("accuracy").arrow == "↑ better" and figure_label("psi").arrow == "↓ better"


def test_an_unknown_figure_claims_no_direction() -> None:
    label = figure_label("made_up_figure")
    assert label.name == "made up figure" and label.direction == "" and label.arrow == ""
    assert label.shown == "made up figure"
    assert figure_label("memory_kills").shown == "memory kills per job (↓ better)"


def test_the_terminal_names_the_setting_and_shows_the_direction() -> None:
    from scoutless.cli.impact_tables import _figure

    assert _figure("memory_kills") == "memory_kills [dim](per job; pooled over jobs; ↓ better)[/dim]"


def test_the_rollout_page_shows_each_figure_as_the_html_page_does() -> None:
    page = Path(__file__).resolve().parents[2] / "docs" / "how-to" / "rollout.md"
    rows = [line for line in page.read_text().splitlines() if line.startswith("| `")]
    for figure, label in FIGURE_LABELS.items():
        row = next(r for r in rows if f"`{figure}`" in r.split(" | ")[0])
        shown, better = row.split(" | ")[1:3]
        assert label.name in shown and better.startswith(str(label.better)), row
