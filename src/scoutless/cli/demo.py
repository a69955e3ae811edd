"""`scoutless demo` (being written)."""

from __future__ import annotations

import typer


def demo() -> None:
    """Not available yet."""
    raise typer.Exit(code=2)
