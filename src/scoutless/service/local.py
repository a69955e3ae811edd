"""Local mode: predictions made in this process from the served bundle.

A request runs the pipeline (features → predict → decide), commits its prediction-log
rows through the group commit (``LoopGroupCommit``), and only then answers: a
prediction answered is a prediction stored. A request of a few tasks is prepared in its
handler and computed with the others of the same loop turn (``LoopBatcher``: the models
and decisions once per group). A task read from the PanDA database costs one query and,
on a database server, a share of one thread hop (``LoopTaskFetch``: a loop turn's reads
together); none on SQLite.
"""

from __future__ import annotations

import asyncio
import functools
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import HTTPException
from starlette.concurrency import run_in_threadpool

from scoutless.config import ServiceSettings
from scoutless.fast_paths import current
from scoutless.features.extract import features_of
from scoutless.history.panda_db import DatabaseUnavailable
from scoutless.history.store_reader import task_history
from scoutless.history.task_reader import (
    TASK_HISTORY_KEYS,
    TaskInputs,
    TaskReader,
    domain_checked,
)
from scoutless.ops.log_commit import LoopGroupCommit
from scoutless.ops.prediction_log import CALLER_CHARS, DATABASE, POSTED, PredictionLog
from scoutless.ops.registry import is_registry, resolve_champion
from scoutless.service.answers import Outcome
from scoutless.service.backend import Answer, Readiness, ReloadFailed, TaskQuery
from scoutless.service.errors import ServiceError, server_error
from scoutless.service.micro_batch import LoopBatcher
from scoutless.service.pipeline import HistoryLookup, Pipeline, history_missing_flag
from scoutless.service.request_input import Prepared
from scoutless.service.schemas import PredictRequest, ReloadResponse
from scoutless.service.serving import ModelHolder, Served
from scoutless.service.task_fetch import LoopTaskFetch
from scoutless.service.telemetry import Metrics


@dataclass(frozen=True)
class Logged:
    """What a request's prediction-log rows say of it: its id, where its features came from
    (``POSTED`` or ``DATABASE``) and who asked (a token's name, a JWT's subject)."""

    request_id: str
    source: str
    caller: str | None

    def origin(self) -> dict[str, str | None]:
        caller = None if self.caller is None else self.caller[:CALLER_CHARS]
        return {"source": self.source, "caller": caller}


