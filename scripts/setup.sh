#!/usr/bin/env bash
# Create .venv and install scoutless with its dev tools and the Oracle driver, at the versions
# pinned in requirements/lock.txt (idempotent). pyproject.toml keeps the ranges users install
# with; the lock (scripts/lock.sh writes it) makes every machine get the same versions.
# Re-installs when pyproject.toml or the lock changes: the stamp holds a hash of both.
# torch is pinned to 2.13.0+cpu, the CPU build, which pip takes from the wheels on this disk.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
lock=requirements/lock.txt
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.scoutless-installed
want=$(cat pyproject.toml "$lock" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -c "$lock" -e '.[dev,oracle]'
  echo "$want" >"$stamp"
fi
