#!/usr/bin/env bash
# Interop suite: the official TypeScript A2A client (@a2a-js/sdk 1.3.0) against a running
# doubleagent, once over each binding (A2A_TRANSPORTS, default "JSONRPC HTTP+JSON GRPC"; gRPC
# through @a2a-js/sdk/client/grpc with its peer dependencies @grpc/grpc-js and @bufbuild/protobuf).
#
#   bash interop/a2a-js/run.sh [node --test args...]
#
# Installs (once, then reuses) package.json + package-lock.json with `npm ci` into a cache dir,
# starts `doubleagent serve <scenario> --listen 127.0.0.1:0`, reads the ready line from its stdout
# and runs test_a2a.mjs with node's built-in test runner against the URL it names.
#
# Environment:
#   DOUBLEAGENT_BIN       binary to run (default: <repo>/target/debug/doubleagent, built if missing)
#   DOUBLEAGENT_SCENARIO  scenario file (default: <repo>/scenarios/a2a-interop.toml)
#   DOUBLEAGENT_CACHE     cache root for the npm install (default: ${XDG_CACHE_HOME:-~/.cache}/doubleagent)
#   A2A_TRANSPORTS        bindings to run the suite over, in order (default: "JSONRPC HTTP+JSON GRPC")
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(git -C "$HERE" rev-parse --show-toplevel 2>/dev/null || (cd "$HERE/../.." && pwd))"
SDK_VERSION="1.3.0"

command -v node >/dev/null || { echo "interop/a2a-js: node not found (need >= 20)" >&2; exit 1; }
major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$major" -ge 20 ] || { echo "interop/a2a-js: node >= 20 required, found $(node --version)" >&2; exit 1; }

# --- the client (cached; package-lock.json pins every version) ---------------------------------
CACHE="${DOUBLEAGENT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/doubleagent}"
DEPS="$CACHE/a2a-js-$SDK_VERSION"
WANT="$(cat "$HERE/package.json" "$HERE/package-lock.json" | sha256sum | cut -d' ' -f1)"
if [[ ! -f "$DEPS/.installed" || "$(cat "$DEPS/.installed")" != "$WANT" ]]; then
    echo "interop/a2a-js: installing @a2a-js/sdk@$SDK_VERSION into $DEPS" >&2
    rm -rf "$DEPS"
    mkdir -p "$DEPS"
    cp "$HERE/package.json" "$HERE/package-lock.json" "$DEPS/"
    (cd "$DEPS" && npm ci --silent --no-audit --no-fund)
    echo "$WANT" > "$DEPS/.installed"
fi

# --- server ------------------------------------------------------------------------------------
SCENARIO="${DOUBLEAGENT_SCENARIO:-$ROOT/scenarios/a2a-interop.toml}"
BIN="${DOUBLEAGENT_BIN:-$ROOT/target/debug/doubleagent}"
if [[ ! -x "$BIN" ]]; then
    echo "interop/a2a-js: building doubleagent" >&2
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
        echo "interop/a2a-js: server exited before it was ready; its stderr:" >&2
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
    echo "interop/a2a-js: no ready line within 30 s; stderr:" >&2
    cat "$WORK/stderr" >&2
    exit 1
fi
echo "interop/a2a-js: server ready at $url (scenario $SCENARIO)" >&2

# The test file runs from a copy beside the cached node_modules, so the checkout stays clean and
# `import '@a2a-js/sdk'` resolves to the pinned install.
mkdir "$WORK/suite"
cp "$HERE/test_a2a.mjs" "$WORK/suite/"
ln -s "$DEPS/node_modules" "$WORK/suite/node_modules"

status=0
set +e
for transport in ${A2A_TRANSPORTS:-JSONRPC HTTP+JSON GRPC}; do
    echo "interop/a2a-js: @a2a-js/sdk $SDK_VERSION over $transport" >&2
    A2A_TRANSPORT="$transport" DOUBLEAGENT_URL="$url" \
        node --test --test-reporter=spec "$@" "$WORK/suite/test_a2a.mjs"
    rc=$?
    (( rc != 0 )) && status=$rc
done
set -e
if (( status != 0 )); then
    echo "interop/a2a-js: node --test exited $status; last server stderr lines:" >&2
    tail -n 40 "$WORK/stderr" >&2
fi
exit "$status"
