//! The ledger as the checkers read it: one compact [`Row`] per entry, holding only what some
//! checker reads, with the strings copied into a few large text stores (keys, work ids, action
//! ids, intents) or numbered (service, route, actor, event, fate: few distinct values).
//!
//! A full [`Entry`] parsed from JSON is a tree of a dozen heap strings and two `Value`s; a million
//! of them are gigabytes to allocate, fill and free, which was most of what `verify` cost. A row
//! is under two hundred bytes and allocates nothing of its own in the common case; and since it
//! borrows nothing from the JSONL text, that text can be read a piece at a time into one reused
//! buffer instead of being held whole (faulting in 600 MB of fresh pages cost a third of a
//! second).
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

/// A string in a [`Ledger`]'s text stores (or none).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct Text {
    store: u32,
    len: u32,
    start: u64,
}

impl Text {
    pub const NONE: Text = Text {
        store: 0,
        len: u32::MAX,
        start: 0,
    };

    pub fn is_some(self) -> bool {
        self.len != u32::MAX
    }
}

/// Where the strings of some rows are copied: one per piece of a JSONL text, numbered.
pub(super) struct Store {
    id: u32,
    pub buf: String,
}

impl Store {
    pub fn new(id: u32) -> Store {
        Store {
            id,
            buf: String::new(),
        }
    }

    pub fn put(&mut self, s: &str) -> Text {
        let start = self.buf.len() as u64;
        // A string of 4 GiB or more would not fit a `Text`; a ledger line that long is no
        // ledger entry anyone writes, so it is cut rather than refused.
        let s = &s[..floor_char_boundary(s, u32::MAX as usize - 1)];
        self.buf.push_str(s);
        Text {
            store: self.id,
            len: s.len() as u32,
            start,
        }
    }

    pub fn put_opt(&mut self, s: Option<&str>) -> Text {
        s.map_or(Text::NONE, |s| self.put(s))
    }
}

fn floor_char_boundary(s: &str, at: usize) -> usize {
    if at >= s.len() {
        return s.len();
    }
    (0..=at).rev().find(|i| s.is_char_boundary(*i)).unwrap_or(0)
}

/// One ledger entry, as verification reads it.
pub(super) struct Row<'a> {
    pub seq: u64,
    pub replay_of: Option<u64>,
    /// The revision if it is an integer (what `Value::as_i64` gives), else `None`.
    pub revision: Option<i64>,
    pub key: Text,
    pub work_id: Text,
    pub action_id: Text,
    /// The intent's canonical JSON text.
    pub intent: Text,
    /// Hashes of `intent` and `key` (0 without one), computed where rows are made (in
    /// parallel, while the text is in cache): numbering and matching them later need not read
    /// the strings again.
    pub intent_hash: u64,
    pub key_hash: u64,
    pub detail: Option<Cow<'a, Value>>,
    /// Where the full entry is: the byte offset of its line in a JSONL text, or its position in
    /// a slice of entries.
    pub at: u64,
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
pub(super) struct Symbols {
    names: Vec<String>,
    ids: FastMap<String, Sym>,
}

impl Symbols {
    pub fn intern(&mut self, s: &str) -> Sym {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        let id = self.names.len() as Sym;
        self.names.push(s.to_string());
        self.ids.insert(s.to_string(), id);
        id
    }

    /// The string a symbol stands for; `None` for [`NONE`].
    pub fn name(&self, s: Sym) -> Option<&str> {
        self.names.get(s as usize).map(String::as_str)
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
pub(super) struct Interner<'g> {
    shared: &'g Mutex<Symbols>,
    seen: FastMap<String, Sym>,
    last: [(String, Sym); 5],
}

impl<'g> Interner<'g> {
    pub fn new(shared: &'g Mutex<Symbols>) -> Self {
        let none = || (String::new(), NONE);
        Interner {
            shared,
            seen: FastMap::default(),
            last: [none(), none(), none(), none(), none()],
        }
    }

