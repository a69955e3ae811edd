"""Fixtures of the evaluation tests: a synthetic table, a fake predictor, one evaluation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from eval_fakes import FakePredictor, make_table

from scoutless.evaluation.evaluate import evaluate_bundle
from scoutless.history.table import TrainingTable


@pytest.fixture(scope="session")
def table() -> TrainingTable:
    return make_table()


@pytest.fixture
def predictor(table: TrainingTable) -> FakePredictor:
    return FakePredictor(table)


@pytest.fixture(scope="session")
def evaluated(tmp_path_factory, table: TrainingTable) -> tuple[dict[str, Any], Path]:
    """One full evaluation of the fake predictor (metrics dict, output folder)."""
    out = tmp_path_factory.mktemp("eval")
    return evaluate_bundle(FakePredictor(table), table, out, progress=False), out
