"""The engine under the peers' protocol on small synthetic workflows: the issue's JSON
shape, the engine against a baseline, and the cold start from other workflows."""

from __future__ import annotations

import numpy as np
import pytest

from nf_synthetic import synthetic_workflow
from scoutless.config import Settings
from scoutless.sizing import lwr
from scoutless.sizing.report import size_workflow
from scoutless.sizing.run import BASELINES, type_key

CELL = {"wastage_gbh", "over_gbh", "under_gbh", "failures", "maq", "instances"}


@pytest.fixture(scope="module")
def sized() -> dict:
    frame = synthetic_workflow(seed=0, rows=50)
    others = [synthetic_workflow(7, 50, "other")]
    with pytest.MonkeyPatch.context() as mp:  # one small LWR model: its fit costs seconds
        mp.setattr(lwr, "MODELS", 1)
        mp.setattr(lwr, "COBYLA_STEPS", 20)
        return size_workflow(
            frame, "demo", 1996, cold_histories=others, features="peers-rchar", settings=Settings()
        )


def test_the_result_has_the_issues_shape(sized: dict) -> None:
    methods = sized["methods"]
    assert set(BASELINES) | {"users_presets", "scoutless", "scoutless_cold"} == set(methods)
    assert all(set(cell) == CELL for cell in methods.values())
    assert methods["oracle"]["wastage_gbh"] == 0 and methods["oracle"]["maq"] == 1
    assert {c["instances"] for c in methods.values()} == {105}  # 3 types × 35 online
    assert set(sized["task_types"]) == {"NF:ALIGN", "NF:FASTQC", "NF:SORT"}
    total = sum(t["methods"]["scoutless"]["over_gbh"] for t in sized["task_types"].values())
    assert total == pytest.approx(methods["scoutless"]["over_gbh"])


def test_the_engine_wastes_less_than_the_percentile_rule(sized: dict) -> None:
    m = sized["methods"]
    assert m["scoutless"]["wastage_gbh"] < 0.7 * m["witt_percentile"]["wastage_gbh"]
    assert m["scoutless"]["wastage_gbh"] < m["users_presets"]["wastage_gbh"] / 5
    assert sized["goal"]["scoutless"]["best_baseline"] in m
    assert np.isfinite(sized["goal"]["scoutless"]["ratio"])


def test_cold_starts_from_the_other_workflows_and_beats_the_request(sized: dict) -> None:
    m = sized["methods"]
    assert m["scoutless_cold"]["wastage_gbh"] < m["users_presets"]["wastage_gbh"] / 3


def test_a_type_is_named_across_workflows_by_its_last_part() -> None:
    assert type_key("NFCORE_RNASEQ:RNASEQ:FASTQC") == "fastqc" == type_key("fastqc")


def test_the_progress_hook_sees_each_type_in_order_and_changes_nothing(sized: dict) -> None:
    """``on_type`` (the command's progress bar) is told each type before it is walked."""
    calls: list[tuple[int, int, str]] = []
    frame = synthetic_workflow(seed=0, rows=50)
    others = [synthetic_workflow(7, 50, "other")]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(lwr, "MODELS", 1)
        mp.setattr(lwr, "COBYLA_STEPS", 20)
        again = size_workflow(frame, "demo", 1996, cold_histories=others, features="peers-rchar",
                              settings=Settings(), on_type=lambda *a: calls.append(a))  # fmt: skip
    assert calls == [(i, 3, name) for i, name in enumerate(sized["task_types"])]
    assert again["methods"] == sized["methods"]
