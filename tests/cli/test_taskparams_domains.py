"""``scoutless taskparams`` refuses a field outside its domain in one line, exit 2, before
any bundle or service is asked."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from scoutless.cli.main import app


@pytest.mark.parametrize("value", ["eight", -3, 2**63, True])
def test_a_core_count_outside_its_domain_is_one_line_and_exit_2(tmp_path, value) -> None:  # type: ignore[no-untyped-def]
    params = tmp_path / "task.json"
    params.write_text(json.dumps({"taskName": "mc16.1.simul", "coreCount": value}))
    result = CliRunner().invoke(app, ["taskparams", str(params), "--bundle", str(tmp_path)])
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "coreCount: expected an integer from 1 to" in lines[0], lines
    assert "Traceback" not in result.output and "body." not in result.output
