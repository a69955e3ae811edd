"""Fixtures of the history tests (the factory lives in panda_history.py, importable by name)."""

from panda_history import history_frames, sqlite_engine  # noqa: F401
