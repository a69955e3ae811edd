"""Verbs imported on first use, so that ``scoutless --help`` imports none of them.

``scoutless --help`` lists every verb with the one line registered here; only the verb a
command line names is imported (``scoutless train --help`` imports ``cli/train.py`` and
what it imports at its top, nothing else). A :class:`Verb` names its function or Typer
sub-app as ``"module:attribute"``; :func:`lazy_group` makes the click group class that
``typer.Typer(cls=...)`` builds the ``scoutless`` command with.

Typer builds a group's ``commands`` as a plain dict; here it is a :class:`LazyCommands`
mapping with the same interface (``commands[name]``, iteration over names, ``in``), so
click, Typer's help and completion, and whatever walks the tree (the docs' CLI reference)
read it as they read Typer's dict: iterating yields names without importing, ``commands[name]`` imports.

What a verb's ``--help`` costs is kept to the verb's module and Typer:

* help is drawn by :func:`draw_help` as plain text in rich's boxes, for ``scoutless --help``
  and for every verb and sub-verb (:class:`LightCommand`, :class:`LightGroup`); Typer's own
  help module (``typer.rich_utils``) imports a Markdown parser and takes longer to load than
  Typer, and rich itself costs a third of Typer's import;
* verbs print through a :class:`LazyConsole` and import rich's tables and progress bars in
  the functions that draw them, so rich loads when a verb runs, not for its ``--help``;
* :func:`get_settings` imports ``scoutless.config`` (pydantic, pydantic-settings) on its
  first call, so a verb module imports it at its top and reads the settings when it runs;
* absent options are not coerced (:class:`LightOption`): Typer builds a pydantic validator
  for an option before it looks at the value, even when there is none, and a group's own
  options (``--config``, ``--help``) are processed before its sub-command's ``--help``.
"""

from __future__ import annotations

import importlib
import inspect
import os
import shutil
import textwrap
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import typer
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

from scoutless.cli.errors import one_line_errors

if TYPE_CHECKING:
    from rich.console import Console

    from scoutless.config import Settings


def get_settings() -> Settings:
    """``scoutless.config.get_settings()``, with ``config`` imported on the first call; the
    command's small-request thresholds are set from them (:mod:`scoutless.fast_paths`)."""
    from scoutless.config import get_settings as settings
    from scoutless.fast_paths import FastPaths, configure

    read = settings()
    configure(FastPaths.from_settings(read))
    return read


def masked_url(text: str) -> str:
    """``scoutless.config.masked_url(text)`` (a URL's password as ``***``), imported on use."""
    from scoutless.config import masked_url as masked

    return masked(text)


@dataclass(frozen=True)
class Verb:
    """One verb of the command line, imported only when it runs or shows its own help.

    ``target`` is ``"package.module:attribute"``: a function (one command) or a
    ``typer.Typer`` (a group of commands). ``help`` is the line ``scoutless --help`` shows.
    """

    target: str
    help: str

    def load(self, name: str, *, rich_markup_mode: Any) -> Any:
        """The click command behind the target, named ``name``."""
        module_name, _, attribute = self.target.partition(":")
        obj = getattr(importlib.import_module(module_name), attribute)
        if isinstance(obj, typer.Typer):
            command = typer.main.get_group(obj)
            command.help = command.help or self.help
            _light(command)
        else:
            info = typer.models.CommandInfo(name=name, callback=obj, cls=LightCommand)
            command = typer.main.get_command_from_info(
                info, pretty_exceptions_short=True, rich_markup_mode=rich_markup_mode
            )
        command.name = name
        return command


class LightOption(TyperOption):
    """An option that costs nothing when absent: Typer builds a pydantic validator for an
    option before it looks at the value, so an absent ``--config`` (or a group's
    ``--help``) would import pydantic for every command line. Absent (``None``, one value,
    not required) it goes straight to its callback, as Typer would after coercing ``None``
    to ``None``; a given value is coerced and checked by Typer, as an eager option's."""

    def process_value(self, ctx: Any, value: Any) -> Any:
        if value is None and not (self.required or self.multiple or self.nargs != 1):
            return self.callback(ctx, self, None) if self.callback is not None else None
        return super().process_value(ctx, value)


def light_options(params: list[Any]) -> list[Any]:
    """``params`` with each Typer option made a :class:`LightOption` (a command's
    ``get_params``: a group's own options are processed before its sub-command's
    ``--help`` runs, ``--help`` itself included)."""
    for param in params:
        if type(param) is TyperOption:
            param.__class__ = LightOption
    return params


