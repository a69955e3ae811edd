"""Gateway mode: fan a request out to per-target services and merge what comes back.

Each remote service hosts a subset of the targets (``scoutless serve --targets memory``).
The gateway sends every remote the same request restricted to its targets, waits at most
``timeout_s``, and answers with the targets that responded; each target that did not gets
an error object (``timeout``, ``unavailable``, ``http_error``) instead. Input errors (4xx)
are the same for every remote and are passed through unchanged.
"""

from __future__ import annotations

import asyncio
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import httpx
from fastapi import HTTPException

from scoutless.service.backend import Answer, Readiness, TaskQuery
from scoutless.service.schemas import PredictRequest, ReloadResponse


def parse_remotes(spec: str | None) -> dict[str, str]:
    """``memory=http://h:p,walltime=http://h:q`` → {target: base URL}."""
    remotes: dict[str, str] = {}
    for part in (spec or "").split(","):
        if not part.strip():
            continue
        target, sep, url = part.partition("=")
        if not sep or not target.strip() or not url.strip().startswith(("http://", "https://")):
            raise ValueError(f"--remote item {part!r}: expected TARGET=http://host:port")
        remotes[target.strip()] = url.strip().rstrip("/")
    return remotes


@dataclass
class RemoteAnswer:
    url: str
    targets: list[str]
    status: int | None = None
    body: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class PassThrough(Exception):
    """A remote refused the input (4xx): the gateway answers the same."""

    def __init__(self, status: int, body: Any) -> None:
        super().__init__(f"remote answered {status}")
        self.status = status
        self.body = body


class Gateway:
    def __init__(self, remotes: dict[str, str], timeout_s: float, token: str | None = None) -> None:
        if not remotes:
            raise ValueError("gateway needs at least one remote (TARGET=URL)")
        self.remotes = remotes
        self.timeout_s = timeout_s
        self.client = httpx.AsyncClient(
            headers={"Authorization": f"Bearer {token}"} if token else None,
            timeout=httpx.Timeout(timeout_s),
            limits=httpx.Limits(max_connections=256, max_keepalive_connections=64),
        )

    @property
    def targets(self) -> list[str]:
        return list(self.remotes)

    def by_url(self, targets: list[str] | None) -> dict[str, list[str]]:
        groups: dict[str, list[str]] = defaultdict(list)
        for target in targets or self.targets:
            groups[self.remotes[target]].append(target)
        return dict(groups)

    async def close(self) -> None:
        await self.client.aclose()

    async def _call(
        self, url: str, targets: list[str], method: str, path: str, **kwargs: Any
    ) -> RemoteAnswer:
        answer = RemoteAnswer(url, targets)
        try:
            response = await self.client.request(method, url + path, **kwargs)
        except httpx.TimeoutException as exc:
            answer.error = _error("timeout", f"no answer within {self.timeout_s}s: {exc!r}", url)
            return answer
        except httpx.TransportError as exc:
            answer.error = _error("unavailable", f"cannot reach: {exc!r}", url)
            return answer
        answer.status = response.status_code
        if 400 <= response.status_code < 500 and response.status_code not in (408, 429):
            raise PassThrough(response.status_code, response.json())
        if response.status_code != 200:
            answer.error = _error(
                "http_error", f"status {response.status_code}: {response.text[:300]}", url
            )
            return answer
        answer.body = response.json()
        return answer

    # -- the Backend interface (routes) ---------------------------------------------------
    # the remotes log their answers as asked by this gateway's token (remote_token)
    async def predict(
        self, body: PredictRequest, request_id: str, caller: str | None = None
    ) -> Answer:
        payload = body.model_dump(exclude_none=True)
        return _answer(await self.fan_out_predict(payload, body.targets))

    async def task_prediction(
        self, jeditaskid: int, query: TaskQuery, request_id: str, caller: str | None = None
    ) -> Answer:
        params: dict[str, Any] = {"policy": query.policy}
        if query.alpha:
            params["alpha"] = query.alpha
        return _answer(await self.fan_out_task(jeditaskid, params, query.targets))

    async def model_info(self) -> dict[str, Any]:
        return await self.models()

    async def reload(self, source: str | None) -> ReloadResponse:
        raise HTTPException(409, detail="this instance is a gateway: reload its remotes")

    def readiness(self) -> Readiness:
        return Readiness({"model": True, "prediction_log": True}, None)

    # -- fan-out ----------------------------------------------------------------------------
    async def fan_out_predict(
        self, body: dict[str, Any], targets: list[str] | None
    ) -> dict[str, Any]:
        """POST /v1/predict to every remote concerned, merged."""
        start = time.perf_counter()
        calls = [
            self._call(url, ts, "POST", "/v1/predict", json={**body, "targets": ts})
            for url, ts in self.by_url(targets).items()
        ]
        policy, layout = body.get("policy", "argmax"), body.get("layout", "tasks")
        return merge(await asyncio.gather(*calls), policy, start, layout=layout)

    async def fan_out_task(
        self, jeditaskid: int, params: dict[str, Any], targets: list[str] | None
    ) -> dict[str, Any]:
        start = time.perf_counter()
        path = f"/v1/tasks/{jeditaskid}/prediction"
        calls = [
            self._call(url, ts, "GET", path, params={**params, "targets": ",".join(ts)})
            for url, ts in self.by_url(targets).items()
        ]
        return merge(await asyncio.gather(*calls), params.get("policy", "argmax"), start)

    async def models(self) -> dict[str, Any]:
        calls = [self._call(url, ts, "GET", "/v1/model") for url, ts in self.by_url(None).items()]
        out: dict[str, Any] = {}
        for answer in await asyncio.gather(*calls, return_exceptions=True):
            if isinstance(answer, BaseException):
                continue
            out[answer.url] = answer.body if answer.body is not None else answer.error
        return {"mode": "gateway", "remotes": self.remotes, "models": out}


