"""Reading never creates a database: a mistyped SQLite path stays a missing file."""

from __future__ import annotations

from pathlib import Path

import pytest

from scoutless.config import BadDatabaseUrl
from scoutless.history.panda_db import (
    DatabaseUnavailable,
    NotAHistory,
    absent_tables,
    create_schema,
    existing_database,
    make_engine,
)


def test_an_engine_that_may_not_create_leaves_a_missing_file_missing(tmp_path: Path) -> None:
    missing = tmp_path / "nothere.sqlite"
    engine = make_engine(f"sqlite:///{missing}", create=False, for_reads=True)
    with pytest.raises(DatabaseUnavailable, match="no database file"):
        absent_tables(engine, ["jedi_tasks"])
    assert not missing.exists()


def test_reading_commands_refuse_a_missing_file_at_once(tmp_path: Path) -> None:
    missing = tmp_path / "panda.sqlit"
    for open_it in (existing_database, lambda url: make_engine(url, read_only=True)):
        with pytest.raises(NotAHistory, match="does not exist"):
            open_it(f"sqlite:///{missing}")
    assert not missing.exists()


def test_an_existing_history_opens_for_reads_and_writes_beside(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'panda.sqlite'}"
    create_schema(make_engine(url))
    engine = existing_database(url)
    assert absent_tables(engine, ["jedi_tasks", "no_such_table"]) == ["no_such_table"]


def test_a_path_is_not_a_url_and_the_message_says_how_to_write_one() -> None:
    with pytest.raises(BadDatabaseUrl, match=r"sqlite:///scoutless-work/history\.sqlite"):
        make_engine("scoutless-work/history.sqlite")
