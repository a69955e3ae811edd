"""One block of tasks as PanDA tables: the unit of determinism (seeded by seed and block)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import numpy as np
import pandas as pd

from scoutless.config import WithinTaskSettings
from scoutless.history.schema import ALLOCATION_COLUMNS
from scoutless.history.synthetic.allocations import allocations
from scoutless.history.synthetic.attempts import (
    FAILURES,
    aborted_tasks,
    draw_failures,
    timeline,
)
from scoutless.history.synthetic.calibration import World
from scoutless.history.synthetic.jobs import (
    N_SCOUTS,
    Sites,
    cputime_offsets,
    io_bytes,
    job_shapes,
    memory_per_core,
    reference_targets,
    scale_walltime,
)
from scoutless.history.synthetic.latent import TaskDraw, draw_tasks
from scoutless.history.synthetic.priorities import job_priorities, task_priorities
from scoutless.history.synthetic.taskparams import task_names, taskparams
from scoutless.history.synthetic.vocabulary import FAMILIES, Vocabulary
from scoutless.targets.spec import TARGET_NAMES

BLOCK_TASKS = 1000  # tasks per seeded block: chunks are whole blocks, so any chunk size agrees
PANDAID_STRIDE = 10_000  # pandaid = jeditaskid * stride + rank of the job inside its task


@dataclass
class Frames:
    """DataFrames ready for the PanDA tables and the truth table."""

    tasks: pd.DataFrame
    taskparams: pd.DataFrame
    datasets: pd.DataFrame
    jobs: pd.DataFrame
    truth: pd.DataFrame

    @classmethod
    def concat(cls, parts: list[Frames]) -> Frames:
        return cls(
            *(
                pd.concat([getattr(p, name) for p in parts], ignore_index=True)
                for name in ("tasks", "taskparams", "datasets", "jobs", "truth")
            )
        )


@dataclass(frozen=True)
class BlockSpec:
    seed: int
    n_tasks: int
    first_task_id: int
    start: datetime
    days: float
    drift_start: datetime | None
    within: WithinTaskSettings


def _seconds(dt: datetime) -> np.datetime64:
    return np.datetime64(dt.replace(tzinfo=None), "us")


def build_block(spec: BlockSpec, block: int, vocab: Vocabulary, world: World) -> Frames:
    """Tasks ``block*BLOCK_TASKS ...`` of the run, with all their rows."""
    lo = block * BLOCK_TASKS
    n = min(BLOCK_TASKS, spec.n_tasks - lo)
    rng = np.random.default_rng([spec.seed, block])
    ordinal = lo + np.arange(n)
    tfrac = (ordinal + rng.random(n)) / spec.n_tasks
    created = _seconds(spec.start) + (tfrac * spec.days * 86400e6).astype("timedelta64[us]")
    created = created.astype("datetime64[s]")
    drift_mask = np.zeros(n, dtype=bool)
    if spec.drift_start is not None:
        drift_mask = created >= _seconds(spec.drift_start)
    draw = draw_tasks(rng, vocab, world, tfrac, drift_mask, spec.within.few_jobs_share)
    ids = spec.first_task_id + ordinal
    cols, lat = draw.cols, draw.lat

    site_index = {s: i for i, s in enumerate(vocab.site_names)}
    requested_site = np.array([site_index.get(s, -1) for s in cols["site"]], dtype=np.int64)
    sites = Sites(vocab.site_core_power, world.site_speed)
    within = spec.within
    shapes = job_shapes(rng, draw, np.arange(n), lat["n_units"], sites, requested_site, within)
    wall = scale_walltime(shapes, draw, n)
    maxpss = memory_per_core(shapes, draw, rng, n, within)
    in_bytes, out_bytes = io_bytes(shapes, wall, draw, rng, n, within)
    r_mean, r_sd = cputime_offsets(
        np.random.default_rng([spec.seed, block, 1]), draw, sites, requested_site, within
    )
    usage = {"wall": wall, "maxpss": maxpss, "inputfilebytes": in_bytes,
             "outputfilebytes": out_bytes}  # fmt: skip
    jobs = _job_rows(rng, draw, shapes, usage, sites, within, created, ids)
    jobs_frame = _jobs_frame(jobs, vocab)

    names, outputs = task_names(draw, vocab, rng, ids)
    tasks = _tasks_frame(draw, ids, names, created, jobs, n)
    limits = allocations(jobs, tasks, np.asarray(cols["requested_ramcount"], dtype=float))
    jobs_frame = jobs_frame.assign(**dict(zip(ALLOCATION_COLUMNS, limits, strict=True)))
    priority = task_priorities(np.random.default_rng([spec.seed, block, 2]), draw.lat["is_user"])
    tasks = tasks.assign(taskpriority=priority, currentpriority=priority)
    job_priority = job_priorities(priority, jobs["task"], jobs["is_scout"])
    jobs_frame = jobs_frame.assign(assignedpriority=job_priority, currentpriority=job_priority)
    params = pd.DataFrame({"jeditaskid": ids, "taskparams": taskparams(cols, names, outputs)})
    datasets = _datasets_frame(draw, ids, names, outputs, created)
    truth = _truth_frame(draw, ids, r_mean, r_sd)
    return Frames(tasks, params, datasets, jobs_frame, truth)


def _job_rows(rng, draw, shapes, usage, sites, within, created, ids):  # type: ignore[no-untyped-def]
    """Units + failed attempts, with times, ids, error codes and scout marks (one array per
    column); tasks whose scouts all failed at a broken site keep only those failures."""
    lat, cols = draw.lat, draw.cols
    t = shapes.task
    units = len(t)
    scout = shapes.position < N_SCOUTS
    wall, maxpss = usage["wall"], usage["maxpss"]
    fail = draw_failures(rng, draw, shapes, wall, maxpss, sites, scout, within)
    first, first_created, final, final_created = timeline(rng, draw, shapes, wall, fail, scout)
    aborted = aborted_tasks(rng, shapes, within)
    keep = ~aborted[t]  # an aborted task's scouts failed; nothing after them happens
    f = np.flatnonzero(fail.failed & (keep | scout))
    eff_actual = np.clip(0.85 * np.exp(0.15 * rng.standard_normal(units)), 0.2, 1.0)

    def cat(finishing: np.ndarray, failed: np.ndarray) -> np.ndarray:
        return np.concatenate([finishing[keep], failed[f]])

    zeros = np.zeros(units)
    rows = {
        "task": cat(t, t),
        "status_finished": cat(np.ones(units, bool), np.zeros(units, bool)),
        "attemptnr": cat(np.where(fail.failed, 2, 1), np.ones(units, np.int64)),
        "cores": cat(shapes.cores, shapes.cores),
        "site": cat(shapes.site, fail.site),
        "hs06": cat(shapes.hs06, fail.hs06),
        "wall": cat(wall, fail.wall),
        "start": cat(np.rint(final), np.rint(first)),
        "created_s": cat(np.rint(final_created), np.rint(first_created)),
        "maxpss": cat(maxpss, fail.maxpss),
        "nevents": cat(shapes.nevents, zeros),
        "ninputdatafiles": cat(_input_files(shapes, lat), _input_files(shapes, lat)),
        "inputfilebytes": cat(usage["inputfilebytes"], usage["inputfilebytes"]),
        "outputfilebytes": cat(usage["outputfilebytes"], zeros),
        "eff_actual": cat(eff_actual, eff_actual * 0.5),
        "failure": cat(np.full(units, -1), fail.kind),
        "is_scout": cat(scout, scout),
        "unit": cat(np.arange(units), np.arange(units)),
    }
    # rank by start inside each task -> pandaid (scouts and their retries come first)
    order = np.lexsort((rows["start"], rows["task"]))
    rows = {k: v[order] for k, v in rows.items()}
    counts = np.bincount(rows["task"], minlength=len(draw))
    rank = np.arange(len(order)) - np.repeat(np.cumsum(counts) - counts, counts)
    rows["jeditaskid"] = ids[rows["task"]]
    rows["pandaid"] = rows["jeditaskid"] * PANDAID_STRIDE + rank
    rows["parentid"] = _parent_ids(rows, units)
    rows["created"] = created[rows["task"]]
    rows["base_mb"] = cols["baseramcount"][rows["task"]]
    rows["bw"] = lat["bw_eff"][rows["task"]]
    rows["eff"] = lat["eff"][rows["task"]]
    rows["aborted"] = aborted
    return rows


def _parent_ids(rows: dict[str, np.ndarray], units: int) -> np.ndarray:
    """A retry's parentid is the pandaid of the attempt that failed (PanDA's retryJob);
    0 where there is none."""
    failed_pandaid = np.zeros(units, np.int64)
    is_failed = ~rows["status_finished"]
    failed_pandaid[rows["unit"][is_failed]] = rows["pandaid"][is_failed]
    return np.where(is_failed, 0, failed_pandaid[rows["unit"]])


def _parent_column(parentid: np.ndarray) -> pd.Series:
    ids = pd.Series(pd.array(parentid, "Int64"))
    return ids.where(ids > 0)


def _input_files(shapes, lat) -> np.ndarray:  # type: ignore[no-untyped-def]
    """Input files a unit reads (at least one): its events over the task's events per file."""
    per_file = lat["events_per_file"][shapes.task]
    return np.maximum(np.ceil(shapes.nevents / per_file - 1e-9), 1)


