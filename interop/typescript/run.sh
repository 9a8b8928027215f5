#!/usr/bin/env bash
# The npm package as a user gets it: build it with the pinned TypeScript, `npm pack` it, install
# the tarball into a fresh directory, and run the package's own tests and examples/typescript/
# (an orchestrator and its node:test suite, compiled there) against the real binary.
#
#   bash interop/typescript/run.sh
#
# Environment:
#   DOUBLEAGENT_BIN    binary to run (default: <repo>/target/debug/doubleagent, built if missing)
#   DOUBLEAGENT_CACHE  cache root for the build tools (default: ${XDG_CACHE_HOME:-~/.cache}/doubleagent)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(git -C "$HERE" rev-parse --show-toplevel 2>/dev/null || (cd "$HERE/../.." && pwd))"
TOOLS_REQS=("typescript@5.9.3" "@types/node@20.19.9")

command -v node >/dev/null || { echo "interop/typescript: node not found (need >= 20)" >&2; exit 1; }
major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$major" -ge 20 ] || { echo "interop/typescript: node >= 20 required, found $(node --version)" >&2; exit 1; }

# --- build tools (cached: they do not change what is tested) -----------------------------------
CACHE="${DOUBLEAGENT_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/doubleagent}"
TOOLS="$CACHE/typescript-build-5.9.3"
if [[ ! -f "$TOOLS/.installed" || "$(cat "$TOOLS/.installed")" != "${TOOLS_REQS[*]}" ]]; then
    echo "interop/typescript: installing ${TOOLS_REQS[*]} into $TOOLS" >&2
    rm -rf "$TOOLS"
    mkdir -p "$TOOLS"
    (cd "$TOOLS" && echo '{"private":true}' > package.json \
        && npm install --silent --no-audit --no-fund "${TOOLS_REQS[@]}")
    echo "${TOOLS_REQS[*]}" > "$TOOLS/.installed"
fi
TSC="$TOOLS/node_modules/.bin/tsc"

BIN="${DOUBLEAGENT_BIN:-$ROOT/target/debug/doubleagent}"
if [[ ! -x "$BIN" ]]; then
    echo "interop/typescript: building doubleagent" >&2
    (cd "$ROOT" && cargo build --quiet --bin doubleagent)
fi
export DOUBLEAGENT_BIN="$BIN"

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

# --- the package: built and packed from a copy, so the checkout stays clean --------------------
mkdir "$WORK/pkg"
cp -r "$ROOT/npm/package.json" "$ROOT/npm/tsconfig.json" "$ROOT/npm/README.md" "$ROOT/npm/src" "$WORK/pkg/"
ln -s "$TOOLS/node_modules" "$WORK/pkg/node_modules"
(cd "$WORK/pkg" && "$TSC" -p tsconfig.json && npm pack --silent --pack-destination "$WORK" > /dev/null)
tarball="$(ls "$WORK"/doubleagent-*.tgz)"
echo "interop/typescript: packed $(basename "$tarball")" >&2

# --- a fresh project with only the tarball -----------------------------------------------------
mkdir "$WORK/app"
cd "$WORK/app"
echo '{"private":true,"type":"module"}' > package.json
npm install --silent --no-audit --no-fund "$tarball"
[ -z "$(ls node_modules | grep -v '^doubleagent$' | grep -v '^\.')" ] \
    || { echo "interop/typescript: the package pulled in dependencies: $(ls node_modules)" >&2; exit 1; }
cp -r "$ROOT/npm/test" test
cp "$ROOT"/examples/typescript/*.ts "$ROOT/examples/typescript/tsconfig.json" .
ln -s "$ROOT/scenarios" scenarios
"$TSC" -p tsconfig.json --typeRoots "$TOOLS/node_modules/@types"

node --test --test-concurrency=1 test/
node --test --test-concurrency=1 dist/
