#!/usr/bin/env bash
# Set up, start the test services (PostgreSQL with PanDA's schema, RabbitMQ/STOMP, Chromium),
# lint, check the install a user gets (scripts/wheel_check.sh: build the wheel and the sdist,
# install the wheel without extras into a bare venv, `scoutless --version`, a small demo and
# one request to `scoutless serve` from it; it runs in the background meanwhile), build the docs strictly, run the whole test suite in random order (pytest-randomly
# prints the seed it used in the header: `Using --randomly-seed=N`).
#
#   bash scripts/test.sh                        # once, as CI does
#   bash scripts/test.sh --repeat 3             # three runs in a row, each in a new order:
#                                               # before a submission, so that order- and
#                                               # luck-dependent tests show before they land
#   bash scripts/test.sh --randomly-seed=N      # one order again (a seed from a header)
#   bash scripts/test.sh -p no:randomly         # the file order, no shuffling
#
# Other arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
repeat=1
if [ "${1:-}" = --repeat ]; then repeat=${2:?--repeat needs a count}; shift 2; fi
bash scripts/setup.sh
services=$(bash scripts/services.sh)  # NAME=value lines
while IFS= read -r line; do if [[ $line == *=* ]]; then export "$line"; fi; done <<<"$services"
.venv/bin/ruff check src tests benchmarks docsgen
# the wheel check runs beside the docs build and the tests (its own temporary folder, no
# shared state); its report is printed, and its failure fails the run, at the end
wheel_log=$(mktemp)
bash scripts/wheel_check.sh >"$wheel_log" 2>&1 &
wheel_pid=$!
trap 'kill "$wheel_pid" 2>/dev/null || true; rm -f "$wheel_log"' EXIT
bash scripts/docs.sh
export SCOUTLESS_DOCS_SITE=$PWD/site  # the tests read this build instead of making their own
for run in $(seq 1 "$repeat"); do
  [ "$repeat" -gt 1 ] && echo "== run $run of $repeat"
  .venv/bin/python -m pytest -q "$@"
done
if ! wait "$wheel_pid"; then
  cat "$wheel_log"
  echo "the wheel check failed (scripts/wheel_check.sh)"
  exit 1
fi
cat "$wheel_log"
