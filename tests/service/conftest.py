"""Fixtures of the service tests: an in-process app on a fake bundle, real server processes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from service_fakes import TOKEN, FakePredictor, panda_history
from service_procs import ServerProcess

from scoutless.config import Settings
from scoutless.service.app import create_app


@pytest.fixture(autouse=True)
def class_policy_by_default(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The fake bundles here have no value models, so the shipped default (``cost``) cannot
    answer them: these tests, about the API's shape and the service's machinery, default to
    ``argmax`` (in process and in the servers they start). The shipped default is tested on a
    real bundle (``test_answer_coherence.py``)."""
    monkeypatch.setenv("SCOUTLESS_ALLOCATION__DEFAULT_POLICY", "argmax")
    yield


@pytest.fixture
def servers() -> Iterator[list[ServerProcess]]:
    """Start servers with ``servers.append(ServerProcess(...))``; all are stopped after."""
    started: list[ServerProcess] = []
    yield started
    for server in started:
        server.stop()


@pytest.fixture
def db_url(tmp_path: Path) -> str:
    return panda_history(f"sqlite:///{tmp_path / 'panda.sqlite'}")


@pytest.fixture
def settings() -> Settings:
    return Settings(
        service={
            "max_batch": 50,
            "admin_token": "sesame",
            "tokens": f"tester predict,read {TOKEN}",
        }
    )


@pytest.fixture
def client(db_url: str, settings: Settings) -> Iterator[TestClient]:
    app = create_app(predictor=FakePredictor(), db_url=db_url, settings=settings)
    with TestClient(app, headers={"Authorization": f"Bearer {TOKEN}"}) as c:
        yield c
