"""The latent needs behind what a submitter writes: each task's log memory, CPU and bytes
per event are Gaussian given its features (:func:`memory_mean`, :func:`cpu_mean`, one draw
each in :func:`latents`), and :func:`target_latents` turns them into each target's
log-normal (mu, sigma) and realised value (the module docstring of ``latent.py`` gives the
formulas).
"""

from __future__ import annotations

import numpy as np

from scoutless.history.synthetic.calibration import (
    CORE_POWER_REF,
    DEFAULT_BASE_WALLTIME,
    DEFAULT_CPU_EFFICIENCY,
    WALL_P95_FACTOR,
    Draft,
    draw_index,
)


def memory_mean(
    d: Draft, corecount: np.ndarray, effects: tuple[np.ndarray, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """Memory per core at the task's core count: workers + shared part - declared base.
    ``effects``: transformation, release, pile-up, user (log), added in this order."""
    shared = d.per_fam("shared_mb")
    base_choice = np.array([0, 500, 1000, 1500])[draw_index(d.rng, d.n, [0.4, 0.2, 0.25, 0.15])]
    baseramcount = np.where(
        (corecount > 1) & ~d.is_user, np.minimum(base_choice, 0.6 * shared), 0
    ).astype(float)
    per_core = d.per_fam("per_worker_mb") + (shared - baseramcount) / corecount
    mu_mem = (
        _added(np.log(1.1 * per_core), effects)
        + 0.1 * np.log1p(np.maximum(corecount - 8, 0))  # 16-core jobs: extra buffers
    )  # fmt: skip
    return baseramcount, mu_mem


def cpu_mean(
    d: Draft, corecount: np.ndarray, arch: np.ndarray, effects: tuple[np.ndarray, ...]
) -> np.ndarray:
    """CPU: family x release x pile-up x transformation x user, MP inefficiency."""
    return (
        _added(np.log(d.per_fam("cpu")), effects)
        + np.where(corecount > 1, np.log(1.08), 0.0)
        + np.where(np.char.startswith(arch.astype(str), "x86_64-el9"), np.log(0.93), 0.0)
    )  # fmt: skip


def _added(base: np.ndarray, effects: tuple[np.ndarray, ...]) -> np.ndarray:
    """``base + e1 + e2 + ...`` summed left to right (the order fixes the rounding)."""
    for effect in effects:
        base = base + effect
    return base


def latents(
    d: Draft, mu_mem: np.ndarray, mu_cpu: np.ndarray, mu_kb: np.ndarray
) -> dict[str, np.ndarray]:
    """The latents themselves: one Gaussian draw around each mean."""
    s_mem, s_cpu, s_kb = d.per_fam("mem_sigma"), d.per_fam("cpu_sigma"), d.per_fam("kb_sigma")
    return {
        "mu_mem": mu_mem, "mu_cpu": mu_cpu, "mu_kb": mu_kb,
        "s_mem": s_mem, "s_cpu": s_cpu, "s_kb": s_kb,
        "log_mem": mu_mem + s_mem * d.rng.standard_normal(d.n),
        "log_cpu": mu_cpu + s_cpu * d.rng.standard_normal(d.n),
        "log_kb": mu_kb + s_kb * d.rng.standard_normal(d.n),
    }  # fmt: skip


def target_latents(
    d: Draft,
    cols: dict[str, np.ndarray],
    sizes: dict[str, np.ndarray],
    n_units: np.ndarray,
    latent: dict[str, np.ndarray],
    corecount: np.ndarray,
) -> dict[str, np.ndarray]:
    """The latents the jobs are drawn around, and each target's log-normal (mu, sigma)."""
    mu_mem, mu_cpu, mu_kb = latent["mu_mem"], latent["mu_cpu"], latent["mu_kb"]
    s_cpu, s_kb, log_cpu, log_kb = latent["s_cpu"], latent["s_kb"], latent["log_cpu"], latent["log_kb"]  # fmt: skip
    nev_mean, basewalltime = sizes["nev_mean"], cols["basewalltime"]
    io_max_factor = 1.3 * (1.0 + 0.08 * np.log(n_units))
    wall_shift = np.log(nev_mean * WALL_P95_FACTOR / (CORE_POWER_REF * corecount))
    bw_eff = np.where(np.isnan(basewalltime), DEFAULT_BASE_WALLTIME, basewalltime)
    # io = bytes per job / typical wall; log(bw + cpu part) linearised at the feature mean
    # keeps log io Gaussian given the features while bytes and wall stay consistent
    typical_cpu_s = np.exp(mu_cpu + wall_shift) / WALL_P95_FACTOR
    weight = typical_cpu_s / (bw_eff + typical_cpu_s)
    io_mu = mu_kb + np.log(nev_mean * io_max_factor / corecount) - np.log(bw_eff + typical_cpu_s)
    log_io = io_mu + (log_kb - mu_kb) - weight * (log_cpu - mu_cpu)
    cpueff = cols["cpuefficiency"]
    eff = np.where(np.isnan(cpueff), DEFAULT_CPU_EFFICIENCY, cpueff) / 100.0
    return {
        "n_units": n_units, "nev_mean": nev_mean,
        "by_events": sizes["by_events"], "events_per_file": sizes["events_per_file"],
        "mix_p": np.where(corecount > 1, d.per_fam("mix_multi"), d.per_fam("mix_single")),
        "fail_rate": d.per_fam("fail_rate"),
        "mem_within": d.per_fam("mem_within"),
        "cpu_within": d.per_fam("cpu_within"),
        "input_share": d.per_fam("input_share"),
        "per_worker_mb": d.per_fam("per_worker_mb"),
        "shared_mb": d.per_fam("shared_mb"),
        "bw_eff": bw_eff,
        "eff": eff,
        # targets: log-normal (mu, sigma) given the features, and the realised values
        "memory_mu": mu_mem,
        "memory_sigma": latent["s_mem"],
        "memory_target": np.exp(latent["log_mem"]),
        "walltime_mu": mu_cpu + wall_shift,
        "walltime_sigma": s_cpu,
        "walltime_target": bw_eff + np.exp(log_cpu + wall_shift),
        "io_mu": io_mu,
        "io_sigma": np.sqrt(s_kb**2 + (weight * s_cpu) ** 2),
        "io_target": np.exp(log_io),
        "log_cpu": log_cpu,
        "log_kb": log_kb,
        "cputime_mu_base": mu_cpu + np.log(eff),
        "cputime_sigma_base": s_cpu,
    }  # fmt: skip
