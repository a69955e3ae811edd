"""Prometheus metrics of one app, on its own registry (several apps can live in one process).

The request middleware is plain ASGI (no BaseHTTPMiddleware) so it costs microseconds.
Routes are labelled by their template (``/v1/tasks/{jeditaskid}/prediction``), never by
the raw path, to keep label cardinality bounded. Each labelled child is looked up once and
kept (``labels()`` hashes its labels on every call, and a request touches many).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    Info,
    generate_latest,
)
from prometheus_client.core import CounterMetricFamily
from starlette.types import ASGIApp, Message, Receive, Scope, Send

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0)


class Metrics:
    """Requests, latency by route and pipeline stage, errors by kind, predictions by class."""

    content_type = CONTENT_TYPE_LATEST

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter(
            "scoutless_requests", "HTTP requests", ["route", "method", "status"], registry=r
        )
        self.latency = Histogram(
            "scoutless_request_latency_seconds",
            "HTTP request latency",
            ["route"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.stage_latency = Histogram(
            "scoutless_stage_latency_seconds",
            "Latency of one pipeline stage (fetch, features, preprocess, predict, aggregate, log)",
            ["stage"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        self.errors = Counter("scoutless_errors", "Errors by kind", ["kind"], registry=r)
        self.predictions = Counter(
            "scoutless_predictions", "Predictions served", ["target", "class_label"], registry=r
        )
        self.model = Info("scoutless_model", "The bundle being served", registry=r)
        self._children: dict[tuple[Any, ...], Any] = {}
        self.groups = GroupCounts()
        r.register(self.groups)

    def child(self, metric: Any, *labels: str) -> Any:
        """``metric.labels(*labels)``, looked up once (the label sets are few and bounded)."""
        key = (id(metric), *labels)
        found = self._children.get(key)
        if found is None:
            found = self._children[key] = metric.labels(*labels)
        return found

    def observe_stages(self, timings_ms: Mapping[str, float]) -> None:
        for stage, ms in timings_ms.items():
            self.child(self.stage_latency, stage).observe(ms / 1000.0)

    def count_predictions(self, target: str, counts: Mapping[str, int]) -> None:
        for label, n in counts.items():
            if n:
                self.child(self.predictions, target, label).inc(n)

    def set_model(self, version: str, **extra: str) -> None:
        self.model.info({"version": version, **extra})

    def error(self, kind: str) -> None:
        self.errors.labels(kind).inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)


class GroupCounts:
    """How many groups each grouping stage formed and how many items they held, read from
    the stages' own counters when scraped (nothing on the hot path). Their ratio, the mean
    group, is the service's main lever on CPU per request: a group of models and decisions
    costs not much more for four requests than for one (``micro_batch``), nor a commit for
    eight requests' rows.

    ``scoutless_groups_total{stage}`` and ``scoutless_group_items_total{stage}``, stages
    ``model`` (requests through ``Pipeline.run_many`` at once), ``log`` (requests whose rows
    one commit wrote) and ``fetch`` (tasks one read of the PanDA database fetched)."""

    def __init__(self) -> None:
        self.stages: dict[str, Callable[[], tuple[int, int]]] = {}

    def watch(self, stage: str, counts: Callable[[], tuple[int, int]]) -> None:
        """Report ``counts()`` (groups, items so far) under ``stage``."""
        self.stages[stage] = counts

    def collect(self) -> Iterator[CounterMetricFamily]:
        groups = CounterMetricFamily(
            "scoutless_groups", "Groups formed, by grouping stage (model, log, fetch)",
            labels=["stage"],
        )  # fmt: skip
        items = CounterMetricFamily(
            "scoutless_group_items",
            "Requests (model, log) or task reads (fetch) in those groups",
            labels=["stage"],
        )
        for stage, counts in list(self.stages.items()):
            n_groups, n_items = counts()
            groups.add_metric([stage], n_groups)
            items.add_metric([stage], n_items)
        yield groups
        yield items


class MetricsMiddleware:
    """Count and time every request under its route template."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def send_wrapper(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            route = scope.get("route")
            name = getattr(route, "path", None) or "unmatched"
            metrics = self.metrics
            metrics.child(metrics.requests, name, scope["method"], str(status)).inc()
            metrics.child(metrics.latency, name).observe(time.perf_counter() - start)
