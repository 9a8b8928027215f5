#!/usr/bin/env bash
# AG-UI interop suite: installs the pinned official clients (@ag-ui/client@1.0.0,
# @ag-ui/core@1.0.0, @tanstack/ai-client@0.33.2) into this folder from the committed lock file and
# runs the tests with node's built-in runner against a real doubleagent binary.
#
#   bash interop/agui/run.sh                               # from the repository root (or anywhere)
#   DOUBLEAGENT_BIN=/path/to/doubleagent bash run.sh      # default: <repo>/target/debug/doubleagent,
#                                                         # built if missing
#   AGUI_SCENARIO=/path/to/scenario.toml                  # default: <repo>/scenarios/agui-interop.toml
#   AGUI_SCENARIOS="a.toml b.toml"                        # schema check over these (default: every
#                                                         # <repo>/scenarios/*.toml with an ag-ui agent)
# Exits non-zero if any test fails.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO="$(cd "$HERE/../.." && pwd)"
cd "$HERE"

command -v node >/dev/null || { echo "node not found (need >= 20)" >&2; exit 1; }
major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$major" -ge 20 ] || { echo "node >= 20 required, found $(node --version)" >&2; exit 1; }

if [ -z "${DOUBLEAGENT_BIN:-}" ]; then
  DOUBLEAGENT_BIN="$REPO/target/debug/doubleagent"
  if [ ! -x "$DOUBLEAGENT_BIN" ]; then
    (cd "$REPO" && cargo build --quiet --bin doubleagent)
  fi
fi
[ -x "$DOUBLEAGENT_BIN" ] || { echo "doubleagent binary not found: $DOUBLEAGENT_BIN" >&2; exit 1; }
export DOUBLEAGENT_BIN

export AGUI_SCENARIO="${AGUI_SCENARIO:-$REPO/scenarios/agui-interop.toml}"
if [ -z "${AGUI_SCENARIOS:-}" ]; then
  AGUI_SCENARIOS=""
  while IFS= read -r f; do AGUI_SCENARIOS="$AGUI_SCENARIOS $f"; done \
    < <(grep -lE '^[[:space:]]*protocol[[:space:]]*=[[:space:]]*"ag-ui"' "$REPO"/scenarios/*.toml 2>/dev/null || true)
fi
export AGUI_SCENARIOS

# The lock file pins every package with its integrity hash and records no registry address.
npm ci --no-audit --no-fund --loglevel=error

unset SUPPRESS_TRANSFORMATION_WARNINGS  # the schema check reads the client's enforcement warnings
exec node --test --test-concurrency=1 --test-timeout=60000 test/*.test.mjs
