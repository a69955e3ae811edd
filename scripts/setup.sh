#!/usr/bin/env bash
# Create .venv and install scoutless with its dev tools and the Oracle driver, at the versions
# pinned in requirements/lock.txt (idempotent). pyproject.toml keeps the ranges users install
# with; the lock (scripts/lock.sh writes it) makes every machine get the same versions.
# Re-installs when pyproject.toml or the lock changes: the stamp holds a hash of both.
# torch is pinned to the CPU build (+cpu): pip takes it from the wheel folder or index that
# pip's configuration names; a machine without one adds the index the lock's header names:
#   PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu bash scripts/setup.sh
# Each step says what it does and how long it took; pip prints every package it installs.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
lock=requirements/lock.txt
steps=4
started=$SECONDS
step() {  # step N "what": a numbered line with the seconds spent so far
  echo "==> setup [$1/$steps] $2 (${SECONDS}s so far)"
}
step 1 "virtual environment .venv"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
  echo "    created with $("$PYTHON" --version 2>&1)"
else
  echo "    exists ($(.venv/bin/python --version 2>&1))"
fi
stamp=.venv/.scoutless-installed
want=$(cat pyproject.toml "$lock" | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then
  echo "==> setup: already installed at the lock's versions (stamp $stamp); done in $((SECONDS - started))s"
  exit 0
fi
step 2 "pip itself"
.venv/bin/pip install --progress-bar off --upgrade pip
pins=$(grep -c '^[A-Za-z0-9]' "$lock")
step 3 "scoutless (editable) with the dev and oracle extras, $pins pinned packages (the first time: minutes)"
.venv/bin/pip install --progress-bar off -c "$lock" -e '.[dev,oracle]'
step 4 "check: the command answers"
.venv/bin/scoutless --version
echo "$want" >"$stamp"
echo "==> setup: done in $((SECONDS - started))s"