def _jobs_frame(rows: dict[str, np.ndarray], vocab: Vocabulary) -> pd.DataFrame:
    m = len(rows["task"])
    rng = np.random.default_rng(int(rows["pandaid"][0]) if m else 0)
    starttime = rows["created"] + rows["start"].astype("timedelta64[s]")
    endtime = starttime + rows["wall"].astype("timedelta64[s]")
    sites = np.array(vocab.site_names, dtype=object)
    host = np.char.add("wn", rng.integers(100, 999, m).astype(str)).astype(object)
    domain = np.array([f".{s.lower()}.grid" for s in vocab.site_names], dtype=object)
    cpu_s = rows["wall"] * rows["cores"] * rows["eff_actual"]
    finished = rows["status_finished"]
    creationtime = rows["created"] + rows["created_s"].astype("timedelta64[s]")
    return pd.DataFrame(
        {
            "pandaid": rows["pandaid"].astype(np.int64),
            "jeditaskid": rows["jeditaskid"].astype(np.int64),
            "jobstatus": np.where(finished, "finished", "failed").astype(object),
            "specialhandling": np.where(rows["is_scout"], "sj", None),
            "attemptnr": rows["attemptnr"].astype(np.int64),
            "parentid": _parent_column(rows["parentid"]),
            "creationtime": creationtime.astype("datetime64[us]"),
            "modificationtime": endtime.astype("datetime64[us]"),
            **_error_columns(rows["failure"]),
            "ninputdatafiles": rows["ninputdatafiles"].astype(np.int64),
            "corecount": rows["cores"].astype(np.int64),
            "actualcorecount": rows["cores"].astype(np.int64),
            "maxpss": rows["maxpss"].astype(np.int64),
            "maxrss": np.rint(rows["maxpss"] * rng.uniform(1.01, 1.3, m)).astype(np.int64),
            "cpuconsumptiontime": np.rint(cpu_s).astype(np.int64),
            "starttime": starttime.astype("datetime64[us]"),
            "endtime": endtime.astype("datetime64[us]"),
            "nevents": rows["nevents"].astype(np.int64),
            "inputfilebytes": rows["inputfilebytes"].astype(np.int64),
            "outputfilebytes": rows["outputfilebytes"].astype(np.int64),
            "totrbytes": np.rint(rows["inputfilebytes"] * rng.uniform(0.2, 1.05, m)).astype(
                np.int64
            ),
            "totwbytes": np.rint(rows["outputfilebytes"] * rng.uniform(1.0, 1.1, m)).astype(
                np.int64
            ),
            "hs06sec": np.rint(rows["wall"] * rows["hs06"]).astype(np.int64),
            "hs06": rows["hs06"].astype(np.int64),
            "computingsite": sites[rows["site"]],
            "modificationhost": host + domain[rows["site"]],
        }
    )


