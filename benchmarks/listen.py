"""PanDA integration under load: "defined" published → task row updated, end to end.

A stand-in for JEDI publishes ``task_status: defined`` for tasks already in a PostgreSQL
database made from PanDA's DDL, at a fixed rate; ``scoutless listen`` (a subprocess)
predicts and publishes; panda-common's own agent (a subprocess) runs the JEDI plugin that
updates ``jedi_tasks``. A poller watches the rows. Prints JSON: p50/p90/p99/max latency
from publish to ``US=1`` on the row, tasks lost (no outcome) and duplicated (applied more
than once). Goal: 50 tasks/s for 60 s, p99 <= 1 s, zero lost, zero duplicated.

    python benchmarks/listen.py [--rate 50] [--seconds 60] [--db URL] [--broker stomp://…]
                                [--bundle DIR] [--out FILE]

Needs PostgreSQL and RabbitMQ with STOMP (``scripts/services.sh``). ``--db`` is emptied
and reloaded with PanDA's schema. Without ``--bundle`` one is trained on a 1,000-task
generated history in that database first.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from datetime import UTC
from pathlib import Path

import httpx
import numpy as np
from sqlalchemy import text

from record import add_out, emit, reference_loop_s
from scoutless.config import Settings
from scoutless.history.panda_db import make_engine
from scoutless.history.synthetic import generate_chunk, generate_history
from scoutless.panda.broker import parse_broker_url
from scoutless.panda.ddl import load_panda_ddl
from scoutless.panda.standin import JediStandIn, applied_counts, write_agent_files

DEFAULT_DB = "postgresql+psycopg://postgres@127.0.0.1:54329/scoutless_panda"
CLI = "from scoutless.cli.main import app; app()"


def train_bundle_on(db: str, folder: Path) -> Path:
    from scoutless.history.build import build_table_from_db
    from scoutless.training import train_bundle

    engine = make_engine(db)
    generate_history(engine, 1000, seed=5, progress=False)
    table, _ = build_table_from_db(engine, settings=Settings())
    engine.dispose()
    return train_bundle(table, folder / "bundle", models=("xgb",), progress=False, n_jobs=1, settings=Settings())


def start(args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen:
    out = open(log, "ab")  # noqa: SIM115 - the child owns it
    return subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env={**os.environ, **env})


def wait_healthy(port: int, proc: subprocess.Popen, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("the listener exited during start-up")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError("the listener did not become healthy")


class Watcher(threading.Thread):
    """Polls jedi_tasks (US=1) and the listener's outbox; records when each task settles."""

    def __init__(self, engine, ids: list[int]) -> None:  # type: ignore[no-untyped-def]
        super().__init__(daemon=True)
        self.engine, self.pending = engine, set(ids)
        self.updated: dict[int, float] = {}
        self.kept: set[int] = set()  # predicted with skip_scout false: JEDI keeps its scouts
        self.stop = threading.Event()

    def run(self) -> None:
        rows_sql = text(
            "SELECT jeditaskid FROM jedi_tasks WHERE jeditaskid = ANY(:i) AND splitrule LIKE '%US=1%'"
        )
        kept_sql = text(
            "SELECT jeditaskid FROM scoutless_panda_outbox WHERE jeditaskid = ANY(:i) AND message LIKE :kept"
        )
        while not self.stop.is_set() and self.pending:
            ids = list(self.pending)
            with self.engine.connect() as conn:
                done = conn.execute(rows_sql, {"i": ids}).scalars().all()
                kept = (
                    conn.execute(kept_sql, {"i": ids, "kept": '%"skip_scout":false%'})
                    .scalars()
                    .all()
                )
            now = time.time()
            for tid in done:
                self.updated[tid] = now
            self.kept.update(kept)
            self.pending -= set(done) | set(kept)
            self.stop.wait(0.01)


