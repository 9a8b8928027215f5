"""Summarise bench/run.sh's raw results: medians, doubleagent/baseline ratios (the median of each
round's ratio), budget verdicts.

usage: report.py RESULTS.tsv MODE ROUNDS MACHINE AGENTS [OUT.md]

AGENTS is "a2a=X,agui=Y,mcp=Z", each X/Y/Z "1" (measured), "0" (unavailable: a "skipped" row) or "off"
(left out by --only: no row).

RESULTS.tsv has one measurement a line: figure, kind (da|base), metric, value. Exits 1 when a
figure failed to run at all (so the CI smoke catches a broken figure); budget misses are reported,
not fatal.
"""

import statistics
import sys
from collections import defaultdict

path, mode, rounds, machine, agents = sys.argv[1:6]
out_path = sys.argv[6] if len(sys.argv) > 6 else ""
smoke = mode == "smoke"
agents = dict(kv.split("=") for kv in agents.split(","))

values = defaultdict(list)
failed = set()
for line in open(path):
    fig, kind, metric, value = line.rstrip("\n").split("\t")
    if metric == "failed":
        failed.add(fig)
        continue
    if value in ("true", "false"):
        values[(fig, kind, metric)].append(value == "true")
        continue
    try:
        values[(fig, kind, metric)].append(float(value))
    except ValueError:
        failed.add(fig)


def med(fig, kind, metric):
    v = values.get((fig, kind, metric))
    if not v:
        return None
    if isinstance(v[0], bool):
        return all(v)
    return statistics.median(v)


def fmt(x, unit=""):
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "NO"
    if abs(x) >= 1000:
        return f"{x:,.0f}{unit}"
    if abs(x) >= 100:
        return f"{x:.0f}{unit}"
    return f"{x:.2f}{unit}"


rows = []
problems = []


def verdict(ok):
    if ok is None:
        return "—"
    if smoke:
        return "(smoke)"
    return "pass" if ok else "FAIL"


def ratio_row(fig, label, metric, budget_text, test, unit="", against="da"):
    """`against`/baseline per round. `test` judges the ratio against a budget; with `test=None`
    (the noise floor: a second baseline, no budget) the row says how far its rounds strayed."""
    b, d = med(fig, "base", metric), med(fig, against, metric)
    if fig in failed or b is None or d is None:
        problems.append(f"{fig}: did not run")
        rows.append((label, fmt(b, unit), fmt(d, unit), "—", budget_text, "did not run"))
        return
    # The ratio is the median of each round's own ratio: a round measures both servers within a
    # minute of each other, so what the machine was doing then (a virtual machine's speed moves
    # by a quarter between rounds) cancels out; a ratio of the two medians would pair one
    # round's baseline with another round's doubleagent.
    bs, ds = values[(fig, "base", metric)], values[(fig, against, metric)]
    per_round = [dv / bv if bv else float("inf") for bv, dv in zip(bs, ds)]
    r = statistics.median(per_round)
    if test is not None:
        v = verdict(test(r))
    else:
        v = "(smoke)" if smoke else f"spread ±{max(abs(x - 1) for x in per_round) * 100:.0f} %"
    if len(per_round) > 1:
        v += " (rounds: " + ", ".join(f"{x:.2f}" for x in per_round) + ")"
    rows.append((label, fmt(b, unit), fmt(d, unit), f"{r:.3f}", budget_text, v))


def abs_row(fig, label, metric, budget_text, test, unit="", base_metric=None, extra=None):
    d = med(fig, "da", metric)
    b = med(fig, "base", base_metric or metric) if base_metric != "" else None
    if fig in failed or d is None:
        problems.append(f"{fig}: did not run")
        rows.append((label, fmt(b, unit), "—", "—", budget_text, "did not run"))
        return
    ok = test(d)
    if extra is not None:
        ok = ok and extra
    rows.append((label, fmt(b, unit), fmt(d, unit), "", budget_text, verdict(ok)))


def skipped(label, budget_text):
    rows.append((label, "—", "—", "—", budget_text, "skipped: agents not available"))


def present(fig):
    return any(k[0] == fig for k in values) or fig in failed


if present("throughput"):
    ratio_row("throughput", "throughput, recorded action (64 conns): rps", "rps", "≥ 0.75×", lambda r: r >= 0.75)
    ratio_row("throughput", "throughput, recorded action: p99", "p99_ms", "≤ 2×", lambda r: r <= 2.0, " ms")
if present("delayed"):
    ratio_row("delayed", "delayed responses (delay:100ms, many conns): rps", "rps", "≥ 0.95×", lambda r: r >= 0.95)
    ratio_row("delayed", "delayed responses: p99", "p99_ms", "≤ 1.1×", lambda r: r <= 1.1, " ms")
if present("replays"):
    ratio_row("replays", "replays (same key, 64 conns): rps", "rps", "≥ 0.85×", lambda r: r >= 0.85)
