"""The one typed settings object, assembled from the sections beside it; where values come from.

Values come from (highest first) explicit arguments, ``SCOUTLESS_*`` environment variables
(nested with ``__``, e.g. ``SCOUTLESS_PANDA__CPU_EFFICIENCY_PERCENT=80``), the settings file
that ``SCOUTLESS_CONFIG`` names (``scoutless --config FILE`` sets it: a ``scoutless.toml``
with the same names, ``[panda] cpu_efficiency_percent = 80``), then these defaults.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from pydantic import BaseModel, Field, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from scoutless.config.allocation import AllocationSettings
from scoutless.config.distributed import DistributedSettings
from scoutless.config.history import HistorySettings
from scoutless.config.job_follower import JobFollowerSettings
from scoutless.config.listener import ListenerSettings, RolloutSettings
from scoutless.config.panda import PandaDefaults, TargetSettings
from scoutless.config.replay import ReplaySettings
from scoutless.config.service import InferenceSettings, ServiceSettings
from scoutless.config.sizing import SizingSettings
from scoutless.config.sizing_state import SizingStateSettings
from scoutless.config.training import SplitSettings, TrainingSettings, WithinTaskSettings

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

#: the environment variable naming the settings file (``scoutless --config FILE`` sets it)
CONFIG_ENV = "SCOUTLESS_CONFIG"
#: every setting's environment variable starts with this (``Settings.model_config``)
ENV_PREFIX = "SCOUTLESS_"
_Model = TypeVar("_Model", bound=BaseModel)


#: PanDA's PostgreSQL schema (``Settings.db_schema``'s default)
PANDA_SCHEMA = "doma_panda"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, env_nested_delimiter="__", extra="ignore"
    )

    workdir: Path = Path("scoutless-work")
    db_url: str | None = Field(
        None,
        description="SQLAlchemy URL of the PanDA-compatible history; default: SQLite in workdir",
    )
    db_schema: str | None = Field(
        PANDA_SCHEMA,
        description="PostgreSQL schema of PanDA's tables, searched first (search_path "
        "'<schema>,public'); PostgreSQL skips it where it does not exist. None: server default",
    )
    db_password_file: Path | None = Field(
        None,
        description="file holding the database password, put into db_url (which then need "
        "not carry it); SCOUTLESS_DB_PASSWORD gives it from the environment",
    )
    db_password: str | None = Field(None, description="the database password (environment)")
    bins_file: Path | None = Field(None, description="TOML overriding the shipped default bins")
    seed: int = 42
    panda: PandaDefaults = PandaDefaults()
    targets: TargetSettings = TargetSettings()
    splits: SplitSettings = SplitSettings()
    training: TrainingSettings = TrainingSettings()
    service: ServiceSettings = ServiceSettings()
    inference: InferenceSettings = InferenceSettings()
    history: HistorySettings = HistorySettings()
    listener: ListenerSettings = ListenerSettings()
    within_task: WithinTaskSettings = WithinTaskSettings()
    replay: ReplaySettings = ReplaySettings()
    distributed: DistributedSettings = DistributedSettings()
    allocation: AllocationSettings = AllocationSettings()
    rollout: RolloutSettings = RolloutSettings()
    sizing: SizingSettings = SizingSettings()
    sizing_state: SizingStateSettings = SizingStateSettings()
    job_follower: JobFollowerSettings = JobFollowerSettings()

    @model_validator(mode="after")
    def _one_default_policy(self) -> Settings:
        """The listener and the replay allocate ``allocation.default_policy``, and the
        service and the listener allow ``allocation.alpha``, unless their own setting is
        set: one setting for every entry point."""
        policy = {"policy": self.allocation.default_policy}
        alpha = self.allocation.alpha
        listener: dict = {}
        if "policy" not in self.listener.model_fields_set:
            listener.update(policy)
        if "alpha" not in self.listener.model_fields_set:
            listener["alpha"] = alpha
        self.listener = self.listener.model_copy(update=listener)
        if "policy" not in self.replay.model_fields_set:
            self.replay = self.replay.model_copy(update=policy)
        if "default_alpha" not in self.service.model_fields_set:
            self.service = self.service.model_copy(update={"default_alpha": alpha})
        return self

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Arguments, then the environment, then the settings file, then the defaults."""
        check_environment(os.environ)
        path = settings_file()
        if path is None:
            return init_settings, env_settings, dotenv_settings, file_secret_settings
        toml = TomlConfigSettingsSource(settings_cls, toml_file=path)
        return init_settings, env_settings, toml, dotenv_settings, file_secret_settings

    def resolved_db_url(self) -> str:
        """The configured database, or the embedded default: one SQLite file in the work dir."""
        if self.db_url:
            return with_password(self.db_url, self.db_password_file, self.db_password)
        return f"sqlite:///{(self.workdir / 'history.sqlite').resolve()}"


