"""Python client of the scoutless service, sync (:class:`Client`) and async (:class:`AsyncClient`).

Both speak the same API and return the decoded JSON bodies; a refused request raises
:class:`ServiceError` carrying the status and the service's ``detail``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import httpx


class ServiceError(RuntimeError):
    def __init__(self, status: int, detail: Any, url: str) -> None:
        super().__init__(f"{url}: HTTP {status}: {detail}")
        self.status = status
        self.detail = detail


def _predict_body(
    tasks: Sequence[Mapping[str, Any]] | None,
    taskparams: Sequence[Mapping[str, Any] | str] | None,
    policy: str | None,
    alpha: float | None,
    targets: Sequence[str] | None,
    layout: str = "tasks",
) -> dict[str, Any]:
    if (tasks is None) == (taskparams is None):
        raise ValueError("give exactly one of tasks= or taskparams=")
    body: dict[str, Any] = {"policy": policy} if policy else {}  # None: the server's default
    if tasks is not None:
        body["tasks"] = [dict(t) for t in tasks]
    else:
        body["taskparams"] = list(taskparams or [])
    if alpha is not None:
        body["alpha"] = alpha
    if targets:
        body["targets"] = list(targets)
    if layout != "tasks":
        body["layout"] = layout
    return body


def _task_params(
    policy: str | None, alpha: float | None, targets: Sequence[str] | None
) -> dict[str, Any]:
    params: dict[str, Any] = {"policy": policy} if policy else {}
    if alpha is not None:
        params["alpha"] = alpha
    if targets:
        params["targets"] = ",".join(targets)
    return params


def _decode(response: httpx.Response) -> Any:
    if response.status_code >= 400:
        try:
            detail = response.json().get("detail", response.text)
        except ValueError:
            detail = response.text
        raise ServiceError(response.status_code, detail, str(response.url))
    return response.json()


class Client:
    """Blocking client: ``Client("http://127.0.0.1:8000").predict([features])``."""

    def __init__(
        self, base_url: str, *, timeout: float = 10.0, token: str | None = None, **httpx_kwargs: Any
    ) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.Client(
            base_url=base_url, timeout=timeout, headers=headers, **httpx_kwargs
        )

    def predict(
        self,
        tasks: Sequence[Mapping[str, Any]] | None = None,
        *,
        taskparams: Sequence[Mapping[str, Any] | str] | None = None,
        policy: str | None = None,
        alpha: float | None = None,
        targets: Sequence[str] | None = None,
        layout: str = "tasks",
    ) -> dict[str, Any]:
        """``layout="columns"``: per target one list per field over the tasks (batches)."""
        body = _predict_body(tasks, taskparams, policy, alpha, targets, layout)
        return _decode(self._http.post("/v1/predict", json=body))  # type: ignore[no-any-return]

    def predict_task(
        self,
        jeditaskid: int,
        *,
        policy: str | None = None,
        alpha: float | None = None,
        targets: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        params = _task_params(policy, alpha, targets)
        return _decode(self._http.get(f"/v1/tasks/{jeditaskid}/prediction", params=params))  # type: ignore[no-any-return]

    def fill_taskparams(
        self,
        params: Mapping[str, Any],
        *,
        policy: str | None = None,
        alpha: float | None = None,
        skip_policies: Sequence[str] = ("risk", "safe", "value", "cost"),
    ) -> dict[str, Any]:
        """The task parameters with ``skipScout`` and ``ramCount``/``ramUnit``, ``cpuTime``/
        ``cpuTimeUnit``, ``ioIntensity``/``ioIntensityUnit`` set from the prediction under
        ``policy`` (None: the server's default): what a submitter passes to panda-client
        (PanDA unchanged)."""
        import time

        from scoutless.jedi.messages import fill_taskparams

        body = self.predict(taskparams=[dict(params)], policy=policy, alpha=alpha)
        task = body["tasks"][0]
        version = str(body["model_version"])
        policy = policy or next(iter(task["targets"].values()))["policy"]  # as answered
        return fill_taskparams(
            params, task["targets"], version, policy, skip_policies, time.time(), task.get("scout")
        )

    def model(self) -> dict[str, Any]:
        return _decode(self._http.get("/v1/model"))  # type: ignore[no-any-return]

    def ready(self) -> bool:
        return self._http.get("/readyz").status_code == 200

    def reload(self, bundle: str | None = None) -> dict[str, Any]:
        return _decode(self._http.post("/v1/admin/reload", json={"bundle": bundle}))  # type: ignore[no-any-return]

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class AsyncClient:
    """Asyncio client with the same methods as :class:`Client`, awaited."""

    def __init__(
        self, base_url: str, *, timeout: float = 10.0, token: str | None = None, **httpx_kwargs: Any
    ) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = httpx.AsyncClient(
            base_url=base_url, timeout=timeout, headers=headers, **httpx_kwargs
        )

    async def predict(
        self,
        tasks: Sequence[Mapping[str, Any]] | None = None,
        *,
        taskparams: Sequence[Mapping[str, Any] | str] | None = None,
        policy: str | None = None,
        alpha: float | None = None,
        targets: Sequence[str] | None = None,
        layout: str = "tasks",
    ) -> dict[str, Any]:
        """``layout="columns"``: per target one list per field over the tasks (batches)."""
        body = _predict_body(tasks, taskparams, policy, alpha, targets, layout)
        return _decode(await self._http.post("/v1/predict", json=body))  # type: ignore[no-any-return]

    async def predict_task(
        self,
        jeditaskid: int,
        *,
        policy: str | None = None,
        alpha: float | None = None,
        targets: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        params = _task_params(policy, alpha, targets)
        response = await self._http.get(f"/v1/tasks/{jeditaskid}/prediction", params=params)
        return _decode(response)  # type: ignore[no-any-return]

    async def model(self) -> dict[str, Any]:
        return _decode(await self._http.get("/v1/model"))  # type: ignore[no-any-return]

    async def ready(self) -> bool:
        return (await self._http.get("/readyz")).status_code == 200

    async def reload(self, bundle: str | None = None) -> dict[str, Any]:
        response = await self._http.post("/v1/admin/reload", json={"bundle": bundle})
        return _decode(response)  # type: ignore[no-any-return]

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
