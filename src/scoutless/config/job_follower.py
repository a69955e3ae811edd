"""The job follower's knobs (``settings.job_follower``: ``scoutless.panda.job_follower``)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class JobFollowerSettings(BaseModel):
    """How the follower reads the jobs of the tasks scoutless sized and what it writes."""

    model_config = ConfigDict(extra="forbid")

    poll_interval_s: float = Field(
        30.0, gt=0, description="read the job tables at least this often (messages or not)"
    )
    overlap_s: float = Field(
        600.0,
        ge=0,
        description="a sweep (every sweep_interval_s) reads from this far below the "
        "high-water mark: a row committed late (its modificationtime older than rows already "
        "read) is still seen; the ledger of (pandaid, attemptnr) keeps it from being handled "
        "twice",
    )
    sweep_interval_s: float = Field(
        60.0,
        ge=0,
        description="how often a read starts overlap_s below the mark (the others start "
        "just after it)",
    )
    page_rows: int = Field(500, ge=1, le=100_000, description="job rows read per statement")
    row_attempts: int = Field(
        3,
        ge=1,
        description="a job row that fails this many times for its own sake (not an outage) "
        "is put in the ledger with cause 'error' and passed",
    )
    memory_pilot_codes: tuple[int, ...] = Field(
        (1212, 1235),
        description="pilot error codes of a memory failure (pilot3: PAYLOADOUTOFMEMORY, "
        "PAYLOADEXCEEDMAXMEM)",
    )
    prior_points: int = Field(
        5,
        ge=1,
        le=1000,
        description="a task's prior weighs as many outcomes: points around the ramCount in "
        "force when the follower first sees the task (the submission's answer)",
    )
    prior_spread: float = Field(
        0.2, gt=0, le=2, description="the prior's log-normal spread around that ramCount"
    )
    retune_after: int = Field(
        5,
        ge=1,
        description="the task's ramCount follows the posterior once its jobs taught this many "
        "outcomes (JEDI re-tunes after its first 5 finished jobs)",
    )
    min_task_change: float = Field(
        0.05,
        ge=0,
        description="the task's ramCount is rewritten only when the posterior moves it by "
        "more than this share",
    )
    time_pilot_codes: tuple[int, ...] = Field(
        (1213, 1204),
        description="pilot error codes of a job killed at its time limit (pilot3: "
        "REACHEDMAXTIME, SIGXCPU): its run is a lower bound on the job's time",
    )
    forget_statuses: tuple[str, ...] = Field(
        ("finished", "done", "failed", "broken", "aborted"),
        description="a task JEDI put in one of these statuses is forgotten: its state leaves "
        "the follower's memory and its jobs are left unread (its ledger and state rows "
        "stay, `scoutless online status` still shows them)",
    )
    forget_idle_s: float = Field(
        0.0,
        ge=0,
        description="a task none of whose jobs was handled for this long is forgotten too "
        "(0: never by idleness; a forgotten task's later jobs are not read)",
    )
    forget_check_s: float = Field(
        300.0, ge=0, description="look for tasks to forget at most this often"
    )
