"""The batch-size thresholds: one object, the settings' values, set when a process is
composed and read per call, never fixed when a module is imported."""

from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import scoutless
from scoutless.config import InferenceSettings, ServiceSettings
from scoutless.fast_paths import FastPaths, configure, current, using
from scoutless.service.micro_batch import LoopBatcher

SRC = Path(scoutless.__file__).parent


def _settings(**inference: int) -> SimpleNamespace:
    return SimpleNamespace(inference=InferenceSettings(**inference), service=ServiceSettings())


def test_the_defaults_are_the_settings_defaults():
    assert FastPaths.from_settings(_settings()) == FastPaths()  # type: ignore[arg-type]


def test_the_settings_set_the_rows_and_the_chunk():
    made = FastPaths.from_settings(_settings(small_batch=3, dnn_predict_batch=7))  # type: ignore[arg-type]
    assert (made.rows, made.dnn_chunk_rows) == (3, 7)


def test_using_sets_the_thresholds_for_a_block_and_restores_them():
    before = current()
    with using(FastPaths(rows=2)) as inside:
        assert current() is inside
        assert LoopBatcher().max_tasks == 2  # a group stays on the models' small path
    assert current() is before


def test_configure_holds_for_the_process():
    before = current()
    try:
        configure(FastPaths(few_tasks=1))
        assert current().few_tasks == 1
    finally:
        configure(before)


def _import_time_calls(tree: ast.AST) -> list[int]:
    """Lines where ``get_settings()`` runs as the module is imported (outside functions)."""
    lines = []
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        func = getattr(child, "func", None)
        if isinstance(child, ast.Call) and getattr(func, "id", getattr(func, "attr", "")) == "get_settings":
            lines.append(child.lineno)
        lines += _import_time_calls(child)
    return lines


def test_no_module_reads_the_settings_when_imported():
    found = {
        f"{path.relative_to(SRC)}:{line}"
        for path in SRC.rglob("*.py")
        for line in _import_time_calls(ast.parse(path.read_text()))
    }
    assert not found, f"settings read at import (a threshold fixed for the process): {found}"