def _error_columns(failure: np.ndarray) -> dict[str, np.ndarray]:
    """PanDA's error columns from the failure kind per row (-1: the row finished)."""
    kinds = np.asarray((*FAILURES, (0, None, 0, None)), dtype=object)  # -1 -> last row
    chosen = kinds[failure]
    return {
        "transexitcode": np.where(failure < 0, "0", None).astype(object),
        "piloterrorcode": chosen[:, 0].astype(np.int64),
        "piloterrordiag": chosen[:, 1],
        "exeerrorcode": np.zeros(len(failure), np.int64),
        "jobdispatchererrorcode": chosen[:, 2].astype(np.int64),
        "jobdispatchererrordiag": chosen[:, 3],
    }


def _tasks_frame(draw, ids, names, created, jobs, n):  # type: ignore[no-untyped-def]
    cols = draw.cols
    t = jobs["task"]
    scouts = reference_targets(
        t, n, finished=jobs["status_finished"] & jobs["is_scout"], maxpss_kb=jobs["maxpss"],
        cores=jobs["cores"], baseramcount_mb=jobs["base_mb"], wall=jobs["wall"],
        basewalltime=jobs["bw"], hs06=jobs["hs06"], eff=jobs["eff"], nevents=jobs["nevents"],
        inputfilebytes=jobs["inputfilebytes"], outputfilebytes=jobs["outputfilebytes"], min_jobs=1,
    )  # fmt: skip
    end = np.zeros(n)
    np.maximum.at(end, t, jobs["start"] + jobs["wall"])

    def as_int(values: np.ndarray) -> pd.Series:
        return pd.Series(np.ceil(values)).astype("Int64")

    frame = pd.DataFrame(
        {
            "jeditaskid": ids.astype(np.int64),
            "taskname": names,
            **{
                k: cols[k]
                for k in (
                    "username",
                    "prodsourcelabel",
                    "tasktype",
                    "processingtype",
                    "transpath",
                    "transuses",
                    "transhome",
                    "architecture",
                    "corecount",
                    "campaign",
                    "workqueue_id",
                    "gshare",
                    "site",
                )
            },
            "baseramcount": pd.Series(cols["baseramcount"]).astype("Int64"),
            "basewalltime": pd.Series(cols["basewalltime"]).astype("Int64"),
            "cpuefficiency": pd.Series(cols["cpuefficiency"]).astype("Int64"),
            "cputimeunit": "HS06sPerEvent",
            "ramunit": cols["ramunit"],
            "status": np.where(jobs["aborted"], "broken", "done").astype(object),
            "creationdate": created.astype("datetime64[us]"),
            "modificationtime": (created + end.astype("timedelta64[s]")).astype("datetime64[us]"),
            "ramcount": as_int(scouts["memory"]),
            "cputime": as_int(scouts["cputime"]),
            "walltime": as_int(scouts["walltime"]),
            "iointensity": as_int(scouts["io"]),
            "diskio": pd.Series([None] * n, dtype="Int64"),
            "walltimeunit": None,
            "iointensityunit": "kBPerS",
            "splitrule": "US=3",  # scouted, requirements updated (JEDI's post-scout mark)
            "lockedby": None,
            "lockedtime": pd.Series([None] * n, dtype="datetime64[us]"),
        }
    )
    return frame