def _answer(merged: dict[str, Any]) -> Answer:
    """200 when some target answered, 503 when none did."""
    answered = merged["targets"] if merged.get("layout") == "columns" else merged["tasks"]
    return Answer(merged, 200 if answered else 503)


def _error(kind: str, message: str, remote: str) -> dict[str, Any]:
    return {"kind": kind, "message": message, "remote": remote}


def merge(
    answers: list[RemoteAnswer], policy: str, start: float, *, layout: str = "tasks"
) -> dict[str, Any]:
    """One response from the remotes' answers; failed targets listed under ``errors``."""
    errors: dict[str, Any] = {}
    versions: dict[str, str] = {}
    bodies: list[dict[str, Any]] = []
    for answer in answers:
        if answer.body is None:
            for target in answer.targets:
                errors[target] = answer.error
            continue
        bodies.append(answer.body)
        versions.update(answer.body.get("model_versions", {}))
        errors.update(answer.body.get("errors", {}))
    fields = _merge_columns(bodies) if layout == "columns" else _merge_tasks(bodies)
    return {
        "request_id": ",".join(body.get("request_id", "") for body in bodies),
        "model_version": ",".join(sorted(set(versions.values()))),
        "model_versions": versions,
        "policy": policy,
        **fields,
        "errors": errors,
        "timings_ms": {"fanout": (time.perf_counter() - start) * 1e3},
    }


def _merged_flags(mine: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return mine + [f for f in theirs if f not in mine]


def _merge_tasks(bodies: list[dict[str, Any]]) -> dict[str, Any]:
    """Each task's targets from every remote, in the tasks layout."""
    if not bodies:
        return {"tasks": []}
    first, *rest = bodies
    tasks = [dict(t, targets=dict(t["targets"])) for t in first["tasks"]]
    for body in rest:
        for mine, theirs in zip(tasks, body["tasks"], strict=True):
            mine["targets"].update(theirs["targets"])
            mine["flags"] = _merged_flags(mine["flags"], theirs["flags"])
    return {"tasks": tasks}


def _merge_columns(bodies: list[dict[str, Any]]) -> dict[str, Any]:
    """Every remote's targets side by side, in the columns layout."""
    if not bodies:
        return {"layout": "columns", "jeditaskids": [], "flags": [], "targets": {}}
    first, *rest = bodies
    targets, flags = dict(first["targets"]), list(first["flags"])
    for body in rest:
        targets.update(body["targets"])
        flags = [_merged_flags(m, t) for m, t in zip(flags, body["flags"], strict=True)]
    return {
        "layout": "columns",
        "jeditaskids": first["jeditaskids"],
        "flags": flags,
        "targets": targets,
    }
