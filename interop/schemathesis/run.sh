#!/usr/bin/env bash
# Schemathesis against the admin API, from the OpenAPI document the server itself serves: every
# operation with generated valid and invalid input and every check (no 5xx, status codes,
# content types, response schemas, valid input accepted, invalid input refused, ...). Then the
# same without the admin token: every operation but health must answer 401.
#
#   bash interop/schemathesis/run.sh [more st run options...]
#
# Environment:
#   DOUBLEAGENT_BIN    binary to run (default: <repo>/target/debug/doubleagent, built if missing)
#   DOUBLEAGENT_CACHE  cache root for the virtualenv (default: ${XDG_CACHE_HOME:-~/.cache}/doubleagent)
#   PYTHON             interpreter used to create the venv (default: python3)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(git -C "$HERE" rev-parse --show-toplevel 2>/dev/null || (cd "$HERE/../.." && pwd))"
SCHEMATHESIS="schemathesis==4.32.5"

CACHE="${DOUBLEAGENT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/doubleagent}"
VENV="$CACHE/schemathesis-${SCHEMATHESIS#schemathesis==}"
if [[ ! -f "$VENV/.installed" ]]; then
    echo "interop/schemathesis: creating virtualenv $VENV ($SCHEMATHESIS)" >&2
    rm -rf "$VENV"
    mkdir -p "$CACHE"
    "${PYTHON:-python3}" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "$SCHEMATHESIS"
    touch "$VENV/.installed"
fi

BIN="${DOUBLEAGENT_BIN:-$ROOT/target/debug/doubleagent}"
if [[ ! -x "$BIN" ]]; then
    echo "interop/schemathesis: building doubleagent" >&2
    (cd "$ROOT" && cargo build --quiet --bin doubleagent)
fi

WORK="$(mktemp -d)"
PID=""
cleanup() {
    [ -z "$PID" ] || { kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; }
    rm -rf "$WORK"
}
trap cleanup EXIT

TOKEN="st-$RANDOM$RANDOM"
"$BIN" serve "$ROOT/scenarios/lost-response.toml" --listen 127.0.0.1:0 --admin-token "$TOKEN" \
    > "$WORK/out" 2> "$WORK/err" &
PID=$!
URL=""
for _ in $(seq 1 500); do
    URL="$(head -1 "$WORK/out" | sed -n 's/.*"event":"ready","url":"\([^"]*\)".*/\1/p')"
    [ -n "$URL" ] && break
    kill -0 "$PID" 2>/dev/null || break
    sleep 0.02
done
[ -n "$URL" ] || { echo "interop/schemathesis: the server did not start:" >&2; cat "$WORK/err" >&2; exit 1; }
echo "interop/schemathesis: doubleagent at $URL" >&2

# POST /_admin/scenario is left out: its body is TOML, which Schemathesis cannot generate, and a
# scenario it did manage to replace would change the world under every other operation
# (tests/admin_api.rs covers it).
common=(--exclude-path /_admin/scenario --seed 20261203 --generation-database none
        --no-color --workers 1 --request-timeout 30 --report-dir "$WORK/report")
st=("$VENV/bin/st" run "$URL/_admin/openapi.json")
auth=(-H "Authorization: Bearer $TOKEN")
cd "$WORK"

# Every check, on every operation whose valid input is valid whatever state the world is in.
"${st[@]}" "${auth[@]}" --checks all --max-examples 50 "${common[@]}" \
    --exclude-path /_admin/clock/advance --exclude-path /_admin/ledger/wait "$@"

# Two operations whose well-formed input can still be refused by the state the run has put the
# world in: an advance past the clock's horizon (cumulative over the run) is a 400, and a wait
# for entries that never come is a 408 after its timeout. Every check but valid-input-accepted;
# a wait is as long as its timeout says (the default 10 s: allowed for, and only the examples
# and a few fuzzed cases, so the suite stays short).
"${st[@]}" "${auth[@]}" --checks all --exclude-checks positive_data_acceptance \
    --max-examples 10 "${common[@]}" --include-path /_admin/clock/advance "$@"
"${st[@]}" "${auth[@]}" --checks all --exclude-checks positive_data_acceptance \
    --phases examples,fuzzing --max-examples 5 --max-response-time 25 "${common[@]}" \
    --include-path /_admin/ledger/wait "$@"

# Without the token, from the document fetched with it: the documented 401 everywhere but
# health (which answers probes).
"$VENV/bin/python" - "$URL/_admin/openapi.json" "$TOKEN" "$WORK/openapi.json" <<'PY'
import sys, urllib.request
req = urllib.request.Request(sys.argv[1], headers={"Authorization": f"Bearer {sys.argv[2]}"})
with urllib.request.urlopen(req, timeout=20) as r, open(sys.argv[3], "wb") as f:
    f.write(r.read())
PY
"$VENV/bin/st" run "$WORK/openapi.json" --url "$URL" --exclude-path /_admin/health \
    --phases examples,coverage \
    --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
    --max-examples 5 "${common[@]}" "$@"
