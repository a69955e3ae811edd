"""``scoutless rollout set|show``: bad input names its key and writes nothing; a canary
with a scope, the kill switch and the record of changes."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine
from typer.testing import CliRunner

from scoutless.cli.main import app
from scoutless.ops.rollout import history, read_rollout


@pytest.fixture
def db(tmp_path) -> str:  # type: ignore[no-untyped-def]
    return f"sqlite:///{tmp_path / 'ops.sqlite'}"


def test_rollout_cli_set_show_and_bad_input(db: str) -> None:
    runner = CliRunner()
    bad = runner.invoke(app, ["rollout", "set", "canary", "--share", "1.5", "--db", db])
    assert bad.exit_code == 2 and "rollout.share" in bad.output
    bad = runner.invoke(app, ["rollout", "set", "half", "--db", db])
    assert bad.exit_code == 2 and "rollout.mode" in bad.output
    bad = runner.invoke(app, ["rollout", "set", "canary", "--share", "0.5", "--scope", "gshare",
                              "--db", db])  # fmt: skip
    assert bad.exit_code == 2 and "rollout.scope" in bad.output
    ok = runner.invoke(app, ["rollout", "set", "canary", "--share", "0.5", "--scope",
                             "gshare=Express,MC 16", "--reason", "try it", "--db", db])  # fmt: skip
    assert ok.exit_code == 0, ok.output
    assert read_rollout(create_engine(db)).scope == {"gshare": ["Express", "MC 16"]}
    off = runner.invoke(app, ["rollout", "set", "shadow", "--reason", "stop", "--db", db])
    assert off.exit_code == 0 and "stay so" in off.output
    assert len(history(create_engine(db))) == 2  # the refused ones wrote nothing
    shown = runner.invoke(app, ["rollout", "show", "--db", db])
    assert shown.exit_code == 0 and "try it" in shown.output and "stop" in shown.output
