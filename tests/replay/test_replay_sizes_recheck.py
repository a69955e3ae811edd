"""``benchmarks/replay.py --recheck`` (``replay_sizes.py``): a ``--sizes`` result's checks
computed again from the runs it keeps (means over the seeds, the references that miss a
metric too), in place."""

from __future__ import annotations

import json

import pytest

from benchmark_modules import benchmark_module


@pytest.fixture(scope="module")
def replay_benchmark():
    with benchmark_module("replay_sizes") as module:
        yield module


def _strategy(p50: float, p90: float, priced: float) -> dict:
    return {"task_completion_s": {"p50": p50, "p90": p90}, "priced_total_core_hours": priced}


def _run(shift: float) -> dict:
    return {"strategies": {
        "scouts": _strategy(100 + shift, 300 + shift, 50.0),
        "hybrid": _strategy(120 + shift, 350 + shift, 30.0),  # misses both completions
        "bayes": _strategy(110 + shift, 250 + shift, 28.0),   # beats the scouts' P90 only
        "oracle": _strategy(105 + shift, 200 + shift, 20.0),  # loses the P50 too
    }}  # fmt: skip


def test_recheck_rewrites_the_checks_from_the_runs(tmp_path, replay_benchmark):
    path = tmp_path / "replay.json"
    document = {"benchmark": "replay_sizes", "machine": {"cpu_cores": 2},
                "runs": {"20000": {str(s): _run(s) for s in range(3)}},
                "sizes": {"20000": {"stale": True}}}  # fmt: skip
    path.write_text(json.dumps(document, indent=2))
    replay_benchmark.recheck(path)
    text = path.read_text()
    assert text.splitlines()[1].startswith('  "')  # the file's own indent kept
    out = json.loads(text)
    assert out["runs"] == document["runs"] and out["machine"] == document["machine"]
    summary = out["sizes"]["20000"]
    assert summary["strategies"]["hybrid"]["task_completion_s"]["p50"] == pytest.approx(121.0)
    rows = {r["metric"]: r for r in summary["checks"]["hybrid_vs_scouts"]["rows"]}
    assert rows["completion P50 (s)"]["met"] is False
    assert rows["completion P50 (s)"]["bounded_by"] == "oracle"
    assert rows["completion P90 (s)"]["bounded_by"] is None
    assert rows["completion P90 (s)"]["seeds_met"] == "0/3"
    assert summary["checks"]["hybrid_vs_scouts"]["model_misses"] == ["completion P90 (s)"]
    assert summary["checks"]["bounds"]["all_met"] is True


def test_recheck_refuses_a_result_without_runs(tmp_path, replay_benchmark):
    path = tmp_path / "replay.json"
    path.write_text(json.dumps({"benchmark": "replay"}))
    with pytest.raises(SystemExit, match="not a --sizes result"):
        replay_benchmark.recheck(path)
    assert json.loads(path.read_text()) == {"benchmark": "replay"}
