"""What a drawn task looks like as submitted: its name and output datasets as prodsys or
panda-client would name them (:func:`task_names`), and its task-parameter JSON
(:func:`taskparams`, a missing value left out).
"""

from __future__ import annotations

import json

import numpy as np

from scoutless.history.synthetic.latent import TaskDraw
from scoutless.history.synthetic.vocabulary import FAMILIES, Vocabulary


def task_names(draw: TaskDraw, vocab: Vocabulary, rng: np.random.Generator, ids: np.ndarray):  # type: ignore[no-untyped-def]
    cols, lat = draw.cols, draw.lat
    n = len(draw)
    dsid = rng.integers(300000, 700000, n)
    gen = np.array(vocab.generators, dtype=object)[rng.integers(0, len(vocab.generators), n)]
    proc = np.array(vocab.processes, dtype=object)[rng.integers(0, len(vocab.processes), n)]
    words = np.array(vocab.analysis_words, dtype=object)[
        rng.integers(0, len(vocab.analysis_words), n)
    ]
    tags = rng.integers(1000, 9999, (n, 3))
    names, outputs = [], []
    for i in range(n):
        fam = FAMILIES[lat["family"][i]]
        if lat["is_user"][i]:
            name = f"user.{cols['username'][i]}.{dsid[i]}.{words[i]}.v{tags[i, 0] % 20 + 1}"
            names.append(name)
            outputs.append([f"{name}_hist/", f"{name}_tree.root/"])
            continue
        step, fmt, letter = vocab.steps[fam]
        amitag = "_".join(f"{c}{t}" for c, t in zip(("e", "s", letter), tags[i], strict=False))
        if cols["project"][i].startswith("data"):
            body = f"{cols['project'][i]}.00{dsid[i]}.physics_Main"
        else:
            body = f"{cols['project'][i]}.{dsid[i]}.{gen[i]}_{proc[i]}"
        names.append(f"{body}.{step}.{amitag}")
        outputs.append([f"{body}.{step}.{fmt}.{amitag}_tid{ids[i]:08d}_00"])
    return names, outputs


TASKPARAM_COLUMNS = (
    "username", "prodsourcelabel", "tasktype", "processingtype", "transpath", "transuses",
    "transhome", "architecture", "corecount", "campaign", "workqueue_id", "gshare", "site",
    "ramunit", "baseramcount", "basewalltime", "cpuefficiency", "requested_ramcount",
    "nevents_per_job", "nfiles_per_job",
)  # fmt: skip


def taskparams(
    cols: dict[str, np.ndarray], names: list[str], outputs: list[list[str]]
) -> list[str]:
    """Each task's parameter JSON, from the drawn columns (plain lists: no frame per row)."""
    keys = ("taskname", *TASKPARAM_COLUMNS)
    values = zip(names, *(cols[k].tolist() for k in TASKPARAM_COLUMNS), strict=True)
    return [
        _taskparams_json(dict(zip(keys, row, strict=True)), outputs[i], f"{names[i]}.log")
        for i, row in enumerate(values)
    ]


def _taskparams_json(row: dict, outputs: list[str], log_name: str) -> str:
    """The task-parameter JSON as a submitter (prodsys or panda-client) sends it; a missing
    value is left out (never ``NaN``, which is not JSON)."""
    params = {
        "taskName": row["taskname"],
        "userName": row["username"],
        "prodSourceLabel": row["prodsourcelabel"],
        "taskType": row["tasktype"],
        "processingType": row["processingtype"],
        "transPath": row["transpath"],
        "transUses": row["transuses"],
        "transHome": row["transhome"],
        "architecture": row["architecture"],
        "coreCount": int(row["corecount"]),
        "campaign": row["campaign"],
        "workQueueID": int(row["workqueue_id"]),
        "gshare": row["gshare"],
        "site": row["site"],
        "ramUnit": row["ramunit"],
        "cpuTimeUnit": "HS06sPerEvent",
        "vo": "atlas",
        "jobParameters": [
            {"type": "constant", "value": "--maxEvents=${MAXEVENTS}"},
            {"type": "template", "param_type": "output", "dataset": outputs[0]},
        ],
        "log": {"type": "template", "param_type": "log", "dataset": log_name,
                "value": f"{log_name}.${{SN}}.log.tgz"},
    }  # fmt: skip
    for key, col in (
        ("baseRamCount", "baseramcount"), ("baseWalltime", "basewalltime"),
        ("cpuEfficiency", "cpuefficiency"), ("ramCount", "requested_ramcount"),
        ("nEventsPerJob", "nevents_per_job"), ("nFilesPerJob", "nfiles_per_job"),
    ):  # fmt: skip
        value = row[col]
        if not _missing(value):
            params[key] = int(value)
    return json.dumps({k: v for k, v in params.items() if not _missing(v)}, allow_nan=False)


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and value != value)
