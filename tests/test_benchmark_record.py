"""The command a benchmark's JSON records reruns it: settings the environment gave the run
lead it, secrets masked, other ``SCOUTLESS_*`` names left out."""

from __future__ import annotations

import os
import sys

import pytest

from benchmark_modules import benchmark_module


def test_the_recorded_command_carries_the_settings_the_environment_gave() -> None:
    environ = {
        "SCOUTLESS_ALLOCATION__MEMORY_KILL_SHARE": "0.5",
        "SCOUTLESS_SIZING__FAILURE_PENALTY": "4",
        "SCOUTLESS_DB_URL": "postgresql+psycopg://me:hunter2@db/panda",
        "SCOUTLESS_DB_PASSWORD": "hunter2",
        "SCOUTLESS_DB_PASSWORD_FILE": "/run/secrets/db",
        "SCOUTLESS_TEST_PG_URL": "postgresql+psycopg://postgres@127.0.0.1:5432/t",
        "SCOUTLESS_DOCS_SITE": "/tmp/site",
        "PATH": "/usr/bin",
    }
    with benchmark_module("record") as record:
        got = record.settings_env(environ)
    assert got == [
        "SCOUTLESS_ALLOCATION__MEMORY_KILL_SHARE=0.5",
        "SCOUTLESS_DB_PASSWORD=***",
        "SCOUTLESS_DB_PASSWORD_FILE=/run/secrets/db",
        "SCOUTLESS_DB_URL=postgresql+psycopg://me:***@db/panda",
        "SCOUTLESS_SIZING__FAILURE_PENALTY=4",
    ]
    assert not any("hunter2" in item for item in got)


def test_the_command_is_led_by_a_setting_given_and_bare_on_the_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in [n for n in os.environ if n.startswith("SCOUTLESS_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("SCOUTLESS_REPLAY__CANARY_SEED", "7")
    monkeypatch.setattr(sys, "argv", ["benchmarks/replay.py", "--out", "results/x.json"])
    with benchmark_module("record") as record:
        command = record.machine(0.1)["command"]
    assert (
        command
        == "SCOUTLESS_REPLAY__CANARY_SEED=7 python benchmarks/replay.py --out results/x.json"
    )
    monkeypatch.delenv("SCOUTLESS_REPLAY__CANARY_SEED")
    with benchmark_module("record") as record:
        assert record.machine(0.1)["command"] == "python benchmarks/replay.py --out results/x.json"
