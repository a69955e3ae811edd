"""Baselines a model has to beat, predicted on the same test rows.

- ``majority``: the most frequent class among the training rows.
- ``history``: what an operator would script: the most frequent class among earlier tasks
  (the training rows) sharing the task's categorical keys, falling back to coarser keys,
  then to the global majority (:class:`HistoryLookup`).
- column baselines already in the table: ``{t}_scout_class`` (``scouts``, PanDA's
  incumbent, with its cost in ``scout_wait_hours``), ``{t}_bayes_class`` (synthetic data:
  the Bayes limit), ``{t}_user_request_class`` / ``{t}_last2_class`` (traces), and any other
  ``{t}_<name>_class`` column (:func:`column_baselines`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from scoutless.features.spec import FeatureSpec
from scoutless.targets.spec import class_col

#: PanDA's natural grouping: transformation within processing type.
PANDA_HISTORY_KEYS: tuple[tuple[str, ...], ...] = (
    ("processingtype", "transpath"),
    ("processingtype",),
)

#: ``{t}_<name>_class`` columns and the model name each baseline is reported under.
BASELINE_NAMES: dict[str, str] = {"scout": "scouts"}

_MISSING_KEY = "<missing>"


def majority_class(y_train: np.ndarray, n_classes: int) -> int:
    """Most frequent valid class; ties go to the larger (safer to allocate) class."""
    y = np.asarray(y_train, dtype=np.int64)
    y = y[(y >= 0) & (y < n_classes)]
    if y.size == 0:
        raise ValueError("majority baseline: no training row has a valid class")
    counts = np.bincount(y, minlength=n_classes)
    return int(n_classes - 1 - np.argmax(counts[::-1]))


def history_keys(features: Sequence[FeatureSpec]) -> tuple[tuple[str, ...], ...]:
    """Key levels for :class:`HistoryLookup`, finest first.

    PanDA tables: processingtype+transpath, then processingtype. Other sources: the first
    two categorical features, then the first one. No categorical feature: no levels (the
    lookup is then the global majority).
    """
    categorical = [f.name for f in features if f.kind == "categorical"]
    if all(k in categorical for k in PANDA_HISTORY_KEYS[0]):
        return PANDA_HISTORY_KEYS
    if len(categorical) >= 2:
        return ((categorical[0], categorical[1]), (categorical[0],))
    if categorical:
        return ((categorical[0],),)
    return ()


def _key_frame(frame: pd.DataFrame, keys: tuple[str, ...]) -> pd.DataFrame:
    missing = [k for k in keys if k not in frame.columns]
    if missing:
        raise KeyError(f"history lookup: frame lacks key columns {missing}")
    return frame[list(keys)].astype("string").fillna(_MISSING_KEY)


@dataclass
class HistoryLookup:
    """Most frequent class per group of earlier tasks, with coarser fallbacks.

    ``levels`` are key tuples, finest first; a test row takes the class of the finest level
    whose group exists in training, else the global majority. Ties go to the larger class.
    """

    levels: tuple[tuple[str, ...], ...]
    n_classes: int
    tables_: list[pd.Series] = field(default_factory=list, init=False, repr=False)
    majority_: int = field(default=-1, init=False)

    def fit(self, frame: pd.DataFrame, y: np.ndarray) -> HistoryLookup:
        y = np.asarray(y, dtype=np.int64)
        valid = (y >= 0) & (y < self.n_classes)
        frame, y = frame[valid], y[valid]
        self.majority_ = majority_class(y, self.n_classes)
        self.tables_ = [self._mode_per_group(frame, y, keys) for keys in self.levels]
        return self

    def _mode_per_group(
        self, frame: pd.DataFrame, y: np.ndarray, keys: tuple[str, ...]
    ) -> pd.Series:
        counts = _key_frame(frame, keys).assign(_class=y).value_counts()
        counts = counts.rename("n").reset_index()
        # larger n first, then larger class first: the first row per group is the mode
        counts = counts.sort_values(["n", "_class"], ascending=False, kind="stable")
        best = counts.drop_duplicates(list(keys), keep="first")
        return best.set_index(list(keys))["_class"]

    def predict(self, frame: pd.DataFrame) -> np.ndarray:
        if self.majority_ < 0:
            raise RuntimeError("HistoryLookup.predict called before fit")
        out = np.full(len(frame), -1, dtype=np.int64)
        for keys, table in zip(self.levels, self.tables_, strict=True):
            todo = out < 0
            if not todo.any():
                break
            index = pd.MultiIndex.from_frame(_key_frame(frame.iloc[np.flatnonzero(todo)], keys))
            found = table.reindex(index if len(keys) > 1 else index.get_level_values(0))
            out[np.flatnonzero(todo)] = found.fillna(-1).to_numpy(dtype=np.int64)
        out[out < 0] = self.majority_
        return out


@dataclass(frozen=True)
class ColumnBaseline:
    """A baseline whose class prediction is a column of the table."""

    name: str
    column: str


def column_baselines(frame: pd.DataFrame, target: str) -> list[ColumnBaseline]:
    """Every ``{target}_<name>_class`` column except the target's own class column."""
    prefix, suffix = f"{target}_", "_class"
    found = []
    for col in frame.columns:
        if col == class_col(target) or not (col.startswith(prefix) and col.endswith(suffix)):
            continue
        raw = col[len(prefix) : -len(suffix)]
        found.append(ColumnBaseline(BASELINE_NAMES.get(raw, raw), col))
    return sorted(found, key=lambda b: b.name)


def column_predictions(
    frame: pd.DataFrame, column: str, n_classes: int, fallback: int
) -> tuple[np.ndarray, float]:
    """(classes, coverage): rows with no valid class in ``column`` take ``fallback``.

    A task with no scouts (or no request) still needs an allocation; the fallback (the
    training majority) keeps the baseline comparable on every row, and the coverage says
    how often it was needed.
    """
    raw = pd.to_numeric(frame[column], errors="coerce").to_numpy(dtype=float)
    valid = np.isfinite(raw) & (raw >= 0) & (raw < n_classes)
    classes = np.where(valid, np.nan_to_num(raw, nan=0.0), fallback).astype(np.int64)
    coverage = float(valid.mean()) if len(valid) else 0.0
    return classes, coverage