class LazyCommands(MutableMapping[str, Any]):
    """A group's commands: those built eagerly, then the lazy verbs, in registration order."""

    def __init__(self, built: dict[str, Any], verbs: dict[str, Verb], markup: Any) -> None:
        self._built = dict(built)
        self._verbs = verbs
        self._markup = markup
        self.summaries_only = False

    def __getitem__(self, name: str) -> Any:
        if name in self._built:
            return self._built[name]
        verb = self._verbs[name]  # KeyError for an unknown verb, as a dict would
        if self.summaries_only:  # listing for --help: the registered line, no import
            return typer.core.TyperCommand(name=name, help=verb.help, short_help=verb.help)
        command = self._built[name] = verb.load(name, rich_markup_mode=self._markup)
        return command

    def __setitem__(self, name: str, command: Any) -> None:
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        self._built.pop(name, None)
        self._verbs = {k: v for k, v in self._verbs.items() if k != name}

    def __iter__(self) -> Iterator[str]:
        yield from self._built
        yield from (name for name in self._verbs if name not in self._built)

    def __len__(self) -> int:
        return len(set(self._built) | set(self._verbs))

    def __contains__(self, name: object) -> bool:
        return name in self._built or name in self._verbs


class _LazyGroup(TyperGroup):
    verbs: ClassVar[dict[str, Verb]] = {}

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = LazyCommands(dict(self.commands), self.verbs, self.rich_markup_mode)

    def get_params(self, ctx: Any) -> list[Any]:
        return light_options(super().get_params(ctx))

    def invoke(self, ctx: Any) -> Any:
        """Run the verb; a user's error is one line and exit 2 (``cli/errors.py``); a
        misnamed ``SCOUTLESS_*`` setting stops it before it starts (its ``--help`` is given
        whatever the environment, and imports no settings)."""
        with one_line_errors():
            verb_args = [*getattr(ctx, "_protected_args", ()), *ctx.args]
            if not {"--help", "-h"} & set(verb_args) and any(
                k.upper().startswith("SCOUTLESS_") for k in os.environ
            ):
                from scoutless.config.settings import check_environment

                check_environment(os.environ)
            return super().invoke(ctx)

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.commands)

    @contextmanager
    def _summaries(self) -> Iterator[None]:
        commands = self.commands
        assert isinstance(commands, LazyCommands)
        commands.summaries_only = True
        try:
            yield
        finally:
            commands.summaries_only = False

    def format_help(self, ctx: Any, formatter: Any) -> None:
        """``scoutless --help``: the verbs listed with their registered lines, unimported."""
        options = _param_rows(self, ctx, arguments=False)
        draw_help(ctx, self, [("Options", options), ("Commands", self._verb_rows())])

    def _verb_rows(self) -> list[tuple[str, str]]:
        with self._summaries():
            listed = [(name, self.commands[name]) for name in self.commands]
        return [(name, cmd.short_help or cmd.help or "") for name, cmd in listed if not cmd.hidden]


def lazy_group(verbs: dict[str, Verb]) -> type[TyperGroup]:
    """The group class for ``typer.Typer(cls=...)`` that holds ``verbs`` unimported."""
    return type("ScoutlessGroup", (_LazyGroup,), {"verbs": verbs})


class LazyConsole:
    """A ``rich.console.Console(**options)`` made (and rich imported) on first use: a verb's
    module makes its console at its top, and its ``--help`` then imports no rich. It stands
    for the console wherever rich takes one (``Progress(console=…)``): attributes and the
    context manager (rich's live displays enter it) are the console's. ``console.log`` lines
    carry the time, not the scoutless source line that logged them (``log_path``)."""

    def __init__(self, **options: Any) -> None:
        self._options = {"log_path": False, **options}
        self._console: Console | None = None

    @property
    def console(self) -> Console:
        if self._console is None:
            from rich.console import Console

            self._console = Console(**self._options)
        return self._console

    def __getattr__(self, name: str) -> Any:
        return getattr(self.console, name)

    def print(self, *objects: Any, **options: Any) -> None:
        """``Console.print``, with no table cut short: cells fold where a width is given (a
        terminal, ``$COLUMNS``), and where none is (a pipe, a file: rich would assume 80
        columns) a table is drawn at its natural width."""
        from rich.measure import Measurement
        from rich.table import Table

        console = self.console
        tables = [t for t in objects if isinstance(t, Table)]
        for table in tables:
            for column in table.columns:
                column.overflow, column.no_wrap = "fold", False
        if not tables or "width" in self._options or console.is_terminal or "COLUMNS" in os.environ:
            console.print(*objects, **options)
            return
        wide = console.options.update_width(10_000)
        natural = max(Measurement.get(console, wide, t).maximum for t in tables)
        assumed, console.width = console.width, max(natural, console.width)
        try:  # print's own width= can only narrow the console's
            console.print(*objects, **options)
        finally:
            console.width = assumed

    def __enter__(self) -> Console:
        return self.console.__enter__()

    def __exit__(self, *exc: object) -> None:
        self.console.__exit__(*exc)  # type: ignore[arg-type]


