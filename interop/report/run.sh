#!/usr/bin/env bash
# Renders the HTML timeline in headless Chromium (Debian's `chromium` package): a real scenario
# driven by the example orchestrator with a bug, then a synthetic 20 000-entry ledger. Checks that
# the page's script ran (the DOM says so, findings are listed) and takes screenshots.
set -euo pipefail
root="$(git -C "$(dirname "$0")" rev-parse --show-toplevel)"
cd "$root"
out="${DOUBLEAGENT_REPORT_OUT:-$root/target/interop-report}"
mkdir -p "$out"

if ! command -v chromium >/dev/null 2>&1; then
  echo "report interop: installing Debian's chromium"
  if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; } >"$out/apt.log" 2>&1; then
    echo "report interop: SKIPPED: chromium could not be installed (see $out/apt.log)"
    exit 0
  fi
fi

cargo build -q --bin doubleagent --example orchestrator
bin="$root/target/debug/doubleagent"
orch="$root/target/debug/examples/orchestrator"

"$bin" serve scenarios/lost-response.toml --listen 127.0.0.1:0 >"$out/ready.txt" 2>"$out/serve.log" &
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT
for _ in $(seq 1 100); do [ -s "$out/ready.txt" ] && break; sleep 0.05; done
url="$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["url"])' "$out/ready.txt")"
"$orch" --url "$url" --bug blind-retry
"$bin" report --url "$url" -o "$out/report.html"

# A big ledger: the page must stay usable for tens of thousands of entries.
python3 - "$out/big.jsonl" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(1, 20001):
        ms = i * 37
        t = "2026-11-30T10:%02d:%02d.%03dZ" % (ms // 60000 % 60, ms // 1000 % 60, ms % 1000)
        f.write(json.dumps({"seq": i, "service": ["payments", "ledger", "mail"][i % 3], "route": "create", "method": "POST",
            "path": "/v1/x", "received_at": t, "idempotency_key": "k-%d" % i, "intent": {"/n": i - 3 if i % 500 == 0 else i},
            "disposition": "executed", "fate": "respond", "applied": True, "applied_at": t,
            "response": {"delivery": "dropped" if i % 97 == 0 else "sent", "status": 201, "at": t}}) + "\n")
PY
"$bin" report --ledger "$out/big.jsonl" -o "$out/big.html"

chrome() {
  chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --user-data-dir="$(mktemp -d)" --window-size=1400,900 \
    --virtual-time-budget=5000 "$@" 2>>"$out/chromium.log"
}

check() {  # page, minimum findings rendered
  local page="$1" findings="$2" name
  name="$(basename "$page" .html)"
  chrome --dump-dom "file://$page" >"$out/$name.dom.html"
  grep -q 'data-rendered="true"' "$out/$name.dom.html" || { echo "FAIL: $name: the page's script did not finish"; exit 1; }
  local n
  n="$(grep -o 'id="finding-[0-9]*"' "$out/$name.dom.html" | wc -l)"
  [ "$n" -ge "$findings" ] || { echo "FAIL: $name: $n findings rendered, expected at least $findings"; exit 1; }
  grep -q 'class="row' "$out/$name.dom.html" || { echo "FAIL: $name: no table rows rendered"; exit 1; }
  chrome --screenshot="$out/$name.png" "file://$page" >/dev/null
  local size
  size="$(stat -c %s "$out/$name.png")"
  [ "$size" -gt 20000 ] || { echo "FAIL: $name: screenshot is suspiciously small ($size bytes)"; exit 1; }
  echo "ok: $name rendered ($n findings, screenshot $out/$name.png, $size bytes)"
}

check "$out/report.html" 2
check "$out/big.html" 1
echo "report interop: 2 passed, 0 failed"
