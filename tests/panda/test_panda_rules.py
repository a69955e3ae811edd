"""JEDI's unit rules, the message formats and the apply decision (no broker, SQLite)."""

from __future__ import annotations

import json
from datetime import datetime

import pandas as pd
import pytest
from sqlalchemy import select

from scoutless.history.db_write import write_frame
from scoutless.history.panda_db import create_schema, make_engine
from scoutless.history.schema import jedi_tasks
from scoutless.jedi.messages import (
    MalformedMessage,
    build_prediction,
    parse_scout_prediction,
    parse_task_status,
    resource_taskparams,
)
from scoutless.jedi.units import cpu_time, resources, set_split_rule, split_rule_value, uses_scouts
from scoutless.panda.apply import Outcome, apply_prediction


def test_cpu_time_below_10_goes_to_milli_units_rounded_up() -> None:
    assert cpu_time(9.0001) == (9001, "mHS06sPerEvent")
    assert cpu_time(10.0) == (10, "HS06sPerEvent")
    assert cpu_time(85.2) == (86, "HS06sPerEvent")
    r = resources(1999.2, 120, 500.5, 3600.1)
    assert (r.ram_count, r.ram_unit, r.io_intensity, r.io_intensity_unit, r.walltime) == (
        2000, "MBPerCore", 501, "kBPerS", 3601,
    )  # fmt: skip


def test_split_rule_flags_are_read_and_replaced_like_jedi() -> None:
    rule = "PC=1,US=2,NG=5"
    assert uses_scouts(rule) and split_rule_value(rule, "PC") == "1"
    assert set_split_rule(rule, "US", "1") == "PC=1,US=1,NG=5"
    assert set_split_rule("PC=1", "US", "1") == "PC=1,US=1"
    assert set_split_rule(None, "US", "1") == "US=1"
    assert not uses_scouts("XUS=2") and not uses_scouts(None)


def _targets(memory=("1-2GB", 2000.0, 2000.0), cpu=9.5, top=False) -> dict:  # type: ignore[no-untyped-def]
    def one(value, upper):  # type: ignore[no-untyped-def]
        return {"recommended_value": value, "confidence": 0.9, "bin_range": [0, upper]}

    return {
        "memory": one(memory[1], None if top else memory[2]),
        "cputime": one(cpu, 10.0),
        "io": one(500.0, 500.0),
        "walltime": one(14400.0, 14400.0),
    }


def test_prediction_message_round_trips_and_decides_skip() -> None:
    p = build_prediction(7, "v1", _targets(), policy="risk", skip_policies=["risk"], timestamp=1.5)
    body = json.loads(p.to_json())
    assert body["msg_type"] == "scout_prediction" and body["task_id"] == 7
    assert (body["cpuTime"], body["cpuTimeUnit"], body["skip_scout"]) == (
        9500,
        "mHS06sPerEvent",
        True,
    )
    assert parse_scout_prediction(p.to_json()) == p
    assert resource_taskparams(p)["ramUnit"] == "MBPerCore"
    argmax = build_prediction(
        7, "v1", _targets(), policy="argmax", skip_policies=["risk"], timestamp=1
    )
    open_top = build_prediction(
        7, "v1", _targets(top=True), policy="risk", skip_policies=["risk"], timestamp=1
    )
    assert not argmax.skip_scout and not open_top.skip_scout


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ("not json", "not JSON"),
        ("[1]", "JSON object"),
        (
            '{"msg_type": "task_status", "taskid": "x", "status": "defined", "timestamp": 1}',
            "taskid",
        ),
        ('{"msg_type": "task_status", "taskid": 1, "status": "", "timestamp": 1}', "status"),
        ('{"msg_type": "task_status", "taskid": 1, "status": "defined"}', "timestamp"),
        # issue 38: ids within int64, timestamps within the clock skew, no parser bombs
        ('{"msg_type": "task_status", "taskid": 9223372036854775808, "status": "defined", '
         '"timestamp": 1}', "taskid: 9223372036854775808 is outside"),
        ('{"msg_type": "task_status", "taskid": 0, "status": "defined", "timestamp": 1}',
         "taskid"),
        ('{"msg_type": "task_status", "taskid": "' + "9" * 5000 + '", "status": "defined", '
         '"timestamp": 1}', "taskid"),
        ('{"msg_type": "task_status", "taskid": 1, "status": "defined", "timestamp": 1e300}',
         "timestamp: 1e\\+300 is not a time"),
        ('{"msg_type": "task_status", "taskid": 1, "status": "defined", "timestamp": NaN}',
         "timestamp"),
        ('{"msg_type": "task_status", "taskid": 1, "status": "defined", "timestamp": -1}',
         "timestamp"),
        ("[" * 100_000 + "]" * 100_000, "not JSON"),
    ],
)  # fmt: skip
def test_malformed_task_status_names_the_field(body: str, field: str) -> None:
    with pytest.raises(MalformedMessage, match=field):
        parse_task_status(body)