def _datasets_frame(draw, ids, names, outputs, created):  # type: ignore[no-untyped-def]
    """Per task: its input datasets (files and events split evenly), pile-up's minbias
    input, the outputs and the log; ``datasetid`` = jeditaskid x 100 + slot, in row order."""
    cols, lat = draw.cols, draw.lat
    n = len(ids)
    base = ids.astype(np.int64) * 100
    family = lat["family"]
    n_units = lat["n_units"].astype(np.int64)
    nevents = cols["input_nevents"]
    # inputs: the j-th of k gets round(N j / k) .. round(N (j+1) / k), as np.linspace does
    k = cols["n_input_datasets"].astype(np.int64)
    owner = np.repeat(np.arange(n), k)
    j = np.arange(int(k.sum())) - np.repeat(np.cumsum(k) - k, k)

    def split(total: np.ndarray) -> np.ndarray:
        step = (total / k)[owner]
        lo = np.where(j == 0, 0.0, np.rint(j * step))
        hi = np.where(j + 1 == k[owner], total[owner], np.rint((j + 1) * step))
        return (np.rint(hi) - lo).astype(np.int64)

    kind = np.where(family == FAMILIES.index("evgen"), "pseudo_input", "input").astype(object)
    parts = [
        pd.DataFrame({
            "jeditaskid": ids[owner], "datasetid": base[owner] + 1 + j,
            "datasetname": [f"{names[i]}.in{x}" for i, x in zip(owner.tolist(), j.tolist(), strict=True)],
            "type": kind[owner], "masterid": None, "nfiles": split(cols["input_nfiles"]),
            "nevents": split(nevents),
        })
    ]  # fmt: skip
    pile = np.flatnonzero(family == FAMILIES.index("pile"))
    parts.append(pd.DataFrame({
        "jeditaskid": ids[pile], "datasetid": base[pile] + 20,
        "datasetname": [f"{cols['project'][i]}.minbias.merge.HITS" for i in pile.tolist()],
        "type": "input", "masterid": base[pile] + 1, "nfiles": 5000, "nevents": 5000 * 2000,
    }))  # fmt: skip
    n_out = np.array([len(o) for o in outputs])
    out_owner = np.repeat(np.arange(n), n_out)
    out_j = np.arange(len(out_owner)) - np.repeat(np.cumsum(n_out) - n_out, n_out)
    parts.append(pd.DataFrame({
        "jeditaskid": ids[out_owner], "datasetid": base[out_owner] + 40 + out_j,
        "datasetname": [name for out in outputs for name in out], "type": "output",
        "masterid": None, "nfiles": n_units[out_owner], "nevents": nevents[out_owner].astype(np.int64),
    }))  # fmt: skip
    parts.append(pd.DataFrame({
        "jeditaskid": ids, "datasetid": base + 60, "datasetname": [f"{x}.log" for x in names],
        "type": "log", "masterid": None, "nfiles": n_units, "nevents": None,
    }))  # fmt: skip
    frame = pd.concat([p.astype({"masterid": "Int64", "nevents": "Int64"}) for p in parts])
    frame = frame.sort_values("datasetid", kind="stable", ignore_index=True)
    frame["jeditaskid"] = frame["jeditaskid"].astype(np.int64)
    frame["nfiles"] = frame["nfiles"].astype(np.int64)
    # JEDI registers a task's datasets when it defines the task (NOT NULL in PanDA)
    registered = pd.Series(created, index=ids).astype("datetime64[us]")
    frame["creationtime"] = registered.reindex(frame["jeditaskid"]).to_numpy()
    frame["modificationtime"] = frame["creationtime"]
    return frame


def _truth_frame(draw: TaskDraw, ids, r_mean, r_sd) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    lat = draw.lat
    offset = {"memory": 0.0, "cputime": 0.0, "io": 0.0, "walltime": lat["bw_eff"]}
    data: dict[str, object] = {
        "jeditaskid": ids.astype(np.int64),
        "family": np.array(FAMILIES, dtype=object)[lat["family"]],
        "drifted": lat["drifted"].astype(np.int64),
        "n_units": lat["n_units"].astype(np.int64),
    }
    for t in TARGET_NAMES:
        if t == "cputime":
            mu = lat["cputime_mu_base"] + r_mean
            sigma = np.sqrt(lat["cputime_sigma_base"] ** 2 + np.nan_to_num(r_sd) ** 2)
        else:
            mu, sigma = lat[f"{t}_mu"], lat[f"{t}_sigma"]
        data[f"{t}_mu"] = mu
        data[f"{t}_sigma"] = sigma
        data[f"{t}_offset"] = np.broadcast_to(offset[t], len(draw)).astype(float)
    return pd.DataFrame(data)
