"""Verbs imported on first use, so that ``scoutless --help`` imports none of them.

``scoutless --help`` lists every verb with the one line registered here; only the verb a
command line names is imported (``scoutless train --help`` imports ``cli/train.py`` and
what it imports at its top, nothing else). A :class:`Verb` names its function or Typer
sub-app as ``"module:attribute"``; :func:`lazy_group` makes the click group class that
``typer.Typer(cls=...)`` builds the ``scoutless`` command with.

Typer builds a group's ``commands`` as a plain dict; here it is a :class:`LazyCommands`
mapping with the same interface (``commands[name]``, iteration over names, ``in``), so
click, Typer's help and completion, and whatever walks the tree (the docs' CLI reference)
read it as before: iterating yields names without importing, ``commands[name]`` imports.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ClassVar

import typer
from typer.core import TyperGroup


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
        else:
            info = typer.models.CommandInfo(name=name, callback=obj)
            command = typer.main.get_command_from_info(
                info, pretty_exceptions_short=True, rich_markup_mode=rich_markup_mode
            )
        command.name = name
        return command


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
        """``scoutless --help`` drawn with rich's tables directly: Typer's own help module
        imports a Markdown parser and takes longer to load than Typer itself."""
        from rich.console import Console
        from rich.panel import Panel
        from rich.table import Table
        from rich.text import Text

        console = Console(highlight=False)
        usage = " ".join(self.collect_usage_pieces(ctx))
        console.print(f"\n [yellow]Usage:[/] [bold]{ctx.command_path}[/] {usage}\n")
        console.print(Text(f" {self.help}\n"))
        for title, rows in (("Options", self._option_rows(ctx)), ("Commands", self._verb_rows())):
            grid = Table.grid(padding=(0, 2))
            grid.add_column(style="bold cyan", no_wrap=True)
            grid.add_column()
            for name, text in rows:  # as text: a help's "[...]" is not rich markup
                grid.add_row(Text(name), Text(text))
            console.print(Panel(grid, title=title, title_align="left", border_style="dim"))

    def _option_rows(self, ctx: Any) -> list[tuple[str, str]]:
        records = (param.get_help_record(ctx) for param in self.get_params(ctx))
        return [(names, text) for names, text in filter(None, records)]

    def _verb_rows(self) -> list[tuple[str, str]]:
        with self._summaries():
            listed = [(name, self.commands[name]) for name in self.commands]
        return [(name, cmd.short_help or cmd.help or "") for name, cmd in listed if not cmd.hidden]


def lazy_group(verbs: dict[str, Verb]) -> type[TyperGroup]:
    """The group class for ``typer.Typer(cls=...)`` that holds ``verbs`` unimported."""
    return type("ScoutlessGroup", (_LazyGroup,), {"verbs": verbs})
