"""A listener no message can stop (issue 38): a poison message goes to the dead letter with
its reason, is acked and counted; the good message behind it in the same batch is
answered; a value the database refuses is never taken for an outage."""

from __future__ import annotations

import json
import queue
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import SQLAlchemyError
from typer.testing import CliRunner

from scoutless.cli.main import app
from scoutless.config import ListenerSettings, Settings
from scoutless.history.panda_db import DatabaseUnavailable, make_engine
from scoutless.jedi.messages import TaskStatus
from scoutless.panda import dead_letters, listener, prediction
from scoutless.panda.broker import Frame
from scoutless.panda.telemetry import HealthServer, ListenerMetrics

DLQ = "/queue/test_dead_letters"


class FakeBroker:
    """What the listener asks of a broker, kept in lists."""

    def __init__(self) -> None:
        self.frames: queue.Queue[Frame] = queue.Queue()
        self.connected = threading.Event()
        self.connected.set()
        self.sent: list[tuple[str, list[str], dict | None]] = []
        self.acked: list[Frame] = []

    def connect(self, *_: object) -> bool:
        return True

    def close(self) -> None:
        return None

    def current(self, frame: Frame) -> bool:
        return True

    def ack(self, frame: Frame) -> bool:
        self.acked.append(frame)
        return True

    def send_confirmed(self, dest: str, bodies: list[str], timeout: float, headers=None) -> None:  # type: ignore[no-untyped-def]
        self.sent.append((dest, list(bodies), headers))

    def published(self, dest: str) -> list[dict]:
        return [json.loads(b) for d, bodies, _ in self.sent if d == dest for b in bodies]


def frame(task_id: object, n: int, *, timestamp: object = None) -> Frame:
    body = {"msg_type": "task_status", "taskid": task_id, "status": "defined",
            "timestamp": time.time() if timestamp is None else timestamp}  # fmt: skip
    return Frame(json.dumps(body), {"message-id": f"m-{n}", "destination": "/queue/in"}, 1)


@pytest.fixture(scope="module")
def make_listener(panda_db, panda_bundle):  # type: ignore[no-untyped-def]
    from scoutless.bundle import load_bundle
    from scoutless.service.pipeline import Pipeline

    engine = make_engine(panda_db)
    with engine.connect() as conn:
        task = int(conn.execute(text("SELECT min(jeditaskid) FROM jedi_tasks")).scalar())
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE IF EXISTS scoutless_dead_letters"))
    pool = ThreadPoolExecutor(2)
    pipeline = Pipeline(load_bundle(panda_bundle), None, pool, settings=Settings())

    def make() -> tuple[listener.TaskListener, FakeBroker, int]:
        # a model version of its own: the outbox would take the good task for a duplicate
        pipeline.predictor.version = f"dl-{time.monotonic_ns()}"  # type: ignore[misc]
        broker = FakeBroker()
        settings = ListenerSettings(dead_letter_after=3, dead_letter_destination=DLQ)
        return listener.TaskListener(pipeline, engine, broker, settings), broker, task  # type: ignore[arg-type]

    yield make
    pool.shutdown()
    engine.dispose()


def stored(engine, message_ids: list[str]) -> list[dict]:  # type: ignore[no-untyped-def]
    t = dead_letters.dead_letter_table
    with engine.connect() as conn:
        rows = conn.execute(t.select().where(t.c.message_id.in_(message_ids))).mappings().all()
    return [dict(r) for r in rows]


def test_2_63_in_a_message_is_a_dead_letter_and_the_task_behind_it_is_answered(make_listener):  # type: ignore[no-untyped-def]
    lis, broker, good = make_listener()
    bad, fine = frame(2**63, 1), frame(good, 2)
    retry = lis.handle([bad, fine])
    assert retry == []
    assert [p["task_id"] for p in broker.published(lis.settings.publish)] == [good]
    assert {f.headers["message-id"] for f in broker.acked} == {"m-1", "m-2"}
    (row,) = stored(lis.engine, ["m-1"])
    assert row["kind"] == "malformed" and "taskid" in row["reason"] and row["attempts"] == 1
    assert json.loads(row["body"])["taskid"] == 2**63
    (_dest, bodies, headers) = next(s for s in broker.sent if s[0] == DLQ)
    assert bodies == [bad.body] and headers["scoutless-kind"] == "malformed"
    assert lis.metrics.dead_letters.labels("malformed")._value.get() == 1
    assert b"scoutless_listener_dead_letters_total" in lis.metrics.render()


