"""The serving pipeline: preprocess → predict the targets in parallel → decide → answer + log.

(The fetch stage, for tasks read from the PanDA database, is ``history.task_reader``:
the same feature code as training; posted tasks without history features get them from
the store through a lookup the backend passes, one read per request.) The pipeline does
no HTTP and no logging I/O; it returns the response body's tasks and, built separately
from the same decisions, the prediction-log rows, with the time each stage took. Feature
validation is the bundle's (``Predictor.validate_frame``), so the service never
re-implements preprocessing.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import orjson
import pandas as pd

from scoutless.allocation.policies import ALPHA_POLICIES, Policy, PolicyError, make_policy
from scoutless.allocation.reconcile import sufficient_probability
from scoutless.config import get_settings
from scoutless.features.encoders import SMALL_BATCH, InspectedFeatures
from scoutless.features.extract import features_from_taskparams, parse_taskparams
from scoutless.features.history import HistoryLayout, layout_of
from scoutless.history.panda_db import DatabaseUnavailable
from scoutless.history.schema import jedi_tasks
from scoutless.history.store import HISTORY_MISSING
from scoutless.models.guard import baseline_feature_columns
from scoutless.models.predictor import PredictorLike
from scoutless.service.errors import log_error
from scoutless.service.value_decisions import VALUE_POLICIES, ValuePolicyError, value_answer
from scoutless.targets.bins import TargetBins
from scoutless.targets.spec import TARGETS

JSON_OPTS = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS
#: below this many rows the targets are predicted inline rather than on the thread pool
#: (``Settings.service.parallel_min_rows``, read once at import: it is on the hot path)
PARALLEL_MIN_ROWS = get_settings().service.parallel_min_rows


#: the largest id a PanDA column (NUMBER(11) / BIGINT) and the log's BigInteger hold
INT64_MAX = 2**63 - 1
#: a posted string feature may be as long as PanDA's column of that name holds
STRING_LIMITS: dict[str, int] = {
    c.name: int(c.type.length) for c in jedi_tasks.columns if getattr(c.type, "length", None)
}
#: ... and one PanDA has no column for, this long (feature names: ``NAME_CHARS``)
DEFAULT_STRING_CHARS = 256
NAME_CHARS = 64
#: longest message an input error carries (it may quote the input)
MESSAGE_CHARS = 300

#: what the service needs of a loaded bundle: the one protocol, models/predictor.py
Predictor = PredictorLike

#: Reads the history store for posted records lacking history features (feature dicts with
#: ``creationdate``): per record, its history features and whether any key had history.
#: Raises ``DatabaseUnavailable`` when the store cannot be read.
HistoryLookup = Callable[[list[dict[str, Any]]], tuple[list[dict[str, float]], list[bool]]]


class InputError(ValueError):
    """A request the service refuses (422): names the field and what was expected."""

    def __init__(self, loc: Sequence[str | int], message: str, kind: str = "value_error") -> None:
        message = message if len(message) <= MESSAGE_CHARS else message[:MESSAGE_CHARS] + "…"
        super().__init__(f"{'.'.join(map(str, loc))}: {message}")
        self.loc = list(loc)
        self.message = message
        self.kind = kind

    def detail(self) -> dict[str, Any]:
        return {"loc": self.loc, "msg": self.message, "type": self.kind}


class InputErrors(ValueError):
    """Several input errors found at once (all are reported)."""

    def __init__(self, errors: list[InputError]) -> None:
        super().__init__("; ".join(str(e) for e in errors))
        self.errors = errors


@dataclass
class Prepared:
    """Validated, encoded features of a request, ready for the models."""

    features: InspectedFeatures
    jeditaskids: list[int | None]
    flags: list[list[dict[str, Any]]]
    features_json: list[str]


@dataclass(frozen=True)
class Decision:
    """One target's decision for a request's tasks, as plain Python values."""

    view: _BinsView
    classes: list[int]
    probabilities: list[list[float]]
    confidence: list[float]
    p_sufficient: list[float]
    #: the task's own allocated values (value and cost policies); None: the class's
    values: list[float] | None = None
    alpha: float | None = None

    def recommended(self, i: int) -> float:
        """The value allocated to task ``i``, in PanDA's unit."""
        return self.values[i] if self.values is not None else self.view.recommended[self.classes[i]]

    def class_counts(self) -> dict[str, int]:
        counts = dict.fromkeys(self.view.labels, 0)
        for c in self.classes:
            counts[self.view.labels[c]] += 1
        return counts


