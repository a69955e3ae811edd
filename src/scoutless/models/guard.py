"""The served prediction is never worse than an input baseline (on validation).

Where a baseline (last-2, the user's request) is a model input, a model can still lose to
it when the class mix shifts: it collapses onto frequent classes while the baseline follows
the user. The guard wraps the champion's probabilities in three small, fitted steps:

1. **prior adjustment**: add per-class log-offsets — none, the recent class prior (class
   frequencies of the latest labelled rows; the models are trained with balanced class
   weights, i.e. a uniform prior), or offsets tuned for macro-F1 on those rows;
2. **blend** with the baseline's class: ``(1 − λ)·p + λ·onehot(baseline)`` where the
   baseline has a class (λ = 1 is the calibrated fallback to the baseline);
3. **selection**: among all (adjustment, baseline, λ) the rule whose worse margin over the
   best baseline — min(Δ macro-F1, Δ accuracy) on validation — is widest (ties: higher
   macro-F1): it dominates the baselines on both metrics where any rule does, and is the
   closest to doing so where none does; a margin within noise (``SIGNIFICANCE_Z`` standard
   errors of the validation accuracy) serves the strongest baseline's class instead (the
   model only where that baseline has none).

The baseline's class is read from the encoded features (a categorical input, see
:func:`baseline_feature_columns`), so training, evaluation and the service apply the very
same rule to the very same inputs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np
from sklearn.metrics import f1_score

from scoutless.features.encoders import EncodedFeatures, FeatureEncoder

#: Baselines the guard may blend in, strongest first.
GUARD_BASELINES: tuple[str, ...] = ("last2", "user_request")
BLENDS: tuple[float, ...] = (0.0, 0.25, 0.4, 0.6, 1.0)
BIAS_STEPS: tuple[float, ...] = (-1.5, -1.0, -0.5, -0.25, 0.0, 0.25, 0.5, 1.0, 1.5)
#: A rule must beat the best baseline by this many standard errors of the validation
#: accuracy, else the baseline's own class is served (validation rows are few and the
#: next period may differ).
SIGNIFICANCE_Z = 2.0


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


def _scores(y: np.ndarray, predicted: np.ndarray) -> dict[str, float]:
    return {
        "macro_f1": float(f1_score(y, predicted, average="macro", zero_division=0)),
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


def _is_anchor(guard: ServingGuard, reference: Mapping[str, Any]) -> bool:
    """The fallback rule: the strongest baseline's class wherever it has one, unadjusted."""
    strongest = max(reference, key=lambda b: reference[b]["accuracy"] + reference[b]["macro_f1"])
    return guard.baseline == strongest and guard.blend == 1.0 and guard.adjustment == "none"


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
) -> ServingGuard:
    """Choose the served rule on validation rows (see the module docstring); ``tune``
    (classes, probabilities) fits the macro-F1 offsets on other, earlier rows."""
    n_classes = proba.shape[1]
    tune_y, tune_proba = tune if tune is not None else (y, proba)
    offsets = {"none": np.zeros(n_classes), "macro_f1_offsets": tune_offsets(tune_y, tune_proba)}
    if recent_prior is not None:
        offsets["recent_prior"] = np.log(np.asarray(recent_prior, float).clip(min=1e-3))
    reference = _reference(y, baselines, np.full(len(y), majority))
    target_f1 = max((r["macro_f1"] for r in reference.values()), default=-1.0)
    target_acc = max((r["accuracy"] for r in reference.values()), default=-1.0)
    candidates: list[tuple[float, float, ServingGuard]] = []
    for adjustment, off in offsets.items():
        options = [(None, 0.0)] + [(b, w) for b in reference for w in BLENDS if w > 0]
        for baseline, weight in options:
            guard = ServingGuard(target, model, off.tolist(), adjustment, baseline, weight)
            served = guard.apply(proba, baselines.get(baseline) if baseline else None)
            s = _scores(y, served.argmax(axis=1))
            candidates.append((s["macro_f1"], s["accuracy"], guard))
    # the rule that beats the best baseline by the widest margin on BOTH metrics …
    f1, acc, best = max(candidates, key=lambda c: (min(c[0] - target_f1, c[1] - target_acc), c[0]))
    reason = "widest margin over the best baseline in macro-F1 and accuracy on validation"
    # … if that margin is more than noise; else the baseline decides wherever it has a class
    noise = SIGNIFICANCE_Z * np.sqrt(max(target_acc * (1 - target_acc), 0.01) / len(y))
    anchored = [c for c in candidates if _is_anchor(c[2], reference)]
    if anchored and min(f1 - target_f1, acc - target_acc) < noise and best.blend < 1.0:
        f1, acc, best = anchored[0]
        reason = f"no rule beat the best baseline by more than noise ({noise:.3f}): its class"
    validation = {
        "served": {"macro_f1": f1, "accuracy": acc},
        "model": _scores(y, proba.argmax(axis=1)),
        "baselines": reference,
        "n": len(y),
    }
    return ServingGuard(
        target, model, best.log_offsets, best.adjustment, best.baseline, best.blend,
        reason, validation,
    )  # fmt: skip
