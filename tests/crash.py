"""Run a function in a forked child that ``SCOUTLESS_CRASH_AT`` kills (SIGKILL) at a step;
look at what it left."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable
from pathlib import Path

from scoutless.atomic import STALE_AFTER_S


def run_killed_at(step: str | None, action: Callable[[], object]) -> bool:
    """Run ``action`` in a forked child with the crash point set to ``step``; True when the
    child was killed by SIGKILL (the step was reached), False when it finished."""
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 1
        try:
            if step is not None:
                os.environ["SCOUTLESS_CRASH_AT"] = step
            action()
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        assert os.WTERMSIG(status) == signal.SIGKILL
        return True
    assert os.WEXITSTATUS(status) == 0, f"the child failed at step {step!r}"
    return False


def hidden(folder: Path) -> list[str]:
    """The names of ``folder``'s hidden entries (where staging lives), sorted."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def age(*paths: Path) -> None:
    """As if written long enough ago for a sweep to consider them (``STALE_AFTER_S``)."""
    past = time.time() - 2 * STALE_AFTER_S
    for path in paths:
        os.utime(path, (past, past), follow_symlinks=False)
