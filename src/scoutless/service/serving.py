"""The model being served, swapped atomically on reload.

A request reads ``holder.current`` once and keeps that object to the end, so a reload
(which builds the new pipeline completely before one attribute assignment) never fails
or mixes versions inside a request.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from pathlib import Path

from scoutless.ops.registry import is_registry, resolve_champion
from scoutless.service.pipeline import Pipeline, Predictor

log = logging.getLogger("scoutless.service")

BundleLoader = Callable[[Path], Predictor]


def load_bundle_default(path: Path) -> Predictor:
    from scoutless.bundle import load_bundle  # heavy (torch, xgboost): load when serving

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
    ) -> None:
        self.source = source
        self.targets = list(targets) if targets else None
        self.executor = executor
        self.loader = loader
        self.safe_recall = safe_recall
        self.on_swap = on_swap
        self.current: Served | None = None
        self._lock = threading.Lock()

    def build(self, predictor: Predictor, bundle_path: Path | None) -> Served:
        pipeline = Pipeline(predictor, self.targets, self.executor, safe_recall=self.safe_recall)
        return Served(pipeline, bundle_path)

    def install(self, served: Served) -> Served | None:
        previous, self.current = self.current, served
        if self.on_swap is not None:
            self.on_swap(served)
        return previous

    def load(self, source: Path | None = None) -> tuple[Served | None, Served]:
        """Load ``source`` (default: the configured one, re-resolved) and swap it in."""
        with self._lock:
            source = Path(source) if source is not None else self.source
            if source is None:
                raise ValueError("no bundle configured: pass a bundle or registry folder")
            bundle_path = resolve_champion(source)
            served = self.build(self.loader(bundle_path), bundle_path)
            if source != self.source and source is not None:
                self.source = source
            previous = self.install(served)
            log.info("serving bundle %s from %s", served.version, bundle_path)
            return previous, served

    def champion_changed(self) -> bool:
        if self.source is None or not is_registry(self.source):
            return False
        current = self.current.bundle_path if self.current else None
        return resolve_champion(self.source) != current

    async def follow_champion(self, every_s: float) -> None:
        """Poll the registry's champion pointer and load each new champion."""
        while True:
            await asyncio.sleep(every_s)
            try:
                if await asyncio.to_thread(self.champion_changed):
                    await asyncio.to_thread(self.load)
            except Exception as exc:  # keep serving the current model
                log.warning("champion reload from %s failed: %s", self.source, exc)