@dataclass
class Outcome:
    """What one request produced: response tasks, log rows, stage timings (ms)."""

    tasks: list[dict[str, Any]]
    log_rows: list[dict[str, Any]]
    class_counts: dict[str, dict[str, int]]
    timings_ms: dict[str, float] = field(default_factory=dict)
    #: the response's fields in the columns layout (``tasks`` is then empty)
    columns: dict[str, Any] | None = None

    def answer_fields(self) -> dict[str, Any]:
        """The response fields that carry the predictions, in the layout asked for."""
        return {"tasks": self.tasks} if self.columns is None else self.columns


class PolicyCache:
    """Fitted policies per (target, name, alpha, recall); fitting needs the calibration set."""

    def __init__(self, predictor: Predictor) -> None:
        self.predictor = predictor
        self._fitted: dict[tuple[str, str, float, float], Policy] = {}
        self._lock = threading.Lock()

    def get(self, target: str, name: str, alpha: float, recall: float) -> Policy:
        key = (target, name, alpha, recall)
        policy = self._fitted.get(key)
        if policy is None:
            calibration = () if name == "argmax" else self.predictor.calibration(target)
            try:
                policy = make_policy(name, *calibration, alpha=alpha, recall=recall)
            except PolicyError as exc:
                raise InputError(["body", "policy"], f"{name!r} for {target}: {exc}") from exc
            with self._lock:
                self._fitted[key] = policy
        return policy


