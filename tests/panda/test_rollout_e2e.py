"""The rollout end to end (real RabbitMQ, PostgreSQL on PanDA's DDL, the listener and
panda-common's agent as processes): a canary's arms survive a SIGKILL of the listener and
do not depend on message order; an injected harm (the canary's jobs hit the walltime limit)
trips the guard rail, the listener follows to shadow without a restart, and no task skips
its scouts after that — not even a skip published before the switch."""

from __future__ import annotations

import json
import math
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta

import pandas as pd
import pytest
from panda_world import CLI, ROOT, World, applied_counts, wait_for
from sqlalchemy import text

from scoutless.history.panda_db import bulk_insert, make_engine
from scoutless.ops.rollout import assign, read_rollout, set_rollout

pytestmark = [pytest.mark.postgres, pytest.mark.slow]
ELIGIBLE_ARMS = ("canary", "control")


@pytest.fixture
def rollout(world: World) -> Iterator:  # type: ignore[type-arg]
    engine = make_engine(world.db)
    yield engine
    set_rollout(engine, "full", reason="test teardown")  # other modules expect today's rule
    engine.dispose()


def _trickle(world: World, ids: list[int], pause: float = 0.03) -> threading.Thread:
    order = ids[:]
    random.Random(len(ids)).shuffle(order)  # not the order the tasks were created in

    def run() -> None:
        for tid in order:
            world.jedi.publish(tid)
            time.sleep(pause)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_canary_arms_survive_sigkill_and_message_order(world: World, rollout) -> None:  # type: ignore[no-untyped-def]
    state = set_rollout(rollout, "canary", share=0.5, seed=5, reason="e2e canary")
    ids = world.jedi.insert(60)
    publisher = _trickle(world, ids)
    wait_for(lambda: len(world.outbox(ids)) > 0, 60, "the first predictions", every=0.02)
    world.listener.stop(signal.SIGKILL)  # type: ignore[union-attr]
    publisher.join()
    assert len(world.outbox(ids)) < len(ids), "killed too late to test anything"
    world.start_listener()
    messages = world.settle(ids)
    eligible = {t: m for t, m in messages.items() if m["arm"] in ELIGIBLE_ARMS}
    assert len(eligible) >= 20, messages
    for tid, m in eligible.items():  # the arm is a function of (seed, task id) alone
        assert m["arm"] == assign(state, str(tid), True).arm
        assert m["skip_scout"] == (m["arm"] == "canary")
    assert all(not m["skip_scout"] for m in messages.values() if m["arm"] not in ELIGIBLE_ARMS)
    n, k = len(eligible), sum(m["arm"] == "canary" for m in eligible.values())
    assert abs(k - n / 2) <= 3 * math.sqrt(n / 4), (k, n)
    counts = applied_counts(world.plugin_log)
    assert all(counts.get(t, 0) == int(m["skip_scout"]) for t, m in messages.items()), counts
    with rollout.connect() as conn:
        logged = conn.execute(text(
            "SELECT jeditaskid, arm, alpha, arm_reason FROM scoutless_task_predictions"
            " WHERE jeditaskid = ANY(:i)"), {"i": ids}).all()  # fmt: skip
    assert sorted(r.jeditaskid for r in logged) == sorted(ids)  # once per task
    assert all(r.arm == messages[r.jeditaskid]["arm"] and r.alpha == 0.05 for r in logged)
    assert all(r.arm_reason for r in logged)


def _jobs(task_ids: list[int], harmed: set[int]) -> pd.DataFrame:
    """Six jobs per task; a harmed task's first three attempts hit the walltime limit
    (pilot 1213: its cpuTime, and so its walltime, a quarter of what it needed)."""
    rows, now = [], datetime(2026, 3, 1, 12)
    for tid in task_ids:
        for k in range(6):
            killed = tid in harmed and k < 3
            start = now + timedelta(minutes=10 * k)
            for attempt, failed in ((1, killed), (2, False)) if killed else ((1, False),):
                end = start + timedelta(hours=1 if failed else 4)
                rows.append({
                    "pandaid": tid * 100 + k * 2 + attempt, "modificationtime": end,
                    "jeditaskid": tid, "jobstatus": "failed" if failed else "finished",
                    "attemptnr": attempt, "piloterrorcode": 1213 if failed else 0,
                    "creationtime": start, "starttime": start, "endtime": end, "corecount": 1,
                    "maxpss": 1_500_000, "cpuconsumptiontime": 3600, "nevents": 100,
                    "minramcount": 2000, "maxwalltime": 3600 if failed else 6 * 3600,
                    "maxcpucount": 3600 if failed else 6 * 3600,
                })  # fmt: skip
                start = end
    return pd.DataFrame(rows)


def test_an_injected_harm_trips_the_guard_rail_and_nothing_skips_after(
    world: World, rollout
) -> None:  # type: ignore[no-untyped-def]
    set_rollout(rollout, "canary", share=0.5, seed=6, reason="e2e harm")
    ids = world.jedi.insert(80)
    _trickle(world, ids, pause=0).join()
    messages = world.settle(ids)
    canary = {t for t, m in messages.items() if m["arm"] == "canary"}
    bulk_insert(rollout, "jobsarchived4", _jobs(ids, harmed=canary))
    with rollout.begin() as conn:
        conn.execute(text("UPDATE jedi_tasks SET status = 'done' WHERE jeditaskid = ANY(:i)"),
                     {"i": ids})  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", CLI, "monitor", "impact", "--db", world.db, "--guard", "--days", "2"],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
        env={**os.environ, "SCOUTLESS_ROLLOUT__GUARD_MIN_TASKS": "10",
             "COLUMNS": "200"},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    state = read_rollout(rollout)
    assert (state.mode, state.changed_by) == ("shadow", "guard-rail"), done.stdout
    assert "first_attempt_success: canary − control" in state.reason and "[" in state.reason
    with rollout.connect() as conn:
        alert = conn.execute(text("SELECT message FROM scoutless_alerts WHERE rule = "
                                  "'rollout-guard' ORDER BY id DESC")).scalar()  # fmt: skip
    assert "canary" in alert and "first_attempt_success" in alert and "tasks" in alert

    after = world.jedi.insert(10)  # the listener follows without a restart
    _trickle(world, after, pause=0).join()
    later = world.settle(after)
    assert all(m["arm"] == "shadow" and not m["skip_scout"] for m in later.values()), later
    assert not world.jedi.updated(after)
    wait_for(lambda: "-> shadow" in world.listener.text(), 30, "the listener's switch line")  # type: ignore[union-attr]

    [late] = world.jedi.insert(1)  # a skip published before the switch, delivered after it
    stale = dict(messages[next(iter(canary))], task_id=late)
    world.jedi.conn.send(world.prediction_q, json.dumps(stale), headers={"persistent": "true"})
    wait_for(lambda: f"task_id={late} " in world.plugin_log.read_text(), 30, "the plugin")
    wait_for(lambda: "rollout_shadow" in world.plugin_log.read_text(), 30, "the refusal")
    assert not world.jedi.updated([late])
