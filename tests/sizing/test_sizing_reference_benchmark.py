"""The sizing reference benchmark's cross-fitting (`benchmarks/sizing_reference.py`): every
online instance sized once, by a sizer that knows every other fold's outcome and never its
own, learning nothing as it goes."""

from __future__ import annotations

import numpy as np
import pytest

from benchmark_modules import benchmark_module
from scoutless.config import SizingSettings
from scoutless.sizing.protocol import Instances, TaskType
from scoutless.sizing.run import run_types, warm_sizer

GB, HOUR = 1e9, 3_600_000.0


def _instances(need_gb: list[float]) -> Instances:
    n = len(need_gb)
    need = np.asarray(need_gb) * GB
    return Instances(need=need, runtime=np.full(n, HOUR), input_size=np.arange(1.0, n + 1) * GB,
                     cpus=np.ones(n), request=np.full(n, 16 * GB), peak=need)  # fmt: skip


def test_each_fold_sizes_its_own_instances_knowing_every_other_one() -> None:
    history = _instances([1.0, 1.1])
    task = TaskType("wf", "t", history, _instances([2.0, 3.0, 4.0, 5.0, 6.0]))
    short = TaskType("wf", "s", history, _instances([7.0]))
    with benchmark_module("sizing_reference") as reference:
        folds = [reference.cross_fit([task, short], 2, fold) for fold in (0, 1)]
    assert [t.name for t in folds[0]] == ["t", "s"] and [t.name for t in folds[1]] == ["t"]
    sized = [list(f[0].online.need / GB) for f in folds]
    known = [list(f[0].history.need / GB) for f in folds]
    assert sized == [[2.0, 4.0, 6.0], [3.0, 5.0]]  # dealt by position, order kept
    assert known == [[1.0, 1.1, 3.0, 5.0], [1.0, 1.1, 2.0, 4.0, 6.0]]
    for own, seen in zip(sized, known, strict=True):
        assert not set(own) & set(seen)  # no instance sized knowing its own outcome
    assert sorted(sized[0] + sized[1]) == [2.0, 3.0, 4.0, 5.0, 6.0]


def test_a_fold_is_sized_from_what_is_known_ahead_alone_whatever_its_order() -> None:
    """A sizer that learnt as it went would size a fold's instances differently in
    reverse; one that knows the rest ahead and learns nothing sizes them alike."""
    rng = np.random.default_rng(5)
    types = [TaskType("wf", f"t{j}", _instances(list(rng.uniform(1, 3, 12))),
                      _instances(list(rng.uniform(1, 3, 20)))) for j in range(2)]  # fmt: skip
    with benchmark_module("sizing_reference") as reference:
        folded = reference.cross_fit(types, 4, 1)
        backwards = [TaskType("wf", t.name, t.history, t.online.take(np.arange(len(t.online))[::-1]))
                     for t in folded]  # fmt: skip
        ahead = reference.sized_ahead(folded, SizingSettings())
        reversed_ = reference.sized_ahead(backwards, SizingSettings())
        learning = run_types(backwards, [warm_sizer(backwards, SizingSettings())])
    assert ahead["wastage_gbh"] > 0
    assert reversed_["wastage_gbh"] == pytest.approx(ahead["wastage_gbh"], rel=1e-12)
    assert reversed_["failures"] == ahead["failures"]
    assert learning["methods"]["scoutless"]["wastage_gbh"] != pytest.approx(ahead["wastage_gbh"])


def test_block_folds_are_contiguous_stretches_of_the_stream() -> None:
    task = TaskType("wf", "t", _instances([1.0]), _instances([2.0, 3.0, 4.0, 5.0, 6.0, 7.0]))
    with benchmark_module("sizing_reference") as reference:
        folds = [reference.cross_fit([task], 3, fold, blocks=True)[0] for fold in range(3)]
    assert [list(f.online.need / GB) for f in folds] == [[2.0, 3.0], [4.0, 5.0], [6.0, 7.0]]
    assert list(folds[1].history.need / GB) == [1.0, 2.0, 3.0, 6.0, 7.0]
