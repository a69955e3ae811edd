"""Staging that a killed writer left is removed when the next writer (or the registry, or
the service) starts; a live writer's never is. Writers hold a ``flock`` on their staging,
which dies with them; a sweep takes only unheld staging unchanged for ``STALE_AFTER_S``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from crash import age, hidden, run_killed_at
from scoutless.atomic import (
    atomic_folder,
    atomic_write_text,
    sweep_folder,
    sweep_leftovers,
)


def _write_folder(target: Path, text: str = "new") -> None:
    with atomic_folder(target) as staging:
        (staging / "part").write_text(text)


@pytest.mark.parametrize("step", ["folder:written", "folder:synced"])
def test_a_killed_folder_writers_staging_goes_at_the_next_write(tmp_path: Path, step: str) -> None:
    target = tmp_path / "bundle"
    _write_folder(target, "old")
    assert run_killed_at(step, lambda: _write_folder(target))
    assert run_killed_at(step, lambda: _write_folder(target))
    leftovers = [tmp_path / n for n in hidden(tmp_path)]
    assert len(leftovers) == 2 and all(".bundle.tmp-" in p.name for p in leftovers)
    _write_folder(target, "fresh")  # younger than STALE_AFTER_S: kept (a writer may be new)
    assert len(hidden(tmp_path)) == 2
    age(*leftovers)
    _write_folder(target, "newest")
    assert hidden(tmp_path) == [] and (target / "part").read_text() == "newest"


def test_a_killed_file_writers_temporary_goes_at_the_next_write(tmp_path: Path) -> None:
    target = tmp_path / "registry.json"
    atomic_write_text(target, "old")
    assert run_killed_at("file:written", lambda: atomic_write_text(target, "new"))
    (leftover,) = [tmp_path / n for n in hidden(tmp_path)]
    assert leftover.name.startswith(".registry.json.")
    age(leftover)
    atomic_write_text(target, "newest")
    assert hidden(tmp_path) == [] and target.read_text() == "newest"


def test_a_live_writers_staging_is_never_swept(tmp_path: Path) -> None:
    """A writer in another process, inside its staging for longer than STALE_AFTER_S."""
    target, ready_r, ready_w = tmp_path / "bundle", *os.pipe()
    go_r, go_w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the writer: never returns into pytest
        code = 1
        try:
            with atomic_folder(target) as staging:
                (staging / "part").write_text("written by the live writer")
                os.write(ready_w, b"x")
                os.read(go_r, 1)  # hold the staging until the test says
            code = 0
        finally:
            os._exit(code)
    os.read(ready_r, 1)
    (staging,) = [tmp_path / n for n in hidden(tmp_path)]
    age(staging)
    assert sweep_leftovers(target, min_age_s=0) == []
    assert sweep_folder(tmp_path, min_age_s=0) == []
    assert (staging / "part").exists()
    os.write(go_w, b"x")
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert (target / "part").read_text() == "written by the live writer"
    assert hidden(tmp_path) == []


def test_a_sweep_keeps_what_it_cannot_know_abandoned(tmp_path: Path) -> None:
    (tmp_path / ".bundle.old-0123abcd").mkdir()  # target missing: recover_folder's to restore
    (tmp_path / ".profile.txt").write_text("not ours")
    (tmp_path / ".notes.tmp-nothex!").mkdir()
    (tmp_path / ".link.tmp-0123abcd").symlink_to(tmp_path / ".profile.txt")
    (tmp_path / ".other.json.abc12345").write_text("a temporary of another target")
    age(*[tmp_path / n for n in hidden(tmp_path)])
    assert sweep_leftovers(tmp_path / "bundle") == []
    assert sweep_leftovers(tmp_path / "table.json") == []  # another target's: not this one's
    assert sweep_folder(tmp_path) == [tmp_path / ".other.json.abc12345"]
    assert hidden(tmp_path) == sorted(
        [".bundle.old-0123abcd", ".link.tmp-0123abcd", ".notes.tmp-nothex!", ".profile.txt"]
    )
