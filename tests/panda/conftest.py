"""Session fixtures of the PanDA tests: a database from PanDA's DDL with a generated
history (through the CLI, as a new user would), a bundle trained from it, the broker."""

from __future__ import annotations

import itertools
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from panda_world import ROOT, JediStandIn, TcpProxy, World, port_open, start_agent
from sqlalchemy.engine import make_url
from typer.testing import CliRunner

from scoutless.cli.main import app
from scoutless.config import Settings
from scoutless.history.panda_db import make_engine
from scoutless.history.synthetic import generate_chunk

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
    return train_bundle(table, out, models=("xgb",), progress=False, n_jobs=1, settings=Settings())


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


_WORLDS = itertools.count()


@pytest.fixture(scope="module")
def world(panda_db, panda_bundle, broker, tmp_path_factory) -> Iterator[World]:  # type: ignore[no-untyped-def]
    """JEDI's stand-in, the agent and the listener; each module's tasks have ids of their
    own (the session's database is shared)."""
    tmp = tmp_path_factory.mktemp("panda-e2e")
    run = uuid.uuid4().hex[:8]
    status_q, prediction_q = (
        f"/queue/test_{run}_jobtaskstatus",
        f"/queue/test_{run}_scout_prediction",
    )
    url = make_url(panda_db)
    proxy = TcpProxy((url.host or "127.0.0.1", int(url.port or 5432)))
    via_proxy = url.set(host="127.0.0.1", port=proxy.port).render_as_string(hide_password=False)
    engine = make_engine(panda_db)
    from scoutless.ops.rollout import set_rollout

    # these modules test the path where eligible tasks skip their scouts: full, said so
    set_rollout(engine, "full", seed=0, reason="e2e tests: eligible tasks skip", changed_by="tests")
    frames = generate_chunk(1000, first_task_id=500_000 + 10_000 * next(_WORLDS), seed=7)
    jedi = JediStandIn(engine, frames, broker, status_q)
    agent, plugin_log = start_agent(tmp, db=panda_db, broker=broker, prediction_q=prediction_q)
    w = World(
        tmp,
        panda_db,
        via_proxy,
        panda_bundle,
        broker,
        status_q,
        prediction_q,
        proxy,
        jedi,
        agent,
        plugin_log,
    )
    w.start_listener()
    yield w
    if w.listener is not None:
        w.listener.stop()
    agent.stop()
    jedi.close()
    proxy.cut()
    engine.dispose()
