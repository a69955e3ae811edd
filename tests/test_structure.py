"""The house rules a reader relies on, checked: layers import downwards only, the build
knows no generator, and functions stay short (docs/architecture.md draws the layers)."""

from __future__ import annotations

import ast
from pathlib import Path

import scoutless

SRC = Path(scoutless.__file__).parent
MAX_FUNCTION_LINES = 60
#: top-level package or module -> layer; a module may import its own layer or lower ones
LAYERS: dict[str, int] = {
    "config": 0, "layout": 0, "jsonsafe": 0, "atomic": 0, "defaults": 0, "libraries": 0, "client": 0, "jedi": 0,
    "features": 1, "targets": 1,
    "history": 2,
    "allocation": 2,  # value distributions, policies, prices: below service, replay, evaluation
    "models": 3, "evaluation": 3, "sources": 3,
    "sizing": 3,  # online per-instance sizing: above allocation, below replay and the CLI
    "history.synthetic": 3,  # the generator: beside sources (it compares with real traces)
    "bundle": 4,
    "training": 5,
    "distributed": 5,  # training's scale-out backend: Dask build and XGBoost, torchrun DNN
    "replay": 5,  # a bundle replayed offline on a history, beside walk-forward evaluation
    "ops": 6, "service": 6,
    "panda": 7,  # the PanDA integration: drives the service and ops from JEDI's messages
    "cli": 8, "__init__": 9, "__main__": 9,
}  # fmt: skip
#: a new top-level package not listed above sits beside panda: it may import anything but
#: the CLI, and no lower layer may import it (list it above at its own level)
UNLISTED_LAYER = 7
#: "path:function" -> why it may stay long for now (name the issue that will split it)
KNOWN_LONG: dict[str, str] = {}
#: "path -> package" upward imports tolerated for now, with the issue that should mend them
KNOWN_UPWARD: dict[str, str] = {}


def _modules() -> list[tuple[str, ast.Module]]:
    return [(p.relative_to(SRC).as_posix(), ast.parse(p.read_text())) for p in SRC.rglob("*.py")]


def _top(module: str) -> str:
    if module.startswith("history/synthetic/"):
        return "history.synthetic"
    return module.split("/")[0].split(".")[0].removesuffix(".py")


def _imports(tree: ast.Module) -> set[str]:
    """Top-level scoutless packages a module imports (function-level imports included)."""
    found = set()
    for node in ast.walk(tree):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
            if node.module == "scoutless":
                names = [f"scoutless.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for name in (n for n in names if n.startswith("scoutless.")):
            synthetic = name.startswith("scoutless.history.synthetic")
            found.add("history.synthetic" if synthetic else name.split(".")[1])
    return found


def test_layers_import_downwards_only():
    upward = []
    for path, tree in _modules():
        own = _top(path)
        rank = LAYERS.get(own, UNLISTED_LAYER)
        for other in _imports(tree) - {own}:
            if (
                LAYERS.get(other, UNLISTED_LAYER) > rank
                and f"{path} -> {other}" not in KNOWN_UPWARD
            ):
                upward.append(f"{path} imports scoutless.{other}")
    assert not upward, "upward imports (see LAYERS):\n" + "\n".join(sorted(upward))


def test_only_the_cli_knows_the_synthetic_generator():
    offenders = [
        path
        for path, tree in _modules()
        if not path.startswith(("cli/", "history/synthetic/"))
        and any(
            isinstance(n, ast.ImportFrom)
            and (n.module or "").startswith("scoutless.history.synthetic")
            for n in ast.walk(tree)
        )
    ]
    assert not offenders, f"production code importing history.synthetic: {offenders}"


def _long_functions() -> dict[str, int]:
    out = {}
    for path, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for child in node.body:
                    child.parent_name = node.name  # type: ignore[attr-defined]
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1  # type: ignore[operator]
                if lines > MAX_FUNCTION_LINES:
                    owner = getattr(node, "parent_name", None)
                    name = f"{owner}.{node.name}" if owner else node.name
                    out[f"{path}:{name}"] = lines
    return out


def test_functions_fit_on_a_screen():
    offenders = {k: v for k, v in _long_functions().items() if k not in KNOWN_LONG}
    listing = "\n".join(f"  {k} ({v} lines)" for k, v in sorted(offenders.items()))
    assert not offenders, f"functions over {MAX_FUNCTION_LINES} lines — split them:\n{listing}"