def _stored_copy(engine, task: int, **changes: object) -> int:  # type: ignore[no-untyped-def]
    """A copy of ``task``'s jedi_tasks row under a new id, with ``changes``."""
    from sqlalchemy import MetaData, Table, func, select

    tasks = Table("jedi_tasks", MetaData(), autoload_with=engine)
    with engine.begin() as conn:
        new = int(conn.execute(select(func.max(tasks.c.jeditaskid))).scalar()) + 1
        row = conn.execute(select(tasks).where(tasks.c.jeditaskid == task)).mappings().one()
        conn.execute(tasks.insert(), [{**row, "jeditaskid": new, **changes}])
    return new


def test_a_stored_task_outside_the_cores_domain_is_a_dead_letter_and_nothing_is_published(make_listener):  # type: ignore[no-untyped-def]
    """A task of 2**62 cores (SQLite) was published with cpuTime 0 and walltime 0; 2**31 - 1,
    the most PanDA's INTEGER column holds, is as far outside corecount's domain: no
    prediction (JEDI runs its scouts), the reason names the task and column."""
    lis, broker, good = make_listener()
    wide = _stored_copy(lis.engine, good, corecount=2**31 - 1)
    try:  # the session's other tests read every task: the copy goes again
        retry = lis.handle([frame(wide, 21), frame(good, 22)])
    finally:
        with lis.engine.begin() as conn:
            conn.execute(text("DELETE FROM jedi_tasks WHERE jeditaskid = :t"), {"t": wide})
    assert retry == []
    assert [p["task_id"] for p in broker.published(lis.settings.publish)] == [good]
    assert {f.headers["message-id"] for f in broker.acked} == {"m-21", "m-22"}
    (row,) = stored(lis.engine, ["m-21"])
    assert row["kind"] == "malformed" and row["attempts"] == 1
    assert f"task {wide}: jedi_tasks.corecount" in row["reason"], row["reason"]
    assert lis.metrics.value("out_of_domain") == 1


def test_a_timestamp_of_1e300_is_refused_at_parse(make_listener):  # type: ignore[no-untyped-def]
    lis, broker, good = make_listener()
    lis.handle([frame(good, 3, timestamp=1e300), frame(good, 4, timestamp=time.time() + 3600)])
    assert broker.published(lis.settings.publish) == []
    reasons = [r["reason"] for r in stored(lis.engine, ["m-3", "m-4"])]
    assert len(reasons) == 2 and all("timestamp" in r for r in reasons)


def _lenient(body, now=None, max_skew_s=0.0):  # type: ignore[no-untyped-def]
    """The parser as it was (no int64 bound): the value reaches the database."""
    msg = json.loads(body)
    return TaskStatus(int(msg["taskid"]), msg["status"], float(msg["timestamp"]))


def test_bigint_out_of_range_is_the_datas_fault_not_an_outage(make_listener, monkeypatch):  # type: ignore[no-untyped-def]
    """PostgreSQL's ``bigint out of range`` was retried forever as "database unavailable",
    the valid task in the same batch never answered."""
    monkeypatch.setattr(listener, "parse_task_status", _lenient)
    lis, broker, good = make_listener()
    bad, fine = frame(2**63, 5), frame(good, 6)
    retry = lis.handle([bad, fine])  # no DatabaseUnavailable: the batch went one at a time
    assert [p["task_id"] for p in broker.published(lis.settings.publish)] == [good]
    assert retry == [bad] and [f.headers["message-id"] for f in broker.acked] == ["m-6"]
    assert lis.handle(retry) == [bad]  # attempt 2
    assert lis.handle(retry) == []  # attempt 3: the dead letter
    (row,) = stored(lis.engine, ["m-5"])
    assert row["kind"] == "failed" and row["attempts"] == 3
    assert "out of range" in row["reason"] and "\n" not in row["reason"]
    assert [f.headers["message-id"] for f in broker.acked] == ["m-6", "m-5"]
    assert lis.attempts == {}


def test_the_run_loop_survives_a_poison_message(make_listener):  # type: ignore[no-untyped-def]
    lis, broker, good = make_listener()
    for f in (frame(2**64, 7), Frame("{not json", {"message-id": "m-8"}, 1), frame(good, 9)):
        broker.frames.put(f)
    stop = threading.Event()
    thread = threading.Thread(target=lis.run, args=(stop,))
    thread.start()
    deadline = time.monotonic() + 60
    while len(broker.acked) < 3 and time.monotonic() < deadline and thread.is_alive():
        time.sleep(0.05)
    stop.set()
    thread.join(10)
    assert {f.headers["message-id"] for f in broker.acked} == {"m-7", "m-8", "m-9"}
    assert lis.metrics.value("malformed") == 2 and lis.metrics.value("predicted") == 1
    assert lis.metrics.dead_letters.labels("malformed")._value.get() == 2