def publish_at_rate(jedi: JediStandIn, ids: list[int], rate: float) -> dict[int, float]:
    sent: dict[int, float] = {}
    t0 = time.time()
    for i, tid in enumerate(ids):
        delay = t0 + i / rate - time.time()
        if delay > 0:
            time.sleep(delay)
        sent[tid] = time.time()
        jedi.publish(tid)
    return sent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=50.0)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--db", default=os.environ.get("SCOUTLESS_PANDA_DB_URL", DEFAULT_DB))
    parser.add_argument(
        "--broker", default=os.environ.get("SCOUTLESS_TEST_STOMP_URL", "stomp://127.0.0.1:61619")
    )
    parser.add_argument("--bundle", type=Path)
    add_out(parser)
    args = parser.parse_args()
    loop_before = reference_loop_s()
    tmp = Path(tempfile.mkdtemp(prefix="scoutless-listen-bench-"))
    load_panda_ddl(args.db, reset=True)
    bundle = args.bundle or train_bundle_on(args.db, tmp)
    run = uuid.uuid4().hex[:8]
    status_q, prediction_q = (
        f"/queue/bench_{run}_jobtaskstatus",
        f"/queue/bench_{run}_scout_prediction",
    )
    broker = parse_broker_url(args.broker)
    files = write_agent_files(
        tmp, db=args.db, broker=broker, prediction_queue=prediction_q, n_threads=4
    )
    agent = start(
        [sys.executable, "-m", "scoutless.panda.agent", str(files.config)],
        tmp / "agent.log",
        {"PANDA_HOME": str(files.panda_home)},
    )
    port = 19466
    listener = start(
        [sys.executable, "-c", CLI, "listen", "--bundle", str(bundle), "--db", args.db, "--broker", args.broker,
         "--subscribe", status_q, "--publish", prediction_q, "--policy", "risk", "--health-port", str(port)],
        tmp / "listener.log", {},
    )  # fmt: skip
    engine = make_engine(args.db)
    try:
        wait_healthy(port, listener)
        n = int(args.rate * args.seconds)
        jedi = JediStandIn(
            engine, generate_chunk(n, first_task_id=20_000_000, seed=11), broker, status_q
        )
        ids = jedi.insert(n)
        watcher = Watcher(engine, ids)
        watcher.start()
        began = time.time()
        sent = publish_at_rate(jedi, ids, args.rate)
        publish_s = time.time() - began
        watcher.join(timeout=120)
        watcher.stop.set()
        metrics = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
        result = summarise(
            args, n, publish_s, sent, watcher, applied_counts(files.plugin_log), metrics
        )
        result["listener_share_s"] = listener_share(engine, sent)
        jedi.close()
    finally:
        for proc in (listener, agent):
            proc.terminate()
            proc.wait(30)
        engine.dispose()
    emit({"benchmark": "listen", **result}, args.out, loop_before, indent=2)


def listener_share(engine, sent: dict[int, float]) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """Publish → prediction confirmed by the broker: the listener's part of the latency."""
    sql = text(
        "SELECT jeditaskid, published_at FROM scoutless_panda_outbox WHERE jeditaskid = ANY(:i)"
    )
    with engine.connect() as conn:
        rows = conn.execute(sql, {"i": list(sent)}).all()
    lat = np.array(
        [
            r.published_at.replace(tzinfo=UTC).timestamp() - sent[r.jeditaskid]
            for r in rows
            if r.published_at
        ]
    )
    if not lat.size:
        return {}
    return {f"p{p}": round(float(np.percentile(lat, p)), 3) for p in (50, 90, 99)}


def summarise(args, n, publish_s, sent, watcher, applied, metrics) -> dict:  # type: ignore[no-untyped-def]
    lat = np.array([watcher.updated[t] - sent[t] for t in watcher.updated])
    q = (lambda p: round(float(np.percentile(lat, p)), 3)) if lat.size else (lambda p: None)
    lost = n - len(watcher.updated) - len(watcher.kept)
    duplicated = sum(1 for c in applied.values() if c > 1)
    p99 = q(99)
    return {
        "tasks": n, "rate_target_per_s": args.rate, "rate_achieved_per_s": round(n / publish_s, 2),
        "tasks_updated": len(watcher.updated), "tasks_kept_scouts": len(watcher.kept),
        "lost": lost, "duplicated": duplicated,
        "latency_s": {"p50": q(50), "p90": q(90), "p99": p99, "max": round(float(lat.max()), 3) if lat.size else None},
        "goal": {"p99_le_1s": p99 is not None and p99 <= 1.0, "zero_lost": lost == 0, "zero_duplicated": duplicated == 0},
        "listener_errors": [line for line in metrics.splitlines() if line.startswith("scoutless_listener_errors_total")],
        "cpu_cores": os.cpu_count(), "load_average_1m": round(os.getloadavg()[0], 2),
    }  # fmt: skip


if __name__ == "__main__":
    main()
