"""Training: the splits, the models' fit, and the synthetic generator's within-task spread (``settings.splits``, ``settings.training``, ``settings.within_task``)."""

from __future__ import annotations

from pydantic import BaseModel, Field, ValidationInfo, field_validator


class SplitSettings(BaseModel):
    """How rows are held out: the table's test split, then the parts of its training rows."""

    test_fraction: float = Field(0.15, gt=0, lt=1, description="test share, random and time")
    fit_fraction: float = Field(0.70, gt=0, description="training rows the models are fitted on")
    validation_fraction: float = Field(
        0.15, gt=0, description="early stopping, tuning, temperature and the champion"
    )
    calibration_fraction: float = Field(
        0.15, gt=0, description="held out for the risk and safe policies"
    )

    def part_fractions(self) -> dict[str, float]:
        return {
            "fit": self.fit_fraction,
            "validation": self.validation_fraction,
            "calibration": self.calibration_fraction,
        }


class TrainingSettings(BaseModel):
    """Sizes that shape a training table and a bundle."""

    min_train_values: int = Field(
        5, ge=1, description="a trace target with fewer training values is dropped"
    )
    reference_rows: int = Field(
        5000, ge=1, description="training rows kept in a bundle as the drift reference"
    )
    parallel_fits: int = Field(
        0, ge=0, description="(target, family) fits trained at once, sharing the thread "
        "budget; 0: one per thread of the budget, at most 4",
    )  # fmt: skip
    value_folds: int = Field(
        5, ge=2, description="folds the value model is cross-fitted over (fit and validation "
        "rows): they pick its number of trees and give every row an out-of-fold residual, "
        "which its scale is fitted on; the served location is one model refitted on all rows",
    )  # fmt: skip
    value_linear: bool = Field(
        True, description="the value model's location starts from a ridge regression on the "
        "one-hot categories and the numericals (its penalty chosen over the folds), its "
        "trees fit what that leaves (models/value_linear.py)",
    )  # fmt: skip
    refit_latest: bool = Field(
        True, description="on a time split, refit the served XGBoost models after early "
        "stopping on the fit and validation rows (the latest ones) with as many trees per "
        "row; validation figures and the guard stay the held-out fit's, the calibration "
        "rows stay held out from the served model",
    )  # fmt: skip


class WithinTaskSettings(BaseModel):
    """How the synthetic generator makes jobs of one task differ, scouts above all.

    Each field names one mechanism; none changes what submission-time features say about a
    task's targets (the generator rescales every task to its latent), only how well its
    first jobs stand for the rest. Zeroing a share switches its mechanism off.
    """

    scout_capped_input_share: float = Field(
        0.15, ge=0, le=1,
        description="tasks whose scouts get less input: one file (tasks split by files) or "
        "a capped part of nEventsPerJob",
    )  # fmt: skip
    scout_input_fraction: tuple[float, float] = Field(
        (0.3, 0.9), description="range of the cap, as a fraction of a production job's input"
    )
    avalanche_resize_share: float = Field(
        0.3, ge=0, le=1, description="tasks whose jobs after the scouts are cut smaller"
    )
    avalanche_resize_fraction: tuple[float, float] = Field(
        (0.15, 0.6), description="range of the cut, as a fraction of a scout's input"
    )
    slots_mean: float = Field(
        5.0, ge=0, description="mean extra (site, queue) slots a task's jobs spread over"
    )
    off_slot_share: tuple[float, float] = Field(
        (0.2, 0.95), description="range of a mixed task's share of slots of another size"
    )
    first_slot_off_share: float = Field(
        0.15, ge=0, le=1,
        description="P(a mixed task's first slot is off-size too): brokerage first finds "
        "queues of the asked core count, the avalanche overflows to others",
    )  # fmt: skip
    early_slot_share: float = Field(
        0.85, ge=0, le=1, description="P(a scout runs in the task's first slot, not a random one)"
    )
    slot_speed_sigma: float = Field(
        0.2, ge=0, description="log-sd of a slot's speed while the task runs there (load)"
    )
    site_speed_sigma: float = Field(
        0.2, ge=0, description="log-sd of a site's wall speed not captured by its corePower"
    )
    file_size_sigma: float = Field(
        0.5, ge=0, description="log-sd of a job's bytes read and written at fixed events"
    )
    memory_events_exponent: float = Field(
        0.02, ge=0, description="maxPSS grows as (events / typical events) ** exponent"
    )
    outlier_share: float = Field(0.02, ge=0, le=1, description="jobs on a slow node / hot input")
    outlier_wall_factor: tuple[float, float] = Field((1.5, 4.0))
    outlier_memory_factor: tuple[float, float] = Field((1.2, 2.0))
    bad_early_site_share: float = Field(
        0.06, ge=0, le=1,
        description="tasks whose first slot is broken: every scout there fails (lost "
        "heartbeat, stage-in) and is retried elsewhere, delaying the avalanche",
    )  # fmt: skip
    failure_cause_weights: tuple[float, float, float] = Field(
        (0.6, 0.25, 0.15), description="failed attempts: site problem, memory kill, walltime"
    )
    scout_abort_share: float = Field(
        0.004, ge=0, le=1, description="tasks broken after all their scouts failed"
    )
    few_jobs_share: float = Field(
        0.08, ge=0, le=1, description="tasks of only 1-2 jobs (no target: too few jobs)"
    )

    @field_validator(
        "scout_input_fraction", "avalanche_resize_fraction", "off_slot_share",
        "outlier_wall_factor", "outlier_memory_factor",
    )  # fmt: skip
    @classmethod
    def _ordered_range(cls, value: tuple[float, float], info: ValidationInfo) -> tuple:
        if not 0 < value[0] <= value[1]:
            raise ValueError(f"{info.field_name}={value}: expected 0 < low <= high")
        return value

    @field_validator("failure_cause_weights")
    @classmethod
    def _weights(cls, value: tuple[float, float, float]) -> tuple:
        if min(value) < 0 or sum(value) <= 0:
            raise ValueError(f"failure_cause_weights={value}: expected non-negative, sum > 0")
        return value
