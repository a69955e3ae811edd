"""The online sizer's state in the project's database: per task type, an append-only log of
its outcomes and the state its latest outcome left.

``scoutless_sizing_outcomes`` (key, seq, features, outcome): one row per acknowledged
outcome, ``seq`` the type's version it made. The primary key (key, seq) is the
compare-and-set: a writer that read version v inserts seq = v + 1, and of two writers that
read the same v one insert commits and the other fails on the key — on SQLite and
PostgreSQL alike, with no row lock held between the read and the write.

``scoutless_sizing_state`` (key, version, snapshot): the type's state after outcome
``version``, written in the same transaction as its log row. Readers and restarts restore
it as is instead of re-applying outcomes: the sizer's learning reads the other types'
pooled residuals, so an outcome applied in another process (with its own view of them)
would not give the state its writer acknowledged.

The log is the record: it names the committed order, and what a new state format is
rebuilt from. Rows more than ``keep_outcomes`` below a type's version are pruned.
JSON text (orjson: a float's shortest text, which reads back bit for bit), not a JSON
column. JSON has no NaN: a NaN (no location yet, no request) is written as null, and the
sizer's ``restore`` reads a null number back as NaN; an infinity is refused where the
snapshot is taken.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import orjson
from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    Engine,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    delete,
    func,
    insert,
    inspect,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

OUTCOMES_TABLE = "scoutless_sizing_outcomes"
STATE_TABLE = "scoutless_sizing_state"
#: longest task-type key the tables hold
KEY_LENGTH = 256
#: keys read per statement (well under every backend's limit on bound parameters)
READ_CHUNK = 500

state_metadata = MetaData()
outcome_log = Table(
    OUTCOMES_TABLE,
    state_metadata,
    Column("key", String(KEY_LENGTH), nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("features", Text, nullable=False),
    Column("outcome", Text, nullable=False),
    PrimaryKeyConstraint("key", "seq", name="scoutless_sizing_outcomes_pk"),
)
type_states = Table(
    STATE_TABLE,
    state_metadata,
    Column("key", String(KEY_LENGTH), primary_key=True),
    Column("version", BigInteger, nullable=False),
    Column("snapshot", Text, nullable=False),
)


def dumps(data: Any) -> str:
    """JSON text of a snapshot, features or an outcome (NaN as null; numpy floats taken)."""
    return orjson.dumps(data, option=orjson.OPT_SERIALIZE_NUMPY).decode()


class StaleVersion(Exception):
    """The type's version moved since the writer read it (its outcome did not commit)."""


class SizingStateStore:
    """The two tables on one SQLAlchemy engine (see the module's docstring)."""

    def __init__(self, engine: Engine, *, keep_outcomes: int = 0) -> None:
        if keep_outcomes < 0:
            raise ValueError(f"{keep_outcomes=} must be 0 (keep all) or positive")
        self.engine = engine
        self.keep_outcomes = keep_outcomes

    def create(self) -> None:
        """Create the tables unless they exist (another process may create them meanwhile)."""
        try:
            state_metadata.create_all(self.engine)
        except SQLAlchemyError:
            if not all(inspect(self.engine).has_table(t) for t in (OUTCOMES_TABLE, STATE_TABLE)):
                raise

    def versions(self) -> dict[str, int]:
        """Every type's committed version (one statement)."""
        with self.engine.connect() as conn:
            rows = conn.execute(select(type_states.c.key, type_states.c.version))
            return {key: int(version) for key, version in rows}

    def read(self, keys: Iterable[str] | None = None) -> dict[str, tuple[int, dict]]:
        """The committed (version, snapshot) of ``keys`` (None: of every type)."""
        stmt = select(type_states.c.key, type_states.c.version, type_states.c.snapshot)
        wanted = None if keys is None else sorted(set(keys))
        chunks = [None] if wanted is None else [
            wanted[i : i + READ_CHUNK] for i in range(0, len(wanted), READ_CHUNK)
        ]  # fmt: skip
        out: dict[str, tuple[int, dict]] = {}
        with self.engine.connect() as conn:
            for chunk in chunks:
                where = stmt if chunk is None else stmt.where(type_states.c.key.in_(chunk))
                for key, version, text in conn.execute(where):
                    out[key] = (int(version), orjson.loads(text))
        return out

    def append(
        self,
        key: str,
        version: int,
        features: dict,
        outcome: dict,
        snapshot: dict,
        also: Callable[[Connection], None] | None = None,
    ) -> bool:
        """Commit the outcome that takes ``key`` from ``version`` to ``version + 1`` with the
        state it left; False (nothing written) when the type is no longer at ``version``.
        ``also`` writes the caller's rows in the same transaction (a ledger of what was
        learnt, what it made the caller write): whatever it raises rolls everything back."""
        try:
            with self.engine.begin() as conn:
                self.write(conn, key, version, features, outcome, snapshot)
                if also is not None:
                    also(conn)
        except (IntegrityError, StaleVersion):
            return False
        return True

    def write(self, conn: Connection, key: str, version: int, features: dict, outcome: dict,
              snapshot: dict) -> None:  # fmt: skip
        """`append`'s rows on the caller's transaction (one of several types' outcomes
        committed together): raises IntegrityError or StaleVersion when ``key`` is no
        longer at ``version``."""
        seq = version + 1
        conn.execute(insert(outcome_log).values(
            key=key, seq=seq, features=dumps(features), outcome=dumps(outcome),
        ))  # fmt: skip
        self._write_state(conn, key, version, dumps(snapshot))
        if self.keep_outcomes and seq % self.keep_outcomes == 0:
            conn.execute(delete(outcome_log).where(
                outcome_log.c.key == key, outcome_log.c.seq <= seq - self.keep_outcomes
            ))  # fmt: skip

    @staticmethod
    def _write_state(conn: Any, key: str, version: int, snapshot: str) -> None:
        if version == 0:
            conn.execute(insert(type_states).values(key=key, version=1, snapshot=snapshot))
            return
        moved = conn.execute(
            update(type_states)
            .where(type_states.c.key == key, type_states.c.version == version)
            .values(version=version + 1, snapshot=snapshot)
        )
        if moved.rowcount != 1:  # the log row went in but the state is elsewhere: roll back
            raise StaleVersion(f"{key!r} is not at version {version}")

    def outcomes(self, key: str) -> list[tuple[int, dict, dict]]:
        """A type's logged outcomes still kept: (seq, features, outcome), in seq order."""
        stmt = (
            select(outcome_log.c.seq, outcome_log.c.features, outcome_log.c.outcome)
            .where(outcome_log.c.key == key)
            .order_by(outcome_log.c.seq)
        )
        with self.engine.connect() as conn:
            return [(int(s), orjson.loads(f), orjson.loads(o)) for s, f, o in conn.execute(stmt)]

    def committed(self) -> int:
        """Outcomes acknowledged over all types (the sum of their versions)."""
        with self.engine.connect() as conn:
            return int(
                conn.execute(select(func.coalesce(func.sum(type_states.c.version), 0))).scalar_one()
            )
