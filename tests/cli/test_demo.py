"""`scoutless demo`, the README's main job, end to end on a small history."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from scoutless.cli.main import app
from scoutless.config import STRATEGY_NAMES

runner = CliRunner()
SMALL = ["--tasks", "600", "--max-epochs", "3", "--models", "xgb,xgb_native,dnn"]


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("demo")
    result = runner.invoke(app, ["demo", "--workdir", str(workdir), *SMALL])
    assert result.exit_code == 0, result.output
    return workdir, result.output


def test_demo_writes_every_artefact_and_prints_the_headline(demo_dir):
    workdir, output = demo_dir
    for name in ("history.sqlite", "table.parquet", "metrics.json", "report.html", "replay.json"):
        assert (workdir / name).is_file(), name
    assert (workdir / "bundle" / "manifest.json").is_file()
    metrics = json.loads((workdir / "metrics.json").read_text())
    assert set(metrics["targets"]) == {"memory", "cputime", "io", "walltime"}
    models = metrics["targets"]["memory"]["models"]
    assert {"dnn", "xgb", "xgb_native", "majority", "history", "scouts", "bayes"} <= set(models)
    assert set(metrics["targets"]["memory"]["policies"]) == {"argmax", "safe", "risk"}
    assert "exact_match" in metrics["pipeline"]["dnn"]
    assert "scoutless serve --bundle" in output and "report.html" in output
    replay = json.loads((workdir / "replay.json").read_text())
    assert list(replay["strategies"]) == list(STRATEGY_NAMES)  # all six, bayes from truth
    assert replay["checks"]["hybrid_vs_scouts"]["rows"]
    # the headline states the replay's checks, each side's figure apart
    assert "hybrid vs scouts, wasted core-hours: hybrid" in " ".join(output.split())
    assert 'id="replay"' in (workdir / "report.html").read_text()


def test_interrupted_demo_keeps_the_previous_run(demo_dir, monkeypatch):
    workdir, _ = demo_dir
    kept = ("metrics.json", "bundle/manifest.json", "replay.json")
    before = {p: (workdir / p).read_bytes() for p in kept}
    history_size = (workdir / "history.sqlite").stat().st_size

    def crash(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("scoutless.training.train_bundle", crash)
    result = runner.invoke(app, ["demo", "--workdir", str(workdir), *SMALL])
    assert result.exit_code != 0
    for path, content in before.items():
        assert (workdir / path).read_bytes() == content
    assert (workdir / "history.sqlite").stat().st_size > 0
    assert history_size > 0
    assert not [p for p in workdir.iterdir() if p.name.startswith(".")]
