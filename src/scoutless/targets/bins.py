"""Ordinal class bins per target: shipped defaults, user overrides, or data quantiles."""

from __future__ import annotations

import itertools
import math
import tomllib
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from scoutless.jsonsafe import json_edges
from scoutless.targets.spec import TARGETS

DEFAULT_BINS_RESOURCE = "bins.toml"


class BinsError(ValueError):
    """A bins definition that cannot classify anything (named target, what is wrong)."""


@dataclass(frozen=True)
class TargetBins:
    """Edges and labels of one target's classes.

    ``edges`` has ``n_classes + 1`` increasing entries; class ``c`` holds values in
    ``(edges[c], edges[c + 1]]`` (the first class also holds ``edges[0]`` itself).
    ``recommended`` is the concrete value a scheduler should allocate for each class, in
    the target's unit: the upper edge, or, for an open last class, a high quantile of the
    training values that fell into it (see :func:`fit_recommendations`).
    """

    target: str
    unit: str
    edges: tuple[float, ...]
    labels: tuple[str, ...]
    recommended: tuple[float, ...] = field(default=())

    def __post_init__(self) -> None:
        edges = np.asarray(self.edges, dtype=float)
        if len(edges) < 3:
            raise BinsError(f"{self.target}: need at least 2 classes, got edges={list(self.edges)}")
        if np.isnan(edges).any() or not np.all(np.diff(edges) > 0):
            raise BinsError(f"{self.target}: edges must increase strictly, got {list(self.edges)}")
        if len(self.labels) != len(edges) - 1:
            raise BinsError(
                f"{self.target}: {len(self.labels)} labels for {len(edges) - 1} classes"
            )
        if not self.recommended:
            object.__setattr__(self, "recommended", _default_recommendations(self.edges))
        if len(self.recommended) != self.n_classes:
            raise BinsError(f"{self.target}: recommended needs one value per class")

    @property
    def n_classes(self) -> int:
        return len(self.edges) - 1

    def classify(self, values: np.ndarray | list[float]) -> np.ndarray:
        """Class index per value; -1 where the value is missing (NaN) or negative."""
        v = np.asarray(values, dtype=float)
        inner = np.asarray(self.edges[1:-1], dtype=float)
        classes = np.searchsorted(inner, v, side="left").astype(np.int64)
        classes[np.isnan(v) | (v < 0)] = -1
        return classes

    def bounds(self, cls: int) -> tuple[float, float]:
        return float(self.edges[cls]), float(self.edges[cls + 1])

    def to_dict(self) -> dict[str, Any]:
        return {
            "target": self.target,
            "unit": self.unit,
            "edges": json_edges(self.edges),
            "labels": list(self.labels),
            "recommended": [float(r) for r in self.recommended],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TargetBins:
        return cls(
            target=d["target"],
            unit=d.get("unit", ""),
            edges=tuple(float(e) for e in d["edges"]),
            labels=tuple(d["labels"]),
            recommended=tuple(float(r) for r in d.get("recommended", ())),
        )


def _default_recommendations(edges: tuple[float, ...]) -> tuple[float, ...]:
    rec = []
    for lo, hi in itertools.pairwise(edges):
        rec.append(float(hi) if math.isfinite(hi) else float(max(lo, 1.0) * 2.0))
    return tuple(rec)


def fit_recommendations(bins: TargetBins, values: np.ndarray, quantile: float = 0.9) -> TargetBins:
    """Set the open last class's recommendation from the training values that fell in it."""
    v = np.asarray(values, dtype=float)
    top = v[bins.classify(v) == bins.n_classes - 1]
    rec = list(bins.recommended)
    if not math.isfinite(bins.edges[-1]) and top.size:
        rec[-1] = float(np.quantile(top, quantile))
    return replace(bins, recommended=tuple(rec))


def quantile_edges(values: np.ndarray, n_classes: int) -> tuple[float, ...]:
    """Edges giving ``n_classes`` classes of (nearly) equal mass; ties are merged."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v) & (v >= 0)]
    if v.size == 0:
        raise BinsError("cannot derive quantile bins from no valid values")
    inner = np.unique(np.quantile(v, np.linspace(0, 1, n_classes + 1)[1:-1]))
    inner = inner[inner > 0]
    if inner.size == 0:
        raise BinsError(f"all values are equal ({v[0]}): no quantile bins")
    return (0.0, *map(float, inner), math.inf)


def _quantile_labels(edges: tuple[float, ...]) -> tuple[str, ...]:
    labels = []
    for lo, hi in itertools.pairwise(edges):
        labels.append(f">{lo:.4g}" if math.isinf(hi) else f"<={hi:.4g}")
    return tuple(labels)


def _parse_section(target: str, section: dict[str, Any], values: np.ndarray | None) -> TargetBins:
    mode = section.get("mode", "edges")
    unit = section.get("unit", TARGETS[target].unit if target in TARGETS else "")
    if mode == "quantiles":
        if values is None:
            raise BinsError(f"{target}: mode='quantiles' needs the target values")
        n = int(section.get("n_classes", 4))
        edges = quantile_edges(values, n)
        return TargetBins(target, unit, edges, _quantile_labels(edges))
    if mode != "edges":
        raise BinsError(f"{target}: mode={mode!r}, expected 'edges' or 'quantiles'")
    if "edges" not in section:
        raise BinsError(f"{target}: mode='edges' needs an 'edges' list")
    edges = tuple(float(e) for e in section["edges"])
    labels = tuple(section.get("labels") or _quantile_labels(edges))
    return TargetBins(target, unit, edges, labels)


def read_bins_file(path: Path | None = None) -> dict[str, dict[str, Any]]:
    """The shipped defaults, with the sections of ``path`` (if given) replacing them."""
    text = resources.files("scoutless.defaults").joinpath(DEFAULT_BINS_RESOURCE).read_text()
    sections: dict[str, dict[str, Any]] = tomllib.loads(text)
    if path is not None:
        try:
            override = tomllib.loads(Path(path).read_text())
        except tomllib.TOMLDecodeError as exc:
            raise BinsError(f"{path}: not valid TOML: {exc}") from exc
        except OSError as exc:
            raise BinsError(f"{path}: cannot read bins file: {exc}") from exc
        for name, section in override.items():
            if not isinstance(section, dict):
                raise BinsError(f"{path}: [{name}] must be a table")
            sections[name] = {**sections.get(name, {}), **section}
            if section.get("mode") == "quantiles":
                sections[name].pop("edges", None)
                sections[name].pop("labels", None)
    return sections


def bin_sections(
    path: Path | None = None,
    targets: list[str] | None = None,
    force_quantiles: int | None = None,
) -> dict[str, dict[str, Any]]:
    """Configuration per target: the shipped defaults and ``path``'s overrides, or quantile
    mode for every target with ``force_quantiles`` classes (each keeps its unit)."""
    sections = read_bins_file(path)
    names = targets if targets is not None else list(sections)
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        section = dict(sections.get(name, {"mode": "quantiles", "n_classes": 4}))
        if force_quantiles:
            section = {"mode": "quantiles", "n_classes": force_quantiles,
                       "unit": section.get("unit", "")}  # fmt: skip
        out[name] = section
    return out


def load_bins(
    path: Path | None = None,
    values: dict[str, np.ndarray] | None = None,
    targets: list[str] | None = None,
    force_quantiles: int | None = None,
) -> dict[str, TargetBins]:
    """Bins per target as configured, without fitting recommendations to data (use
    :func:`fit_bins` for a training table). ``values`` feeds quantile mode."""
    sections = bin_sections(path, targets, force_quantiles)
    return {
        name: _parse_section(name, section, None if values is None else values.get(name))
        for name, section in sections.items()
    }


def fit_target_bins(
    target: str, section: dict[str, Any] | TargetBins, train_values: np.ndarray
) -> TargetBins:
    """One target's bins fitted on training values only: quantile edges when its section
    asks for them, and the per-class recommendations. Given :class:`TargetBins` keep their
    edges and get their recommendations refitted."""
    values = np.asarray(train_values, dtype=float)
    bins = section if isinstance(section, TargetBins) else _parse_section(target, section, values)
    return fit_recommendations(bins, values)


def fit_bins(
    train_values: dict[str, np.ndarray],
    *,
    path: Path | None = None,
    given: dict[str, TargetBins] | None = None,
    force_quantiles: int | None = None,
) -> dict[str, TargetBins]:
    """Bins per target of ``train_values`` (the TRAINING rows' values — test rows never
    shape edges or recommendations): ``given`` bins' edges, else the configured sections."""
    if given is not None:
        return {t: fit_target_bins(t, b, train_values[t]) for t, b in given.items()}
    sections = bin_sections(path, list(train_values), force_quantiles)
    return {t: fit_target_bins(t, sections[t], train_values[t]) for t in train_values}
