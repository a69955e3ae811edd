#!/usr/bin/env bash
# The install a user gets: build the sdist and the wheel (python -m build, the wheel built
# from the sdist, so a file missing from the sdist fails here), install the wheel with its
# dependencies and no extras into a bare virtual environment (it sees none of .venv's
# packages, so a dependency pyproject.toml forgets fails here), at the lock's versions, then
# `scoutless --version`, a small demo, and `scoutless serve` on a loopback port answering one
# task's prediction (scripts/wheel_serve_probe.py).
#
#   bash scripts/wheel_check.sh              # what scripts/test.sh runs
#   VENV=/path/to/venv bash scripts/wheel_check.sh
#
# The dependencies come from a local wheel cache, never from an index during the install
# (--no-index, pip's configuration off): the first run, or one after the lock changed, fills
# the cache once with `pip wheel -c requirements/lock.txt` (the network, and torch's CPU build
# from the wheel folder or index pip's configuration names; elsewhere set
# PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu), later runs download nothing.
# The bare venv of the dependencies is kept in the cache too, one per lock and set of
# requirements; each run installs its wheel into a hard-linked copy of it.
#   SCOUTLESS_WHEEL_CACHE=/path              # the cache (default ~/.cache/scoutless/wheels)
# The build uses .venv's setuptools (--no-isolation); VENV defaults to the checkout's .venv,
# or the main checkout's from a git worktree.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${VENV:-}" ]; then
  VENV=.venv
  [ -x "$VENV/bin/python" ] || VENV="$(dirname "$(git rev-parse --path-format=absolute --git-common-dir)")/.venv"
fi
venv_python=$(cd "$VENV/bin" && pwd)/python
cache=${SCOUTLESS_WHEEL_CACHE:-$HOME/.cache/scoutless/wheels}
lock=$PWD/requirements/lock.txt
unset PYTHONPATH  # the checkout's src/ must not stand in for the installed wheel
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
started=$SECONDS
say() { echo "==> wheel check: $1 (${SECONDS}s)"; }

say "python -m build (sdist, then the wheel from it)"
if ! "$venv_python" -m build --no-isolation --outdir "$work/dist" . >"$work/build.log" 2>&1; then
  tail -40 "$work/build.log"
  exit 1
fi
wheel=$(ls "$work"/dist/scoutless-*.whl)
sdist=$(ls "$work"/dist/scoutless-*.tar.gz)
echo "    $(basename "$wheel"), $(basename "$sdist")"
tar -tzf "$sdist" >"$work/sdist.txt"
for file in LICENSE CHANGELOG.md requirements/lock.txt deploy/systemd/scoutless-serve.service; do
  grep -q "^scoutless-[^/]*/$file\$" "$work/sdist.txt" || { echo "sdist lacks $file"; exit 1; }
done
"$venv_python" -m zipfile -l "$wheel" >"$work/wheel.txt"
for file in scoutless/defaults/bins.toml scoutless/evaluation/templates/report.html licenses/LICENSE; do
  grep -q "$file" "$work/wheel.txt" || { echo "wheel lacks $file"; exit 1; }
done

# The wheel's dependencies (no extras) at the lock's versions, from the wheel cache alone (no
# index, no find-links or constraints from pip's configuration), into a bare venv kept in the
# cache for as long as the lock and the wheel's requirements stay the same (their hash names
# it); each run installs its wheel into a hard-linked copy of it, so runs never share one.
offline_pip() {
  env -u PIP_FIND_LINKS -u PIP_EXTRA_INDEX_URL -u PIP_INDEX_URL -u PIP_CONSTRAINT \
    PIP_CONFIG_FILE=/dev/null "$venv_python" -m pip "$@"
}
fill_cache() {
  say "filling the wheel cache $cache from the lock (once; the first time: minutes)"
  if ! "$venv_python" -m pip wheel --quiet --progress-bar off --wheel-dir "$cache" \
    --find-links "$cache" -c "$lock" "$wheel" >"$work/fill.log" 2>&1; then
    tail -40 "$work/fill.log"
    exit 1
  fi
  rm -f "$cache"/scoutless-*.whl  # the checkout's own wheel is built anew each run
}
make_base() {  # $1: the folder; the wheel with its dependencies, then the wheel taken out
  rm -rf "$1"
  "$venv_python" -m venv --without-pip "$1"
  local install=(--python "$1/bin/python" install --quiet --no-index --find-links "$cache"
    -c "$lock" "$wheel")
  if ! offline_pip "${install[@]}" >"$work/install.log" 2>&1; then
    echo "    the cache lacks a wheel the lock pins for these requirements"
    fill_cache
    offline_pip "${install[@]}" >"$work/install.log" 2>&1 || { tail -40 "$work/install.log"; exit 1; }
  fi
  offline_pip --python "$1/bin/python" uninstall --quiet --yes scoutless
  touch "$1/.complete"
}
mkdir -p "$cache/venvs" "$cache/runs"
key=$({ cat "$lock"; unzip -p "$wheel" '*.dist-info/METADATA' | grep '^Requires-Dist:'
  "$venv_python" -VV; } | sha256sum | cut -c1-16)
base=$cache/venvs/$key
exec 9>"$cache/venvs/.lock"
flock 9  # one run builds a base, the others wait for it
if [ ! -f "$base/.complete" ]; then
  say "a bare venv of the wheel's dependencies, without extras ($key, once per lock)"
  make_base "$base"
  # keep the three bases last used
  ls -dt "$cache"/venvs/*/ | tail -n +4 | xargs -r rm -rf
fi
touch "$base"
# a copy left by a run that was killed (the data stays the base's: only the links go)
find "$cache/runs" -mindepth 1 -maxdepth 1 -mmin +1440 -exec rm -rf {} +
venv=$(mktemp -d -p "$cache/runs")
trap 'rm -rf "$work" "$venv"' EXIT
cp -al "$base/." "$venv"
flock -u 9
say "pip install the wheel into a copy of the bare venv $base"
offline_pip --python "$venv/bin/python" install --quiet --no-deps --no-index "$wheel"
echo "    $(ls "$venv"/lib/python*/site-packages | grep -c '\.dist-info$') distributions installed"
where=$("$venv/bin/python" -c "import scoutless; print(scoutless.__file__)")
case $where in
  "$venv"/*) ;;
  *) echo "import scoutless found $where, not the wheel's copy"; exit 1 ;;
esac
if "$venv/bin/python" -c "import pytest" 2>/dev/null; then
  echo "the bare venv sees packages it did not install (pytest)"; exit 1
fi

say "scoutless --version"
version=$("$venv/bin/scoutless" --version)
expected="scoutless $(basename "$wheel" | cut -d- -f2)"
[ "$version" = "$expected" ] || { echo "said '$version', expected '$expected'"; exit 1; }
echo "    $version"

say "scoutless demo --tasks 200 --models xgb"
(cd "$work" && "$venv/bin/scoutless" demo --tasks 200 --models xgb --workdir demo >demo.log 2>&1) \
  || { tail -40 "$work/demo.log"; exit 1; }
for out in bundle/manifest.json metrics.json report.html; do
  [ -s "$work/demo/$out" ] || { echo "the demo wrote no $out"; tail -20 "$work/demo.log"; exit 1; }
done
say "scoutless serve, one task's prediction on loopback"
"$venv/bin/python" scripts/wheel_serve_probe.py "$venv/bin/scoutless" \
  "$work/demo/bundle" "$work/demo/history.sqlite"
echo "==> wheel check: passed in $((SECONDS - started))s"
