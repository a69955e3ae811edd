"""The served prediction is never worse than an input baseline (on validation).

Where a baseline (last-2, the user's request) is a model input, a model can still lose to
it when the class mix shifts: it collapses onto frequent classes while the baseline follows
the user. The guard wraps the champion's probabilities in three small, fitted steps:

1. **prior adjustment**: add per-class log-offsets — none, the recent class prior (class
   frequencies of the latest labelled rows; the models are trained with balanced class
   weights, i.e. a uniform prior), or offsets tuned for macro-F1 on those rows;
2. **blend** with the baseline's class: ``(1 − λ)·p + λ·onehot(baseline)`` where the
   baseline has a class (λ = 1 is the calibrated fallback to the baseline);
3. **selection**: each (adjustment, baseline, λ) is scored by its worse margin over the
   strongest baseline's class (the *anchor*), min(Δ macro-F1, Δ accuracy), and that margin
   must be robust: its lower ``quantile`` over a paired bootstrap of contiguous time blocks
   of the validation rows (:mod:`scoutless.models.paired_bootstrap`). Where the plain model
   (no offsets, no blend) is among the rules whose lower bound is above zero, it is served
   unless another of them beats the plain model robustly too; otherwise, among the rules
   whose lower bound is above zero, the widest margin is served (ties: higher macro-F1);
   where none is, the anchor is (the model only where that baseline has no class). Picking
   the best of dozens of rules on a few hundred bursty rows flatters the winner, and the
   next period may differ: a lead that does not survive the bootstrap is not worth giving
   up a baseline that follows the user, nor the plain model where it already beats it.

The baseline's class is read from the encoded features (a categorical input, see
:func:`baseline_feature_columns`), so training, evaluation and the service apply the very
same rule to the very same inputs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from scoutless.features.encoded import EncodedFeatures
from scoutless.features.encoders import FeatureEncoder
from scoutless.models.paired_bootstrap import margin_lower_bounds

#: Baselines the guard may blend in, strongest first.
GUARD_BASELINES: tuple[str, ...] = ("last2", "user_request")
BLENDS: tuple[float, ...] = (0.0, 0.25, 0.4, 0.6, 1.0)
BIAS_STEPS: tuple[float, ...] = (-1.5, -1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0, 1.5)


@dataclass(frozen=True)
class RobustSelection:
    """How sure the guard must be before it serves anything but the anchor baseline:
    the ``quantile`` of the margin over ``n_resamples`` resamples of ``n_blocks`` time
    blocks must exceed zero (defaults: ``Settings.history``)."""

    quantile: float = 0.025
    n_blocks: int = 10
    n_resamples: int = 400
    seed: int = 0

    def lower_bounds(
        self, y: np.ndarray, candidates: list[np.ndarray], reference: np.ndarray,
        order: np.ndarray | None, n_classes: int,
    ) -> np.ndarray:  # fmt: skip
        """Each candidate's lower bound of min(Δ macro-F1, Δ accuracy) over ``reference``
        (``order``: the rows' time order, None: as given)."""
        if not candidates:
            return np.empty(0)
        return margin_lower_bounds(
            y, candidates, reference, np.arange(len(y)) if order is None else order, n_classes,
            quantile=self.quantile, n_blocks=self.n_blocks, n_resamples=self.n_resamples,
            seed=self.seed,
        )  # fmt: skip


def time_halves(order: np.ndarray | None, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(tune, select) masks over ``n`` validation rows: on time-ordered rows the earlier
    half tunes the prior and offsets and the later half chooses the rule; unordered, all
    rows do both."""
    if order is None:
        every = np.ones(n, dtype=bool)
        return every, every
    select = order >= np.median(order)
    return (~select if (~select).any() else select), select


def baseline_feature_columns(target: str) -> dict[str, str]:
    """Baseline name -> the categorical input holding its class for ``target``."""
    return {name: f"input_{name}_{target}_class" for name in GUARD_BASELINES}


def baseline_classes(
    encoded: EncodedFeatures, encoder: FeatureEncoder, column: str, n_classes: int
) -> np.ndarray:
    """The class a baseline input names per row (-1: none, unknown or not a class)."""
    if column not in encoder.categorical:
        return np.full(len(encoded), -1, dtype=np.int64)
    vocab = encoder.vocabulary_[column]
    lookup = np.array(
        [-1] + [int(v) if v.isdigit() and int(v) < n_classes else -1 for v in vocab],
        dtype=np.int64,
    )
    return lookup[encoded.codes[:, encoder.categorical.index(column)]]


def macro_f1(y: np.ndarray, predicted: np.ndarray) -> float:
    """``sklearn.metrics.f1_score(y, predicted, average="macro", zero_division=0)`` to the
    bit: the mean, over every label in ``y`` or ``predicted``, of 2 tp / (n true + n
    predicted). Tuning the offsets scores hundreds of candidates per target, and sklearn's
    input checks cost 50x this arithmetic."""
    y, predicted = np.asarray(y), np.asarray(predicted)
    if not len(y) or len(y) != len(predicted):
        raise ValueError(f"macro_f1: {len(y)} labels and {len(predicted)} predictions")
    labels, index = np.unique(np.concatenate([y, predicted]), return_inverse=True)
    truth, guess, n = index[: len(y)], index[len(y) :], len(labels)
    tp = np.bincount(truth[truth == guess], minlength=n).astype(float)
    either = np.bincount(truth, minlength=n) + np.bincount(guess, minlength=n)
    return float(np.mean(2.0 * tp / either.astype(float)))


def _scores(y: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    return {
        "macro_f1": macro_f1(y, predicted),
        "accuracy": float(np.mean(y == predicted)) if len(y) else float("nan"),
    }


def _blend(proba: np.ndarray, classes: np.ndarray | None, weight: float) -> np.ndarray:
    if classes is None or weight == 0.0:
        return proba
    known = classes >= 0
    out = proba.copy()
    out[known] *= 1.0 - weight
    out[np.flatnonzero(known), classes[known]] += weight
    return out


@dataclass(frozen=True)
class ServingGuard:
    """Fitted rule from a model's probabilities (+ baseline classes) to served ones."""

    target: str
    model: str
    log_offsets: list[float]
    adjustment: str  # "none", "recent_prior" or "macro_f1_offsets"
    baseline: str | None = None
    blend: float = 0.0
    chosen_because: str = ""
    validation: dict[str, Any] = field(default_factory=dict)

    def apply(self, proba: np.ndarray, classes: np.ndarray | None = None) -> np.ndarray:
        """(n, K) served probabilities; ``classes``: the baseline's class per row (-1 none)."""
        adjusted = proba * np.exp(np.asarray(self.log_offsets))[None, :]
        adjusted /= adjusted.sum(axis=1, keepdims=True).clip(min=1e-12)
        return _blend(adjusted, classes if self.baseline else None, self.blend)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ServingGuard:
        return cls(**d)


def tune_offsets(y: np.ndarray, proba: np.ndarray, passes: int = 2) -> np.ndarray:
    """Per-class log-offsets maximising macro-F1 by coordinate ascent over BIAS_STEPS."""
    n_classes = proba.shape[1]
    logp = np.log(proba.clip(min=1e-9))
    offsets = np.zeros(n_classes)
    best = _scores(y, (logp + offsets).argmax(axis=1))["macro_f1"]
    for _ in range(passes):
        for c in range(n_classes):
            for step in BIAS_STEPS:
                trial = offsets.copy()
                trial[c] = step
                score = _scores(y, (logp + trial).argmax(axis=1))["macro_f1"]
                if score > best + 1e-9:
                    best, offsets = score, trial
    return offsets


def _reference(
    y: np.ndarray, baselines: Mapping[str, np.ndarray], fallback: np.ndarray
) -> dict[str, dict[str, float]]:
    """Validation scores of each baseline as scored in evaluation (no class: the fallback)."""
    return {
        name: _scores(y, np.where(classes >= 0, classes, fallback))
        for name, classes in baselines.items()
        if (classes >= 0).any()
    }


def _anchor_name(reference: Mapping[str, Any]) -> str:
    """The strongest baseline: best accuracy + macro-F1 on validation."""
    return max(reference, key=lambda b: reference[b]["accuracy"] + reference[b]["macro_f1"])


def _candidates(
    offsets: Mapping[str, np.ndarray], reference: Mapping[str, Any], target: str, model: str
) -> list[ServingGuard]:
    """Every (adjustment, baseline, λ); the first one with λ = 1 and no adjustment for the
    anchor is the anchor itself."""
    options = [(None, 0.0)] + [(b, w) for b in reference for w in BLENDS if w > 0]
    return [
        ServingGuard(target, model, off.tolist(), adjustment, baseline, weight)
        for adjustment, off in offsets.items()
        for baseline, weight in options
    ]


#: the candidate that serves the model's own probabilities (no offsets, no blend)
PLAIN = 0


def _beat_the_model(
    y: np.ndarray,
    served: list[np.ndarray],
    robust_rules: list[int],
    bounds: np.ndarray,
    rank: list[tuple[float, float]],
    anchor: str,
    order: np.ndarray | None,
    robust: RobustSelection,
    n_classes: int,
) -> tuple[int, np.ndarray, str]:
    """Where the plain model beats the anchor robustly, an adjusted or blended rule must
    beat the plain model robustly too (the same bootstrap) to be served; among those, the
    widest margin over the anchor (``rank``). Why: every rule but the plain one is tuned on
    a few hundred validation rows, and the widest margin among dozens flatters the winner;
    on the next period the plain model was the better bet wherever nothing beat it clearly."""
    others = [i for i in robust_rules if i != PLAIN]
    over_model = robust.lower_bounds(y, [served[i] for i in others], served[PLAIN], order,
                                     n_classes)  # fmt: skip
    better = [i for i, b in zip(others, over_model, strict=True) if b > 0]
    best = max(better, key=rank.__getitem__, default=PLAIN)
    if best == PLAIN:
        reason = (f"the model beats {anchor} robustly ({bounds[PLAIN]:+.3f}) and none of the "
                  f"{len(others)} other such rules beats the model robustly")  # fmt: skip
    else:
        reason = (f"beats {anchor} ({bounds[best]:+.3f}) and the plain model robustly; widest "
                  f"margin over {anchor} among {len(better)} such rules")  # fmt: skip
    return best, bounds, reason


def _robust_choice(
    y: np.ndarray,
    served: list[np.ndarray],
    scores: list[dict[str, float]],
    candidates: list[ServingGuard],
    baselines: Mapping[str, np.ndarray],
    reference: dict[str, dict[str, float]],
    majority: int,
    order: np.ndarray | None,
    robust: RobustSelection,
    n_classes: int,
) -> tuple[int, np.ndarray, str]:
    """The rule to serve against the anchor baseline: among the rules whose lead survives
    the time-block bootstrap, the widest margin; none: the anchor's own class."""
    anchor = _anchor_name(reference)
    anchor_served = np.where(baselines[anchor] >= 0, baselines[anchor], majority)
    bounds = robust.lower_bounds(y, served, anchor_served, order, n_classes)
    ref = reference[anchor]
    # rules rank by their margin over the anchor (ties: macro-F1)
    rank = [(min(c["macro_f1"] - ref["macro_f1"], c["accuracy"] - ref["accuracy"]),
             c["macro_f1"]) for c in scores]  # fmt: skip
    robust_rules = [i for i in range(len(candidates)) if bounds[i] > 0]
    if PLAIN in robust_rules:  # the model itself beats the anchor: keep it unless beaten
        return _beat_the_model(y, served, robust_rules, bounds, rank, anchor, order, robust,
                               n_classes)  # fmt: skip
    # among the rules that beat the anchor robustly, the widest margin
    best = max(robust_rules, key=rank.__getitem__, default=-1)
    if best >= 0:
        reason = (
            f"widest margin over {anchor} among the {len(robust_rules)} rules whose lower "
            f"{robust.quantile:g} quantile of min(Δ macro-F1, Δ accuracy) (time-block "
            f"bootstrap) is above zero: {bounds[best]:+.3f}"
        )
        return best, bounds, reason
    best = next(i for i, g in enumerate(candidates)
                if g.baseline == anchor and g.blend == 1.0 and g.adjustment == "none")  # fmt: skip
    reason = f"no rule beat {anchor} robustly (best lower bound {max(bounds):+.3f} <= 0): its class"
    return best, bounds, reason


def fit_guard(
    target: str,
    model: str,
    y: np.ndarray,
    proba: np.ndarray,
    baselines: Mapping[str, np.ndarray],
    *,
    recent_prior: np.ndarray | None = None,
    majority: int = 0,
    tune: tuple[np.ndarray, np.ndarray] | None = None,
    order: np.ndarray | None = None,
    robust: RobustSelection | None = None,
) -> ServingGuard:
    """Choose the served rule on validation rows (see the module docstring); ``tune``
    (classes, probabilities) fits the macro-F1 offsets on other, earlier rows; ``order``:
    the rows' time order (None: as given), which the bootstrap's blocks follow."""
    robust = robust or RobustSelection()
    n_classes = proba.shape[1]
    tune_y, tune_proba = tune if tune is not None else (y, proba)
    offsets = {"none": np.zeros(n_classes), "macro_f1_offsets": tune_offsets(tune_y, tune_proba)}
    if recent_prior is not None:
        offsets["recent_prior"] = np.log(np.asarray(recent_prior, float).clip(min=1e-3))
    reference = _reference(y, baselines, np.full(len(y), majority))
    candidates = _candidates(offsets, reference, target, model)
    served = [
        g.apply(proba, baselines.get(g.baseline) if g.baseline else None).argmax(axis=1)
        for g in candidates
    ]
    scores = [_scores(y, s) for s in served]
    if reference:
        best, bounds, reason = _robust_choice(
            y, served, scores, candidates, baselines, reference, majority, order, robust,
            n_classes,
        )  # fmt: skip
    else:  # no baseline has a class on these rows: the best rule by macro-F1
        best = max(
            range(len(candidates)), key=lambda i: (scores[i]["macro_f1"], scores[i]["accuracy"])
        )
        bounds, reason = None, "no baseline class on validation: best macro-F1"
    validation = {
        "served": scores[best],
        "model": _scores(y, proba.argmax(axis=1)),
        "baselines": reference,
        "n": len(y),
        "robust_lower_bound": None if bounds is None else float(bounds[best]),
        "robust_selection": asdict(robust),
    }
    g = candidates[best]
    return ServingGuard(
        target, model, g.log_offsets, g.adjustment, g.baseline, g.blend, reason, validation
    )
