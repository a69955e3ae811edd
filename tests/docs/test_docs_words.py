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
    r"\bgit show [0-9a-f]{7,}": "a commit of the project's past",
}

#: pattern -> why, read in prose only (code blocks, code spans, scripts and styles
#: removed), where ``#12`` cannot be a colour, a heading or a URL's anchor
PROSE = {
    r"\bissues? \d+": "an issue of the project's tracker",
    r"(?<![\w/&#])#\d+\b": "an issue of the project's tracker",
    r"\bwhen this (came|landed|was written)\b": "the project's past",
    r"\bthrowaway\b": "a tool users do not have",
    r"\bbefore\s*(→|->)|(→|->)\s*after\b": "a before/after diary",
    r"(?:^|[.;:]\s+)before, ": "a before/after diary",
    r"\bused to be\b|\b(it|they|this|which) used to\b": "the project's past",
    r"\b(is|are|was|were) no longer\b|\bno longer (needed|required|supported|used)\b": (
        "the project's past"
    ),
    r"\b(this|last|next|previous) (stop|wave|round|session)\b": "the project's own phases",
    r"\bnow (says|reads|writes|answers|has|keeps|uses|counts|goes|takes)\b": "a changelog",
    r"\bof (earlier|older) versions\b": "a changelog",
    r"\b(earlier|previous) (pairs|runs|figures) gave\b": "a before/after diary",
}

_CODE = re.compile(r"```.*?```|`[^`\n]*`", re.S)
_TAG = re.compile(r"<[^>]+>")


def _site_text(page: str) -> str:
    """A built page's text, its code written back as Markdown's (fenced blocks, spans), so
    the prose patterns skip it as they do on the sources; scripts and styles dropped."""
    page = re.sub(r"<(script|style)\b.*?</\1>", " ", page, flags=re.S | re.I)
    page = re.sub(r"<pre\b.*?</pre>", lambda m: f"\n```{_TAG.sub('', m.group(0))}```\n",
                  page, flags=re.S | re.I)  # fmt: skip
    page = re.sub(r"<code\b[^>]*>(.*?)</code>",
                  lambda m: "`" + _TAG.sub("", m.group(1)).replace("\n", " ") + "`",
                  page, flags=re.S | re.I)  # fmt: skip
    return unescape(_TAG.sub(" ", page))


def _hits(text: str) -> list[tuple[int, str, str]]:
    """Each (line, words, why) where a pattern matches; code is blanked line for line, so
    the prose patterns report the page's own line numbers."""
    prose = _CODE.sub(lambda code: re.sub(r"[^\n]", " ", code.group(0)), text)
    hits = []
    lines = zip(text.split("\n"), prose.split("\n"), strict=True)
    for number, (line, words) in enumerate(lines, 1):
        for patterns, read in ((HISTORY, line), (PROSE, words)):
            for pattern, why in patterns.items():
                found = re.search(pattern, read, re.I)
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
            pages[f"site/{page.relative_to(site)}"] = _site_text(page.read_text(errors="replace"))
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


def test_the_prose_patterns_catch_diaries_and_spare_code_colours_and_anchors() -> None:
    said = [
        "it equals the table of issue 36 to the table's rounding",
        "fixed in #36, see there",
        "at 8 connections: ~5 a group instead of ~3 when this came",
        "each figure is a pair (a throwaway harness built on the load client)",
        "shares of the samples, before → after the compiled models",
        "POST 1.13 → 0.99 ms; by id 18 → 12 %, before -> after",
        "maxtime 258,000 s. Before, the HIMEM types were sized as the standard ones",
        "the option is no longer needed; the log used to be per target",
        "Each check row now says when a reference loses the metric",
        "the table of earlier versions is read too",
        "Earlier pairs gave -4 to -15 %",
        "what this stop adds to the service",
    ]
    assert [line for line in said if not _hits(line)] == []
    spared = [
        "# Serve predictions",
        "## 5. Rehearse it on the replay first",
        "see [rollout](rollout.md#5-rehearse-it-on-the-replay-first)",
        "a colour `#336699` and `color: #000`",
        "```css\nh1 { color: #123456 }\n```",
        "the history no longer fits one machine's memory",
        "the tool is used to read the table; the groups a stop held",
        "a single round trip; the compiled path against numpy: 2.16 against 2.96 ms",
    ]
    assert [line for line in spared if _hits(line)] == []


def test_a_built_pages_code_is_read_as_code() -> None:
    page = (
        '<p>See <a href="x.html#36">it</a>.</p><pre><code>x = "#36"\nissue 36</code></pre>'
        "<p>a <code>#12</code> span, and prose of issue 12</p><script>var a = '#36';</script>"
    )
    text = _site_text(page)
    assert [words for _, words, _ in _hits(text)] == ["issue 12"]
    assert _hits(_site_text("<pre><code>cd /work/main</code></pre>"))  # paths: in code too
