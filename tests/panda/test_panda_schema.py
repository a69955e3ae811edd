"""Our PanDA tables against PanDA's own DDL, column by column (name, type, NOT NULL)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from sqlalchemy.dialects import postgresql

from scoutless.history.schema import PANDA_TABLES
from scoutless.panda.ddl import DEFAULT_DDL, ddl_statements
from scoutless.panda.job_tables import panda_views

DDL = Path(__file__).resolve().parents[2].parent / "shared/data/panda-database/pg_PANDA_TABLE.sql"


def _normalise(pg_type: str) -> str:
    t = pg_type.strip().lower()
    t = re.sub(r"\s+", " ", t)
    t = {"timestamp": "timestamp without time zone", "decimal": "numeric"}.get(t, t)
    return re.sub(r"^decimal", "numeric", t).replace("character varying", "varchar")


def parse_ddl(text: str) -> dict[str, dict[str, tuple[str, bool]]]:
    """table → column → (type, NOT NULL), from CREATE TABLE bodies and ALTER … SET NOT NULL."""
    tables: dict[str, dict[str, tuple[str, bool]]] = {}
    for name, body in re.findall(r"CREATE TABLE (\w+) \((.*?)\n\)", text, flags=re.S):
        columns = {}
        for line in body.splitlines():
            m = re.match(
                r"\s*(\w+) ([\w ]+?(?:\(\d+(?:,\d+)?\))?)(\s+NOT NULL)?(\s+DEFAULT.*)?,?$", line
            )
            if m and not line.strip().startswith("--"):
                columns[m.group(1).lower()] = (_normalise(m.group(2)), bool(m.group(3)))
        tables[name.lower()] = columns
    for table, column in re.findall(r"ALTER TABLE (\w+) ALTER COLUMN (\w+) SET NOT NULL", text):
        kind, _ = tables[table.lower()][column.lower()]
        tables[table.lower()][column.lower()] = (kind, True)
    return tables


def _ours(column) -> str:  # type: ignore[no-untyped-def]
    return _normalise(column.type.compile(dialect=postgresql.dialect()))


@pytest.fixture(scope="module")
def panda() -> dict[str, dict[str, tuple[str, bool]]]:
    if not DDL.is_file():
        pytest.skip(f"PanDA DDL not found at {DDL}")
    return parse_ddl(ddl_statements(DDL))


def test_the_loader_finds_the_same_ddl() -> None:
    assert DEFAULT_DDL == DDL


def test_parser_reads_panda_columns(panda) -> None:
    assert panda["jedi_tasks"]["ramunit"] == ("varchar(32)", False)
    assert panda["jedi_tasks"]["username"] == ("varchar(128)", True)
    assert panda["jobsarchived4"]["cpuconsumptiontime"] == ("numeric(20)", True)
    assert "ramcountunit" not in panda["jedi_tasks"]


#: the history's tables, and the job follower's views of PanDA's (panda/job_tables.py)
CHECKED = [
    *(pytest.param(t, id=t.name) for t in PANDA_TABLES),
    *(pytest.param(t, id=f"follower:{t.name}") for t in panda_views.sorted_tables),
]


@pytest.mark.parametrize("table", CHECKED)
def test_every_column_is_pandas_own(panda, table) -> None:
    theirs = panda[table.name]
    wrong = {}
    for column in table.columns:
        if column.name not in theirs:
            wrong[column.name] = "not a column of PanDA's table"
            continue
        kind, not_null = theirs[column.name]
        ours = (_ours(column), not column.nullable)
        if ours != (kind, not_null):
            wrong[column.name] = f"ours {ours}, PanDA's {(kind, not_null)}"
    assert not wrong, f"{table.name}: {wrong}"
