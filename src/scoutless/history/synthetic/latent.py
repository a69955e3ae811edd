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

This module draws what a submitter writes and wires the sections (:func:`draw_tasks`); the
needs behind it are :mod:`.needs`', the families' numbers :mod:`.calibration`'s.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scoutless.history.synthetic.calibration import (
    CORE_POWER_REF,
    DRIFT_CPU_FACTOR,
    DRIFT_MEMORY_FACTOR,
    MODELS,
    MULTICORE_CHOICES,
    MULTICORE_P,
    VERSION_EFFECT,
    WALL_P95_FACTOR,
    Draft,
    World,
    draw_index,
)
from scoutless.history.synthetic.needs import cpu_mean, latents, memory_mean, target_latents
from scoutless.history.synthetic.vocabulary import FAMILIES, Vocabulary


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
        which = draw_index(rng, rows.size, weights)
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
    a ``few_jobs_share`` of them have only 1-2 jobs. The sections below draw from ``rng``
    in this order; changing it changes every generated history."""
    d = Draft.drawn(rng, vocab, world, len(tfrac))
    drifted = drift_mask & d.is_family(*vocab.drift_families)
    drifted &= rng.random(d.n) < 0.85
    corecount = _cores(d)
    transpath, trans_mem, trans_cpu = _transformations(d, corecount)
    transhome, transuses, arch, rel_mem, rel_cpu = _release_columns(
        rng, vocab, world, FAMILIES, d.fam, tfrac, drifted
    )
    campaign, project, pileup, pile_mem, pile_cpu = _campaigns(d)
    processingtype, val = _processing_types(d, campaign, project)
    username, user_mem, user_cpu, user_kb = _users(d)
    baseramcount, mu_mem = memory_mean(d, corecount, (trans_mem, rel_mem, pile_mem, user_mem))
    mu_cpu = cpu_mean(d, corecount, arch, (trans_cpu, rel_cpu, pile_cpu, user_cpu))
    mu_kb = np.log(d.per_fam("kb_per_event")) + user_kb + 0.5 * pile_mem
    sizes = _job_sizes(d, corecount, mu_cpu)
    mu_mem += np.where(d.is_family("merge"), 0.12 * np.log10(sizes["nev_mean"] / 1000.0), 0.0)
    inputs = _task_inputs(d, sizes, few_jobs_share)
    latent = latents(d, mu_mem, mu_cpu, mu_kb)
    declared = _declared(d, mu_mem, corecount, val)
    cols = {
        "prodsourcelabel": np.where(d.is_user, "user", "managed").astype(object),
        "tasktype": np.where(d.is_user, "anal", "prod").astype(object),
        "processingtype": processingtype,
        "transpath": transpath,
        "transuses": transuses,
        "transhome": transhome,
        "architecture": arch,
        "campaign": campaign,
        "workqueue_id": declared["workqueue_id"],
        "gshare": declared["gshare"],
        "username": username,
        "site": declared["site"],
        "project": project,
        "ramunit": declared["ramunit"],
        "corecount": corecount.astype(np.int64),
        "baseramcount": baseramcount,
        "basewalltime": declared["basewalltime"],
        "cpuefficiency": declared["cpuefficiency"],
        "requested_ramcount": declared["requested_ramcount"],
        "nevents_per_job": sizes["nevents_per_job"],
        "nfiles_per_job": sizes["nfiles_per_job"],
        "n_input_datasets": inputs["n_input_datasets"],
        "input_nfiles": inputs["input_nfiles"].astype(float),
        "input_nevents": inputs["input_nevents"].astype(float),
    }
    lat = target_latents(d, cols, sizes, inputs["n_units"], latent, corecount)
    lat = {"family": d.fam, "is_user": d.is_user, "drifted": drifted, "pileup": pileup, **lat}
    return TaskDraw(cols=cols, lat=lat)


def _cores(d: Draft) -> np.ndarray:
    """Cores: multi-core share per family; AthenaMP jobs mostly 8 cores."""
    multi = d.rng.random(d.n) < d.per_fam("multicore_share")
    corecount = np.where(multi, MULTICORE_CHOICES[draw_index(d.rng, d.n, MULTICORE_P)], 1)
    return np.where(multi & d.is_user, np.where(d.rng.random(d.n) < 0.5, 4, 8), corecount)


def _transformations(d: Draft, corecount: np.ndarray) -> tuple[np.ndarray, ...]:
    """Transformation per task and its (log) memory and CPU effects."""
    fam = d.fam
    transpath = np.empty(d.n, dtype=object)
    trans_mem = np.zeros(d.n)
    trans_cpu = np.zeros(d.n)
    for f_idx, name in enumerate(FAMILIES):
        rows = np.flatnonzero(fam == f_idx)
        opts = d.vocab.transformations[name]
        which = draw_index(d.rng, rows.size, [w for _, w in opts])
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
    old_deriv = d.is_family("deriv") & (transpath == "Reco_tf.py")
    trans_cpu[old_deriv] += np.log(1.3)
    mp_evgen = d.is_family("evgen") & (corecount > 1)
    trans_cpu[mp_evgen] += np.log(4.0)  # multi-core evgen: MadGraph-heavy samples
    return transpath, trans_mem, trans_cpu


def _campaigns(d: Draft) -> tuple[np.ndarray, ...]:
    """Campaign and pile-up (MC vs data), project = first token of the task name."""
    vocab, fam = d.vocab, d.fam
    is_data = d.is_family("reprocessing") | (d.is_family("deriv") & (d.rng.random(d.n) < 0.3))
    mc_idx = draw_index(d.rng, d.n, [c[3] for c in vocab.mc_campaigns])
    data_idx = draw_index(d.rng, d.n, [c[3] for c in vocab.data_campaigns])

    def pick(i: int, dtype: type | None = object) -> np.ndarray:
        data = np.array([c[i] for c in vocab.data_campaigns], dtype=dtype)[data_idx]
        return np.where(is_data, data, np.array([c[i] for c in vocab.mc_campaigns], dtype=dtype)[mc_idx])  # fmt: skip

    campaign, project, pileup = pick(0), pick(1), pick(2, None)
    pile_like = d.is_family("pile", "reprocessing")
    reco = fam == FAMILIES.index("reco")
    pile_mem = np.where(pile_like | reco, 0.3 * ((pileup / 40.0) ** 1.5 - 1.0), 0.0)
    pile_cpu = np.where(pile_like, 1.3, np.where(reco, 0.6, 0.0)) * np.log(pileup / 35.0)
    data_deriv = is_data & d.is_family("deriv")
    pile_mem[data_deriv] += np.log(0.9)
    pile_cpu[data_deriv] += np.log(0.7)
    return campaign, project, pileup, pile_mem, pile_cpu


def _processing_types(
    d: Draft, campaign: np.ndarray, project: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Processing type: validation / urgent tasks hide their family behind the label.
    Sets the campaign and project of validation and analysis tasks in place."""
    vocab, is_user = d.vocab, d.is_user
    processingtype = np.array(FAMILIES, dtype=object)[d.fam]
    special = d.rng.random(d.n)
    val = ~is_user & (special < vocab.special_processing["validation"])
    urg = ~is_user & ~val & (special < sum(vocab.special_processing.values()))
    processingtype[val] = "validation"
    processingtype[urg] = "urgent"
    project[val] = vocab.validation_project
    client = np.array(["1.4.47", "1.4.81", "1.5.10"], dtype=object)[draw_index(d.rng, d.n, [0.2, 0.5, 0.3])]  # fmt: skip
    mode = np.where(d.fam == FAMILIES.index("user_athena"), "athena", "run")
    processingtype[is_user] = "panda-client-" + client[is_user] + "-jedi-" + mode[is_user]
    campaign[is_user] = None
    project[is_user] = "user"
    return processingtype, val


