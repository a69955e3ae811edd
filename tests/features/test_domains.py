"""The numeric domains of the submission fields: one value checked alone and a request's
columns checked at once agree; text, booleans and numbers outside are refused."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scoutless.config import ReplaySettings, Settings
from scoutless.features.domains import (
    INT64_MAX,
    DomainError,
    check_taskparams,
    domains,
    violations,
)
from scoutless.features.extract import TASKPARAM_FEATURES, TASKPARAM_TO_COLUMN

TABLE = domains(ReplaySettings())
DOMAINS = list(TABLE.values())


def inside(domain) -> st.SearchStrategy:  # type: ignore[no-untyped-def]
    if domain.integer:
        return st.integers(int(domain.low), min(int(domain.high), 2**53))
    return st.floats(domain.low, domain.high, allow_nan=False)


def outside(domain) -> st.SearchStrategy:  # type: ignore[no-untyped-def]
    below = st.integers(-(2**70), int(domain.low) - 1)
    above = st.integers(int(domain.high) + 1, 2**70)
    values = [below, above, st.just(math.inf), st.just(-math.inf)]
    if domain.integer:
        values.append(st.floats(domain.low, min(domain.high, 1e15)).filter(
            lambda v: not v.is_integer()))  # fmt: skip
    return st.one_of(values)


def test_every_key_is_the_one_the_feature_code_reads() -> None:
    read = {**{k: c for k, c in TASKPARAM_TO_COLUMN.items()}, **TASKPARAM_FEATURES}
    for d in DOMAINS:
        assert read.get(d.key, d.key) == d.feature


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_inside_is_accepted_alone_and_in_columns(data) -> None:  # type: ignore[no-untyped-def]
    domain = data.draw(st.sampled_from(DOMAINS))
    value = data.draw(inside(domain))
    assert domain.problem(value) is None
    assert violations({domain.feature: np.array([value, np.nan], dtype=float)}, TABLE) == []


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_outside_is_refused_alone_and_in_columns(data) -> None:  # type: ignore[no-untyped-def]
    domain = data.draw(st.sampled_from(DOMAINS))
    value = data.draw(outside(domain))
    why = domain.problem(value)
    assert why is not None and why.startswith("expected ")
    column = np.array([domain.low, float(value)], dtype=float)
    if domain.high == INT64_MAX and float(value) == 2.0**63:
        return  # a float cannot tell 2**63 from int64's largest: the exact int is refused above
    (found,) = violations({domain.feature: column}, TABLE)
    assert found.row == 1 and found.domain == domain


@pytest.mark.parametrize("value", ["eight", "8", True, False, [8], {"n": 8}])
def test_text_and_booleans_are_not_numbers(value) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(DomainError) as refused:
        check_taskparams({"taskName": "x", "coreCount": value}, TABLE)
    assert refused.value.field == "coreCount"
    assert "expected an integer from 1 to" in str(refused.value)


@pytest.mark.parametrize(
    ("key", "value"),
    [("coreCount", -3), ("coreCount", 2**63), ("coreCount", 2**63 - 1), ("coreCount", 0),
     ("nEventsPerJob", 0), ("nEventsPerJob", 2**63), ("cpuEfficiency", 101.0),
     ("ramCount", -1e308), ("ramCount", 1e308), ("coreCount", 2.5)],
)  # fmt: skip
def test_the_reported_values_are_refused(key, value) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(DomainError, match=key):
        check_taskparams({key: value}, TABLE)


def test_absent_and_null_fields_are_fine_and_a_list_is_no_task() -> None:
    check_taskparams({"taskName": "x", "coreCount": None}, TABLE)
    with pytest.raises(DomainError, match="JSON object"):
        check_taskparams([1, 2, 3], TABLE)


def test_the_site_sets_the_cores_bound() -> None:
    narrow = Settings(replay={"max_core_count": 64})
    assert domains(narrow.replay)["corecount"].high == 64
    assert domains(Settings().replay)["corecount"].high == 1024


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_a_few_rows_and_many_rows_find_the_same(data) -> None:  # type: ignore[no-untyped-def]
    """The plain-Python path of a few rows and numpy's agree, row for row."""
    from scoutless.features import domains as module

    value = st.one_of(st.floats(allow_nan=True), st.integers(-5, 2000).map(float))
    columns = {d.feature: np.array(data.draw(st.lists(value, min_size=3, max_size=3)))
               for d in DOMAINS}  # fmt: skip
    few = module.violations(columns, TABLE)
    many = module.violations({k: np.tile(v, 10) for k, v in columns.items()}, TABLE)
    assert [(v.row, v.domain.feature) for v in many if v.row < 3] == [
        (v.row, v.domain.feature) for v in few
    ]
