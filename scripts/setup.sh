#!/usr/bin/env bash
# Create .venv and install scoutless with its dev tools (idempotent, CPU-only torch).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.scoutless-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/pip install -q --upgrade pip
  # torch is pinned to 2.13.0: pip takes the CPU build from this machine's disk
  .venv/bin/pip install -q -e '.[dev]'
  touch "$stamp"
fi
