"""What ships beside the code: the lock parses and names torch's CPU index, the version is
one, the licence is Apache-2.0's full text, the deployment files are valid (systemd's own
verifier where it is installed) and name real verbs, options and settings. The wheel itself
is built and installed by ``scripts/wheel_check.sh`` (CI runs it before the tests)."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
import typer
from packaging.requirements import Requirement

from scoutless import __version__
from scoutless.cli.main import app
from scoutless.config import CONFIG_ENV, Settings

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements" / "lock.txt"
UNITS = sorted((ROOT / "deploy" / "systemd").glob("*.service"))
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def test_the_lock_parses_every_line_pinned_once_and_names_the_cpu_index() -> None:
    pins: dict[str, str] = {}
    for number, line in enumerate(LOCK.read_text().splitlines(), 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        assert not text.startswith("-"), f"lock.txt:{number}: an option line ({text})"
        requirement = Requirement(text)
        (spec,) = requirement.specifier
        assert spec.operator == "==", f"lock.txt:{number}: {text} is not pinned"
        assert requirement.name.lower() not in pins, f"lock.txt:{number}: {text} twice"
        pins[requirement.name.lower()] = spec.version
    assert len(pins) > 100 and pins["torch"].endswith("+cpu")
    header = LOCK.read_text().split("\n\n", 1)[0]
    assert f"--extra-index-url {CPU_INDEX}" in header


def test_one_version_one_licence_and_a_changelog_entry() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["dynamic"] == ["version"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "scoutless.__version__"}
    assert project["project"]["license"] == "Apache-2.0"
    licence = (ROOT / "LICENSE").read_text()
    assert "Apache License" in licence and "Version 2.0, January 2004" in licence
    assert "END OF TERMS AND CONDITIONS" in licence and len(licence) > 10_000
    assert f"## [{__version__}]" in (ROOT / "CHANGELOG.md").read_text()


def _exec_start(unit: Path) -> list[str]:
    (line,) = [x for x in unit.read_text().splitlines() if x.startswith("ExecStart=")]
    return shlex.split(line.removeprefix("ExecStart="))


def test_every_unit_runs_a_real_verb_with_real_options() -> None:
    root = typer.main.get_command(app)
    assert {u.stem for u in UNITS} == {"scoutless-serve", "scoutless-listen", "scoutless-monitor"}
    for unit in UNITS:
        argv = _exec_start(unit)
        assert argv[0].endswith("/bin/scoutless"), unit.name
        command, words = root, argv[1:]
        while hasattr(command, "commands") and words and words[0] in command.commands:
            command, words = command.commands[words[0]], words[1:]
        assert not hasattr(command, "commands"), f"{unit.name}: {argv}"
        options = {o for p in command.params for o in p.opts}
        assert all(w in options for w in words if w.startswith("--")), f"{unit.name}: {words}"
        text = unit.read_text()
        assert f"Environment={CONFIG_ENV}=/etc/scoutless/scoutless.toml" in text


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd is not installed")
def test_systemd_verifies_the_units(tmp_path: Path) -> None:
    """``systemd-analyze verify`` checks every key and value, and that ExecStart can run:
    the units' /opt/scoutless/venv/bin/scoutless is pointed at a stand-in here."""
    stand_in = tmp_path / "bin" / "scoutless"
    stand_in.parent.mkdir()
    stand_in.write_text("#!/bin/sh\n")
    stand_in.chmod(0o755)
    copies = []
    for unit in UNITS:
        copy = tmp_path / unit.name
        copy.write_text(unit.read_text().replace("/opt/scoutless/venv/bin/scoutless", str(stand_in)))
        copies.append(str(copy))
    proc = subprocess.run(["systemd-analyze", "verify", *copies], capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    said = (proc.stdout + proc.stderr).strip()
    assert proc.returncode == 0 and not said, said


def test_the_shipped_settings_file_and_env_file_hold_real_settings(monkeypatch) -> None:
    monkeypatch.setenv(CONFIG_ENV, str(ROOT / "deploy" / "scoutless.toml"))
    for name in [k for k in list(os.environ) if k.startswith("SCOUTLESS_")]:
        if name != CONFIG_ENV:
            monkeypatch.delenv(name)
    settings = Settings()
    assert settings.service.host == "0.0.0.0" and settings.rollout.evidence_days == 14
    assert settings.listener.health_port == 9466
    env_lines = (ROOT / "deploy" / "scoutless.env").read_text().splitlines()
    for line in [x for x in env_lines if x and not x.startswith("#")]:
        name, value = line.split("=", 1)
        monkeypatch.setenv(name, value)
    settings = Settings()
    assert settings.db_url and settings.db_url.startswith("postgresql+psycopg://")
    assert settings.listener.passcode == "change-me"
    from scoutless.service.auth import load_tokens

    names = {p.name: p.roles for p in load_tokens(settings.service).values()}
    assert names == {"jedi": {"predict"}, "grafana": {"read"}, "ops": {"admin"}}
    assert re.match(r"^stomp://", settings.listener.broker)
