"""Run a function in a forked child that ``SCOUTLESS_CRASH_AT`` kills (SIGKILL) at a step."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable


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
