"""The bound beside the service-vs-bare ratios: the highest throughput ratio one core
allows the service, from the bare app's measured CPU per request and what each stage of
the service's own costs (``stage_cpu.py``), at fixed group sizes and at the groups the
service really formed. A helper module of ``bare_compare.py``, not a benchmark of its own.
"""

from __future__ import annotations

from stage_cpu import MEASURED_GROUPS

#: requests computed together by ``Pipeline.run_many`` in the ceiling (the service's groups
#: at 8 connections hold ~5-8: `scoutless_groups_total` in its /metrics)
CEILING_GROUPS = (1, 4, 8)


def ceiling(pipeline_cpu: dict[str, float], bare: dict, *, by_id: bool = False) -> dict:
    """The highest throughput ratio this service can reach on one core: were its HTTP,
    logging and thread hand-offs as cheap as the bare app's whole request, a request would
    still cost the bare app's CPU plus ``preprocess`` plus its share of ``run_many``, so at
    most 1000 / that many requests a second, against the bare app's measured rate
    (``max_throughput_ratio_group_k``). ``must_remain_ratio_group_k`` adds what else a
    request cannot skip: its committed log rows (``log_write_k``) and, by id, the task's
    read at that group size (``task_read_k``); ``must_remain_cpu_ratio_group_k`` is the bare app's CPU per
    request over that floor, the same bound where both servers get the same share of a
    busy core (the measured rate then lags the bare app's own CPU)."""
    out: dict = {"pipeline_cpu_ms_per_request": pipeline_cpu}
    for k in CEILING_GROUPS:
        floor_ms = (
            bare["cpu_ms_per_request"] + pipeline_cpu["preprocess"] + pipeline_cpu[f"run_many_{k}"]
        )
        out[f"max_throughput_ratio_group_{k}"] = round(
            min(1.0, 1000 / floor_ms / bare["requests_per_s"]), 3
        )
        if f"log_write_{k}" in pipeline_cpu:
            floor_ms += pipeline_cpu[f"log_write_{k}"]
            floor_ms += pipeline_cpu[f"task_read_{k}"] if by_id else 0.0
            out[f"must_remain_cpu_ms_group_{k}"] = round(floor_ms, 3)
            out[f"must_remain_ratio_group_{k}"] = round(
                min(1.0, 1000 / floor_ms / bare["requests_per_s"]), 3
            )
            out[f"must_remain_cpu_ratio_group_{k}"] = round(
                bare["cpu_ms_per_request"] / floor_ms, 3
            )
    return out


def at_groups(
    pipeline_cpu: dict[str, float], bare: dict, mean_group: dict[str, float], *, by_id: bool
) -> dict:
    """The bound where the service really was: each stage's in-process CPU per request at
    the mean group it formed in the runs (``mean_group``, from ``/metrics``; a group's cost
    interpolated between the measured sizes). ``python_ceiling``: the bare app's CPU over
    it plus ``preprocess``, ``run_many``, the log's commit, by id the read, and the
    request's validation and answer in their compiled libraries (``request_io``): what
    this code could reach were the rest of HTTP and the hand-offs free.
    ``compiled_ceiling``: the same with ``preprocess`` and ``run_many`` cut to their
    compiled part (the trees' walk and the cost kernels, ``compiled_k``): what compiling
    every other step of the decision path could reach at these groups, all else free."""
    model = mean_group.get("model", 1.0)
    log = mean_group.get("log", 1.0)
    fetch = mean_group.get("fetch", 1.0)
    parts = {
        "preprocess": pipeline_cpu["preprocess"],
        "run_many": _per_request(pipeline_cpu, "run_many", model),
        "compiled": _per_request(pipeline_cpu, "compiled", model),
        "log_write": _per_request(pipeline_cpu, "log_write", log),
        "task_read": _per_request(pipeline_cpu, "task_read", fetch) if by_id else 0.0,
    }
    parts["request_io"] = pipeline_cpu["answer_json"] + (
        0.0 if by_id else pipeline_cpu["request_validation"]  # by id: no body
    )
    rest = parts["log_write"] + parts["task_read"] + parts["request_io"]
    python_ms = bare["cpu_ms_per_request"] + parts["preprocess"] + parts["run_many"] + rest
    compiled_ms = bare["cpu_ms_per_request"] + parts["compiled"] + rest
    return {
        "mean_group": mean_group,
        "cpu_ms_per_request": {k: round(v, 4) for k, v in parts.items()},
        "python_ceiling": round(bare["cpu_ms_per_request"] / python_ms, 3),
        "compiled_ceiling": round(bare["cpu_ms_per_request"] / compiled_ms, 3),
    }


def _per_request(cpu: dict[str, float], stage: str, group: float) -> float:
    """``stage``'s CPU ms per request in a group of ``group`` (a mean: the group's whole
    cost interpolated linearly between the two measured sizes around it)."""
    sizes = [k for k in MEASURED_GROUPS if f"{stage}_{k}" in cpu]
    g = min(max(group, sizes[0]), sizes[-1])
    lo = max(k for k in sizes if k <= g)
    hi = min(k for k in sizes if k >= g)
    whole_lo, whole_hi = cpu[f"{stage}_{lo}"] * lo, cpu[f"{stage}_{hi}"] * hi
    whole = whole_lo if hi == lo else whole_lo + (whole_hi - whole_lo) * (g - lo) / (hi - lo)
    return whole / g
