//! The verdict: [`Finding`]s (one broken rule each: its id, what happened in one line, the ledger
//! seqs involved, what the orchestrator should have done), the [`Report`] over a ledger with its
//! caveats, and the report as text ([`Report::human`], each entry described by [`describe`]).

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::hash::FastMap as HashMap;
use crate::ledger::{Delivery, Disposition, Entry};

/// One broken rule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub rule: String,
    pub summary: String,
    /// Ledger seqs involved, in order.
    pub entries: Vec<u64>,
    /// What the orchestrator should have done.
    pub hint: String,
}

/// What a verdict says (ACC-3 of the verifier itself: what it could not judge, it says).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// No findings, and every check judged everything it reads.
    #[default]
    Clean,
    /// At least one broken rule (the findings stand whatever could not be judged).
    Findings,
    /// No findings, but some check could not judge part of the ledger (the notes say why).
    Incomplete,
}

/// The verdict over a ledger.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    #[serde(default)]
    pub state: State,
    /// No findings (also when `state` is incomplete).
    pub clean: bool,
    pub findings: Vec<Finding>,
    /// Number of ledger entries read.
    pub entries: usize,
    /// Whether any claims were submitted (the claim-based ACC-3 checks need them).
    pub claims: bool,
    /// Caveats about the verdict: every check skipped, and why.
    pub notes: Vec<String>,
}

impl Report {
    /// Readable without the docs: rule, what happened in order, what was expected.
    pub fn human(&self, entries: &[Entry]) -> String {
        let by_seq: HashMap<u64, &Entry> = entries.iter().map(|e| (e.seq, e)).collect();
        let described: HashMap<u64, Described> = (self.findings.iter())
            .flat_map(|f| &f.entries)
            .filter_map(|seq| Some((*seq, Described::of(by_seq.get(seq)?))))
            .collect();
        self.human_by(&described)
    }

    /// [`Report::human`], with the entries the findings name described (a seq not there: not in
    /// the ledger).
    pub(super) fn human_by(&self, described: &HashMap<u64, Described>) -> String {
        let n = self.entries;
        let mut out = if self.state == State::Incomplete {
            format!("doubleagent verify: incomplete: no findings over {n} ledger entries, but not everything could be judged (see the notes)\n")
        } else if self.clean {
            format!("doubleagent verify: no findings over {n} ledger entries\n")
        } else {
            let found = self.findings.len();
            format!("doubleagent verify: {found} finding(s) over {n} ledger entries\n")
        };
        // The time of day alone, unless the entries named are not all on one day (a manual
        // clock advanced 24h would otherwise read as seconds apart).
        let mut days = described.values().map(|d| &d.day);
        let dated = days.next().is_some_and(|d| days.any(|o| o != d));
        for f in &self.findings {
            let _ = writeln!(out, "\n{}  {}", f.rule, f.summary);
            for &seq in &f.entries {
                let d = described
                    .get(&seq)
                    .map_or_else(|| format!("#{seq}"), |d| d.line(dated));
                let _ = writeln!(out, "    {d}");
            }
            let _ = writeln!(out, "    expected: {}", f.hint);
        }
        for n in &self.notes {
            let _ = writeln!(out, "\nnote: {n}");
        }
        out
    }
}

/// `#3 12:00:01.250 POST /payments/v1/transfers key=k-2 rev=1 → executed, applied, 201`
pub fn describe(e: &Entry) -> String {
    Described::of(e).line(false)
}

/// An entry as the text report names it, its day apart: shown only when the entries named are
/// not all on one day.
pub(super) struct Described {
    seq: u64,
    /// `2026-12-06`.
    day: String,
    /// From the time of day on: `12:00:01.250 POST ...`.
    rest: String,
}

impl Described {
    pub(super) fn of(e: &Entry) -> Described {
        let at = &e.received_at;
        Described {
            seq: e.seq,
            day: at.get(..10).unwrap_or_default().to_string(),
            rest: rest(e, at.get(11..23).unwrap_or(at)),
        }
    }

    /// `#3 12:00:01.250 ...`, or `#3 2026-12-06 12:00:01.250 ...` when `dated`.
    fn line(&self, dated: bool) -> String {
        match (&self.day, dated) {
            (day, true) if !day.is_empty() => format!("#{} {day} {}", self.seq, self.rest),
            _ => format!("#{} {}", self.seq, self.rest),
        }
    }
}

/// What [`describe`] says of `e` from its `time` on.
fn rest(e: &Entry, time: &str) -> String {
    let mut s = format!("{time} ");
    if e.disposition == Disposition::Agent || e.disposition == Disposition::Declaration {
        let _ = write!(s, "{} {}", e.service, e.event.as_deref().unwrap_or("event"));
        if let Some(d) = &e.detail {
            let _ = write!(s, " {d}");
        }
        return s;
    }
    let _ = write!(s, "{} /{}{}", e.method, e.service, e.path);
    if let Some(a) = &e.actor {
        let _ = write!(s, " by {a}");
    }
    if let Some(k) = &e.idempotency_key {
        let _ = write!(s, " key={k}");
    }
    if let Some(r) = &e.revision {
        let _ = write!(s, " rev={r}");
    }
    let disp = e.disposition.as_str();
    let _ = write!(s, " → {disp}");
    if e.disposition == Disposition::Executed {
        if let Some(f) = &e.fate {
            let _ = write!(s, " ({f})");
        }
        s.push_str(if e.applied {
            ", applied"
        } else {
            ", not applied"
        });
    }
    let _ = match (e.response.delivery, e.response.status) {
        (Delivery::Sent, Some(st)) => write!(s, ", {st}"),
        (d, _) => write!(s, ", response {}", d.as_str()),
    };
    s
}
