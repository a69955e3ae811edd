"""A user's mistake on the command line: one line on stderr, exit 2, no traceback; a bug in
scoutless keeps its traceback (``cli/errors.py``)."""

from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from scoutless.cli.errors import USER_ERRORS, message, one_line_errors
from scoutless.cli.main import app
from scoutless.service.request_input import InputError, InputErrors


def _refused(*args: str) -> str:
    """The one line a command refuses with (asserting there is exactly one, and exit 2)."""
    result = CliRunner().invoke(app, list(args))
    lines = result.stderr.splitlines()
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith("scoutless: error: "), result.stderr
    assert "Traceback" not in result.output
    return lines[0].removeprefix("scoutless: error: ")


def test_a_path_given_for_a_database_url_says_how_to_write_it(tmp_path: Path) -> None:
    line = _refused("data", "build", "--db", "scoutless-work/history.sqlite",
                    "--out", str(tmp_path / "t.parquet"))  # fmt: skip
    assert "not a database URL" in line
    assert "sqlite:///scoutless-work/history.sqlite" in line


def test_taskparams_with_a_folder_that_is_not_a_bundle(tmp_path: Path) -> None:
    (tmp_path / "task.json").write_text(json.dumps({"taskName": "user.x.1"}))
    (tmp_path / "work").mkdir()
    line = _refused("taskparams", str(tmp_path / "task.json"), "--bundle", str(tmp_path / "work"))
    assert line == f"{tmp_path / 'work'} is not a complete bundle: no manifest.json"


def test_taskparams_on_a_file_that_is_not_an_object(tmp_path: Path) -> None:
    (tmp_path / "task.json").write_text("[1, 2, 3]")
    (tmp_path / "work").mkdir()
    line = _refused("taskparams", str(tmp_path / "task.json"), "--bundle", str(tmp_path / "work"))
    assert (
        line == f"{tmp_path / 'task.json'}: expected a JSON object of task parameters, not a list"
    )


def test_monitor_impact_on_a_mistyped_sqlite_path_creates_nothing(tmp_path: Path) -> None:
    typo = tmp_path / "panda.sqlit"
    line = _refused("monitor", "impact", "--db", f"sqlite:///{typo}")
    assert line.startswith(f"{typo} does not exist")
    assert not typo.exists()


@pytest.mark.parametrize(
    ("verb", "option", "value"),
    [("impact", "--days", "0"), ("impact", "--days", "nan"), ("promise", "--days", "-2"),
     ("promise", "--refit-days", "0"), ("run", "--history-days", "-1")],
)  # fmt: skip
def test_a_span_of_days_that_is_not_positive_is_refused_by_name(
    verb: str, option: str, value: str, tmp_path: Path
) -> None:
    registry = [] if verb == "impact" else ["--registry", str(tmp_path)]
    registry += ["--once"] if verb == "run" else []  # were it let through: one step, no loop
    line = _refused("monitor", verb, *registry, option, value)
    assert line.startswith(f"Invalid value for '{option}': {value} is not a positive number")


def test_a_poll_interval_that_is_not_positive_is_refused_by_name(tmp_path: Path) -> None:
    line = _refused("serve", "--bundle", str(tmp_path), "--poll", "0")
    assert line.startswith("Invalid value for '--poll': 0 is not a positive number of seconds")


@pytest.mark.timeout(60)  # were the bound skipped, the command would start and poll on
@pytest.mark.parametrize(
    ("argv", "said"),
    [(["online", "follow", "--poll-interval", "-1"], "poll_interval_s: Input should be greater than 0"),
     (["listen", "--max-age", "-5"], "max_age_s: Input should be greater than 0"),
     (["listen", "--alpha", "7"], "alpha: Input should be less than 1")],
)  # fmt: skip
def test_an_option_copied_into_a_setting_keeps_the_settings_bounds(
    argv: list[str], said: str, tmp_path: Path
) -> None:
    db = f"sqlite:///{tmp_path / 'h.sqlite'}"
    bundle = ["--bundle", str(tmp_path)] if argv[0] == "listen" else []
    assert _refused(*argv, "--db", db, *bundle) == said


def test_a_database_that_cannot_be_reached_is_one_line_in_the_drivers_words() -> None:
    """A mistyped host or port is the database's operation (PEP 249's OperationalError),
    not a bug: no traceback, no SQL, the driver's reason naming the host."""
    line = _refused("data", "generate", "--db", "postgresql+psycopg://postgres@127.0.0.1:1/x",
                    "--tasks", "300")  # fmt: skip
    assert line.startswith("database: connection failed") and '"127.0.0.1", port 1' in line
    assert "sqlalche.me" not in line


def test_a_usage_error_is_one_line_naming_the_help() -> None:
    line = _refused("demo", "--tasks", "3")
    assert "--tasks" in line and line.endswith("demo --help)")
    assert "No such command 'nosuch'" in _refused("nosuch")


def test_validation_errors_are_named_as_in_a_file_not_as_in_http() -> None:
    errors = InputErrors([InputError(["body", "taskparams", 0, "coreCount"], "expected an int"),
                          InputError(["body", "taskparams", 1], "expected an object")])  # fmt: skip
    said = message(errors, source="task.json")
    assert said == "task.json: item 0: coreCount: expected an int; item 1: expected an object"
    assert "body" not in said


def test_a_bug_keeps_its_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(RuntimeError, match="a bug"), one_line_errors():
        raise RuntimeError("a bug")
    with pytest.raises(typer.Exit) as stopped, one_line_errors():
        raise FileNotFoundError(2, "No such file or directory", "table.parquet")
    assert stopped.value.exit_code == 2
    said = "scoutless: error: table.parquet: No such file or directory\n"
    assert capsys.readouterr().err == said


def test_every_named_user_error_is_an_exception_class() -> None:
    for dotted in USER_ERRORS:
        module, _, name = dotted.rpartition(".")
        cls = getattr(importlib.import_module(module), name)
        assert isinstance(cls, type) and issubclass(cls, Exception), dotted
