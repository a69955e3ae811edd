"""`scoutless monitor ...` and `scoutless retrain` (being written)."""

from __future__ import annotations

import typer

app = typer.Typer(no_args_is_help=True)


def retrain() -> None:
    """Not available yet."""
    raise typer.Exit(code=2)
