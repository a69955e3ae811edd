"""What the service benchmarks serve: a small learnable table to train a tiny bundle on and
to draw request bodies from, histories in a database (generated once, the same every time),
task ids sampled from them, and the history world (a bundle trained with history features,
a filled store, tasks whose keys have history and tasks whose keys have none). A helper
module of ``serve.py``, not a benchmark of its own.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from scoutless.config import Settings
from scoutless.features.spec import PANDA_FEATURES
from scoutless.history.table import TrainingTable
from scoutless.targets.bins import load_bins
from scoutless.targets.spec import class_col, value_col


def demo_table(n: int = 600, seed: int = 0) -> TrainingTable:
    """A small learnable table: class depends on processing type and cores."""
    rng = np.random.default_rng(seed)
    kinds = np.array(["evgen", "simul", "reco", "deriv", "merge"])
    kind = rng.integers(0, len(kinds), n)
    frame = pd.DataFrame({s.name: [None] * n for s in PANDA_FEATURES})
    frame["processingtype"] = kinds[kind]
    frame["prodsourcelabel"] = np.where(rng.random(n) < 0.8, "managed", "user")
    for spec in PANDA_FEATURES:
        if spec.kind == "numerical":
            frame[spec.name] = rng.lognormal(3, 1, n)
    frame["corecount"] = rng.choice([1.0, 8.0], n)
    bins = load_bins()
    scale = {"memory": 700.0, "cputime": 60.0, "io": 300.0, "walltime": 9000.0}
    for target, b in bins.items():
        values = scale[target] * (1 + kind) * rng.lognormal(0, 0.3, n)
        frame[value_col(target)] = values
        frame[class_col(target)] = b.classify(values)
    frame["split_random"] = np.where(rng.random(n) < 0.2, "test", "train")
    return TrainingTable(frame, list(PANDA_FEATURES), bins)


def request_rows(n: int, seed: int = 1) -> list[dict]:
    table = demo_table(max(n, 50), seed)
    rows = table.X().head(n)
    return json.loads(rows.to_json(orient="records"))


def sample_task_ids(db_url: str, n: int, seed: int = 3) -> list[int]:
    from scoutless.history.panda_db import make_engine, task_ids

    engine = make_engine(db_url, create_dirs=False)
    try:
        ids = task_ids(engine)
    finally:
        engine.dispose()
    rng = np.random.default_rng(seed)
    return [int(i) for i in rng.choice(ids, size=min(n, len(ids)), replace=False)]


def chunks(items: list, k: int) -> list[list]:
    """``items`` in groups of ``k`` (a last, shorter group dropped: every group is ``k``)."""
    return [items[i : i + k] for i in range(0, len(items) - k + 1, k)]


def history_world(folder: Path, n_tasks: int) -> tuple[Path, str, list[int], list[int]]:
    """A generated history whose store holds every finished task, a bundle trained with
    history features, and two groups of task ids: tasks whose user, transformation and
    campaign have history, and as many tasks moved afterwards to keys nobody has used
    (same rows otherwise: the same query, no history, flagged ``history_missing``)."""
    from sqlalchemy import update

    from scoutless.history.build import build_training_table, task_history_frame
    from scoutless.history.panda_db import make_engine, metadata, read_history
    from scoutless.history.store import update_store
    from scoutless.history.task_reader import TASK_HISTORY_KEYS
    from scoutless.targets.estimators import compute_task_targets
    from scoutless.targets.spec import TARGET_NAMES
    from scoutless.training import train_bundle

    url = ensure_history(f"sqlite:///{folder / 'history_store.sqlite'}", n_tasks)
    engine = make_engine(url)
    try:
        history = read_history(engine)
        table, _ = build_training_table(history, with_history=True, settings=Settings())
        bundle = train_bundle(table, folder / "history_bundle", progress=False, max_epochs=3,
                              n_jobs=1, settings=Settings())  # fmt: skip
        values = compute_task_targets(history.jobs, history.tasks, settings=Settings())
        done = task_history_frame(history.tasks, history.jobs, values)
        update_store(engine, done, TASK_HISTORY_KEYS, list(TARGET_NAMES), Settings().history)
        ids = np.random.default_rng(5).permutation(history.tasks["jeditaskid"].to_numpy())
        known, moved = [int(i) for i in ids[:500]], [int(i) for i in ids[500:1000]]
        tasks = metadata.tables["jedi_tasks"]
        with engine.begin() as conn:
            for i in moved:
                new = {c: f"nobody-{i}" for c in TASK_HISTORY_KEYS.values()}
                conn.execute(update(tasks).where(tasks.c.jeditaskid == i).values(**new))
    finally:
        engine.dispose()
    return bundle, url, known, moved


def add_world(parser: argparse.ArgumentParser) -> None:
    """The options :func:`served_world` reads: ``--bundle`` and ``--db``."""
    parser.add_argument("--bundle", type=Path)
    parser.add_argument("--db", help="history with tasks (default: a small synthetic one)")


def served_world(folder: Path, bundle: Path | None, db_url: str | None) -> tuple[Path, str]:
    """What a service benchmark serves: ``bundle``, else a tiny one trained on
    :func:`demo_table` (a few seconds); ``db_url``, else a small generated history."""
    if bundle is None:
        from scoutless.training import train_bundle

        bundle = train_bundle(
            demo_table(), folder / "bundle", progress=False, max_epochs=3, n_jobs=1, settings=Settings()
        )
    return bundle, db_url or small_history(folder)


def small_history(folder: Path, n_tasks: int = 2000) -> str:
    return ensure_history(f"sqlite:///{folder / 'history.sqlite'}", n_tasks)


def ensure_history(url: str, n_tasks: int) -> str:
    """``url`` holding a history: generated (``n_tasks``, seed 1) where it has no task yet,
    so ``--pg-url`` on an empty database (``scripts/services.sh`` creates
    ``scoutless_bench``) measures the same kind of history every time."""
    from scoutless.history.panda_db import DatabaseUnavailable, make_engine, task_ids
    from scoutless.history.synthetic import generate_history

    engine = make_engine(url)
    try:
        try:
            present = bool(task_ids(engine))
        except DatabaseUnavailable:  # no task table yet
            present = False
        if not present:
            print(f"generating {n_tasks} tasks into {engine.url.render_as_string()}",
                  file=sys.stderr)  # fmt: skip
            generate_history(engine, n_tasks, seed=1, progress=False)
    finally:
        engine.dispose()
    return url
