//! The ledger as the checkers read it: one compact [`Row`] per entry, holding only what some
//! checker reads, with the strings borrowed from wherever the ledger came from (a JSONL text or
//! a slice of [`Entry`]s) and the few-valued ones (service, route, actor, event, fate) numbered.
//!
//! A full [`Entry`] parsed from JSON is a tree of a dozen heap strings and two `Value`s; a million
//! of them are gigabytes to allocate, fill and free, which was most of what `verify` cost. A row
//! is a couple of hundred bytes with, in the common case, a single allocation (its intent).
//!
//! Intents are kept as their canonical JSON text, the one `Value::to_string` writes: two intents
//! are the same action exactly when those texts are equal (numbers included: `1` is not `1.0`).

use std::borrow::Cow;
use std::hash::BuildHasher;
use std::sync::{Mutex, PoisonError};

use serde_json::Value;

use crate::hash::{FastMap, FastState};
use crate::ledger::{Delivery, Disposition, Entry};

/// A number standing for a string that many rows share (see [`Symbols`]).
pub(super) type Sym = u32;

/// The absent symbol (a `None` field).
pub(super) const NONE: Sym = Sym::MAX;

/// One ledger entry, as verification reads it.
pub(super) struct Row<'a> {
    pub seq: u64,
    pub replay_of: Option<u64>,
    /// The revision if it is an integer (what `Value::as_i64` gives), else `None`.
    pub revision: Option<i64>,
    pub key: Option<Cow<'a, str>>,
    pub work_id: Option<Cow<'a, str>>,
    pub action_id: Option<Cow<'a, str>>,
    /// The intent's canonical JSON text.
    pub intent: Option<Cow<'a, str>>,
    /// Hashes of `intent` and `key` (0 without one), computed where rows are made (in
    /// parallel, while the text is in cache): numbering and matching them later need not read
    /// the strings again, scattered over the whole text.
    pub intent_hash: u64,
    pub key_hash: u64,
    pub detail: Option<Cow<'a, Value>>,
    /// Where the full entry is: the byte offset of its line in a JSONL text, or its position in
    /// a slice of entries.
    pub at: usize,
    pub service: Sym,
    pub route: Sym,
    pub actor: Sym,
    pub event: Sym,
    pub fate: Sym,
    pub disposition: Disposition,
    pub delivery: Delivery,
    pub applied: bool,
    pub executed_after_expiry: bool,
}

/// The hash of a string as stored in [`Row::intent_hash`] and [`Row::key_hash`]. The length
/// goes first: the fast hasher pads a string's last word with its length, so without it
/// `k-10000` and `k-100008` hash the same, and numbering keys would keep meeting collisions.
pub(super) fn text_hash(state: &FastState, text: &str) -> u64 {
    state.hash_one((text.len(), text))
}

/// The strings numbered by [`Sym`]s, each once.
#[derive(Default)]
pub(super) struct Symbols<'a> {
    names: Vec<Cow<'a, str>>,
    ids: FastMap<Cow<'a, str>, Sym>,
}

impl<'a> Symbols<'a> {
    pub fn intern(&mut self, s: Cow<'a, str>) -> Sym {
        if let Some(&id) = self.ids.get(&*s) {
            return id;
        }
        let id = self.names.len() as Sym;
        self.names.push(s.clone());
        self.ids.insert(s, id);
        id
    }

    /// The string a symbol stands for; `None` for [`NONE`].
    pub fn name(&self, s: Sym) -> Option<&str> {
        self.names.get(s as usize).map(|n| &**n)
    }
}

/// Which field a string is interned for: each keeps its last value, since consecutive rows
/// mostly repeat it (same service, same route, same fate).
#[derive(Clone, Copy)]
pub(super) enum Field {
    Service,
    Route,
    Actor,
    Event,
    Fate,
}

