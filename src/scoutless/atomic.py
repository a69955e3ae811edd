"""Files and folders that appear complete or not at all: written beside the target, swapped in
at the end (a rename is atomic on one filesystem)."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_folder(target: Path) -> Iterator[Path]:
    """Yield an empty staging folder next to ``target``; on success it replaces ``target``.

    On any error the staging folder is removed and ``target`` (if it existed) is untouched.
    A previous *file* or folder at ``target`` is moved aside first and deleted only once
    the new folder is in place, so ``target`` is never a half-written table; the rename is
    atomic on one filesystem (the staging folder is created beside the target for that).
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    token = uuid.uuid4().hex[:8]
    staging = target.parent / f".{target.name}.tmp-{token}"
    staging.mkdir()
    try:
        yield staging
        _swap_in(staging, target, target.parent / f".{target.name}.old-{token}")
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def _swap_in(staging: Path, target: Path, aside: Path) -> None:
    if not target.exists():
        os.replace(staging, target)
        return
    os.replace(target, aside)
    try:
        os.replace(staging, target)
    except BaseException:
        os.replace(aside, target)
        raise
    if aside.is_dir():
        shutil.rmtree(aside, ignore_errors=True)
    else:
        aside.unlink(missing_ok=True)


def fsync_dir(path: Path) -> None:
    """Make a rename inside ``path`` durable (the directory entry itself is flushed)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def current_umask() -> int:
    """The process's umask, read without changing it (``os.umask`` would, for a moment,
    for every thread): Linux reports it in /proc/self/status; elsewhere 0o022."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except OSError:
        pass
    return 0o022


def sibling_temp_file(path: Path) -> tuple[int, str]:
    """A hidden temporary file beside ``path`` (``mkstemp``), opened, with the mode a file
    created in place would get (0666 less the umask): ``mkstemp`` makes it 0600, and the
    rename would carry that over, so a report or table would be private to its writer
    while the bundle beside it is not."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    os.fchmod(fd, 0o666 & ~current_umask())
    return fd, tmp


def atomic_write_text(path: Path, text: str) -> Path:
    """Write ``text`` to a hidden sibling, flush it, then rename it over ``path``: readers
    see the old file or the new one, never a partial one, even after a crash."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = sibling_temp_file(path)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)
    return path
