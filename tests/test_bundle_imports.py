"""Loading a bundle and predicting one task imports only what its models need: an XGBoost
bundle's path (``taskparams``, the service's first request) never imports torch, whose
import alone costs about a second; nor does scoutless import scikit-learn for itself there
(XGBoost may, when it is installed)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import make_small_table

PROBE = """
import json, sys
from scoutless.bundle import load_bundle
predictor = load_bundle(sys.argv[1])
record = json.loads(sys.argv[2])
proba = predictor.predict_proba(record)
print(json.dumps({"modules": sorted({m.split(".")[0] for m in sys.modules}),
                  "proba": {t: p.tolist() for t, p in proba.items()}}))
"""


@pytest.fixture(scope="module")
def xgb_bundle(tmp_path_factory):
    from scoutless.training import train_bundle

    table = make_small_table(n=600)
    out = tmp_path_factory.mktemp("bundles") / "xgb"
    train_bundle(table, out, models=["xgb"], progress=False, n_jobs=1)
    return out, table


def test_an_xgb_bundle_loads_and_predicts_without_torch(xgb_bundle):
    from scoutless.bundle import load_bundle

    path, table = xgb_bundle
    predictor = load_bundle(path)
    record = table.frame[[s.name for s in predictor.feature_specs]].iloc[0].to_dict()
    record = json.loads(json.dumps(record, default=str))
    run = subprocess.run(
        [sys.executable, "-c", PROBE, str(path), json.dumps(record)],
        capture_output=True, text=True, check=True, timeout=120,
    )  # fmt: skip
    answer = json.loads(run.stdout)
    assert "torch" not in answer["modules"]
    expected = predictor.predict_proba(record)
    for target, proba in expected.items():
        np.testing.assert_allclose(answer["proba"][target], proba, rtol=0, atol=1e-12)
