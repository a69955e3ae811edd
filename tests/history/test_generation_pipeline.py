"""Generation with builder processes: same rows as inline, clear failures, safe for scripts."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap

import pandas as pd
import pytest

from scoutless.history.panda_db import create_schema, make_engine
from scoutless.history.staging import load_staged, stage_frames
from scoutless.history.synthetic import generate_chunk, generate_history, iter_chunks
from scoutless.history.synthetic.builders import BuilderFailed, build_in_processes

TABLES = {
    "jedi_tasks": "jeditaskid",
    "jedi_taskparams": "jeditaskid",
    "jedi_datasets": "datasetid",
    "jobsarchived4": "pandaid",
    "scoutless_synthetic_truth": "jeditaskid",
}


def _dump(path) -> dict[str, pd.DataFrame]:
    with sqlite3.connect(path) as conn:
        return {
            t: pd.read_sql(f"SELECT * FROM {t} ORDER BY {key}", conn) for t, key in TABLES.items()
        }


def test_staged_builders_write_exactly_what_the_inline_writer_writes(tmp_path) -> None:
    # three chunks (the last one partial) on two builders: builder 0 stages chunks 0 and 2
    inline, staged = tmp_path / "inline.sqlite", tmp_path / "staged.sqlite"
    a = generate_history(make_engine(f"sqlite:///{inline}"), 2100, seed=4, chunk_tasks=1000,
                         progress=False, workers=0)  # fmt: skip
    b = generate_history(make_engine(f"sqlite:///{staged}"), 2100, seed=4, chunk_tasks=1000,
                         progress=False, workers=2)  # fmt: skip
    assert (a.n_tasks, a.n_jobs) == (b.n_tasks, b.n_jobs) == (2100, a.n_jobs)
    want, got = _dump(inline), _dump(staged)
    for table in TABLES:
        assert len(want[table]) > 0
        pd.testing.assert_frame_equal(got[table], want[table], obj=table)
    with sqlite3.connect(staged) as conn:  # the same SQLite storage classes, not just values
        types = "SELECT typeof(creationtime), typeof(maxpss), typeof(parentid) FROM jobsarchived4"
        assert set(conn.execute(types)) <= {
            ("text", "integer", "null"),
            ("text", "integer", "integer"),
        }


def test_builder_frames_equal_inline_frames() -> None:
    inline = pd.concat([f.jobs for f in iter_chunks(2500, seed=8, chunk_tasks=1000)])
    built = pd.concat([f.jobs for f in iter_chunks(2500, seed=8, chunk_tasks=1000, workers=2)])
    pd.testing.assert_frame_equal(built.reset_index(drop=True), inline.reset_index(drop=True))


def test_a_failing_builder_reports_its_traceback() -> None:
    with pytest.raises(BuilderFailed, match=r"(?s)chunk 0 failed.*TypeError"):
        list(build_in_processes([range(0, 1), range(1, 2)], 2, int, "x"))


def test_a_script_without_a_main_guard_can_generate(tmp_path) -> None:
    """Builders are plain children, not multiprocessing spawn: the caller's module is not
    re-run in them (which would recurse here, or repeat a script's side effects)."""
    script = tmp_path / "gen.py"
    script.write_text(textwrap.dedent(f"""
        from scoutless.history.panda_db import make_engine
        from scoutless.history.synthetic import generate_history
        open({str(tmp_path / "runs.log")!r}, "a").write("ran\\n")
        engine = make_engine("sqlite:///{tmp_path / "h.sqlite"}")
        print(generate_history(engine, 2100, chunk_tasks=1000, progress=False, workers=2).n_tasks)
    """))  # fmt: skip
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          timeout=300, env={**os.environ,
                                            "PYTHONPATH": ":".join(sys.path)})  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "2100"
    assert (tmp_path / "runs.log").read_text() == "ran\n"  # the script ran once, not per builder


def test_a_staged_file_loads_all_or_nothing(tmp_path) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'h.sqlite'}")
    create_schema(engine)
    frames = generate_chunk(1000, seed=1)
    bad = frames.tasks.iloc[:3]  # the same task ids twice: the second copy violates the key
    stage = tmp_path / "stage.sqlite"
    stage_frames(stage, {"jedi_tasks": frames.tasks, "jobsarchived4": frames.jobs})
    with sqlite3.connect(stage) as conn:
        cols = ", ".join(bad.columns.intersection([r[1] for r in conn.execute(
            "PRAGMA table_info(jedi_tasks)")]))  # fmt: skip
        conn.execute(f"INSERT INTO jedi_tasks ({cols}) SELECT {cols} FROM jedi_tasks LIMIT 3")
    with pytest.raises(sqlite3.IntegrityError):
        load_staged(engine, stage)
    with sqlite3.connect(tmp_path / "h.sqlite") as conn:
        assert conn.execute("SELECT count(*) FROM jedi_tasks").fetchone() == (0,)
        assert conn.execute("SELECT count(*) FROM jobsarchived4").fetchone() == (0,)
    stage.unlink()
    stage_frames(stage, {"jedi_tasks": frames.tasks, "jobsarchived4": frames.jobs})
    load_staged(engine, stage)  # the failed load left nothing attached or half-written
    with sqlite3.connect(tmp_path / "h.sqlite") as conn:
        assert conn.execute("SELECT count(*) FROM jobsarchived4").fetchone() == (len(frames.jobs),)


def test_task_parameters_are_strict_json() -> None:
    def no_constants(name: str) -> None:
        raise AssertionError(f"{name} in task parameters")

    for text in generate_chunk(1000, seed=2).taskparams["taskparams"]:
        params = json.loads(text, parse_constant=no_constants)
        assert all(v is not None for v in params.values())
