"""Distance to the Bayes limit: how far each bundle model is from the best possible, per class.

On synthetic data the table carries the Bayes-optimal class (the generator keeps the latent
truth), evaluated as the ``bayes`` baseline. This view turns a target's entry into the
models' accuracy as a share of Bayes and, per class, their recall and F1 minus Bayes':
where a model is short (or, for a rare class it over-predicts, long) of the limit.
"""

from __future__ import annotations

from typing import Any

BAYES = "bayes"


def _minus(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def bayes_distance(entry: dict[str, Any]) -> dict[str, Any] | None:
    """Per bundle model: accuracy ÷ Bayes, macro-F1 − Bayes, per-class recall/F1 − Bayes.

    None when the entry has no Bayes baseline (real data) or no bundle model.
    """
    models = entry.get("models", {})
    bayes = models.get(BAYES)
    names = [n for n, m in models.items() if m.get("kind") == "model"]
    if bayes is None or not names or not bayes.get("accuracy"):
        return None
    out: dict[str, Any] = {}
    for name in names:
        m = models[name]
        per_class = [
            {
                "class": label,
                "support": b.get("support"),
                "recall_gap": _minus(c.get("recall"), b.get("recall")),
                "f1_gap": _minus(c.get("f1"), b.get("f1")),
            }
            for label, c, b in zip(
                entry["classes"], m["per_class"], bayes["per_class"], strict=True
            )
        ]
        accuracy = m.get("accuracy")
        out[name] = {
            "accuracy_ratio": None if accuracy is None else accuracy / bayes["accuracy"],
            "macro_f1_gap": _minus(m.get("macro_f1"), bayes.get("macro_f1")),
            "per_class": per_class,
        }
    return out
