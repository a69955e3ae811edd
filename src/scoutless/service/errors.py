"""One error shape for every answer that is not a 2xx.

Every 4xx body is FastAPI's validation shape, ``{"detail": [{"loc", "msg", "type"}]}``, so a
client parses one thing whatever went wrong (a field, a token, a size). A 5xx body says what
failed in general terms and carries an ``error_id``; the details (a database's message, which
may hold SQL, other callers' values, the server's address) go to the server log under that
id, never to the caller.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Sequence
from typing import Any

import orjson
from starlette.types import Send

log = logging.getLogger("scoutless.service")


class ServiceError(Exception):
    """An answer other than 2xx, with its status, kind and message (and header fields)."""

    def __init__(
        self,
        status: int,
        kind: str,
        msg: str,
        loc: Sequence[str | int] = (),
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(msg)
        self.status, self.kind, self.msg, self.loc = status, kind, msg, list(loc)
        self.headers = headers


def error_item(kind: str, msg: str, loc: Sequence[str | int] = ()) -> dict[str, Any]:
    return {"loc": list(loc), "msg": msg, "type": kind}


def error_body(kind: str, msg: str, loc: Sequence[str | int] = ()) -> dict[str, Any]:
    return {"detail": [error_item(kind, msg, loc)]}


async def send_error(
    send: Send, status: int, kind: str, msg: str, headers: dict[str, str] | None = None
) -> None:
    """Answer ``status`` with the error body straight through ASGI ``send`` (the plain
    middlewares' refusals, before any route)."""
    body = orjson.dumps(error_body(kind, msg))
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    raw += [(k.encode(), v.encode()) for k, v in (headers or {}).items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


def log_error(kind: str, exc: BaseException | str) -> str:
    """Log ``exc`` under a fresh error id, and return the id (what the caller is told)."""
    error_id = uuid.uuid4().hex[:16]
    log.error("error %s (%s): %s", error_id, kind, exc, exc_info=isinstance(exc, BaseException))
    return error_id


def server_error(kind: str, general: str, exc: BaseException | str) -> dict[str, Any]:
    """A 5xx body: ``general`` for the caller; ``exc`` logged under a fresh error id."""
    error_id = log_error(kind, exc)
    body = error_body(kind, f"{general} (error id {error_id}; details in the server log)")
    return {**body, "error_id": error_id}


def clean_validation_errors(errors: Sequence[Any]) -> list[dict[str, Any]]:
    """pydantic's errors without what they echo of the input (``input``, ``ctx``, ``url``):
    a 50 MB field must not come back in the answer, nor a neighbour's value in a log."""
    return [
        error_item(e.get("type", "value_error"), e.get("msg", ""), e.get("loc", ())) for e in errors
    ]
