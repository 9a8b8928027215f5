//! The ledger as the rules read it: one [`Row`] per [`Entry`], made in one place ([`Row::new`]),
//! keeping only what some rule reads. The intent is kept as its canonical JSON text (two intents
//! are the same action exactly when those texts are equal, so `1` is not `1.0`); the rest of the
//! entry is dropped as the row is made, so a million entries read from a file never exist at once.

use std::hash::BuildHasher;

use serde_json::Value;

use crate::hash::FastState;
use crate::ledger::{Delivery, Disposition, Entry};
use crate::revision::Revision;

/// One ledger entry, as verification reads it.
pub(super) struct Row {
    pub seq: u64,
    pub replay_of: Option<u64>,
    /// The revision's place in the order of revisions ([`Revision::ordinal`]); `None` without a
    /// revision or with one that cannot be ordered (see `unordered`).
    pub revision: Option<i64>,
    pub service: Box<str>,
    pub route: Option<Box<str>>,
    pub actor: Option<Box<str>>,
    pub event: Option<Box<str>>,
    pub key: Option<Box<str>>,
    pub work_id: Option<Box<str>>,
    pub action_id: Option<Box<str>>,
    pub intent: Option<String>,
    /// Hashes of `intent` and `key` (0 without one), made with the ledger's [`Ledger::hash`]
    /// where rows are made (in parallel, while the text is in cache).
    pub intent_hash: u64,
    pub key_hash: u64,
    pub detail: Option<Value>,
    /// Where the full entry is: its line's byte offset in a JSONL text, or its index in a slice.
    pub at: u64,
    pub disposition: Disposition,
    pub delivery: Delivery,
    pub applied: bool,
    pub executed_after_expiry: bool,
    /// Executed again because the service had forgotten its key (`--max-keys`).
    pub key_forgotten: bool,
    /// Its fate answered with an error although the effect happened (`error-after-apply:*`).
    pub error_after_apply: bool,
    /// The status the client was answered with, if any.
    pub status: Option<u16>,
    /// It carries a revision that cannot be ordered (`"rev-b"`): the revision rules skip it.
    pub unordered_revision: bool,
    /// An execution whose body was recorded as text, not JSON: its intent could not be read.
    pub body_unread: bool,
    /// An execution with no intent that could be read (see [`nothing_read`]): no rule groups it
    /// with any other, and the verdict says it was not judged.
    pub intent_unread: bool,
}

/// An intent none of whose values were found (every pointer `null`, as recorded for a body with
/// no JSON model) is no intent: such actions are not the same action as one another.
fn nothing_read(intent: &Option<Value>) -> bool {
    matches!(intent, Some(Value::Object(m)) if !m.is_empty() && m.values().all(Value::is_null))
}

impl Row {
    /// The row of an entry found at `at`.
    pub fn new(e: Entry, at: u64, hash: &FastState) -> Row {
        let unread = nothing_read(&e.intent);
        let intent = e.intent.as_ref().filter(|_| !unread).map(Value::to_string);
        let unordered_revision = e.revision.as_ref().is_some_and(|r| r.ordinal().is_none());
        let executed = e.disposition == Disposition::Executed;
        let body_unread = executed && matches!(&e.body, Value::String(s) if !s.is_empty());
        let intent_unread = executed && (unread || (body_unread && intent.is_none()));
        Row {
            seq: e.seq,
            replay_of: e.replay_of,
            revision: e.revision.as_ref().and_then(Revision::ordinal),
            intent_hash: intent.as_deref().map_or(0, |t| text_hash(hash, t)),
            key_hash: e
                .idempotency_key
                .as_deref()
                .map_or(0, |k| text_hash(hash, k)),
            intent,
            key: boxed(e.idempotency_key),
            service: e.service.into_boxed_str(),
            route: boxed(e.route),
            actor: boxed(e.actor),
            event: boxed(e.event),
            work_id: boxed(e.work_id),
            action_id: boxed(e.action_id),
            detail: e.detail,
            at,
            disposition: e.disposition,
            delivery: e.response.delivery,
            status: e.response.status,
            applied: e.applied,
            executed_after_expiry: e.executed_after_expiry,
            key_forgotten: e.key_forgotten,
            error_after_apply: e.fate.is_some_and(|f| f.starts_with("error-after-apply")),
            unordered_revision,
            body_unread,
            intent_unread,
        }
    }

    pub fn key(&self) -> Option<&str> {
        self.key.as_deref()
    }

    pub fn work_id(&self) -> Option<&str> {
        self.work_id.as_deref()
    }

    pub fn intent(&self) -> Option<&str> {
        self.intent.as_deref()
    }

    pub fn route(&self) -> Option<&str> {
        self.route.as_deref()
    }

    /// The route for comparing intents: none is the same as `""`.
    pub fn route_key(&self) -> &str {
        self.route().unwrap_or("")
    }

    pub fn actor(&self) -> Option<&str> {
        self.actor.as_deref()
    }

