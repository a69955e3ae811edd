#!/usr/bin/env bash
# Build the docs site strictly into site/ (a broken link, a page missing from the nav or a
# generated page that fails to build is an error). Extra arguments go to mkdocs build.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/mkdocs ] || bash scripts/setup.sh
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --site-dir site "$@"
