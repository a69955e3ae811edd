"""Where the settings are read: only where a process starts (its composition root), which
passes them, or the section a callee needs, down as arguments. A library function that
read ``get_settings()`` itself would hide a global: a caller could not hand it other
settings, and a test would have to patch the environment behind its back."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import scoutless
from scoutless.config import Settings, get_settings

SRC = Path(scoutless.__file__).parent
#: the composition roots, relative to ``src/scoutless``, and why each is one
ROOTS: dict[str, str] = {
    "cli/": "the command line: each verb's function reads the settings once, where the "
    "command starts (``listen`` is the listener's runner; ``cli/lazy.py`` imports the "
    "settings on a verb's first read; ``cli/main.py`` checks ``--config``'s file)",
    "service/app.py": "the app factory (``create_app``, ``app_from_env``): one server "
    "process's composition",
    "service/workers.py": "the entry of each ``serve --workers N`` process (spawned): the "
    "HTTP protocol it serves with, before the app factory runs",
    "config/settings.py": "defines ``get_settings``",
    "config/__init__.py": "re-exports it, for the roots above",
}


def _root(path: Path) -> bool:
    name = path.relative_to(SRC).as_posix()
    return any(name == root or (root.endswith("/") and name.startswith(root)) for root in ROOTS)


def _reads(tree: ast.AST) -> list[int]:
    """Lines that call ``get_settings`` (by name or attribute) or import it (an alias too)."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if getattr(func, "id", getattr(func, "attr", None)) == "get_settings":
                lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and any(a.name == "get_settings" for a in node.names):
            lines.append(node.lineno)
    return lines


def test_only_the_composition_roots_read_the_settings() -> None:
    found = [
        f"{path.relative_to(SRC)}:{line}"
        for path in sorted(SRC.rglob("*.py"))
        if not _root(path)
        for line in _reads(ast.parse(path.read_text()))
    ]
    assert not found, (
        "get_settings() outside a composition root: take the Settings (or its section) as "
        f"an argument from the caller instead: {found}"
    )


def test_every_listed_root_exists() -> None:
    for root in ROOTS:
        assert (SRC / root).exists(), f"{root}: listed as a composition root, not in src/"


def test_the_settings_are_read_afresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing caches them: a root reads what the environment says as it starts, so a test
    sets the environment (or passes a ``Settings``) and clears nothing."""
    monkeypatch.setenv("SCOUTLESS_SERVICE__PORT", "9321")
    assert get_settings().service.port == 9321
    monkeypatch.setenv("SCOUTLESS_SERVICE__PORT", "9322")
    assert get_settings().service.port == 9322
    assert get_settings() is not get_settings()
    assert Settings(seed=3).seed == 3
