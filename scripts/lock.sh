#!/usr/bin/env bash
# Refresh requirements/lock.txt, the versions scripts/setup.sh installs (with pip's -c), from
# the ranges and extras (dev, oracle) in pyproject.toml:
#
#   bash scripts/lock.sh                     # every package to its newest version in range
#   bash scripts/lock.sh --keep              # keep today's pins, only add or drop packages
#   bash scripts/lock.sh -P numpy            # move one package (pip-compile's --upgrade-package)
#
# pip-compile (pip-tools, in the dev extra) resolves with pip's own configuration, so the lock
# pins torch to the CPU build from the wheels on this disk (elsewhere: PIP_EXTRA_INDEX_URL=
# https://download.pytorch.org/whl/cpu). The same index gives the same lock. The lock starts
# with requirements/index-note.txt, which names that index for the machines that install it.
# Run the suite (bash scripts/test.sh) on the new lock before committing it.
set -euo pipefail
cd "$(dirname "$0")/.."
# pip-tools alone, so that a pyproject.toml at odds with the old lock can still be locked anew
[ -x .venv/bin/python ] || "${PYTHON:-python3}" -m venv .venv
[ -x .venv/bin/pip-compile ] || .venv/bin/pip install -q -c requirements/lock.txt pip-tools
upgrade=(--upgrade)
if [ "${1:-}" = --keep ]; then upgrade=(); shift; fi
if [ "${1:-}" = -P ]; then upgrade=(); fi
CUSTOM_COMPILE_COMMAND="bash scripts/lock.sh" .venv/bin/pip-compile --quiet \
  --extra dev --extra oracle --strip-extras --no-emit-index-url --no-emit-find-links \
  "${upgrade[@]}" "$@" --output-file requirements/lock.txt pyproject.toml
{ cat requirements/index-note.txt; cat requirements/lock.txt; } >requirements/.lock.txt.new
mv requirements/.lock.txt.new requirements/lock.txt
