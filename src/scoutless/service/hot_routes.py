"""The two prediction routes answered straight from the middleware stack.

FastAPI's way to a prediction route cost about as much CPU per request as the whole of
the bare FastAPI app the service is compared with (``benchmarks/serve.py --only-vs-bare``):
the router's matching, the request's exception wrapper and two ``AsyncExitStack`` layers,
the dependency solver (on ``GET /v1/tasks/{id}/prediction``, pydantic's validation of the
path and query parameters). Those layers do nothing for the two routes whose parameters
need no parsing, so this middleware skips them.

:class:`HotRoutes` calls the same route functions itself, for the requests whose
parameters need no parsing: ``POST /v1/predict``, and ``GET /v1/tasks/{id}/prediction``
with a plain decimal id within int64 and no query string. Errors go to the app's own
exception handlers, looked up as Starlette's ``ExceptionMiddleware`` does, and what no
handler takes goes up to the server-error middleware, as without this; the route is set in the
scope, so the metrics label it by its template. Every other request (another path or
method, a query string, an id FastAPI would have to parse or refuse) takes FastAPI's way,
so each answer, status and error body is the one FastAPI gives. FastAPI's own
OpenTelemetry spans of dependency solving, if someone turns them on, do not cover the two
routes.
"""

from __future__ import annotations

import inspect
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import ASGIApp, Receive, Scope, Send

from scoutless.service.request_input import INT64_MAX
from scoutless.service.routes import predict

PREDICT_PATH = "/v1/predict"
TASK_PREFIX, TASK_SUFFIX = "/v1/tasks/", "/prediction"
#: digits of the largest int64 (a longer id is FastAPI's to refuse)
ID_DIGITS = len(str(INT64_MAX))


class HotRoutes:
    """Answers the prediction routes' plain requests (the innermost of the app's
    middleware, inside the limits and the metrics); passes every other request on."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        routes = {getattr(r, "endpoint", None): r for r in predict.router.routes}
        self.predict_route = routes[predict.predict]
        self.task_route = routes[predict.task_prediction]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("root_path"):
            await self.app(scope, receive, send)
            return
        path, method = scope["path"], scope["method"]
        jeditaskid = None
        if path == PREDICT_PATH and method == "POST":
            scope["route"] = self.predict_route
        elif method == "GET" and not scope["query_string"] and path.startswith(TASK_PREFIX):
            jeditaskid = _plain_id(path)
            if jeditaskid is None:
                await self.app(scope, receive, send)
                return
            scope["route"] = self.task_route
            scope["path_params"] = {"jeditaskid": path[len(TASK_PREFIX) : -len(TASK_SUFFIX)]}
        else:
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive, send)
        try:
            if jeditaskid is None:
                response = await predict.predict(request)
            else:
                response = await predict.task_prediction(jeditaskid, request)
        except Exception as exc:
            handler = _handler(scope["app"].exception_handlers, exc)
            if handler is None:
                raise
            if inspect.iscoroutinefunction(handler):
                response = await handler(request, exc)
            else:
                response = await run_in_threadpool(handler, request, exc)
            exc.__traceback__ = None  # as Starlette: a reused exception keeps no traceback
        await response(scope, receive, send)


def _plain_id(path: str) -> int | None:
    """The id of ``/v1/tasks/{id}/prediction`` when it is plain decimal digits within
    int64 (what FastAPI's validation takes as is); None for anything else."""
    if not path.endswith(TASK_SUFFIX):
        return None
    text = path[len(TASK_PREFIX) : -len(TASK_SUFFIX)]
    if not 0 < len(text) <= ID_DIGITS or not text.isascii() or not text.isdigit():
        return None
    value = int(text)
    return value if value <= INT64_MAX else None


def _handler(handlers: dict[Any, Any], exc: Exception) -> Any:
    """The app's handler of ``exc``, as Starlette's ``ExceptionMiddleware`` finds it: an
    HTTP exception's status first, then the exception's classes in order. The handler of
    ``Exception`` (or of 500) is the server-error middleware's, never taken here."""
    if isinstance(exc, HTTPException) and exc.status_code != 500:
        found = handlers.get(exc.status_code)
        if found is not None:
            return found
    for cls in type(exc).__mro__:
        if cls is Exception:
            return None
        if cls in handlers:
            return handlers[cls]
    return None