def test_a_real_outage_still_keeps_the_batch(make_listener, monkeypatch):  # type: ignore[no-untyped-def]
    lis, broker, good = make_listener()

    def down(*_: object, **__: object) -> None:
        try:
            create_engine("postgresql+psycopg://x@127.0.0.1:1/x").connect()
        except SQLAlchemyError as exc:
            raise DatabaseUnavailable(f"cannot read history: {exc}") from exc

    monkeypatch.setattr(prediction, "read_history", down)
    with pytest.raises(DatabaseUnavailable):
        lis.handle([frame(good, 10)])
    assert broker.acked == [] and stored(lis.engine, ["m-10"]) == []


def test_data_fault_tells_refused_values_from_outages(tmp_path: Path) -> None:
    sqlite = create_engine(f"sqlite:///{tmp_path / 'x.sqlite'}")
    with pytest.raises(OverflowError) as overflow, sqlite.connect() as conn:
        conn.execute(text("SELECT :x"), {"x": 2**63})
    assert dead_letters.data_fault(overflow.value)
    wrapped = DatabaseUnavailable("cannot read history")
    wrapped.__cause__ = overflow.value
    assert not dead_letters.outage(wrapped)
    with pytest.raises(SQLAlchemyError) as down:
        create_engine("postgresql+psycopg://x@127.0.0.1:1/x").connect()
    assert dead_letters.outage(down.value) and not dead_letters.data_fault(down.value)


def test_dead_letters_verb_lists_them(make_listener) -> None:  # type: ignore[no-untyped-def]
    earlier, _, _ = make_listener()  # one stored before the listener starts, whatever the order
    dead_letters.record(earlier.engine, kind="malformed", reason="earlier", body="{}",
                        attempts=1, message_id="m-earlier")  # fmt: skip
    lis, _, _ = make_listener()
    stored_at_start = lis.metrics.dead_letters_stored.labels("malformed")._value.get()
    assert stored_at_start == dead_letters.counts(lis.engine)["malformed"] >= 1
    dead_letters.record(lis.engine, kind="malformed", reason="[red]x[/red]\nforged line",
                        body="{}", attempts=1, message_id="m-cli")  # fmt: skip
    url = lis.engine.url.render_as_string(hide_password=False)
    result = CliRunner(env={"COLUMNS": "250"}).invoke(
        app, ["dead-letters", "--db", url, "--limit", "1"]
    )
    assert result.exit_code == 0, result.output
    assert "dead letters:" in result.output and "[red]x[/red] forged line" in result.output


def test_the_health_port_stays_on_loopback() -> None:
    with pytest.raises(ValueError, match="loopback"):
        HealthServer(0, ListenerMetrics(), lambda: True, host="0.0.0.0")
    server = HealthServer(0, ListenerMetrics(), lambda: True)
    assert server.server.server_address[0] == "127.0.0.1"
    server.server.server_close()


def redelivered(f: Frame) -> Frame:
    return Frame(f.body, {**f.headers, "redelivered": "true"}, f.generation)


def test_a_message_the_listener_dies_on_reaches_the_dead_letter(make_listener, monkeypatch):  # type: ignore[no-untyped-def]
    """A crash no exception reports (the process killed while it holds the message) cannot
    be counted in memory: redeliveries are counted in the database, so the listener does
    not die on the same message at every restart."""
    lis, broker, good = make_listener()
    crasher = redelivered(frame(good, 11, timestamp=time.time() - 1))
    digest = listener._digest(crasher)
    for _ in range(2):  # two listeners died with it: the broker delivered it again each time
        dead_letters.count_delivery(lis.engine, digest)

    def never(batch):  # type: ignore[no-untyped-def]
        raise AssertionError("a message that killed the listener twice is not tried again")

    monkeypatch.setattr(lis, "process", never)
    assert lis.handle([crasher]) == []
    (row,) = stored(lis.engine, ["m-11"])
    assert row["kind"] == "failed" and row["attempts"] == 3 and "died on it" in row["reason"]
    assert row["jeditaskid"] == good and broker.acked == [crasher]
    t = dead_letters.deliveries_table
    with lis.engine.connect() as conn:
        assert conn.execute(t.select().where(t.c.digest == digest)).first() is None


def test_a_redelivered_good_message_is_answered_and_forgotten(make_listener):  # type: ignore[no-untyped-def]
    lis, broker, good = make_listener()
    again = redelivered(frame(good, 12))
    fresh = frame(good + 1, 13)
    assert lis.handle([again, fresh]) == []
    assert sorted(p["task_id"] for p in broker.published(lis.settings.publish)) == [good, good + 1]
    assert {f.headers["message-id"] for f in broker.acked} == {"m-12", "m-13"}
    t = dead_letters.deliveries_table
    with lis.engine.connect() as conn:
        assert conn.execute(t.select().where(t.c.digest == listener._digest(again))).first() is None
