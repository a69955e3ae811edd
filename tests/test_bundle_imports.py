"""Loading a bundle and predicting one task (``taskparams``, the service's first request)
imports neither torch (about a second) nor XGBoost and the scikit-learn it imports (about
another), nor scipy: the DNN and the trees are read from the numpy arrays saved beside
them, and a few tasks' normal CDF and quantiles are computed on Python floats."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

PROBE = """
import json, sys
from scoutless.bundle import load_bundle
predictor = load_bundle(sys.argv[1])
record = json.loads(sys.argv[2])
proba = predictor.predict_proba(record)
values = {t: predictor.value_distribution(record, t).mu.tolist() for t in predictor.targets}
print(json.dumps({"modules": sorted({m.split(".")[0] for m in sys.modules}),
                  "proba": {t: p.tolist() for t, p in proba.items()}, "values": values}))
"""


def test_a_bundle_loads_and_predicts_without_torch_or_xgboost(small_bundle, small_table):
    """``small_bundle``: every family (the suite's shared bundle, no training of its own)."""
    from scoutless.bundle import load_bundle

    path, table = small_bundle, small_table
    predictor = load_bundle(path)
    record = table.frame[[s.name for s in predictor.feature_specs]].iloc[0].to_dict()
    record = json.loads(json.dumps(record, default=str))
    run = subprocess.run(
        [sys.executable, "-c", PROBE, str(path), json.dumps(record)],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    answer = json.loads(run.stdout)
    assert not {"torch", "xgboost", "sklearn", "scipy"} & set(answer["modules"])
    for name in ("xgb", "xgb_native", "dnn"):  # every family, not only the champions
        for target, proba in predictor.predict_proba(record, model=name).items():
            torch_or_xgboost = _through_the_libraries(predictor, record, target, name)
            np.testing.assert_allclose(proba, torch_or_xgboost, rtol=1e-5, atol=1e-5)
    for target, proba in predictor.predict_proba(record).items():
        np.testing.assert_allclose(answer["proba"][target], proba, rtol=0, atol=1e-12)
        model = predictor._value_models[target]
        booster = model.location_  # built from its bytes now
        mu = booster.inplace_predict(_matrix(predictor, record), validate_features=False)
        linear = model.linear_  # the ridge the trees start from (none in older bundles)
        if linear is not None:
            mu = mu + linear.predict(predictor.encoder.transform(record))
        np.testing.assert_allclose(answer["values"][target], mu, rtol=1e-6)


def _matrix(predictor, record):  # type: ignore[no-untyped-def]
    from scoutless.models.xgb import tree_matrix

    return tree_matrix(predictor.encoder.transform(record))


def _through_the_libraries(predictor, record, target, name):  # type: ignore[no-untyped-def]
    """The probabilities from the booster's ``inplace_predict`` or the DNN module's forward."""
    from scoutless.models.dnn_inputs import feature_tensors
    from scoutless.models.temperature import softmax

    model = predictor._models[target][name]
    encoded = predictor.encoder.transform(record)
    if name == "dnn":
        return softmax(model._torch_logits(*feature_tensors(encoded)) / model.temperature_)
    matrix = model._matrix(encoded)
    return model.booster_.inplace_predict(matrix, validate_features=False).reshape(1, -1)
