"""Assemble the FastAPI app: settings, lifespan (bundle, databases, writer), routers, errors.

``create_app`` only wires pieces together; each piece lives in its own module. One app can
serve a whole bundle, a subset of its targets (``targets=["memory"]``), or act as a
gateway to per-target services (``remote={"memory": "http://…"}``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import json
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect

from scoutless.atomic import sweep_leftovers
from scoutless.config import Settings, get_settings
from scoutless.fast_paths import FastPaths
from scoutless.fast_paths import configure as configure_fast_paths
from scoutless.history.panda_db import DatabaseUnavailable, TaskNotFound, make_engine
from scoutless.history.task_reader import BadTaskRecord, TaskReader
from scoutless.layout import is_registry
from scoutless.ops.log_commit import LoopGroupCommit
from scoutless.ops.prediction_log import PredictionLog
from scoutless.ops.registry import sweep_registry
from scoutless.service.auth import Authenticator
from scoutless.service.errors import (
    ServiceError,
    clean_validation_errors,
    error_body,
    error_item,
    log,
    server_error,
)
from scoutless.service.gateway import Gateway, PassThrough, parse_remotes
from scoutless.service.hot_routes import HotRoutes
from scoutless.service.limits import LimitsMiddleware
from scoutless.service.local import LocalBackend
from scoutless.service.micro_batch import LoopBatcher
from scoutless.service.openapi import add_security_scheme
from scoutless.service.pipeline import Predictor
from scoutless.service.request_guard import RequestGuard
from scoutless.service.request_input import InputError, InputErrors
from scoutless.service.routes import admin, health, model, predict
from scoutless.service.serving import BundleLoader, ModelHolder, load_bundle_default
from scoutless.service.state import ServiceState
from scoutless.service.telemetry import GroupCounts, Metrics, MetricsMiddleware
from scoutless.targets.spec import TARGET_NAMES

#: allocations between collections of the youngest generation (Python's default: 700)
GC_YOUNG_THRESHOLD = 20_000

#: seconds a thread may hold the GIL while another waits (Python's default: 5 ms). The
#: prediction-log writer and the database reads run on threads: at the default, a quick
#: commit waits for the busy event loop to let its thread report it, far longer than it took
SWITCH_INTERVAL_S = 0.0005

#: Environment variable through which ``scoutless serve --workers N`` passes its options.
OPTIONS_ENV = "SCOUTLESS_SERVE_OPTIONS"


def create_app(
    bundle: str | Path | None = None,
    *,
    settings: Settings | None = None,
    db_url: str | None = None,
    log_db_url: str | None = None,
    targets: Sequence[str] | None = None,
    remote: dict[str, str] | str | None = None,
    predictor: Predictor | None = None,
    loader: BundleLoader = load_bundle_default,
    log_predictions: bool = True,
    poll_s: float = 5.0,
    pointer: str | None = None,
) -> FastAPI:
    """The service app.

    ``bundle`` is a bundle folder or a registry folder (its champion is served and followed
    every ``poll_s`` seconds); ``predictor`` serves an already-loaded bundle instead.
    ``db_url`` is the PanDA database (default: the settings'); the prediction log goes to
    ``log_db_url`` (default: the same database). A bundle folder is followed too (one
    replaced in place is reloaded), and ``pointer`` is the file through which the workers
    of one service share what an admin reload chose (``serve --workers N``).
    """
    settings = settings or get_settings()
    remotes = parse_remotes(remote) if isinstance(remote, str) else dict(remote or {})
    if not remotes and bundle is None and predictor is None:
        raise ValueError("create_app needs a bundle, a predictor or remotes")
    state = ServiceState(settings=settings, metrics=Metrics(), auth=Authenticator(settings.service))
    history_url = db_url or settings.resolved_db_url()

    start_local = functools.partial(
        _start_local,
        state,
        Path(bundle) if bundle is not None else None,
        predictor,
        loader=loader,
        targets=targets,
        history_url=history_url,
        log_url=(log_db_url or history_url) if log_predictions else None,
        pointer=Path(pointer) if pointer else None,
    )
    follow = bundle is not None
    lifespan = _lifespan(state, remotes, start_local, targets, poll_s if follow else None)
    app = FastAPI(
        title="scoutless",
        summary="Submission-time predictions of PanDA task memory, CPU, I/O and walltime",
        version="1",
        lifespan=lifespan,
    )
    app.state.service = state
    app.add_middleware(HotRoutes)  # innermost: inside the limits and the metrics
    app.add_middleware(LimitsMiddleware, settings=settings.service)
    loopback_mode = state.auth.open_to_loopback  # non-JSON writes, foreign Host names: refused
    app.add_middleware(RequestGuard, settings=settings.service, loopback_mode=loopback_mode)
    app.add_middleware(MetricsMiddleware, metrics=state.metrics)
    for router in (predict.router, model.router, health.router, admin.router):
        app.include_router(router)
    _install_error_handlers(app, state)
    add_security_scheme(app)
    return app


def _lifespan(
    state: ServiceState,
    remotes: dict[str, str],
    start_local: Callable[[], Awaitable[LocalBackend]],
    targets: Sequence[str] | None,
    poll_s: float | None,
) -> Callable[[FastAPI], contextlib.AbstractAsyncContextManager[None]]:
    """Startup and shutdown: the backend (gateway or local), the champion poller."""

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        n_targets = len(targets or remotes or TARGET_NAMES)
        state.executor = ThreadPoolExecutor(max(2, n_targets), thread_name_prefix="target")
        poller: asyncio.Task[None] | None = None
        thresholds, torch_threads = gc.get_threshold(), None
        switch = sys.getswitchinterval()
        try:
            if remotes:
                service = state.settings.service
                state.backend = Gateway(remotes, service.remote_timeout_s, service.remote_token)
            else:
                local = await start_local()
                torch_threads = _set_torch_threads(state.settings.service.torch_threads)
                if poll_s is not None:  # follow the champion, the bundle, the pointer
                    poller = asyncio.create_task(local.holder.follow_champion(poll_s))
            # what startup loaded (libraries, the bundle) is never garbage: keep the cyclic
            # collector from walking it again on every collection; a large batch allocates
            # many dicts and lists, which at the default threshold set off many
            # collections, the older generations' walking every request in flight: fewer,
            # larger ones cost less CPU per batch
            gc.freeze()
            gc.set_threshold(GC_YOUNG_THRESHOLD, 20, 20)
            sys.setswitchinterval(SWITCH_INTERVAL_S)
            yield
        finally:
            if poller is not None:
                poller.cancel()
            if state.backend is not None:
                await state.backend.close()
            state.executor.shutdown(wait=False, cancel_futures=True)
            gc.set_threshold(*thresholds)
            sys.setswitchinterval(switch)
            _set_torch_threads(torch_threads)  # the caller's (tests run apps in process)

    return lifespan


async def _start_local(
    state: ServiceState,
    bundle: Path | None,
    predictor: Predictor | None,
    *,
    loader: BundleLoader,
    targets: Sequence[str] | None,
    history_url: str,
    log_url: str | None,
    pointer: Path | None = None,
) -> LocalBackend:
    """Load the bundle, open the PanDA database reader and the prediction log (if any)."""
    assert state.executor is not None
    holder = ModelHolder(
        bundle,
        targets=targets,
        executor=state.executor,
        loader=loader,
        safe_recall=state.settings.service.default_safe_recall,
        on_swap=lambda s: state.metrics.set_model(s.version),
        pointer=pointer,
        settings=state.settings,
    )
    service = state.settings.service
    configure_fast_paths(FastPaths.from_settings(state.settings))  # before the batcher
    batcher = LoopBatcher(gather_turns=service.gather_turns)
    local = LocalBackend(holder, state.metrics, service, batcher=batcher)
    _watch_groups(state.metrics.groups, local)
    state.backend = local  # from here on, shutdown closes what follows
    if predictor is not None:
        holder.install(holder.build(predictor, None))
    else:
        if bundle is not None:
            await asyncio.to_thread(_sweep_leftovers, bundle)
        await asyncio.to_thread(holder.load)
    engine = make_engine(
        history_url, create_dirs=False, for_reads=True, create=False,
        schema=state.settings.db_schema,
    )  # fmt: skip
    local.reader = TaskReader(engine)  # a mistyped SQLite path stays missing: /readyz says so
    if log_url is not None:
        synchronous = state.settings.service.log_synchronous
        local.log = await asyncio.to_thread(PredictionLog, log_url, synchronous=synchronous)
        local.writer = LoopGroupCommit(local.log)
    return local


def _sweep_leftovers(bundle: Path) -> None:
    """Remove what writers killed mid-write left in the served registry or beside the
    served bundle (staging no live writer holds)."""
    removed = sweep_registry(bundle) if is_registry(bundle) else sweep_leftovers(bundle)
    if removed:
        log.warning("removed %d staging folders and files that killed writers left: %s",
                    len(removed), ", ".join(p.name for p in removed[:5]))  # fmt: skip


def _watch_groups(groups: GroupCounts, local: LocalBackend) -> None:
    """The service's three grouping stages in ``/metrics`` (the writer and the reader
    start later, or never: read when scraped)."""
    batcher = local.batcher
    groups.watch("model", lambda: (batcher.groups, batcher.requests))
    groups.watch("log", lambda: (w.groups, w.requests) if (w := local.writer) else (0, 0))

    def fetched() -> tuple[int, int]:  # a local SQLite file is read inline: a task a group
        f, inline = local.fetch, local.local_reads
        return (f.groups + inline, f.reads + inline) if f else (inline, inline)

    groups.watch("fetch", fetched)


def _install_error_handlers(app: FastAPI, state: ServiceState) -> None:
    """Every 4xx in one shape (``errors.error_body``); every 5xx general, with an error id."""

    def error(status: int, kind: str, body: dict[str, Any], headers: Any = None) -> JSONResponse:
        state.metrics.error(kind)
        return JSONResponse(body, status_code=status, headers=headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(_: Request, exc: RequestValidationError) -> JSONResponse:
        return error(422, "invalid_request", {"detail": clean_validation_errors(exc.errors())})

    @app.exception_handler(InputError)
    async def _input(_: Request, exc: InputError) -> JSONResponse:
        return error(422, "invalid_features", {"detail": [exc.detail()]})

    @app.exception_handler(InputErrors)
    async def _inputs(_: Request, exc: InputErrors) -> JSONResponse:
        return error(422, "invalid_features", {"detail": [e.detail() for e in exc.errors]})

    @app.exception_handler(BadTaskRecord)
    async def _bad_record(_: Request, exc: BadTaskRecord) -> JSONResponse:
        return error(422, "bad_task_record", error_body("bad_task_record", str(exc)))

    @app.exception_handler(TaskNotFound)
    async def _not_found(_: Request, exc: TaskNotFound) -> JSONResponse:
        return error(404, "task_not_found", error_body("task_not_found", str(exc)))

    @app.exception_handler(PassThrough)
    async def _remote_refused(_: Request, exc: PassThrough) -> JSONResponse:
        return error(exc.status, "remote_refused", exc.body)

    @app.exception_handler(ServiceError)
    async def _service(_: Request, exc: ServiceError) -> JSONResponse:
        return error(exc.status, exc.kind, error_body(exc.kind, exc.msg, exc.loc), exc.headers)

    @app.exception_handler(StarletteHTTPException)
    async def _http(_: Request, exc: StarletteHTTPException) -> JSONResponse:
        detail = exc.detail
        item = (
            error_item(detail.get("kind", "http_error"), str(detail.get("msg", "")))
            if isinstance(detail, dict)
            else error_item("http_error", str(detail))
        )
        return error(exc.status_code, item["type"], {"detail": [item]}, exc.headers)

    _install_server_handlers(app, error)


def _install_server_handlers(app: FastAPI, error: Callable[..., JSONResponse]) -> None:
    """Failures on the server's side (general, with an error id) and lost clients."""

    @app.exception_handler(DatabaseUnavailable)
    async def _db(_: Request, exc: DatabaseUnavailable) -> JSONResponse:
        general = "the database is unavailable or refused the write"
        return error(
            503, "database_unavailable", server_error("database_unavailable", general, exc)
        )

    @app.exception_handler(ClientDisconnect)
    async def _gone(request: Request, _: ClientDisconnect) -> JSONResponse:
        client = request.client.host if request.client else "?"
        log.info("client %s disconnected before its request body was read", client)
        return error(400, "client_disconnected", error_body("client_disconnected", "gone"))

    @app.exception_handler(Exception)
    async def _internal(_: Request, exc: Exception) -> JSONResponse:
        return error(500, "internal_error", server_error("internal_error", "internal error", exc))


def app_from_env() -> FastAPI:
    """Factory for ``uvicorn --factory`` workers: options come as JSON in ``OPTIONS_ENV``."""
    options: dict[str, Any] = json.loads(os.environ.get(OPTIONS_ENV, "{}"))
    return create_app(**options)


def _set_torch_threads(n: int | None) -> int | None:
    """Give torch ``n`` intra-op threads, if a bundle loaded it; returns the previous count
    (None: nothing changed). The targets of a batch already run in parallel on the
    executor, one thread each: torch's default pool (one thread per core) on each of them
    oversubscribes the cores, with N workers on N cores most of all."""
    torch = sys.modules.get("torch")
    if n is None or torch is None:
        return None
    previous = int(torch.get_num_threads())
    torch.set_num_threads(n)
    return previous
