"""The docs speak to users about what scoutless does, not about how the project came to be,
and name no file that only the project's own machines hold. Each pattern below is a way
such a sentence has been written; a page that matches fails with the page, line and words.
The generated pages (CLI, settings) are read as generated; under ``scripts/test.sh`` the
whole built site, Python API docstrings included, is read too."""

from __future__ import annotations

import os
import re
from html import unescape
from pathlib import Path

from docsgen.cli_ref import cli_page
from docsgen.settings_ref import settings_page
from scoutless.cli.main import app
from scoutless.config import Settings

ROOT = Path(__file__).resolve().parents[2]

#: pattern -> why a user's page must not say it
HISTORY = {
    r"\bwave \d": "the project's own phases",
    r"\bDESIGN\.md\b": "a design note users do not have",
    r"\bfirst generator\b": "the project's past",
    r"\bbefore [\w ]{1,30} existed\b": "the project's past",
    r"\b(earlier|old|previous) behaviou?r\b": "the project's past",
    r"\b(previously|formerly)\b": "the project's past",
    r"\bthis version (reads|writes|adds)\b": "the project's past",
    r"\bshared/data/": "a folder of the project's own machines",
    r"(?<![\w.])/work/(main|wt|shared)\b": "a path of the project's own machines",
}


def _hits(text: str) -> list[tuple[int, str, str]]:
    hits = []
    for number, line in enumerate(text.splitlines(), 1):
        for pattern, why in HISTORY.items():
            found = re.search(pattern, line, re.I)
            if found:
                hits.append((number, found.group(0), why))
    return hits


def _pages() -> dict[str, str]:
    pages = {"README.md": (ROOT / "README.md").read_text()}
    for page in sorted((ROOT / "docs").rglob("*.md")):
        pages[str(page.relative_to(ROOT))] = page.read_text()
    pages["reference/cli.md (generated)"] = cli_page(app)
    pages["reference/settings.md (generated)"] = settings_page(Settings)
    site = os.environ.get("SCOUTLESS_DOCS_SITE")
    if site and Path(site, "index.html").is_file():
        for page in sorted(Path(site).rglob("*.html")):
            text = re.sub(r"<[^>]+>", " ", page.read_text(errors="replace"))
            pages[f"site/{page.relative_to(site)}"] = unescape(text)
    return pages


def test_no_page_speaks_of_the_projects_history_or_its_machines() -> None:
    pages = _pages()
    assert len(pages) > 25
    found = [f"{name}:{line}: {words!r} ({why})"
             for name, text in pages.items() for line, words, why in _hits(text)]  # fmt: skip
    assert not found, "\n".join(found)


def test_the_patterns_catch_what_they_name() -> None:
    said = [
        "Wave 2 (DESIGN.md §1) added three rooms.",
        "The first generator wrote PanDA's tables",
        "default full: the behaviour before rollouts existed",
        "the class's value (the earlier behaviour)",
        "volumes: [./shared/data/panda-database:/ddl:ro]",
    ]
    assert all(_hits(line) for line in said)
    assert not _hits("An early history lacks columns; the scouts' behaviour is modelled.")
