"""`scoutless evaluate` (being written)."""

from __future__ import annotations

import typer


def evaluate() -> None:
    """Not available yet."""
    raise typer.Exit(code=2)
