//! Verification: rules that read a ledger (and the orchestrator's own claims) and name every
//! broken rule of `docs/rules.md`.
//!
//! Everything reads the serialized [`Entry`], so the same code verifies a live world
//! (`GET /_admin/verify`), a ledger over HTTP (`verify --url`) and an exported JSONL file
//! (`verify --ledger`, via [`read`]); admin declarations (revisions, claims) are entries too.
//! Each entry becomes a compact [`rows::Row`]; the ledger is indexed once ([`index`]); each rule
//! maps the index to [`Finding`]s, linear or `n log n` in the ledger. What could not be judged
//! (no claims submitted, entries evicted) is said in the report's notes.

use crate::ledger::Entry;

mod agents;
mod claims;
mod effects;
mod index;
mod keys;
mod outcomes;
mod read;
mod report;
mod revisions;
mod rows;

pub use claims::{ActionClaim, ActionOutcome, Claims, ClaimsError, TaskClaim, TaskOutcome};
pub use read::{parse_jsonl, parse_jsonl_with, LeanError, LeanLedger};
pub use report::{describe, Finding, Report, State};

use index::Index;
use rows::Ledger;

/// Verify a ledger, with optional extra claims (from a file) on top of any declared in it.
pub fn verify(entries: &[Entry], extra: Option<&Claims>) -> Report {
    verify_with(entries, extra, &Limits::default())
}

/// [`verify`] with other [`Limits`] (the tests' small ones take the threaded paths).
#[doc(hidden)]
pub fn verify_with(entries: &[Entry], extra: Option<&Claims>, limits: &Limits) -> Report {
    run(&Ledger::of_entries(entries), extra, limits)
}

/// The sizes at which verification cuts a text into pieces and takes a second thread. Tests
/// set them small, so that their ledgers are cut in many places and take both ways.
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// The size of a piece of JSONL text read at a time.
    pub piece: u64,
    /// Below this many rows the index is built and the rules run on one thread: a thread costs
    /// more than it saves.
    pub parallel_rows: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            piece: 8 << 20,
            parallel_rows: 50_000,
        }
    }
}

/// Run every rule over a ledger's rows. The rules of the ledger alone and those of the claims
/// run on two threads when the ledger is large; the findings come in the same order either way.
fn run(l: &Ledger, extra: Option<&Claims>, limits: &Limits) -> Report {
    let ix = Index::new(l, extra, limits.parallel_rows);
    let of_ledger = |ix: &Index| {
        let mut out = Vec::new();
        effects::acc1_duplicate_effects(ix, &mut out);
        effects::rec4_blind_retries(ix, &mut out);
        effects::rec4_recalls_holding_a_task(ix, &mut out);
        keys::rec4_key_reuse(ix, &mut out);
        keys::rec4_expired_keys(ix, &mut out);
        revisions::rec2_stale_admissions(ix, &mut out);
        agents::rec4_resent_messages(ix, &mut out);
        agents::rec6_messages_to_terminal_tasks(ix, &mut out);
        revisions::acc2_stale_results(ix, &mut out);
        out
    };
    let of_claims = |ix: &Index, claims: &Claims| {
        let mut out = Vec::new();
        outcomes::acc3_claims(ix, claims, &mut out);
        agents::rec3_cancel_claims(ix, claims, &mut out);
        revisions::acc2_adopted(ix, claims, &mut out);
        out
    };
    // The claim checks on another thread, when there is enough to check.
    let (mut findings, of_claims) = match &ix.claims {
        Some(claims) if l.rows.len() >= limits.parallel_rows => std::thread::scope(|s| {
            let other = s.spawn(|| of_claims(&ix, claims));
            let findings = of_ledger(&ix);
            // A panic there is a bug; checking again here gives the same findings.
            let other = other.join().unwrap_or_else(|_| of_claims(&ix, claims));
            (findings, Some(other))
        }),
        Some(claims) => (of_ledger(&ix), Some(of_claims(&ix, claims))),
        None => (of_ledger(&ix), None),
    };
    let mut notes = Vec::new();
    // Whether a skipped check had something to judge: then the verdict is incomplete.
    let mut incomplete = false;
    match of_claims {
        Some(more) => findings.extend(more),
        None => notes.push(claimless_note(&ix, &mut incomplete)),
    }
    notes.extend(unjudged_rows(l, &mut incomplete));
    if let Some(first) = l.rows.first().filter(|e| e.seq > 1) {
        incomplete = true;
        notes.push(format!(
            "the ledger is incomplete: it starts at entry #{} (the {} oldest were evicted, see --max-entries), so findings involving them cannot be seen",
            first.seq,
            first.seq - 1
        ));
    }
    let forgotten = l.rows.iter().filter(|e| e.key_forgotten);
    if forgotten.clone().next().is_some() {
        notes.push(format!(
            "{} executed again although retried with the same key: the service had forgotten the key to keep --max-keys, so they are not counted as the client's duplicates (ACC-1); raise --max-keys to judge them",
            seqs(forgotten.map(|e| e.seq), "action")
        ));
    }
    let lost = l.lost();
    if lost.clone().next().is_some() {
        incomplete = true;
        notes.push(format!(
            "the ledger is incomplete: {} lost from the journal at a restart (journal-lost, --journal-recover), so findings involving them cannot be seen",
            seqs(lost.map(|e| e.seq), "entry")
        ));
    }
    if ix.claims.is_some() && l.missing_entries() {
        notes.push("claims naming no entry left in the ledger were not judged (ACC-3): their entries may be among those missing".into());
    }
    findings.sort_by(|a, b| {
        a.entries
            .first()
            .cmp(&b.entries.first())
            .then(a.rule.cmp(&b.rule))
    });
    let state = match (findings.is_empty(), incomplete) {
        (false, _) => State::Findings,
        (true, true) => State::Incomplete,
        (true, false) => State::Clean,
    };
    Report {
        state,
        clean: findings.is_empty(),
        findings,
        entries: l.rows.len(),
        claims: ix.claims.is_some(),
        notes,
    }
}

