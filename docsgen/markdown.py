"""Markdown pieces the generated pages share: tables, inline code, escaping."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

_CODE_SPAN = re.compile(r"(`+)(.+?)\1")


def cell(text: object) -> str:
    """One table cell: line breaks folded (a cell is one line), pipes escaped outside code
    spans (inside them a pipe does not end the cell, and a backslash would show)."""
    text = " ".join(str(text).split())
    out, last = [], 0
    for span in _CODE_SPAN.finditer(text):
        out += [text[last : span.start()].replace("|", "\\|"), span.group(0)]
        last = span.end()
    return "".join([*out, text[last:].replace("|", "\\|")])


def code(text: object) -> str:
    """Inline code that survives backticks inside (a longer fence)."""
    text = str(text)
    fence = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A pipe table; an empty ``rows`` gives a one-line note instead."""
    body = [f"| {' | '.join(cell(c) for c in row)} |" for row in rows]
    if not body:
        return "*(none)*\n"
    head = f"| {' | '.join(cell(h) for h in headers)} |"
    rule = "|" + "|".join("---" for _ in headers) + "|"
    return "\n".join([head, rule, *body]) + "\n"


def first_paragraph(doc: str | None) -> str:
    """The first paragraph of a docstring or help text, on one line."""
    if not doc:
        return ""
    return " ".join(doc.strip().split("\n\n")[0].split())
