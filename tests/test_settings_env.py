"""A ``SCOUTLESS_*`` environment variable written as a setting that names none is refused
naming the one it most likely meant: pydantic-settings passes over it without a word, and a
newcomer's ``SCOUTLESS_SIZING_FAILURE_PENALTY=4`` (one underscore) would run on the default."""

from __future__ import annotations

import os

import pytest
from typer.testing import CliRunner

from scoutless.cli.main import app
from scoutless.config import Settings, SettingsEnvError
from scoutless.config.settings import check_environment, setting_sections


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [k for k in os.environ if k.startswith("SCOUTLESS_")]:
        monkeypatch.delenv(name)


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("SCOUTLESS_SIZNG__FAILURE_PENALTY",
         "no settings section 'sizng'; did you mean SCOUTLESS_SIZING__FAILURE_PENALTY?"),
        ("SCOUTLESS_SIZING_FAILURE_PENALTY",
         "a section nests with two underscores: SCOUTLESS_SIZING__FAILURE_PENALTY"),
        ("SCOUTLESS_FAILURE_PENALTY",
         "no top-level setting 'failure_penalty'; did you mean SCOUTLESS_SIZING__FAILURE_PENALTY?"),
        ("SCOUTLESS_SIZING__REFUTE_BOROWED",
         "sizing has no setting 'refute_borowed'; did you mean SCOUTLESS_SIZING__REFUTE_BORROWED?"),
        ("SCOUTLESS_ALLOCATION__PRICES__MEMORY_GB_HOURS",  # through nested models
         "allocation.prices has no setting 'memory_gb_hours'; "
         "did you mean SCOUTLESS_ALLOCATION__PRICES__MEMORY_GB_HOUR?"),
        ("scoutless_sizing_failure_penalty",  # the environment source ignores case too
         "a section nests with two underscores: SCOUTLESS_SIZING__FAILURE_PENALTY"),
    ],
)  # fmt: skip
def test_a_misnamed_setting_is_refused_naming_the_meant_one(
    monkeypatch: pytest.MonkeyPatch, name: str, said: str
) -> None:
    monkeypatch.setenv(name, "4")
    with pytest.raises(SettingsEnvError) as caught:
        Settings()
    assert str(caught.value) == f"{name}: {said}"


def test_settings_and_the_scripts_own_variables_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "SCOUTLESS_SIZING__FAILURE_PENALTY": "4", "SCOUTLESS_WORKDIR": "/tmp/w",
        "SCOUTLESS_ALLOCATION__PRICES__MEMORY_GB_HOUR": "0.5",
        "SCOUTLESS_TEST_PG_URL": "postgresql://x", "SCOUTLESS_PGPORT": "5433",
        "SCOUTLESS_PANDA_DB_URL": "sqlite://",  # `panda_` + no field of panda: not a setting
    }.items():  # fmt: skip
        monkeypatch.setenv(name, value)
    settings = Settings()
    assert settings.sizing.failure_penalty == 4.0
    assert settings.allocation.prices.memory_gb_hour == 0.5


def test_every_field_written_right_passes_and_with_one_underscore_is_caught() -> None:
    for section, model in setting_sections().items():
        for field in model.model_fields:
            right = f"SCOUTLESS_{section.upper()}__{field.upper()}"
            check_environment({right: "1"})
            with pytest.raises(SettingsEnvError, match=f"two underscores: {right}$"):
                check_environment({f"SCOUTLESS_{section.upper()}_{field.upper()}": "1"})


def test_every_problem_is_named_at_once_and_a_command_exits_2() -> None:
    env = {"SCOUTLESS_SIZNG__X": "1", "SCOUTLESS_SEED": "1",
           "SCOUTLESS_REPLAY_MEMORY_KILL_FACTOR": "2"}  # fmt: skip
    with pytest.raises(SettingsEnvError) as caught:
        check_environment(env)
    said = str(caught.value)
    assert "SCOUTLESS_SIZNG__X:" in said and "SCOUTLESS_REPLAY_MEMORY_KILL_FACTOR:" in said
    assert "SCOUTLESS_SEED" not in said  # a top-level setting
    result = CliRunner().invoke(app, ["size", "--trace", "x.csv", "-o", "o"],
                                env={"SCOUTLESS_SIZING_FAILURE_PENALTY": "4"})  # fmt: skip
    assert result.exit_code == 2
    assert "SCOUTLESS_SIZING__FAILURE_PENALTY" in " ".join(result.output.split())


def test_a_verbs_help_is_given_whatever_the_environment() -> None:
    env = {"SCOUTLESS_SIZING_FAILURE_PENALTY": "4"}
    result = CliRunner().invoke(app, ["size", "--help"], env=env)
    assert result.exit_code == 0 and "Usage: scoutless size" in " ".join(result.output.split())


def test_updated_validates_what_model_copy_would_let_through() -> None:
    from pydantic import ValidationError

    from scoutless.config import JobFollowerSettings, updated

    base = JobFollowerSettings()
    assert updated(base, poll_interval_s=None) is base
    assert updated(base, poll_interval_s=5.0).poll_interval_s == 5.0
    assert base.model_copy(update={"poll_interval_s": -1.0}).poll_interval_s == -1.0  # the hole
    with pytest.raises(ValidationError, match="poll_interval_s"):
        updated(base, poll_interval_s=-1.0)
