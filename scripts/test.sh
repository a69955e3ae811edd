#!/usr/bin/env bash
# Set up, start the test services (PostgreSQL, Chromium), lint, run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export "$(bash scripts/services.sh | tail -n1)"
.venv/bin/ruff check src tests benchmarks
.venv/bin/python -m pytest -q "$@"
