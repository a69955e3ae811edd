"""`scoutless serve` (being written)."""

from __future__ import annotations

import typer


def serve() -> None:
    """Not available yet."""
    raise typer.Exit(code=2)
