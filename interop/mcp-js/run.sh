#!/usr/bin/env bash
# Interop suite: the official TypeScript MCP clients against doubleagent's fake MCP tool servers,
# through every fate: @modelcontextprotocol/sdk 1.32.2 (StreamableHTTPClientTransport, the legacy
# era, 2025-11-25) and @modelcontextprotocol/client 2.4.0 (versionNegotiation { mode: 'auto' }, the
# modern era, 2026-07-28), each against /mcp/payments (JSON answers) and /mcp/payments-sse (SSE
# answers) of mcp-interop.toml.
#
#   bash interop/mcp-js/run.sh [node --test args...]
#
# Installs (once, then reuses) package.json + package-lock.json with `npm ci` into a cache dir,
# starts `doubleagent serve <scenario> --listen 127.0.0.1:0`, reads the ready line from its stdout
# and runs test_mcp.mjs with node's built-in test runner once per (client, server) pair.
#
# Environment:
#   DOUBLEAGENT_BIN       binary to run (default: <repo>/target/debug/doubleagent, built if missing)
#   DOUBLEAGENT_SCENARIO  scenario file (default: interop/mcp-js/mcp-interop.toml)
#   DOUBLEAGENT_CACHE     cache root for the npm install (default: ${XDG_CACHE_HOME:-~/.cache}/doubleagent)
#   MCP_CLIENTS           clients to run, in order (default: "sdk client")
#   MCP_SERVERS           the scenario's MCP servers to run against (default: "payments payments-sse")
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(git -C "$HERE" rev-parse --show-toplevel 2>/dev/null || (cd "$HERE/../.." && pwd))"
SDK_VERSION="1.32.2"
CLIENT_VERSION="2.4.0"

command -v node >/dev/null || { echo "interop/mcp-js: node not found (need >= 20)" >&2; exit 1; }
major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$major" -ge 20 ] || { echo "interop/mcp-js: node >= 20 required, found $(node --version)" >&2; exit 1; }

# --- the clients (cached; package-lock.json pins every version) --------------------------------
CACHE="${DOUBLEAGENT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/doubleagent}"
DEPS="$CACHE/mcp-js-$SDK_VERSION-$CLIENT_VERSION"
WANT="$(cat "$HERE/package.json" "$HERE/package-lock.json" | sha256sum | cut -d' ' -f1)"
if [[ ! -f "$DEPS/.installed" || "$(cat "$DEPS/.installed")" != "$WANT" ]]; then
    echo "interop/mcp-js: installing @modelcontextprotocol/sdk@$SDK_VERSION and @modelcontextprotocol/client@$CLIENT_VERSION into $DEPS" >&2
    rm -rf "$DEPS"
    mkdir -p "$DEPS"
    cp "$HERE/package.json" "$HERE/package-lock.json" "$HERE/.npmrc" "$DEPS/"
    (cd "$DEPS" && npm ci --silent --no-audit --no-fund)
    echo "$WANT" > "$DEPS/.installed"
fi

# --- server ------------------------------------------------------------------------------------
SCENARIO="${DOUBLEAGENT_SCENARIO:-$HERE/mcp-interop.toml}"
BIN="${DOUBLEAGENT_BIN:-$ROOT/target/debug/doubleagent}"
if [[ ! -x "$BIN" ]]; then
    echo "interop/mcp-js: building doubleagent" >&2
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
        echo "interop/mcp-js: server exited before it was ready; its stderr:" >&2
        cat "$WORK/stderr" >&2
        exit 1
    fi
    if head -n 1 "$WORK/stdout" 2>/dev/null | grep -q '}$'; then
        url="$(head -n 1 "$WORK/stdout" | node -e '
            let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
                const d = JSON.parse(s);
                if (d.event !== "ready") throw new Error("not a ready line: " + s);
                console.log(d.url);
            });')"
        break
    fi
    sleep 0.1
done
if [[ -z "$url" ]]; then
    echo "interop/mcp-js: no ready line within 30 s; stderr:" >&2
    cat "$WORK/stderr" >&2
    exit 1
fi
echo "interop/mcp-js: server ready at $url (scenario $SCENARIO)" >&2

# The test file runs from a copy beside the cached node_modules, so the checkout stays clean and
# the imports resolve to the pinned install.
mkdir "$WORK/suite"
cp "$HERE/test_mcp.mjs" "$WORK/suite/"
ln -s "$DEPS/node_modules" "$WORK/suite/node_modules"

status=0
set +e
for client in ${MCP_CLIENTS:-sdk client}; do
    for server in ${MCP_SERVERS:-payments payments-sse}; do
        echo "interop/mcp-js: MCP_CLIENT=$client against /mcp/$server" >&2
        MCP_CLIENT="$client" MCP_SERVER="$server" DOUBLEAGENT_URL="$url" \
            node --test --test-reporter=spec "$@" "$WORK/suite/test_mcp.mjs"
        rc=$?
        (( rc != 0 )) && status=$rc
    done
done
set -e
if (( status != 0 )); then
    echo "interop/mcp-js: node --test exited $status; last server stderr lines:" >&2
    tail -n 40 "$WORK/stderr" >&2
fi
exit "$status"
