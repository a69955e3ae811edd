"""Create PanDA's own schema in a PostgreSQL database, ready for rows (tests, demos, CI).

Loads ``pg_PANDA_TABLE.sql`` from PanDAWMS/panda-database (copied unchanged to
``../shared/data/panda-database/``) as its README says: the ``panda`` role first, psql
meta-commands skipped, then one DEFAULT partition per range-partitioned table (production
uses pg_partman instead). ``python -m scoutless.panda.ddl URL [SQL_FILE] [--reset]``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import psycopg
from sqlalchemy.engine import make_url

#: PanDA's DDL beside the checkout (``../shared/data/panda-database``)
DEFAULT_DDL = (
    Path(__file__).resolve().parents[3].parent / "shared/data/panda-database/pg_PANDA_TABLE.sql"
)
PANDA_SCHEMA = "doma_panda"

_PARTITIONED = """
SELECT c.relname FROM pg_partitioned_table p
JOIN pg_class c ON c.oid = p.partrelid JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = %s ORDER BY c.relname
"""


def libpq_url(url: str) -> str:
    """A SQLAlchemy URL (``postgresql+psycopg://…``) as libpq understands it."""
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def ddl_statements(sql_path: Path) -> str:
    """The DDL text without psql meta-commands (``\\set ON_ERROR_STOP``)."""
    lines = Path(sql_path).read_text(encoding="utf-8").splitlines()
    return "\n".join(line for line in lines if not line.lstrip().startswith("\\"))


def load_panda_ddl(
    url: str, sql_path: Path = DEFAULT_DDL, *, schema: str = PANDA_SCHEMA, reset: bool = False
) -> list[str]:
    """Create PanDA's tables (and DEFAULT partitions); returns the partitioned tables.

    Idempotent: a schema that already has ``jedi_tasks`` is left as it is. ``reset`` drops
    the schema first (everything in it is lost)."""
    if not Path(sql_path).is_file():
        raise FileNotFoundError(f"PanDA DDL not found: {sql_path}")
    with psycopg.connect(libpq_url(url), autocommit=True) as conn:
        conn.execute(
            "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'panda') "
            "THEN CREATE ROLE panda; END IF; END $$"
        )
        if reset:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
        loaded = conn.execute("SELECT to_regclass(%s)", (f"{schema}.jedi_tasks",)).fetchone()[0]
        if loaded is None:  # loaded already: only make sure the partitions exist
            conn.execute(ddl_statements(sql_path))
        tables = [r[0] for r in conn.execute(_PARTITIONED, (schema,)).fetchall()]
        for table in tables:
            conn.execute(
                f'CREATE TABLE IF NOT EXISTS "{schema}"."{table}_default" '
                f'PARTITION OF "{schema}"."{table}" DEFAULT'
            )
    return tables


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    reset = "--reset" in args
    args = [a for a in args if a != "--reset"]
    if not 1 <= len(args) <= 2:
        print("usage: python -m scoutless.panda.ddl URL [SQL_FILE] [--reset]", file=sys.stderr)
        return 2
    tables = load_panda_ddl(args[0], Path(args[1]) if len(args) > 1 else DEFAULT_DDL, reset=reset)
    print(f"PanDA schema {PANDA_SCHEMA} loaded; DEFAULT partitions for {len(tables)} tables")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