def _users(d: Draft) -> tuple[np.ndarray, ...]:
    """Users: production requesters, Zipf-active analysis users with their own habits."""
    vocab, world, is_user = d.vocab, d.world, d.is_user
    prod_user = np.array(vocab.production_users, dtype=object)[
        draw_index(d.rng, d.n, vocab.production_user_weights)
    ]
    ana_idx = d.rng.choice(len(world.user_p), size=d.n, p=world.user_p)
    username = np.where(is_user, np.array(vocab.analysis_users, dtype=object)[ana_idx], prod_user)
    user_mem = np.where(is_user, world.user_mem[ana_idx], 0.0)
    user_cpu = np.where(is_user, world.user_cpu[ana_idx], 0.0)
    user_kb = np.where(is_user, world.user_kb[ana_idx], 0.0)
    return username, user_mem, user_cpu, user_kb


def _job_sizes(d: Draft, corecount: np.ndarray, mu_cpu: np.ndarray) -> dict[str, np.ndarray]:
    """Submitter's choices: events (or files) per job aimed at a job length."""
    rng, n = d.rng, d.n
    hours = d.per_fam("job_hours") * np.exp(d.per_fam("job_hours_sigma") * rng.standard_normal(n))
    want_events = hours * 3600 * CORE_POWER_REF * corecount / np.exp(mu_cpu) / WALL_P95_FACTOR
    model = [MODELS[f] for f in FAMILIES]
    by_events = np.array([bool(m.nevents_choices) for m in model])[d.fam]
    nevents_per_job = np.full(n, np.nan)
    nfiles_per_job = np.full(n, np.nan)
    events_per_file = np.exp(
        np.log(np.maximum(d.per_fam("events_per_file"), 1)) + rng.normal(0, 0.8, n)
    )
    events_per_file = np.clip(np.rint(events_per_file), 200, 500_000)
    for f_idx, m in enumerate(model):
        rows = np.flatnonzero(d.fam == f_idx)
        if m.nevents_choices:
            nevents_per_job[rows] = _snap(want_events[rows], m.nevents_choices)
        else:
            nfiles_per_job[rows] = _snap(
                np.maximum(want_events[rows] / events_per_file[rows], 0.5), m.files_choices
            )
    nev_mean = np.where(by_events, nevents_per_job, nfiles_per_job * events_per_file)
    return {
        "by_events": by_events,
        "nevents_per_job": nevents_per_job,
        "nfiles_per_job": nfiles_per_job,
        "events_per_file": events_per_file,
        "nev_mean": nev_mean,
    }


