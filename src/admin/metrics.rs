//! `GET /_admin/metrics`: the server's counters in the Prometheus text exposition format.
//!
//! Request counts come from each world's ledger counters plus those of worlds already retired
//! (reset, replaced, dropped), so every counter only ever goes up.

use std::fmt::Write as _;

use crate::ledger::Disposition;
use crate::world::Host;

/// Escape a label value (`\`, `"`, newline).
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

pub fn render(host: &Host) -> String {
    let (counts, evicted, dropped) = host.totals();
    let mut out = String::new();
    let _ = writeln!(out, "# HELP doubleagent_requests_total Requests recorded, by service (or agent), route, disposition and fate.");
    let _ = writeln!(out, "# TYPE doubleagent_requests_total counter");
    let (mut replays, mut conflicts) = (0u64, 0u64);
    for (k, n) in counts.sorted() {
        match k.disposition {
            Disposition::Replayed => replays += n,
            Disposition::Conflict => conflicts += n,
            _ => {}
        }
        let _ = writeln!(
            out,
            "doubleagent_requests_total{{service=\"{}\",route=\"{}\",disposition=\"{}\",fate=\"{}\"}} {n}",
            label(&k.service),
            label(&k.route),
            k.disposition.as_str(),
            label(&k.fate)
        );
    }
    let worlds = host.worlds();
    let (mut entries, mut keys) = (0usize, 0usize);
    for w in &worlds {
        let st = w.lock();
        entries += st.ledger.len();
        keys += st.keys.len();
    }
    let journal = host.journal_status();
    let sessions = host.session_names().len() as u64;
    // name, type, help, value (the journal's only when there is a journal)
    #[rustfmt::skip]
    let metrics = [
        ("doubleagent_replays_total", "counter", "Requests answered from an idempotency key's stored response.", Some(replays)),
        ("doubleagent_conflicts_total", "counter", "Requests refused because their key's first request was still in flight.", Some(conflicts)),
        ("doubleagent_evictions_total", "counter", "Ledger entries evicted to respect --max-entries.", Some(evicted)),
        ("doubleagent_journal_failing", "gauge", "1 while the journal's last write failed (requests are answered 503).", journal.as_ref().map(|j| u64::from(j.failing))),
        ("doubleagent_journal_write_failures_total", "counter", "Journal writes that failed (a full disk, an I/O error).", journal.as_ref().map(|j| j.failed_writes)),
        ("doubleagent_sessions", "gauge", "Named sessions alive.", Some(sessions)),
        ("doubleagent_sessions_dropped_total", "counter", "Named sessions ended (idle, dropped).", Some(dropped)),
        ("doubleagent_ledger_entries", "gauge", "Ledger entries held, all sessions.", Some(entries as u64)),
        ("doubleagent_idempotency_keys", "gauge", "Idempotency keys held, all sessions.", Some(keys as u64)),
    ];
    for (name, kind, help, v) in metrics {
        if let Some(v) = v {
            let _ = writeln!(
                out,
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {v}"
            );
        }
    }
    let _ = writeln!(
        out,
        "# HELP doubleagent_findings Findings per rule in the latest verification."
    );
    let _ = writeln!(out, "# TYPE doubleagent_findings gauge");
    for (rule, n) in host.last_findings() {
        let _ = writeln!(out, "doubleagent_findings{{rule=\"{}\"}} {n}", label(&rule));
    }
    out
}
