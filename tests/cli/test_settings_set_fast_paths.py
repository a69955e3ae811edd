"""The command line's settings choose its small paths: reading them sets the thresholds."""

from __future__ import annotations

import pytest

import scoutless.config
from scoutless.cli import lazy
from scoutless.config import Settings
from scoutless.fast_paths import FastPaths, current, using


def test_reading_the_settings_sets_the_thresholds(monkeypatch: pytest.MonkeyPatch) -> None:
    given = Settings(inference={"small_batch": 9, "dnn_predict_batch": 11})
    monkeypatch.setattr(scoutless.config, "get_settings", lambda: given)
    with using(current()):
        assert lazy.get_settings() is given
        assert current() == FastPaths(rows=9, dnn_chunk_rows=11)
