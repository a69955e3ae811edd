"""One settings file for every setting: ``scoutless --config FILE`` or ``SCOUTLESS_CONFIG``
names a TOML file with the settings reference's names; environment variables override it,
arguments override both; a key that is not a setting, or a file that is not there, is
refused naming it (a misspelt key must not be ignored without a word)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from scoutless.cli.main import app
from scoutless.config import CONFIG_ENV, Settings, SettingsFileError, get_settings

EXAMPLE = """
workdir = "/srv/scoutless"
[service]
port = 9123
[panda]
cpu_efficiency_percent = 80
[replay]
strategies = ["scouts", "hybrid"]
[allocation.resource_prices.SCORE]
memory_gb_hour = 0.5
"""


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch):
    for name in [k for k in os.environ if k.startswith("SCOUTLESS_")]:
        monkeypatch.delenv(name)
    monkeypatch.delenv(CONFIG_ENV, raising=False)
    yield
    os.environ.pop(CONFIG_ENV, None)  # `--config` sets it itself, outside monkeypatch's undo


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "scoutless.toml"
    path.write_text(text)
    return path


def test_the_file_sets_nested_settings_and_the_environment_overrides_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CONFIG_ENV, str(_file(tmp_path, EXAMPLE)))
    settings = Settings()
    assert settings.service.port == 9123 and settings.panda.cpu_efficiency_percent == 80
    assert settings.workdir == Path("/srv/scoutless")
    assert settings.replay.strategies == ["scouts", "hybrid"]
    assert settings.service.host == Settings.model_fields["service"].default.host  # untouched
    monkeypatch.setenv("SCOUTLESS_SERVICE__PORT", "9500")
    assert Settings().service.port == 9500 and Settings().panda.cpu_efficiency_percent == 80
    assert Settings(seed=7).seed == 7


@pytest.mark.parametrize(
    ("text", "named"),
    [("[servce]\nport = 1\n", "servce"), ("[service]\nprot = 1\n", "service.prot"),
     ("colour = 1\n", "colour")],
)  # fmt: skip
def test_a_key_that_is_not_a_setting_is_refused_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, named: str
) -> None:
    monkeypatch.setenv(CONFIG_ENV, str(_file(tmp_path, text)))
    with pytest.raises(SettingsFileError, match=rf"unknown setting\(s\) {named}\b"):
        Settings()


def test_a_missing_or_broken_file_is_refused_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(CONFIG_ENV, str(tmp_path / "absent.toml"))
    with pytest.raises(SettingsFileError, match=r"absent\.toml: the settings file does not exist"):
        Settings()
    monkeypatch.setenv(CONFIG_ENV, str(_file(tmp_path, "[service\n")))
    with pytest.raises(SettingsFileError, match=r"scoutless\.toml: not a readable TOML"):
        Settings()


def test_the_global_option_reaches_the_settings_a_verb_reads(tmp_path: Path) -> None:
    """``scoutless --config FILE VERB``: the file is in force before the verb is imported
    (and in the environment of the processes it starts)."""
    path = _file(tmp_path, EXAMPLE)
    result = CliRunner().invoke(app, ["--config", str(path), "registry", "list", str(tmp_path)])
    assert os.environ[CONFIG_ENV] == str(path.resolve())
    assert get_settings().service.port == 9123
    assert "does not exist" not in result.output


def test_the_command_refuses_a_wrong_file_in_one_message(tmp_path: Path) -> None:
    path = _file(tmp_path, "[service]\nprot = 1\n")
    result = CliRunner().invoke(app, ["--config", str(path), "rollout", "--help"])
    said = " ".join(result.output.replace("│", " ").split())
    assert result.exit_code == 2 and "unknown setting(s) service.prot" in said
