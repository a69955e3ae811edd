"""The sizing benchmark's measures: the peers' code switched and compared cell by cell,
and the constants chosen leaving one workflow out."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmark_modules import benchmark_module


def test_the_peers_main_gets_only_the_switch(tmp_path: Path) -> None:
    src = tmp_path / "sizey"
    (src / "results").mkdir(parents=True)
    (src / "results" / "old.csv").write_text("stale")
    text = "x = 1\nfor task in t:\n    for error_strat in ERROR_STRATEGY:\n        run()\n"
    (src / "main.py").write_text(text)
    with benchmark_module("peers_code") as pc:
        work = pc.prepare(src, tmp_path / "work")
        patched = (work / "main.py").read_text()
        assert patched == text.replace(pc.LOOP, pc.SWITCHED)
        assert list((work / "results").iterdir()) == []
        (src / "main.py").write_text("nothing to switch\n")
        with pytest.raises(ValueError, match="no line"):
            pc.prepare(src, tmp_path / "again")


def test_cells_are_compared_relative_and_failures_exact() -> None:
    runs = {"1996": {"workflows": {"iwd": {
        "methods": {"tovar": {"wastage_gbh": 2.0, "failures": 3},
                    "vpa": {"wastage_gbh": 9.0, "failures": 0}},
        "offline": {"witt_lwr": {"wastage_gbh": 0.5, "failures": 120}}}}}}  # fmt: skip
    same = {"1996": {"iwd": {"tovar": {"wastage_gbh": 2.0 * (1 + 1e-12), "failures": 3},
                             "witt_lwr_offline": {"wastage_gbh": 0.49, "failures": 123}}}}  # fmt: skip
    with benchmark_module("peers_code") as pc:
        out = pc.compare(runs, same)
        assert out["met"] and out["worst_cell"] == "1996/iwd/tovar" and out["max_gap"] < 1e-9
        assert out["witt_lwr_offline"]["1996/iwd/witt_lwr_offline"]["failures"] == [120, 123]
        same["1996"]["iwd"]["tovar"]["failures"] = 4
        assert not pc.compare(runs, same)["met"]


def test_each_workflow_takes_the_setting_best_on_the_others() -> None:
    # two settings; A is best on x and y, B on z: z's figure comes from A (chosen on x, y)
    ratios = {"x": (0.5, 0.9), "y": (0.6, 0.9), "z": (0.9, 0.4)}
    with benchmark_module("sizing_constants") as sc:
        a, b = list(sc.grid())[:2]
        run = {"workflows": {}, "sensitivity": {}}
        for wf, (ra, rb) in ratios.items():
            run["workflows"][wf] = {"goal": {"scoutless": {"baseline_wastage_gbh": 10.0}}}
            cells = {k: {"wastage_gbh": 10.0, "failures": 1} for k in sc.grid()}
            cells[a], cells[b] = ({"wastage_gbh": 10 * ra, "failures": 1},
                                  {"wastage_gbh": 10 * rb, "failures": 2})  # fmt: skip
            run["sensitivity"][wf] = cells
        out = sc.leave_one_out({"1": run})
    assert out["chosen"]["z"]["setting"] == a
    assert out["chosen"]["z"]["ratios"] == {"1": pytest.approx(0.9)}
    assert out["table"][b]["failures"] == 6 and out["table"][a]["median_ratio"] == pytest.approx(0.6)


def test_a_baseline_is_dominated_only_by_a_curve_point_at_or_below_on_both() -> None:
    # the curve (10, 9) (20, 4) (40, 1): vpa (25, 4) is dominated by (20, 4); jedi (15, 2)
    # is below every point on one of the two; the users' presets never fail: not asked
    with benchmark_module("sizing_constants") as sc:
        keys = list(sc.trade_settings(4.0))
        points = [(10.0, 9), (20.0, 4), (40.0, 1), (80.0, 0), (160.0, 0)]
        curve = dict(zip(keys, points, strict=True))
        sens = {k: {"wastage_gbh": w, "failures": f} for k, (w, f) in curve.items()}
        methods = {"vpa": {"wastage_gbh": 25.0, "failures": 4}, "jedi": {"wastage_gbh": 15.0, "failures": 2},
                   "users_presets_fair": {"wastage_gbh": 5.0, "failures": 0}}  # fmt: skip
        run = {"workflows": {"iwd": {"methods": methods}}, "sensitivity": {"iwd": sens}}
        out = sc.trade_off({"1996": run}, 4.0)
    (cell,) = out["cells"]
    assert cell["not_dominated"] == ["jedi"] and not cell["met"]
    assert [p["penalty"] for p in cell["curve"]] == list(sc.TRADE_PENALTIES)
    assert "users_presets_fair" not in cell["baselines"] and out["met_share"] == 0.0
