"""The settings reference, read from ``scoutless.config.Settings``: every field, its type,
its default and the environment variable that sets it (``SCOUTLESS_``, nested with ``__``)."""

from __future__ import annotations

import json
import re
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from pathlib import PurePath
from typing import Any

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from docsgen.markdown import code, first_paragraph, table


@dataclass(frozen=True)
class Setting:
    """One leaf setting: its dotted path, its environment variable and what it is."""

    path: str
    env: str
    type: str
    default: str
    description: str


def _prefix_and_delimiter(settings_cls: type) -> tuple[str, str]:
    config = settings_cls.model_config
    return config.get("env_prefix", ""), config.get("env_nested_delimiter") or "__"


def _is_section(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def type_name(annotation: Any) -> str:
    """A readable type: ``int``, ``float | None``, ``list[str]``, ``dict[str, ResourceType]``."""
    if isinstance(annotation, type) and not typing.get_args(annotation):
        return annotation.__name__
    text = str(annotation).replace("typing.", "").replace("NoneType", "None")
    return re.sub(r"(?:[a-z_]+\.)+([A-Za-z_]+)", r"\1", text)


def _plain(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [_plain(v) for v in value]
    return value


def default_text(field: FieldInfo) -> str:
    """The default as the environment variable would spell it (JSON for lists and maps)."""
    if field.is_required():
        return "(required)"
    value = _plain(field.get_default(call_default_factory=True))
    if value is None:
        return "None"
    if isinstance(value, str):
        return value
    return json.dumps(value)


_BOUNDS = (("gt", ">"), ("ge", "≥"), ("lt", "<"), ("le", "≤"))


def _bounds(field: FieldInfo) -> str:
    """The field's numeric limits (``gt=0, le=100`` → ``> 0, ≤ 100``), as validation checks."""
    parts = [
        f"{sign} {getattr(m, attr)}"
        for m in field.metadata
        for attr, sign in _BOUNDS
        if getattr(m, attr, None) is not None
    ]
    return ", ".join(parts)


def settings_of(
    model: type[BaseModel], env: str, path: str = "", delim: str = "__"
) -> Iterator[Setting]:
    """Every leaf setting of ``model`` (sections recursed), in declaration order."""
    for name, field in model.model_fields.items():
        dotted, var = f"{path}{name}", f"{env}{name.upper()}"
        if _is_section(field.annotation):
            yield from settings_of(field.annotation, f"{var}{delim}", f"{dotted}.", delim)
            continue
        description = "; ".join(filter(None, (field.description, _bounds(field))))
        yield Setting(dotted, var, type_name(field.annotation), default_text(field), description)


def _sections(settings_cls: type[BaseModel]) -> list[tuple[str, type[BaseModel] | None]]:
    """The top level first (its plain fields), then each section in declaration order."""
    out: list[tuple[str, type[BaseModel] | None]] = [("", None)]
    for name, field in settings_cls.model_fields.items():
        if _is_section(field.annotation):
            out.append((name, field.annotation))
    return out


def settings_page(settings_cls: type[BaseModel]) -> str:
    """The whole settings reference page."""
    prefix, delim = _prefix_and_delimiter(settings_cls)
    leaves = list(settings_of(settings_cls, prefix, delim=delim))
    lines = [
        "# Settings",
        "",
        "Generated from `scoutless.config.Settings` at build time. Every setting has a "
        f"default; set one with an environment variable (`{prefix}` and the setting's path "
        f"in capitals, sections joined by `{delim}`), e.g. "
        f"`{prefix}TARGETS{delim}MEMORY_PERCENTILE=90`. Lists and maps take JSON, e.g. "
        f'`{prefix}REPLAY{delim}STRATEGIES=\'["scouts", "hybrid"]\'`. A value that does not '
        "validate stops the command with an error naming the setting.",
        "",
        "The same settings can sit in one TOML file, a table per section (`[targets]` "
        "`memory_percentile = 90`), named by `scoutless --config FILE` or `SCOUTLESS_CONFIG`; "
        "environment variables override it. [Configure](../how-to/configure.md) has an example.",
        "",
    ]
    headers = ("setting", "environment variable", "type", "default", "meaning")
    for section, model in _sections(settings_cls):
        rows = [
            (code(s.path), code(s.env), code(s.type), code(s.default), s.description)
            for s in leaves
            if (s.path.split(".")[0] == section if section else "." not in s.path)
        ]
        title = f"`{section}`" if section else "Top level"
        lines += [f"## {title}", ""]
        if model is not None and model.__doc__:
            lines += [first_paragraph(model.__doc__), ""]
        lines += [table(headers, rows), ""]
    return "\n".join(lines)
