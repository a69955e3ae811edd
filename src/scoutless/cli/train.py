"""`scoutless train` (being written)."""

from __future__ import annotations

import typer


def train() -> None:
    """Not available yet."""
    raise typer.Exit(code=2)
