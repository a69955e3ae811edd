from __future__ import annotations

from pathlib import Path

import pytest
from ops_fakes import make_fake_bundle
from typer.testing import CliRunner

from scoutless.cli.main import app
from scoutless.ops import registry as reg

pytestmark = pytest.mark.usefixtures("shallow_registry")


def test_registry_add_promote_rollback_list(tmp_path: Path) -> None:
    runner = CliRunner()
    root = tmp_path / "reg"
    for v in ("v1", "v2"):
        result = runner.invoke(app, ["registry", "add", str(root),
                                     str(make_fake_bundle(tmp_path / v, v)), "--promote"])  # fmt: skip
        assert result.exit_code == 0, result.output
    assert reg.champion_version(root) == "v2"
    result = runner.invoke(app, ["registry", "rollback", str(root)])
    assert result.exit_code == 0 and "v2 → v1" in result.output
    result = runner.invoke(app, ["registry", "promote", str(root), "missing"])
    assert result.exit_code == 2 and "'missing'" in " ".join(result.output.split())
    result = runner.invoke(app, ["registry", "list", str(root)])
    assert result.exit_code == 0 and "★" in result.output and "rollback" in result.output
