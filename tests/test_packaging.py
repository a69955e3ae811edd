"""What ships beside the code: the lock parses and names torch's CPU index, the version is
one, the licence is Apache-2.0's full text, the deployment files are valid (systemd's own
verifier where it is installed) and name real verbs, options and settings. The wheel itself
is built and installed by ``scripts/wheel_check.sh`` (CI runs it beside the tests); every
package a module imports is declared, in the dependencies or in the extra the module needs."""

from __future__ import annotations

import ast
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
import typer
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from scoutless import __version__
from scoutless.cli.main import app
from scoutless.config import CONFIG_ENV, Settings

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements" / "lock.txt"
UNITS = sorted((ROOT / "deploy" / "systemd").glob("*.service"))
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
SRC = ROOT / "src"
# Modules that run only where an extra is installed (their third-party imports may come from
# it), with the reason. oracledb has no module here: SQLAlchemy imports it for an
# oracle+oracledb:// URL, and history.panda_db's DriverMissing names the extra.
EXTRA_MODULES = {
    "scoutless/panda/jedi_plugin.py": ("panda", "runs inside panda-common's agent, in JEDI"),
    "scoutless/panda/agent.py": ("panda", "starts panda-common's agent around the plugin"),
}


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


def _third_party_imports(path: Path) -> set[str]:
    """Top-level names of what ``path`` imports, at module level or inside functions (the
    lazy imports), outside the standard library and scoutless itself."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return {n for n in names if n not in sys.stdlib_module_names and n != "scoutless"}


def _with_extras(requirement: Requirement) -> set[str]:
    """The distribution a requirement names and those its extras bring (``dask[distributed]``
    declares distributed), read from the installed metadata."""
    names = {canonicalize_name(requirement.name)}
    for extra in requirement.extras:
        for line in metadata.requires(requirement.name) or []:
            brought = Requirement(line)
            if brought.marker is not None and brought.marker.evaluate({"extra": extra}):
                names.add(canonicalize_name(brought.name))
    return names


def _requirements(project: dict) -> dict[str | None, list[Requirement]]:
    """pyproject.toml's requirements per extra (None: the plain install) that apply to this
    interpreter (their markers hold)."""
    groups = {None: project["dependencies"], **project["optional-dependencies"]}
    return {
        extra: [r for r in map(Requirement, lines) if r.marker is None or r.marker.evaluate()]
        for extra, lines in groups.items()
    }


def _declared(project: dict) -> dict[str | None, set[str]]:
    """Distribution names per extra (None: the plain install), for this interpreter."""
    return {
        extra: {name for r in requirements for name in _with_extras(r)}
        for extra, requirements in _requirements(project).items()
    }


def test_every_imported_package_is_declared_for_the_install_that_runs_it() -> None:
    """A package that only arrives through another one (or another extra) breaks a plain
    install the day that one changes: each module's imports must be declared by name."""
    declared = _declared(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"])
    providers = metadata.packages_distributions()
    modules = sorted((SRC / "scoutless").rglob("*.py"))
    assert len(modules) > 100
    assert set(EXTRA_MODULES) <= {m.relative_to(SRC).as_posix() for m in modules}
    missing, used_extras = [], set()
    for module in modules:
        name = module.relative_to(SRC).as_posix()
        extra = EXTRA_MODULES.get(name, (None, ""))[0]
        allowed = declared[None] | (declared[extra] if extra else set())
        for package in sorted(_third_party_imports(module)):
            dists = {canonicalize_name(d) for d in providers.get(package, [])}
            if not dists & allowed:
                where = f"the {extra} extra" if extra else "the dependencies"
                missing.append(f"{name} imports {package} ({', '.join(dists) or 'not installed'}), "
                               f"not declared in {where} of pyproject.toml")  # fmt: skip
            elif extra and not dists & declared[None]:
                used_extras.add(name)
    assert not missing, "\n".join(missing)
    assert used_extras == set(EXTRA_MODULES), "a module in EXTRA_MODULES needs no extra"


def test_the_dependencies_ranges_admit_the_locked_versions() -> None:
    """scripts/setup.sh and the wheel check install the lock under pyproject.toml's ranges:
    a range the lock's pin falls outside of cannot be installed."""
    pins = {}
    for line in LOCK.read_text().splitlines():
        text = line.split("#", 1)[0].strip()
        if text:
            requirement = Requirement(text)
            pins[canonicalize_name(requirement.name)] = next(iter(requirement.specifier)).version
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    for requirements in _requirements(project).values():
        for requirement in requirements:
            pin = pins.get(canonicalize_name(requirement.name))
            assert pin is not None, f"the lock does not pin {requirement.name}"
            assert requirement.specifier.contains(pin, prereleases=True), f"{requirement} vs {pin}"
