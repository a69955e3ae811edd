"""What the hand-written pages name must exist: every ``scoutless`` command line in a code
block is a real verb with real options, and every ``SCOUTLESS_*`` variable is a setting
(or one of the few variables the scripts read), so a renamed option or setting cannot
leave a page behind."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import typer

from docsgen.settings_ref import settings_of
from scoutless.cli.main import app
from scoutless.config import Settings

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
#: variables read by the scripts, the tests and the service's workers, not settings
NOT_SETTINGS = {"SCOUTLESS_TEST_PG_URL", "SCOUTLESS_TEST_STOMP_URL", "SCOUTLESS_BENCH_PG_URL",
                "SCOUTLESS_PANDA_DB_URL", "SCOUTLESS_SERVE_OPTIONS", "SCOUTLESS_PGPORT",
                "SCOUTLESS_PGDATA", "SCOUTLESS_DOCS_SITE",
                "SCOUTLESS_CONFIG"}  # fmt: skip
FENCE = re.compile(r"```(?:bash|sh|console|text)?\n(.*?)```", re.S)


def _command_lines(text: str) -> list[str]:
    """Every line of a code block that runs ``scoutless``, continuations joined."""
    lines = []
    for block in FENCE.findall(text):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            line = line.split(" #", 1)[0].strip().removeprefix("$ ")
            if line.startswith("scoutless ") and not line.startswith("scoutless-"):
                lines.append(line)
    return lines + re.findall(r"(?<!`)`(scoutless [a-z][^`]*)`", text)  # inline code too


def _after_global_options(words: list[str]) -> list[str]:
    """The words after ``scoutless --config FILE`` (the options before the verb)."""
    while words[:1] == ["--config"]:
        words = words[2:]
    return words


def _verb(root, words: list[str]):
    command, used = root, 0
    while hasattr(command, "commands") and used < len(words) and words[used] in command.commands:
        command = command.commands[words[used]]
        used += 1
    return command, used


def test_every_command_line_on_a_page_is_a_real_verb_with_real_options() -> None:
    root = typer.main.get_command(app)
    checked = 0
    for page in PAGES:
        for line in _command_lines(page.read_text()):
            plain = re.sub(r"[\[\]|…]", " ", line)
            words = _after_global_options(shlex.split(plain, comments=False)[1:])
            if words == ["--version"]:
                continue
            command, used = _verb(root, words)
            assert used and not hasattr(command, "commands"), f"{page.name}: {line}"
            options = {o for p in command.params for o in (*p.opts, *p.secondary_opts)}
            for word in words[used:]:
                if word.startswith("--"):
                    assert word.split("=")[0] in options, f"{page.name}: {word} in {line}"
            checked += 1
    assert checked > 40


def test_every_variable_on_a_page_is_a_setting() -> None:
    settings = {s.env for s in settings_of(Settings, "SCOUTLESS_")}
    sections = {env.rsplit("__", 1)[0] + "__" for env in settings if "__" in env}
    named = {
        (page.name, m)
        for page in PAGES
        for m in re.findall(r"SCOUTLESS_[A-Z0-9_]*[A-Z0-9]_?_?", page.read_text())
    }
    assert len(named) > 10
    for page, name in named:
        assert name in settings or name in sections or name in NOT_SETTINGS, f"{page}: {name}"
