"""The replay's yardstick in one file, beside what earlier decisions measured on the same
demos (``replay.py --merge``): merges ``replay.py --sizes`` outputs (e.g. 50k and 5k from
one run, 20k from another) and adds ``earlier``: per size, per earlier file
(``--earlier LABEL=PATH``, its description ``--describe LABEL=TEXT``), each strategy's mean
priced total and kills, so the results page shows where figures moved
(docsgen/views/replay.py). The first file's machine record is kept; its ``command`` gets
every merged run's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: the figures compared with earlier decisions, per strategy (their means over the seeds)
COMPARED = ("priced_total_core_hours", "memory_kills", "walltime_kills")


def merged(paths: list[Path]) -> dict[str, Any]:
    """One ``replay.py --sizes`` document of several: their sizes and runs together."""
    docs = [json.loads(p.read_text()) for p in paths]
    out = docs[0]
    for doc in docs[1:]:
        out["sizes"].update(doc["sizes"])
        out["runs"].update(doc["runs"])
    out["machine"]["command"] = " ; ".join(d["machine"]["command"] for d in docs)
    for key in ("sizes", "runs"):  # the largest size first, as the page lists them
        out[key] = dict(sorted(out[key].items(), key=lambda item: -int(item[0])))
    return out


def earlier(
    doc: dict[str, Any], files: dict[str, Path], described: dict[str, str]
) -> dict[str, Any]:
    """Per size of ``doc``, per earlier file measuring it, each strategy's COMPARED means."""
    sizes: dict[str, dict[str, Any]] = {}
    for label, path in files.items():
        old = json.loads(path.read_text())
        for size in doc["sizes"]:
            if size in old.get("sizes", {}):
                strategies = old["sizes"][size]["strategies"]
                sizes.setdefault(size, {})[label] = {
                    name: {k: figures.get(k) for k in COMPARED} for name, figures in strategies.items()
                }
    return {"decisions": {label: described.get(label, "") for label in files}, "sizes": sizes}


def merge_report(
    paths: list[Path], earlier_files: list[str], descriptions: list[str], note: str
) -> dict[str, Any]:
    """``replay.py --merge``: :func:`merged` with :func:`earlier` (``LABEL=PATH`` and
    ``LABEL=TEXT`` items) and the machine record's ``note``, the record last."""
    doc = merged(paths)
    files = {label: Path(path) for label, path in _pairs(earlier_files).items()}
    doc["earlier"] = earlier(doc, files, _pairs(descriptions))
    machine = doc.pop("machine")
    if note:
        machine["note"] = note
    doc["machine"] = machine  # last, as every benchmark writes it
    return doc


def _pairs(items: list[str]) -> dict[str, str]:
    return dict(item.split("=", 1) for item in items)
