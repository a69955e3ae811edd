"""One default policy for every entry point (``allocation.default_policy``), and ``alpha``
refused where the policy ignores it."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from typer.testing import CliRunner

from scoutless.cli.main import app
from scoutless.client import _predict_body, _task_params
from scoutless.config import AllocationSettings, Settings

ROOT = Path(__file__).resolve().parents[2]


def test_every_entry_point_reads_the_one_default(monkeypatch) -> None:
    shipped = AllocationSettings().default_policy
    settings = Settings()
    assert settings.listener.policy == settings.replay.policy == shipped == "cost"
    monkeypatch.setenv("SCOUTLESS_ALLOCATION__DEFAULT_POLICY", "value")
    moved = Settings()
    assert moved.listener.policy == moved.replay.policy == "value"
    monkeypatch.setenv("SCOUTLESS_LISTENER__POLICY", "risk")  # an entry point's own wins
    assert Settings().listener.policy == "risk" and Settings().replay.policy == "value"
    # the client leaves the policy to the server unless told
    assert "policy" not in _predict_body([{}], None, None, None, None)
    assert "policy" not in _task_params(None, None, None)
    assert _task_params("risk", 0.1, None) == {"policy": "risk", "alpha": 0.1}


def test_every_entry_point_reads_the_one_alpha(monkeypatch) -> None:
    settings = Settings()
    assert settings.listener.alpha == settings.service.default_alpha == 0.05
    monkeypatch.setenv("SCOUTLESS_ALLOCATION__ALPHA", "0.02")
    moved = Settings()
    assert moved.listener.alpha == moved.service.default_alpha == 0.02
    monkeypatch.setenv("SCOUTLESS_SERVICE__DEFAULT_ALPHA", "0.1")  # an entry point's own wins
    assert Settings().service.default_alpha == 0.1 and Settings().listener.alpha == 0.02


def test_taskparams_refuses_alpha_with_a_policy_that_ignores_it(tmp_path, monkeypatch) -> None:
    monkeypatch.delenv("SCOUTLESS_ALLOCATION__DEFAULT_POLICY", raising=False)
    task = tmp_path / "task.json"
    task.write_text(json.dumps({"taskName": "t", "processingType": "simul"}))
    for extra in ([], ["--policy", "argmax"]):
        result = CliRunner().invoke(app, ["taskparams", str(task), "--bundle", str(tmp_path),
                                          "--alpha", "0.1", *extra])  # fmt: skip
        assert result.exit_code == 2, result.output
        assert "--alpha" in result.output and "alpha=0.1" in result.output


def test_the_defaults_page_lists_every_entry_point_with_its_default() -> None:
    sys.path.insert(0, str(ROOT))
    from docsgen.defaults_ref import defaults_page

    page = defaults_page()
    for entry in ("POST /v1/predict", "scoutless listen", "scoutless taskparams", "Client",
                  "scoutless replay"):  # fmt: skip
        assert entry in page
    assert page.count("`cost` (`allocation.default_policy`)") >= 4
    assert "`argmax`" not in page