class Pipeline:
    """Serve a subset of a bundle's targets; one thread-pool task per target."""

    def __init__(
        self,
        predictor: Predictor,
        targets: Sequence[str] | None,
        executor: Executor,
        *,
        safe_recall: float = 0.9,
    ) -> None:
        self.predictor = predictor
        self.targets = list(targets) if targets else list(predictor.targets)
        unknown = [t for t in self.targets if t not in predictor.targets]
        if unknown:
            raise ValueError(
                f"targets {unknown} are not in bundle {predictor.version} "
                f"(it has {list(predictor.targets)})"
            )
        self.executor = executor
        self.safe_recall = safe_recall
        self.policies = PolicyCache(predictor)
        self.feature_names = [s.name for s in predictor.feature_specs]
        #: the history features among the inputs (None: the bundle uses none)
        self.history = layout_of(self.feature_names, predictor.targets)
        self._views = {t: _BinsView.of(t, predictor.bins[t]) for t in self.targets}

    @property
    def version(self) -> str:
        return str(self.predictor.version)

    # -- stages -----------------------------------------------------------------------------
    def preprocess(
        self, rows: Sequence[Any], *, taskparams: bool = False, history: HistoryLookup | None = None
    ) -> Prepared:
        field_name = "taskparams" if taskparams else "tasks"
        records, ids, submitted = _records(rows, field_name, taskparams)
        missing = self._fill_history(records, submitted, history)
        try:  # records, not a frame: the bundle then also refuses unknown (misspelt) keys
            features = self.predictor.inspect(records)
        except ValueError as exc:
            raise _schema_errors(exc, records, field_name) from exc
        flags: list[list[dict[str, Any]]] = [[gap] if gap else [] for gap in missing]
        for row, unknown in enumerate(features.unknown):
            for feature, value in unknown.items():
                flags[row].append({"kind": "unknown_category", "feature": feature, "value": value})
        features_json = [
            orjson.dumps(row, option=JSON_OPTS).decode()
            for row in features.rows(self.feature_names)
        ]
        return Prepared(features, ids, flags, features_json)

    def _fill_history(
        self,
        records: list[dict[str, Any]],
        submitted: list[pd.Timestamp | None],
        lookup: HistoryLookup | None,
    ) -> list[dict[str, Any] | None]:
        """Fill each record's absent history features, and say which records get flagged.

        Absent features come from the store through ``lookup`` (one call for the request;
        posted values are kept), else are unknown: NaN, and baseline-class inputs "none",
        so a client without a store still gets an answer, flagged."""
        if self.history is None:
            return [None] * len(records)
        names = self.history.names
        gaps = [i for i, record in enumerate(records) if any(n not in record for n in names)]
        flags: list[dict[str, Any] | None] = [None] * len(records)
        unknown = history_missing_flag(self.history)
        for i in gaps:
            flags[i] = unknown
        if gaps and lookup is not None:
            try:
                stored, found = lookup([{**records[i], "creationdate": submitted[i]} for i in gaps])
            except DatabaseUnavailable as exc:  # the driver's words (host, user) go to the log
                error_id = log_error("history_unreadable", exc)
                unreadable = history_missing_flag(
                    self.history,
                    f"history store unreadable, history features unknown (error id {error_id})",
                )
                for i in gaps:
                    flags[i] = unreadable
            else:
                for i, features, known in zip(gaps, stored, found, strict=True):
                    for name, value in features.items():
                        records[i].setdefault(name, value)
                    flags[i] = None if known else unknown
        baseline = self._baseline_inputs
        for i, record in enumerate(records):
            absent = [n for n in (*names, *baseline) if n not in record]
            for name in absent:
                record[name] = "none" if name in baseline else None
            if absent and flags[i] is None:
                flags[i] = unknown
        return flags

    @property
    def _baseline_inputs(self) -> list[str]:
        columns = {c for t in self.targets for c in baseline_feature_columns(t).values()}
        return [n for n in self.feature_names if n in columns]

    def predict(self, features: InspectedFeatures, targets: Sequence[str]) -> dict[str, np.ndarray]:
        """Probabilities per target, from features encoded once.

        Batches run the targets in parallel on the executor (XGBoost and the DNN's matrix
        products release the GIL); a few rows take microseconds per target, less than a
        thread hand-off costs, so they run inline.
        """
        encoded = features.encoded
        if len(encoded) <= PARALLEL_MIN_ROWS:
            return {t: self.predictor.predict_encoded(encoded, t) for t in targets}
        futures = {
            t: self.executor.submit(self.predictor.predict_encoded, encoded, t) for t in targets
        }
        return {t: np.asarray(f.result(), dtype=float) for t, f in futures.items()}

    def decide(
        self,
        proba: Mapping[str, np.ndarray],
        *,
        policy: str,
        alpha: float,
        features: InspectedFeatures | None = None,
    ) -> dict[str, Decision]:
        """Each target's chosen classes under the policy, with what answers and logs show.

        ``p_sufficient`` is P(class <= chosen): a class's recommended value is its upper
        edge; in the open last class it is a quantile of the class's training values, so
        there (given ``features`` and a value model) it is read from the answer's one
        distribution instead (:func:`_open_class_sufficient`)."""
        decisions: dict[str, Decision] = {}
        for target, p in proba.items():
            chosen = self.policies.get(target, policy, alpha, self.safe_recall).choose(p)
            probabilities, classes = p.tolist(), chosen.tolist()
            if len(p) > SMALL_BATCH:
                rows = np.arange(len(p))
                confidence = p[rows, chosen].tolist()
                p_sufficient = np.cumsum(p, axis=1)[rows, chosen].clip(0, 1).tolist()
            else:  # a few tasks: the same values from Python lists, without numpy's overhead
                pairs = list(zip(probabilities, classes, strict=True))
                confidence = [row[c] for row, c in pairs]
                p_sufficient = [_cumulative(row, c) for row, c in pairs]
            if features is not None:
                self._open_class_sufficient(target, p, chosen, features, p_sufficient)
            decisions[target] = Decision(
                view=self._views[target], classes=classes, probabilities=probabilities,
                confidence=confidence, p_sufficient=p_sufficient,
            )  # fmt: skip
        return decisions

    def _open_class_sufficient(
        self, target: str, p: np.ndarray, chosen: np.ndarray, features: InspectedFeatures,
        p_sufficient: list[float],
    ) -> None:  # fmt: skip
        """Where the open last class was chosen, P(need <= its recommended value) under the
        answer's one distribution (in place; nothing without a value model)."""
        bins = self.predictor.bins[target]
        top = np.flatnonzero(chosen == bins.n_classes - 1)
        if not len(top) or np.isfinite(bins.edges[-1]) or not self.predictor.has_values(target):
            return
        dist = self.predictor.value_distribution(features.encoded, target).take(top)
        value = np.full(len(top), float(bins.recommended[-1]))
        read = sufficient_probability(p[top], np.asarray(bins.edges), chosen[top], dist, value)
        for row, sufficient in zip(top.tolist(), read.tolist(), strict=True):
            p_sufficient[row] = sufficient

    def decide_values(
        self,
        proba: Mapping[str, np.ndarray],
        features: InspectedFeatures,
        *,
        policy: str,
        alpha: float,
    ) -> tuple[dict[str, Decision], list[dict[str, Any]] | None]:
        """The value or cost policy: per target each task's own value and the class holding
        it; for ``cost``, per task whether scouting is cheaper (:mod:`.value_decisions`)."""
        try:
            answer = value_answer(self.predictor, features, list(proba), policy=policy, alpha=alpha)
        except ValuePolicyError as exc:
            raise InputError(["body", "policy"], str(exc)) from exc
        decisions: dict[str, Decision] = {}
        for target, p in proba.items():
            allocation, bins = answer.allocations[target], self.predictor.bins[target]
            chosen = np.maximum(bins.classify(allocation.value), 0)
            sufficient = sufficient_probability(
                p, np.asarray(bins.edges), chosen, answer.distributions[target], allocation.value
            )  # one distribution: the classes' masses, the value model's shape inside
            decisions[target] = Decision(
                view=self._views[target], classes=chosen.tolist(), probabilities=p.tolist(),
                confidence=p[np.arange(len(p)), chosen].tolist(),
                p_sufficient=sufficient.tolist(),
                values=allocation.value.tolist(), alpha=alpha if policy == "value" else None,
            )  # fmt: skip
        return decisions, answer.scouting

    @staticmethod
    def answer_tasks(
        prepared: Prepared,
        decisions: Mapping[str, Decision],
        policy: str,
        scouting: list[dict[str, Any]] | None = None,
    ) -> list[dict[str, Any]]:
        """The response's ``tasks``: per task, every target's class, range and probabilities."""
        tasks = [
            {"index": i, "jeditaskid": task_id, "targets": {}, "flags": prepared.flags[i]}
            for i, task_id in enumerate(prepared.jeditaskids)
        ]
        for target, d in decisions.items():
            view = d.view
            for i, c in enumerate(d.classes):
                tasks[i]["targets"][target] = {
                    "class_id": c,
                    "class_label": view.labels[c],
                    "bin_range": view.ranges[c],
                    "probabilities": d.probabilities[i],
                    "recommended_value": d.recommended(i),
                    "unit": view.unit,
                    "panda_field": view.panda_field,
                    "confidence": d.confidence[i],
                    "p_sufficient": d.p_sufficient[i],
                    "policy": policy,
                    "alpha": d.alpha,
                }
        for task, scout in zip(tasks, scouting or [], strict=False):
            task["scout"] = scout
        return tasks

    @staticmethod
    def answer_columns(
        prepared: Prepared,
        decisions: Mapping[str, Decision],
        policy: str,
        scouting: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """The response's fields in the columns layout: per target, the classes described
        once and one list per field over the tasks. No object per task and target: a
        1,000-task batch is serialised in ~1 ms instead of ~15, a third of the bytes."""
        targets = {}
        for target, d in decisions.items():
            view = d.view
            targets[target] = {
                "class_labels": view.labels,
                "bin_ranges": view.ranges,
                "recommended_values": view.recommended,
                "unit": view.unit,
                "panda_field": view.panda_field,
                "policy": policy,
                "class_id": d.classes,
                "recommended_value": [d.recommended(i) for i in range(len(d.classes))],
                "confidence": d.confidence,
                "p_sufficient": d.p_sufficient,
                "probabilities": d.probabilities,
                "alpha": d.alpha,
            }
        columns = {
            "layout": "columns",
            "jeditaskids": prepared.jeditaskids,
            "flags": prepared.flags,
            "targets": targets,
        }
        if scouting is not None:
            columns["scout"] = scouting
        return columns

    def log_rows(
        self,
        prepared: Prepared,
        decisions: Mapping[str, Decision],
        *,
        policy: str,
        request_id: str,
        alpha: float | None = None,
    ) -> list[dict[str, Any]]:
        """Prediction-log rows (``ops.prediction_log``'s columns): one per task, every
        target's decision in its ``predictions``."""
        per_target = [(target, d.view.labels, d) for target, d in decisions.items()]
        version = self.version
        rows: list[dict[str, Any]] = []
        for i, task_id in enumerate(prepared.jeditaskids):
            predictions = {}
            for target, labels, d in per_target:
                c = d.classes[i]
                predictions[target] = {
                    "class_id": c,
                    "class_label": labels[c],
                    "recommended_value": d.recommended(i),
                    "probabilities": d.probabilities[i],
                }
                if d.values is not None:  # what the realised under-allocation is held to
                    predictions[target]["p_sufficient"] = d.p_sufficient[i]
                    predictions[target]["alpha"] = d.alpha
            rows.append(
                {
                    "request_id": request_id,
                    "jeditaskid": task_id,
                    "model_version": version,
                    "policy": policy,
                    "alpha": alpha if policy in ALPHA_POLICIES else None,
                    "predictions": orjson.dumps(predictions).decode(),
                    "features": prepared.features_json[i],
                }
            )
        return rows

    # -- the whole thing ---------------------------------------------------------------------
    def run(
        self,
        rows: Sequence[Any],
        *,
        taskparams: bool = False,
        targets: Sequence[str] | None = None,
        policy: str = "argmax",
        alpha: float = 0.05,
        request_id: str = "",
        prepared: Prepared | None = None,
        history: HistoryLookup | None = None,
        layout: str = "tasks",
    ) -> Outcome:
        chosen_targets = self.check_targets(targets)
        t0 = time.perf_counter()
        if prepared is None:
            prepared = self.preprocess(rows, taskparams=taskparams, history=history)
        t1 = time.perf_counter()
        proba = self.predict(prepared.features, chosen_targets) if len(prepared.features) else {}
        t2 = time.perf_counter()
        scouting = None
        if policy in VALUE_POLICIES and proba:
            decisions, scouting = self.decide_values(
                proba, prepared.features, policy=policy, alpha=alpha
            )
        else:
            decisions = self.decide(proba, policy=policy, alpha=alpha, features=prepared.features)
        columns = layout == "columns"
        outcome = Outcome(
            tasks=[] if columns else self.answer_tasks(prepared, decisions, policy, scouting),
            log_rows=self.log_rows(
                prepared, decisions, policy=policy, request_id=request_id, alpha=alpha
            ),
            class_counts={t: d.class_counts() for t, d in decisions.items()},
            columns=self.answer_columns(prepared, decisions, policy, scouting) if columns else None,
        )
        t3 = time.perf_counter()
        outcome.timings_ms = {
            "preprocess": (t1 - t0) * 1e3,
            "predict": (t2 - t1) * 1e3,
            "aggregate": (t3 - t2) * 1e3,
        }
        return outcome

    def check_targets(self, targets: Sequence[str] | None) -> list[str]:
        if not targets:
            return self.targets
        unknown = [t for t in targets if t not in self.targets]
        if unknown:
            raise InputError(
                ["body", "targets"], f"{unknown} not served here; this service has {self.targets}"
            )
        return list(dict.fromkeys(targets))


@dataclass(frozen=True)
class _BinsView:
    """A target's bins as plain Python values, ready to go into a response."""

    labels: list[str]
    ranges: list[tuple[float | None, float | None]]
    recommended: list[float]
    unit: str
    panda_field: str

    @classmethod
    def of(cls, target: str, bins: TargetBins) -> _BinsView:
        def finite(x: float) -> float | None:
            return float(x) if math.isfinite(x) else None

        spec = TARGETS.get(target)
        return cls(
            labels=[str(label) for label in bins.labels],
            ranges=[
                (finite(bins.bounds(c)[0]), finite(bins.bounds(c)[1]))
                for c in range(bins.n_classes)
            ],
            recommended=[float(r) for r in bins.recommended],
            unit=bins.unit or (spec.unit if spec else ""),
            panda_field=spec.panda_field if spec else target,
        )


def _cumulative(row: list[float], c: int) -> float:
    """P(class <= c), summed left to right as ``np.cumsum`` does, clipped to [0, 1]."""
    total = 0.0
    for value in row[: c + 1]:
        total += value
    return min(max(total, 0.0), 1.0)


def history_missing_flag(
    layout: HistoryLayout | None,
    msg: str = "no finished job of these keys known: history features were unknown",
) -> dict[str, Any]:
    """The flag of a task answered without history (new user/transformation, or no store)."""
    kinds = list(layout.kinds) if layout else []
    return {"kind": HISTORY_MISSING, "keys": kinds, "msg": msg}


def _records(
    rows: Sequence[Any], field_name: str, taskparams: bool
) -> tuple[list[dict[str, Any]], list[int | None], list[pd.Timestamp | None]]:
    """Feature dicts, task ids and submit times (``creationdate``, optional) of the rows."""
    records: list[dict[str, Any]] = []
    ids: list[int | None] = []
    submitted: list[pd.Timestamp | None] = []
    errors: list[InputError] = []
    for i, row in enumerate(rows):
        loc: list[str | int] = ["body", field_name, i]
        try:
            if taskparams:
                params = parse_taskparams(row)  # once: the features and the id read it
                record = features_from_taskparams(params)
                raw_id, raw_time = params.get("jediTaskID"), params.get("creationdate")
            else:
                record = dict(row)
                raw_id, raw_time = record.pop("jeditaskid", None), record.pop("creationdate", None)
            ids.append(_task_id(raw_id, [*loc, "jeditaskid"]))
            submitted.append(_submit_time(raw_time, [*loc, "creationdate"]))
            errors += _out_of_bounds(record, loc)
            records.append(record)
        except InputError as exc:
            errors.append(exc)
        except (ValueError, TypeError) as exc:  # JSON text that is not a task-parameter object
            errors.append(InputError(loc, f"not a task-parameter JSON: {exc}"))
    if errors:
        raise InputErrors(errors)
    return records, ids, submitted


def _submit_time(raw: Any, loc: list[str | int]) -> pd.Timestamp | None:
    """A posted creation time as a UTC timestamp (naive: UTC); None when not given."""
    if raw is None:
        return None
    try:
        stamp = pd.Timestamp(raw) if isinstance(raw, str) else None
    except ValueError:
        stamp = None
    if stamp is None or stamp is pd.NaT:
        raise InputError(loc, f"expected an ISO 8601 time, got {raw!r}", "datetime_parsing")
    return stamp.tz_localize("UTC") if stamp.tz is None else stamp.tz_convert("UTC")


def _task_id(raw: Any, loc: list[str | int]) -> int | None:
    if raw is None or raw == 0:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int | str) or len(str(raw)) > 24:
        raise InputError(loc, "expected an integer task id", "int_type")
    try:
        task_id = int(raw)
    except ValueError:
        raise InputError(loc, f"expected an integer task id, got {raw!r}", "int_parsing") from None
    if not 0 <= task_id <= INT64_MAX:
        raise InputError(loc, f"a task id is within 0 and {INT64_MAX}", "less_than_equal")
    return task_id


