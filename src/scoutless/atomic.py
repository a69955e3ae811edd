"""Files and folders that appear complete or not at all, even across a crash: written beside
the target, flushed to disk, then swapped in by one atomic step.

* a file: written to a hidden sibling, fsynced, renamed over the target (``os.replace``);
* a folder: staged beside the target, every file and folder in it fsynced, then exchanged
  with the old one in one ``renameat2(RENAME_EXCHANGE)`` (Linux ≥ 3.15: ext4, xfs, btrfs,
  tmpfs …); the old content, now under the staging name, is removed afterwards. A reader
  (or a process killed at any point) finds the old folder or the new one, never neither.
  Where the exchange is not available the swap takes two renames, and
  :func:`recover_folder` (run before every swap) puts the old folder back when a crash fell
  between them.

``SCOUTLESS_CRASH_AT=STEP`` kills the process (SIGKILL) at that step (:func:`crash_point`):
the tests' fault injection, between every pair of steps.

A writer killed mid-write leaves its staging behind (``.NAME.tmp-*`` folders, ``.NAME.*``
files). Each writer holds an exclusive ``flock`` on its staging while it writes, which the
kernel drops with the process however it dies; :func:`sweep_leftovers` (run before each
write of a target, and by the registry and the service at start) removes the staging no
live writer holds. Only staging older than :data:`STALE_AFTER_S` is considered, so the
instant between its creation and its lock never exposes a live writer's.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import re
import shutil
import signal
import stat
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

#: the environment variable naming the step at which to SIGKILL this process (tests)
CRASH_ENV = "SCOUTLESS_CRASH_AT"
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2
#: seconds a staging entry must be unchanged before a sweep may take it for abandoned: far
#: beyond the instant between its creation and its writer's lock
STALE_AFTER_S = 60.0
#: what the writers here name their staging: ``.NAME.tmp-<8 hex>`` and ``.NAME.old-<8 hex>``
#: (folders), ``.NAME.<8 of mkstemp's characters>`` (files)
_STAGING = re.compile(r"\.(?P<name>.+)\.(?P<kind>tmp-[0-9a-f]{8}|old-[0-9a-f]{8}|[a-z0-9_]{8})")


def crash_point(step: str) -> None:
    """Fault injection: SIGKILL this process here when ``$SCOUTLESS_CRASH_AT`` names ``step``."""
    if os.environ.get(CRASH_ENV) == step:
        os.kill(os.getpid(), signal.SIGKILL)


def _renameat2() -> object | None:
    try:
        return ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return None


_RENAMEAT2 = _renameat2()


def exchange(a: Path, b: Path) -> bool:
    """Swap two existing paths in one atomic step; False where the system or filesystem
    has no such step (nothing changed then)."""
    if _RENAMEAT2 is None:
        return False
    rc = _RENAMEAT2(  # type: ignore[operator]
        _AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE
    )
    if rc == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(a), None, str(b))


@contextlib.contextmanager
def atomic_folder(target: Path) -> Iterator[Path]:
    """Yield an empty staging folder next to ``target``; on success it replaces ``target``.

    On any error the staging folder is removed and ``target`` (if it existed) is untouched.
    The staged files are fsynced, then swapped in by one atomic step (see the module), so
    ``target`` is never a half-written folder nor missing, even after a SIGKILL or a power
    loss; a previous *file* at ``target`` is replaced the same way.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    recover_folder(target)
    sweep_leftovers(target)
    token = uuid.uuid4().hex[:8]
    staging = target.parent / f".{target.name}.tmp-{token}"
    staging.mkdir()
    held = hold(staging)
    try:
        yield staging
        crash_point("folder:written")
        fsync_tree(staging)
        crash_point("folder:synced")
        _swap_in(staging, target, target.parent / f".{target.name}.old-{token}")
    except BaseException:
        _remove(staging)
        raise
    finally:
        release(held)


def _swap_in(staging: Path, target: Path, aside: Path) -> None:
    if not os.path.lexists(target):
        os.replace(staging, target)
        crash_point("folder:swapped")
        fsync_dir(target.parent)
        return
    if exchange(staging, target):  # staging now holds the old content
        crash_point("folder:swapped")
        fsync_dir(target.parent)
        crash_point("folder:durable")
        _remove(staging)
        return
    os.replace(target, aside)  # no exchange here: two renames, recover_folder undoes a crash
    crash_point("folder:aside")
    try:
        os.replace(staging, target)
    except BaseException:
        os.replace(aside, target)
        raise
    crash_point("folder:swapped")
    fsync_dir(target.parent)
    _remove(aside)


