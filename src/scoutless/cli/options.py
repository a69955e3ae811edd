"""Checks of option values that several verbs share, run by click as it parses (a verb's
``--help`` stays light: nothing here imports more than typer)."""

from __future__ import annotations

from collections.abc import Callable

import typer


def positive(unit: str) -> Callable[[float | None], float | None]:
    """A click callback refusing a number that is not positive (0, a negative, nan) by the
    option's name: such a span or interval ends in a traceback from the arithmetic it
    enters, or in a loop that never waits."""

    def check(value: float | None) -> float | None:
        if value is not None and not value > 0:
            raise typer.BadParameter(f"{value:g} is not a positive number of {unit}")
        return value

    return check
