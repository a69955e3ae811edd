"""The CLI reference, read from the Typer app: every verb, its help, its arguments and options.

Typer carries its own copy of click, so commands and parameters are read by what they have
(``commands``, ``opts``, ``param_type_name``), not by their click class."""

from __future__ import annotations

from collections.abc import Iterator
from enum import Enum
from typing import Any

import typer

from docsgen.markdown import code, first_paragraph, table
from docsgen.settings_ref import type_name


def command_tree(app: typer.Typer) -> Any:
    """The click command behind the Typer app (what ``scoutless --help`` walks)."""
    return typer.main.get_command(app)


def verbs(command: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every runnable verb's path, e.g. ``("data", "build")``, groups recursed, sorted."""
    if hasattr(command, "commands"):
        for name in sorted(command.commands):
            yield from verbs(command.commands[name], (*path, name))
    else:
        yield path


def _lookup(root: Any, path: tuple[str, ...]) -> Any:
    command = root
    for name in path:
        command = command.commands[name]
    return command


def _default(param: Any) -> str:
    value: Any = param.default
    if callable(value) or value is None or type(value).__name__ in {"Sentinel", "_Unset"}:
        return ""
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, bool) and getattr(param, "is_flag", False):
        return "" if not value else "on"
    if isinstance(value, list | tuple) and not value:
        return ""
    return code(value)


def _name(param: Any) -> str:
    if param.param_type_name == "argument":
        return code(param.metavar or param.name.upper())
    names = [*param.opts, *param.secondary_opts]
    return " / ".join(code(n) for n in names)


def _type(param: Any) -> str:
    if getattr(param, "is_flag", False):
        return "flag"
    descriptor = getattr(param, "type_descriptor", None)
    if descriptor is None:
        return str(getattr(param, "type", ""))
    return type_name(descriptor.annotation)


def _params_table(command: Any) -> str:
    rows = []
    for param in command.params:
        if getattr(param, "hidden", False) or param.name == "help":
            continue
        help_text = first_paragraph(getattr(param, "help", None))
        if param.required:
            help_text = f"**required.** {help_text}".strip()
        rows.append((_name(param), _type(param), _default(param), help_text))
    return table(("argument / option", "type", "default", "meaning"), rows)


def _usage(path: tuple[str, ...], command: Any) -> str:
    ctx = command.context_class(command, info_name=" ".join(["scoutless", *path]))
    return f"{ctx.info_name} {' '.join(command.collect_usage_pieces(ctx))}"


def cli_page(app: typer.Typer) -> str:
    """The whole CLI reference page: one section per verb, in the app's order of groups."""
    root = command_tree(app)
    lines = [
        "# Command line",
        "",
        "Generated from the `scoutless` Typer app at build time: every verb, its arguments and "
        "options with their defaults. `scoutless VERB --help` prints the same.",
        "",
        table(
            ("verb", "what it does"),
            [
                (
                    f"[{code('scoutless ' + ' '.join(p))}](#{'-'.join(p)})",
                    first_paragraph(_lookup(root, p).help),
                )
                for p in verbs(root)
            ],
        ),
        "",
        "## Global options {#global-options}",
        "",
        "Before the verb, e.g. `scoutless --config scoutless.toml serve …`.",
        "",
        _params_table(root),
        "",
    ]
    for path in verbs(root):
        command = _lookup(root, path)
        lines += [
            f"## scoutless {' '.join(path)} {{#{'-'.join(path)}}}",
            "",
            f"```text\n{_usage(path, command)}\n```",
            "",
            (command.help or "").strip(),
            "",
            _params_table(command),
            "",
        ]
    return "\n".join(lines)
