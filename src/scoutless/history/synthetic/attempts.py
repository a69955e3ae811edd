"""Attempts of each unit of work on a clock: scouts first, failures with PanDA's error codes,
retries, and the avalanche that waits for the scouts (or never comes).

Failed attempts are extra rows (``jobstatus`` 'failed', ``attemptnr`` 1) whose retry is
the unit's finishing row (``attemptnr`` 2); only finished rows carry the measured usage
the targets are computed from, so failures never move a task's targets. All attempts of
the first ``N_SCOUTS`` units carry the scout mark ``sj``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scoutless.config import WithinTaskSettings
from scoutless.history.synthetic.jobs import JobShapes, Sites
from scoutless.history.synthetic.latent import TaskDraw

HEARTBEAT_TIMEOUT_S = 3 * 3600.0  # the server's watcher declares a silent job lost after this
#: Failure kinds: (piloterrorcode, piloterrordiag, jobdispatchererrorcode, its diag).
#: Pilot codes as in PanDA's pilot (``pilot/common/errorcodes.py``); 100 is the job
#: dispatcher's watcher (``EC_Watcher``, lost heartbeat).
FAILURES: tuple[tuple[int, str | None, int, str | None], ...] = (
    (0, None, 100, "lost heartbeat"),  # 0: site
    (1099, "Failed to stage-in file", 0, None),  # 1: site
    (1201, "Job killed by signal: SIGTERM", 0, None),  # 2: site
    (1212, "Payload ran out of memory", 0, None),  # 3: memory
    (1235, "Payload exceeded maximum allowed memory", 0, None),  # 4: memory
    (1213, "Reached batch system time limit", 0, None),  # 5: walltime
)
SITE_KINDS = (0, 1, 2)
SITE_KIND_P = (0.5, 0.3, 0.2)


@dataclass
class Failures:
    """Per unit: whether its first attempt failed, why, and what that attempt measured."""

    failed: np.ndarray
    kind: np.ndarray  # index into FAILURES
    wall: np.ndarray
    maxpss: np.ndarray
    site: np.ndarray
    hs06: np.ndarray
    gap: np.ndarray  # s from the failure to the retry's start


def draw_failures(
    rng: np.random.Generator, draw: TaskDraw, shapes: JobShapes, wall: np.ndarray,
    maxpss: np.ndarray, sites: Sites, scout: np.ndarray, within: WithinTaskSettings,
) -> Failures:  # fmt: skip
    """Ordinary failures (site, memory, walltime) plus every scout of a broken first site."""
    lat = draw.lat
    t, units = shapes.task, len(shapes.task)
    n = len(draw)
    fail_p = np.clip(lat["fail_rate"] * np.exp(0.4 * rng.standard_normal(n)), 0, 0.3)[t]
    ordinary = rng.random(units) < fail_p
    bad_scout = shapes.bad_first_site[t] & scout
    failed = ordinary | bad_scout
    cause = rng.choice(3, size=units, p=np.asarray(within.failure_cause_weights) / sum(
        within.failure_cause_weights))  # fmt: skip
    cause[bad_scout] = 0
    site_kind = np.asarray(SITE_KINDS)[rng.choice(3, size=units, p=SITE_KIND_P)]
    mem_kind = np.where(rng.random(units) < 0.5, 3, 4)
    kind = np.select([cause == 0, cause == 1], [site_kind, mem_kind], 5)

    bw = lat["bw_eff"][t]
    progress = bw * rng.random(units) + rng.uniform(0.05, 0.9, units) * (wall - bw)
    f_wall = np.select(
        [kind == 0, kind == 1, kind == 5],
        [progress + HEARTBEAT_TIMEOUT_S, rng.uniform(60, 900, units),
         wall * rng.uniform(1.1, 2.0, units)],
        progress,
    )  # fmt: skip
    f_pss = maxpss * np.select(
        [cause == 1, cause == 2], [rng.uniform(1.1, 1.6, units), rng.uniform(0.9, 1.1, units)],
        rng.uniform(0.3, 1.0, units),
    )  # fmt: skip
    f_site = np.where(bad_scout, shapes.first_site[t], shapes.site)
    return Failures(
        failed=failed,
        kind=kind,
        wall=np.maximum(np.rint(f_wall), 30),
        maxpss=np.ceil(f_pss),
        site=f_site,
        hs06=np.rint(sites.core_power[f_site] * shapes.cores),
        gap=120 + rng.exponential(900, units),
    )


def timeline(
    rng: np.random.Generator, draw: TaskDraw, shapes: JobShapes, wall: np.ndarray,
    fail: Failures, scout: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:  # fmt: skip
    """Seconds after task creation: (first start, first creation, final start, final creation).

    Scouts start first; the avalanche is created when the last scout (retries included)
    has finished, so failing scouts delay it.
    """
    t, units, n = shapes.task, len(shapes.task), len(draw)
    first = np.where(scout, 120 + rng.exponential(1800, units), 0.0)
    created = np.where(scout, rng.uniform(0, 60, units), 0.0)
    retry_created = first + fail.wall + rng.uniform(0, 60, units)
    final = np.where(fail.failed, first + fail.wall + fail.gap, first)
    scout_end = np.zeros(n)
    np.maximum.at(scout_end, t[scout], (final + wall)[scout])
    spread = np.minimum(draw.lat["n_units"] * 900.0, 10 * 86400.0)[t]
    later = scout_end[t] + 60 + rng.exponential(1800, units) + rng.random(units) * spread
    first = np.where(scout, first, later)
    created = np.where(scout, created, scout_end[t] + rng.uniform(0, 60, units))
    retry_created = np.where(scout, retry_created, first + fail.wall + rng.uniform(0, 60, units))
    final = np.where(fail.failed, first + fail.wall + fail.gap, first)
    return first, created, final, np.where(fail.failed, retry_created, created)


def aborted_tasks(rng: np.random.Generator, shapes: JobShapes, within: WithinTaskSettings):  # type: ignore[no-untyped-def]
    """Tasks broken after every scout failed at their broken first site (no avalanche)."""
    share = max(within.bad_early_site_share, within.scout_abort_share)
    p = within.scout_abort_share / share if share > 0 else 0.0
    return shapes.bad_first_site & (rng.random(len(shapes.bad_first_site)) < p)