if present("noise"):
    ratio_row("noise", "noise floor: a second baseline against the first (replays load): rps", "rps",
              "≈ 1 (no budget)", None, against="base2")
if present("startup"):
    abs_row("startup", "start-up: process start → ready line", "ms", "≤ 10 ms median", lambda d: d <= 10, " ms")
if present("memory"):
    abs_row("memory", "ledger memory: RSS growth per recorded entry (steady state)", "bytes_per_entry",
            "≤ 300 B/entry", lambda d: d <= 300, " B")
    abs_row("memory", "ledger memory: the same from a fresh server (keys filling their bound)",
            "fresh_bytes_per_entry", "≤ 300 B/entry", lambda d: d <= 300, " B")
if present("soak"):
    first, last = med("soak", "da", "rss_first_kb"), med("soak", "da", "rss_last_kb")
    creep = med("soak", "da", "creep_pct")
    n = med("soak", "da", "requests")
    label = f"soak: RSS under sustained load, bounded ledger and keys ({fmt(n)} requests)"
    if creep is None:
        problems.append("soak: did not run")
        rows.append((label, "", "—", "", "flat (≤ 5% creep)", "did not run"))
    else:
        rows.append((label, "", f"{first / 1024:.0f} → {last / 1024:.0f} MB ({creep:+.1f}%)", "",
                     "flat (≤ 5% creep)", verdict(creep <= 5)))
if present("clock"):
    n = med("clock", "da", "n")
    abs_row("clock", f"manual clock: advance over {fmt(n)} pending delayed responses (in process)", "delivered_ms",
            "all delivered ≤ 1 s", lambda d: d <= 1000, " ms", base_metric="",
            extra=med("clock", "da", "complete"))
if present("clock_http"):
    n = med("clock_http", "da", "n")
    abs_row("clock_http", f"manual clock over HTTP: {fmt(n)} pending responses on {fmt(n)} connections",
            "delivered_ms", "all delivered ≤ 1 s", lambda d: d <= 1000, " ms", base_metric="",
            extra=med("clock_http", "da", "complete"))
if present("verify"):
    n = med("verify", "da", "entries")
    abs_row("verify", f"verify --ledger, {fmt(n)} entries (JSONL)", "seconds", "≤ 2 s", lambda d: d <= 2.0,
            " s", base_metric="")
if present("pertest"):
    n = med("pertest", "da", "n")
    abs_row("pertest", f"per-test cost: fresh session, one action, verdict, drop ({int(n or 0)} tests) over a bare request",
            "overhead_ms", "< 2 ms", lambda d: d < 2.0, " ms", base_metric="bare_ms")
# Each agent is "1" (measured), "0" (asked for, but its probe failed) or "off" (left out by --only).
if agents.get("a2a") == "1":
    ratio_row("a2a", "agents: A2A SendMessage round trips: rps", "rps", "≥ 0.5×", lambda r: r >= 0.5)
elif agents.get("a2a") != "off":
    skipped("agents: A2A SendMessage round trips: rps", "≥ 0.5×")
if agents.get("agui") == "1":
    ratio_row("agui", "agents: AG-UI run with one interrupt: rps", "rps", "≥ 0.5×", lambda r: r >= 0.5)
elif agents.get("agui") != "off":
    skipped("agents: AG-UI run with one interrupt: rps", "≥ 0.5×")
if agents.get("mcp") == "1":
    ratio_row("mcp", "MCP: tools/call round trips (2026-07-28): rps", "rps", "≥ 0.5×", lambda r: r >= 0.5)
elif agents.get("mcp") not in (None, "off"):
    skipped("MCP: tools/call round trips (2026-07-28): rps", "≥ 0.5×")

errors = [(f, med(f, k, "errors")) for (f, k, m) in values if m == "errors"]
errors = sorted({(f, e) for f, e in errors if e})

lines = [
    f"mode: {mode}, {rounds} round(s), medians (ratios: the median of the rounds' own); machine: {machine}",
    "",
    "| figure | baseline | doubleagent | ratio | budget | verdict |",
    "|---|---|---|---|---|---|",
]
lines += [f"| {' | '.join(r)} |" for r in rows]
if errors:
    lines.append("")
    lines.append("requests that failed or got a 4xx/5xx (median per run): "
                 + ", ".join(f"{f} {e:.0f}" for f, e in errors))
if problems:
    lines.append("")
    lines += [f"problem: {p}" for p in problems]
text = "\n".join(lines)
print(text)
if out_path:
    with open(out_path, "w") as f:
        f.write(text + "\n")
if smoke:
    # A plain closing line, as test runners print: figures that ran, failed to run, were skipped.
    ran = sum(1 for r in rows if r[-1] not in ("did not run",) and not r[-1].startswith("skipped"))
    skip = sum(1 for r in rows if r[-1].startswith("skipped"))
    print(f"\nbench-smoke: {ran} passed, {len(problems)} failed, {skip} skipped")
sys.exit(1 if problems else 0)
