"""Retrain a challenger on recent history and promote it only if it beats the champion.

The steps, each of which may crash without harm because only the last one changes what
is served:

1. read recent history and build a training table with the champion's bins (so both
   models are scored on the same classes);
2. train the challenger into a staging folder inside the registry (the time split's
   latest tasks are held out: the challenger never sees them);
3. register it (one ``rename``), score champion and challenger on the same hold-out;
4. promote (one ``os.replace`` of the pointer) if the challenger's mean accuracy is higher
   by at least ``margin``.

A lock file keeps two retrains (cron and the loop, say) from racing on one registry.
"""

from __future__ import annotations

import fcntl
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sqlalchemy import Engine

from scoutless.config import Settings
from scoutless.evaluation.metrics import classification_metrics
from scoutless.history.panda_db import read_history
from scoutless.history.table import TrainingTable
from scoutless.models.predictor import PredictorLike
from scoutless.ops import registry as reg
from scoutless.targets.bins import TargetBins
from scoutless.targets.spec import class_col

LOCK_FILE = ".retrain.lock"


class RetrainError(RuntimeError):
    """Retraining cannot go ahead (too little history, another retrain running …)."""


Trainer = Callable[..., Path]
Loader = Callable[[Path], Any]


@dataclass
class RetrainResult:
    """What happened, for the CLI table, the loop's log line and the registry history."""

    challenger: str
    champion_before: str | None
    champion_after: str | None
    promoted: bool
    reason: str
    margin: float
    n_train: int
    n_holdout: int
    challenger_scores: dict[str, float] = field(default_factory=dict)
    champion_scores: dict[str, float] = field(default_factory=dict)

    @property
    def challenger_score(self) -> float:
        return _mean(self.challenger_scores)

    @property
    def champion_score(self) -> float:
        return _mean(self.champion_scores)


def _mean(scores: dict[str, float]) -> float:
    values = [v for v in scores.values() if np.isfinite(v)]
    return float(np.mean(values)) if values else float("nan")


def holdout_scores(
    predictor: PredictorLike, holdout: pd.DataFrame, feature_names: Sequence[str]
) -> dict[str, float]:
    """Accuracy per target on the hold-out rows that have a class (NaN without any)."""
    targets = [t for t in predictor.bins if class_col(t) in holdout.columns]
    proba = predictor.predict_proba(holdout[list(feature_names)], targets=targets)
    scores = {}
    for target in targets:
        truth = holdout[class_col(target)].to_numpy(dtype=int)
        known = truth >= 0
        predicted = np.asarray(proba[target]).argmax(axis=1)
        labels = predictor.bins[target].labels
        accuracy = classification_metrics(truth[known], predicted[known], labels)["accuracy"]
        scores[target] = np.nan if accuracy is None else accuracy
    return scores


@contextmanager
def registry_lock(path: Path) -> Iterator[None]:
    reg.init_registry(path)
    with open(path / LOCK_FILE, "w") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise RetrainError(f"registry {path}: another retrain holds {LOCK_FILE}") from exc
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _default_trainer() -> Trainer:
    from scoutless.training import train_bundle

    return train_bundle


def _default_loader() -> Loader:
    from scoutless.bundle import load_bundle

    return load_bundle


def build_recent_table(
    engine: Engine,
    since: datetime | None,
    bins: dict[str, TargetBins] | None,
    settings: Settings,
    min_tasks: int = 20,
) -> TrainingTable:
    """Training table of the tasks created since ``since``, classified with ``bins``."""
    from scoutless.history.build import build_training_table

    history = read_history(engine, since=since)
    if len(history.tasks) < min_tasks:
        raise RetrainError(
            f"only {len(history.tasks)} tasks since {since or 'the beginning'}; "
            f"retraining needs at least {min_tasks}"
        )
    table, _report = build_training_table(history, settings=settings, bins=bins)
    if len(table.frame) < min_tasks:
        raise RetrainError(f"only {len(table.frame)} tasks have targets; need {min_tasks}")
    return table


def _register_challenger(
    path: Path, trainer: Trainer, table: TrainingTable, options: dict[str, Any]
) -> str:
    """Train into a staging folder inside the registry and register it (moved); its id."""
    staging = reg.staging_dir(path)
    try:
        out = trainer(table, staging / "bundle", **options)
        return reg.register(path, out, move=True)
    finally:
        reg.discard_staging(staging)


def retrain(
    engine: Engine,
    registry: str | Path,
    *,
    since: datetime | None = None,
    margin: float = 0.01,
    models: Sequence[str] = ("xgb",),
    trials: int = 0,
    seed: int = 42,
    max_epochs: int | None = None,
    split: str = "time",
    min_tasks: int = 20,
    settings: Settings,
    progress: bool = False,
    trainer: Trainer | None = None,
    loader: Loader | None = None,
    on_step: Callable[[str], None] | None = None,
) -> RetrainResult:
    """Train a challenger on recent history; promote it if it wins by ``margin``."""
    trainer = trainer or _default_trainer()
    loader = loader or _default_loader()
    step = on_step or (lambda _msg: None)
    path = reg.init_registry(registry)

    with registry_lock(path):
        champion_id = reg.champion_version(path)
        champion = loader(reg.resolve_champion(path)) if champion_id else None

        step("reading recent history")
        table = build_recent_table(
            engine, since, champion.bins if champion else None, settings, min_tasks
        )
        train_rows, holdout = table.split(split)  # type: ignore[arg-type]

        step(f"training challenger on {len(train_rows)} tasks")
        options = {"models": tuple(models), "trials": trials, "seed": seed, "split": split,
                   "progress": progress, "max_epochs": max_epochs, "settings": settings}  # fmt: skip
        challenger_id = _register_challenger(path, trainer, table, options)

        step(f"scoring on {len(holdout)} held-out recent tasks")
        challenger = loader(path / reg.VERSIONS_DIR / challenger_id)
        result = RetrainResult(
            challenger=challenger_id, champion_before=champion_id, champion_after=champion_id,
            promoted=False, reason="", margin=margin, n_train=len(train_rows),
            n_holdout=len(holdout),
            challenger_scores=holdout_scores(challenger, holdout, table.feature_names),
        )  # fmt: skip
        if champion is not None:
            result.champion_scores = holdout_scores(champion, holdout, table.feature_names)
        result.promoted, result.reason = _decide(result)

        if result.promoted:
            step(f"promoting {challenger_id}")
            _promote(path, result, has_champion=champion is not None)
        return result


def _promote(path: Path, result: RetrainResult, *, has_champion: bool) -> None:
    """Make the challenger champion, with both scores in the registry's history."""
    reg.promote(
        path, result.challenger, reason=result.reason,
        challenger_score=result.challenger_score,
        champion_score=result.champion_score if has_champion else None,
    )  # fmt: skip
    result.champion_after = result.challenger


def _decide(result: RetrainResult) -> tuple[bool, str]:
    challenger, champion = result.challenger_score, result.champion_score
    if not np.isfinite(challenger):
        return False, "challenger could not be scored on the hold-out"
    if result.champion_before is None:
        return True, "no champion yet"
    if not np.isfinite(champion) or challenger >= champion + result.margin:
        return True, (
            f"challenger mean accuracy {challenger:.3f} >= champion {champion:.3f} "
            f"+ margin {result.margin:g}"
        )
    return False, (
        f"challenger mean accuracy {challenger:.3f} < champion {champion:.3f} "
        f"+ margin {result.margin:g}"
    )
