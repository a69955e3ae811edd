"""The four targets scoutless predicts, and how their columns are named in a training table.

Column convention (one place, used by every layer):

- ``{t}_value``: the task's robust value from all its finished jobs (target units)
- ``{t}_class``: its ordinal class under the table's bins (int, 0 = smallest)
- ``{t}_scout_value`` / ``{t}_scout_class``: the same computed from the first N scout jobs only
  (PanDA's incumbent estimate)
- ``{t}_bayes_class`` / ``{t}_bayes_confidence``: synthetic data only, the Bayes-optimal
  class given the features and its probability
- ``{t}_user_request_value`` / ``{t}_last2_value`` (+ ``_class``): trace baselines
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TargetSpec:
    name: str
    unit: str
    panda_field: str
    description: str


TARGETS: dict[str, TargetSpec] = {
    "memory": TargetSpec(
        "memory", "MB/core", "ramCount (MBPerCore)",
        "P75 over jobs of (maxPSS - baseRamCount) per core, x1.10, floored",
    ),
    "cputime": TargetSpec(
        "cputime", "HS06s/event", "cpuTime (HS06sPerEvent)",
        "P95 over eligible jobs of wall x corePower x cores x cpuEff / nEvents, x1.5",
    ),
    "io": TargetSpec(
        "io", "kB/s/core", "ioIntensity (kBPerS)",
        "max over jobs of (input + output kB) / wall / cores",
    ),
    "walltime": TargetSpec(
        "walltime", "s", "walltime (s)", "P95 over jobs of endtime - starttime",
    ),
}  # fmt: skip

TARGET_NAMES: tuple[str, ...] = tuple(TARGETS)


def value_col(target: str) -> str:
    return f"{target}_value"


def class_col(target: str) -> str:
    return f"{target}_class"


def scout_value_col(target: str) -> str:
    return f"{target}_scout_value"


def scout_class_col(target: str) -> str:
    return f"{target}_scout_class"


def bayes_class_col(target: str) -> str:
    return f"{target}_bayes_class"


def bayes_confidence_col(target: str) -> str:
    return f"{target}_bayes_confidence"


#: the parts of a synthetic task's true value distribution, offset + exp(N(mu, sigma))
TRUTH_PARTS: tuple[str, ...] = ("mu", "sigma", "offset")


def truth_col(target: str, part: str) -> str:
    """A synthetic table's column holding one part of the task's true value distribution."""
    return f"{target}_truth_{part}"


def baseline_value_col(target: str, baseline: str) -> str:
    return f"{target}_{baseline}_value"


def baseline_class_col(target: str, baseline: str) -> str:
    return f"{target}_{baseline}_class"
