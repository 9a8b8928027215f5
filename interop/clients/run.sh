#!/usr/bin/env bash
# Interop suite of real clients nobody here wrote, against a real doubleagent binary:
#   stripe-python 16.1.0 (scenarios/stripe-payments.toml), a2a-sdk 1.3.0 (scenarios/late-result.toml),
#   urllib3's Retry, and Node's built-in fetch with AbortSignal.timeout.
#
#   bash interop/clients/run.sh [pytest args...]
#
# Creates (once, then reuses) a virtualenv with the pinned packages under the cache dir. Every
# test starts its own `doubleagent serve <scenario> --listen 127.0.0.1:0` and reads its ready line
# (conftest.py, test/*.test.mjs), so each ledger and verdict belongs to one test.
#
# Environment:
#   DOUBLEAGENT_BIN    binary to run (default: <repo>/target/debug/doubleagent, built if missing)
#   DOUBLEAGENT_CACHE  cache root for the virtualenv (default: ${XDG_CACHE_HOME:-~/.cache}/doubleagent)
#   PYTHON             interpreter used to create the venv (default: python3; needs >= 3.10)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(git -C "$HERE" rev-parse --show-toplevel 2>/dev/null || (cd "$HERE/../.." && pwd))"

# Pinned: the versions the tests were written against (a2a-sdk as in interop/a2a).
REQS=("stripe==16.1.0" "a2a-sdk==1.3.0" "urllib3==2.8.0" "httpx==0.29.0" "pytest==9.2.0")

command -v node >/dev/null || { echo "interop: node not found (need >= 20)" >&2; exit 1; }
major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$major" -ge 20 ] || { echo "interop: node >= 20 required, found $(node --version)" >&2; exit 1; }

CACHE="${DOUBLEAGENT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/doubleagent}"
VENV="$CACHE/clients-interop"
STAMP="$VENV/.installed"
WANT="${REQS[*]}"
if [[ ! -f "$STAMP" || "$(cat "$STAMP")" != "$WANT" ]]; then
    echo "interop: creating virtualenv $VENV ($WANT)" >&2
    rm -rf "$VENV"
    mkdir -p "$CACHE"
    "${PYTHON:-python3}" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${REQS[@]}"
    echo "$WANT" > "$STAMP"
fi

BIN="${DOUBLEAGENT_BIN:-$ROOT/target/debug/doubleagent}"
if [[ ! -x "$BIN" ]]; then
    echo "interop: building doubleagent" >&2
    (cd "$ROOT" && cargo build --quiet --bin doubleagent)
fi
export DOUBLEAGENT_BIN="$BIN"
export DOUBLEAGENT_SCENARIOS="$ROOT/scenarios"
export PYTHONDONTWRITEBYTECODE=1  # leave no __pycache__ in the work tree

status=0
(cd "$HERE" && "$VENV/bin/python" -m pytest -p no:cacheprovider -q "$@" .) || status=$?
(cd "$HERE" && node --test --test-concurrency=1 --test-timeout=60000 test/*.test.mjs) || status=$?
exit "$status"
