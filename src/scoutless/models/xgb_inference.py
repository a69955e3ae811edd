"""XGBoost's ``multi:softprob`` prediction in numpy, for a few rows at a time.

``inplace_predict`` has a fixed cost per call whatever the rows: argument checking and
JSON configuration through the C API, not the trees. A served task is one row, and four
targets pay it four times. Here all trees are walked at once, one level per step, as a
few array operations, which cost less for a row than that fixed cost
(``benchmarks/xgb_inference.py``, ``results/xgb_inference.json``).

The decisions follow XGBoost's CPU predictor (``predict_fn.h``, ``GetNextNode``): a
missing value (NaN) takes the node's default child; a numerical split goes left iff
``x < condition`` in float32; a categorical split lists the categories that go right, and
a category not listed (including a negative one) goes left. Margins are the intercept
plus the leaves summed in float32 in tree order, as XGBoost sums them, then its softmax.

The value models' ``reg:squarederror`` boosters are walked the same way: one output, the
intercept plus the leaves, no softmax (:meth:`TreeEnsemble.predict_value`).

A bundle keeps each checked ensemble beside its booster (:meth:`TreeEnsemble.save`), so
serving reads the arrays without importing XGBoost (and the scikit-learn it imports).

A model this does not know (another objective or booster, vector leaves, re-coded
categories), or one whose predictions on probe rows differ from ``inplace_predict``, is
refused (:func:`compile_booster` returns None) and the caller keeps ``inplace_predict``:
a newer XGBoost that changes its semantics degrades to the slow path, never to wrong
answers.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, fields
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from scoutless.models import tree_walk

if TYPE_CHECKING:
    import xgboost as xgb

log = logging.getLogger(__name__)

#: probe rows compared with ``inplace_predict`` before a compiled ensemble is used
N_PROBES = 32

#: most rows x nodes predicted here: the walk's cost grows with rows x nodes, the fixed
#: cost of ``inplace_predict`` does not, so above it ``inplace_predict`` is faster
#: (``benchmarks/xgb_inference.py``; its figures in ``results/xgb_inference.json``)
MAX_CELLS = 1 << 16

#: most cells of the dense table of categories going right (bytes; 16 MB)
DENSE_MAX = 1 << 24

#: the objectives walked here: class probabilities, and a value (the value models)
CLASSES, VALUE = "multi:softprob", "reg:squarederror"


class UnsupportedModel(ValueError):
    """The booster is not a plain ``multi:softprob`` tree ensemble this module reproduces."""


@dataclass(frozen=True, eq=False)
class TreeEnsemble:
    """All trees of one booster as flat node arrays; a leaf is its own left child and
    never goes right, so every row can take the same number of steps. The first round
    is one leaf per class holding the intercept, so the margin is a sum over rounds."""

    roots: np.ndarray  # (n_trees,) node index of each tree's root
    left: np.ndarray  # (n_nodes,) left child; the right child is left + 1, as XGBoost allocates
    inner: np.ndarray  # (n_nodes,) bool: a split, not a leaf
    feature: np.ndarray  # (n_nodes,) split feature (0 for leaves)
    threshold: np.ndarray  # (n_nodes,) float32 split condition
    default_right: np.ndarray  # (n_nodes,) where a missing value goes
    categorical: np.ndarray  # (n_categorical,) nodes with a categorical split
    right_keys: np.ndarray  # sorted rank in ``categorical`` * width + category going right
    width: int  # one above the largest category any split lists
    value: np.ndarray  # (n_nodes,) float32 leaf value (0 for inner nodes)
    n_classes: int  # 1 for a value
    depth: int  # levels below the deepest root
    objective: str = CLASSES

    def decisions(self, X: np.ndarray) -> np.ndarray:
        """(n, n_nodes) whether each row goes right at each node: every split decided
        once, as a few array operations, instead of a few per level."""
        # take, not X[:, feature]: fancy indexing returns more than one row column-major,
        # and every operation after then strides through memory
        x = X.take(self.feature, axis=1)
        right = ~(x < self.threshold)
        if len(self.categorical):
            right[:, self.categorical] = self._listed(x.take(self.categorical, axis=1))
        missing = np.isnan(x)
        if missing.any():
            right = np.where(missing, self.default_right, right)
        return right & self.inner

    def _listed(self, codes: np.ndarray) -> np.ndarray:
        """Whether each categorical node's category is among those it sends right; a
        negative or never-listed category goes left, as in XGBoost."""
        valid = (codes >= 0) & (codes < self.width)
        code = np.where(valid, codes, 0).astype(np.intp)
        if self.listed is not None:
            return valid & self.listed[self._ranks, code]
        key = self._ranks * self.width + code
        at = np.minimum(np.searchsorted(self.right_keys, key), len(self.right_keys) - 1)
        return valid & (self.right_keys[at] == key)

    def fits(self, n_rows: int) -> bool:
        """Whether ``n_rows`` rows are predicted faster here than by ``inplace_predict``
        (in numpy; the models ask it of one row, so a batch of up to
        ``FastPaths.rows`` rows takes the path one of its rows takes alone)."""
        return n_rows * len(self.left) <= MAX_CELLS

    @cached_property
    def _walk_arrays(self) -> tuple:
        """The compiled walk's arguments after ``X``, in the dtypes it was compiled for:
        the node arrays, each node's rank among the categorical ones (-1: numerical), and
        the categories going right as the dense table (flat; empty where it would be too
        large) and as sorted keys."""
        rank = np.full(len(self.left), -1, dtype=np.intp)
        rank[self.categorical] = np.arange(len(self.categorical))
        flat = np.ascontiguousarray
        listed = np.zeros(0, bool) if self.listed is None else self.listed.ravel()
        return (
            flat(self.roots, np.intp), flat(self.left, np.intp), flat(self.feature, np.intp),
            flat(self.threshold, np.float32), flat(self.default_right, bool),
            flat(self.inner, bool), rank, flat(self.right_keys, np.int64), flat(listed, bool),
            int(self.width), flat(self.value, np.float32), int(self.n_classes),
        )  # fmt: skip

    @cached_property
    def _ranks(self) -> np.ndarray:
        return np.arange(len(self.categorical), dtype=np.intp)

    @cached_property
    def listed(self) -> np.ndarray | None:
        """(n_categorical, width) table of the categories going right, where it is at
        most :data:`DENSE_MAX` cells (one gather); above that, binary search of the keys."""
        if not len(self.categorical) or len(self.categorical) * self.width > DENSE_MAX:
            return None
        table = np.zeros(len(self.categorical) * self.width, dtype=bool)
        table[self.right_keys] = True
        return table.reshape(len(self.categorical), self.width)

    def leaves(self, X: np.ndarray) -> np.ndarray:
        """(n, n_trees) leaf node each row reaches in each tree."""
        right = self.decisions(X)
        n_nodes = right.shape[1]
        offset = (np.arange(len(X)) * n_nodes)[:, None]
        step = (self.left + offset + right).ravel()  # row-major index of each node's next
        node = self.roots + offset
        for _ in range(self.depth):
            node = step[node]
        return node - offset

    def margin(self, X: np.ndarray) -> np.ndarray:
        """(n, n_classes) float32 margins: the intercept, then each round's leaf, added
        in that order (``cumsum`` adds sequentially, as XGBoost does; ``sum`` does not).
        Compiled where the service loaded :mod:`.tree_walk`, the same sums bit for bit."""
        walk = tree_walk.kernel()
        if walk is not None:
            return walk(np.ascontiguousarray(X, dtype=np.float32), *self._walk_arrays)
        rounds = self.value[self.leaves(X)].reshape(len(X), -1, self.n_classes)
        return np.cumsum(rounds, axis=1, dtype=np.float32)[:, -1]

    def predict_proba(self, X: np.ndarray) -> np.ndarray:
        """(n, n_classes) float64 class probabilities of float32 matrix ``X``."""
        margin = self.margin(X)
        # the reductions ndarray.max and .sum call, without their Python wrappers on every
        # served task and target
        e = np.exp(margin - np.maximum.reduce(margin, axis=1, keepdims=True))
        return (e / np.add.reduce(e, axis=1, keepdims=True)).astype(np.float64)

    def predict_value(self, X: np.ndarray) -> np.ndarray:
        """(n,) float32 predictions of a ``reg:squarederror`` ensemble (the margin itself)."""
        return self.margin(X)[:, 0]

    def predict(self, X: np.ndarray) -> np.ndarray:
        """What ``inplace_predict`` returns for this objective: probabilities or values."""
        return self.predict_value(X) if self.objective == VALUE else self.predict_proba(X)

    def save(self, path: Path) -> None:
        """Every field in one uncompressed ``.npz``, read back by :meth:`load`."""
        np.savez(path, **{f.name: np.asarray(getattr(self, f.name)) for f in fields(self)})

    @classmethod
    def load(cls, path: Path) -> TreeEnsemble:
        """The ensemble :meth:`save` wrote; ``ValueError`` naming ``path`` if a field lacks."""
        with np.load(path, allow_pickle=False) as npz:
            arrays = dict(npz)
        try:
            values = {f.name: arrays[f.name] for f in fields(cls)}
        except KeyError as exc:
            raise ValueError(f"{path}: tree ensemble lacks array {exc}") from exc
        for name in ("width", "n_classes", "depth"):
            values[name] = int(values[name])
        values["objective"] = str(values["objective"])
        return cls(**values)


def _checked_model(booster: xgb.Booster) -> tuple[dict, np.ndarray, str]:
    """The booster's tree model, intercept and objective, or :class:`UnsupportedModel`."""
    learner = json.loads(booster.save_raw("json"))["learner"]
    if learner["objective"]["name"] not in (CLASSES, VALUE):
        raise UnsupportedModel(f"objective {learner['objective']['name']}")
    if learner["gradient_booster"]["name"] != "gbtree":
        raise UnsupportedModel(f"booster {learner['gradient_booster']['name']}")
    model = learner["gradient_booster"]["model"]
    if model.get("cats", {}).get("enc"):
        raise UnsupportedModel("categories re-coded by the booster")
    param = learner["learner_model_param"]
    n_classes = max(int(param["num_class"]), 1)  # 0 for a value
    base = json.loads(param["base_score"].replace("E", "e"))
    intercept = np.broadcast_to(np.asarray(base, dtype=np.float32), (n_classes,)).copy()
    per_round = np.tile(np.arange(n_classes), len(model["trees"]) // max(n_classes, 1))
    if int(model["gbtree_model_param"]["num_parallel_tree"]) != 1 or not np.array_equal(
        model["tree_info"], per_round
    ):
        raise UnsupportedModel("trees are not one per class per round")
    return model, intercept, learner["objective"]["name"]


def _tree_depth(left: list[int], right: list[int]) -> int:
    depth, stack = 0, [(0, 0)]
    while stack:
        node, d = stack.pop()
        depth = max(depth, d)
        if left[node] != -1:
            stack += [(left[node], d + 1), (right[node], d + 1)]
    return depth


def _tree_arrays(tree: dict, start: int) -> dict[str, np.ndarray]:
    """One tree's nodes as arrays with global indices; a leaf is its own left child."""
    if int(tree["tree_param"].get("size_leaf_vector", "1")) > 1:
        raise UnsupportedModel("vector leaves")
    left, right = np.asarray(tree["left_children"]), np.asarray(tree["right_children"])
    inner = left != -1
    if np.any(right[inner] != left[inner] + 1):
        raise UnsupportedModel("a right child is not next to its left sibling")
    condition = np.asarray(tree["split_conditions"], dtype=np.float32)
    keys = [(start + node, c)
            for node, beg, size in zip(tree["categories_nodes"], tree["categories_segments"],
                                       tree["categories_sizes"], strict=True)
            for c in tree["categories"][beg : beg + size]]  # fmt: skip
    return {
        "left": start + np.where(inner, left, np.arange(len(left))),
        "inner": inner,
        "feature": np.where(inner, tree["split_indices"], 0),
        "threshold": np.where(inner, condition, np.float32(0)),
        "value": np.where(inner, np.float32(0), condition),
        "default_right": inner & ~np.asarray(tree["default_left"], dtype=bool),
        "split_type": np.where(inner, tree["split_type"], 0),
        "keys": np.asarray(keys, dtype=np.int64).reshape(-1, 2),
    }


def _flatten(trees: list[dict], intercept: np.ndarray) -> tuple[dict[str, np.ndarray], int]:
    """Node arrays over the intercept's leaves (one per class) and all trees, and the
    depth of the deepest tree."""
    c = len(intercept)
    parts = [{"left": np.arange(c), "inner": np.zeros(c, bool), "feature": np.zeros(c, int),
              "threshold": np.zeros(c, np.float32), "value": intercept,
              "default_right": np.zeros(c, bool), "split_type": np.zeros(c, int),
              "keys": np.zeros((0, 2), np.int64)}]  # fmt: skip
    roots, start, depth = list(range(c)), c, 0
    for tree in trees:
        parts.append(_tree_arrays(tree, start))
        roots.append(start)
        start += len(tree["left_children"])
        depth = max(depth, _tree_depth(tree["left_children"], tree["right_children"]))
    flat = {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
    flat["roots"] = np.asarray(roots)
    return flat, depth


def build_ensemble(booster: xgb.Booster) -> TreeEnsemble:
    """The booster as a :class:`TreeEnsemble`; :class:`UnsupportedModel` if it is not one."""
    model, intercept, objective = _checked_model(booster)
    flat, depth = _flatten(model["trees"], intercept)
    categorical = np.flatnonzero(flat["split_type"] == 1)
    pairs = flat["keys"]
    width = int(pairs[:, 1].max()) + 1 if len(pairs) else 1
    rank = np.searchsorted(categorical, pairs[:, 0])
    return TreeEnsemble(
        roots=flat["roots"].astype(np.intp),
        left=flat["left"].astype(np.intp),
        inner=flat["inner"],
        feature=flat["feature"].astype(np.intp),
        threshold=flat["threshold"].astype(np.float32),
        default_right=flat["default_right"],
        categorical=categorical,
        right_keys=np.sort(rank * width + pairs[:, 1]),
        width=width,
        value=flat["value"].astype(np.float32),
        n_classes=len(intercept),
        depth=depth,
        objective=objective,
    )


def probe_rows(ensemble: TreeEnsemble, n_features: int, n: int, seed: int = 0) -> np.ndarray:
    """Rows that reach both sides of many splits: each feature takes one of its split
    values, a float32 step below it, a listed or unlisted category, or NaN."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_features)).astype(np.float32)
    inner = np.flatnonzero(ensemble.inner)
    for j in range(n_features):
        nodes = inner[ensemble.feature[inner] == j]
        if not len(nodes):
            continue
        picked = ensemble.threshold[rng.choice(nodes, n)]
        if np.isin(nodes, ensemble.categorical).any():
            picked = rng.integers(-1, ensemble.width + 1, n).astype(np.float32)
        X[:, j] = np.where(rng.random(n) < 0.5, picked, np.nextafter(picked, np.float32(-np.inf)))
    X[rng.random(X.shape) < 0.05] = np.nan
    return X


def compile_booster(booster: xgb.Booster) -> TreeEnsemble | None:
    """The booster as a :class:`TreeEnsemble` checked against ``inplace_predict`` on
    :data:`N_PROBES` probe rows, or None (logged) where it is unsupported or disagrees."""
    try:
        ensemble = build_ensemble(booster)
    except (UnsupportedModel, KeyError, TypeError, ValueError) as exc:
        log.info("XGBoost model predicted by inplace_predict only: %s", exc)
        return None
    X = probe_rows(ensemble, booster.num_features(), N_PROBES)
    expected = booster.inplace_predict(X, validate_features=False)
    got = ensemble.predict(X)
    if not np.allclose(got, np.asarray(expected).reshape(got.shape), rtol=1e-5, atol=1e-6):
        log.warning("XGBoost model predicted by inplace_predict only: numpy trees disagree")
        return None
    return ensemble
