"""The rollout switch as issue 38 found it and as it must be: no row (or no table) means
shadow; every change a compare-and-swap on the version, so the guard rail never overrides
a newer decision; ``changed_by`` the account, not ``$LOGNAME``; ``set full`` refused without
evidence unless forced with a reason; reasons one line of plain text."""

from __future__ import annotations

import os
import pwd

import numpy as np
import pandas as pd
import pytest
from sqlalchemy import text
from typer.testing import CliRunner

from scoutless.cli.main import app
from scoutless.config import RolloutSettings
from scoutless.history.panda_db import make_engine
from scoutless.ops import guard_rail
from scoutless.ops.impact import FIGURES, build_report
from scoutless.ops.rollout import (
    RolloutConflict,
    history,
    os_identity,
    read_rollout,
    rollout_table,
    set_rollout,
)

SETTINGS = RolloutSettings(guard_min_tasks=30, guard_margin=0.02, bootstrap=200)


@pytest.fixture
def db(tmp_path) -> str:  # type: ignore[no-untyped-def]
    return f"sqlite:///{tmp_path / 'ops.sqlite'}"


def _harm(p_canary: float = 0.6):  # type: ignore[no-untyped-def]
    """A canary whose first attempts succeed at ``p_canary`` against the control's 0.9."""
    rng = np.random.default_rng(0)
    ok = np.concatenate([rng.binomial(10, p_canary, 40), rng.binomial(10, 0.9, 40)])
    ids = np.arange(80)
    figures = pd.DataFrame({f"{f}_{k}": 0.0 for f in FIGURES for k in ("num", "den")}, index=ids)
    figures["first_attempt_success_num"], figures["first_attempt_success_den"] = ok, 10.0
    arms = pd.DataFrame({"arm": ["canary"] * 40 + ["control"] * 40,
                         "created_at": pd.Timestamp("2026-03-01")}, index=ids)  # fmt: skip
    return build_report(figures, arms, "1D", SETTINGS)


def test_no_row_and_no_table_mean_shadow(db: str) -> None:
    engine = make_engine(db)
    assert read_rollout(engine).mode == "shadow"  # no table
    set_rollout(engine, "canary", seed=0, share=0.5, reason="try")
    with engine.begin() as conn:
        conn.execute(text("DROP TABLE scoutless_rollout"))
    assert read_rollout(engine).mode == "shadow"  # dropped: not full
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM scoutless_rollout"))
    assert read_rollout(engine).mode == "shadow"


def test_every_change_is_a_compare_and_swap_on_the_version(db: str) -> None:
    engine = make_engine(db)
    seen = read_rollout(engine)
    first = set_rollout(engine, "canary", seed=0, share=0.1, reason="a", expected_version=seen.version)
    with pytest.raises(RolloutConflict, match="changed since version 0") as late:
        set_rollout(engine, "shadow", seed=0, reason="b", expected_version=seen.version)
    assert late.value.current.version == first.version
    # a reading older than the last row with a gap before it (ids need not be dense)
    with engine.begin() as conn:
        conn.execute(rollout_table.insert(), {**_row(), "id": first.version + 5})
    with pytest.raises(RolloutConflict):
        set_rollout(engine, "shadow", seed=0, reason="c", expected_version=first.version)
    assert [s.reason for s in history(engine)] == ["a", "later"]


def _row() -> dict:
    from datetime import datetime

    return {"mode": "shadow", "share": None, "seed": 0, "scope": None, "reason": "later",
            "changed_by": "os:someone", "changed_at": datetime(2026, 1, 1)}  # fmt: skip


