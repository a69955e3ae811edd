"""A type sized cold starts from instances borrowed from other workflows (the same process
elsewhere): when they leave its history, by count (`own_replaces_borrowed` outcomes of its
own) or at once when an own outcome refutes them, and what is left when they do.

Kept apart from `online.OnlineSizer`, which calls these on every outcome and retry, so the
cold start's rules read in one place."""

from __future__ import annotations

import numpy as np

from scoutless.config import SizingSettings
from scoutless.sizing.type_history import TypeHistory

#: the columns a type's state is refitted from when the borrowed rows leave
ROW_COLUMNS = ("log_input", "log_need", "runtime", "log_request", "log_cores")


def refutes(state: TypeHistory, settings: SizingSettings, low: float, high: float) -> bool:
    """Whether an own outcome known to lie in [``low``, ``high``] (log need; a kill: its
    bound to +inf) lies outside every borrowed need by more than their spread (a first kill
    at their top is what a sample of them predicts now and then; a second, a growth step
    past it, is not): the other workflows' instances of the type (a process's need differs
    between pipelines, 20 GB against 8) then describe the workflow's no better than
    nothing, and holding them until `own_replaces_borrowed` outcomes costs a retry ladder
    through their range. A prior's points (``pseudo``: the job follower's) are a model's
    answer, their range the spread it was given, not what instances showed: they leave by
    the count alone."""
    if not (settings.refute_borrowed and state.borrowed) or state.pseudo:
        return False
    lent = state.column("log_need")[: state.borrowed]
    past = max(float(np.std(lent)), 0.05)  # the growth's first step (`OnlineSizer._growth`)
    return bool(low > lent.max() + past or high < lent.min() - past)


def leaves_after(
    state: TypeHistory, settings: SizingSettings, log_need: float, censored: bool
) -> bool:
    """Whether the borrowed rows leave after an outcome just learnt: a need that fitted,
    with enough own outcomes or outside their range (`refutes`); a kill never (its bound
    is a censored row, not a need to refit from)."""
    if not state.borrowed or censored:
        return False
    own = state.n_pairs() - state.borrowed
    enough = own >= settings.own_replaces_borrowed
    return enough or refutes(state, settings, log_need, log_need)


def own_rows(state: TypeHistory) -> dict[str, np.ndarray]:
    """The type's own uncensored rows, the borrowed ones gone (its own kills with them:
    they stay out of the refit rows)."""
    own = ~state.censored()
    own[: state.borrowed] = False
    return {n: state.column(n)[own] for n in ROW_COLUMNS}
