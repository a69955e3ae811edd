"""Submission-time features of PanDA tasks: the one place they are computed.

Each feature is written once, over plain values: :func:`features_of` takes one task's
``jedi_tasks`` row, its task parameters and its ``jedi_datasets`` rows (mappings) and
returns its feature dict. Everything else wraps that function: :func:`task_features`
applies it to a whole history (training, monitoring), the service applies it to a task
fetched by id (``history.task_reader.fetch_task_features``) and to posted task parameters
(:func:`features_from_taskparams`). A single task therefore costs microseconds, not a
DataFrame's milliseconds, and no path can compute a feature differently from another.

Raw values become feature values through :mod:`scoutless.features.normalise` only.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import pandas as pd

from scoutless.features.normalise import category_text, number, number_or_none
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

FEATURE_NAMES: list[str] = feature_names(PANDA_FEATURES)
CATEGORICAL: list[str] = [f.name for f in PANDA_FEATURES if f.kind == "categorical"]
NUMERICAL: list[str] = [f.name for f in PANDA_FEATURES if f.kind == "numerical"]

_PARAMS_SOURCE = "jedi_taskparams."
#: Features read from the task parameters only (key as submitted → feature name).
TASKPARAM_FEATURES: dict[str, str] = {
    f.source.removeprefix(_PARAMS_SOURCE): f.name
    for f in PANDA_FEATURES
    if f.source.startswith(_PARAMS_SOURCE)
}
#: jedi_tasks columns that are features as they are (categorical, numerical).
_TASK_CATEGORICAL = [f.name for f in PANDA_FEATURES if f.source == "jedi_tasks" and f.kind == "categorical"]  # fmt: skip
_TASK_NUMERICAL = [f.name for f in PANDA_FEATURES if f.source == "jedi_tasks" and f.kind == "numerical"]  # fmt: skip
#: Every jedi_tasks column the feature code reads (the database fetch selects these).
TASK_COLUMNS_READ: list[str] = ["taskname", *_TASK_CATEGORICAL, *_TASK_NUMERICAL]
#: Every jedi_datasets column the feature code reads.
DATASET_COLUMNS_READ: list[str] = ["type", "masterid", "nfiles", "nevents"]
_DTYPES = {f.name: object if f.kind == "categorical" else float for f in PANDA_FEATURES}
INPUT_COUNT_FEATURES = ("n_input_datasets", "input_nfiles", "input_nevents")
_MASTER_INPUT_TYPES = frozenset({"input", "pseudo_input"})


def project_of(taskname: object) -> str | None:
    """First dot-separated token of a task name (``mc16_13TeV``, ``data18_13TeV``, ``user``)."""
    if not isinstance(taskname, str) or not taskname:
        return None
    return taskname.split(".", 1)[0]


def parse_taskparams(raw: object) -> dict[str, Any]:
    """A task-parameter JSON as stored (text) or already decoded; {} when absent."""
    if raw is None or raw is pd.NA or (isinstance(raw, float) and math.isnan(raw)):
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    if isinstance(raw, bytes | str):
        decoded = json.loads(raw)
        if not isinstance(decoded, dict):
            raise ValueError("taskparams must be a JSON object")
        return decoded
    raise TypeError(f"taskparams of type {type(raw).__name__}, expected JSON text or a mapping")


def _missing(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def input_counts(datasets: Iterable[Mapping[str, Any]]) -> dict[str, float]:
    """Number of master input datasets of one task, their files and events (NaN if none).

    Only master inputs count (type 'input' or 'pseudo_input', no masterid): secondary
    inputs such as pile-up are attached to a master and would double-count files.
    """
    n_inputs, files, events = 0, math.nan, math.nan
    for dataset in datasets:
        if dataset.get("type") not in _MASTER_INPUT_TYPES or not _missing(dataset.get("masterid")):
            continue
        n_inputs += 1
        if not math.isnan(nfiles := number(dataset.get("nfiles"))):
            files = nfiles if math.isnan(files) else files + nfiles
        if not math.isnan(nevents := number(dataset.get("nevents"))):
            events = nevents if math.isnan(events) else events + nevents
    return {
        "n_input_datasets": float(n_inputs) if n_inputs else math.nan,
        "input_nfiles": files,
        "input_nevents": events,
    }


def features_of(
    task: Mapping[str, Any],
    params: Mapping[str, Any] | None = None,
    datasets: Iterable[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """One task's features in ``FEATURE_NAMES`` order: categories as text or None, numbers
    as float (NaN when missing). ``task`` holds jedi_tasks columns, ``params`` the decoded
    task parameters, ``datasets`` the task's jedi_datasets rows (None: counts unknown)."""
    values: dict[str, Any] = {name: category_text(task.get(name)) for name in _TASK_CATEGORICAL}
    values["project"] = category_text(project_of(task.get("taskname")))
    for name in _TASK_NUMERICAL:
        values[name] = number(task.get(name))
    for key, name in TASKPARAM_FEATURES.items():
        values[name] = number(params.get(key)) if params else math.nan
    values.update(input_counts(datasets or ()))
    return {name: values[name] for name in FEATURE_NAMES}


