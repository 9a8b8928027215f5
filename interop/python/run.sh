#!/usr/bin/env bash
# The Python package as a user gets it: build the wheel (maturin, binary bindings: the wheel
# carries the doubleagent binary), install it into a fresh virtualenv with no Rust in sight, and
# run the package's own tests and examples/python/ (an orchestrator and its pytest suite) there.
#
#   bash interop/python/run.sh [pytest args...]
#
# Environment:
#   DOUBLEAGENT_CACHE  cache root for the build tools' virtualenv (default: ${XDG_CACHE_HOME:-~/.cache}/doubleagent)
#   PYTHON             interpreter for the virtualenvs (default: python3; needs >= 3.9)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(git -C "$HERE" rev-parse --show-toplevel 2>/dev/null || (cd "$HERE/../.." && pwd))"
MATURIN="maturin==1.16.0"
TEST_REQS=("pytest==9.2.0" "httpx==0.29.0")

# --- build tools (cached: they do not change what is tested) -----------------------------------
CACHE="${DOUBLEAGENT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/doubleagent}"
TOOLS="$CACHE/python-build-${MATURIN#maturin==}"
if [[ ! -f "$TOOLS/.installed" ]]; then
    echo "interop/python: creating build virtualenv $TOOLS ($MATURIN)" >&2
    rm -rf "$TOOLS"
    mkdir -p "$CACHE"
    "${PYTHON:-python3}" -m venv "$TOOLS"
    "$TOOLS/bin/python" -m pip install --quiet --disable-pip-version-check "$MATURIN"
    touch "$TOOLS/.installed"
fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

# --- the wheel ---------------------------------------------------------------------------------
echo "interop/python: building the wheel (release)" >&2
(cd "$ROOT/python" && nice -n 19 "$TOOLS/bin/maturin" build --release --quiet --out "$WORK/wheels")
wheel="$(ls "$WORK"/wheels/doubleagent-*.whl)"
echo "interop/python: built $(basename "$wheel")" >&2

# --- a fresh virtualenv with only the wheel and the test tools ---------------------------------
"${PYTHON:-python3}" -m venv "$WORK/venv"
PY="$WORK/venv/bin/python"
"$PY" -m pip install --quiet --disable-pip-version-check "$wheel" "${TEST_REQS[@]}"

# The binary and the package must be the wheel's, not the checkout's or one on PATH.
unset DOUBLEAGENT_BIN
"$PY" - "$WORK/venv" <<'PYCHECK'
import os, sys, doubleagent
venv = os.path.realpath(sys.argv[1])
for what, path in (("package", doubleagent.__file__), ("binary", doubleagent.find_binary())):
    assert os.path.realpath(path).startswith(venv + os.sep), f"the {what} is not the wheel's: {path}"
    print(f"interop/python: {what} {path}", file=sys.stderr)
PYCHECK

# Run from outside the checkout's python/ so `import doubleagent` can only find the installed one.
cd "$WORK"
"$PY" -m pytest -p no:cacheprovider -q "$ROOT/python/tests" "$@"
"$PY" -m pytest -p no:cacheprovider -q --rootdir "$ROOT/examples/python" -c "$ROOT/examples/python/pytest.ini" "$ROOT/examples/python" "$@"