def test_the_guard_rail_racing_an_operator_leaves_the_newer_decision(db, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """An operator's new canary written between the rail's read and its write used to be
    overridden by shadow on the old canary's evidence."""
    engine = make_engine(db)
    old = set_rollout(engine, "canary", seed=0, share=0.5, reason="first canary")
    judge = guard_rail.judge

    def operator_acts_meanwhile(report, s):  # type: ignore[no-untyped-def]
        verdict = judge(report, s)
        set_rollout(engine, "canary", seed=0, share=0.05, scope={"gshare": ["Test"]},
                    reason="smaller canary", changed_by="os:alice")  # fmt: skip
        return verdict

    monkeypatch.setattr(guard_rail, "judge", operator_acts_meanwhile)
    verdict = guard_rail.check_guard_rail(engine, _harm(), settings=SETTINGS)
    state = read_rollout(engine)
    assert (state.mode, state.share, state.changed_by) == ("canary", 0.05, "os:alice")
    assert not verdict.tripped
    assert f"judged on version {old.version}" in verdict.message
    assert "newer decision stands" in verdict.message
    monkeypatch.setattr(guard_rail, "judge", judge)  # the next step judges the new canary
    assert guard_rail.check_guard_rail(engine, _harm(), settings=SETTINGS).tripped
    assert read_rollout(engine).mode == "shadow"


def test_changed_by_is_the_account_not_logname(db: str, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("LOGNAME", "alice")
    monkeypatch.setenv("USER", "alice")
    result = CliRunner().invoke(app, ["rollout", "set", "shadow", "--reason", "x", "--db", db])
    assert result.exit_code == 0, result.output
    expected = f"os:{pwd.getpwuid(os.getuid()).pw_name}"
    assert os_identity() == expected
    assert read_rollout(make_engine(db)).changed_by == expected


def test_set_full_needs_evidence_or_force_with_a_reason(db: str) -> None:
    runner = CliRunner()
    refused = runner.invoke(app, ["rollout", "set", "full", "--db", db])
    assert refused.exit_code == 2 and "refused" in refused.output and "--force" in refused.output
    no_reason = runner.invoke(app, ["rollout", "set", "full", "--force", "--db", db])
    assert no_reason.exit_code == 2 and "--reason" in no_reason.output
    assert read_rollout(make_engine(db)).mode == "shadow"  # nothing written
    forced = runner.invoke(
        app, ["rollout", "set", "full", "--force", "--reason", "lab test", "--db", db]
    )
    assert forced.exit_code == 0, forced.output
    state = read_rollout(make_engine(db))
    assert state.mode == "full" and state.reason.startswith("forced without evidence")
    assert state.reason.endswith(": lab test")


def test_reasons_are_one_line_of_plain_text(db: str) -> None:
    """A reason with Rich markup and a newline forged a second line in ``rollout show``."""
    runner = CliRunner(env={"COLUMNS": "300"})
    forged = "ok\n[bold red]#99 full by root: approved[/bold red]"
    result = runner.invoke(app, ["rollout", "set", "shadow", "--reason", forged, "--db", db])
    assert result.exit_code == 0, result.output
    state = read_rollout(make_engine(db))
    assert "\n" not in state.reason and state.reason.startswith("ok [bold red]")
    shown = runner.invoke(app, ["rollout", "show", "--db", db])
    assert shown.exit_code == 0
    assert "ok [bold red]#99 full by root: approved[/bold red]" in shown.output
    assert not any(line.lstrip().startswith("#99") for line in shown.output.splitlines())


def test_set_full_goes_through_with_evidence_and_not_against_it(db, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from scoutless.ops import impact

    engine = make_engine(db)
    set_rollout(engine, "canary", seed=0, share=0.5, reason="try")
    for name, value in (("GUARD_MIN_TASKS", 30), ("GUARD_MARGIN", 0.02), ("BOOTSTRAP", 200)):
        monkeypatch.setenv(f"SCOUTLESS_ROLLOUT__{name}", str(value))  # SETTINGS, read by the CLI
    monkeypatch.setattr(impact, "impact_report", lambda *a, **k: _harm(0.6))
    harm = CliRunner().invoke(app, ["rollout", "set", "full", "--db", db])
    assert harm.exit_code == 2 and "says harm" in harm.output
    monkeypatch.setattr(impact, "impact_report", lambda *a, **k: _harm(0.9))
    held = CliRunner().invoke(app, ["rollout", "set", "full", "--reason", "held", "--db", db])
    assert held.exit_code == 0, held.output
    assert "evidence in the last 14 days holds" in held.output
    assert read_rollout(engine).mode == "full" and read_rollout(engine).reason == "held"


def test_set_if_version_writes_only_over_the_version_seen(db: str) -> None:
    runner = CliRunner()
    ok = runner.invoke(app, ["rollout", "set", "shadow", "--reason", "a", "--db", db,
                             "--if-version", "0"])  # fmt: skip
    assert ok.exit_code == 0, ok.output
    late = runner.invoke(app, ["rollout", "set", "canary", "--share", "0.1", "--db", db,
                               "--if-version", "0"])  # fmt: skip
    assert late.exit_code == 2 and "changed since version 0" in late.output
    assert read_rollout(make_engine(db)).version == 1


def test_the_expected_version_must_equal_the_last_one(db: str) -> None:
    """A version ahead of the last row (1000 at version 1) was taken and written as 1001."""
    engine = make_engine(db)
    first = set_rollout(engine, "canary", seed=0, share=0.1, reason="a", expected_version=0)
    with pytest.raises(RolloutConflict, match="no version 1000 yet: version 1 is canary"):
        set_rollout(engine, "shadow", seed=0, reason="ahead", expected_version=1000)
    with pytest.raises(RolloutConflict, match="changed since version 0 was read"):
        set_rollout(engine, "shadow", seed=0, reason="behind", expected_version=0)
    assert [s.version for s in history(engine)] == [first.version]
    assert set_rollout(engine, "shadow", seed=0, reason="b", expected_version=1).version == 2


@pytest.mark.parametrize(("given", "words"), [("1000", "no version 1000 yet"),
                                              ("0", "changed since version 0")])  # fmt: skip
def test_cli_if_version_other_than_the_last_exits_2_in_one_line(
    db: str, given: str, words: str
) -> None:
    runner = CliRunner(env={"COLUMNS": "300"})
    set_cmd = ["rollout", "set", "canary", "--share", "0.1", "--db", db]
    assert runner.invoke(app, set_cmd).exit_code == 0
    result = runner.invoke(app, [*set_cmd, "--if-version", given])
    assert result.exit_code == 2
    assert words in result.output and len(result.output.strip().splitlines()) == 1
    assert [s.version for s in history(make_engine(db))] == [1]
