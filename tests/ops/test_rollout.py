"""Rollout modes: the canary's assignment (stable, order-free, share within its binomial
spread), scope, the state row (re-read, append-only), bad input naming its key."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import create_engine, text

from scoutless.allocation.arms import RolloutError, RolloutState, assign, task_key, unit_draw
from scoutless.ops.prediction_log import PredictionLog
from scoutless.ops.rollout import already_skipped, peek_mode, read_rollout, set_rollout


@pytest.fixture
def db(tmp_path) -> str:  # type: ignore[no-untyped-def]
    return f"sqlite:///{tmp_path / 'ops.sqlite'}"


def canary(share: float, seed: int = 3, **scope: list[str]) -> RolloutState:
    return RolloutState("canary", share, seed, scope=dict(scope))


def test_canary_arms_are_a_function_of_the_key_not_of_order_or_process() -> None:
    state = canary(0.4)
    ids = list(range(1000, 1400))
    first = {i: assign(state, str(i), True).arm for i in ids}
    shuffled = ids[:]
    random.Random(1).shuffle(shuffled)
    assert {i: assign(state, str(i), True).arm for i in shuffled} == first
    # a fixed draw: the same in every process (SHA-256, not Python's salted hash)
    assert unit_draw(3, "1000") == pytest.approx(unit_draw(3, "1000"))
    assert set(first.values()) == {"canary", "control"}
    other_seed = {i: assign(canary(0.4, seed=4), str(i), True).arm for i in ids}
    assert other_seed != first


@pytest.mark.parametrize("share", [0.05, 0.3, 0.5, 0.9])
def test_the_share_holds_within_its_binomial_spread(share: float) -> None:
    n = 4000
    state = canary(share, seed=11)
    skipped = sum(assign(state, str(500_000 + i), True).skip_scout for i in range(n))
    sd = math.sqrt(n * share * (1 - share))
    assert abs(skipped - n * share) < 4 * sd, (skipped, n * share, sd)


def test_modes_scope_and_eligibility() -> None:
    assert assign(RolloutState("shadow"), "1", True).skip_scout is False
    assert assign(RolloutState("full"), "1", True).arm == "full"
    assert assign(RolloutState("full"), "1", False).arm == "ineligible"
    assert assign(canary(1.0), "1", True).arm == "canary"  # share 1: every eligible task
    scoped = canary(1.0, gshare=["Express"])
    out = assign(scoped, "1", True, {"gshare": "MC 16"})
    assert (out.arm, out.skip_scout) == ("out_of_scope", False) and "gshare" in out.reason
    assert assign(scoped, "1", True, {"gshare": "Express"}).arm == "canary"
    assert assign(canary(0.5), "1", True).reason.startswith(("canary: draw", "control: draw"))


@pytest.mark.parametrize("share", [0.0, -0.1, 1.5, float("nan"), None])
def test_a_share_outside_zero_one_names_the_key(share) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(RolloutError, match=r"rollout\.share"):
        RolloutState("canary", share)


def test_unknown_mode_and_scope_key_name_the_key() -> None:
    with pytest.raises(RolloutError, match=r"rollout\.mode.*'half'"):
        RolloutState("half")
    with pytest.raises(RolloutError, match=r"rollout\.scope.*site"):
        canary(0.5, site=["X"])
    with pytest.raises(RolloutError, match="stable canary key"):
        task_key(None, None)
    assert task_key(None, "mc23.123.evgen") == "name:mc23.123.evgen"


@given(st.floats(min_value=1e-6, max_value=1.0))
def test_every_share_in_the_interval_is_accepted(share: float) -> None:
    assert RolloutState("canary", share).share == share


def test_state_row_is_re_read_append_only_and_survives_a_new_engine(db: str) -> None:
    engine = create_engine(db)
    assert read_rollout(engine).version == 0  # the configured default
    set_rollout(engine, "canary", share=0.25, seed=9, scope={"processingtype": ["simul"]},
                reason="first canary", changed_by="tester")  # fmt: skip
    with pytest.raises(RolloutError):
        set_rollout(engine, "canary", seed=0, share=2.0)
    again = read_rollout(create_engine(db))  # another process, after a restart
    assert (again.mode, again.share, again.seed) == ("canary", 0.25, 9)
    assert again.scope == {"processingtype": ["simul"]} and again.reason == "first canary"
    set_rollout(engine, "shadow", seed=0, reason="kill switch")
    assert read_rollout(engine).mode == "shadow" == peek_mode(engine)


def test_peek_mode_creates_nothing(db: str) -> None:
    engine = create_engine(db)
    assert peek_mode(engine) is None
    with engine.connect() as conn:
        tables = conn.execute(text("SELECT name FROM sqlite_master")).scalars().all()
    assert "scoutless_rollout" not in tables


def test_an_older_log_gains_the_arm_columns_and_names_skipped_tasks(db: str) -> None:
    engine = create_engine(db)
    with engine.begin() as conn:  # the first layout: no alpha, arm, arm_reason
        conn.exec_driver_sql(
            "CREATE TABLE scoutless_task_predictions (id INTEGER PRIMARY KEY, request_id "
            "VARCHAR(64) NOT NULL, jeditaskid BIGINT, model_version VARCHAR(128) NOT NULL, "
            "policy VARCHAR(16) NOT NULL, predictions TEXT NOT NULL, features TEXT, "
            "created_at DATETIME NOT NULL)"
        )
    log = PredictionLog(engine)
    entry = {"class_id": 0, "class_label": "a", "recommended_value": 1.0, "probabilities": [1]}
    rows = [{"request_id": "r", "jeditaskid": tid, "model_version": "v", "policy": "risk",
             "predictions": {"memory": entry}, "alpha": 0.05, "arm": arm}
            for tid, arm in ((1, "canary"), (2, "control"), (3, "full"), (4, None))]  # fmt: skip
    log.write(rows)
    frame = log.read()
    assert frame.set_index("jeditaskid")["arm"].to_dict()[1] == "canary"
    assert frame["alpha"].tolist() == [0.05] * 4
    assert already_skipped(engine) == [1, 3]