def draw_help(ctx: Any, command: Any, panels: list[tuple[str, list[tuple[str, str]]]]) -> None:
    """Usage, the command's help (a paragraph per paragraph of its docstring) and one boxed
    panel per non-empty list of (name, text) rows, as plain text (styled where the terminal
    takes colours and ``NO_COLOR`` is unset): drawing with rich would import it first."""
    width = max(40, shutil.get_terminal_size((80, 24)).columns)
    style = _styler(ctx)
    usage = " ".join(command.collect_usage_pieces(ctx))
    lines = [
        "",
        f" {style('Usage:', fg='yellow')} {style(ctx.command_path, bold=True)} {usage}",
        "",
    ]
    for paragraph in _paragraphs(command.help):
        lines += [" " + line for line in _wrap(paragraph, width - 1)] + [""]
    for title, rows in panels:
        if rows:
            lines += _panel(title, rows, width, style)
    typer.echo("\n".join(lines), color=ctx.color)


def _wrap(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width``, broken at spaces (not hyphens: no-strict)."""
    return textwrap.wrap(text, width, break_on_hyphens=False)


def _styler(ctx: Any) -> Any:
    """``typer.style``, or the text unchanged under ``NO_COLOR`` (``echo`` strips the colours
    where the output is not a terminal)."""
    if os.environ.get("NO_COLOR") and not ctx.color:
        return lambda text, **_: text
    return typer.style


def _panel(title: str, rows: list[tuple[str, str]], width: int, style: Any) -> list[str]:
    """``rows`` in a box ``width`` wide: names on the left, texts wrapped beside them."""
    inner = width - 4
    names = min(max(len(name) for name, _ in rows), inner // 2)
    texts = inner - names - 2
    border = lambda text: style(text, dim=True)  # noqa: E731
    out = [border(f"╭─ {title} " + "─" * max(0, width - len(title) - 5) + "╮")]
    for name, text in rows:
        wrapped = _wrap(text, texts) or [""]
        if len(name) > names:  # too long to share a line: the text starts below it
            out.append(border("│ ") + style(name.ljust(inner)[:inner], fg="cyan", bold=True)
                       + border(" │"))  # fmt: skip
            name = ""
        for i, part in enumerate(wrapped):
            label = style(name.ljust(names), fg="cyan", bold=True) if i == 0 else " " * names
            out.append(border("│ ") + label + "  " + part.ljust(texts) + border(" │"))
    return [*out, border("╰" + "─" * (width - 2) + "╯")]


def _paragraphs(help_text: str | None) -> list[str]:
    """A docstring's paragraphs, each on one line (the terminal wraps them)."""
    text = inspect.cleandoc(help_text or "")
    return [" ".join(block.split()) for block in text.split("\n\n") if block.strip()]


def _param_rows(command: Any, ctx: Any, arguments: bool) -> list[tuple[str, str]]:
    params = [p for p in command.get_params(ctx) if isinstance(p, TyperArgument) == arguments]
    return [record for record in (p.get_help_record(ctx) for p in params) if record]


class LightCommand(TyperCommand):
    """A verb: its ``--help`` drawn by :func:`draw_help`, not by ``typer.rich_utils``."""

    def get_params(self, ctx: Any) -> list[Any]:
        return light_options(super().get_params(ctx))

    def format_help(self, ctx: Any, formatter: Any) -> None:
        draw_help(ctx, self, [("Arguments", _param_rows(self, ctx, arguments=True)),
                              ("Options", _param_rows(self, ctx, arguments=False))])  # fmt: skip


class LightGroup(TyperGroup):
    """A verb with sub-verbs (``data``, ``monitor`` …): its ``--help`` drawn by
    :func:`draw_help`, each sub-verb listed with the first paragraph of its help."""

    def get_params(self, ctx: Any) -> list[Any]:
        return light_options(super().get_params(ctx))

    def format_help(self, ctx: Any, formatter: Any) -> None:
        listed = [(name, self.get_command(ctx, name)) for name in self.list_commands(ctx)]
        verbs = [(name, (_paragraphs(cmd.help) or [""])[0])
                 for name, cmd in listed if cmd is not None and not cmd.hidden]  # fmt: skip
        draw_help(ctx, self, [("Arguments", _param_rows(self, ctx, arguments=True)),
                              ("Options", _param_rows(self, ctx, arguments=False)),
                              ("Commands", verbs)])  # fmt: skip


def _light(command: Any) -> None:
    """Draw the help of ``command`` and of every command below it with :func:`draw_help`:
    Typer built them as plain ``TyperCommand``/``TyperGroup`` (the light classes add no
    state, only ``get_params`` and ``format_help``)."""
    light = {TyperCommand: LightCommand, TyperGroup: LightGroup}
    command.__class__ = light.get(type(command), type(command))
    for sub in getattr(command, "commands", {}).values():
        _light(sub)
