"""The numeric domain of each submission field: what a task's number may be at all.

A number outside its domain is no task a site could run (2**62 cores, -3 cores, an event
count of "eight"), and a model fed one answers nonsense: log1p of it lies hundreds of
standard deviations from anything trained on. The table here (:func:`domains`) is
defined once and read at every door a task comes through:

* the service's posted feature dicts and task parameters: 422 naming the field
  (``service.request_input``), the value types checked as posted, the ranges over the
  request's typed columns at once (:func:`violations`, numpy over the group);
* ``scoutless taskparams``: one line and exit 2 (:func:`check_taskparams`);
* a task read from the PanDA database by id or by the listener: refused with its id and
  column, never answered or published (:func:`violations` over its features).

The bounds that depend on the site (cores of its widest queue, memory of its largest,
its longest maxtime) come from ``Settings.replay``, the site's rules.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from scoutless.config import ReplaySettings
from scoutless.fast_paths import current

#: the largest value of PanDA's NUMBER(11)/BIGINT columns and of the log's BigInteger
INT64_MAX = 2**63 - 1


class DomainError(ValueError):
    """A submission field outside its domain: the field as submitted and what was expected."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


@dataclass(frozen=True)
class Domain:
    """What one numeric field may hold: an integer or a number within [low, high]."""

    feature: str  # the feature's name (as the models see it)
    key: str  # the task-parameter key, as submitted
    source: str  # where a task read from the database holds it
    integer: bool
    low: float
    high: float
    unit: str

    def describe(self) -> str:
        kind = "an integer" if self.integer else "a number"
        unit = f" ({self.unit})" if self.unit else ""
        if self.high == INT64_MAX:
            return f"{kind} of at least {shown(self.low)} within int64{unit}"
        return f"{kind} from {shown(self.low)} to {shown(self.high)}{unit}"

    def type_problem(self, value: Any) -> str | None:
        """Why a value as submitted is no number of this field, whatever its range (None:
        a number, or absent): text ("8", "eight") and true/false (JSON has numbers for
        numbers), and an integer outside int64 (no float tells it from one inside)."""
        if value is None or type(value) is float:
            return None
        if type(value) is int and -INT64_MAX - 1 <= value <= INT64_MAX:
            return None
        if type(value) is int:
            return f"expected {self.describe()}, got {shown(value)}"
        if isinstance(value, np.integer | np.floating):  # a database's or a frame's
            return None
        return f"expected {self.describe()}, got {_quoted(value)}"

    def problem(self, value: Any) -> str | None:
        """Why one value as submitted is outside the domain (None: inside, or absent)."""
        problem = self.type_problem(value)
        if problem is not None or value is None:
            return problem
        if isinstance(value, float) and math.isnan(value):
            return None
        inside = self.low <= value <= self.high  # a Python int compares exactly
        if inside and (not self.integer or float(value).is_integer()):
            return None
        return f"expected {self.describe()}, got {shown(value)}"


@dataclass(frozen=True)
class Violation:
    """One value outside its domain: the row, the field's domain and the value."""

    row: int
    domain: Domain
    value: float

    def message(self) -> str:
        return f"expected {self.domain.describe()}, got {shown(self.value)}"


def shown(value: float) -> str:
    """A number as a person reads it: integral values whole (up to 1e16), else 6 digits."""
    if isinstance(value, int):
        return str(value) if abs(value) < 10**16 else f"{value:.6g}"
    if math.isfinite(value) and value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return f"{value:.6g}"


def _quoted(value: Any) -> str:
    text = repr(value) if isinstance(value, str) else type(value).__name__
    text = "true" if value is True else "false" if value is False else text
    return text if len(text) <= 40 else text[:40] + "…"