/// One thread's way into shared [`Symbols`]: what it has seen is remembered locally, so the
/// shared table (behind a lock) is reached once per distinct string per thread.
pub(super) struct Interner<'a, 'g> {
    shared: &'g Mutex<Symbols<'a>>,
    seen: FastMap<Cow<'a, str>, Sym>,
    last: [Option<(Cow<'a, str>, Sym)>; 5],
}

impl<'a, 'g> Interner<'a, 'g> {
    pub fn new(shared: &'g Mutex<Symbols<'a>>) -> Self {
        Interner {
            shared,
            seen: FastMap::default(),
            last: [None, None, None, None, None],
        }
    }

    pub fn intern(&mut self, field: Field, s: Cow<'a, str>) -> Sym {
        let last = &mut self.last[field as usize];
        if let Some((text, id)) = last {
            if **text == *s {
                return *id;
            }
        }
        let id = match self.seen.get(&*s) {
            Some(&id) => id,
            None => {
                let id = self
                    .shared
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .intern(s.clone());
                self.seen.insert(s.clone(), id);
                id
            }
        };
        *last = Some((s, id));
        id
    }

    pub fn intern_opt(&mut self, field: Field, s: Option<Cow<'a, str>>) -> Sym {
        s.map_or(NONE, |s| self.intern(field, s))
    }
}

/// The rows of a ledger, in ledger order, in the pieces they were parsed in (concatenating
/// them would copy a few hundred MB for nothing).
pub(super) struct Rows<'a> {
    chunks: Vec<Vec<Row<'a>>>,
    /// Position of each chunk's first row.
    starts: Vec<usize>,
    len: usize,
}

impl<'a> Rows<'a> {
    pub fn new(chunks: Vec<Vec<Row<'a>>>) -> Self {
        let chunks: Vec<Vec<Row<'a>>> = chunks.into_iter().filter(|c| !c.is_empty()).collect();
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

    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Row<'a>> + Clone {
        self.chunks.iter().flatten()
    }

    /// The row at a position (`< len`).
    pub fn get(&self, i: usize) -> &Row<'a> {
        let c = self.starts.partition_point(|&s| s <= i) - 1;
        &self.chunks[c][i - self.starts[c]]
    }

    pub fn first(&self) -> Option<&Row<'a>> {
        self.chunks.first().and_then(|c| c.first())
    }
}

/// A ledger ready for the checkers.
pub(super) struct Ledger<'a> {
    pub rows: Rows<'a>,
    pub syms: Symbols<'a>,
    /// The symbol of `""`: a missing route counts as an empty one where intents are compared.
    pub empty: Sym,
}

impl<'a> Ledger<'a> {
    pub fn new(rows: Rows<'a>, mut syms: Symbols<'a>) -> Self {
        let empty = syms.intern(Cow::Borrowed(""));
        Ledger { rows, syms, empty }
    }

    /// Rows over full entries, borrowing their strings (the live paths: `/_admin/verify`,
    /// `run -- CMD`, and every hand-made slice of entries).
    pub fn of_entries(entries: &'a [Entry]) -> Self {
        let shared = Mutex::new(Symbols::default());
        let state = FastState::default();
        let mut syms = Interner::new(&shared);
        let rows = entries
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let intent = e.intent.as_ref().map(|v| Cow::Owned(v.to_string()));
                let str = |s: &'a Option<String>| s.as_deref().map(Cow::Borrowed);
                Row {
                    seq: e.seq,
                    replay_of: e.replay_of,
                    revision: e.revision.as_ref().and_then(Value::as_i64),
                    key: str(&e.idempotency_key),
                    work_id: str(&e.work_id),
                    action_id: str(&e.action_id),
                    intent_hash: intent.as_deref().map_or(0, |t| text_hash(&state, t)),
                    key_hash: e
                        .idempotency_key
                        .as_deref()
                        .map_or(0, |k| text_hash(&state, k)),
                    intent,
                    detail: e.detail.as_ref().map(Cow::Borrowed),
                    at: i,
                    service: syms.intern(Field::Service, Cow::Borrowed(&e.service)),
                    route: syms.intern_opt(Field::Route, str(&e.route)),
                    actor: syms.intern_opt(Field::Actor, str(&e.actor)),
                    event: syms.intern_opt(Field::Event, str(&e.event)),
                    fate: syms.intern_opt(Field::Fate, str(&e.fate)),
                    disposition: e.disposition,
                    delivery: e.response.delivery,
                    applied: e.applied,
                    executed_after_expiry: e.executed_after_expiry,
                }
            })
            .collect();
        drop(syms);
        let syms = shared.into_inner().unwrap_or_else(PoisonError::into_inner);
        Ledger::new(Rows::new(vec![rows]), syms)
    }

    pub fn name(&self, s: Sym) -> Option<&str> {
        self.syms.name(s)
    }

    /// The route for comparing intents: none is the same as `""`.
    pub fn route_key(&self, r: &Row) -> Sym {
        if r.route == NONE {
            self.empty
        } else {
            r.route
        }
    }
}
