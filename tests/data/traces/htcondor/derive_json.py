"""Derive history.377260.0.json (as `condor_history -json` prints an ad) from the real long form.

No public `condor_history -json` sample exists; this converts the gratia-probe fixture
faithfully: attribute order of first appearance, the last value of a repeated attribute,
strings/numbers/booleans as JSON values, expressions as "/Expr(...)/" strings (HTCondor's
JSON encoding of unevaluated expressions). Run: python derive_json.py
"""

import json
import re
from pathlib import Path

LINE = re.compile(r"^\s*([A-Za-z_][\w.]*)\s*=\s*(.*?)\s*$")


def value(text: str) -> object:
    if len(text) >= 2 and text[0] == text[-1] == '"':
        return text[1:-1].replace('\\"', '"')
    if text.upper() in ("TRUE", "FALSE"):
        return text.upper() == "TRUE"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return f"/Expr({text})/"


here = Path(__file__).parent
ad: dict[str, object] = {}
for line in (here / "history.377260.0").read_text().splitlines():
    m = LINE.match(line)
    if m:
        ad[m[1]] = value(m[2])
(here / "history.377260.0.json").write_text(json.dumps([ad], indent=2) + "\n")
