#!/usr/bin/env bash
# Set up, start the test services (PostgreSQL with PanDA's schema, RabbitMQ/STOMP, Chromium),
# lint, build the docs strictly, run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
services=$(bash scripts/services.sh)  # NAME=value lines
while IFS= read -r line; do if [[ $line == *=* ]]; then export "$line"; fi; done <<<"$services"
.venv/bin/ruff check src tests benchmarks docsgen
bash scripts/docs.sh
export SCOUTLESS_DOCS_SITE=$PWD/site  # the tests read this build instead of making their own
.venv/bin/python -m pytest -q "$@"
