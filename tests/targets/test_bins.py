"""Bins: edge semantics, quantile edges, bins-file merging, fitting on training rows only."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scoutless.targets.bins import (
    BinsError,
    TargetBins,
    fit_bins,
    load_bins,
    quantile_edges,
    read_bins_file,
)

MEMORY = TargetBins("memory", "MB/core", (0, 1000, 2000, math.inf), ("a", "b", "c"))


def test_a_value_on_an_edge_belongs_to_the_lower_class():
    got = MEMORY.classify([0, 1, 1000, 1000.5, 2000, 2001, 1e9, -1, np.nan])
    assert list(got) == [0, 0, 0, 1, 1, 2, 2, -1, -1]


def test_default_recommendations_are_upper_edges_and_double_the_open_class_floor():
    assert MEMORY.recommended == (1000.0, 2000.0, 4000.0)


@pytest.mark.parametrize(("edges", "match"), [((0, 1), "at least 2"), ((0, 2, 1), "increase")])
def test_bad_edges_are_refused_with_the_target_named(edges, match):
    with pytest.raises(BinsError, match=f"memory: .*{match}"):
        TargetBins("memory", "MB", edges, ("x",) * (len(edges) - 1))


def test_quantile_edges_give_equal_mass_and_merge_ties():
    values = np.arange(1, 101, dtype=float)
    edges = quantile_edges(values, 4)
    assert edges[0] == 0 and edges[-1] == math.inf
    counts = np.bincount(TargetBins("t", "", edges, ("a",) * 4).classify(values))
    assert list(counts) == [25, 25, 25, 25]
    tied = quantile_edges(np.array([1.0] * 90 + [5.0] * 10 + [np.nan, -3.0]), 4)
    assert tied == (0.0, 1.0, math.inf)  # three equal quartiles merged into one edge


def test_quantile_edges_refuse_no_or_constant_values():
    with pytest.raises(BinsError, match="no valid values"):
        quantile_edges(np.array([np.nan, -1.0]), 3)
    with pytest.raises(BinsError, match="all values are equal"):
        quantile_edges(np.zeros(10), 3)


def test_bins_file_overrides_merge_into_the_shipped_sections(tmp_path):
    path = tmp_path / "bins.toml"
    path.write_text('[memory]\nedges = [0, 3000, inf]\nlabels = ["s", "l"]\n'
                    '[walltime]\nmode = "quantiles"\nn_classes = 3\n')  # fmt: skip
    sections = read_bins_file(path)
    assert sections["memory"]["unit"] == "MB/core"  # kept from the shipped section
    assert sections["memory"]["edges"] == [0, 3000, math.inf]
    assert "edges" not in sections["walltime"] and sections["walltime"]["n_classes"] == 3
    assert sections["io"]["edges"] == [0, 500, math.inf]  # untouched
    bins = load_bins(path, values={"walltime": np.arange(1.0, 301.0)})
    assert bins["memory"].labels == ("s", "l") and bins["walltime"].n_classes == 3


def test_unreadable_bins_file_names_the_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[memory\n")
    with pytest.raises(BinsError, match=r"bad\.toml: not valid TOML"):
        read_bins_file(bad)
    with pytest.raises(BinsError, match="cannot read"):
        read_bins_file(tmp_path / "missing.toml")


def test_fit_bins_uses_the_training_values_only():
    train = {"memory": np.array([100.0, 1500, 2500, 3000, 5000]),
             "walltime": np.arange(1.0, 1001.0)}  # fmt: skip
    bins = fit_bins(train, force_quantiles=4)
    assert bins["walltime"].edges == quantile_edges(train["walltime"], 4)
    shipped = fit_bins(train)
    assert shipped["memory"].edges == (0, 1000, 2000, 4000, math.inf)
    assert shipped["memory"].recommended[-1] == pytest.approx(5000.0)  # only top value
    kept = fit_bins({"memory": train["memory"]}, given={"memory": MEMORY})
    assert kept["memory"].edges == MEMORY.edges
    assert kept["memory"].recommended[-1] == pytest.approx(np.quantile([2500, 3000, 5000], 0.9))
