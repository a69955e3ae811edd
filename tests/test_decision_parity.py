"""One decision everywhere, on the small demo's test tasks: the service by id and posted,
``taskparams``, the listener's message and the replay's ``predicted`` strategy allocate the
same values, under the default settings and under a settings file with resource_prices
and a kill cap per target (benchmarks/parity.py; its 1,000-task run is in results/)."""

from __future__ import annotations

from benchmark_modules import benchmark_module


def test_every_entry_point_allocates_what_the_service_answers(demo_workdir, tmp_path):
    with benchmark_module("parity") as parity:
        ids = parity.test_tasks(demo_workdir, 40)
        priced = parity.settings_from_file(parity.PRICED_TOML, tmp_path)
        assert priced.allocation.resource_prices["MCORE"]["memory_gb_hour"] == 5.0
        assert priced.allocation.kill_cap("memory") == 0.1
        answers = []
        for settings in (parity.Settings(), priced):
            result = parity.compare(demo_workdir, settings, ids, tmp_path)
            for source in ("posted", "taskparams", "replay_predicted", "listener"):
                assert result[source]["compared"] >= 0.9 * len(ids), (source, result[source])
                assert result[source]["mismatches"] == [], (source, result[source])
            answers.append(result["answers"])
        # the settings file reaches the answers: its prices and caps move some allocations
        default, priced_answers = answers
        assert any(default[i] != priced_answers[i] for i in default)


def test_the_demo_bundle_carries_the_jobs_spread_and_an_older_bundle_prices_none(
    demo_workdir, tmp_path
):
    import shutil

    from scoutless.bundle import JOB_SPREADS, load_bundle

    carried = load_bundle(demo_workdir / "bundle").job_spreads
    assert carried is not None and {"memory", "cputime"} <= set(carried.factors)
    older = shutil.copytree(demo_workdir / "bundle", tmp_path / "older")
    (older / JOB_SPREADS).unlink()
    assert load_bundle(older).job_spreads is None
