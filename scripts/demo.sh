#!/usr/bin/env bash
# Set up and run the main job on the embedded default (SQLite in ./scoutless-work).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/scoutless demo --workdir "${SCOUTLESS_WORKDIR:-scoutless-work}" "$@"
