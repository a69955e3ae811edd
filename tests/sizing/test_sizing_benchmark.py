"""The sizing benchmark's measures: the peers' code switched and compared cell by cell,
and the constants chosen leaving one workflow out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmark_modules import benchmark_module


def test_the_peers_main_gets_only_the_switch(tmp_path: Path) -> None:
    src = tmp_path / "sizey"
    (src / "results").mkdir(parents=True)
    (src / "results" / "old.csv").write_text("stale")
    text = ("x = 1\nfor task in t:\n    for error_strat in ERROR_STRATEGY:\n        run()\n"
            "\nmain_witt_wastage(wf_name, seed)\n")  # fmt: skip
    (src / "main.py").write_text(text)
    with benchmark_module("peers_code") as pc:
        work = pc.prepare(src, tmp_path / "work")
        patched = (work / "main.py").read_text()
        assert patched == text.replace(pc.LOOP, pc.SWITCHED).replace(pc.LWR_CALL, pc.LWR_SWITCHED)
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


def test_a_written_comparison_resumes_without_running_its_workflows(tmp_path: Path) -> None:
    runs = {"1996": {"workflows": {"iwd": {
        "methods": {"tovar": {"wastage_gbh": 2.0, "failures": 3}},
        "offline": {"witt_lwr": {"wastage_gbh": 0.5, "failures": 120}}}}}}  # fmt: skip
    peers = {"1996": {"iwd": {"tovar": {"wastage_gbh": 2.5, "failures": 3},
                              "witt_lwr_offline": {"wastage_gbh": 0.49, "failures": 123}}}}  # fmt: skip
    out = tmp_path / "peers.json"
    with benchmark_module("peers_code") as pc:
        first = pc.compare(runs, peers) | {"workflows": ["iwd"], "seconds": 7.0}
        out.write_text(json.dumps(first))
        assert pc.written(out) == peers
        # iwd is done at the one seed asked: nothing is prepared or run (the checkout does not exist)
        again = pc.reference(tmp_path / "no-checkout", "no-python", runs, ["iwd"], [1996], out)
    assert again["cells"] == first["cells"] and again["workflows"] == ["iwd"]
    assert again["witt_lwr_offline"] == first["witt_lwr_offline"]


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


def test_sizeys_model_is_cut_to_the_first_instances_and_its_regression_switched(
    tmp_path: Path,
) -> None:
    with benchmark_module("sizey_model") as sm:
        src = tmp_path / "sizey"
        src.mkdir()
        text = f"a = 1\n    x({sm.MODEL_CALL} wf)\n{sm.LWR_CALL[1:]} seed)\n"
        (src / "main.py").write_text(text)
        work = sm.prepare_model(src, tmp_path / "work")
        patched = (work / "main.py").read_text()
        assert sm.FIRST_CALL in patched and sm.LWR_SWITCHED in "\n" + patched
        (work / "results" / "done.csv").write_text("kept")
        assert sm.prepare_model(src, tmp_path / "work") == work  # a run cut short resumes
        assert (work / "results" / "done.csv").read_text() == "kept"
        (src / "main.py").write_text("no call\n")
        with pytest.raises(ValueError, match="to switch"):
            sm.prepare_model(src, tmp_path / "other")


def test_each_method_is_summed_over_the_instances_sizeys_model_sized(tmp_path: Path) -> None:
    head = "Method,Error_Strategy,Offset_Strategy,Task_Name,Wastage_GBh,Failures,Experimental_Time\n"
    rows = ["Sizey,MAX_EVER_OBSERVED,DYNAMIC,T,1.0,1,30", "Sizey,MAX_EVER_OBSERVED,DYNAMIC,T,2.0,0,40",
            "Tovar,Default,Default,T,0.5,0,0", "Tovar,Default,Default,T,0.25,1,0",
            "Tovar,Default,Default,T,9.0,3,0", "Witt-Ice,Default,Default,T,0.1,0,0",
            "Tovar,Default,Default,U,4.0,0,0"]  # fmt: skip
    path = tmp_path / "tasks.csv"
    path.write_text(head + "\n".join(rows) + "\n")
    with benchmark_module("sizey_model") as sm:
        theirs = sm.theirs_first(path, 3)
        assert theirs["T"]["sizey"] == [(1.0, 1), (2.0, 0)]  # a run cut short: two reached
        assert theirs["T"]["tovar"] == [(0.5, 0), (0.25, 1), (9.0, 3)]
        assert "witt_lwr_offline" not in theirs["T"]  # offline: another split
        assert sm.model_seconds(path) == {"instances": 2, "total": 70.0, "median": 35.0}
        ours = {"T": {"tovar": [(0.5, 0), (0.25, 1), (7.0, 0)],
                      "scoutless": [(0.25, 0), (0.25, 0), (0.0, 0)]},
                "U": {"tovar": [(4.0, 0)]}}  # fmt: skip
        out = sm.side_by_side(ours, theirs)  # U: the model never reached it
        assert out["ranking"] == ["scoutless", "tovar", "sizey"]
        assert out["methods"]["tovar"] == {"wastage_gbh": 0.75, "failures": 1, "instances": 2}
        assert out["cross_check"]["met"] and out["cross_check"]["cells"] == 1
        assert list(out["per_type"]) == ["T"]
        ours["T"]["tovar"][1] = (0.25, 2)
        assert not sm.side_by_side(ours, theirs)["cross_check"]["failures_equal"]


def test_our_first_instances_are_the_whole_walks_first(monkeypatch: pytest.MonkeyPatch) -> None:
    from nf_synthetic import synthetic_workflow
    from scoutless.sizing import lwr

    monkeypatch.setattr(lwr, "MODELS", 1)
    monkeypatch.setattr(lwr, "COBYLA_STEPS", 20)
    frame = synthetic_workflow(rows=40)
    with benchmark_module("sizey_model") as sm:
        few, all_ = sm.ours_first(frame, "demo", 1996, 3), sm.ours_first(frame, "demo", 1996, 10**6)
    assert set(few) == set(all_) and len(few) == 3
    for task, methods in few.items():
        assert len(methods["scoutless"]) == 3 and methods["oracle"] == [(0.0, 0)] * 3
        for method, costs in methods.items():  # the first three as the whole walk has them
            assert costs == all_[task][method][:3]
            assert len(all_[task][method]) > 3


def test_a_recount_keeps_the_models_figures_and_counts_ours_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An engine change re-counts this project's methods on the instances Sizey's model
    sized (its per-type count), the model's own figures carried, and says whether every
    baseline came out as before."""
    with benchmark_module("sizey_model") as sm:
        ours = {"T": {"tovar": [(0.5, 0), (0.25, 1), (7.0, 0)],
                      "scoutless": [(0.125, 0), (0.125, 1), (9.0, 0)]}}  # fmt: skip
        monkeypatch.setattr(sm, "ours_first", lambda frame, wf, seed, first: ours)
        sizey = {"wastage_gbh": 3.0, "failures": 1, "instances": 2}
        old_tovar = {"wastage_gbh": 0.75, "failures": 1, "instances": 2}
        block = {"seed": 1996, "first": 3, "carried": "older words", "workflows": {"wf": {
            "methods": {"tovar": old_tovar, "sizey": sizey,
                        "scoutless": {"wastage_gbh": 5.0, "failures": 0, "instances": 2}},
            "ranking": ["tovar", "sizey", "scoutless"], "types": 1,
            "per_type": {"T": {"sizey": sizey}}}}}  # fmt: skip
        out = sm.recount(block, {"wf": None}, "old.json")
        cell = out["workflows"]["wf"]
        assert cell["methods"]["scoutless"] == {"wastage_gbh": 0.25, "failures": 1, "instances": 2}
        assert cell["methods"]["sizey"] == sizey and cell["ranking"][0] == "scoutless"
        assert out["recount"]["baselines_equal"] and out["recount"]["from"] == "old.json"
        assert "carried" not in out and cell["types"] == 1
        ours["T"]["tovar"][0] = (0.75, 0)  # a baseline that moved: said
        assert not sm.recount(block, {"wf": None}, "old.json")["recount"]["baselines_equal"]