class BadDatabaseUrl(ValueError):
    """Text given where a database URL is expected (a file's path, say): names both."""

    def __init__(self, text: str) -> None:
        hint = f"; for a SQLite file write sqlite:///{text}" if "://" not in text else ""
        super().__init__(f"{text!r} is not a database URL (dialect://…){hint}")


def parse_db_url(text: str) -> URL:
    """``text`` as SQLAlchemy's URL; :class:`BadDatabaseUrl` when it is not one."""
    from sqlalchemy.engine import make_url  # lazily: the CLI's --help imports settings
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(text)
    except ArgumentError as exc:
        raise BadDatabaseUrl(text) from exc


def with_password(url: str, password_file: Path | None, password: str | None) -> str:
    """``url`` with the password from ``password_file`` (first line) or ``password``, if
    either is given and the URL carries none."""
    secret = password_file.read_text().splitlines()[0] if password_file else password
    if not secret:
        return url
    parsed = parse_db_url(url)
    if parsed.password:
        return url
    return parsed.set(password=secret).render_as_string(hide_password=False)


def masked_url(text: str) -> str:
    """``text`` as shown to a user: a database URL with its password as ``***``."""
    if "://" not in text or "@" not in text:
        return text
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(text).render_as_string(hide_password=True)
    except ArgumentError:
        return text


def updated(model: _Model, **changes: object) -> _Model:
    """``model`` with ``changes`` (None: unchanged), validated as a file's values are: a
    command's option copied in with ``model_copy`` would skip every bound (``gt=0`` …)."""
    given = {k: v for k, v in changes.items() if v is not None}
    return type(model).model_validate({**model.model_dump(), **given}) if given else model


def get_settings() -> Settings:
    """The settings as the environment and the file give them now. Only a composition root
    calls this (a command, the app factory, a worker process, a benchmark's main; listed in
    tests/test_settings_roots.py): it reads them once where its process starts and passes
    them, or the section a callee needs, down as arguments. Nothing caches them, so a test
    sets the environment or passes a ``Settings`` and clears nothing."""
    return Settings()


class SettingsFileError(ValueError):
    """The settings file cannot be used; the message names the file and the key."""


def settings_file() -> Path | None:
    """The file ``SCOUTLESS_CONFIG`` names, checked: it exists, is TOML, and every key in it
    is a setting (a misspelt key would otherwise be ignored without a word)."""
    raw = os.environ.get(CONFIG_ENV)
    if not raw:
        return None
    path = Path(raw)
    if not path.is_file():
        raise SettingsFileError(f"{CONFIG_ENV}={raw}: the settings file does not exist")
    try:
        values = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SettingsFileError(f"{path}: not a readable TOML settings file: {exc}") from exc
    unknown = _unknown_keys(values, Settings)
    if unknown:
        raise SettingsFileError(
            f"{path}: unknown setting(s) {', '.join(unknown)} "
            "(the settings reference lists every name)"
        )
    return path


def _unknown_keys(values: dict, model: type[BaseModel], prefix: str = "") -> list[str]:
    """Dotted keys of ``values`` that ``model`` has no field for; tables of a sub-model are
    checked inside it, the values of a dict-typed field (e.g. prices) are not."""
    unknown = []
    for key, value in values.items():
        field = model.model_fields.get(key)
        if field is None:
            unknown.append(f"{prefix}{key}")
            continue
        sub = field.annotation
        if isinstance(value, dict) and isinstance(sub, type) and issubclass(sub, BaseModel):
            unknown += _unknown_keys(value, sub, f"{prefix}{key}.")
    return unknown