def test_bad_prediction_message_is_refused() -> None:
    p = build_prediction(7, "v1", _targets(), policy="risk", skip_policies=["risk"], timestamp=1)
    body = p.to_dict() | {"ramCount": -5}
    with pytest.raises(MalformedMessage, match="ramCount"):
        parse_scout_prediction(body)


def test_a_timestamp_ahead_of_the_clock_by_more_than_the_skew_is_refused() -> None:
    body = {"msg_type": "task_status", "taskid": 5, "status": "defined", "timestamp": 1300.0}
    assert parse_task_status(body, now=1000.0, max_skew_s=300).timestamp == 1300.0
    with pytest.raises(MalformedMessage, match="300 s from now"):
        parse_task_status(body, now=999.0, max_skew_s=300)


@pytest.mark.parametrize(
    ("change", "field"),
    [({"task_id": 2**63}, "task_id"), ({"ramCount": 2**31}, "ramCount"),
     ({"confidence": {"memory": 1.5}}, "confidence.memory"),
     ({"confidence": {"memory": "high"}}, "memory"), ({"model_version": "v" * 200}, "model_version"),
     ({"timestamp": 1e300}, "timestamp")],
)  # fmt: skip
def test_prediction_values_must_fit_pandas_columns(change: dict, field: str) -> None:
    p = build_prediction(7, "v1", _targets(), policy="risk", skip_policies=["risk"], timestamp=1)
    with pytest.raises(MalformedMessage, match=field):
        parse_scout_prediction(p.to_dict() | change)


def _task(tid: int, **cols) -> dict:  # type: ignore[no-untyped-def]
    t0 = datetime(2026, 1, 1)
    return {"jeditaskid": tid, "username": "u", "status": "defined", "creationdate": t0,
            "modificationtime": t0, "splitrule": "PC=1,US=2", "ramcount": 2000,
            "ramunit": "MBPerCore", "cputimeunit": "HS06sPerEvent"} | cols  # fmt: skip


def test_apply_updates_only_pending_unlocked_scouting_tasks(tmp_path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'jedi.sqlite'}")
    create_schema(engine)
    rows = [
        _task(1),
        _task(2, status="scouting"),
        _task(3, lockedby="jedi-host_123"),
        _task(4, splitrule="PC=1,US=1"),
        _task(5, ramunit="MBPerCoreFixed", ramcount=6000),
        _task(6, status="ready"),
        _task(7),
    ]
    write_frame(engine, "jedi_tasks", pd.DataFrame(rows))
    p = build_prediction(0, "v1", _targets(), policy="risk", skip_policies=["risk"], timestamp=1)

    def apply(tid: int, prediction=p) -> Outcome:  # type: ignore[no-untyped-def]
        return apply_prediction(engine, type(prediction)(**{**prediction.__dict__, "task_id": tid}))

    assert [apply(t) for t in (1, 2, 3, 4, 5, 6, 99)] == [
        Outcome.APPLIED, Outcome.NOT_PENDING, Outcome.LOCKED, Outcome.SCOUTING,
        Outcome.APPLIED, Outcome.APPLIED, Outcome.NOT_FOUND,
    ]  # fmt: skip
    assert apply(1) is Outcome.SCOUTING  # applied once: US=1 now
    keep = build_prediction(
        0, "v1", _targets(), policy="argmax", skip_policies=["risk"], timestamp=1
    )
    assert apply(7, keep) is Outcome.KEEP_SCOUTS
    with engine.connect() as conn:
        got = {r.jeditaskid: r for r in conn.execute(select(jedi_tasks)).all()}
    assert (got[1].ramcount, got[1].cputime, got[1].cputimeunit) == (2000, 9500, "mHS06sPerEvent")
    assert (got[1].iointensity, got[1].iointensityunit, got[1].walltime) == (500, "kBPerS", 14400)
    assert got[1].splitrule == "PC=1,US=1" and got[1].walltimeunit is None
    assert got[2].splitrule == got[7].splitrule == "PC=1,US=2" and got[2].ramcount == 2000
    assert (got[5].ramcount, got[5].ramunit, got[5].cputime) == (6000, "MBPerCoreFixed", 9500)


def test_fill_taskparams_sets_resources_and_skip_but_keeps_fixed_units() -> None:
    from scoutless.jedi.messages import fill_taskparams

    params = {"taskName": "t", "ramCount": 4000, "ramCountUnit": "MBPerCoreFixed"}
    filled = fill_taskparams(params, _targets(), "v1", "risk", ["risk"], 1.0)
    assert filled["skipScout"] is True and filled["taskName"] == "t"
    assert (filled["ramCount"], filled["cpuTime"], filled["cpuTimeUnit"]) == (
        4000,
        9500,
        "mHS06sPerEvent",
    )
    assert (filled["ioIntensity"], filled["ioIntensityUnit"]) == (500, "kBPerS")
    plain = fill_taskparams({"taskName": "t"}, _targets(), "v1", "argmax", ["risk"], 1.0)
    assert "skipScout" not in plain and (plain["ramCount"], plain["ramUnit"]) == (2000, "MBPerCore")
