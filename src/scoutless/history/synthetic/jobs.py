"""Per-job usage drawn around each task's latent needs, vectorised over all jobs of a block.

Within a task, jobs differ the way real ones do (each mechanism named and switched in
:class:`scoutless.config.WithinTaskSettings`): they spread over (site, queue) slots with
different corePower, hidden site speed and slot sizes (mixed core counts), and the scouts
are not a random sample of those slots; scouts get less input; wall and CPU time scale with
the events of a job, memory grows with them; a few outlier jobs run slow and big. Each task's jobs are then scaled once so that PanDA's
own reduction (DESIGN.md §2, :func:`reference_targets`) returns exactly the task's latent
memory, walltime and io; cputime follows from the same jobs and is calibrated by
re-simulating job shapes (:func:`cputime_offsets`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scoutless.config import WithinTaskSettings
from scoutless.history.synthetic.latent import TaskDraw

MP_EFFICIENCY = {1: 1.0, 2: 0.97, 4: 0.94, 8: 0.9, 16: 0.8}
_MP_TABLE = np.full(max(MP_EFFICIENCY) + 1, np.nan)
_MP_TABLE[list(MP_EFFICIENCY)] = list(MP_EFFICIENCY.values())
OFF_CORES = {  # task cores -> core counts some jobs actually got, with weights
    1: ((8, 4), (0.7, 0.3)),
    4: ((8, 1, 2), (0.4, 0.5, 0.1)),
    8: ((4, 1, 16), (0.25, 0.6, 0.15)),
    16: ((8, 4, 1), (0.4, 0.2, 0.4)),
}
N_SCOUTS = 10
MIN_JOBS = 3
LONG_JOB_S = 6 * 3600.0
MAX_SLOTS = 16  # (site, queue) slots one task's jobs may spread over


def group_percentile(
    group: np.ndarray, values: np.ndarray, q: float, n_groups: int, mask: np.ndarray | None = None
) -> np.ndarray:
    """Per-group percentile (numpy's 'linear' rule) of ``values``; NaN for empty groups."""
    sel = np.isfinite(values) if mask is None else (mask & np.isfinite(values))
    g, v = group[sel], values[sel]
    by_value = np.argsort(v)
    order = by_value[np.argsort(g[by_value], kind="stable")]  # radix sort on the group
    g, v = g[order], v[order]
    counts = np.bincount(g, minlength=n_groups)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    has = counts > 0
    h = (counts - 1) * (q / 100.0)
    lo = np.floor(h).astype(np.int64)
    frac = h - lo
    i_lo = starts + lo
    i_hi = starts + np.minimum(lo + 1, np.maximum(counts - 1, 0))
    out = np.full(n_groups, np.nan)
    out[has] = v[i_lo[has]] + frac[has] * (v[i_hi[has]] - v[i_lo[has]])
    return out


@dataclass(frozen=True)
class Sites:
    """The grid as the generator sees it: per site, HS06 per core and a hidden wall speed."""

    core_power: np.ndarray
    speed: np.ndarray  # wall multiplier from storage, network, load (not in corePower)


@dataclass
class JobShapes:
    """One row per unit of work (a job that eventually finishes)."""

    task: np.ndarray  # index into the block's tasks
    position: np.ndarray  # 0-based order of the unit inside its task
    cores: np.ndarray
    site: np.ndarray
    hs06: np.ndarray  # corePower x cores, rounded as PanDA stores it
    nevents: np.ndarray
    wall_raw: np.ndarray  # wall time above baseWalltime, before scaling to the latent
    outlier: np.ndarray  # slow node / hot input: longer and bigger than its siblings
    first_site: np.ndarray  # per task: the site of its first slot (where scouts go)
    bad_first_site: np.ndarray  # per task: scouts sent there fail and are retried elsewhere


def _slots(
    rng: np.random.Generator, n_units: np.ndarray, scout: np.ndarray, within: WithinTaskSettings
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per unit, the (site, queue) slot of its task it runs in; scouts crowd into slot 0.

    Returns (slot per unit, slots per task, bad first slot per task). A task whose first
    slot is broken runs its finishing scouts in another slot (their failed attempts stay
    at slot 0, see ``block._job_rows``).
    """
    n_tasks = len(n_units)
    n_slots = np.minimum(1 + rng.poisson(within.slots_mean, n_tasks), MAX_SLOTS)
    owner = np.repeat(np.arange(n_tasks), n_units)
    slot = (rng.random(len(owner)) * n_slots[owner]).astype(np.int64)
    early = scout & (rng.random(len(owner)) < within.early_slot_share)
    slot[early] = 0
    bad = rng.random(n_tasks) < max(within.bad_early_site_share, within.scout_abort_share)
    moved = bad[owner] & (slot == 0) & (n_slots[owner] > 1)
    slot[moved] = 1 + (rng.random(int(moved.sum())) * (n_slots[owner][moved] - 1)).astype(np.int64)
    return slot, n_slots, bad


def _slot_cores(
    rng: np.random.Generator, draw: TaskDraw, task_index: np.ndarray, owner: np.ndarray,
    slot: np.ndarray, within: WithinTaskSettings,
) -> np.ndarray:  # fmt: skip
    """Core count per unit: a mixed task's slots may offer other slot sizes than it asked."""
    lat, cols = draw.lat, draw.cols
    n_tasks = len(task_index)
    t_cores = cols["corecount"][task_index]
    mixed = rng.random(n_tasks) < lat["mix_p"][task_index]
    off_share = rng.uniform(*within.off_slot_share, n_tasks)
    off = mixed[:, None] & (rng.random((n_tasks, MAX_SLOTS)) < off_share[:, None])
    off[:, 0] &= rng.random(n_tasks) < within.first_slot_off_share  # brokerage matches first
    pick = rng.random((n_tasks, MAX_SLOTS))
    asked = t_cores[owner]
    cores = asked.copy()
    is_off = off[owner, slot]
    for c, (choices, p) in OFF_CORES.items():
        sel = np.flatnonzero(is_off & (asked == c))
        if sel.size:
            k = np.searchsorted(np.cumsum(p), pick[owner[sel], slot[sel]])
            cores[sel] = np.asarray(choices)[np.minimum(k, len(choices) - 1)]
    return cores


def _events(
    rng: np.random.Generator, draw: TaskDraw, task: np.ndarray, position: np.ndarray,
    n_units: np.ndarray, scout: np.ndarray, within: WithinTaskSettings,
) -> np.ndarray:  # fmt: skip
    """Events per unit: nEventsPerJob (shorter last job) or whole files; the scouts of some
    tasks get less, the avalanche of others is cut smaller after scouting."""
    lat, cols = draw.lat, draw.cols
    total = len(task)
    nev_mean = lat["nev_mean"][task]
    is_last = position == np.repeat(n_units, n_units) - 1
    by_events = lat["by_events"][task]
    remainder = cols["input_nevents"][task] - position * nev_mean
    nevents = np.where(
        by_events,
        np.where(is_last, np.minimum(remainder, nev_mean), nev_mean),
        nev_mean * rng.uniform(0.7, 1.3, total),
    )
    # scouts of some tasks: one input file per job, or a capped share of nEventsPerJob
    n_tasks = len(n_units)
    capped = rng.random(n_tasks) < within.scout_capped_input_share
    fraction = rng.uniform(*within.scout_input_fraction, n_tasks)
    owner = np.repeat(np.arange(n_tasks), n_units)
    one_file = lat["events_per_file"][task] * rng.uniform(0.7, 1.3, total)
    cap = np.where(by_events, fraction[owner] * nev_mean, one_file)
    nevents = np.where(scout & capped[owner], np.minimum(nevents, cap), nevents)
    # JEDI resizes the avalanche's jobs from what the scouts measured (to fit queue limits)
    resized = rng.random(n_tasks) < within.avalanche_resize_share
    shrink = rng.uniform(*within.avalanche_resize_fraction, n_tasks)
    return np.where(~scout & resized[owner], nevents * shrink[owner], nevents)


def job_shapes(
    rng: np.random.Generator,
    draw: TaskDraw,
    task_index: np.ndarray,
    n_units: np.ndarray,
    sites: Sites,
    requested_site: np.ndarray,
    within: WithinTaskSettings,
) -> JobShapes:
    """Cores, site, events and raw wall time of every unit of the given tasks."""
    lat = draw.lat
    total = int(n_units.sum())
    task = np.repeat(task_index, n_units)
    owner = np.repeat(np.arange(len(task_index)), n_units)
    position = np.arange(total) - np.repeat(np.cumsum(n_units) - n_units, n_units)
    scout = position < N_SCOUTS

    # brokerage: a task's jobs spread over a few (site, queue) slots, scouts mostly the first
    slot, _, bad = _slots(rng, n_units, scout, within)
    n_sites = len(sites.core_power)
    first = rng.integers(0, n_sites, len(task_index))
    req = requested_site[task_index]
    first = np.where(req >= 0, req, first)
    site = np.where(req[owner] >= 0, req[owner], (first[owner] + slot) % n_sites)
    cores = _slot_cores(rng, draw, task_index, owner, slot, within)
    power = sites.core_power[site]
    hs06 = np.rint(power * cores)

    nevents = _events(rng, draw, task, position, n_units, scout, within)
    nevents = np.maximum(np.rint(nevents), 10 * cores)

    outlier = rng.random(total) < within.outlier_share
    slow = np.where(outlier, rng.uniform(*within.outlier_wall_factor, total), 1.0)
    slow *= np.exp(within.slot_speed_sigma * rng.standard_normal((len(task_index), MAX_SLOTS)))[
        owner, slot
    ]  # the load of a slot while the task runs there
    mp = _MP_TABLE[cores]
    noise = np.exp(lat["cpu_within"][task] * rng.standard_normal(total)) * slow
    wall_raw = (
        np.exp(lat["log_cpu"][task]) * nevents * noise * sites.speed[site] / (power * cores * mp)
    )
    return JobShapes(task, position, cores, site, hs06, nevents, wall_raw, outlier, first, bad)


def scale_walltime(shapes: JobShapes, draw: TaskDraw, n_groups: int) -> np.ndarray:
    """Integer wall seconds whose per-task P95 equals the latent walltime."""
    lat = draw.lat
    p95 = group_percentile(shapes.task, shapes.wall_raw, 95, n_groups)
    bw = lat["bw_eff"]
    k = (lat["walltime_target"] - bw) / p95
    wall = bw[shapes.task] + k[shapes.task] * shapes.wall_raw
    return np.maximum(np.rint(wall), bw[shapes.task] + 1)


def cputime_per_job(
    wall: np.ndarray, base_walltime: np.ndarray, hs06: np.ndarray, eff: np.ndarray,
    nevents: np.ndarray, cores: np.ndarray,
) -> np.ndarray:  # fmt: skip
    """PanDA's per-job CPU time per event; NaN for jobs it does not use."""
    value = (wall - base_walltime) * hs06 * eff / np.maximum(nevents, 1)
    eligible = (nevents >= 10 * cores) | (wall > LONG_JOB_S)
    return np.where(eligible & (nevents > 0), value, np.nan)


def cputime_offsets(
    rng: np.random.Generator,
    draw: TaskDraw,
    sites: Sites,
    requested_site: np.ndarray,
    within: WithinTaskSettings,
    *,
    replicates: int = 8,
    max_units: int = 120,
) -> tuple[np.ndarray, np.ndarray]:
    """Mean and sd of r = log C - log(cpu latent) - log(eff), by re-simulating job shapes.

    r does not depend on the task's hidden latents (they scale every job alike), only on
    job-level randomness whose law the features fix, so replicates of the task's own shape
    give its distribution; large tasks are capped at ``max_units`` (the P95 has settled).
    """
    n = len(draw)
    idx = np.tile(np.arange(n), replicates)
    rep_group = np.arange(n * replicates)
    n_units = np.minimum(draw.lat["n_units"][idx], max_units)
    shapes = job_shapes(rng, draw, idx, n_units, sites, requested_site, within)
    shapes.task = np.repeat(rep_group, n_units)  # group by replicate
    lat = draw.lat
    p95 = group_percentile(shapes.task, shapes.wall_raw, 95, n * replicates)
    target_above = (lat["walltime_target"] - lat["bw_eff"])[idx]
    owner = idx[shapes.task]
    wall = lat["bw_eff"][owner] + (target_above / p95)[shapes.task] * shapes.wall_raw
    wall = np.maximum(np.rint(wall), lat["bw_eff"][owner] + 1)
    per_job = cputime_per_job(
        wall, lat["bw_eff"][owner], shapes.hs06, lat["eff"][owner], shapes.nevents, shapes.cores
    )
    c = 1.5 * group_percentile(shapes.task, per_job, 95, n * replicates)
    r = (np.log(c) - lat["log_cpu"][idx] - np.log(lat["eff"][idx])).reshape(replicates, n)
    return np.nanmean(r, axis=0), np.nanstd(r, axis=0, ddof=1)


def memory_per_core(
    shapes: JobShapes, draw: TaskDraw, rng: np.random.Generator, n_groups: int,
    within: WithinTaskSettings,
) -> np.ndarray:  # fmt: skip
    """maxPSS in kB per unit, scaled so the task's P75 x 1.10 equals its latent memory.

    Memory grows with the events a job holds and jumps on outlier jobs; the scaling keeps
    the task's value at its latent whatever the within-task shape.
    """
    lat, cols = draw.lat, draw.cols
    t = shapes.task
    base = cols["baseramcount"][t]
    w = np.exp(lat["mem_within"][t] * rng.standard_normal(len(t)))
    w *= (shapes.nevents / lat["nev_mean"][t]) ** within.memory_events_exponent
    w *= np.where(shapes.outlier, rng.uniform(*within.outlier_memory_factor, len(t)), 1.0)
    physical = (lat["per_worker_mb"][t] * shapes.cores + lat["shared_mb"][t]) * w
    floor = 0.1 * (lat["per_worker_mb"][t] + lat["shared_mb"][t] / shapes.cores)
    per_core = np.maximum((physical - base) / shapes.cores, floor)
    p75 = group_percentile(t, per_core, 75, n_groups)
    k = lat["memory_target"] / 1.1 / p75
    per_core = per_core * k[t]
    return np.ceil((per_core * shapes.cores + base) * 1024.0)


def io_bytes(
    shapes: JobShapes, wall: np.ndarray, draw: TaskDraw, rng: np.random.Generator, n_groups: int,
    within: WithinTaskSettings,
) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """(inputfilebytes, outputfilebytes) per unit, scaled so the task's max io is its latent."""
    lat = draw.lat
    t = shapes.task
    kb_event = np.exp(lat["log_kb"][t])
    share = lat["input_share"][t]
    size = within.file_size_sigma
    kb_in = kb_event * share * shapes.nevents * np.exp(size * rng.standard_normal(len(t)))
    kb_out = kb_event * (1 - share) * shapes.nevents * np.exp(size * rng.standard_normal(len(t)))
    rate = (kb_in + kb_out) / wall / shapes.cores
    top = group_percentile(t, rate, 100, n_groups)
    k = (lat["io_target"] / top)[t]
    return np.rint(kb_in * k * 1024.0), np.rint(kb_out * k * 1024.0)


def reference_targets(
    group: np.ndarray,
    n_groups: int,
    *,
    finished: np.ndarray,
    maxpss_kb: np.ndarray,
    cores: np.ndarray,
    baseramcount_mb: np.ndarray,
    wall: np.ndarray,
    basewalltime: np.ndarray,
    hs06: np.ndarray,
    eff: np.ndarray,
    nevents: np.ndarray,
    inputfilebytes: np.ndarray,
    outputfilebytes: np.ndarray,
    min_jobs: int = MIN_JOBS,
) -> dict[str, np.ndarray]:
    """DESIGN.md §2 as the generator assumes it (finished jobs only, numpy 'linear' percentiles).

    The lead's ``targets.estimators`` is the authority; this copy exists to scale jobs and to
    fill the scout-derived ``jedi_tasks`` columns, and a test checks the two agree.
    """
    mem = np.ceil((maxpss_kb - baseramcount_mb * 1024.0) / cores)
    cpu = cputime_per_job(wall, basewalltime, hs06, eff, nevents, cores)
    io = (inputfilebytes / 1024.0 + outputfilebytes / 1024.0) / wall / cores
    out = {
        "memory": 1.1 * group_percentile(group, mem, 75, n_groups, finished) / 1024.0,
        "cputime": 1.5 * group_percentile(group, cpu, 95, n_groups, finished),
        "io": group_percentile(group, io, 100, n_groups, finished),
        "walltime": group_percentile(group, wall, 95, n_groups, finished),
    }
    n_finished = np.bincount(group[finished], minlength=n_groups)
    for values in out.values():
        values[n_finished < min_jobs] = np.nan
    return out