class SettingsEnvError(ValueError):
    """A ``SCOUTLESS_*`` environment variable written as a setting that names none: the
    environment source passes over it without a word, and the command would run on the
    default. The message names the variable and the one it most likely meant."""


def check_environment(environ: Mapping[str, str]) -> None:
    """Raise `SettingsEnvError` for the ``SCOUTLESS_*`` variables that look like a setting
    and are none: a section that does not exist (``SCOUTLESS_SIZNG__…``), a section joined by
    one underscore (``SCOUTLESS_SIZING_FAILURE_PENALTY``), or a section's field written at the
    top (``SCOUTLESS_FAILURE_PENALTY``), a field a section does not have
    (``SCOUTLESS_SIZING__REFUTE_BOROWED``); other ``SCOUTLESS_*`` names (the scripts' ports
    and folders) are left alone."""
    problems = [p for name in sorted(environ) if (p := _misnamed(name))]
    if problems:
        raise SettingsEnvError("; ".join(problems))


@cache
def setting_sections() -> dict[str, type[BaseModel]]:
    """The settings' sections (a field whose type is a model) by name: fixed once imported."""
    return {k: f.annotation for k, f in Settings.model_fields.items()
            if isinstance(f.annotation, type) and issubclass(f.annotation, BaseModel)}  # fmt: skip


def is_setting_variable(name: str) -> bool:
    """Whether environment variable ``name`` sets a setting by its form: a top-level
    field (``SCOUTLESS_DB_URL``) or one inside a section (``SCOUTLESS_SIZING__…``); a
    misnamed one is `check_environment`'s to refuse."""
    if not name.upper().startswith(ENV_PREFIX):
        return False
    rest = name[len(ENV_PREFIX) :].lower()
    section, nested, _ = rest.partition("__")
    return section in setting_sections() if nested else rest in Settings.model_fields


def _misnamed(name: str) -> str | None:
    """What is wrong with environment variable ``name`` as a setting (None: nothing)."""
    if not name.upper().startswith(ENV_PREFIX):
        return None
    rest = name[len(ENV_PREFIX) :].lower()
    sections = setting_sections()
    if "__" in rest:
        head, tail = rest.split("__", 1)
        if head in sections:
            return _misnamed_inside(name, sections[head], head, tail.split("__"))
        guess = difflib.get_close_matches(head, sections, n=1)
        meant = f"; did you mean {_env(guess[0], tail)}?" if guess else ""
        return f"{name}: no settings section {head!r}{meant}"
    if rest in Settings.model_fields:
        return None
    for section, model in sections.items():
        field = rest.removeprefix(section + "_")
        if field != rest and field in model.model_fields:
            return f"{name}: a section nests with two underscores: {_env(section, field)}"
    owners = [section for section, model in sections.items() if rest in model.model_fields]
    if owners:
        meant = " or ".join(_env(section, rest) for section in owners)
        return f"{name}: no top-level setting {rest!r}; did you mean {meant}?"
    return None


def _misnamed_inside(name: str, model: type, path: str, parts: list[str]) -> str | None:
    """A nested variable's path followed through the sections' models: the first part that
    is no field of its model, with the closest that is (a dict-typed field's keys, and what
    lies below a plain value, are the value's own check)."""
    for part in parts:
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return None
        if part not in model.model_fields:
            guess = difflib.get_close_matches(part, model.model_fields, n=1)
            meant = f"; did you mean {_env(path, guess[0])}?" if guess else ""
            return f"{name}: {path.replace('__', '.')} has no setting {part!r}{meant}"
        model, path = model.model_fields[part].annotation, f"{path}__{part}"
    return None


def _env(section: str, field: str) -> str:
    return f"{ENV_PREFIX}{section.upper()}__{field.upper()}"