def _task_inputs(
    d: Draft, sizes: dict[str, np.ndarray], few_jobs_share: float
) -> dict[str, np.ndarray]:
    """Size of the task: heavy-tailed number of jobs, input datasets follow from it."""
    rng, n, is_user = d.rng, d.n, d.is_user
    by_events, events_per_file = sizes["by_events"], sizes["events_per_file"]
    n_units = np.exp(np.where(is_user, np.log(10), np.log(12)) + rng.normal(0, 1.25, n))
    n_units = np.clip(np.rint(n_units), 3, 3000).astype(np.int64)
    few = rng.random(n) < few_jobs_share  # the long tail of tiny tasks (too few for a target)
    n_units = np.where(few, rng.integers(1, 3, n), n_units)
    last_fill = rng.uniform(0.05, 1.0, n)
    input_nevents = np.where(
        by_events,
        np.rint((n_units - 1 + last_fill) * np.nan_to_num(sizes["nevents_per_job"])),
        0,
    )
    input_nfiles = np.where(
        by_events,
        np.maximum(np.ceil(input_nevents / events_per_file), 1),
        np.ceil((n_units - 1 + last_fill) * np.nan_to_num(sizes["nfiles_per_job"])),
    )
    input_nevents = np.where(by_events, input_nevents, input_nfiles * events_per_file)
    input_nfiles = np.where(d.is_family("evgen"), n_units, input_nfiles)
    n_input_datasets = np.where(is_user, 1 + rng.poisson(0.4, n), 1).astype(float)
    return {
        "n_units": n_units,
        "input_nevents": input_nevents,
        "input_nfiles": input_nfiles,
        "n_input_datasets": n_input_datasets,
    }


def _declared(
    d: Draft, mu_mem: np.ndarray, corecount: np.ndarray, val: np.ndarray
) -> dict[str, np.ndarray]:
    """Declared parameters (production sets them; analysis leaves most unset)."""
    rng, n, is_user, vocab = d.rng, d.n, d.is_user, d.vocab
    cpuefficiency = np.where(
        is_user, np.nan, np.array([90, 80, 70, 100])[draw_index(rng, n, [0.6, 0.2, 0.1, 0.1])]
    ).astype(float)
    basewalltime = np.where(
        is_user, np.nan, np.array([0, 300, 600])[draw_index(rng, n, [0.3, 0.2, 0.5])]
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
    wq = np.array([vocab.workqueues[f] for f in FAMILIES])[d.fam]
    workqueue_id = np.where(corecount > 1, wq[:, 1], wq[:, 0])
    gshare = np.array([vocab.gshares[f] for f in FAMILIES], dtype=object)[d.fam]
    gshare[val] = "Validation"
    ramunit = np.where(is_user & (rng.random(n) < 0.2), "MBPerCoreFixed", "MBPerCore")
    return {
        "cpuefficiency": cpuefficiency,
        "basewalltime": basewalltime,
        "requested_ramcount": requested,
        "site": site,
        "workqueue_id": workqueue_id.astype(np.int64),
        "gshare": gshare,
        "ramunit": ramunit.astype(object),
    }
