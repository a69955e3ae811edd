"""Task-level draws: what a submitter writes (features) and the latent needs behind it.

Every target is defined from one latent per task whose log, given the submission-time
features, is Gaussian with a known mean and spread:

- memory   M = exp(N(mu_M, s_M))            MB/core, the task's P75 x 1.10 exactly
- walltime W = bw + exp(L + log(nev G / (cp_ref c)))   s, the task's P95 wall exactly
- io       I = exp(logB - L + log(cp_ref K))           kB/s/core, the max over jobs exactly
- cputime  C = exp(L + log(eff) + r)        HS06s/event; r (job-level) is calibrated by
  re-simulating the task's job shapes (see :mod:`.jobs`)

with L = log(wall-normalised HS06 seconds per event per core) ~ N(mu_L, s_L) and
logB = log(kB read + written per event) ~ N(mu_B, s_B). The means depend on the features
through interactions (transformation x release x cores x pile-up, user habits …), never a
lookup table; the jobs are then drawn around the latents (:mod:`.jobs`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scoutless.history.synthetic.vocabulary import FAMILIES, Vocabulary

CORE_POWER_REF = 11.0  # HS06 per core of a typical grid slot
WALL_P95_FACTOR = 1.5  # G: P95 over a task's jobs relative to a typical job
DEFAULT_CPU_EFFICIENCY = 90.0
DEFAULT_BASE_WALLTIME = 600.0


@dataclass(frozen=True)
class FamilyModel:
    """Shape of one task family's needs (medians, task-to-task and within-task spreads)."""

    multicore_share: float
    per_worker_mb: float  # memory of one worker process
    shared_mb: float  # memory shared by the workers of an AthenaMP job
    mem_sigma: float  # task-to-task (log)
    mem_within: float  # job-to-job inside a task (log)
    cpu: float  # wall HS06 s per event per core, median
    cpu_sigma: float
    cpu_within: float
    kb_per_event: float  # read + written
    kb_sigma: float
    input_share: float  # of the bytes per event, the part read
    job_hours: float  # what the submitter aims a job to last
    job_hours_sigma: float
    nevents_choices: tuple[int, ...]  # nEventsPerJob choices; () -> nFilesPerJob tasks
    files_choices: tuple[int, ...]
    events_per_file: float
    mix_multi: float  # P(job core counts vary inside a multi-core task)
    mix_single: float
    fail_rate: float


MODELS: dict[str, FamilyModel] = {
    "evgen": FamilyModel(0.12, 900, 300, 0.2, 0.05, 60, 0.6, 0.3, 60, 0.3, 0.0, 9, 0.9,
                         (200, 500, 1000, 2000, 5000, 10000), (), 0, 0.5, 0.3, 0.06),
    "simul": FamilyModel(0.8, 450, 1400, 0.13, 0.06, 500, 0.3, 0.2, 1100, 0.25, 0.05, 20, 0.45,
                         (50, 100, 200, 500, 1000, 2000), (), 0, 0.95, 0.5, 0.05),
    "pile": FamilyModel(0.85, 1400, 1800, 0.13, 0.08, 45, 0.3, 0.2, 2600, 0.25, 0.75, 5, 0.4,
                        (250, 500, 1000, 2000), (), 0, 0.95, 0.5, 0.07),
    "reco": FamilyModel(0.75, 1100, 1500, 0.14, 0.08, 25, 0.3, 0.2, 2200, 0.25, 0.7, 4, 0.4,
                        (250, 500, 1000, 2000, 5000), (), 0, 0.95, 0.5, 0.06),
    "reprocessing": FamilyModel(0.95, 1150, 1700, 0.12, 0.07, 35, 0.3, 0.2, 1500, 0.25, 0.7,
                                4, 0.35, (500, 1000, 2000, 5000), (), 0, 0.95, 0.5, 0.05),
    "deriv": FamilyModel(0.35, 2200, 900, 0.16, 0.10, 5.0, 0.35, 0.25, 450, 0.3, 0.93, 2.5,
                         0.5, (2000, 5000, 10000, 20000, 50000), (), 0, 0.8, 0.5, 0.04),
    "merge": FamilyModel(0.0, 650, 300, 0.22, 0.15, 0.4, 0.4, 0.3, 150, 0.5, 0.5, 0.4, 0.6,
                         (), (5, 10, 20, 50), 2000, 0.0, 0.1, 0.03),
    "eventindex": FamilyModel(0.0, 500, 200, 0.15, 0.10, 0.15, 0.4, 0.3, 100, 0.3, 0.99, 0.2,
                              0.5, (), (1, 2, 5), 5000, 0.0, 0.05, 0.03),
    "user_athena": FamilyModel(0.05, 1700, 300, 0.3, 0.15, 5.0, 0.5, 0.35, 60, 0.6, 0.85,
                               2.0, 1.1, (), (1, 2, 3, 5, 10, 20), 20000, 0.2, 0.04, 0.09),
    "user_gen": FamilyModel(0.03, 1000, 100, 0.4, 0.2, 2.0, 0.55, 0.4, 30, 0.7, 0.9, 1.5, 1.2,
                            (), (1, 2, 3, 5, 10, 20), 20000, 0.1, 0.03, 0.10),
}  # fmt: skip

