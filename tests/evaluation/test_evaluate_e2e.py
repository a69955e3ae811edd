"""End to end: train a tiny real bundle, then `scoutless evaluate` it."""

import json

import pytest
from eval_fakes import make_table
from typer.testing import CliRunner

from scoutless.cli.main import app
from scoutless.config import Settings
from scoutless.training import train_bundle


@pytest.fixture(scope="module")
def bundle_and_table(tmp_path_factory):
    folder = tmp_path_factory.mktemp("e2e")
    table = make_table(n=2000, seed=3)
    table_path = table.save(folder / "table.parquet")
    bundle = train_bundle(table, folder / "bundle", models=("xgb",), progress=False, n_jobs=1, settings=Settings())
    return bundle, table_path, folder


def test_cli_evaluates_a_real_bundle(bundle_and_table):
    bundle, table_path, folder = bundle_and_table
    out = folder / "report"
    args = ["evaluate", "--bundle", str(bundle), "--table", str(table_path), "--out", str(out)]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "exact match" in result.output and "scouts" in result.output
    metrics = json.loads((out / "metrics.json").read_text())
    assert (out / "report.html").stat().st_size > 10_000
    for target, entry in metrics["targets"].items():
        models = entry["models"]
        assert entry["champion"] == "xgb"
        # the table's classes follow processing type: a real model must beat the majority
        assert models["xgb"]["accuracy"] > models["majority"]["accuracy"] + 0.2, target
        assert entry["calibration_rows"] > 50
        risk = entry["policies"]["risk"]
        assert risk["alpha"] == 0.05 and 0 <= risk["under_allocation_rate"] <= 0.2
    assert metrics["pipeline"]["champion"]["models"] == {t: "xgb" for t in metrics["targets"]}


def test_cli_names_what_is_wrong(bundle_and_table, tmp_path):
    bundle, table_path, _ = bundle_and_table
    runner = CliRunner()
    missing = runner.invoke(app, ["evaluate", "--bundle", str(tmp_path), "--table",
                                  str(table_path), "--out", str(tmp_path / "o")])  # fmt: skip
    assert missing.exit_code == 2
    assert "no manifest.json" in " ".join(missing.output.split())
    bad_split = runner.invoke(app, ["evaluate", "--bundle", str(bundle), "--table",
                                    str(table_path), "--out", str(tmp_path), "--split", "weekly"])  # fmt: skip
    assert bad_split.exit_code == 2 and "weekly" in bad_split.output
