"""The serving pipeline: preprocess → predict the targets in parallel → decide → answer + log.

(The fetch stage, for tasks read from the PanDA database, is ``history.task_reader``:
the same feature code as training; posted tasks without history features get them from
the store through a lookup the backend passes, one read per request.) The pipeline does
no HTTP and no logging I/O; it returns the response body's tasks and, built separately
from the same decisions, the prediction-log rows, with the time each stage took. Feature
validation is the bundle's (``Predictor.validate_frame``), so the service never
re-implements preprocessing. The request's input checks are :mod:`.request_input`; the
answer and log rows built from the decisions are :mod:`.answers`; the decide stage is
:mod:`.decisions`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from typing import Any

import numpy as np
import orjson
import pandas as pd

from scoutless.config import Settings
from scoutless.fast_paths import current
from scoutless.features.domains import domains
from scoutless.features.encoded import InspectedFeatures
from scoutless.features.history import HistoryLayout, layout_of
from scoutless.history.panda_db import DatabaseUnavailable
from scoutless.history.store import HISTORY_MISSING
from scoutless.models.guard import baseline_feature_columns
from scoutless.models.predictor import PredictorLike
from scoutless.policy_names import VALUE_POLICIES
from scoutless.service.answers import (
    Decision,
    Outcome,
    answer_columns,
    answer_tasks,
    log_rows,
)
from scoutless.service.decisions import DecisionStage
from scoutless.service.errors import log_error
from scoutless.service.request_input import InputError, Prepared, inspect_records, parse_records

JSON_OPTS = orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS


#: what the service needs of a loaded bundle: the one protocol, models/predictor.py
Predictor = PredictorLike

#: Reads the history store for posted records lacking history features (feature dicts with
#: ``creationdate``): per record, its history features and whether any key had history.
#: Raises ``DatabaseUnavailable`` when the store cannot be read.
HistoryLookup = Callable[[list[dict[str, Any]]], tuple[list[dict[str, float]], list[bool]]]


class Pipeline(DecisionStage):
    """Serve a subset of a bundle's targets; one thread-pool task per target."""

    def __init__(
        self,
        predictor: Predictor,
        targets: Sequence[str] | None,
        executor: Executor,
        *,
        safe_recall: float = 0.9,
        settings: Settings,
    ) -> None:
        """``settings``: what the decisions assume of the site (prices, rules, caps, the
        submission fields' domains) and how history features are computed, read here."""
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
        self.feature_names = [s.name for s in predictor.feature_specs]
        #: the history features among the inputs (None: the bundle uses none)
        self.history = layout_of(self.feature_names, predictor.targets)
        self.history_settings = settings.history
        #: each numeric submission field's domain under the site's limits
        self.domains = domains(settings.replay)
        self._decision_state(settings)

    @property
    def version(self) -> str:
        return str(self.predictor.version)

    # -- stages -----------------------------------------------------------------------------
    def preprocess(
        self, rows: Sequence[Any], *, taskparams: bool = False, history: HistoryLookup | None = None
    ) -> Prepared:
        field_name = "taskparams" if taskparams else "tasks"
        records, ids, submitted = parse_records(rows, field_name, taskparams, self.domains)
        missing = self._fill_history(records, submitted, history)
        features, flags = inspect_records(
            self.predictor, records, field_name, missing, self.domains
        )
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
        if len(encoded) <= current().parallel_rows:
            return {t: self.predictor.predict_encoded(encoded, t) for t in targets}
        futures = {
            t: self.executor.submit(self.predictor.predict_encoded, encoded, t) for t in targets
        }
        return {t: np.asarray(f.result(), dtype=float) for t, f in futures.items()}

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
        preprocess_ms = (time.perf_counter() - t0) * 1e3
        outcome = self.run_many([prepared], [request_id], targets=chosen_targets, policy=policy,
                                alpha=alpha, layout=layout)[0]  # fmt: skip
        outcome.timings_ms = {"preprocess": preprocess_ms, **outcome.timings_ms}
        return outcome

    def run_many(
        self,
        prepared: Sequence[Prepared],
        request_ids: Sequence[str],
        *,
        targets: Sequence[str] | None = None,
        policy: str = "argmax",
        alpha: float = 0.05,
        layout: str = "tasks",
    ) -> list[Outcome]:
        """Several requests' prepared tasks through the models and the decisions at once
        (every step is row by row: a task's answer is the one it gets alone, to the DNN's
        float32 rounding), then
        each request's own answer and log rows; ``predict`` and ``aggregate`` are the
        whole group's times."""
        chosen_targets = self.check_targets(targets)
        t1 = time.perf_counter()
        tasks = Prepared.stack(prepared)
        proba = self.predict(tasks.features, chosen_targets) if len(tasks.features) else {}
        t2 = time.perf_counter()
        scouting = None
        if policy in VALUE_POLICIES and proba:
            decisions, scouting = self.decide_values(proba, tasks.features, policy=policy,
                                                     alpha=alpha)  # fmt: skip
        else:
            decisions = self.decide(proba, policy=policy, alpha=alpha, features=tasks.features)
        outcomes, lo = [], 0
        alone = len(prepared) == 1  # the group's decisions are this request's own
        for one, request_id in zip(prepared, request_ids, strict=True):
            hi = lo + len(one.features)
            mine = decisions if alone else {t: d.rows(lo, hi) for t, d in decisions.items()}
            outcomes.append(self._outcome(one, mine, scouting and scouting[lo:hi], policy=policy,
                                          alpha=alpha, request_id=request_id, layout=layout))  # fmt: skip
            lo = hi
        timings = {"predict": (t2 - t1) * 1e3, "aggregate": (time.perf_counter() - t2) * 1e3}
        for outcome in outcomes:
            outcome.timings_ms = dict(timings)
        return outcomes

    def _outcome(
        self, prepared: Prepared, decisions: dict[str, Decision],
        scouting: list[dict[str, Any]] | None, *, policy: str, alpha: float, request_id: str,
        layout: str,
    ) -> Outcome:  # fmt: skip
        columns = layout == "columns"
        logged = log_rows(prepared, decisions, version=self.version, policy=policy,
                          request_id=request_id, alpha=alpha)  # fmt: skip
        return Outcome(
            tasks=[] if columns else answer_tasks(prepared, decisions, policy, scouting),
            log_rows=logged,
            class_counts={t: d.class_counts() for t, d in decisions.items()},
            columns=answer_columns(prepared, decisions, policy, scouting) if columns else None,
        )

    def check_targets(self, targets: Sequence[str] | None) -> list[str]:
        if not targets:
            return self.targets
        unknown = [t for t in targets if t not in self.targets]
        if unknown:
            raise InputError(
                ["body", "targets"], f"{unknown} not served here; this service has {self.targets}"
            )
        return list(dict.fromkeys(targets))


def history_missing_flag(
    layout: HistoryLayout | None,
    msg: str = "no finished job of these keys known: history features were unknown",
) -> dict[str, Any]:
    """The flag of a task answered without history (new user/transformation, or no store)."""
    kinds = list(layout.kinds) if layout else []
    return {"kind": HISTORY_MISSING, "keys": kinds, "msg": msg}
