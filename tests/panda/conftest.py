"""Session fixtures of the PanDA tests: a database from PanDA's DDL with a generated
history (through the CLI, as a new user would), a bundle trained from it, the broker."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from panda_world import ROOT, port_open
from sqlalchemy.engine import make_url
from typer.testing import CliRunner

from scoutless.cli.main import app

PG_URL = os.environ.get("SCOUTLESS_TEST_PG_URL")
STOMP_URL = os.environ.get("SCOUTLESS_TEST_STOMP_URL", "stomp://127.0.0.1:61619")


@pytest.fixture(scope="session")
def panda_db() -> str:
    """SCOUTLESS_TEST_PG_URL with PanDA's schema freshly loaded and 300 generated tasks."""
    if not PG_URL:
        pytest.skip("SCOUTLESS_TEST_PG_URL is not set (scripts/services.sh starts PostgreSQL)")
    import psycopg

    from scoutless.panda.ddl import libpq_url, load_panda_ddl

    # a database of its own (<test db>_panda): PanDA's schema is first in the search path
    # and must not capture the other PostgreSQL tests' tables
    url = make_url(PG_URL)
    name = f"{url.database}_panda"
    with psycopg.connect(libpq_url(PG_URL), autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (name,)).fetchone():
            conn.execute(f'CREATE DATABASE "{name}"')
    panda_url = url.set(database=name).render_as_string(hide_password=False)
    load_panda_ddl(panda_url, reset=True)
    result = CliRunner().invoke(app, ["data", "generate", "--tasks", "300", "--db", panda_url])
    assert result.exit_code == 0, result.output
    return panda_url


@pytest.fixture(scope="session")
def panda_table(panda_db, tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    out = tmp_path_factory.mktemp("panda-table") / "table.parquet"
    result = CliRunner().invoke(app, ["data", "build", "--out", str(out), "--db", panda_db])
    assert result.exit_code == 0, result.output
    return out


@pytest.fixture(scope="session")
def panda_bundle(panda_table, tmp_path_factory) -> Path:  # type: ignore[no-untyped-def]
    from scoutless.history.table import TrainingTable
    from scoutless.training import train_bundle

    out = tmp_path_factory.mktemp("panda-bundle") / "bundle"
    table = TrainingTable.load(panda_table)
    return train_bundle(table, out, models=("xgb",), progress=False, n_jobs=1)


@pytest.fixture(scope="session")
def broker() -> tuple[str, int]:
    """The test broker (scripts/services.sh starts it; started here if it is not up)."""
    url = make_url(STOMP_URL.replace("stomp://", "stomp+x://"))
    host, port = url.host or "127.0.0.1", int(url.port or 61619)
    if not port_open(host, port):
        script = ROOT / "scripts/rabbitmq.sh"
        env = {**os.environ, "SCOUTLESS_STOMP_PORT": str(port)}
        done = subprocess.run([str(script), "start"], env=env, capture_output=True, timeout=400)
        if done.returncode != 0 or not port_open(host, port):
            pytest.skip(f"no STOMP broker at {host}:{port}: {done.stderr.decode()[-300:]}")
    return host, port
