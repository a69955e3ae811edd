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
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import shutil
import signal
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

#: the environment variable naming the step at which to SIGKILL this process (tests)
CRASH_ENV = "SCOUTLESS_CRASH_AT"
_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


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
    token = uuid.uuid4().hex[:8]
    staging = target.parent / f".{target.name}.tmp-{token}"
    staging.mkdir()
    try:
        yield staging
        crash_point("folder:written")
        fsync_tree(staging)
        crash_point("folder:synced")
        _swap_in(staging, target, target.parent / f".{target.name}.old-{token}")
    except BaseException:
        _remove(staging)
        raise


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
        crash_point("file:written")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    crash_point("file:replaced")
    fsync_dir(path.parent)
    return path
