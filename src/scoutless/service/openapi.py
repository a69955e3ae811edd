"""What the OpenAPI document says beyond the routes' types: an example of every request
body and of every answer each route can give, status by status, and the bearer scheme.

The examples are the shapes the service sends (``errors.error_body`` for every 4xx, a
general message with an ``error_id`` for every 5xx); ``tests/service`` checks that each
route documents the statuses it returns.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from scoutless.service.errors import error_body

_TARGET = {
    "class_id": 1,
    "class_label": "1000-2000",
    "bin_range": [1000.0, 2000.0],
    "probabilities": [0.1, 0.7, 0.15, 0.05],
    "recommended_value": 2000.0,
    "unit": "MB per core",
    "panda_field": "ramCount",
    "confidence": 0.7,
    "p_sufficient": 0.8,
    "policy": "argmax",
    "alpha": None,
}
PREDICTION_EXAMPLE: dict[str, Any] = {
    "request_id": "9f1c2e7a4b5d4c3e8f0a1b2c3d4e5f60",
    "model_version": "v3",
    "model_versions": {"memory": "v3"},
    "policy": "argmax",
    "tasks": [{"index": 0, "jeditaskid": 123, "targets": {"memory": _TARGET}, "flags": []}],
    "errors": {},
    "timings_ms": {"preprocess": 0.4, "predict": 0.6, "aggregate": 0.1, "log": 1.2},
}
TASK_FEATURES_EXAMPLE = {
    "jeditaskid": 123,
    "processingtype": "simul",
    "transpath": "AtlasG4_tf.py",
    "corecount": 8,
    "prodsourcelabel": "managed",
}
REQUEST_EXAMPLES: dict[str, Any] = {
    "taskparams": {
        "summary": "PanDA task parameters, as submitted",
        "value": {
            "taskparams": [
                {
                    "jediTaskID": 123,
                    "taskName": "mc23.simul",
                    "processingType": "simul",
                    "transPath": "AtlasG4_tf.py",
                    "coreCount": 8,
                    "prodSourceLabel": "managed",
                }
            ],
            "policy": "value",
            "alpha": 0.05,
        },
    },
    "features": {
        "summary": "submission-time features (the bundle's schema: GET /v1/model)",
        "value": {"tasks": [TASK_FEATURES_EXAMPLE], "policy": "argmax"},
    },
}


def _error(status: int, kind: str, msg: str, loc: list[Any] | None = None) -> dict[str, Any]:
    body = error_body(kind, msg, loc or [])
    if status >= 500:
        body["detail"][0]["msg"] += " (error id 3f2a9c0d11e4b7a8; details in the server log)"
        body["error_id"] = "3f2a9c0d11e4b7a8"
    return {"content": {"application/json": {"example": body}}}


ERRORS: dict[int, tuple[str, dict[str, Any]]] = {
    401: ("no or unknown bearer token",
          _error(401, "unauthorized", "expected header 'Authorization: Bearer <token>'")),
    403: ("the token lacks the role (or, with no tokens configured, the caller is not local)",
          _error(403, "forbidden", "'monitoring' lacks the 'predict' role")),
    404: ("no such task in the PanDA database",
          _error(404, "task_not_found", "task 123 not found in jedi_tasks")),
    408: ("the request body did not arrive in time",
          _error(408, "body_timeout", "request body not received within 30.0s")),
    409: ("a gateway has no bundle of its own",
          _error(409, "http_error", "this instance is a gateway: reload its remotes")),
    413: ("the body or the batch is larger than allowed",
          _error(413, "body_too_large", "request body of 67108865 bytes or more; the limit is "
                 "67108864")),
    415: ("the body is not sent as JSON (Content-Type: application/json, body or not)",
          _error(415, "unsupported_media_type", "expected Content-Type: application/json")),
    421: ("the Host header is not a name this service answers under (service.allowed_hosts)",
          _error(421, "misdirected_request", "this service answers under the names of this "
                 "machine and service.allowed_hosts only")),
    422: ("a field is missing, malformed or out of range (every 4xx has this shape)",
          _error(422, "string_too_long", "String should have at most 64 characters",
                 ["body", "tasks", 0, "processingtype"])),
    500: ("an unexpected failure", _error(500, "internal_error", "internal error")),
    503: ("starting, too busy, or the database is unavailable",
          _error(503, "database_unavailable", "the database is unavailable or refused the write")),
}  # fmt: skip


def responses(*statuses: int, ok: Any = None) -> dict[int | str, dict[str, Any]]:
    """The ``responses=`` of a route: its 200 example (``ok``) and the given error statuses."""
    out: dict[int | str, dict[str, Any]] = {}
    if ok is not None:
        out[200] = {"content": {"application/json": {"example": ok}}}
    for status in statuses:
        description, content = ERRORS[status]
        out[status] = {"description": description, **content}
    return out


#: the statuses every authenticated /v1 route can give beside its own
GUARDED = (401, 403, 421, 500, 503)


def add_security_scheme(app: FastAPI) -> None:
    """Declare the bearer scheme; routes that need a role say so in their ``security``."""

    def schema() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = get_openapi(
                title=app.title, version=app.version, summary=app.summary, routes=app.routes
            )
            components = document.setdefault("components", {})
            components["securitySchemes"] = {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "a token from Settings.service.tokens_file (role predict, "
                    "read or admin) or an OIDC access token; none needed from loopback when "
                    "no token is configured",
                }
            }
            app.openapi_schema = document
        return app.openapi_schema

    app.openapi = schema  # type: ignore[method-assign]


def needs(role: str) -> dict[str, Any]:
    """``openapi_extra`` of a route that needs ``role``."""
    return {"security": [{"bearer": []}], "x-role": role}