def _table(site: ReplaySettings) -> dict[str, Domain]:
    """The domains under the site's limits, by feature name."""
    job_mb = site.ram_limit_mb_per_core * site.max_core_count
    wall = site.walltime_limit_s
    rows = [  # feature, task-parameter key, source, integer, low, high, unit
        ("corecount", "coreCount", "jedi_tasks.corecount", True, 1, site.max_core_count, "cores"),
        ("baseramcount", "baseRamCount", "jedi_tasks.baseramcount", False, 0, job_mb, "MB"),
        ("basewalltime", "baseWalltime", "jedi_tasks.basewalltime", False, 0, wall, "s"),
        ("cpuefficiency", "cpuEfficiency", "jedi_tasks.cpuefficiency", False, 0, 100, "%"),
        ("requested_ramcount", "ramCount", "jedi_taskparams.ramCount", False, 0, job_mb, "MB"),
        ("nevents_per_job", "nEventsPerJob", "jedi_taskparams.nEventsPerJob", True, 1,
         INT64_MAX, "events"),
        ("nfiles_per_job", "nFilesPerJob", "jedi_taskparams.nFilesPerJob", True, 1,
         INT64_MAX, "files"),
        ("n_input_datasets", "n_input_datasets", "jedi_datasets", True, 0, INT64_MAX, ""),
        ("input_nfiles", "input_nfiles", "jedi_datasets.nfiles", True, 0, INT64_MAX, "files"),
        ("input_nevents", "input_nevents", "jedi_datasets.nevents", True, 0, INT64_MAX,
         "events"),
    ]  # fmt: skip
    return {row[0]: Domain(*row) for row in rows}


def domains(site: ReplaySettings) -> dict[str, Domain]:
    """Every numeric submission field's domain under the site's limits, by feature name
    (made by whoever checks tasks, once: the serving pipeline keeps its table)."""
    return _table(site)


def by_key(table: Mapping[str, Domain]) -> dict[str, Domain]:
    """The domains by task-parameter key (``coreCount`` …)."""
    return {d.key: d for d in table.values()}


def taskparam_type_problems(
    params: Mapping[str, Any], table: Mapping[str, Domain]
) -> list[tuple[str, str]]:
    """(key, why) of each domain field of task parameters whose value is not a number."""
    out = []
    for key, domain in by_key(table).items():
        value = params.get(key)
        if value is not None and (problem := domain.type_problem(value)):
            out.append((key, problem))
    return out


def check_taskparams(params: Any, table: Mapping[str, Domain]) -> None:
    """Raise :class:`DomainError` naming the first field of a task-parameter JSON outside
    its domain (a whole task checked at once: the command line's door)."""
    if not isinstance(params, Mapping):
        raise DomainError("taskparams", f"expected a JSON object, got {_quoted(params)}")
    for key, domain in by_key(table).items():
        if (problem := domain.problem(params.get(key))) is not None:
            raise DomainError(key, problem)


def violations(numbers: Mapping[str, np.ndarray], table: Mapping[str, Domain]
               ) -> list[Violation]:  # fmt: skip
    """Every value of typed feature columns (``InspectedFeatures.numbers``, NaN: absent)
    outside its domain, by row: one comparison of the domain columns with their bounds."""
    present = [d for name, d in table.items() if name in numbers]
    if not present:
        return []
    if len(numbers[present[0].feature]) <= current().few_tasks:
        return _few_violations(numbers, present)
    block = np.stack([np.asarray(numbers[d.feature], dtype=float) for d in present])
    low = np.array([[d.low] for d in present], dtype=float)
    high = np.array([[float(d.high) for d in present]], dtype=float).T
    integer = np.array([[d.integer] for d in present])
    fractional = integer & (block != np.floor(block)) & (block == block)  # NaN: absent
    bad = (block < low) | (block > high) | fractional
    if not bad.any():
        return []
    rows, fields = np.nonzero(bad.T)  # by row, then field
    return [
        Violation(row, present[f], float(block[f, row]))
        for row, f in zip(rows.tolist(), fields.tolist(), strict=True)
    ]


def _few_violations(numbers: Mapping[str, np.ndarray], present: list[Domain]) -> list[Violation]:
    """:func:`violations` of a few rows in plain floats (a served request of one task: the
    comparisons cost less than numpy's calls); the same comparisons."""
    found = []
    for domain in present:
        low, high = float(domain.low), float(domain.high)
        for row, value in enumerate(numbers[domain.feature].tolist()):
            if value != value:  # NaN: absent
                continue
            if not low <= value <= high or (domain.integer and not value.is_integer()):
                found.append(Violation(row, domain, value))
    return sorted(found, key=lambda v: v.row)
