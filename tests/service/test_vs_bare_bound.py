"""The bound ``benchmarks/bare_compare.py`` reports beside the service-vs-bare ratios
(``throughput_bound.py``): each stage priced at the groups the service formed, read from
its own ``/metrics``."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from service_fakes import store_task, task

from benchmark_modules import benchmark_module


@pytest.fixture(scope="module")
def bare_compare():
    with benchmark_module("bare_compare") as module:
        yield module


@pytest.fixture(scope="module")
def throughput_bound():
    with benchmark_module("throughput_bound") as module:
        yield module


def _affine(stage: str, fixed: float, each: float) -> dict[str, float]:
    """CPU ms per request at every measured group size of a stage whose group costs
    ``fixed + each * k`` (``MEASURED_GROUPS``: 1 to 8)."""
    return {f"{stage}_{k}": (fixed + each * k) / k for k in range(1, 9)}


@given(
    fixed=st.floats(0.0, 5.0),
    each=st.floats(0.0, 1.0),
    group=st.floats(1.0, 8.0),
)
def test_a_mean_group_between_sizes_costs_its_share_of_the_group(
    throughput_bound, fixed, each, group
) -> None:
    """A group's whole cost is interpolated, not the per-request figure: exact where the
    cost is a fixed part and a part per request (the models' shape)."""
    got = throughput_bound._per_request(_affine("run_many", fixed, each), "run_many", group)
    assert got == pytest.approx((fixed + each * group) / group, rel=1e-9, abs=1e-12)


def test_groups_outside_the_measured_sizes_are_clipped_to_them(throughput_bound) -> None:
    cpu = _affine("log_write", 1.0, 0.1)
    assert throughput_bound._per_request(cpu, "log_write", 0.2) == pytest.approx(1.1)
    assert throughput_bound._per_request(cpu, "log_write", 30) == pytest.approx(1.8 / 8)


def _pipeline_cpu() -> dict[str, float]:
    return {
        "preprocess": 0.06,
        "request_validation": 0.01,
        "answer_json": 0.004,
        **_affine("run_many", 1.0, 0.05),
        **_affine("compiled", 0.2, 0.01),
        **_affine("log_write", 0.2, 0.02),
        **_affine("task_read", 0.1, 0.05),
    }


def test_the_ceilings_price_each_stage_at_its_own_group(throughput_bound) -> None:
    bare = {"cpu_ms_per_request": 0.2}
    post = throughput_bound.at_groups(_pipeline_cpu(), bare, {"model": 4.0, "log": 8.0},
                                      by_id=False)  # fmt: skip
    parts = post["cpu_ms_per_request"]
    assert parts["run_many"] == pytest.approx(1.2 / 4)
    assert parts["log_write"] == pytest.approx(0.36 / 8)
    assert parts["task_read"] == 0.0  # a posted task is not read
    assert parts["request_io"] == pytest.approx(0.014)
    python = 0.2 + 0.06 + 0.3 + 0.045 + 0.014
    compiled = 0.2 + 0.24 / 4 + 0.045 + 0.014
    assert post["python_ceiling"] == round(0.2 / python, 3)
    assert post["compiled_ceiling"] == round(0.2 / compiled, 3)
    by_id = throughput_bound.at_groups(_pipeline_cpu(), bare, {"model": 4.0, "log": 8.0,
                                                               "fetch": 2.0}, by_id=True)  # fmt: skip
    assert by_id["cpu_ms_per_request"]["task_read"] == pytest.approx(0.2 / 2)
    assert by_id["cpu_ms_per_request"]["request_io"] == pytest.approx(0.004)  # no body
    assert by_id["compiled_ceiling"] < post["compiled_ceiling"]


def test_mean_groups_are_read_from_the_service_s_own_metrics(bare_compare, client, db_url) -> None:
    """The counters the benchmark reads, from a real app's exposition, before and after."""
    before = bare_compare.parse_group_counts(client.get("/metrics").text)
    assert before == {"model": (0.0, 0.0), "log": (0.0, 0.0), "fetch": (0.0, 0.0)}
    store_task(db_url, 7)
    for _ in range(3):
        assert client.post("/v1/predict", json={"task": task()}).status_code == 200
    assert client.get("/v1/tasks/7/prediction").status_code == 200
    after = bare_compare.parse_group_counts(client.get("/metrics").text)
    # one request at a time: groups of one; the fetch stage formed one group, of one read
    assert bare_compare.mean_groups(before, after) == {"model": 1.0, "log": 1.0, "fetch": 1.0}
    assert bare_compare.mean_groups(after, after) == {}  # no new group: no mean