def recover_folder(target: Path) -> bool:
    """Put the old folder back where a crash fell between the two renames of a swap without
    the exchange (``target`` missing, its ``.old-*`` sibling there); True when it did."""
    target = Path(target)
    if os.path.lexists(target) or not target.parent.is_dir():
        return False
    asides = sorted(target.parent.glob(f".{target.name}.old-*"), key=lambda p: p.lstat().st_mtime)
    if not asides:
        return False
    os.replace(asides[-1], target)
    fsync_dir(target.parent)
    return True


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


def fsync_tree(folder: Path) -> None:
    """Flush every file and folder under ``folder`` (deepest first) to disk."""
    for root, _dirs, files in os.walk(folder, topdown=False):
        for name in files:
            path = os.path.join(root, name)
            if os.path.islink(path):
                continue
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_dir(Path(root))


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
    _lock(fd)  # held while the file is open: no sweep takes it meanwhile
    return fd, tmp


def atomic_write_text(path: Path, text: str) -> Path:
    """Write ``text`` to a hidden sibling, flush it, then rename it over ``path``: readers
    see the old file or the new one, never a partial one, even after a crash."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sweep_leftovers(path)
    fd, tmp = sibling_temp_file(path)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        crash_point("file:written")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    crash_point("file:replaced")
    fsync_dir(path.parent)
    return path


def _lock(fd: int) -> bool:
    """Take the exclusive ``flock`` on an open file or folder; False where another process
    holds it, or the filesystem has no such locks."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False
    return True


def hold(staging: Path) -> int | None:
    """Mark ``staging`` as being written by this process (until :func:`release`, or the
    process's end, however it ends); the open descriptor, None where it cannot be opened."""
    fd = _open(staging)
    if fd is not None:
        _lock(fd)
    return fd


def release(fd: int | None) -> None:
    if fd is not None:
        os.close(fd)


def _open(path: Path) -> int | None:
    try:
        return os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None


def remove_if_abandoned(path: Path, min_age_s: float = STALE_AFTER_S) -> bool:
    """Remove the staging at ``path`` if no live writer holds it and it has not changed for
    ``min_age_s`` seconds; True when it did. A symbolic link, or an entry that cannot be
    locked, is kept: a sweep removes only what it knows to be abandoned."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return False
    if not (stat.S_ISDIR(info.st_mode) or stat.S_ISREG(info.st_mode)):
        return False
    if time.time() - info.st_mtime < min_age_s:
        return False
    fd = _open(path)
    if fd is None:
        return False
    try:
        if not _lock(fd):  # a live writer's
            return False
        _remove(path)
    finally:
        os.close(fd)
    return True


def sweep_leftovers(target: Path, min_age_s: float = STALE_AFTER_S) -> list[Path]:
    """Remove the abandoned staging of ``target`` (its ``.NAME.tmp-*`` and ``.NAME.*``
    siblings, and its ``.NAME.old-*`` ones once ``target`` is back); those removed."""
    target = Path(target)
    prefix = f".{target.name}."
    try:
        names = [n for n in os.listdir(target.parent) if n.startswith(prefix)]
    except OSError:
        return []
    return _sweep(target.parent, names, min_age_s)


def sweep_folder(folder: Path, min_age_s: float = STALE_AFTER_S) -> list[Path]:
    """Remove every abandoned staging entry directly in ``folder`` (a folder scoutless
    owns: a registry, its versions); those removed."""
    try:
        names = [n for n in os.listdir(folder) if n.startswith(".")]
    except OSError:
        return []
    return _sweep(Path(folder), names, min_age_s)


def _sweep(folder: Path, names: list[str], min_age_s: float) -> list[Path]:
    removed = []
    for name in names:
        match = _STAGING.fullmatch(name)
        if match is None:
            continue
        if match["kind"].startswith("old-") and not os.path.lexists(folder / match["name"]):
            continue  # the only copy of a swapped-out folder: recover_folder's to put back
        if remove_if_abandoned(folder / name, min_age_s):
            removed.append(folder / name)
    return removed
