"""The app factory's settings choose the service's small paths (``scoutless.fast_paths``):
the thresholds an injected ``Settings`` names, not those of the process's settings."""

from __future__ import annotations

from fastapi.testclient import TestClient
from service_fakes import TOKEN, FakePredictor

from scoutless.config import Settings
from scoutless.fast_paths import FastPaths, current, using
from scoutless.service.app import create_app


def test_the_app_s_settings_set_the_thresholds_and_the_batcher(db_url: str) -> None:
    settings = Settings(inference={"small_batch": 5}, service={"parallel_min_rows": 3})
    app = create_app(predictor=FakePredictor(), db_url=db_url, settings=settings)
    with using(current()), TestClient(app, headers={"Authorization": f"Bearer {TOKEN}"}):
        assert current() == FastPaths(rows=5, parallel_rows=3)
        assert app.state.service.backend.batcher.max_tasks == 5
    assert current() == FastPaths()  # using() gave the process its thresholds back