/// The note that no claims were submitted, naming what went unjudged (sets `incomplete`).
fn claimless_note(ix: &Index, incomplete: &mut bool) -> String {
    let mut note = "no claims were submitted (POST /_admin/claims or --claims FILE): the ACC-3 \
                    checks of what the orchestrator reported were skipped"
        .to_string();
    let mut unjudged = Vec::new();
    let unlearned = outcomes::never_learned(ix);
    if !unlearned.is_empty() {
        unjudged.push(format!(
            "whether the outcome of {} the orchestrator never learned was reported as unknown (ACC-3)",
            seqs(unlearned.iter().map(|e| e.seq), "attempt")
        ));
    }
    // A2A cancels (`cancel`) and MCP cancellation notices (`cancelled`).
    let cancels = ix
        .rows()
        .filter(|e| e.agent_event("cancel").is_some() || e.agent_event("cancelled").is_some());
    if cancels.clone().next().is_some() {
        unjudged.push(format!(
            "what the orchestrator believed of {} (REC-3)",
            seqs(cancels.map(|e| e.seq), "cancel")
        ));
    }
    let superseded = revisions::superseded_tasks(ix);
    if !superseded.is_empty() {
        unjudged.push(format!(
            "whether the results of {} started under a superseded revision were adopted (ACC-2)",
            seqs(superseded.into_iter(), "task")
        ));
    }
    if !unjudged.is_empty() {
        *incomplete = true;
        note.push_str(&format!(
            ". Not judged for want of claims: {}",
            unjudged.join("; ")
        ));
    }
    note
}

/// Notes on entries a rule could not read (unordered revisions, intents not read, non-JSON
/// bodies): `incomplete`.
fn unjudged_rows(l: &Ledger, incomplete: &mut bool) -> Vec<String> {
    let mut notes = Vec::new();
    let unordered = l.rows.iter().filter(|e| e.unordered_revision);
    if unordered.clone().next().is_some() {
        notes.push(format!(
            "{} carry a revision that cannot be ordered (not a whole number like 1, 1.0 or \"1\"): REC-2, ACC-2 and ACC-3's check of effects under a superseded revision did not judge them",
            seqs(unordered.map(|e| e.seq), "entry")
        ));
    }
    let unread = l.rows.iter().filter(|e| e.intent_unread);
    if unread.clone().next().is_some() {
        notes.push(format!(
            "the intents of {} could not be read (their bodies are not JSON, or hold none of the intent's values): ACC-1 and REC-4 could not judge them, and did not take them for one repeated action",
            seqs(unread.map(|e| e.seq), "action")
        ));
    }
    // A text body with an intent recorded all the same (a hand-made ledger).
    let text = l.rows.iter().filter(|e| e.body_unread && !e.intent_unread);
    if text.clone().next().is_some() {
        notes.push(format!(
            "the bodies of {} are not JSON, so their intents could not be read: ACC-1 and REC-4 compared them by their recorded intents only",
            seqs(text.map(|e| e.seq), "action")
        ));
    }
    *incomplete |= !notes.is_empty();
    notes
}

/// `2 attempts (#3, #5)`; the first ten seqs, then how many more.
fn seqs(seqs: impl Iterator<Item = u64>, what: &str) -> String {
    let all: Vec<u64> = seqs.collect();
    let mut list: Vec<String> = all.iter().take(10).map(|s| format!("#{s}")).collect();
    if all.len() > 10 {
        list.push(format!("and {} more", all.len() - 10));
    }
    let plural = match (all.len(), what) {
        (1, _) => what.to_string(),
        (_, "entry") => "entries".to_string(),
        _ => format!("{what}s"),
    };
    format!("{} {plural} ({})", all.len(), list.join(", "))
}
