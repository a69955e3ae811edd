"""`scoutless replay` end to end on a small synthetic history and bundle."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from scoutless.cli.main import app

runner = CliRunner()
SCHEMA = {
    "time_to_first_job_s", "task_completion_s", "first_attempt_success", "memory_kills",
    "walltime_kills", "retries_per_job", "wasted_core_hours", "used_core_hours",
    "memory_slack_gb_hours", "tasks_broken", "tasks_exhausted",
}  # fmt: skip


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    from scoutless.history.build import build_table_from_db
    from scoutless.history.panda_db import make_engine
    from scoutless.history.synthetic import generate_history
    from scoutless.training import train_bundle

    folder = tmp_path_factory.mktemp("replay")
    url = f"sqlite:///{folder / 'history.sqlite'}"
    engine = make_engine(url)
    generate_history(engine, 300, seed=3, progress=False)
    table, _ = build_table_from_db(engine)
    engine.dispose()
    table.save(folder / "table.parquet")
    train_bundle(table, folder / "bundle", models=("xgb",), trials=0, seed=3, progress=False)
    return folder, url


def test_replay_writes_the_schema_for_every_strategy(small):
    folder, url = small
    out = folder / "out"
    args = ["replay", "--db", url, "--bundle", str(folder / "bundle"), "--out", str(out),
            "--table", str(folder / "table.parquet")]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    document = json.loads((out / "replay.json").read_text())
    assert set(document["strategies"]) == {"scouts", "predicted", "hybrid"}
    for entry in document["strategies"].values():
        assert set(entry) >= SCHEMA
        assert set(entry["time_to_first_job_s"]) == {"p50", "p90"}
        assert entry["used_core_hours"] > 0
    assert document["config"]["policy"] == "risk" and document["config"]["alpha"] == 0.05
    predicted = document["strategies"]["predicted"]["time_to_first_job_s"]["p50"]
    assert predicted < document["strategies"]["scouts"]["time_to_first_job_s"]["p50"]
    assert "first production job" in result.output


def test_scouts_alone_need_no_bundle_and_a_sample_is_seeded(small):
    folder, url = small
    out = folder / "scouts"
    args = ["replay", "--db", url, "--out", str(out), "--strategies", "scouts", "--tasks", "50"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    document = json.loads((out / "replay.json").read_text())
    assert list(document["strategies"]) == ["scouts"]
    assert 40 <= document["workload"]["tasks"] <= 50  # sampled tasks with a finished job


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--strategies", "scouts,oracle"], "strategies"),
        (["--strategies", "hybrid"], "need --bundle"),
        (["--policy", "greedy"], "--policy"),
    ],
)
def test_bad_arguments_are_one_clear_error(small, extra, message):
    folder, url = small
    result = runner.invoke(app, ["replay", "--db", url, "--out", str(folder / "bad"), *extra])
    assert result.exit_code == 1
    assert message in result.output
    assert not (folder / "bad" / "replay.json").exists()


def test_a_negative_slot_count_in_the_config_names_the_key(small, tmp_path):
    _, url = small
    config = tmp_path / "replay.toml"
    config.write_text("[replay.resource_types.MCORE]\ncores = -1\n")
    args = ["replay", "--db", url, "--out", str(tmp_path), "--strategies", "scouts",
            "--config", str(config)]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 1 and "resource_types.MCORE.cores" in result.output


def test_an_empty_or_missing_history_is_a_clear_error(tmp_path):
    from scoutless.history.panda_db import create_schema, make_engine

    empty = f"sqlite:///{tmp_path / 'empty.sqlite'}"
    create_schema(make_engine(empty))
    result = runner.invoke(
        app, ["replay", "--db", empty, "--out", str(tmp_path), "--strategies", "scouts"]
    )
    assert result.exit_code == 1 and "no tasks to replay" in result.output
    missing = f"sqlite:///{tmp_path / 'missing.sqlite'}"
    result = runner.invoke(
        app, ["replay", "--db", missing, "--out", str(tmp_path), "--strategies", "scouts"]
    )
    assert result.exit_code == 1 and "replay:" in result.output
    assert not (tmp_path / "replay.json").exists()


def test_a_swf_trace_replays_its_test_jobs_with_the_request_as_incumbent(tmp_path):
    from pathlib import Path

    swf = Path(__file__).resolve().parents[1] / "data" / "traces" / "swf"
    table = tmp_path / "table.parquet"
    trace = swf / "LPC-EGEE-2004-1.2-cln.head60.swf"
    assert runner.invoke(app, ["import", "swf", str(trace), "-o", str(table)]).exit_code == 0
    result = runner.invoke(app, ["replay", "--trace", str(table), "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    document = json.loads((tmp_path / "replay.json").read_text())
    request = document["strategies"]["request"]
    assert set(request) >= SCHEMA and request["n_jobs"] == document["workload"]["jobs"] > 0
    assert document["config"]["incumbent"] == "request"
    both = runner.invoke(app, ["replay", "--trace", str(table), "--db", "sqlite://", "--out", "x"])
    assert both.exit_code == 1 and "one of --db" in both.output