#: Release series -> (memory, cpu) multipliers: AthenaMT and newer compilers save both.
VERSION_EFFECT: dict[str, tuple[float, float]] = {
    "19.2.5": (0.8, 1.3), "20.7": (1.1, 1.2), "20.7.5": (1.1, 1.2), "21.0": (1.0, 1.0),
    "21.2": (1.0, 1.0), "21.6": (1.0, 1.0), "22.0": (0.9, 0.85), "23.0": (0.75, 0.8),
    "24.0": (0.75, 0.8), "24.2": (0.9, 0.9), "": (1.0, 1.0),
}  # fmt: skip
DRIFT_MEMORY_FACTOR = 1.75
DRIFT_CPU_FACTOR = 1.5
MULTICORE_CHOICES = np.array([8, 4, 16])
MULTICORE_P = np.array([0.85, 0.05, 0.10])


@dataclass
class World:
    """Seed-wide hidden effects: per user and per release patch (fixed for a whole run)."""

    user_mem: np.ndarray
    user_cpu: np.ndarray
    user_kb: np.ndarray
    user_p: np.ndarray  # Zipf activity
    release_mem: np.ndarray  # [family, release, patch]
    release_cpu: np.ndarray
    site_speed: np.ndarray  # per site: wall multiplier its corePower does not show

    @classmethod
    def build(cls, vocab: Vocabulary, seed: int, site_speed_sigma: float = 0.0) -> World:
        rng = np.random.default_rng([seed, 7])
        n = len(vocab.analysis_users)
        p = 1.0 / np.arange(1, n + 1) ** vocab.zipf_exponent
        shape = (len(FAMILIES), 3, 400)
        return cls(
            user_mem=rng.normal(0, 0.35, n),
            user_cpu=rng.normal(0, 0.6, n),
            user_kb=rng.normal(0, 0.5, n),
            user_p=p / p.sum(),
            release_mem=rng.normal(0, 0.06, shape),
            release_cpu=rng.normal(0, 0.08, shape),
            site_speed=np.exp(rng.normal(0, site_speed_sigma, len(vocab.site_names))),
        )


def _pick(rng: np.random.Generator, n: int, p: np.ndarray | list[float]) -> np.ndarray:
    p = np.asarray(p, dtype=float)
    return rng.choice(len(p), size=n, p=p / p.sum())


def _snap(values: np.ndarray, choices: tuple[int, ...]) -> np.ndarray:
    """Nearest allowed choice in log scale (submitters pick round numbers)."""
    c = np.asarray(choices, dtype=float)
    idx = np.abs(np.log(values)[:, None] - np.log(c)[None, :]).argmin(axis=1)
    return c[idx]


@dataclass
class TaskDraw:
    """One block of tasks: visible columns (object/float arrays) and latents (floats)."""

    cols: dict[str, np.ndarray]
    lat: dict[str, np.ndarray]

    def __len__(self) -> int:
        return len(self.lat["family"])


