"""A worker plugin that kills its worker process (as the OOM killer or a lost node would)
the first time a matching task starts; the marker file makes it fire once per cluster."""

from __future__ import annotations

import os
from typing import Any

from distributed import WorkerPlugin


class KillWorkerOnce(WorkerPlugin):
    """``os._exit`` the worker when a task whose key contains ``key_part`` starts executing,
    if ``marker`` still exists (it is removed first, so only one worker dies)."""

    def __init__(self, key_part: str, marker: str) -> None:
        self.key_part = key_part
        self.marker = marker

    def transition(self, key: Any, start: str, finish: str, **kwargs: Any) -> None:
        if finish != "executing" or self.key_part not in str(key):
            return
        try:
            os.unlink(self.marker)
        except FileNotFoundError:
            return
        os._exit(1)
