"""JEDI's units and rounding for task resource columns, and its splitRule flags.

Mirrors panda-server (``getScoutJobData_JEDI``, ``JediTaskSpec``): integers rounded up;
CPU time in HS06sPerEvent, or in mHS06sPerEvent (×1000) when below 10; memory in MB per
core; I/O intensity in kB/s. ``US`` in the splitRule: 2 = scouts will run, 1 = no scouts,
3 = requirements already updated by scouts. ``PC=1``: JEDI pushes status changes.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

RAM_UNIT = "MBPerCore"
IO_UNIT = "kBPerS"
CPU_UNIT = "HS06sPerEvent"
CPU_UNIT_MILLI = "mHS06sPerEvent"
#: units a submitter fixed: JEDI never overwrites their values, and neither do we
FIXED_UNITS = frozenset({"MBPerCoreFixed", "HS06sPerEventFixed", "mHS06sPerEventFixed"})

USE_SCOUT = "2"
NO_SCOUT = "1"
POST_SCOUT = "3"


@dataclass(frozen=True)
class Resources:
    """A task's resource requirements as JEDI stores them (integers with units)."""

    ram_count: int
    ram_unit: str
    cpu_time: int
    cpu_time_unit: str
    io_intensity: int
    io_intensity_unit: str
    walltime: int  # seconds; JEDI's walltimeunit stays NULL so its own re-tuning still runs


def ceil_int(value: float) -> int:
    """Round up to an integer, as JEDI does (``int(math.ceil(x))``); at least 0."""
    if not math.isfinite(value):
        raise ValueError(f"value={value!r} must be finite")
    return max(0, math.ceil(value))


def cpu_time(hs06s_per_event: float) -> tuple[int, str]:
    """CPU time per event with JEDI's unit: ×1000 in mHS06sPerEvent below 10 HS06s."""
    if hs06s_per_event < 10:
        return ceil_int(hs06s_per_event * 1000), CPU_UNIT_MILLI
    return ceil_int(hs06s_per_event), CPU_UNIT


def resources(
    memory_mb: float, cputime_hs06s: float, io_kbps: float, walltime_s: float
) -> Resources:
    """Predicted values (target units) → the integers and units JEDI stores."""
    cpu, cpu_unit = cpu_time(cputime_hs06s)
    return Resources(
        ram_count=ceil_int(memory_mb),
        ram_unit=RAM_UNIT,
        cpu_time=cpu,
        cpu_time_unit=cpu_unit,
        io_intensity=ceil_int(io_kbps),
        io_intensity_unit=IO_UNIT,
        walltime=ceil_int(walltime_s),
    )


def split_rule_value(split_rule: str | None, tag: str) -> str | None:
    """Value of a two-letter tag (``US``, ``PC`` …) in a comma-separated splitRule."""
    for item in (split_rule or "").split(","):
        key, _, value = item.partition("=")
        if key.strip() == tag:
            return value.strip()
    return None


def set_split_rule(split_rule: str | None, tag: str, value: str) -> str:
    """The splitRule with ``tag=value`` replaced or appended (``JediTaskSpec.setSplitRule``)."""
    if not split_rule:
        return f"{tag}={value}"
    if split_rule_value(split_rule, tag) is None:
        return f"{split_rule},{tag}={value}"
    return re.sub(rf"(^|,)\s*{tag}=[^,]*", rf"\g<1>{tag}={value}", split_rule)


def uses_scouts(split_rule: str | None) -> bool:
    return split_rule_value(split_rule, "US") == USE_SCOUT


def pushes_status(split_rule: str | None) -> bool:
    """``PC`` > 0: JEDI publishes the task's status changes (``push_status_changes``)."""
    value = split_rule_value(split_rule, "PC")
    return value is not None and value.isdigit() and int(value) > 0


#: JobUtils.MEMORY_COMPENSATION: ResourceSpec.match_job compares 90 % of a job's memory
#: with the types' maxrampercore, "to prevent jobs with ramCount close to the HIMEM border
#: from going to HIMEM PQs" (the replay's slots and the cost model's HIMEM border)
MEMORY_COMPENSATION = 0.9
