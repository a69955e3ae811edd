"""``scoutless train`` end to end on a small table file."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from scoutless.cli.main import app


def test_train_writes_a_bundle_and_prints_metrics(small_table, tmp_path):
    table_path = small_table.save(tmp_path / "table.parquet")
    out = tmp_path / "bundle"
    result = CliRunner().invoke(
        app,
        [
            "train",
            "--table",
            str(table_path),
            "--out",
            str(out),
            "--models",
            "xgb,dnn",
            "--max-epochs",
            "2",
            "--threads",
            "1",
        ],
    )
    assert result.exit_code == 0, result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert set(manifest["champion"]) == {"memory", "io"}
    assert "champion" in result.output and manifest["version"] in result.output


def test_train_names_bad_inputs(tmp_path):
    runner = CliRunner()
    result = runner.invoke(
        app, ["train", "--table", str(tmp_path / "none.parquet"), "--out", str(tmp_path / "b")]
    )
    assert result.exit_code == 2 and "does not exist" in " ".join(result.output.split())
    result = runner.invoke(app, ["train", "--table", "t", "--out", "b", "--models", "svm"])
    assert result.exit_code == 2 and "svm" in " ".join(result.output.split())
    assert not (tmp_path / "b").exists()


def test_train_refuses_unknown_dnn_variants(tmp_path):
    result = CliRunner().invoke(
        app, ["train", "--table", "t", "--out", str(tmp_path / "b"), "--dnn-variants", "deep"]
    )
    assert result.exit_code != 0 and "deep" in " ".join(result.output.split())
    assert not (tmp_path / "b").exists()


def test_train_with_the_history_carries_its_jobs_spread_and_room_loads(demo_workdir, tmp_path):
    from scoutless.bundle import load_bundle

    out = tmp_path / "bundle"
    result = CliRunner().invoke(app, [
        "train", "--table", str(demo_workdir / "table.parquet"), "--out", str(out),
        "--models", "xgb", "--threads", "1", "--db", f"sqlite:///{demo_workdir / 'history.sqlite'}",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    trained = load_bundle(out)
    assert trained.job_spreads is not None and trained.room_loads is not None
    assert trained.room_loads.to_dict() == load_bundle(demo_workdir / "bundle").room_loads.to_dict()
