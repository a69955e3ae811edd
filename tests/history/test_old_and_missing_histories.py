"""What a user sees reading a history that is missing, not a history, or written by an
older scoutless: one line naming the file and the way out, and the file left as it was."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from first_layout import LACKING_JOB_COLUMNS, write_first_layout_history
from typer.testing import CliRunner

from scoutless.cli.main import app
from scoutless.history.table import TrainingTable

runner = CliRunner()


def _said(result) -> str:  # type: ignore[no-untyped-def]
    """The output as one line (rich wraps at the terminal's width)."""
    return " ".join(result.output.split())


def _fingerprint(path: Path) -> tuple[str, list[str]]:
    """The file's bytes and the files beside it (a WAL switch leaves -wal/-shm files)."""
    return hashlib.sha256(path.read_bytes()).hexdigest(), sorted(
        p.name for p in path.parent.iterdir()
    )


def _build(url: str, out: Path):  # type: ignore[no-untyped-def]
    return runner.invoke(app, ["data", "build", "--db", url, "--out", str(out)])


def test_a_missing_file_is_named_and_not_created(tmp_path):
    missing = tmp_path / "missing.sqlite"
    result = _build(f"sqlite:///{missing}", tmp_path / "t.parquet")
    assert result.exit_code == 2
    said = _said(result)
    assert f"{missing} does not exist" in said and "scoutless data generate --db" in said
    assert "Traceback" not in result.output
    assert not missing.exists() and not (tmp_path / "t.parquet").exists()


def test_a_file_without_panda_tables_is_named_with_the_tables_and_left_alone(tmp_path):
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE notes (x TEXT)")
    before = _fingerprint(other)
    result = _build(f"sqlite:///{other}", tmp_path / "t.parquet")
    assert result.exit_code == 2
    said = _said(result)
    assert f"{other} is not a PanDA history: it has no table jedi_tasks, jedi_datasets" in said
    assert "scoutless data generate" in said and "scoutless import" in said
    assert "Traceback" not in result.output
    assert _fingerprint(other) == before


def test_a_first_layout_history_is_refused_by_name_then_upgraded_and_built(tmp_path):
    db = tmp_path / "first.sqlite"
    url = write_first_layout_history(db)
    before = _fingerprint(db)

    refused = _build(url, tmp_path / "t.parquet")
    assert refused.exit_code == 2
    said = _said(refused)
    assert f"{db} was written by an older scoutless" in said
    assert f"table jobsarchived4 lacks {', '.join(LACKING_JOB_COLUMNS)}" in said
    assert "table jedi_datasets lacks creationtime, modificationtime" in said
    assert f"`scoutless data upgrade --db {url}`" in said
    assert "no such column" not in said and "Traceback" not in refused.output
    assert _fingerprint(db) == before  # a read changes nothing, journal mode included

    upgraded = runner.invoke(app, ["data", "upgrade", "--db", url])
    assert upgraded.exit_code == 0, upgraded.output
    assert "upgraded" in upgraded.output and "piloterrorcode" in _said(upgraded)
    with sqlite3.connect(db) as conn:
        ram, = conn.execute("SELECT count(*) FROM jedi_tasks WHERE ramunit IS NULL "
                            "AND ramcountunit IS NOT NULL").fetchone()  # fmt: skip
        clock, = conn.execute("SELECT count(*) FROM jobsarchived4 "
                              "WHERE modificationtime IS NULL").fetchone()  # fmt: skip
    assert ram == 0 and clock == 0  # the old unit moved across, every job has its clock

    out = tmp_path / "t.parquet"
    built = _build(url, out)
    assert built.exit_code == 0, built.output
    assert len(TrainingTable.load(out).frame) > 200
    again = runner.invoke(app, ["data", "upgrade", "--db", url])
    assert again.exit_code == 0 and "up to date" in again.output


def test_generating_into_a_first_layout_history_upgrades_it_and_says_so(tmp_path):
    url = write_first_layout_history(tmp_path / "first.sqlite", n_tasks=50)
    args = ["data", "generate", "--tasks", "50", "--db", url, "--first-task-id", "900000"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    said = _said(result)
    assert "upgraded the older history first" in said and "creationtime" in said
    assert "generated 50 tasks" in said


def test_upgrade_of_a_missing_file_creates_nothing(tmp_path):
    missing = tmp_path / "nope.sqlite"
    result = runner.invoke(app, ["data", "upgrade", "--db", f"sqlite:///{missing}"])
    assert result.exit_code == 2 and "does not exist" in _said(result)
    assert not missing.exists()