def _out_of_bounds(record: Mapping[str, Any], loc: list[str | int]) -> list[InputError]:
    """Features that cannot be stored or compared: a name over ``NAME_CHARS``, a string
    longer than PanDA's column, an integer outside int64, a list or an object."""
    errors = []
    for name, value in record.items():
        if not isinstance(name, str) or len(name) > NAME_CHARS:
            errors.append(InputError(loc, f"a feature name has at most {NAME_CHARS} characters",
                                     "string_too_long"))  # fmt: skip
        elif isinstance(value, str):
            limit = STRING_LIMITS.get(name, DEFAULT_STRING_CHARS)
            if len(value) > limit:
                errors.append(InputError([*loc, name], f"at most {limit} characters (PanDA's "
                                         f"column), got {len(value)}", "string_too_long"))  # fmt: skip
        elif isinstance(value, int) and not isinstance(value, bool):
            if not -INT64_MAX - 1 <= value <= INT64_MAX:
                errors.append(InputError([*loc, name], "an integer within int64", "int_range"))
        elif value is not None and not isinstance(value, float | bool):
            errors.append(InputError([*loc, name], "expected a number, a string or null",
                                     "type_error"))  # fmt: skip
    return errors


def _names(value: Any) -> list[tuple[str, str]]:
    """(field, detail) pairs from a SchemaError attribute (list, mapping or None)."""
    if not value:
        return []
    if isinstance(value, Mapping):
        return [(str(k), str(v)) for k, v in value.items()]
    out = []
    for item in value:
        if isinstance(item, tuple | list) and item:
            out.append((str(item[0]), " ".join(map(str, item[1:]))))
        else:
            out.append((str(item), ""))
    return out


def _schema_errors(exc: ValueError, records: list[dict[str, Any]], field_name: str) -> InputErrors:
    """Turn the bundle's SchemaError into 422 details naming the field (and first bad row)."""
    errors: list[InputError] = []
    for name, _ in _names(getattr(exc, "missing", None)):
        row = next((i for i, r in enumerate(records) if name not in r), 0)
        errors.append(InputError(["body", field_name, row, name], "field required", "missing"))
    for name, detail in _names(getattr(exc, "wrong_type", None)):
        msg = f"wrong type{', expected ' + detail if detail else ''}"
        errors.append(InputError(["body", field_name, name], msg, "type_error"))
    for name, _ in _names(getattr(exc, "unexpected", None)):
        row = next((i for i, r in enumerate(records) if name in r), 0)
        errors.append(
            InputError(
                ["body", field_name, row, name], "not a feature of the served bundle", "extra"
            )
        )
    if not errors:
        errors.append(InputError(["body", field_name], str(exc)))
    return InputErrors(errors)
