"""SQLite staging files: rows converted and written by other processes, loaded in C.

A bulk write to SQLite spends most of its time in Python: turning columns into objects and
binding them one by one. Builder processes do that into a private staging file (no
indexes, no journal); the one writer then copies each table with ``INSERT … SELECT``, which
SQLite runs without returning to Python, in one transaction per file. The writer's cost per
row drops by more than half, and the work that remains is spread over the cores.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from pathlib import Path

import pandas as pd
from sqlalchemy import Engine

from scoutless.history.dbapi import dbapi_rows
from scoutless.history.schema import metadata


def stage_frames(path: Path, frames: Mapping[str, pd.DataFrame]) -> dict[str, int]:
    """Write each frame's schema columns to a new staging file; returns rows per table."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA journal_mode=OFF")
        conn.execute("PRAGMA synchronous=OFF")
        counts = {}
        for name, frame in frames.items():
            cols = staged_columns(name, frame)
            conn.execute(f"CREATE TABLE {name} ({', '.join(cols)})")  # untyped: values as bound
            placeholders = ", ".join("?" * len(cols))
            sql = f"INSERT INTO {name} ({', '.join(cols)}) VALUES ({placeholders})"
            conn.executemany(sql, dbapi_rows(frame[cols], datetime_text=True))
            counts[name] = len(frame)
        conn.commit()
    finally:
        conn.close()
    return counts


def staged_columns(table: str, frame: pd.DataFrame) -> list[str]:
    """The frame's columns the schema's ``table`` has, in the schema's order."""
    return [c.name for c in metadata.tables[table].columns if c.name in frame.columns]


def load_staged(engine: Engine, path: Path) -> None:
    """Append every table of the staging file to the same table of ``engine`` (SQLite), in
    one transaction: all of the file or nothing."""
    raw = engine.raw_connection()
    try:
        cur = raw.cursor()
        cur.execute("ATTACH DATABASE ? AS staged", (str(path),))
        try:
            tables = [
                row[0]
                for row in cur.execute(
                    "SELECT name FROM staged.sqlite_master WHERE type='table' ORDER BY rowid"
                )
            ]
            for table in tables:
                cols = ", ".join(c[1] for c in cur.execute(f"PRAGMA staged.table_info({table})"))
                cur.execute(f"INSERT INTO main.{table} ({cols}) SELECT {cols} FROM staged.{table}")
            raw.commit()
        except BaseException:
            raw.rollback()
            raise
        finally:
            cur.execute("DETACH DATABASE staged")
    finally:
        raw.close()