@dataclass
class LocalBackend:
    """The served bundle, the PanDA database reader and the prediction log of one app."""

    holder: ModelHolder
    metrics: Metrics
    settings: ServiceSettings
    reader: TaskReader | None = None
    log: PredictionLog | None = None
    writer: LoopGroupCommit | None = None
    batcher: LoopBatcher = field(default_factory=LoopBatcher)
    #: task reads from a database server, a loop turn's together (made on first use)
    fetch: LoopTaskFetch | None = None
    #: tasks read inline from a local SQLite file (a group of one each, in ``/metrics``)
    local_reads: int = 0

    def served(self) -> Served:
        """The model being served now; 503 while none is loaded."""
        served = self.holder.current
        if served is None:
            raise HTTPException(503, detail={"kind": "not_ready", "msg": "no model loaded"})
        return served

    async def predict(
        self, body: PredictRequest, request_id: str, caller: str | None = None
    ) -> Answer:
        served = self.served()
        logged = Logged(request_id, POSTED, caller)
        rows = body.rows()
        lookup = self._store_lookup(served.pipeline)
        alpha = body.alpha or self.settings.default_alpha
        # a few tasks take about a millisecond: cheaper on the event loop than a thread hop,
        # unless they wait on a database server's round trip for their history
        remote_store = lookup is not None and not (self.reader and self.reader.local)
        waits = remote_store and _lacks_history(body, served.pipeline)
        if len(rows) > current().inline_tasks or waits:
            run = functools.partial(
                served.pipeline.run, rows, taskparams=body.is_taskparams, targets=body.targets,
                policy=body.policy, alpha=alpha, request_id=request_id, history=lookup,
                layout=body.layout,
            )  # fmt: skip
            outcome = await run_in_threadpool(run)
            return await self._store_and_answer(served, outcome, logged, body.policy)
        pipeline = served.pipeline
        pipeline.check_targets(body.targets)
        start = time.perf_counter()
        prepared = pipeline.preprocess(rows, taskparams=body.is_taskparams, history=lookup)
        timings = {"preprocess": (time.perf_counter() - start) * 1e3}
        outcome = await self.batcher.outcome(
            pipeline, prepared, request_id, targets=body.targets, policy=body.policy,
            alpha=alpha, layout=body.layout,
        )  # fmt: skip
        outcome.timings_ms = {**timings, **outcome.timings_ms}
        return await self._store_and_answer(served, outcome, logged, body.policy)

    def _store_lookup(self, pipeline: Pipeline) -> HistoryLookup | None:
        """Where posted tasks without history features get them: the store, if the bundle
        uses history and the database has one (as ``GET /v1/tasks/{id}/prediction`` reads)."""
        return None if self.reader is None else self.reader.history_lookup(
            pipeline.history, pipeline.history_settings
        )

    async def task_prediction(
        self, jeditaskid: int, query: TaskQuery, request_id: str, caller: str | None = None
    ) -> Answer:
        served = self.served()
        served.pipeline.check_targets(query.targets)
        if self.reader is None:
            raise DatabaseUnavailable("no PanDA database configured (--db)")
        if self.reader.local:  # a local SQLite read is cheaper on the loop than a thread hop
            start = time.perf_counter()
            self.local_reads += 1
            inputs = self.reader.inputs(jeditaskid)
            fetch_ms = (time.perf_counter() - start) * 1e3
        else:  # a server's round trip may stall: off the loop, with this turn's other reads
            if self.fetch is None:  # the model groups wait for the reads in flight
                self.fetch = LoopTaskFetch(self.reader, on_settled=self.batcher.wake)
                self.batcher.coming = lambda: self.fetch.in_flight if self.fetch else 0
            inputs, fetch_ms = await self.fetch.inputs(jeditaskid)
        prepared, timings = self._prepare_task(served.pipeline, jeditaskid, inputs)
        timings = {"fetch": fetch_ms, **timings}
        outcome = await self.batcher.outcome(
            served.pipeline, prepared, request_id, targets=query.targets, policy=query.policy,
            alpha=query.alpha or self.settings.default_alpha,
        )  # fmt: skip
        outcome.timings_ms = {**timings, **outcome.timings_ms}
        logged = Logged(request_id, DATABASE, caller)
        return await self._store_and_answer(served, outcome, logged, query.policy)

    @staticmethod
    def _prepare_task(
        pipeline: Pipeline, jeditaskid: int, inputs: TaskInputs
    ) -> tuple[Prepared, dict]:
        """Features (the training code) and preprocess of a fetched task; timed."""
        fetched = time.perf_counter()
        checked = domain_checked(jeditaskid, features_of(*inputs), pipeline.domains)
        record = {**checked, "jeditaskid": jeditaskid}
        found = True
        if pipeline.history is not None:  # the store's rows came with the task's row
            history, found = task_history(
                inputs[0], pipeline.history, TASK_HISTORY_KEYS, pipeline.history_settings
            )
            record.update(history)
        computed = time.perf_counter()
        prepared = pipeline.preprocess([record])
        if not found:
            prepared.flags[0].append(history_missing_flag(pipeline.history))
        timings = {
            "features": (computed - fetched) * 1e3,
            "preprocess": (time.perf_counter() - computed) * 1e3,
        }
        return prepared, timings

    async def _store_and_answer(
        self, served: Served, outcome: Outcome, logged: Logged, policy: str
    ) -> Answer:
        """Commit the prediction-log rows, then answer (a prediction answered is one stored)."""
        start = time.perf_counter()
        request_id = logged.request_id
        if self.writer is not None and outcome.log_rows:
            origin = logged.origin()
            for row in outcome.log_rows:
                row.update(origin)
            await self.writer.committed(outcome.log_rows)
        outcome.timings_ms["log"] = (time.perf_counter() - start) * 1e3
        self.metrics.observe_stages(outcome.timings_ms)
        for target, counts in outcome.class_counts.items():
            self.metrics.count_predictions(target, counts)
        version = served.version
        targets = list(outcome.class_counts) or served.pipeline.targets
        return Answer(
            {
                "request_id": request_id,
                "model_version": version,
                "model_versions": dict.fromkeys(targets, version),
                "policy": policy,
                **outcome.answer_fields(),
                "errors": {},
                "timings_ms": outcome.timings_ms,
            }
        )

    async def model_info(self) -> dict[str, Any]:
        served = self.served()
        return {
            "mode": "local",
            "model_version": served.version,
            "targets": served.pipeline.targets,
            "features": [s.to_dict() for s in served.predictor.feature_specs],
            "manifest": served.predictor.manifest,
            # trained under other xgboost/torch/scikit-learn versions (the manifest's
            # ``libraries``): the sentence the load logged, else None
            "library_warning": getattr(served.predictor, "library_warning", None),
            # the HIMEM and long-queue loads the decision prices (source "none": load 0,
            # a bundle without room_loads.json and no allocation.room_loads)
            "room_loads": served.pipeline.site_decision.room_loads.info(),
        }

    async def reload(self, source: str | None) -> ReloadResponse:
        """Reload what is followed (``source`` None), or load an allowed folder
        (:meth:`allowed`) and make every worker follow it. Failures say nothing of the
        filesystem to the caller: the details are logged under an error id."""
        path = None if source is None else self.allowed(source)
        try:
            previous, served = await run_in_threadpool(self.holder.load, path)
        except (OSError, LookupError, ValueError) as exc:
            raise ReloadFailed(
                server_error("reload_failed", "cannot load that bundle", exc)["detail"][0]["msg"]
            ) from exc
        return ReloadResponse(
            previous_version=previous.version if previous else None,
            model_version=served.version,
            bundle=str(served.bundle_path),
        )

    def allowed(self, source: str) -> Path | None:
        """The folder to load for a reload naming ``source``; None: what is followed.

        A registry's service loads only its champion (promote another version, and every
        worker follows); otherwise the served folder or one under ``reload_roots``. The
        refusal is the same whether the path exists or not."""
        wanted = Path(os.path.realpath(Path(source).expanduser()))
        served_from = self.holder.followed()
        if served_from is not None and is_registry(served_from):
            if wanted not in {_real(served_from), _real(resolve_champion(served_from))}:
                raise ServiceError(
                    409, "follows_registry", "this service serves its registry's champion: "
                    "promote the version (scoutless registry promote) and every worker follows",
                )  # fmt: skip
            return None
        if served_from is not None and wanted == _real(served_from):
            return None
        roots = [_real(Path(r)) for r in self.settings.reload_roots]
        if not any(wanted != root and root in wanted.parents for root in roots):
            raise ServiceError(
                403, "reload_not_allowed", "reload loads the served bundle, or a bundle "
                "folder under Settings.service.reload_roots",
            )  # fmt: skip
        return wanted

    def readiness(self) -> Readiness:
        served = self.holder.current
        return Readiness(
            {"model": served is not None, "prediction_log": self.writer is not None},
            served.version if served else None,
        )

    async def close(self) -> None:
        if self.writer is not None:
            await self.writer.close()
        if self.fetch is not None:
            await asyncio.to_thread(self.fetch.close)
        for engine in (self.reader.engine if self.reader else None, self.log and self.log.engine):
            if engine is not None:
                engine.dispose()


def _lacks_history(body: PredictRequest, pipeline: Pipeline) -> bool:
    """Whether some posted task lacks history features (task parameters never carry them)."""
    names = pipeline.history.names if pipeline.history else []
    if not names or body.is_taskparams:
        return bool(names)
    return any(not isinstance(row, dict) or n not in row for row in body.rows() for n in names)


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))