    /// An outside client's request (not an agent's own call).
    pub fn by_client(&self) -> bool {
        self.actor.is_none()
    }

    pub fn event(&self) -> Option<&str> {
        self.event.as_deref()
    }

    pub fn intent_text(&self) -> &str {
        self.intent().unwrap_or("(no intent)")
    }

    /// The text at `detail.k`.
    pub fn detail_str(&self, k: &str) -> Option<&str> {
        self.detail.as_ref().and_then(|d| str_field(d, k))
    }

    /// The task an agent entry is about: `detail.task_id`, else the entry's work id.
    pub fn task_of(&self) -> Option<&str> {
        self.detail_str("task_id").or(self.work_id())
    }

    /// An execution whose outcome the client could not know from what it received.
    pub fn uncertain(&self) -> bool {
        self.disposition == Disposition::Executed
            && (matches!(
                self.delivery,
                Delivery::Dropped
                    | Delivery::Reset
                    | Delivery::Hung
                    | Delivery::Pending
                    | Delivery::Abandoned
            ) || self.error_after_apply)
    }

    /// The detail of an agent entry for `event`.
    pub fn agent_event(&self, event: &str) -> Option<&Value> {
        (self.disposition == Disposition::Agent && self.event() == Some(event))
            .then_some(self.detail.as_ref())
            .flatten()
    }

    /// Why [`Row::uncertain`] holds, in words.
    pub fn why_uncertain(&self) -> &'static str {
        match self.delivery {
            Delivery::Dropped => "its response was dropped",
            Delivery::Reset => "its connection was reset",
            Delivery::Hung => "its response never came",
            Delivery::Pending => "its response was still pending",
            Delivery::Abandoned => "its client went away before the response was sent",
            Delivery::Sent => "it answered with an error although the effect happened",
        }
    }
}

/// A string as a row keeps it (16 bytes, not 24: a million rows are scanned a dozen times).
fn boxed(s: Option<String>) -> Option<Box<str>> {
    s.map(String::into_boxed_str)
}

pub(super) fn str_field<'v>(v: &'v Value, k: &str) -> Option<&'v str> {
    v.get(k).and_then(Value::as_str)
}

/// The hash of a string as stored in [`Row::intent_hash`] and [`Row::key_hash`]. The length
/// goes first: a hasher that pads a string's last word with its length would otherwise hash
/// `k-10000` and `k-100008` the same, and numbering keys would keep meeting collisions.
pub(super) fn text_hash(state: &FastState, text: &str) -> u64 {
    state.hash_one((text.len(), text))
}

/// The rows of a ledger, in ledger order, in the pieces they were read in (concatenating them
/// would copy a few hundred MB for nothing).
pub(super) struct Rows {
    chunks: Vec<Vec<Row>>,
    /// Position of each chunk's first row.
    starts: Vec<usize>,
    len: usize,
}

impl Rows {
    pub fn new(chunks: Vec<Vec<Row>>) -> Self {
        let chunks: Vec<Vec<Row>> = chunks.into_iter().filter(|c| !c.is_empty()).collect();
        let mut starts = Vec::with_capacity(chunks.len());
        let mut len = 0;
        for c in &chunks {
            starts.push(len);
            len += c.len();
        }
        Rows {
            chunks,
            starts,
            len,
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Row> + Clone {
        self.chunks.iter().flatten()
    }

    /// The row at a position (`< len`).
    pub fn get(&self, i: usize) -> &Row {
        let c = self.starts.partition_point(|&s| s <= i) - 1;
        &self.chunks[c][i - self.starts[c]]
    }

    pub fn first(&self) -> Option<&Row> {
        self.chunks.first().and_then(|c| c.first())
    }
}

/// A ledger ready for the rules: its rows, and the hasher their hashes were made with.
pub(super) struct Ledger {
    pub rows: Rows,
    pub hash: FastState,
}

impl Ledger {
    /// The placeholders of entries whose journal lines were lost (`--journal-recover`).
    pub fn lost(&self) -> impl Iterator<Item = &Row> + Clone {
        self.rows.iter().filter(|e| {
            e.disposition == Disposition::Declaration && e.event() == Some("journal-lost")
        })
    }

    /// Whether entries are missing (evicted, or lost from the journal): a claim naming none of
    /// the entries left cannot be judged.
    pub fn missing_entries(&self) -> bool {
        self.rows.first().is_some_and(|e| e.seq > 1) || self.lost().next().is_some()
    }

    /// Rows over full entries (`/_admin/verify`, `run -- CMD`, hand-made slices of entries).
    pub fn of_entries(entries: &[Entry]) -> Self {
        let hash = FastState::default();
        let rows = entries
            .iter()
            .enumerate()
            .map(|(i, e)| Row::new(e.clone(), i as u64, &hash))
            .collect();
        Ledger {
            rows: Rows::new(vec![rows]),
            hash,
        }
    }
}
