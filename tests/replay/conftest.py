"""The replay tests' helpers live in replay_helpers.py (importable by name); the small
synthetic history and its bundle are shared by the CLI and canary tests."""

from __future__ import annotations

import pytest

from scoutless.config import Settings


@pytest.fixture(scope="session")
def small(tmp_path_factory):
    """(folder, url): a 300-task synthetic history, its table and an xgb bundle."""
    from scoutless.history.build import build_table_from_db
    from scoutless.history.panda_db import make_engine
    from scoutless.history.synthetic import generate_history
    from scoutless.training import train_bundle

    folder = tmp_path_factory.mktemp("replay")
    url = f"sqlite:///{folder / 'history.sqlite'}"
    engine = make_engine(url)
    generate_history(engine, 300, seed=3, progress=False)
    table, _ = build_table_from_db(engine, settings=Settings())
    engine.dispose()
    table.save(folder / "table.parquet")
    train_bundle(table, folder / "bundle", models=("xgb",), trials=0, seed=3, progress=False, settings=Settings())
    return folder, url