def _rows(frame: pd.DataFrame, columns: list[str]) -> Iterator[dict[str, Any]]:
    """A frame's rows as plain dicts of the given columns (absent columns left out)."""
    present = [c for c in columns if c in frame.columns]
    lists = [frame[c].tolist() for c in present]
    for values in zip(*lists, strict=True):
        yield dict(zip(present, values, strict=True))


def _datasets_by_task(datasets: pd.DataFrame | None) -> dict[Any, list[dict[str, Any]]]:
    grouped: dict[Any, list[dict[str, Any]]] = defaultdict(list)
    if datasets is None or datasets.empty:
        return grouped
    for task_id, row in zip(
        datasets["jeditaskid"].tolist(), _rows(datasets, DATASET_COLUMNS_READ), strict=True
    ):
        grouped[task_id].append(row)
    return grouped


def task_features(
    tasks: pd.DataFrame,
    taskparams: pd.Series | None = None,
    datasets: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """Feature frame indexed by jeditaskid, columns in ``FEATURE_NAMES`` order.

    ``tasks`` has jedi_tasks columns (a ``jeditaskid`` column or index); ``taskparams`` maps
    jeditaskid → task-parameter JSON; ``datasets`` has jedi_datasets rows (None: the input
    counts are unknown). Each row goes through :func:`features_of`.
    """
    ids = (tasks["jeditaskid"] if "jeditaskid" in tasks.columns else tasks.index).tolist()
    params = taskparams.to_dict() if taskparams is not None else {}
    by_task = _datasets_by_task(datasets)
    rows = [
        features_of(task, parse_taskparams(params.get(task_id)), by_task.get(task_id, ()))
        for task_id, task in zip(ids, _rows(tasks, TASK_COLUMNS_READ), strict=True)
    ]
    index = pd.Index(ids, name="jeditaskid")
    columns = {
        name: pd.Series([row[name] for row in rows], index=index, dtype=_DTYPES[name])
        for name in FEATURE_NAMES
    }
    return pd.DataFrame(columns, index=index)


def features_from_taskparams(params: Mapping[str, Any] | str) -> dict[str, Any]:
    """Features of one task from its PanDA task-parameter JSON, as submitted.

    Input dataset counts are not part of the parameters (JEDI learns them when it
    registers the datasets); pass ``nFiles``/``nEvents`` hints under the keys
    ``input_nfiles``/``input_nevents``/``n_input_datasets`` if the caller knows them.
    """
    p = parse_taskparams(params)
    p = {new: p[old] for old, new in TASKPARAM_ALIASES.items() if old in p} | p
    task = {column: p.get(key) for key, column in TASKPARAM_TO_COLUMN.items()}
    features = features_of(task, p)
    for key in INPUT_COUNT_FEATURES:
        if key in p:
            value = number_or_none(p[key])
            if value is None:
                raise ValueError(f"taskparams key {key!r}: {p[key]!r} is not a number")
            features[key] = value
    return features
