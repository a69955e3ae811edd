"""Submission-time features of PanDA tasks: the one place they are computed.

Training (history → table), the service (a task fetched from the database, or a PanDA
task-parameter JSON posted to it) and monitoring all call these functions, so a feature
is never computed two ways.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from scoutless.features.spec import PANDA_FEATURES, feature_names

#: PanDA task-parameter keys (as submitted, camelCase) → jedi_tasks column names.
TASKPARAM_TO_COLUMN: dict[str, str] = {
    "taskName": "taskname",
    "userName": "username",
    "prodSourceLabel": "prodsourcelabel",
    "taskType": "tasktype",
    "processingType": "processingtype",
    "transPath": "transpath",
    "transUses": "transuses",
    "transHome": "transhome",
    "architecture": "architecture",
    "coreCount": "corecount",
    "campaign": "campaign",
    "workQueueID": "workqueue_id",
    "gshare": "gshare",
    "site": "site",
    "baseRamCount": "baseramcount",
    "baseWalltime": "basewalltime",
    "cpuEfficiency": "cpuefficiency",
    "ramUnit": "ramunit",
}

#: Older task-parameter keys JEDI still accepts (TaskRefinerBase) → the current key.
TASKPARAM_ALIASES: dict[str, str] = {"ramCountUnit": "ramUnit"}

#: Features read from the task parameters only (not columns of jedi_tasks).
TASKPARAM_FEATURES: dict[str, str] = {
    "ramCount": "requested_ramcount",
    "nEventsPerJob": "nevents_per_job",
    "nFilesPerJob": "nfiles_per_job",
}

FEATURE_NAMES: list[str] = feature_names(PANDA_FEATURES)
CATEGORICAL: list[str] = [f.name for f in PANDA_FEATURES if f.kind == "categorical"]
NUMERICAL: list[str] = [f.name for f in PANDA_FEATURES if f.kind == "numerical"]


def project_of(taskname: object) -> str | None:
    """First dot-separated token of a task name (``mc16_13TeV``, ``data18_13TeV``, ``user``)."""
    if not isinstance(taskname, str) or not taskname:
        return None
    return taskname.split(".", 1)[0]


def parse_taskparams(raw: object) -> dict[str, Any]:
    """A task-parameter JSON as stored (text) or already decoded; {} when absent."""
    if raw is None or (isinstance(raw, float) and np.isnan(raw)):
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    if isinstance(raw, bytes | str):
        decoded = json.loads(raw)
        if not isinstance(decoded, dict):
            raise ValueError("taskparams must be a JSON object")
        return decoded
    raise TypeError(f"taskparams of type {type(raw).__name__}, expected JSON text or a mapping")


def input_counts(datasets: pd.DataFrame) -> pd.DataFrame:
    """Per task: number of master input datasets, their files and events.

    Only master inputs count (type 'input' or 'pseudo_input', no masterid): secondary
    inputs such as pile-up are attached to a master and would double-count files.
    """
    cols = ["n_input_datasets", "input_nfiles", "input_nevents"]
    if datasets.empty:
        return pd.DataFrame(columns=cols, index=pd.Index([], name="jeditaskid"), dtype=float)
    is_master_input = datasets["type"].isin(["input", "pseudo_input"]) & datasets["masterid"].isna()
    inputs = datasets[is_master_input]
    grouped = inputs.groupby("jeditaskid")
    return pd.DataFrame(
        {
            "n_input_datasets": grouped.size().astype(float),
            "input_nfiles": grouped["nfiles"].sum(min_count=1).astype(float),
            "input_nevents": grouped["nevents"].sum(min_count=1).astype(float),
        }
    )


def _taskparam_columns(taskparams: pd.Series) -> pd.DataFrame:
    parsed = taskparams.map(parse_taskparams)
    out = pd.DataFrame(index=taskparams.index)
    for key, col in TASKPARAM_FEATURES.items():
        out[col] = pd.to_numeric(parsed.map(lambda p, k=key: p.get(k)), errors="coerce")
    return out


def _as_categorical_text(series: pd.Series) -> pd.Series:
    """Categories as strings; None stays missing (the encoders map it to 'unknown')."""
    text = series.astype("object").where(series.notna(), None)
    return text.map(lambda v: None if v is None or v == "" else str(v))


def task_features(
    tasks: pd.DataFrame,
    taskparams: pd.Series | None = None,
    datasets: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Feature frame indexed by jeditaskid, columns in ``FEATURE_NAMES`` order.

    ``tasks`` has jedi_tasks columns (a ``jeditaskid`` column or index); ``taskparams`` maps
    jeditaskid → task-parameter JSON; ``datasets`` has jedi_datasets rows.
    """
    tasks = tasks.set_index("jeditaskid") if "jeditaskid" in tasks.columns else tasks
    out = pd.DataFrame(index=tasks.index)
    for name in CATEGORICAL:
        if name == "project":
            source = tasks.get("taskname", pd.Series(None, index=tasks.index))
            out[name] = source.map(project_of)
        else:
            out[name] = tasks.get(name, pd.Series(None, index=tasks.index, dtype=object))
        out[name] = _as_categorical_text(out[name])
    for name in NUMERICAL:
        if name in tasks.columns:
            out[name] = pd.to_numeric(tasks[name], errors="coerce").astype(float)
    if taskparams is not None and len(taskparams):
        out = out.join(_taskparam_columns(taskparams))
    if datasets is not None:
        out = out.join(input_counts(datasets))
    for name in NUMERICAL:
        if name not in out.columns:
            out[name] = np.nan
        out[name] = out[name].astype(float)
    out.index.name = "jeditaskid"
    return out[FEATURE_NAMES]


def features_from_taskparams(params: Mapping[str, Any] | str) -> dict[str, Any]:
    """Features of one task from its PanDA task-parameter JSON, as submitted.

    Input dataset counts are not part of the parameters (JEDI learns them when it
    registers the datasets); pass ``nFiles``/``nEvents`` hints under the keys
    ``input_nfiles``/``input_nevents``/``n_input_datasets`` if the caller knows them.
    """
    p = parse_taskparams(params)
    p = {new: p[old] for old, new in TASKPARAM_ALIASES.items() if old in p} | p
    row = {col: p.get(key) for key, col in TASKPARAM_TO_COLUMN.items()}
    row["jeditaskid"] = p.get("jediTaskID", 0)
    tasks = pd.DataFrame([row])
    taskparams = pd.Series([p], index=pd.Index([row["jeditaskid"]], name="jeditaskid"))
    frame = task_features(tasks, taskparams)
    for key in ("n_input_datasets", "input_nfiles", "input_nevents"):
        if key in p:
            frame[key] = float(p[key])
    return frame.iloc[0].to_dict()
