"""`scoutless replay` end to end on a small synthetic history and bundle."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from scoutless.cli.main import app
from scoutless.config import STRATEGY_NAMES, get_settings

runner = CliRunner()
SCHEMA = {
    "time_to_first_job_s", "task_completion_s", "first_attempt_success", "memory_kills",
    "walltime_kills", "retries_per_job", "wasted_core_hours", "used_core_hours",
    "memory_slack_gb_hours", "tasks_broken", "tasks_exhausted",
}  # fmt: skip


def test_replay_writes_the_schema_for_every_strategy(small):
    folder, url = small
    out = folder / "out"
    args = ["replay", "--db", url, "--bundle", str(folder / "bundle"), "--out", str(out),
            "--table", str(folder / "table.parquet")]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    document = json.loads((out / "replay.json").read_text())
    assert list(document["strategies"]) == list(STRATEGY_NAMES)  # bayes read the truth
    assert document["skipped"] == {}
    for entry in document["strategies"].values():
        assert set(entry) >= SCHEMA
        assert set(entry["time_to_first_job_s"]) == {"p50", "p90"}
        assert entry["used_core_hours"] > 0
    assert document["config"]["policy"] == "cost" and document["config"]["alpha"] == 0.05
    strategies = document["strategies"]
    predicted = strategies["predicted"]["time_to_first_job_s"]["p50"]
    assert predicted < strategies["scouts"]["time_to_first_job_s"]["p50"]
    choice = strategies["selective"]["scout_choice"]
    assert 0 <= choice["scouted_tasks"] <= choice["tasks"] == document["workload"]["tasks"]
    assert set(document["checks"]) == {
        "hybrid_vs_scouts", "gap_closed", "predicted_vs_bayes", "first_job", "bounds",
    }  # fmt: skip
    totals = [r["priced_total_core_hours"] for r in document["ranking"]]
    assert totals == sorted(totals) and len(totals) == len(strategies)
    for entry in strategies.values():
        parts = entry["priced_components"]
        assert entry["priced_total_core_hours"] == pytest.approx(sum(parts.values()))
    assert strategies["oracle"]["priced_components"]["kills"] == 0.0
    assert "first production job" in result.output and "hybrid vs scouts" in result.output


def test_without_synthetic_truth_bayes_is_skipped_and_says_why(small, tmp_path):
    _, url = small
    from scoutless.replay.runner import replay_history
    from scoutless.replay.tables import headline_line

    settings = get_settings()
    cfg = settings.replay.model_copy(update={"strategies": ["scouts", "bayes", "oracle"]})
    settings = settings.model_copy(update={"replay": cfg})
    document = replay_history(url, None, tmp_path, settings, n_tasks=40)
    assert list(document["strategies"]) == ["scouts", "oracle"]
    assert "synthetic truth" in document["skipped"]["bayes"]
    assert "bayes not run" in headline_line(document)


def test_the_truth_reader_aligns_the_generators_distributions_to_the_ids(small):
    from scoutless.cli.data import synthetic_values
    from scoutless.history.panda_db import make_engine
    from scoutless.history.synthetic import read_truth

    _, url = small
    frame = read_truth(make_engine(url, create_dirs=False))
    ids = frame.index.to_numpy()[[5, 0, 3]]
    values = synthetic_values(url, [*ids, 10**9])  # the last has no truth row
    memory = values["memory"]
    assert np.allclose(memory.mu[:3], frame.loc[ids, "memory_mu"])
    assert np.allclose(memory.offset[:3], frame.loc[ids, "memory_offset"])
    assert np.isnan(memory.mu[3])
    assert set(values) >= {"memory", "cputime", "walltime"}


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
        (["--strategies", "scouts,guess"], "strategies"),
        (["--strategies", "hybrid"], "need --bundle"),
        (["--policy", "greedy"], "--policy"),
    ],
)
def test_bad_arguments_are_one_clear_error(small, extra, message):
    folder, url = small
    result = runner.invoke(app, ["replay", "--db", url, "--out", str(folder / "bad"), *extra])
    assert result.exit_code == 2
    assert message in result.output
    assert not (folder / "bad" / "replay.json").exists()


def test_a_negative_slot_count_in_the_config_names_the_key(small, tmp_path):
    _, url = small
    config = tmp_path / "replay.toml"
    config.write_text("[replay.resource_types.MCORE]\ncores = -1\n")
    args = ["replay", "--db", url, "--out", str(tmp_path), "--strategies", "scouts",
            "--config", str(config)]  # fmt: skip
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and "resource_types.MCORE.cores" in result.output


def test_an_empty_or_missing_history_is_a_clear_error(tmp_path):
    from scoutless.history.panda_db import create_schema, make_engine

    empty = f"sqlite:///{tmp_path / 'empty.sqlite'}"
    create_schema(make_engine(empty))
    result = runner.invoke(
        app, ["replay", "--db", empty, "--out", str(tmp_path), "--strategies", "scouts"]
    )
    assert result.exit_code == 2 and "no tasks to replay" in result.output
    missing = f"sqlite:///{tmp_path / 'missing.sqlite'}"
    result = runner.invoke(
        app, ["replay", "--db", missing, "--out", str(tmp_path), "--strategies", "scouts"]
    )
    assert result.exit_code == 2 and "replay:" in result.output
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
    assert list(document["strategies"]) == ["request", "online", "oracle"]  # no bundle
    online = document["strategies"]["online"]  # the online sizer, reported with its counts
    assert online["n_jobs"] == request["n_jobs"] and online["sizing"]["sized"] > 0
    oracle = document["strategies"]["oracle"]
    assert oracle["memory_kills"] == oracle["walltime_kills"] == 0
    both = runner.invoke(app, ["replay", "--trace", str(table), "--db", "sqlite://", "--out", "x"])
    assert both.exit_code == 2 and "one of --db" in both.output
    args = ["replay", "--trace", str(table), "--out", str(tmp_path)]
    as_json = runner.invoke(app, [*args, "--format", "json"])  # the document alone on stdout
    assert json.loads(as_json.stdout)["strategies"].keys() == document["strategies"].keys()
    as_csv = runner.invoke(app, [*args, "--format", "csv"]).stdout.splitlines()
    assert as_csv[0] == "strategy,figure,key,value" and len(as_csv) > 3 * 10