def _release_columns(rng, vocab, world, fam_names, fam, tfrac, drifted):  # type: ignore[no-untyped-def]
    n = len(fam)
    transhome = np.empty(n, dtype=object)
    transuses = np.empty(n, dtype=object)
    arch = np.empty(n, dtype=object)
    mem_eff = np.zeros(n)
    cpu_eff = np.zeros(n)
    for f_idx, name in enumerate(fam_names):
        rows = np.flatnonzero(fam == f_idx)
        if rows.size == 0:
            continue
        rels = vocab.releases[name]
        weights = np.array([0.6, 0.25, 0.15][: len(rels)])
        which = _pick(rng, rows.size, weights)
        for r_idx, rel in enumerate(rels):
            sub = rows[which == r_idx]
            if sub.size == 0:
                continue
            span = rel.last - rel.first
            patch = rel.first + span * tfrac[sub] + rng.normal(0, 0.08 * span + 0.5, sub.size)
            patch = np.clip(np.rint(patch), rel.first, rel.last).astype(int)
            _fill_release(transhome, transuses, arch, sub, rel, patch)
            m, c = VERSION_EFFECT.get(rel.version, (1.0, 1.0))
            trend = (patch - rel.first) / max(span, 1) - 0.5
            mem_eff[sub] = np.log(m) + 0.08 * trend + world.release_mem[f_idx, r_idx, patch]
            cpu_eff[sub] = np.log(c) - 0.15 * trend + world.release_cpu[f_idx, r_idx, patch]
    if drifted.any():
        rel = vocab.drift_release
        sub = np.flatnonzero(drifted)
        patch = rng.integers(rel.first, rel.last + 1, sub.size)
        _fill_release(transhome, transuses, arch, sub, rel, patch)
        mem_eff[sub] = np.log(DRIFT_MEMORY_FACTOR)
        cpu_eff[sub] = np.log(DRIFT_CPU_FACTOR)
    return transhome, transuses, arch, mem_eff, cpu_eff


def _fill_release(transhome, transuses, arch, rows, rel, patch) -> None:  # type: ignore[no-untyped-def]
    if not rel.transhome:
        transhome[rows] = None
        transuses[rows] = None
    else:
        dotted = "." in rel.version[3:]  # 20.7.5 series carry a fourth number
        for i, p in zip(rows, patch, strict=True):
            version = f"{rel.version}.{p}"
            home_version = version if dotted or rel.transhome != "AthDerivation" else f"{version}.0"
            transhome[i] = f"{rel.transhome}-{home_version}"
            transuses[i] = f"Atlas-{version}"
    arch[rows] = rel.architecture


