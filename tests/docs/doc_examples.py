"""The runnable examples of the README and docs/: every command line of a ``bash`` block,
what it becomes against the shared small demo, or why it is not run here.

An example is one of: ``cli`` (a ``scoutless`` command, run as a subprocess), ``curl`` (a
request, sent to a real ``scoutless serve``), ``file`` (a heredoc that writes a file the
next commands read), ``serve`` (the server the requests go to), ``exempt`` (with its reason)
or ``synopsis`` (a usage line with placeholders, checked by the verb/option test only).
Paths and sizes are mapped onto the demo by :data:`SUBSTITUTIONS` and :data:`SCALE`.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BLOCK = re.compile(r"```(?:bash|sh|console)\n(.*?)```", re.S)
HEREDOC = re.compile(r"^cat > (\S+) <<'?(\w+)'?$")

#: command pattern → why it is not run by the docs test (checked to stay short)
EXEMPT: dict[str, str] = {
    r"^(\.venv/bin/)?pip install": "pip from an index",
    r"^bash scripts/(setup|test|docs|lock)\.sh": "sets up this machine (CI runs it)",
    r"^bash scripts/demo\.sh": "the demo: the shared fixture runs it, scaled",
    r"^(source|export|chgrp|chmod|\.venv/bin/python -m pytest|\.venv/bin/mkdocs)\b": (
        "the shell: environment, permissions, a contributor's tools"
    ),
    r"^(python3 -m (venv|pip|build)\b|\S*/bin/(pip|scoutless --version))": (
        "the install itself (CI's wheel check, scripts/wheel_check.sh, runs it)"
    ),
    r"^psql |^scoutless (import|size --trace)": "a trace or export of your own (tests/sources, "
    "tests/sizing import and size one)",
    r"--scheduler (tcp://|local:)": "a Dask cluster (tests/distributed runs one)",
    r"postgresql\+psycopg://postgres@": "PanDA's PostgreSQL (tests/panda runs these)",
    r"^python benchmarks/": "a benchmark: minutes (results/ holds its figures)",
    r"^scoutless monitor run\b|scoutless (listen|online follow)\b": "a loop on a broker or a "
    "clock (tests/panda and tests/ops run them)",
    r"^scoutless replay --trace": "an imported trace (tests/replay runs one)",
    r"^scoutless (--config \S+ )?serve --bundle models/": "a second server (the README's one is "
    "started)",
    r"\$JEDI_TOKEN": "a token of your own (tests/service checks the tokens)",
    r"^scoutless rollout set full --db": "a canary's evidence of two weeks (tests/ops promotes one)",
    r"^scoutless (train|evaluate) --": "training, evaluating: minutes even at 600 tasks (the demo "
    "fixture runs both)",
}
#: placeholders that make a line a synopsis rather than a command
SYNOPSIS = re.compile(r"\[--|…|\.\.\.|\b(FORMAT|FILE|REG|URL)\b")


@dataclass
class Example:
    page: str
    text: str
    kind: str = ""
    detail: str = ""
    argv: list[str] = field(default_factory=list)
    content: str = ""  # a heredoc's text

    @property
    def name(self) -> str:
        return f"{self.page}: {self.text[:90]}"


def _commands(block: str) -> list[tuple[str, str]]:
    """(command, heredoc body) per command of a block: continuations joined, comments cut."""
    lines = re.sub(r"\\\n\s*", " ", block).splitlines()
    out, i = [], 0
    while i < len(lines):
        line = lines[i].split(" #", 1)[0].strip().removeprefix("$ ")
        i += 1
        while _open_quote(line) and i < len(lines):  # a quoted argument over several lines
            line, i = f"{line} {lines[i].strip()}", i + 1
        here = HEREDOC.match(line)
        if here:
            end = next(j for j in range(i, len(lines)) if lines[j].strip() == here.group(2))
            out.append((line, "\n".join(lines[i:end]) + "\n"))
            i = end + 1
        elif line and not line.startswith("#"):
            out.append((line, ""))
    return out


def _open_quote(line: str) -> bool:
    try:
        shlex.split(line)
    except ValueError:
        return True
    return False


def classify(page: str, command: str, content: str = "") -> Example:
    example = Example(page, command, content=content)
    exempt = next((why for pattern, why in EXEMPT.items() if re.search(pattern, command)), None)
    if exempt:
        example.kind, example.detail = "exempt", exempt
    elif HEREDOC.match(command):
        example.kind, example.detail = "file", HEREDOC.match(command).group(1)  # type: ignore[union-attr]
    elif SYNOPSIS.search(command.replace("$PANDA_DB_URL", "")):
        example.kind = "synopsis"
    elif re.match(r"^scoutless (--config \S+ )?serve\b", command):
        example.kind = "serve"
    elif command.startswith(("scoutless ", "curl ")):
        example.kind = command.split()[0].replace("scoutless", "cli")
    else:
        example.kind = "unknown"
    return example


def examples() -> list[Example]:
    out = []
    for path in PAGES:
        page = str(path.relative_to(ROOT))
        for block in BLOCK.findall(path.read_text()):
            out += [classify(page, c, body) for c, body in _commands(block)]
    return out


def substitute(command: str, demo: Path, server: str) -> str:
    """The command against the demo: its database, bundle and server; sizes scaled down."""
    db = f"sqlite:///{demo / 'history.sqlite'}"
    for pattern, replacement in (
        (r'"?\$(PANDA|LAB)_DB_URL"?', db),
        (r"postgresql\+psycopg://user@host/panda", db),
        (r"sqlite:///data/history\.sqlite", db),
        (r"sqlite:///scoutless-work/history\.sqlite", db),
        (r"scoutless-work/", f"{demo}/"),
        (r"--bundle (bundles/|models/champion)", f"--bundle {demo / 'bundle'}"),
        (r"--table table\.parquet --out replay", f"--table {demo / 'table.parquet'} --out replay"),
        (r"(http://)?(localhost|scoutless|127\.0\.0\.1):8000", server),
        (r"my_bins\.toml", str(ROOT / "src/scoutless/defaults/bins.toml")),
        (r"docs/examples/", f"{ROOT / 'docs/examples'}/"),
        (r"--tasks \d+", "--tasks 300"),
        (r"--since 2026-01-01", "--since 2020-01-01"),  # the synthetic history's years
        (r"models/ bundle --promote", f"models/ {demo / 'bundle'} --promote"),
    ):
        command = re.sub(pattern, replacement, command)
    return command


def argv_of(command: str) -> tuple[list[str], str | None]:
    """The words after ``scoutless`` and the file stdout is redirected to (``> FILE``)."""
    words = shlex.split(command)
    out = None
    if ">" in words:
        at = words.index(">")
        words, out = words[:at], words[at + 1]
    return [w for w in words[1:] if w != "&"], out
