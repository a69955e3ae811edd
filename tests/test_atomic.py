"""Outputs written atomically get the mode a file written in place would: 0666 less the
umask, as the bundle beside them (mkstemp alone makes them 0600, private to the writer)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from scoutless.atomic import atomic_write_text, current_umask


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002])
def test_an_atomic_file_takes_the_umask_as_open_would(tmp_path: Path, umask: int) -> None:
    before = os.umask(umask)
    try:
        assert current_umask() == umask
        written = atomic_write_text(tmp_path / "report.html", "<html></html>")
        in_place = tmp_path / "in_place.txt"
        in_place.write_text("x")
    finally:
        os.umask(before)
    mode = stat.S_IMODE(written.stat().st_mode)
    assert mode == stat.S_IMODE(in_place.stat().st_mode) == 0o666 & ~umask
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_training_table_is_readable_as_its_bundle_is(small_table, tmp_path: Path) -> None:
    path = small_table.save(tmp_path / "table.parquet")
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~current_umask()
