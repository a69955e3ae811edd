"""XGBoost on a Dask cluster: the same booster parameters, matrix and categorical feature
types as :mod:`scoutless.models.xgb`, trained by ``xgboost.dask`` over row blocks held by
the workers; the result is a plain booster inside the usual model object, so bundles and
the service never need Dask.

Categories are known up front: the categorical columns are the fitted vocabulary's codes
(index 0 = unknown), declared categorical (``feature_types='c'``) for the native family.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from scoutless.features.encoded import EncodedFeatures
from scoutless.models.xgb import XGBModel

if TYPE_CHECKING:
    from distributed import Client


def scatter_rows(client: Client, matrix: np.ndarray, n_blocks: int, held: list):  # type: ignore[no-untyped-def]
    """A dask array of ``matrix`` whose row blocks live on the workers (scattered once).

    The blocks' futures are appended to ``held``: the workers keep the data only while
    someone holds them, so the caller keeps ``held`` until training has finished."""
    import dask.array as da

    blocks = [b for b in np.array_split(matrix, max(1, n_blocks)) if len(b)]
    futures = client.scatter(blocks)
    held.extend(futures)
    parts = [
        da.from_delayed(f, shape=b.shape, dtype=b.dtype)
        for f, b in zip(futures, blocks, strict=True)
    ]
    return da.concatenate(parts, axis=0)


def _dask_matrix(
    client: Client, model: XGBModel, X: EncodedFeatures, y, weight, held: list, quantile: bool
):  # type: ignore[no-untyped-def]
    from xgboost import dask as dxgb

    n_blocks = 2 * len(client.scheduler_info(n_workers=-1)["workers"])
    make = dxgb.DaskQuantileDMatrix if quantile else dxgb.DaskDMatrix

    def rows(values: np.ndarray):  # type: ignore[no-untyped-def]
        return scatter_rows(client, values, n_blocks, held)

    binning = {"max_bin": model._booster_params()["max_bin"]} if quantile else {}
    return make(
        client,
        rows(model._matrix(X)),
        label=rows(y.astype(np.float32)),
        weight=None if weight is None else rows(weight.astype(np.float32)),
        feature_types=model._feature_types(X),
        enable_categorical=model.native_categorical,
        **binning,  # the booster refuses a matrix binned otherwise
    )


def fit_xgb_on_dask(
    client: Client,
    model: XGBModel,
    X: EncodedFeatures,
    y: np.ndarray,
    *,
    eval_set: tuple[EncodedFeatures, np.ndarray],
    class_weight: np.ndarray | None = None,
) -> XGBModel:
    """Fit ``model`` (either XGBoost family) on the cluster; early stopping as in ``fit``."""
    from xgboost import dask as dxgb

    X_val = eval_set[0]
    y, y_val, weight, val_weight = model._labels_and_weights(y, eval_set[1], class_weight)
    held: list = []  # the scattered blocks, alive until the booster is back
    dtrain = _dask_matrix(client, model, X, y, weight, held, quantile=True)
    evals = []  # none: a refit of a known number of trees (``XGBModel.for_refit``)
    if len(y_val):
        evals = [(_dask_matrix(client, model, X_val, y_val, val_weight, held, False), "validation")]
    params = model._booster_params()
    params.pop("nthread", None)  # each worker uses its own threads
    output = dxgb.train(
        client,
        params,
        dtrain,
        num_boost_round=model.n_estimators,
        evals=evals,
        early_stopping_rounds=model.early_stopping_rounds if evals else None,
        verbose_eval=False,
    )
    held.clear()  # release the blocks
    return model._keep_best(output["booster"])
