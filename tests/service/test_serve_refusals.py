"""`scoutless serve` refuses what cannot be served in one line, before any server starts."""

from __future__ import annotations

import sys

import pytest
from typer.testing import CliRunner

from scoutless.cli.main import app


@pytest.fixture
def no_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that starts fails the test."""
    import uvicorn

    def started(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise AssertionError("the server started")

    monkeypatch.setattr(uvicorn, "run", started)


def _serve(*args: str):  # type: ignore[no-untyped-def]
    result = CliRunner().invoke(app, ["serve", *args])
    lines = [line for line in result.output.splitlines() if line.startswith("cannot serve")]
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output and "startup failed" not in result.output
    assert len(lines) == 1, result.output
    return lines[0]


def test_a_folder_that_is_not_a_bundle_is_refused(tmp_path, no_server) -> None:
    folder = tmp_path / "not-a-bundle"
    folder.mkdir()
    (folder / "notes.txt").write_text("hello")
    line = _serve("--bundle", str(folder))
    assert line == f"cannot serve: {folder} is not a complete bundle: no manifest.json"


def test_a_registry_without_champion_is_refused(tmp_path, no_server) -> None:
    (tmp_path / "reg" / "versions").mkdir(parents=True)
    assert "has no champion yet" in _serve("--bundle", str(tmp_path / "reg"))


def test_an_oracle_url_without_its_driver_is_refused(tmp_path, no_server, monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "oracledb", None)
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "manifest.json").write_text("{}")
    line = _serve("--bundle", str(bundle), "--db", "oracle+oracledb://u:p@127.0.0.1:1521/panda")
    assert "pip install oracledb" in line
