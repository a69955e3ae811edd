"""What every benchmark's JSON carries beside its figures, and its ``--out FILE``.

A figure means little without the machine it was taken on: each result records the
machine's cores, the time of a fixed Python loop before and after the run (machines, and
one shared machine from one minute to the next, differ in speed by 2x and more), the date
and the command that reproduces it, led by the settings the environment gave the run
(``SCOUTLESS_<SECTION>__<FIELD>=…``: a figure taken off the defaults says so, and its
command reruns it). ``--out results/NAME.json`` is what the docs site's
results pages are built from.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any


def reference_loop_s() -> float:
    """Seconds of a fixed pure-Python loop (best of 3): how fast the machine was."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        sum(range(5_000_000))
        best = min(best, time.perf_counter() - start)
    return round(best, 4)


def add_out(parser: argparse.ArgumentParser) -> None:
    """The ``--out FILE`` option every benchmark takes."""
    parser.add_argument(
        "--out", type=Path, help="also write the JSON here (e.g. results/NAME.json)"
    )


def machine(loop_before: float) -> dict[str, Any]:
    """Cores, reference-loop seconds before and now, the date, the command."""
    script = Path(sys.argv[0])
    command = [*settings_env(os.environ), "python", f"benchmarks/{script.name}", *sys.argv[1:]]
    return {
        "cpu_cores": os.cpu_count(),
        "reference_loop_s": {"before": loop_before, "after": reference_loop_s()},
        "date": datetime.now(UTC).strftime("%Y-%m-%d"),
        "command": shlex.join(command),
    }


def settings_env(environ: Mapping[str, str]) -> list[str]:
    """``NAME=value`` for each setting ``environ`` sets, by name: without them the command
    would rerun on the defaults (a password, or a URL's, shown as ``***``). The scripts' other
    ``SCOUTLESS_*`` names (ports, folders, test URLs) are no setting and are left out."""
    from scoutless.config.settings import is_setting_variable, masked_url

    out = []
    for name in sorted(n for n in environ if is_setting_variable(n)):
        lower = name.lower()
        secret = any(word in lower for word in ("password", "secret", "token"))
        value = "***" if secret and not lower.endswith("_file") else environ[name]
        out.append(f"{name}={masked_url(value)}")
    return out


def emit(result: dict[str, Any], out: Path | None, loop_before: float, **dumps: Any) -> None:
    """Print ``result`` with its machine record as JSON, and write it to ``out`` if given."""
    document = {**result, "machine": machine(loop_before)}
    text = json.dumps(document, **dumps)
    print(text)
    if out is not None:
        write_json(out, document, default=dumps.get("default"))


def write_json(out: Path, document: dict[str, Any], default: Any = None) -> None:
    """``document`` to ``out`` atomically: a reader sees the old file or the new one, never half."""
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = out.with_name(f".{out.name}.tmp")
    staging.write_text(json.dumps(document, indent=1, default=default) + "\n")
    os.replace(staging, out)
