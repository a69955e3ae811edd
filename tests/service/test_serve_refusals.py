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
    prefix = "scoutless: error: "
    lines = [x.removeprefix(prefix) for x in result.output.splitlines() if x.startswith(prefix)]
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


def test_a_missing_sqlite_history_is_refused_and_not_created(tmp_path, no_server) -> None:
    missing = tmp_path / "nothere.sqlite"
    line = _serve("--bundle", str(_bundle(tmp_path)), "--db", f"sqlite:///{missing}")
    assert line.startswith(f"cannot serve: {missing} does not exist; make one with")
    assert not missing.exists()


def test_a_path_given_for_a_url_is_refused(tmp_path, no_server) -> None:
    line = _serve("--bundle", str(_bundle(tmp_path)), "--db", "scoutless-work/history.sqlite")
    assert "for a SQLite file write sqlite:///scoutless-work/history.sqlite" in line


def _bundle(tmp_path):  # type: ignore[no-untyped-def]
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "manifest.json").write_text("{}")
    return bundle


def test_listening_off_loopback_without_tokens_is_refused(tmp_path, no_server) -> None:
    line = _serve("--bundle", str(_bundle(tmp_path)), "--host", "0.0.0.0")
    assert line.startswith("cannot serve on 0.0.0.0: no tokens are configured")
    assert "SCOUTLESS_SERVICE__TOKENS" in line and "tokens_file" in line


def test_passwords_are_masked_and_tokens_open_other_addresses(tmp_path, monkeypatch) -> None:
    import uvicorn

    started: list[dict] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: started.append(kw))
    monkeypatch.setenv("SCOUTLESS_SERVICE__TOKENS", "jedi predict 0123456789abcdef0123")
    result = CliRunner().invoke(app, [
        "serve", "--bundle", str(_bundle(tmp_path)), "--host", "0.0.0.0",
        "--db", "postgresql+psycopg://scout:S3cr3tPw@127.0.0.1:1/panda",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert started and started[0]["host"] == "0.0.0.0"
    assert "S3cr3tPw" not in result.output and "***" in result.output
    assert "password on the command line" in result.output
    assert "bearer tokens: jedi" in result.output and "0123456789abcdef" not in result.output


def test_the_database_password_comes_from_a_file(tmp_path) -> None:
    from scoutless.config import Settings

    secret = tmp_path / "db-password"
    secret.write_text("S3cr3t/Pw@x\n")
    settings = Settings(db_url="postgresql://scout@db:5432/panda", db_password_file=secret)
    from sqlalchemy.engine import make_url

    assert make_url(settings.resolved_db_url()).password == "S3cr3t/Pw@x"
    given = Settings(db_url="postgresql://scout:other@db/panda", db_password_file=secret)
    assert make_url(given.resolved_db_url()).password == "other"  # the URL's own wins


def test_urls_are_shown_without_their_password() -> None:
    from scoutless.config import masked_url

    assert (
        masked_url("postgresql://scout:S3cr3t@db:5432/panda")
        == "postgresql://scout:***@db:5432/panda"
    )
    assert (
        masked_url("sqlite:///scoutless-work/history.sqlite")
        == "sqlite:///scoutless-work/history.sqlite"
    )
    assert masked_url("not a url @ all") == "not a url @ all"