def draw_tasks(
    rng: np.random.Generator,
    vocab: Vocabulary,
    world: World,
    tfrac: np.ndarray,
    drift_mask: np.ndarray,
    few_jobs_share: float = 0.0,
) -> TaskDraw:
    """Features and latents of ``len(tfrac)`` tasks (``tfrac``: position in the period);
    a ``few_jobs_share`` of them have only 1-2 jobs."""
    n = len(tfrac)
    fam = _pick(rng, n, vocab.family_share)
    names = FAMILIES
    model = [MODELS[f] for f in names]

    def per_fam(attr: str) -> np.ndarray:
        return np.array([getattr(m, attr) for m in model], dtype=float)[fam]

    is_user = np.isin(fam, [names.index("user_athena"), names.index("user_gen")])
    drifted = drift_mask & np.isin(fam, [names.index(f) for f in vocab.drift_families])
    drifted &= rng.random(n) < 0.85

    # cores: multi-core share per family; AthenaMP jobs mostly 8 cores
    multi = rng.random(n) < per_fam("multicore_share")
    corecount = np.where(multi, MULTICORE_CHOICES[_pick(rng, n, MULTICORE_P)], 1)
    corecount = np.where(multi & is_user, np.where(rng.random(n) < 0.5, 4, 8), corecount)

    transpath = np.empty(n, dtype=object)
    trans_mem = np.zeros(n)
    trans_cpu = np.zeros(n)
    for f_idx, name in enumerate(names):
        rows = np.flatnonzero(fam == f_idx)
        opts = vocab.transformations[name]
        which = _pick(rng, rows.size, [w for _, w in opts])
        transpath[rows] = np.array([p for p, _ in opts], dtype=object)[which]
    for path, (m, c) in {
        "FastChain_tf.py": (1.3, 0.15), "AtlasG4_tf.py": (1.05, 1.15),
        "Generate_tf.py": (0.9, 1.2), "Reco_tf.py": (1.0, 1.0),
    }.items():  # fmt: skip
        sel = transpath == path
        trans_mem[sel] += np.log(m)
        trans_cpu[sel] += np.log(c)
    build = np.array([isinstance(p, str) and "buildJob" in p for p in transpath])
    trans_mem[build] += np.log(0.5)
    trans_cpu[build] += np.log(0.3)
    old_deriv = (fam == names.index("deriv")) & (transpath == "Reco_tf.py")
    trans_cpu[old_deriv] += np.log(1.3)
    mp_evgen = (fam == names.index("evgen")) & (corecount > 1)
    trans_cpu[mp_evgen] += np.log(4.0)  # multi-core evgen: MadGraph-heavy samples

    transhome, transuses, arch, rel_mem, rel_cpu = _release_columns(
        rng, vocab, world, names, fam, tfrac, drifted
    )

    # campaign and pile-up (MC vs data), project = first token of the task name
    is_data = (fam == names.index("reprocessing")) | (
        (fam == names.index("deriv")) & (rng.random(n) < 0.3)
    )
    mc_idx = _pick(rng, n, [c[3] for c in vocab.mc_campaigns])
    data_idx = _pick(rng, n, [c[3] for c in vocab.data_campaigns])
    campaign = np.where(
        is_data,
        np.array([c[0] for c in vocab.data_campaigns], dtype=object)[data_idx],
        np.array([c[0] for c in vocab.mc_campaigns], dtype=object)[mc_idx],
    )
    project = np.where(
        is_data,
        np.array([c[1] for c in vocab.data_campaigns], dtype=object)[data_idx],
        np.array([c[1] for c in vocab.mc_campaigns], dtype=object)[mc_idx],
    )
    pileup = np.where(
        is_data,
        np.array([c[2] for c in vocab.data_campaigns])[data_idx],
        np.array([c[2] for c in vocab.mc_campaigns])[mc_idx],
    )
    pile_like = np.isin(fam, [names.index(f) for f in ("pile", "reprocessing")])
    reco = fam == names.index("reco")
    pile_mem = np.where(pile_like | reco, 0.3 * ((pileup / 40.0) ** 1.5 - 1.0), 0.0)
    pile_cpu = np.where(pile_like, 1.3, np.where(reco, 0.6, 0.0)) * np.log(pileup / 35.0)
    data_deriv = is_data & (fam == names.index("deriv"))
    pile_mem[data_deriv] += np.log(0.9)
    pile_cpu[data_deriv] += np.log(0.7)

    # processing type: validation / urgent tasks hide their family behind the label
    processingtype = np.array(names, dtype=object)[fam]
    special = rng.random(n)
    val = ~is_user & (special < vocab.special_processing["validation"])
    urg = ~is_user & ~val & (special < sum(vocab.special_processing.values()))
    processingtype[val] = "validation"
    processingtype[urg] = "urgent"
    project[val] = vocab.validation_project
    client = np.array(["1.4.47", "1.4.81", "1.5.10"], dtype=object)[_pick(rng, n, [0.2, 0.5, 0.3])]
    mode = np.where(fam == names.index("user_athena"), "athena", "run")
    processingtype[is_user] = "panda-client-" + client[is_user] + "-jedi-" + mode[is_user]
    campaign[is_user] = None
    project[is_user] = "user"

    # users: production requesters, Zipf-active analysis users with their own habits
    prod_user = np.array(vocab.production_users, dtype=object)[
        _pick(rng, n, vocab.production_user_weights)
    ]
    ana_idx = rng.choice(len(world.user_p), size=n, p=world.user_p)
    username = np.where(is_user, np.array(vocab.analysis_users, dtype=object)[ana_idx], prod_user)
    user_mem = np.where(is_user, world.user_mem[ana_idx], 0.0)
    user_cpu = np.where(is_user, world.user_cpu[ana_idx], 0.0)
    user_kb = np.where(is_user, world.user_kb[ana_idx], 0.0)

    # memory per core at the task's core count: workers + shared part - declared base
    shared = per_fam("shared_mb")
    base_choice = np.array([0, 500, 1000, 1500])[_pick(rng, n, [0.4, 0.2, 0.25, 0.15])]
    baseramcount = np.where(
        (corecount > 1) & ~is_user, np.minimum(base_choice, 0.6 * shared), 0
    ).astype(float)
    per_core = per_fam("per_worker_mb") + (shared - baseramcount) / corecount
    mu_mem = (
        np.log(1.1 * per_core) + trans_mem + rel_mem + pile_mem + user_mem
        + 0.1 * np.log1p(np.maximum(corecount - 8, 0))  # 16-core jobs: extra buffers
    )  # fmt: skip

    # CPU: family x release x pile-up x transformation x user, MP inefficiency
    mu_cpu = (
        np.log(per_fam("cpu")) + trans_cpu + rel_cpu + pile_cpu + user_cpu
        + np.where(corecount > 1, np.log(1.08), 0.0)
        + np.where(np.char.startswith(arch.astype(str), "x86_64-el9"), np.log(0.93), 0.0)
    )  # fmt: skip
    mu_kb = np.log(per_fam("kb_per_event")) + user_kb + 0.5 * pile_mem

    # submitter's choices: events (or files) per job aimed at a job length
    hours = per_fam("job_hours") * np.exp(per_fam("job_hours_sigma") * rng.standard_normal(n))
    want_events = hours * 3600 * CORE_POWER_REF * corecount / np.exp(mu_cpu) / WALL_P95_FACTOR
    by_events = np.array([bool(m.nevents_choices) for m in model])[fam]
    nevents_per_job = np.full(n, np.nan)
    nfiles_per_job = np.full(n, np.nan)
    events_per_file = np.exp(
        np.log(np.maximum(per_fam("events_per_file"), 1)) + rng.normal(0, 0.8, n)
    )
    events_per_file = np.clip(np.rint(events_per_file), 200, 500_000)
    for f_idx, m in enumerate(model):
        rows = np.flatnonzero(fam == f_idx)
        if m.nevents_choices:
            nevents_per_job[rows] = _snap(want_events[rows], m.nevents_choices)
        else:
            nfiles_per_job[rows] = _snap(
                np.maximum(want_events[rows] / events_per_file[rows], 0.5), m.files_choices
            )
    merge_like = np.isin(fam, [names.index("merge")])
    nev_mean = np.where(by_events, nevents_per_job, nfiles_per_job * events_per_file)
    mu_mem += np.where(merge_like, 0.12 * np.log10(nev_mean / 1000.0), 0.0)

    # size of the task: heavy-tailed number of jobs, input datasets follow from it
    n_units = np.exp(np.where(is_user, np.log(10), np.log(12)) + rng.normal(0, 1.25, n))
    n_units = np.clip(np.rint(n_units), 3, 3000).astype(np.int64)
    few = rng.random(n) < few_jobs_share  # the long tail of tiny tasks (too few for a target)
    n_units = np.where(few, rng.integers(1, 3, n), n_units)
    last_fill = rng.uniform(0.05, 1.0, n)
    input_nevents = np.where(
        by_events,
        np.rint((n_units - 1 + last_fill) * np.nan_to_num(nevents_per_job)),
        0,
    )
    input_nfiles = np.where(
        by_events,
        np.maximum(np.ceil(input_nevents / events_per_file), 1),
        np.ceil((n_units - 1 + last_fill) * np.nan_to_num(nfiles_per_job)),
    )
    input_nevents = np.where(by_events, input_nevents, input_nfiles * events_per_file)
    evgen = fam == names.index("evgen")
    input_nfiles = np.where(evgen, n_units, input_nfiles)
    n_input_datasets = np.where(is_user, 1 + rng.poisson(0.4, n), 1).astype(float)

    # the latents themselves
    s_mem = per_fam("mem_sigma")
    s_cpu = per_fam("cpu_sigma")
    s_kb = per_fam("kb_sigma")
    log_mem = mu_mem + s_mem * rng.standard_normal(n)
    log_cpu = mu_cpu + s_cpu * rng.standard_normal(n)
    log_kb = mu_kb + s_kb * rng.standard_normal(n)
    io_max_factor = 1.3 * (1.0 + 0.08 * np.log(n_units))
    wall_shift = np.log(nev_mean * WALL_P95_FACTOR / (CORE_POWER_REF * corecount))

    # declared parameters (production sets them; analysis leaves most unset)
    cpuefficiency = np.where(
        is_user, np.nan, np.array([90, 80, 70, 100])[_pick(rng, n, [0.6, 0.2, 0.1, 0.1])]
    ).astype(float)
    basewalltime = np.where(
        is_user, np.nan, np.array([0, 300, 600])[_pick(rng, n, [0.3, 0.2, 0.5])]
    ).astype(float)
    request_noise = np.exp(rng.normal(0.15, 0.3, n))
    requested = np.ceil(np.exp(mu_mem) / 1.1 * request_noise / 100.0) * 100.0
    user_req = np.array([2000.0, 3000.0, 4000.0, 6000.0, 8000.0])
    user_requested = user_req[np.minimum(np.searchsorted(user_req, requested), len(user_req) - 1)]
    requested = np.where(is_user, np.where(rng.random(n) < 0.35, user_requested, np.nan), requested)
    site_req = rng.random(n) < vocab.requested_site_share
    site = np.where(
        site_req,
        np.array(vocab.site_names, dtype=object)[rng.integers(0, len(vocab.site_names), n)],
        None,
    )
    wq = np.array([vocab.workqueues[f] for f in names])[fam]
    workqueue_id = np.where(corecount > 1, wq[:, 1], wq[:, 0])
    gshare = np.array([vocab.gshares[f] for f in names], dtype=object)[fam]
    gshare[val] = "Validation"
    ramunit = np.where(is_user & (rng.random(n) < 0.2), "MBPerCoreFixed", "MBPerCore")

    cols = {
        "prodsourcelabel": np.where(is_user, "user", "managed").astype(object),
        "tasktype": np.where(is_user, "anal", "prod").astype(object),
        "processingtype": processingtype,
        "transpath": transpath,
        "transuses": transuses,
        "transhome": transhome,
        "architecture": arch,
        "campaign": campaign,
        "workqueue_id": workqueue_id.astype(np.int64),
        "gshare": gshare,
        "username": username,
        "site": site,
        "project": project,
        "ramunit": ramunit.astype(object),
        "corecount": corecount.astype(np.int64),
        "baseramcount": baseramcount,
        "basewalltime": basewalltime,
        "cpuefficiency": cpuefficiency,
        "requested_ramcount": requested,
        "nevents_per_job": nevents_per_job,
        "nfiles_per_job": nfiles_per_job,
        "n_input_datasets": n_input_datasets,
        "input_nfiles": input_nfiles.astype(float),
        "input_nevents": input_nevents.astype(float),
    }
    bw_eff = np.where(np.isnan(basewalltime), DEFAULT_BASE_WALLTIME, basewalltime)
    # io = bytes per job / typical wall; log(bw + cpu part) linearised at the feature mean
    # keeps log io Gaussian given the features while bytes and wall stay consistent
    typical_cpu_s = np.exp(mu_cpu + wall_shift) / WALL_P95_FACTOR
    weight = typical_cpu_s / (bw_eff + typical_cpu_s)
    io_mu = mu_kb + np.log(nev_mean * io_max_factor / corecount) - np.log(bw_eff + typical_cpu_s)
    log_io = io_mu + (log_kb - mu_kb) - weight * (log_cpu - mu_cpu)
    eff = np.where(np.isnan(cpuefficiency), DEFAULT_CPU_EFFICIENCY, cpuefficiency) / 100.0
    lat = {
        "family": fam,
        "is_user": is_user,
        "drifted": drifted,
        "pileup": pileup,
        "n_units": n_units,
        "nev_mean": nev_mean,
        "by_events": by_events,
        "events_per_file": events_per_file,
        "mix_p": np.where(corecount > 1, per_fam("mix_multi"), per_fam("mix_single")),
        "fail_rate": per_fam("fail_rate"),
        "mem_within": per_fam("mem_within"),
        "cpu_within": per_fam("cpu_within"),
        "input_share": per_fam("input_share"),
        "per_worker_mb": per_fam("per_worker_mb"),
        "shared_mb": shared,
        "bw_eff": bw_eff,
        "eff": eff,
        # targets: log-normal (mu, sigma) given the features, and the realised values
        "memory_mu": mu_mem,
        "memory_sigma": s_mem,
        "memory_target": np.exp(log_mem),
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
    }
    return TaskDraw(cols=cols, lat=lat)
