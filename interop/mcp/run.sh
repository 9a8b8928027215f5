#!/usr/bin/env bash
# Interop suite: the official Python MCP client (`mcp` 2.3.0) and FastMCP 4.1.6's client against
# a running doubleagent: test_mcp.py once per client mode (MCP_MODES, default "auto legacy":
# 2026-07-28 through server/discover, and 2025-11-25 through initialize), then test_fastmcp.py,
# then test_fastmcp_tasks.py (fastmcp-tasks 4.1.4: the 2026-07-28 tasks extension).
#
#   bash interop/mcp/run.sh [pytest args...]
#
# Creates (once, then reuses) a virtualenv under the cache dir, starts
# `doubleagent serve mcp-interop.toml --listen 127.0.0.1:0`, reads the ready line from its stdout
# and runs the tests against the URL it names.
#
# Environment:
#   DOUBLEAGENT_BIN       binary to run (default: <repo>/target/debug/doubleagent, built if missing)
#   DOUBLEAGENT_CACHE     cache root for the virtualenvs (default: ${XDG_CACHE_HOME:-~/.cache}/doubleagent)
#   PYTHON                interpreter used to create the venv (default: python3; needs >= 3.10)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(git -C "$HERE" rev-parse --show-toplevel 2>/dev/null || (cd "$HERE/../.." && pwd))"
MCP_VERSION="2.3.0"
FASTMCP_VERSION="4.1.6"
FASTMCP_TASKS_VERSION="4.1.4"

# --- virtualenv --------------------------------------------------------------------------------
CACHE="${DOUBLEAGENT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/doubleagent}"
VENV="$CACHE/mcp-interop-$MCP_VERSION"
# fastmcp 4.1.6 pins mcp 2.3.0; httpx is named because the tests import it directly.
REQS=("mcp==$MCP_VERSION" "fastmcp==$FASTMCP_VERSION" "httpx" "pytest")
# fastmcp-tasks 4.1.4 (the newest) pins fastmcp-slim 4.1.4 while fastmcp 4.1.6 pins 4.1.6, so a
# resolver refuses the pair: it is installed without its dependencies, which are named here
# (its client half runs on fastmcp-slim 4.1.6 unchanged).
TASKS_REQS=("pydocket==0.27.2" "redis!=8.1.0" "cryptography>=43.0.0")
STAMP="$VENV/.installed"
WANT="${REQS[*]} fastmcp-tasks==$FASTMCP_TASKS_VERSION ${TASKS_REQS[*]}"
if [[ ! -f "$STAMP" || "$(cat "$STAMP")" != "$WANT" ]]; then
    echo "interop/mcp: creating virtualenv $VENV ($WANT)" >&2
    rm -rf "$VENV"
    mkdir -p "$CACHE"
    "${PYTHON:-python3}" -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check "${REQS[@]}" "${TASKS_REQS[@]}"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps "fastmcp-tasks==$FASTMCP_TASKS_VERSION"
    echo "$WANT" > "$STAMP"
fi
PY="$VENV/bin/python"

# --- server ------------------------------------------------------------------------------------
SCENARIO="$HERE/mcp-interop.toml"
BIN="${DOUBLEAGENT_BIN:-$ROOT/target/debug/doubleagent}"
if [[ ! -x "$BIN" ]]; then
    echo "interop/mcp: building doubleagent" >&2
    (cd "$ROOT" && cargo build --quiet --bin doubleagent)
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

"$BIN" serve "$SCENARIO" --listen 127.0.0.1:0 >"$WORK/stdout" 2>"$WORK/stderr" &
server_pid=$!

# The ready line is the first stdout line: {"event":"ready","url":"http://127.0.0.1:PORT",...}
url=""
for _ in $(seq 300); do
    if ! kill -0 "$server_pid" 2>/dev/null; then
        echo "interop/mcp: server exited before it was ready; its stderr:" >&2
        cat "$WORK/stderr" >&2
        exit 1
    fi
    if head -n 1 "$WORK/stdout" 2>/dev/null | grep -q '}$'; then
        url="$(head -n 1 "$WORK/stdout" | "$PY" -c 'import json,sys; d=json.loads(sys.stdin.readline()); assert d["event"]=="ready", d; print(d["url"])')"
        break
    fi
    sleep 0.1
done
if [[ -z "$url" ]]; then
    echo "interop/mcp: no ready line within 30 s; stderr:" >&2
    cat "$WORK/stderr" >&2
    exit 1
fi
echo "interop/mcp: server ready at $url" >&2

status=0
set +e
for mode in ${MCP_MODES:-auto legacy}; do
    echo "interop/mcp: mcp $MCP_VERSION, mode=$mode" >&2
    MCP_MODE="$mode" DOUBLEAGENT_URL="$url" "$PY" -m pytest -p no:cacheprovider -q "$HERE/test_mcp.py" "$@"
    rc=$?
    (( rc != 0 )) && status=$rc
done
echo "interop/mcp: fastmcp $FASTMCP_VERSION" >&2
DOUBLEAGENT_URL="$url" "$PY" -m pytest -p no:cacheprovider -q "$HERE/test_fastmcp.py" "$@"
rc=$?
(( rc != 0 )) && status=$rc
echo "interop/mcp: fastmcp $FASTMCP_VERSION with fastmcp-tasks $FASTMCP_TASKS_VERSION" >&2
DOUBLEAGENT_URL="$url" "$PY" -m pytest -p no:cacheprovider -q "$HERE/test_fastmcp_tasks.py" "$@"
rc=$?
(( rc != 0 )) && status=$rc
set -e
if (( status != 0 )); then
    echo "interop/mcp: pytest exited $status; last server stderr lines:" >&2
    tail -n 40 "$WORK/stderr" >&2
fi
exit "$status"
