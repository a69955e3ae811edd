"""The command starts fast: ``scoutless --help`` imports no verb, and no verb's ``--help``
imports a heavy library (torch, scikit-learn, XGBoost, pandas …): they load when a verb runs.
Nor does any ``--help`` import the settings (pydantic, pydantic-settings), numpy, or Typer's
own help module (``typer.rich_utils`` and its Markdown parser), nor rich: ``cli/lazy.py``
draws help, and verbs import rich when they print.
``benchmarks/cli_startup.py`` measures the times; here only what gets imported is checked,
in a fresh interpreter (this one has imported everything already)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import typer

from scoutless.cli.main import VERBS, app

#: what no ``--help`` may import
HEAVY = ("torch", "sklearn", "xgboost", "pandas", "scipy", "matplotlib", "pyarrow",
         "sqlalchemy", "fastapi", "duckdb", "optuna", "dask", "uvicorn")  # fmt: skip
#: what no ``--help`` may import either: ``--help`` costs at most 2x ``import typer``
#: (``benchmarks/cli_startup.py``); these would take it past that
NOT_FOR_HELP = (*HEAVY, "pydantic", "pydantic_settings", "numpy", "markdown_it",
                "scoutless.config", "typer.rich_utils", "typer._adapters", "rich")  # fmt: skip


def _modules_after(argv_lists: list[list[str]]) -> dict:
    """Run ``scoutless ARGV`` for each list in one fresh interpreter: the modules loaded
    after the first and after all of them, the exit codes, what each said."""
    script = textwrap.dedent(
        f"""
        import json, sys
        from typer.testing import CliRunner
        from scoutless.cli.main import app
        seen, codes, said = [], [], []
        for argv in {argv_lists!r}:
            result = CliRunner().invoke(app, argv)
            codes.append(result.exit_code)
            said.append(" ".join(result.output.replace("│", " ").split()))
            seen.append(sorted(set(sys.modules) | set(m.split(".")[0] for m in sys.modules)))
        json.dump({{"first": seen[0], "all": seen[-1], "codes": codes, "said": said,
                   "cli": sorted(m for m in sys.modules if m.startswith("scoutless.cli."))}},
                  sys.stdout)
        """
    )
    # a SCOUTLESS_* variable set, as on CI: a verb then checks the environment, not on --help
    env = {**os.environ, "SCOUTLESS_PGPORT": "5433"}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True, timeout=120, env=env)  # fmt: skip
    return json.loads(out.stdout)


def test_help_imports_no_verb_and_no_verb_help_imports_a_heavy_library() -> None:
    verbs = [["--help"], ["--version"]] + [[name, "--help"] for name in VERBS]
    root = typer.main.get_command(app)
    verbs += [[group, sub, "--help"] for group in VERBS
              for sub in getattr(root.commands[group], "commands", {})]  # fmt: skip
    seen = _modules_after(verbs)
    assert set(seen["codes"]) == {0}, seen["codes"]
    first = set(seen["first"])
    assert not first & set(NOT_FOR_HELP), sorted(first & set(NOT_FOR_HELP))
    heavy = set(seen["all"]) & set(NOT_FOR_HELP)
    assert not heavy, f"a verb's --help imports {sorted(heavy)}: import it inside the function"
    assert len(verbs) > 25 and "scoutless.cli.train" in seen["cli"]


def test_help_shows_each_verbs_options_arguments_and_sub_verbs() -> None:
    """Drawn by ``cli/lazy.py``: usage, every paragraph of the help, the arguments and
    options with their defaults, a group's sub-verbs with their first line."""
    seen = _modules_after([["taskparams", "--help"], ["data", "--help"],
                           ["data", "build", "--help"], ["rollout", "set", "--help"]])  # fmt: skip
    taskparams, data, build, rollout_set = seen["said"]
    assert "Usage: scoutless taskparams [OPTIONS]" in taskparams
    assert "Arguments" in taskparams and "task-parameter JSON" in taskparams
    assert "--policy" in taskparams and "--help Show this message and exit." in taskparams
    assert "Commands" in data and "build Build the training table" in data
    assert "Usage: scoutless data build [OPTIONS]" in build
    assert "With --scheduler the table is a folder of Parquet parts" in build
    assert "[default: no-strict]" in build and "[required]" in build
    assert "--force / --no-force" in rollout_set and "shadow (the kill switch)" in rollout_set


def test_absent_global_options_reach_their_callbacks() -> None:
    """``LightOption`` skips Typer's coercion of an absent option, not its callback: an
    absent ``--config`` leaves the settings alone, a given one is read (and refused here)."""
    seen = _modules_after([["registry", "--help"],
                           ["--config", "/nonexistent/scoutless.toml", "registry", "--help"]])  # fmt: skip
    assert seen["codes"] == [0, 2]
    assert "does not exist" in seen["said"][1]


def test_the_listed_line_is_the_verbs_own_first_line() -> None:
    root = typer.main.get_command(app)
    for name, verb in VERBS.items():
        command = root.commands[name]
        assert command.name == name
        if not hasattr(command, "commands"):  # a function: its docstring's first line
            assert command.help.splitlines()[0] == verb.help, name
    assert list(root.commands) == list(VERBS)


def test_version_is_the_packages() -> None:
    from typer.testing import CliRunner

    from scoutless import __version__

    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0 and result.stdout.strip() == f"scoutless {__version__}"


def test_a_wrong_path_is_refused_at_once_naming_it() -> None:
    """Before anything heavy loads: no model is imported to say that a folder is absent."""
    missing = "/nonexistent/scoutless-bundle"
    lines = [
        ["serve", "--bundle", missing],
        ["listen", "--bundle", missing],
        ["taskparams", "--bundle", missing, "/nonexistent/task.json"],
        ["evaluate", "--bundle", missing, "--table", "t.parquet", "--out", "o"],
        ["replay", "--bundle", missing],
        ["registry", "add", "/nonexistent/registry", missing],
        ["--config", "/nonexistent/scoutless.toml", "serve", "--help"],
    ]
    seen = _modules_after(lines)
    assert seen["codes"] == [2] * len(lines), list(zip(lines, seen["said"], strict=True))
    for argv, said in zip(lines, seen["said"], strict=True):
        assert "does not exist" in said and "/nonexistent/" in said, (argv, said)
    assert not set(seen["all"]) & set(HEAVY), sorted(set(seen["all"]) & set(HEAVY))


def test_help_lists_every_verb_with_its_line_and_the_global_options() -> None:
    from typer.testing import CliRunner

    result = CliRunner().invoke(app, ["--help"])
    said = " ".join(result.output.replace("│", " ").split())
    assert result.exit_code == 0 and "Usage: scoutless [OPTIONS] COMMAND [ARGS]..." in said
    for name, verb in VERBS.items():
        assert f"{name} {' '.join(verb.help.split()[:3])}" in said, name
    for option in ("--version", "--config", "--help"):
        assert option in said
