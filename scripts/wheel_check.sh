#!/usr/bin/env bash
# The install a user gets, checked in seconds: build the sdist and the wheel (python -m build,
# the wheel built from the sdist, so a file missing from the sdist fails here), install the
# wheel (not editable, --no-deps) into a fresh virtual environment that sees .venv's
# packages, and run `scoutless --version` and a small demo from it. Nothing is downloaded:
# the dependencies are .venv's, the build uses .venv's setuptools (--no-isolation).
#
#   bash scripts/wheel_check.sh              # what scripts/test.sh runs
#   VENV=/path/to/venv bash scripts/wheel_check.sh
#
# The fresh environment reads .venv's site-packages through a .pth line (a venv made from a
# venv's python would see the base interpreter's packages, not .venv's), so the wheel's
# scoutless is found first and .venv's editable scoutless not at all: the check fails if
# `import scoutless` resolves anywhere but the fresh environment.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
venv_python=$(cd "$VENV/bin" && pwd)/python
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

say "fresh venv, pip install --no-deps the wheel"
"$venv_python" -m venv --without-pip "$work/venv"
fresh_site=$("$work/venv/bin/python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
"$venv_python" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])" >"$fresh_site/_scoutless_deps.pth"
"$venv_python" -m pip --python "$work/venv/bin/python" install --quiet --no-deps --no-index "$wheel"
where=$("$work/venv/bin/python" -c "import scoutless; print(scoutless.__file__)")
case $where in
  "$work"/venv/*) ;;
  *) echo "import scoutless found $where, not the wheel's copy"; exit 1 ;;
esac

say "scoutless --version"
version=$("$work/venv/bin/scoutless" --version)
expected="scoutless $(basename "$wheel" | cut -d- -f2)"
[ "$version" = "$expected" ] || { echo "said '$version', expected '$expected'"; exit 1; }
echo "    $version"

say "scoutless demo --tasks 200 --models xgb"
(cd "$work" && "$work/venv/bin/scoutless" demo --tasks 200 --models xgb --workdir demo >demo.log 2>&1) \
  || { tail -40 "$work/demo.log"; exit 1; }
for out in bundle/manifest.json metrics.json report.html; do
  [ -s "$work/demo/$out" ] || { echo "the demo wrote no $out"; tail -20 "$work/demo.log"; exit 1; }
done
echo "==> wheel check: passed in $((SECONDS - started))s"