    pub fn intern(&mut self, field: Field, s: &str) -> Sym {
        let (text, id) = &mut self.last[field as usize];
        if *id != NONE && text == s {
            return *id;
        }
        let sym = match self.seen.get(s) {
            Some(&sym) => sym,
            None => {
                let sym = self
                    .shared
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .intern(s);
                self.seen.insert(s.to_string(), sym);
                sym
            }
        };
        text.clear();
        text.push_str(s);
        *id = sym;
        sym
    }

    pub fn intern_opt(&mut self, field: Field, s: Option<&str>) -> Sym {
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
    pub syms: Symbols,
    /// The text stores, by id.
    pub texts: Vec<String>,
    /// The symbol of `""`: a missing route counts as an empty one where intents are compared.
    pub empty: Sym,
}

impl<'a> Ledger<'a> {
    pub fn new(rows: Rows<'a>, mut syms: Symbols, stores: Vec<Store>) -> Self {
        let empty = syms.intern("");
        let mut texts: Vec<String> = Vec::new();
        for s in stores {
            let id = s.id as usize;
            if texts.len() <= id {
                texts.resize_with(id + 1, String::new);
            }
            texts[id] = s.buf;
        }
        Ledger {
            rows,
            syms,
            texts,
            empty,
        }
    }

    /// Rows over full entries (the live paths: `/_admin/verify`, `run -- CMD`, and every
    /// hand-made slice of entries).
    pub fn of_entries(entries: &'a [Entry]) -> Self {
        let shared = Mutex::new(Symbols::default());
        let state = FastState::default();
        let mut syms = Interner::new(&shared);
        let mut store = Store::new(0);
        let rows = entries
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let intent = e.intent.as_ref().map(Value::to_string);
                let intent = intent.as_deref();
                let key = e.idempotency_key.as_deref();
                Row {
                    seq: e.seq,
                    replay_of: e.replay_of,
                    revision: e.revision.as_ref().and_then(Value::as_i64),
                    key: store.put_opt(key),
                    work_id: store.put_opt(e.work_id.as_deref()),
                    action_id: store.put_opt(e.action_id.as_deref()),
                    intent: store.put_opt(intent),
                    intent_hash: intent.map_or(0, |t| text_hash(&state, t)),
                    key_hash: key.map_or(0, |k| text_hash(&state, k)),
                    detail: e.detail.as_ref().map(Cow::Borrowed),
                    at: i as u64,
                    service: syms.intern(Field::Service, &e.service),
                    route: syms.intern_opt(Field::Route, e.route.as_deref()),
                    actor: syms.intern_opt(Field::Actor, e.actor.as_deref()),
                    event: syms.intern_opt(Field::Event, e.event.as_deref()),
                    fate: syms.intern_opt(Field::Fate, e.fate.as_deref()),
                    disposition: e.disposition,
                    delivery: e.response.delivery,
                    applied: e.applied,
                    executed_after_expiry: e.executed_after_expiry,
                }
            })
            .collect();
        drop(syms);
        let syms = shared.into_inner().unwrap_or_else(PoisonError::into_inner);
        Ledger::new(Rows::new(vec![rows]), syms, vec![store])
    }

    pub fn name(&self, s: Sym) -> Option<&str> {
        self.syms.name(s)
    }

    /// A string of the text stores.
    pub fn text(&self, t: Text) -> Option<&str> {
        if !t.is_some() {
            return None;
        }
        let start = usize::try_from(t.start).ok()?;
        self.texts
            .get(t.store as usize)?
            .get(start..start + t.len as usize)
    }

    pub fn key(&self, r: &Row) -> Option<&str> {
        self.text(r.key)
    }

    pub fn work_id(&self, r: &Row) -> Option<&str> {
        self.text(r.work_id)
    }

    pub fn action_id(&self, r: &Row) -> Option<&str> {
        self.text(r.action_id)
    }

    pub fn intent(&self, r: &Row) -> Option<&str> {
        self.text(r.intent)
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
