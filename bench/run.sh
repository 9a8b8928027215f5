#!/usr/bin/env bash
# The benchmark suite (issue 6; see BENCHMARKS.md): doubleagent against a bare hyper server
# (examples/baseline.rs), measured alternately in one run, several rounds, medians and ratios.
#
#   bench/run.sh                 full run (release build; ~15 minutes on 2 cores)
#   bench/run.sh --smoke         every figure end to end in a few seconds, no timing verdicts (CI)
#   bench/run.sh --rounds 3 --secs 5 --only throughput,replays
#
# Environment: BENCH_LOADGEN=benchkit forces the built-in load loop instead of wrk;
# BENCH_OUT=FILE also writes the result table (markdown) there; BENCH_SOAK_SECS sets the soak's
# length (default 30).
#
# Only loopback addresses are used; every load step is bounded in time (wrk -d plus `timeout`);
# everything started here is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

MODE=full
ROUNDS=5
SECS=8
ONLY=""
value() { [ $# -ge 2 ] || { echo "bench/run.sh: $1 wants a value" >&2; exit 2; }; }
while [ $# -gt 0 ]; do
  case "$1" in
    --smoke) MODE=smoke ;;
    --rounds) value "$@"; ROUNDS="$2"; shift ;;
    --secs) value "$@"; SECS="$2"; shift ;;
    --only) value "$@"; ONLY="$2"; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) echo "bench/run.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

if [ "$MODE" = smoke ]; then
  ROUNDS=1; SECS=1; WARM=0
  DELAY_CONNS=100; CLOCK_N=2000; CLOCK_HTTP_N=200; LEDGER_N=20000; STARTUP_RUNS=2
  SOAK_SECS=2; SOAK_BOUND=2000; VERIFY_RUNS=1; MEM_WARM=1; PERTEST_N=50
  PROFILE=debug
else
  WARM=1
  DELAY_CONNS=1000; CLOCK_N=100000; CLOCK_HTTP_N=15000; LEDGER_N=1000000; STARTUP_RUNS=20
  SOAK_SECS=${BENCH_SOAK_SECS:-30}; SOAK_BOUND=100000; VERIFY_RUNS=3; MEM_WARM=4; PERTEST_N=1000
  PROFILE=release
fi

