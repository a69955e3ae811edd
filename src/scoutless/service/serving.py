"""The model being served, swapped atomically on reload.

A request reads ``holder.current`` once and keeps that object to the end, so a reload
(which builds the new pipeline completely before one attribute assignment) never fails
or mixes versions inside a request.

Every worker of a service follows the same thing: a registry's champion pointer, or the
served bundle folder's manifest (a bundle replaced in place is noticed), or, once an admin
reloaded another folder, the shared pointer file (``pointer``) that reload wrote, which
each worker's poller reads. A reload never pins one worker to a path the others ignore.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path

from scoutless.config import Settings
from scoutless.layout import BundleError, read_manifest
from scoutless.ops.registry import resolve_champion
from scoutless.service.pipeline import Pipeline, Predictor

log = logging.getLogger("scoutless.service")

BundleLoader = Callable[[Path], Predictor]


def load_bundle_default(path: Path) -> Predictor:
    """The bundle, and the compiled trees' walk and cost grid
    (:mod:`scoutless.models.tree_walk`, :mod:`scoutless.allocation.cost_kernels`):
    compiled, or read from numba's cache, here at start, never on a request."""
    from scoutless.allocation import cost_kernels
    from scoutless.bundle import load_bundle  # heavy (torch, xgboost): load when serving
    from scoutless.models import tree_walk

    tree_walk.load()
    cost_kernels.load()
    return load_bundle(path)  # type: ignore[return-value]


@dataclass(frozen=True)
class Served:
    """One loaded bundle and its pipeline."""

    pipeline: Pipeline
    bundle_path: Path | None

    @property
    def predictor(self) -> Predictor:
        return self.pipeline.predictor

    @property
    def version(self) -> str:
        return self.pipeline.version


class ModelHolder:
    """Loads bundles (directly or through a registry's champion pointer) and swaps them."""

    def __init__(
        self,
        source: Path | None,
        *,
        targets: Sequence[str] | None,
        executor: Executor,
        loader: BundleLoader = load_bundle_default,
        safe_recall: float = 0.9,
        on_swap: Callable[[Served], None] | None = None,
        pointer: Path | None = None,
        settings: Settings,
    ) -> None:
        self.source = source
        self.pointer = pointer
        self.targets = list(targets) if targets else None
        self.executor = executor
        self.loader = loader
        self.safe_recall = safe_recall
        self.settings = settings
        self.on_swap = on_swap
        self.current: Served | None = None
        self._lock = threading.Lock()

    def build(self, predictor: Predictor, bundle_path: Path | None) -> Served:
        pipeline = Pipeline(predictor, self.targets, self.executor, safe_recall=self.safe_recall,
                            settings=self.settings)  # fmt: skip
        return Served(pipeline, bundle_path)

    def install(self, served: Served) -> Served | None:
        previous, self.current = self.current, served
        if self.on_swap is not None:
            self.on_swap(served)
        return previous

    def load(self, source: Path | None = None) -> tuple[Served | None, Served]:
        """Load ``source`` (default: the configured one, re-resolved) and swap it in; a new
        source is written to the shared pointer, so every worker follows it."""
        with self._lock:
            source = Path(source) if source is not None else self.followed()
            if source is None:
                raise ValueError("no bundle configured: pass a bundle or registry folder")
            bundle_path = resolve_champion(source)
            served = self.build(self.loader(bundle_path), bundle_path)
            if source != self.source:
                self.source = source
                if self.pointer is not None:
                    _write_pointer(self.pointer, source)
            previous = self.install(served)
            log.warning(
                "serving bundle %s from %s (was %s)",
                served.version, bundle_path, previous.version if previous else None,
            )  # fmt: skip
            return previous, served

    def followed(self) -> Path | None:
        """What this service serves now: the shared pointer's folder, else the source."""
        if self.pointer is not None:
            try:
                named = self.pointer.read_text().strip()
            except OSError:
                named = ""
            if named:
                return Path(named)
        return self.source

    def champion_changed(self) -> bool:
        """Whether the followed registry's champion, the pointer or the bundle's version
        moved away from what is served."""
        source = self.followed()
        if source is None:
            return False
        bundle = resolve_champion(source)
        current = self.current
        if current is None or bundle != current.bundle_path:
            return True
        try:
            return str(read_manifest(bundle).get("version")) != current.version
        except BundleError:  # being replaced: look again at the next poll
            return False

    async def follow_champion(self, every_s: float) -> None:
        """Poll the registry's champion pointer and load each new champion."""
        while True:
            await asyncio.sleep(every_s)
            try:
                if await asyncio.to_thread(self.champion_changed):
                    await asyncio.to_thread(self.load)
            except Exception as exc:  # keep serving the current model
                log.warning("champion reload from %s failed: %s", self.source, exc)


def _write_pointer(pointer: Path, source: Path) -> None:
    tmp = pointer.with_name(f"{pointer.name}.tmp-{os.getpid()}")
    tmp.write_text(f"{source}\n")
    os.replace(tmp, pointer)
