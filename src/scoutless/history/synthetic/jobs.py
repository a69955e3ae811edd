"""Per-job usage drawn around each task's latent needs, vectorised over all jobs of a block.

Within a task, jobs differ by site CPU power, core count (mixed inside one task as in real
data), events, and job-to-job noise. Each task's jobs are then scaled once so that PanDA's
own reduction (DESIGN.md §2, :func:`reference_targets`) returns exactly the task's latent
memory, walltime and io; cputime follows from the same jobs and is calibrated by
re-simulating job shapes (:func:`cputime_offsets`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scoutless.history.synthetic.latent import TaskDraw

MP_EFFICIENCY = {1: 1.0, 2: 0.97, 4: 0.94, 8: 0.9, 16: 0.8}
OFF_CORES = {  # task cores -> core counts some jobs actually got, with weights
    1: ((8, 4), (0.7, 0.3)),
    4: ((8, 1, 2), (0.5, 0.3, 0.2)),
    8: ((4, 1, 16), (0.5, 0.3, 0.2)),
    16: ((8, 4, 1), (0.5, 0.3, 0.2)),
}
N_SCOUTS = 10
MIN_JOBS = 3
LONG_JOB_S = 6 * 3600.0


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


def job_shapes(
    rng: np.random.Generator,
    draw: TaskDraw,
    task_index: np.ndarray,
    n_units: np.ndarray,
    core_power: np.ndarray,
    requested_site: np.ndarray,
) -> JobShapes:
    """Cores, site, events and raw wall time of every unit of the given tasks."""
    lat, cols = draw.lat, draw.cols
    total = int(n_units.sum())
    task = np.repeat(task_index, n_units)
    starts = np.repeat(np.cumsum(n_units) - n_units, n_units)
    position = np.arange(total) - starts
    t_cores = cols["corecount"][task]

    # mixed core counts: some tasks' jobs land on slots of other sizes
    n_tasks = len(task_index)
    mixed = rng.random(n_tasks) < lat["mix_p"][task_index]
    off_share = rng.uniform(0.05, 0.5, n_tasks)
    is_off = mixed[np.repeat(np.arange(n_tasks), n_units)] & (
        rng.random(total) < np.repeat(off_share, n_units)
    )
    cores = t_cores.copy()
    for c, (choices, p) in OFF_CORES.items():
        sel = np.flatnonzero(is_off & (t_cores == c))
        if sel.size:
            cores[sel] = np.asarray(choices)[rng.choice(len(p), size=sel.size, p=p)]

    # brokerage: each task runs on a handful of sites (or the one it requested)
    n_sites = len(core_power)
    window = 1 + rng.poisson(4, n_tasks)
    first = rng.integers(0, n_sites, n_tasks)
    req = requested_site[task_index]
    first = np.where(req >= 0, req, first)
    window = np.where(req >= 0, 1, window)
    site = (
        np.repeat(first, n_units)
        + (rng.random(total) * np.repeat(window, n_units)).astype(np.int64)
    ) % n_sites
    power = core_power[site]
    hs06 = np.rint(power * cores)

    # events: nEventsPerJob with a shorter last job, or whole files of varying size
    nev_mean = lat["nev_mean"][task]
    is_last = position == np.repeat(n_units, n_units) - 1
    by_events = lat["by_events"][task]
    remainder = cols["input_nevents"][task] - position * nev_mean
    nevents = np.where(
        by_events,
        np.where(is_last, np.minimum(remainder, nev_mean), nev_mean),
        nev_mean * rng.uniform(0.7, 1.3, total),
    )
    nevents = np.maximum(np.rint(nevents), 10 * cores)

    mp = np.vectorize(MP_EFFICIENCY.get)(cores)
    noise = np.exp(lat["cpu_within"][task] * rng.standard_normal(total))
    wall_raw = np.exp(lat["log_cpu"][task]) * nevents * noise / (power * cores * mp)
    return JobShapes(task, position, cores, site, hs06, nevents, wall_raw)


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
    core_power: np.ndarray,
    requested_site: np.ndarray,
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
    shapes = job_shapes(rng, draw, idx, n_units, core_power, requested_site)
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
    shapes: JobShapes, draw: TaskDraw, rng: np.random.Generator, n_groups: int
) -> np.ndarray:
    """maxPSS in kB per unit, scaled so the task's P75 x 1.10 equals its latent memory."""
    lat, cols = draw.lat, draw.cols
    t = shapes.task
    base = cols["baseramcount"][t]
    w = np.exp(lat["mem_within"][t] * rng.standard_normal(len(t)))
    physical = (lat["per_worker_mb"][t] * shapes.cores + lat["shared_mb"][t]) * w
    floor = 0.1 * (lat["per_worker_mb"][t] + lat["shared_mb"][t] / shapes.cores)
    per_core = np.maximum((physical - base) / shapes.cores, floor)
    p75 = group_percentile(t, per_core, 75, n_groups)
    k = lat["memory_target"] / 1.1 / p75
    per_core = per_core * k[t]
    return np.ceil((per_core * shapes.cores + base) * 1024.0)


def io_bytes(
    shapes: JobShapes, wall: np.ndarray, draw: TaskDraw, rng: np.random.Generator, n_groups: int
) -> tuple[np.ndarray, np.ndarray]:
    """(inputfilebytes, outputfilebytes) per unit, scaled so the task's max io is its latent."""
    lat = draw.lat
    t = shapes.task
    kb_event = np.exp(lat["log_kb"][t])
    share = lat["input_share"][t]
    kb_in = kb_event * share * shapes.nevents * np.exp(0.1 * rng.standard_normal(len(t)))
    kb_out = kb_event * (1 - share) * shapes.nevents * np.exp(0.1 * rng.standard_normal(len(t)))
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
