"""One decision everywhere, on the small demo's test tasks: the service by id and posted,
``taskparams``, the listener's message and the replay's ``predicted`` strategy allocate the
same values, under the default settings (the room loads the bundle learnt) and under a
settings file with resource_prices, a kill cap per target and the rooms' loads
(benchmarks/parity.py; its 1,000-task run is in results/)."""

from __future__ import annotations

from benchmark_modules import benchmark_module


def test_every_entry_point_allocates_what_the_service_answers(demo_workdir, tmp_path):
    with benchmark_module("parity") as parity:
        ids = parity.test_tasks(demo_workdir, 40)
        priced = parity.settings_from_file(parity.PRICED_TOML, tmp_path)
        assert priced.allocation.resource_prices["MCORE"]["memory_gb_hour"] == 5.0
        assert priced.allocation.kill_cap("memory") == 0.1
        assert priced.allocation.room_loads["single"]["himem"] == 0.7
        answers = []
        for settings, loads_from in ((parity.Settings(), "bundle"), (priced, "settings")):
            result = parity.compare(demo_workdir, settings, ids, tmp_path)
            assert result["room_loads"]["source"] == loads_from  # what /v1/model says
            for source in ("posted", "taskparams", "replay_predicted", "listener"):
                assert result[source]["compared"] >= 0.9 * len(ids), (source, result[source])
                assert result[source]["mismatches"] == [], (source, result[source])
            answers.append(result["answers"])
        # the settings file reaches the answers: its prices and caps move some allocations
        default, priced_answers = answers
        assert any(default[i] != priced_answers[i] for i in default)


def test_the_demo_bundle_carries_what_its_history_taught_and_an_older_bundle_none(
    demo_workdir, tmp_path
):
    import shutil

    from fastapi.testclient import TestClient

    from scoutless.bundle import JOB_SPREADS, ROOM_LOADS, load_bundle
    from scoutless.config import Settings
    from scoutless.service.app import create_app

    carried = load_bundle(demo_workdir / "bundle")
    assert carried.job_spreads is not None and {"memory", "cputime"} <= set(carried.job_spreads.factors)
    assert carried.room_loads is not None
    assert 0 < carried.room_loads.to_dict()["single"]["himem"] < 1
    older = shutil.copytree(demo_workdir / "bundle", tmp_path / "older")
    (older / JOB_SPREADS).unlink()
    (older / ROOM_LOADS).unlink()
    predictor = load_bundle(older)
    assert predictor.job_spreads is None and predictor.room_loads is None
    app = create_app(older, settings=Settings(), log_predictions=False)
    with TestClient(app, client=("127.0.0.1", 50000), base_url="http://127.0.0.1") as client:
        said = client.get("/v1/model").json()["room_loads"]
    assert said["source"] == "none"  # it decides at load 0, and says so
    assert {v for width in said["loads"].values() for v in width.values()} == {0.0}
