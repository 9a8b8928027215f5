#!/usr/bin/env bash
# Interop suite: the official Python A2A client (a2a-sdk 1.3.0) against a running doubleagent,
# once over each binding (A2A_TRANSPORTS, default "JSONRPC HTTP+JSON GRPC").
#
#   bash interop/a2a/run.sh [--reference] [pytest args...]
#
# Creates (once, then reuses) a virtualenv under the cache dir, starts
# `doubleagent serve <scenario> --listen 127.0.0.1:0`, reads the ready line from its stdout and runs
# test_a2a.py against the URL it names. --reference runs the same tests against ref_server.py, the
# a2a-sdk's own server dressed up with the scenario's agents: a check of the tests themselves.
#
# Environment:
#   DOUBLEAGENT_BIN       binary to run (default: <repo>/target/debug/doubleagent, built if missing)
#   DOUBLEAGENT_SCENARIO  scenario file (default: <repo>/scenarios/a2a-interop.toml, else the one beside this script)
#   DOUBLEAGENT_CACHE     cache root for the virtualenvs (default: ${XDG_CACHE_HOME:-~/.cache}/doubleagent)
#   PYTHON                interpreter used to create the venv (default: python3; needs >= 3.10)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(git -C "$HERE" rev-parse --show-toplevel 2>/dev/null || (cd "$HERE/../.." && pwd))"
SDK_VERSION="1.3.0"

reference=0
if [[ "${1:-}" == "--reference" ]]; then
    reference=1
    shift
fi

# --- virtualenv --------------------------------------------------------------------------------
CACHE="${DOUBLEAGENT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/doubleagent}"
if (( reference )); then
    VENV="$CACHE/a2a-interop-ref-$SDK_VERSION"
    REQS=("a2a-sdk[http-server]==$SDK_VERSION" "uvicorn" "httpx" "pytest")
else
    VENV="$CACHE/a2a-interop-$SDK_VERSION"
    # httpx and protobuf come with a2a-sdk; httpx is named because the tests import it directly.
    # The grpc extra brings grpcio for the GRPC transport.
    REQS=("a2a-sdk[grpc]==$SDK_VERSION" "httpx" "pytest")
fi
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
PY="$VENV/bin/python"

# --- server ------------------------------------------------------------------------------------
if [[ -n "${DOUBLEAGENT_SCENARIO:-}" ]]; then
    SCENARIO="$DOUBLEAGENT_SCENARIO"
elif [[ -f "$ROOT/scenarios/a2a-interop.toml" ]]; then
    SCENARIO="$ROOT/scenarios/a2a-interop.toml"
else
    SCENARIO="$HERE/a2a-interop.toml"
fi

if (( reference )); then
    # The reference server plays only the three cancel-policy agents: skip the rest.
    export A2A_REFERENCE=1
    SERVER=("$PY" "$HERE/ref_server.py")
else
    BIN="${DOUBLEAGENT_BIN:-$ROOT/target/debug/doubleagent}"
    if [[ ! -x "$BIN" ]]; then
        echo "interop: building doubleagent" >&2
        (cd "$ROOT" && cargo build --quiet --bin doubleagent)
    fi
    SERVER=("$BIN")
fi

WORK="$(mktemp -d)"
server_pid=""
cleanup() {
    if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
        kill -TERM "$server_pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

"${SERVER[@]}" serve "$SCENARIO" --listen 127.0.0.1:0 >"$WORK/stdout" 2>"$WORK/stderr" &
server_pid=$!

# The ready line is the first stdout line: {"event":"ready","url":"http://127.0.0.1:PORT",...}
url=""
for _ in $(seq 300); do
    if ! kill -0 "$server_pid" 2>/dev/null; then
        echo "interop: server exited before it was ready; its stderr:" >&2
        cat "$WORK/stderr" >&2
        exit 1
    fi
    if [[ "$(head -c 1 "$WORK/stdout" 2>/dev/null)" != "" ]] && head -n 1 "$WORK/stdout" | grep -q '}$'; then
        url="$(head -n 1 "$WORK/stdout" | "$PY" -c 'import json,sys; d=json.loads(sys.stdin.readline()); assert d["event"]=="ready", d; print(d["url"])')"
        break
    fi
    sleep 0.1
done
if [[ -z "$url" ]]; then
    echo "interop: no ready line within 30 s; stderr:" >&2
    cat "$WORK/stderr" >&2
    exit 1
fi
echo "interop: server ready at $url (scenario $SCENARIO)" >&2

# Every test once per binding the client speaks; the reference server serves JSON-RPC only.
if (( reference )); then
    TRANSPORTS="JSONRPC"
else
    TRANSPORTS="${A2A_TRANSPORTS:-JSONRPC HTTP+JSON GRPC}"
fi
status=0
set +e
for transport in $TRANSPORTS; do
    echo "interop: a2a-sdk over $transport" >&2
    A2A_TRANSPORT="$transport" DOUBLEAGENT_URL="$url" "$PY" -m pytest -p no:cacheprovider -q "$HERE/test_a2a.py" "$@"
    rc=$?
    (( rc != 0 )) && status=$rc
done
set -e
if (( status != 0 )); then
    echo "interop: pytest exited $status; last server stderr lines:" >&2
    tail -n 40 "$WORK/stderr" >&2
fi
exit "$status"
