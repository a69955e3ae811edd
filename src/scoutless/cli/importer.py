"""`scoutless importer` (being written)."""

from __future__ import annotations

import typer


def import_trace() -> None:
    """Not available yet."""
    raise typer.Exit(code=2)
