"""End to end on one machine: JEDI stand-in → RabbitMQ → ``scoutless listen`` → RabbitMQ →
panda-common's agent running ``scoutless.panda.jedi_plugin`` → PanDA's jedi_tasks, plus
the faults: bad messages, a database outage, SIGKILL of the listener, a broker restart."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time

import pytest
from panda_world import ROOT, World, applied_counts, dead_letter_queue, wait_for
from sqlalchemy import text

from scoutless.panda.broker import StompBroker

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def test_defined_tasks_skip_their_scouts_and_a_scouting_task_is_left_alone(world: World) -> None:
    ids = world.jedi.insert(12)
    moved_on = world.jedi.insert(1, status="scouting")  # defined, then scouting before we answer
    for tid in ids + moved_on:
        world.jedi.publish(tid)
    messages = world.settle(ids + moved_on, left_alone=moved_on)
    rows = world.jedi.updated(ids + moved_on)
    applied = [t for t in ids if messages[t]["skip_scout"]]
    assert len(applied) >= len(ids) // 2, messages
    for tid in applied:
        m, row = messages[tid], rows[tid]
        if row["ramunit"] == "MBPerCoreFixed":  # the submitter fixed it: JEDI keeps it
            assert row["ramcount"] is None
        else:
            assert (row["ramcount"], row["ramunit"]) == (m["ramCount"], "MBPerCore")
        assert (row["cputime"], row["cputimeunit"]) == (m["cpuTime"], m["cpuTimeUnit"])
        assert (row["iointensity"], row["iointensityunit"]) == (m["ioIntensity"], "kBPerS")
        assert row["walltime"] == m["walltime"] and row["walltimeunit"] is None
        assert row["splitrule"] == "PC=1,US=1" and row["status"] == "defined"
    assert moved_on[0] not in rows  # still US=2, columns untouched
    wait_for(
        lambda: "not_pending" in world.plugin_log.read_text(), 30, "the plugin to log the drop"
    )
    with world.jedi.engine.connect() as conn:
        n_log = conn.execute(
            text("SELECT count(*) FROM scoutless_task_predictions WHERE jeditaskid = ANY(:i)"),
            {"i": ids},
        ).scalar()
    assert n_log == len(ids)  # one committed row per task


def test_bad_messages_are_logged_counted_and_acked(world: World) -> None:
    old, other, good = world.jedi.insert(3)
    world.jedi.send("this is not json")
    world.jedi.send(json.dumps({"msg_type": "job_status", "jobid": 1}))
    world.jedi.publish(987_654_321)  # unknown task
    world.jedi.publish(old, timestamp=1_000_000)  # far older than max_age
    world.jedi.publish(other, status="running")
    poison = json.dumps({"msg_type": "task_status", "taskid": 2**63, "status": "defined",
                         "timestamp": time.time()})  # fmt: skip
    world.jedi.send(poison)  # just before a good one: it must not delay it
    world.jedi.publish(good)
    world.settle([good])
    counts = {k: world.metric(f'scoutless_listener_messages_total{{outcome="{k}"}}')
              for k in ("malformed", "ignored_type", "unknown_task", "stale", "ignored_status")}  # fmt: skip
    assert all(v >= 1 for v in counts.values()), counts
    assert world.metric('scoutless_listener_dead_letters_total{kind="malformed"}') >= 1
    assert not world.outbox([old, other]) and world.healthy()
    with world.jedi.engine.connect() as conn:  # the malformed one is kept, with why
        reason = conn.execute(text(
            "SELECT reason FROM scoutless_dead_letters WHERE body = 'this is not json'"
        )).scalar()  # fmt: skip
    assert reason is not None and reason.startswith("malformed: not JSON")
    dead = StompBroker(f"stomp://{world.broker[0]}:{world.broker[1]}",
                       dead_letter_queue(world.status_q), heartbeat_ms=0)  # fmt: skip
    dead.connect_once()
    try:  # the broker's dead-letter destination holds them too, with the reason
        frames = [dead.frames.get(timeout=30) for _ in range(2)]
    finally:
        dead.close()
    by_body = {f.body: f.headers for f in frames}
    assert set(by_body) == {"this is not json", poison}
    assert by_body[poison]["scoutless-kind"] == "malformed"
    assert "taskid: 9223372036854775808 is outside" in by_body[poison]["scoutless-reason"]


def test_database_outage_keeps_messages_until_it_ends(world: World) -> None:
    before = world.metric('scoutless_listener_errors_total{kind="database"}')
    world.proxy.cut()
    ids = world.jedi.insert(5)
    for tid in ids:
        world.jedi.publish(tid)
    wait_for(
        lambda: world.metric('scoutless_listener_errors_total{kind="database"}') > before,
        60,
        "a database error",
    )
    assert not world.outbox(ids) and world.listener.p.poll() is None  # type: ignore[union-attr]
    world.proxy.restore()
    world.settle(ids)


def test_sigkill_mid_stream_then_restart_updates_every_task_once(world: World) -> None:
    ids = world.jedi.insert(40)

    def trickle() -> None:  # a stream, not one burst: the kill lands in the middle of it
        for tid in ids:
            world.jedi.publish(tid)
            time.sleep(0.05)

    publisher = threading.Thread(target=trickle)
    publisher.start()
    wait_for(lambda: len(world.outbox(ids)) > 0, 60, "the first predictions", every=0.02)
    world.listener.stop(signal.SIGKILL)  # type: ignore[union-attr]
    publisher.join()
    assert len(world.outbox(ids)) < len(ids), "killed too late to test anything"
    world.start_listener()
    messages = world.settle(ids)
    counts = applied_counts(world.plugin_log)
    assert all(counts.get(t, 0) == (1 if messages[t]["skip_scout"] else 0) for t in ids), counts
    with world.jedi.engine.connect() as conn:
        per_task = conn.execute(text(
            "SELECT jeditaskid, count(*) FROM scoutless_task_predictions"
            " WHERE jeditaskid = ANY(:i) GROUP BY 1"
        ), {"i": ids}).all()  # fmt: skip
    assert sorted(n for _, n in per_task) == [1] * len(ids)  # once per task, no duplicate


def test_broker_restart_listener_reconnects_and_catches_up(world: World) -> None:
    first = world.jedi.insert(5)
    for tid in first:
        world.jedi.publish(tid)
    world.settle(first)
    reconnects = world.metric("scoutless_listener_reconnects_total")
    subprocess.run([str(ROOT / "scripts/rabbitmq.sh"), "restart"], check=True, timeout=120)
    world.jedi.reconnect()
    second = world.jedi.insert(5)
    for tid in second:
        world.jedi.publish(tid)
    world.settle(first + second, timeout=120)
    assert world.metric("scoutless_listener_reconnects_total") > reconnects
