"""`scoutless data build` end to end on a SQLite history, including bad rows and --strict."""

from __future__ import annotations

import pandas as pd
from panda_history import load_into, make_history_frames
from typer.testing import CliRunner

from scoutless.cli.main import app
from scoutless.history.panda_db import make_engine
from scoutless.history.table import TrainingTable

runner = CliRunner()


def test_build_command_writes_table_and_bad_row_list(tmp_path):
    frames = make_history_frames(n_tasks=20, jobs_per_task=8)
    frames["jobsarchived4"].loc[3, "maxpss"] = -1
    db = tmp_path / "h.sqlite"
    load_into(make_engine(f"sqlite:///{db}"), frames)
    out = tmp_path / "table.parquet"
    result = runner.invoke(app, ["data", "build", "--db", f"sqlite:///{db}", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "1 bad rows excluded" in result.output and "training table: 20 tasks" in result.output
    table = TrainingTable.load(out)
    assert len(table.frame) == 20
    bad = pd.read_csv(out.with_suffix(".bad_rows.csv"))
    assert bad.loc[0, "reason"] == "negative maxpss"
    assert bad.loc[0, "pandaid"] == frames["jobsarchived4"].loc[3, "pandaid"]

    strict_out = tmp_path / "strict.parquet"
    result = runner.invoke(
        app, ["data", "build", "--db", f"sqlite:///{db}", "--out", str(strict_out), "--strict"]
    )
    assert result.exit_code == 2
    assert "negative maxpss" in result.output and not strict_out.exists()


def test_build_refuses_a_missing_database_clearly(tmp_path):
    out = tmp_path / "t.parquet"
    result = runner.invoke(
        app, ["data", "build", "--db", f"sqlite:///{tmp_path / 'nope.sqlite'}", "--out", str(out)]
    )
    assert result.exit_code == 2
    assert "nope.sqlite does not exist" in result.output.replace("\n", "")
    assert not out.exists() and not (tmp_path / "nope.sqlite").exists()


def test_build_names_the_columns_an_older_history_lacks(tmp_path):
    """A history written before the job rows gained creationtime and the error codes."""
    import sqlite3

    db = tmp_path / "old.sqlite"
    load_into(make_engine(f"sqlite:///{db}"), make_history_frames(n_tasks=5, jobs_per_task=3))
    with sqlite3.connect(db) as conn:
        for column in ("creationtime", "piloterrorcode"):
            conn.execute(f"ALTER TABLE jobsarchived4 DROP COLUMN {column}")
    out = tmp_path / "t.parquet"
    result = runner.invoke(app, ["data", "build", "--db", f"sqlite:///{db}", "--out", str(out)])
    assert result.exit_code == 2
    text = " ".join(result.output.split())
    assert (
        "older scoutless" in text
        and "table jobsarchived4 lacks creationtime, piloterrorcode" in text
    )
    assert not out.exists()


def test_generate_then_build_from_the_command_line(tmp_path):
    url = f"sqlite:///{tmp_path / 'gen.sqlite'}"
    result = runner.invoke(app, ["data", "generate", "--tasks", "300", "--db", url, "--seed", "5"])
    assert result.exit_code == 0, result.output
    assert "generated 300 tasks" in result.output
    out = tmp_path / "t.parquet"
    result = runner.invoke(app, ["data", "build", "--db", url, "--out", str(out)])
    assert result.exit_code == 0, result.output
    table = TrainingTable.load(out)
    assert 250 <= len(table.frame) <= 300
    assert table.frame["memory_bayes_class"].ge(0).all()