# A typo in --only would otherwise build everything and then measure nothing.
FIGURES="throughput replays noise delayed agents startup memory soak clock verify pertest"
for f in ${ONLY//,/ }; do
  [[ " $FIGURES " == *" $f "* ]] || {
    echo "bench/run.sh: unknown figure '$f' in --only (figures: ${FIGURES// /, })" >&2; exit 2; }
done
for n in "ROUNDS=$ROUNDS" "SECS=$SECS"; do
  [[ "${n#*=}" =~ ^[1-9][0-9]*$ ]] || {
    echo "bench/run.sh: --$(echo "${n%%=*}" | tr A-Z a-z) wants a whole number of at least 1, not '${n#*=}'" >&2; exit 2; }
done
want() { [ -z "$ONLY" ] || [[ ",$ONLY," == *",$1,"* ]]; }
log() { echo "[bench] $*" >&2; }

# ---------------------------------------------------------------------------------------------
# Build and tools

log "building ($PROFILE)"
if [ "$PROFILE" = release ]; then
  cargo build --release --quiet --bin doubleagent --example baseline --example benchkit
  BIN=target/release
else
  cargo build --quiet --bin doubleagent --example baseline --example benchkit
  BIN=target/debug
fi
DA="$BIN/doubleagent"
BASE="$BIN/examples/baseline"
KIT="$BIN/examples/benchkit"

# The fd limit bounds the connection figures; take what the hard limit allows.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt $((CLOCK_HTTP_N + 1000)) ]; then
  CLOCK_HTTP_N=$(( $(ulimit -n) - 1000 ))
fi

LOADGEN=benchkit
if [ "${BENCH_LOADGEN:-}" != benchkit ]; then
  if ! command -v wrk >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    log "installing wrk"
    timeout 120 apt-get install -y -qq wrk >/dev/null 2>&1 \
      || { timeout 180 apt-get update -qq >/dev/null 2>&1 && timeout 120 apt-get install -y -qq wrk >/dev/null 2>&1; } \
      || log "could not install wrk: using the built-in load loop"
  fi
  command -v wrk >/dev/null 2>&1 && LOADGEN=wrk
fi
log "load generator: $LOADGEN"

TMP="$(mktemp -d -t doubleagent-bench.XXXXXX)"
RESULTS="$TMP/results.tsv"
: > "$RESULTS"
SERVER_PID=""
SERVER_URL=""
PAIR_PIDS=""

cleanup() {
  stop_server
  [ -z "$PAIR_PIDS" ] || stop_pair
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------------------------------------
# Servers

# start_server NAME CMD...: start it, wait (at most 10 s) for its ready line, set SERVER_URL.
STARTS=0
start_server() {
  local name="$1"; shift
  STARTS=$((STARTS + 1))
  local out="$TMP/$name.$STARTS.out" err="$TMP/$name.$STARTS.err"
  : > "$out"
  "$@" > "$out" 2> "$err" &
  SERVER_PID=$!
  SERVER_URL=""
  local i
  for i in $(seq 1 1000); do
    SERVER_URL="$(head -1 "$out" | sed -n 's/.*"event":"ready","url":"\([^"]*\)".*/\1/p')"
    [ -n "$SERVER_URL" ] && return 0
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then break; fi
    sleep 0.01
  done
  log "$name did not become ready:"; tail -5 "$err" >&2
  stop_server
  return 1
}

# stop_server: SIGTERM, wait up to 10 s, then SIGKILL.
stop_server() {
  [ -n "$SERVER_PID" ] || return 0
  kill -TERM "$SERVER_PID" 2>/dev/null || true
  local i
  for i in $(seq 1 200); do
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.05
  done
  kill -KILL "$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=""
}

# serve KIND SCENARIO [ARGS...]: KIND is da (ARGS: more serve options) or base or base2, a
# second baseline for the noise figure (ARGS: canned answers, PATH=FILE:TYPE).
serve() {
  local kind="$1" scenario="$2"; shift 2
  if [ "$kind" = da ]; then
    start_server da "$DA" serve "$scenario" --listen 127.0.0.1:0 --drain-timeout 1s "$@"
  else
    local canned=()
    local c
    for c in "$@"; do canned+=(--canned "$c"); done
    start_server base "$BASE" --listen 127.0.0.1:0 "${canned[@]}"
  fi
}

rss_kb() { awk '/^VmRSS:/ {print $2}' "/proc/$SERVER_PID/status"; }

# probe URL [benchkit probe options...]: prints the PROBE json
probe() { timeout 30 "$KIT" probe "$@" | sed -n 's/^PROBE //p'; }
entries() {
  probe "$SERVER_URL/_admin/health" --out "$TMP/health.json" > /dev/null
  sed -n 's/.*"entries":\([0-9]*\).*/\1/p' "$TMP/health.json"
}

# load URL CONNS SECS KEY_MODE BODY [HEADERS]: prints the WRK json line
load() {
  local url="$1" conns="$2" secs="$3" mode="$4" body="$5" headers="${6:-}"
  local run="r$RANDOM$RANDOM"
  if [ "$LOADGEN" = wrk ]; then
    WRK_METHOD=POST WRK_BODY="$body" WRK_KEY_HEADER=Idempotency-Key WRK_KEY_MODE="$mode" \
      WRK_HEADERS="$headers" WRK_RUN="$run" \
      timeout $((secs + 30)) wrk -t2 -c"$conns" -d"${secs}s" --timeout 5s -s bench/wrk.lua "$url" \
      | sed -n 's/^WRK //p'
  else
    timeout $((secs + 30)) "$KIT" load "$url" --conns "$conns" --secs "$secs" --method POST \
      --body "$body" --key-header Idempotency-Key --key-mode "$mode" --headers "$headers" \
      --run "$run" | sed -n 's/^WRK //p'
  fi
}

# record FIGURE KIND METRIC VALUE
record() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >> "$RESULTS"; }

json_field() { sed -n "s/.*\"$1\":\([^,}]*\).*/\1/p" <<< "$2" | tr -d '"'; }

TRANSFER='{"to":"acct-9","amount":100}'

# Each server's SECS seconds of load a round come in slices of SLICE seconds (2, or 1 when SECS is
# odd), the two servers' slices in the order A B B A A B B A ...: a virtual machine's speed drifts
# by a tenth or more within a minute, and one long step per server put the whole drift between
# the two steps into the round's ratio. Slices in this order cancel a steady drift and average
# the rest (see BENCHMARKS.md, "The baseline").
if [ $((SECS % 2)) = 0 ]; then SLICE=2; else SLICE=1; fi

# pair_figure FIGURE "KIND KIND" SLICE SCENARIO PATH CONNS MODE BODY HEADERS [CANNED...]: both
# servers of a round, fresh processes, up together; each warmed, then loaded in alternating slices
# of SLICE seconds (SECS: one step each).
# Records per server: rps (all its slices' requests over all their seconds), p99_ms (the mean of
# its slices' p99s), errors (their sum).
pair_figure() {
  local fig="$1" kinds="$2" slice="$3" scenario="$4" path="$5" conns="$6" mode="$7" body="$8"
  local headers="$9"
  shift 9
  # The rest: answers captured from doubleagent for the baseline to serve (agents).
  local -a kind=($kinds) url=() requests=(0 0) seconds=(0 0) p99s=("" "") errors=(0 0)
  local i j s out
  for i in 0 1; do
    if [ "${kind[$i]}" = da ]; then serve da "$scenario"; else serve "${kind[$i]}" "$scenario" "$@"; fi \
      || { record "$fig" "${kind[$i]}" failed 1; stop_pair; return 0; }
    url[$i]="$SERVER_URL"
    PAIR_PIDS="$PAIR_PIDS $SERVER_PID"
    SERVER_PID=""
  done
  if [ "$WARM" = 1 ]; then
    for i in 0 1; do load "${url[$i]}$path" "$conns" 1 "$mode" "$body" "$headers" > /dev/null; done
  fi
  for s in $(seq 0 $((SECS / slice - 1))); do
    for j in $((s % 2)) $((1 - s % 2)); do
      out="$(load "${url[$j]}$path" "$conns" "$slice" "$mode" "$body" "$headers")"
      log "$fig ${kind[$j]} (slice $((s + 1))): $out"
      if [ -z "$out" ]; then record "$fig" "${kind[$j]}" failed 1; stop_pair; return 0; fi
      requests[$j]=$(( ${requests[$j]} + $(json_field requests "$out") ))
      seconds[$j]="$(awk -v a="${seconds[$j]}" -v b="$(json_field seconds "$out")" 'BEGIN {print a + b}')"
      p99s[$j]="${p99s[$j]} $(json_field p99_us "$out")"
      errors[$j]=$(( ${errors[$j]} + $(json_field errors "$out") + $(json_field non2xx "$out") ))
    done
  done
  stop_pair
  for i in 0 1; do
    record "$fig" "${kind[$i]}" rps "$(awk -v r="${requests[$i]}" -v t="${seconds[$i]}" 'BEGIN {printf "%.1f", r / t}')"
    record "$fig" "${kind[$i]}" p99_ms "$(awk -v l="${p99s[$i]}" 'BEGIN {n = split(l, v, " "); for (k = 1; k <= n; k++) t += v[k]; printf "%.3f", t / n / 1000}')"
    record "$fig" "${kind[$i]}" errors "${errors[$i]}"
  done
}
stop_pair() {
  local p
  for p in $PAIR_PIDS; do SERVER_PID="$p"; stop_server; done
  PAIR_PIDS=""
}

# ---------------------------------------------------------------------------------------------
# Agents: measured only when `doubleagent check` accepts the bench scenarios and one request works

A2A_BODY='{"jsonrpc":"2.0","id":"$K","method":"SendMessage","params":{"message":{"messageId":"m-$K","role":"ROLE_USER","parts":[{"text":"go"}]},"configuration":{}}}'
A2A_HEADERS='A2A-Version: 1.0'
AGUI_BODY='{"threadId":"t-$K","runId":"r-$K","messages":[{"id":"m-$K","role":"user","content":"pay the vendor"}],"tools":[],"context":[],"state":{}}'
AGUI_HEADERS='Accept: text/event-stream'
MCP_BODY='{"jsonrpc":"2.0","id":"$K","method":"tools/call","params":{"name":"create_transfer","arguments":{"to":"acct-9","amount":100},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'
MCP_HEADERS='Accept: application/json, text/event-stream|MCP-Protocol-Version: 2026-07-28|Mcp-Method: tools/call|Mcp-Name: create_transfer'
A2A_OK=""; AGUI_OK=""; MCP_OK=""

# agent_probe NAME SCENARIO PATH BODY HEADERS MARKER: checks, captures the answer for the baseline
agent_probe() {
  local name="$1" scenario="$2" path="$3" body="$4" headers="$5" marker="$6"
  if ! "$DA" check "$scenario" > "$TMP/$name.check" 2>&1; then
    log "$name: $(head -1 "$TMP/$name.check")"
    return 1
  fi
  serve da "$scenario" || return 1
  local out
  out="$(probe "$SERVER_URL$path" --method POST --body "$body" --headers "$headers" --out "$TMP/$name.canned")"
  stop_server
  if [ "$(json_field status "$out")" != 200 ] || ! grep -q "$marker" "$TMP/$name.canned"; then
    log "$name: probe answered $out: $(head -c 300 "$TMP/$name.canned" 2>/dev/null)"
    return 1
  fi
  echo "$path=$TMP/$name.canned:$(json_field content_type "$out")" > "$TMP/$name.spec"
}

if want agents; then
  agent_probe a2a bench/agents-a2a.toml /agents/worker "$A2A_BODY" "$A2A_HEADERS" '"result"' && A2A_OK=1
  agent_probe agui bench/agents-agui.toml /agents/approver "$AGUI_BODY" "$AGUI_HEADERS" 'RUN_FINISHED' && AGUI_OK=1
  agent_probe mcp bench/mcp.toml /mcp/payments "$MCP_BODY" "$MCP_HEADERS" '"structuredContent"' && MCP_OK=1
fi

# ---------------------------------------------------------------------------------------------
# Rounds: each load figure, baseline and doubleagent alternately (the order flips every round)

for round in $(seq 1 "$ROUNDS"); do
  if [ $((round % 2)) = 1 ]; then ORDER="base da"; else ORDER="da base"; fi
  log "round $round/$ROUNDS ($ORDER)"
  if want throughput; then
    pair_figure throughput "$ORDER" "$SLICE" bench/bench.toml /pay/v1/transfers 64 unique "$TRANSFER" ""
  fi
  if want replays; then
    pair_figure replays "$ORDER" "$SLICE" bench/bench.toml /rep/v1/transfers 64 same "$TRANSFER" ""
  fi
  # The method's own noise: the replays load on a second baseline against the first, both
  # started afresh and interleaved as every pair here is. Two identical servers read 1.00 but
  # for the machine; how far their rounds stray says how far any ratio above may stray for no
  # reason.
  if want noise; then
    pair_figure noise "${ORDER/da/base2}" "$SLICE" bench/bench.toml /rep/v1/transfers 64 same "$TRANSFER" ""
  fi
  # Delayed responses: one step each. Each load step opens its 1 000 connections afresh, and in
  # 2 s slices that ramp, which the baseline takes worse, outweighed the steady state measured.
  if want delayed; then
    pair_figure delayed "$ORDER" "$SECS" bench/bench.toml /slow/v1/transfers "$DELAY_CONNS" none "$TRANSFER" ""
  fi
  if [ -n "$A2A_OK" ]; then
    pair_figure a2a "$ORDER" "$SLICE" bench/agents-a2a.toml /agents/worker 64 none "$A2A_BODY" "$A2A_HEADERS" "$(cat "$TMP/a2a.spec")"
  fi
  if [ -n "$AGUI_OK" ]; then
    pair_figure agui "$ORDER" "$SLICE" bench/agents-agui.toml /agents/approver 64 none "$AGUI_BODY" "$AGUI_HEADERS" "$(cat "$TMP/agui.spec")"
  fi
  if [ -n "$MCP_OK" ]; then
    pair_figure mcp "$ORDER" "$SLICE" bench/mcp.toml /mcp/payments 64 none "$MCP_BODY" "$MCP_HEADERS" "$(cat "$TMP/mcp.spec")"
  fi

  if want startup; then
    out="$(timeout 120 "$KIT" startup --runs "$STARTUP_RUNS" \
      --a "$BASE --listen 127.0.0.1:0" --b "$DA serve bench/bench.toml --listen 127.0.0.1:0" \
      | sed -n 's/^STARTUP //p')"
    log "startup: $out"
    python3 - "$out" "$RESULTS" <<'PY'
import json, statistics, sys
d = json.loads(sys.argv[1])
with open(sys.argv[2], "a") as f:
    f.write(f"startup\tbase\tms\t{statistics.median(d['a_ms']):.3f}\n")
    f.write(f"startup\tda\tms\t{statistics.median(d['b_ms']):.3f}\n")
PY
  fi

  if want memory; then
    # RSS growth per recorded entry: warm up, read VmRSS and the entry count, load, read again.
    for kind in $ORDER; do
      # From a fresh server (idempotency keys filling their --max-keys bound included), and in
      # the steady state after a warm-up of MEM_WARM seconds (the key store full and evicting:
      # the growth left is the ledger's and its key index's). The ledger unbounded (its default
      # bound would stop the growth being measured).
      if [ "$kind" = da ]; then serve da bench/bench.toml --max-entries 0; else serve "$kind" bench/bench.toml; fi \
        || continue
      rs="$(rss_kb)"; es="$(entries)"
      load "$SERVER_URL/pay/v1/transfers" 64 "$MEM_WARM" unique "$TRANSFER" "" > /dev/null
      r0="$(rss_kb)"; e0="$(entries)"
      load "$SERVER_URL/pay/v1/transfers" 64 "$SECS" unique "$TRANSFER" "" > /dev/null
      r1="$(rss_kb)"; e1="$(entries)"
      stop_server
      per="$(awk -v r0="$r0" -v r1="$r1" -v e0="$e0" -v e1="$e1" 'BEGIN { n = e1 - e0; if (n <= 0) n = 1; printf "%.1f", (r1 - r0) * 1024 / n }')"
      fresh="$(awk -v r0="$rs" -v r1="$r1" -v e0="$es" -v e1="$e1" 'BEGIN { n = e1 - e0; if (n <= 0) n = 1; printf "%.1f", (r1 - r0) * 1024 / n }')"
      log "memory $kind: rss ${rs}kB -> ${r0}kB (warm, $((e0 - es)) requests) -> ${r1}kB ($((e1 - e0)) more): steady $per, from fresh $fresh bytes/entry"
      record memory "$kind" bytes_per_entry "$per"
      record memory "$kind" fresh_bytes_per_entry "$fresh"
      record memory "$kind" entries "$((e1 - es))"
    done
  fi
done

# ---------------------------------------------------------------------------------------------
# Once-per-run figures (absolute budgets)

if want soak; then
  # Flat memory under sustained load (issue 5's bounded memory): a server with --max-entries
  # and --max-keys below what the run sends, unique keys at full speed for SOAK_SECS; RSS is
  # sampled every second. Once both bounds are reached, RSS must stop growing: the creep is the
  # growth from the sample at one third of the run to the last one.
  serve da bench/bench.toml --max-entries "$SOAK_BOUND" --max-keys "$SOAK_BOUND"
  load "$SERVER_URL/pay/v1/transfers" 64 "$SOAK_SECS" unique "$TRANSFER" "" > "$TMP/soak.wrk" &
  soak_load=$!
  rss_list=""
  for s in $(seq 1 "$SOAK_SECS"); do
    sleep 1
    rss_list="$rss_list $(rss_kb)"
  done
  wait "$soak_load" || true
  e="$(entries)"
  stop_server
  log "soak: $(cat "$TMP/soak.wrk"); entries held at the end: $e (bound $SOAK_BOUND); RSS each second (kB):$rss_list"
  third="$(echo $rss_list | awk '{i = int(NF / 3); if (i < 1) i = 1; print $i}')"
  last="$(echo $rss_list | awk '{print $NF}')"
  record soak da rss_first_kb "$third"
  record soak da rss_last_kb "$last"
  record soak da creep_pct "$(awk -v a="$third" -v b="$last" 'BEGIN {printf "%.1f", (b - a) * 100 / a}')"
  record soak da requests "$(json_field requests "$(cat "$TMP/soak.wrk")")"
fi

if want clock; then
  out="$(timeout 300 "$KIT" clock --n "$CLOCK_N" | sed -n 's/^CLOCK //p')"
  log "clock (in process): $out"
  record clock da delivered_ms "$(json_field delivered_ms "$out")"
  record clock da complete "$(json_field complete "$out")"
  record clock da n "$CLOCK_N"
  # As many connections as pending responses (the default cap is below the figure's size).
  serve da bench/clock.toml --max-connections "$((CLOCK_HTTP_N + 64))"
  out="$(timeout 300 "$KIT" clock-http "$SERVER_URL" --n "$CLOCK_HTTP_N" | sed -n 's/^CLOCKHTTP //p')"
  stop_server
  log "clock (HTTP): $out"
  record clock_http da delivered_ms "$(json_field delivered_ms "$out")"
  record clock_http da complete "$(json_field complete "$out")"
  record clock_http da n "$CLOCK_HTTP_N"
fi

if want verify; then
  timeout 600 "$KIT" genledger --n "$LEDGER_N" --out "$TMP/ledger.jsonl" | sed -n 's/^GENLEDGER //p' >&2
  for r in $(seq 1 "$VERIFY_RUNS"); do
    t0="$(date +%s%N)"
    rc=0; timeout 300 "$DA" verify --ledger "$TMP/ledger.jsonl" > "$TMP/verify.out" || rc=$?
    t1="$(date +%s%N)"
    if [ "$rc" -gt 1 ]; then log "verify failed ($rc)"; head -3 "$TMP/verify.out" >&2; record verify da failed 1; fi
    record verify da seconds "$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", (b - a) / 1e9}')"
  done
  record verify da entries "$LEDGER_N"
  log "verify: $(head -1 "$TMP/verify.out")"
fi

if want pertest; then
  # What a test costs a suite with a fresh session per test (the Python and npm packages'
  # fixtures): session, one action, the verdict, the session dropped; against a bare request.
  serve base bench/bench.toml && { BASE_URL="$SERVER_URL"; PAIR_PIDS="$PAIR_PIDS $SERVER_PID"; SERVER_PID=""; }
  if [ -n "${BASE_URL:-}" ] && serve da bench/bench.toml; then
    out="$(timeout 300 "$KIT" pertest "$SERVER_URL" --base "$BASE_URL" --n "$PERTEST_N" | sed -n 's/^PERTEST //p')"
    stop_server
    log "per test: $out"
    if [ -z "$out" ] || [ "$(json_field failed "$out")" != 0 ]; then record pertest da failed 1; fi
    record pertest da overhead_ms "$(awk -v u="$(json_field overhead_us "$out")" 'BEGIN {printf "%.3f", u / 1000}')"
    record pertest da test_ms "$(awk -v u="$(json_field test_us "$out")" 'BEGIN {printf "%.3f", u / 1000}')"
    record pertest base bare_ms "$(awk -v u="$(json_field bare_us "$out")" 'BEGIN {printf "%.3f", u / 1000}')"
    record pertest da n "$PERTEST_N"
  else
    record pertest da failed 1
  fi
  stop_pair
fi

# ---------------------------------------------------------------------------------------------
# Report

MACHINE="$(nproc) cores, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(rustc --version), load average $(cut -d' ' -f1-3 /proc/loadavg), loadgen $LOADGEN"
# Agents left out by --only get no row, as any other figure; asked for and unavailable, a "skipped" row.
if want agents; then AGENTS="a2a=${A2A_OK:-0},agui=${AGUI_OK:-0},mcp=${MCP_OK:-0}"; else AGENTS="a2a=off,agui=off,mcp=off"; fi
python3 bench/report.py "$RESULTS" "$MODE" "$ROUNDS" "$MACHINE" "$AGENTS" "${BENCH_OUT:-}"
