"""Bad replay configuration is refused with one message naming the key."""

from __future__ import annotations

import json

import pytest

from scoutless.config import Settings
from scoutless.replay.config import ReplayConfigError, ReplaySettings, replay_settings
from scoutless.replay.runner import write_json_atomic


def test_panda_defaults():
    cfg = Settings().replay
    assert (cfg.n_scouts, cfg.check_interval_s, cfg.retune_done_jobs) == (10, 600.0, [5, 100])
    assert cfg.memory_kill_factor == 2.0 and cfg.task_raise_share == 0.3
    assert cfg.ram_ladder_mb_per_core == [1000, 2000, 3000, 4000, 6000, 8000]
    assert cfg.resource_types["SCORE"].mb_per_core == 2000
    assert cfg.resource_types["SCORE_HIMEM"].mb_per_core == 3000


def test_a_negative_slot_count_names_its_key(tmp_path):
    path = tmp_path / "replay.toml"
    path.write_text("[replay.resource_types.SCORE]\ncores = -4\n")
    with pytest.raises(ReplayConfigError, match=r"resource_types\.SCORE\.cores") as err:
        replay_settings(ReplaySettings(), path)
    assert str(path) in str(err.value)


def test_an_unknown_strategy_names_its_key():
    with pytest.raises(ReplayConfigError, match=r"replay\.strategies.*'scout'"):
        replay_settings(ReplaySettings(), strategies=["scouts", "scout"])


def test_unknown_keys_and_bad_toml_are_refused(tmp_path):
    path = tmp_path / "replay.toml"
    path.write_text("memory_kill_factr = 1\n")
    with pytest.raises(ReplayConfigError, match="memory_kill_factr"):
        replay_settings(ReplaySettings(), path)
    path.write_text("memory_kill_factor = = 1\n")
    with pytest.raises(ReplayConfigError, match="not valid TOML"):
        replay_settings(ReplaySettings(), path)
    with pytest.raises(ReplayConfigError, match="cannot read"):
        replay_settings(ReplaySettings(), tmp_path / "missing.toml")


def test_a_file_overrides_one_field_of_a_resource_type(tmp_path):
    path = tmp_path / "replay.toml"
    path.write_text("memory_kill_factor = 1.0\n[resource_types.MCORE]\ncores = 800\n")
    cfg = replay_settings(ReplaySettings(), path)
    assert cfg.memory_kill_factor == 1.0
    assert cfg.resource_types["MCORE"].cores == 800
    assert cfg.resource_types["MCORE"].mb_per_core == 2000  # kept


def test_an_interrupted_write_leaves_the_previous_file(tmp_path, monkeypatch):
    path = write_json_atomic(tmp_path / "replay.json", {"strategies": {"scouts": {}}})
    before = path.read_bytes()

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr("scoutless.replay.runner.json.dumps", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_json_atomic(path, {"strategies": {}})
    assert path.read_bytes() == before
    assert json.loads(before)["strategies"] == {"scouts": {}}
    assert [p.name for p in tmp_path.iterdir()] == ["replay.json"]
