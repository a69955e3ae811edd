"""What the online sizer keeps of one task type: its outcomes, one row each in the order
they were learnt, and each location model's out-of-sample residual for the same row — one
index space, so a residual is read beside the outcome it belongs to.

A row holds the instance's log input size and log cores, its log need (a lower bound on
it when the attempt was killed: ``censored``), its runtime, the log of the user's request
and, per location model, the log need less what that model predicted from the rows before
it (the sizer refits an uncensored row's to its leave-one-out when the anchor moves:
`online.refit_residuals`). The location models fit the uncensored rows (``pairs``, on
each model's feature column). Past ``cap`` rows the oldest are dropped: a need drifts
with a task's software, so the recent outcomes tell more, and dropping by age needs no
randomness and no weights to carry across a restart.

The residual samples an instance is sized from are built from the rows held at the type's
*anchor* (``anchor_rows`` leading rows, ``anchor_learnt`` outcomes then), not from every
row: rebuilding them costs a sort of the type's rows, so the anchor moves (and the oldest
rows past ``cap`` go) only once the type has learnt more than ``refresh_share`` × its
anchored rows since — at most a few sorts per hundred outcomes for a large type, every
outcome for a small one, and with a share of 0 after every outcome. Between moves rows are
only appended, so the anchored rows are the table's leading ones and a restored state
rebuilds the very samples the uninterrupted one held.

The state round-trips through a JSON-safe dict (`to_dict` / `from_dict`): equal state,
equal dict."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from scoutless.jsonsafe import json_number

#: the outcome's columns (a model's residual column is ``resid:<model>``)
OUTCOME_COLUMNS: tuple[str, ...] = (
    "log_input", "log_need", "runtime", "censored", "log_request", "log_cores",
)  # fmt: skip
#: rows a table starts with room for
INITIAL_ROOM = 64


class OutcomeTable:
    """Float columns of equal length, appended a row at a time and dropped from the
    oldest (amortised O(1) a row: each column a buffer with room to grow)."""

    def __init__(self, names: tuple[str, ...]) -> None:
        self.names = names
        self._buf = {n: np.empty(INITIAL_ROOM) for n in names}
        self._lo = 0
        self._hi = 0

    def __len__(self) -> int:
        return self._hi - self._lo

    def column(self, name: str) -> np.ndarray:
        """A column as a view (valid until the next append or drop)."""
        return self._buf[name][self._lo : self._hi]

    def append(self, row: dict[str, float]) -> None:
        if self._hi == len(self._buf[self.names[0]]):
            self._make_room()
        for name in self.names:
            self._buf[name][self._hi] = row[name]
        self._hi += 1

    def extend(self, columns: dict[str, np.ndarray]) -> None:
        for row in zip(*(np.asarray(columns[n], dtype=float) for n in self.names), strict=True):
            self.append(dict(zip(self.names, row, strict=True)))

    def drop_oldest(self, count: int) -> None:
        self._lo += min(count, len(self))

    def _make_room(self) -> None:
        n = len(self)
        size = len(self._buf[self.names[0]])
        grown = size if self._lo >= size // 2 else 2 * size  # compact, or grow
        for name in self.names:
            buf = np.empty(grown)
            buf[:n] = self._buf[name][self._lo : self._hi]
            self._buf[name] = buf
        self._lo, self._hi = 0, n


@dataclass
class TypeHistory:
    """One task type's running state (see the module's docstring). ``learnt`` counts the
    outcomes learnt since the state was installed, dropped ones too (what a cached sample
    is versioned by); ``borrowed`` the leading rows taken from other workflows (cold
    start); ``shadow`` what each model's plans would have cost so far; ``choice`` the
    model that sizes; ``prior`` the other types' pooled residual shape as last built
    (their outcomes then, standardised residuals, median scale)."""

    models: tuple[str, ...]
    rows: OutcomeTable = field(init=False)
    shadow: dict[str, float] = field(default_factory=dict)
    choice: str = ""
    borrowed: int = 0
    #: the leading rows that are a prior's points, not outcomes: their residuals stay
    #: those of their own leave-one-out fit (`online.refit_residuals`)
    pseudo: int = 0
    learnt: int = 0
    prior: tuple[int, np.ndarray, float | None] | None = None
    #: the rows the residual samples are built from (the leading ones) and the outcomes
    #: learnt when the anchor last moved
    anchor_rows: int = 0
    anchor_learnt: int = 0
    #: derived, rebuilt on demand, per feature column: (learnt, features, log needs) of
    #: the uncensored rows
    _pairs: dict[str, tuple[int, np.ndarray, np.ndarray]] = field(default_factory=dict, repr=False)
    #: per model, its residual sample as last built: (version, values, weights)
    samples: dict[str, tuple] = field(default_factory=dict, repr=False)
    #: per model, its location fitted to the pairs as last built: (version, fitted)
    fits: dict[str, tuple] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.rows = OutcomeTable(OUTCOME_COLUMNS + tuple(f"resid:{m}" for m in self.models))
        self.shadow = self.shadow or dict.fromkeys(self.models, 0.0)
        self.choice = self.choice or self.models[0]

    def column(self, name: str) -> np.ndarray:
        return self.rows.column(name)

    def residuals(self, model: str) -> np.ndarray:
        return self.rows.column(f"resid:{model}")

    def censored(self) -> np.ndarray:
        return self.rows.column("censored") > 0

    def anchored(self, name: str) -> np.ndarray:
        """Column ``name`` of the anchored rows (what the residual samples are built from)."""
        return self.rows.column(name)[: self.anchor_rows]

    def pairs(self, feature: str = "log_input") -> tuple[np.ndarray, np.ndarray]:
        """The uncensored rows' (``feature``, log need): what the location models fit."""
        hit = self._pairs.get(feature)
        if hit is None or hit[0] != self.learnt:
            keep = ~self.censored()
            hit = self._pairs[feature] = (
                self.learnt, self.column(feature)[keep], self.column("log_need")[keep]
            )  # fmt: skip
        return hit[1], hit[2]

    def n_pairs(self) -> int:
        return len(self.pairs()[1])

    def add(self, row: dict[str, float], cap: int | None, refresh_share: float = 0.0) -> None:
        """One outcome's row (its residuals included); the anchor moves once more than
        ``refresh_share`` × the anchored rows were learnt since (`move_anchor`)."""
        self.rows.append(row)
        self.learnt += 1
        if self.learnt - self.anchor_learnt > refresh_share * self.anchor_rows:
            self.move_anchor(cap)

    def move_anchor(self, cap: int | None) -> None:
        """Past ``cap`` rows the oldest go; the samples are rebuilt from every row left."""
        if cap is not None and len(self.rows) > cap:
            self.drop_oldest(len(self.rows) - cap)
        self.anchor_rows, self.anchor_learnt = len(self.rows), self.learnt
        self.samples.clear()

    def drop_oldest(self, count: int) -> None:
        self.rows.drop_oldest(count)
        self.borrowed = max(0, self.borrowed - count)
        self.pseudo = max(0, self.pseudo - count)
        self.anchor_rows = max(0, self.anchor_rows - count)
        self._pairs.clear()

    def to_dict(self) -> dict[str, Any]:
        """The state as JSON-safe data (NaN as null); caches left out."""
        columns = {
            n: [json_number(v) for v in self.rows.column(n).tolist()] for n in self.rows.names
        }
        prior = None
        if self.prior is not None:
            seen, values, scale = self.prior
            prior = {"others_learnt": seen, "values": values.tolist(), "scale": scale}
        return {
            "models": list(self.models), "columns": columns,
            "shadow": {m: json_number(v) for m, v in self.shadow.items()},
            "choice": self.choice, "borrowed": self.borrowed, "pseudo": self.pseudo,
            "learnt": self.learnt,
            "anchor_rows": self.anchor_rows, "anchor_learnt": self.anchor_learnt,
            "prior": prior,
        }  # fmt: skip

    @classmethod
    def from_dict(cls, data: dict[str, Any], models: tuple[str, ...] | None = None) -> TypeHistory:
        """The state `to_dict` gave; with ``models``, a snapshot of an older sizer upgraded
        to them (`_upgrade`)."""
        data = _upgrade(data, models) if models is not None else data
        shadow = {m: np.nan if v is None else float(v) for m, v in data["shadow"].items()}
        state = cls(tuple(data["models"]), shadow=shadow, choice=data["choice"],
                    borrowed=int(data["borrowed"]),
                    pseudo=int(data.get("pseudo", data.get("started", 0))),
                    learnt=int(data["learnt"]))  # fmt: skip
        state.rows.extend({
            n: np.array([np.nan if v is None else float(v) for v in values])
            for n, values in data["columns"].items()
        })  # fmt: skip
        # a snapshot from before anchors: every row anchored (as that sizer built them)
        state.anchor_rows = int(data.get("anchor_rows", len(state.rows)))
        state.anchor_learnt = int(data.get("anchor_learnt", state.learnt))
        if data["prior"] is not None:
            p = data["prior"]
            scale = None if p["scale"] is None else float(p["scale"])
            state.prior = (int(p["others_learnt"]), np.asarray(p["values"], dtype=float), scale)
        return state


def _upgrade(data: dict[str, Any], models: tuple[str, ...]) -> dict[str, Any]:
    """A snapshot taken before a column or a location model existed, as the current sizer
    holds it: a missing column unknown (NaN: a model on it is the mean there), a missing
    model's residuals unknown and its shadow cost level with the costliest model's, so it
    sizes only once it has proven cheaper from the restart on; models the sizer no longer
    has are dropped."""
    columns = dict(data["columns"])
    n = len(columns.get("log_need", []))
    names = OUTCOME_COLUMNS + tuple(f"resid:{m}" for m in models)
    for name in names:
        columns.setdefault(name, [None] * n)
    old = {m: v for m, v in data["shadow"].items() if m in models}
    top = max((v for v in old.values() if v is not None), default=0.0)
    shadow = {m: old.get(m, top) for m in models}
    choice = data["choice"] if data["choice"] in models else models[0]
    return dict(data, models=list(models), shadow=shadow, choice=choice,
                columns={k: columns[k] for k in names})  # fmt: skip
