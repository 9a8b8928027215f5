//! How the ledger keeps its records in memory: encoded, back to back, in chunks.
//!
//! A [`Record`] as a Rust value is ~500 bytes before its strings and JSON trees; a request with a
//! small body costs ~2.5 KB that way. Encoded it is ~130 bytes: repeated strings (service, route,
//! method, path, fate, actor, event) are numbers into a per-ledger table, times are varints, JSON
//! values are their compact text, and a time equal to `received_at` is one byte. Chunks of 1 MiB
//! are filled in order and never moved, so a growing ledger never copies what it holds (a
//! `Vec<Record>` doubling under the world lock was a latency spike of its own). Readers decode a
//! record when they ask for it; [`Store::matches`] tests a [`Filter`] on the encoded bytes
//! without decoding or allocating.
//!
//! The encoding is private to a running process (the journal and every API use `Record` and
//! `Entry`), so it can change freely; `tests` below round-trip every field.

use std::collections::VecDeque;
use std::time::Duration;

use serde_json::Value;

use super::{AgentEvent, Delivery, Disposition, Filter, Record, Replay, ResponsePlan};
use crate::chunks::Chunks;
use crate::fate::Fate;
use crate::hash::FastMap;

const CHUNK: usize = 1 << 20;
/// Distinct strings the table keeps; past that, strings are stored inline.
const MAX_INTERNED: usize = 1 << 16;
/// Longer strings are always inline.
const MAX_INTERNED_LEN: usize = 256;

/// Interned strings.
#[derive(Default)]
struct Strings {
    table: Vec<Box<str>>,
    ids: FastMap<Box<str>, u32>,
    /// The ids last interned for each field ([`Field`]), most recent first (each checked by
    /// comparing its string, so the zeros it starts with are harmless): records mostly repeat a
    /// few services, routes, methods, paths and agents' event names, and comparing with those
    /// costs less than hashing.
    recent: [[u32; RECENT]; FIELDS],
}

/// The interned fields of a record, for [`Strings::last`].
#[derive(Clone, Copy)]
enum Field {
    Service,
    Route,
    Actor,
    Event,
    Method,
    Path,
    Fate,
}
const FIELDS: usize = 7;
// An A2A round trip appends six agent events in turn: a recent list shorter than that misses
// every one of them.
const RECENT: usize = 8;

/// `s[..=i].rotate_right(1)` for the few elements of a recent list: the slice's rotate calls
/// `memmove`, which cost more than the rest of a look-up, several times per append.
pub(super) fn to_front<T: Copy, const N: usize>(s: &mut [T; N], i: usize) {
    let i = i.min(N - 1);
    let v = s[i];
    for j in (1..=i).rev() {
        s[j] = s[j - 1];
    }
    s[0] = v;
}

impl Strings {
    fn intern_field(&mut self, field: Field, s: &str) -> Option<u32> {
        let recent = &mut self.recent[field as usize];
        for i in 0..RECENT {
            let id = recent[i];
            if self
                .table
                .get(id as usize)
                .is_some_and(|t| super::same_label(t.as_bytes(), s.as_bytes()))
            {
                if i > 0 {
                    to_front(recent, i);
                }
                return Some(id);
            }
        }
        let id = self.intern(s)?;
        let recent = &mut self.recent[field as usize];
        recent[RECENT - 1] = id;
        to_front(recent, RECENT - 1);
        Some(id)
    }

    fn intern(&mut self, s: &str) -> Option<u32> {
        if let Some(id) = self.ids.get(s) {
            return Some(*id);
        }
        if self.table.len() >= MAX_INTERNED || s.len() > MAX_INTERNED_LEN {
            return None;
        }
        let id = self.table.len() as u32;
        self.table.push(s.into());
        self.ids.insert(s.into(), id);
        Some(id)
    }
}

/// The encoded records of one ledger, oldest first.
pub(super) struct Store {
    chunks: Chunks,
    /// Where each record starts (a place in `chunks`).
    index: VecDeque<u64>,
    strings: Strings,
    scratch: Vec<u8>,
    /// A fate's name is written here before it is interned.
    fate: String,
    /// The fixed fields of the last agent's events, as encoded.
    agent: AgentFields,
    /// Where the last replayed record (by its place) keeps the parts its replays copy: a key
    /// is mostly retried more than once.
    shared: Option<(u64, SharedParts)>,
}

/// Where the fingerprint and intent (together) and the body are in a record's bytes.
type SharedParts = (std::ops::Range<usize>, std::ops::Range<usize>);

impl Default for Store {
    fn default() -> Store {
        Store {
            chunks: Chunks::new(CHUNK, CHUNK),
            index: VecDeque::new(),
            strings: Strings::default(),
            scratch: Vec::new(),
            fate: String::new(),
            agent: AgentFields::default(),
            shared: None,
        }
    }
}

impl Store {
    pub(super) fn len(&self) -> usize {
        self.index.len()
    }

    /// Append an encoded copy of `r` (its `seq` is not stored: it is the position).
    pub(super) fn push(&mut self, r: &Record) {
        let at = self.write(r, None);
        self.index.push_back(at);
    }

    /// Append `r` with the fingerprint, intent and body of the record at position `like`
    /// (copied as they are encoded; `r`'s own are ignored): a replay of the same bytes.
    pub(super) fn push_like(&mut self, r: &Record, like: usize) {
        let at = self.write(r, Some(like));
        self.index.push_back(at);
    }

    /// Append `r` with its intent and/or body given as compact JSON text (`r`'s own are ignored
    /// where a text is given).
    pub(super) fn push_texts(&mut self, r: &Record, texts: &super::Texts<'_>) {
        let at = self.write_parts(r, Parts::Texts(texts));
        self.index.push_back(at);
    }

    /// Re-encode the record at position `i` (the old bytes stay, unused, until their chunk goes).
    pub(super) fn replace(&mut self, i: usize, r: &Record) {
        let at = self.write(r, None);
        if let Some(slot) = self.index.get_mut(i) {
            *slot = at;
        }
    }

    /// Forget the oldest record, and the chunks no remaining record starts in.
    pub(super) fn pop_front(&mut self) {
        self.index.pop_front();
        self.chunks.release_before(self.index.front().copied());
    }

    /// [`Store::push_like`] of `r.record()`, written from its parts (the same bytes).
    pub(super) fn push_replay(&mut self, r: &Replay<'_>, like: usize) {
        let mut buf = std::mem::take(&mut self.scratch);
        buf.clear();
        let place = self.index.get(like).copied();
        let parts = match place.and_then(|at| Some((at, self.chunks.from(at)?))) {
            Some((at, b)) => {
                // Places are never reused (chunks are numbered from the first ever made).
                let (a, c) = match &self.shared {
                    Some((p, parts)) if *p == at => parts.clone(),
                    _ => {
                        let parts = Reader::new(b, &self.strings).shared_parts();
                        self.shared = Some((at, parts.clone()));
                        parts
                    }
                };
                Parts::Like(&b[a], &b[c])
            }
            None => Parts::Own,
        };
        encode_replay(&mut buf, r, parts, &mut self.strings);
        let at = self.place(buf);
        self.index.push_back(at);
    }

    /// [`Store::push`] of `ev.record()`, written from the event's parts (the same bytes).
    pub(super) fn push_agent_event(&mut self, ev: &AgentEvent<'_>) {
        let mut buf = std::mem::take(&mut self.scratch);
        buf.clear();
        self.agent_fields(ev.agent);
        encode_agent_event(&mut buf, ev, None, &mut self.strings, &mut self.agent);
        let at = self.place(buf);
        self.index.push_back(at);
    }

    /// [`AgentFields`] for `agent`, encoded again if the last event was another agent's.
    fn agent_fields(&mut self, agent: &str) {
        if self.agent.agent.as_deref() != Some(agent) {
            self.agent.encode(agent, &mut self.strings, &mut self.fate);
        }
    }

    /// [`Store::push_agent_event`] of an event about a request: its method, path and body
    /// (compact JSON text) as well.
    pub(super) fn push_agent_request(
        &mut self,
        ev: &AgentEvent<'_>,
        method: &str,
        path: &str,
        body: &[u8],
    ) {
        let mut buf = std::mem::take(&mut self.scratch);
        buf.clear();
        self.agent_fields(ev.agent);
        encode_agent_event(
            &mut buf,
            ev,
            Some((method, path, body)),
            &mut self.strings,
            &mut self.agent,
        );
        let at = self.place(buf);
        self.index.push_back(at);
    }

    /// Append an encoded copy of `r` (whose `detail` is `None`) with `detail` as its detail:
    /// compact JSON text exactly as serializing the `Value` would write it (members sorted by
    /// name). For callers that write their detail straight, instead of building a tree only for
    /// it to be serialized here and dropped.
    pub(super) fn push_with_detail(&mut self, r: &Record, detail: &[u8]) {
        debug_assert!(r.detail.is_none());
        let mut buf = std::mem::take(&mut self.scratch);
        buf.clear();
        encode(&mut buf, r, Parts::Own, &mut self.strings, &mut self.fate);
        // The detail is the last field, `None` one byte: put this one in its place.
        buf.pop();
        put_json_text(&mut buf, detail);
        let at = self.place(buf);
        self.index.push_back(at);
    }

    /// Copy an encoded record into the chunks; where it is.
    fn place(&mut self, buf: Vec<u8>) -> u64 {
        let at = self.chunks.place(&[&buf]);
        self.scratch = buf;
        at
    }

    /// Decode the record at position `i`, numbering it `seq`.
    pub(super) fn get(&self, i: usize, seq: u64) -> Option<Record> {
        let bytes = self.bytes(i)?;
        Some(Reader::new(bytes, &self.strings).record(seq))
    }

    /// Whether the record at position `i` (numbered `seq`) passes `f`, without decoding it.
    pub(super) fn matches(&self, i: usize, seq: u64, f: &Filter) -> bool {
        if f.since.is_some_and(|s| seq <= s) {
            return false;
        }
        let Some(bytes) = self.bytes(i) else {
            return false;
        };
        Reader::new(bytes, &self.strings).matches(f)
    }

    fn bytes(&self, i: usize) -> Option<&[u8]> {
        record_bytes(&self.chunks, &self.index, i)
    }

    fn write(&mut self, r: &Record, like: Option<usize>) -> u64 {
        let mut buf = std::mem::take(&mut self.scratch);
        buf.clear();
        let parts = match like.and_then(|i| record_bytes(&self.chunks, &self.index, i)) {
            Some(b) => {
                let (a, c) = Reader::new(b, &self.strings).shared_parts();
                Parts::Like(&b[a], &b[c])
            }
            None => Parts::Own,
        };
        encode(&mut buf, r, parts, &mut self.strings, &mut self.fate);
        self.place(buf)
    }

    fn write_parts(&mut self, r: &Record, parts: Parts<'_>) -> u64 {
        let mut buf = std::mem::take(&mut self.scratch);
        buf.clear();
        encode(&mut buf, r, parts, &mut self.strings, &mut self.fate);
        self.place(buf)
    }
}

fn record_bytes<'c>(chunks: &'c Chunks, index: &VecDeque<u64>, i: usize) -> Option<&'c [u8]> {
    chunks.from(*index.get(i)?)
}

// ---------------------------------------------------------------------------------------------
// Encoding

#[inline]
fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// 0 none, 1 inline text, 2 + n interned string n (`strings`: the table and the field).
// The absent cases of these writers are a byte each, and a record has several: inlined, they
// cost a store instead of a call (some 20 calls per record, seven records per A2A round trip).
#[inline]
fn put_str(out: &mut Vec<u8>, s: Option<&str>, strings: Option<(&mut Strings, Field)>) {
    match s {
        None => out.push(0),
        Some(s) => put_some_str(out, s, strings),
    }
}

fn put_some_str(out: &mut Vec<u8>, s: &str, strings: Option<(&mut Strings, Field)>) {
    match strings.and_then(|(t, f)| t.intern_field(f, s)) {
        Some(id) => put_varint(out, id as u64 + 2),
        None => {
            out.push(1);
            put_bytes(out, s.as_bytes());
        }
    }
}

/// 0 none, 1 same as `received_at`, 2 seconds + nanoseconds.
#[inline]
fn put_time(out: &mut Vec<u8>, t: Option<Duration>, received: Duration) {
    match t {
        None => out.push(0),
        Some(t) if t == received => out.push(1),
        Some(t) => {
            out.push(2);
            put_varint(out, t.as_secs());
            put_varint(out, t.subsec_nanos() as u64);
        }
    }
}

/// 0 none, 1 JSON null, 2 compact JSON text.
#[inline]
fn put_json(out: &mut Vec<u8>, v: Option<&Value>) {
    match v {
        None => out.push(0),
        Some(Value::Null) => out.push(1),
        Some(v) => put_some_json(out, v),
    }
}

fn put_some_json(out: &mut Vec<u8>, v: &Value) {
    out.push(2);
    let len_at = out.len();
    out.extend_from_slice(&[0; 4]);
    let _ = serde_json::to_writer(&mut *out, v);
    let len = (out.len() - len_at - 4) as u32;
    out[len_at..len_at + 4].copy_from_slice(&len.to_le_bytes());
}

/// JSON already written as compact text, stored as [`put_json`] stores a value's (`null` as
/// JSON null, so that it decodes the same).
fn put_json_text(out: &mut Vec<u8>, text: &[u8]) {
    if text == b"null" {
        out.push(1);
        return;
    }
    out.push(2);
    out.extend_from_slice(&(text.len() as u32).to_le_bytes());
    out.extend_from_slice(text);
}

/// A fingerprint is usually 16 hex digits (FNV-1a): 8 bytes then.
fn put_fingerprint(out: &mut Vec<u8>, f: Option<&str>) {
    match f.and_then(hex16_value) {
        Some(v) => {
            out.push(2);
            out.extend_from_slice(&v.to_le_bytes());
        }
        None => put_str(out, f, None),
    }
}

/// The number written as exactly 16 lowercase hex digits (as `hash::hex16` writes it). Every
/// action's fingerprint goes through here: eight digits at a time, checked and converted in
/// one word, instead of a test and a shift per digit.
fn hex16_value(h: &str) -> Option<u64> {
    hex16_bytes(h.as_bytes())
}

fn hex16_bytes(h: &[u8]) -> Option<u64> {
    let b = h.first_chunk::<16>().filter(|_| h.len() == 16)?;
    let (hi, lo) = b.split_at(8);
    Some(u64::from(hex8_value(hi)?) << 32 | u64::from(hex8_value(lo)?))
}

/// Eight lowercase hex digits as a number (the first the most significant), or `None`.
fn hex8_value(digits: &[u8]) -> Option<u32> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let w = u64::from_be_bytes(digits.try_into().ok()?);
    // Bytes of 0x80 and over first: then adding below 0x80 to a byte carries into none other.
    if w & HIGH != 0 {
        return None;
    }
    // Per byte, the high bit set when the byte is at least `lo` / more than `hi`.
    let at_least = |lo: u8| w + ONES * u64::from(0x80 - lo);
    let above = |hi: u8| w + ONES * u64::from(0x7f - hi);
    let digit = at_least(b'0') & !above(b'9');
    let letter = at_least(b'a') & !above(b'f');
    if (digit | letter) & HIGH != HIGH {
        return None;
    }
    // '0'-'9' are 0x30-0x39 and 'a'-'f' 0x61-0x66: the low four bits, plus 9 for a letter.
    let mut n = (w & (ONES * 0x0f)) + 9 * ((w >> 6) & ONES);
    // Pack the eight nibbles (one per byte, the first in the top byte) into 32 bits.
    n = (n | n >> 4) & 0x00ff_00ff_00ff_00ff;
    n = (n | n >> 8) & 0x0000_ffff_0000_ffff;
    n = (n | n >> 16) & 0xffff_ffff;
    Some(n as u32)
}

fn disposition_code(d: Disposition) -> u8 {
    // Exhaustive on purpose: a new disposition must get a code here and in DISPOSITIONS.
    match d {
        Disposition::Executed => 0,
        Disposition::Replayed => 1,
        Disposition::Conflict => 2,
        Disposition::Mismatch => 3,
        Disposition::MissingKey => 4,
        Disposition::Lookup => 5,
        Disposition::Cancel => 6,
        Disposition::Unmatched => 7,
        Disposition::TooLarge => 8,
        Disposition::Agent => 9,
        Disposition::Declaration => 10,
    }
}

const DISPOSITIONS: [Disposition; 11] = [
    Disposition::Executed,
    Disposition::Replayed,
    Disposition::Conflict,
    Disposition::Mismatch,
    Disposition::MissingKey,
    Disposition::Lookup,
    Disposition::Cancel,
    Disposition::Unmatched,
    Disposition::TooLarge,
    Disposition::Agent,
    Disposition::Declaration,
];

fn delivery_code(d: Delivery) -> u8 {
    match d {
        Delivery::Sent => 0,
        Delivery::Dropped => 1,
        Delivery::Reset => 2,
        Delivery::Hung => 3,
        Delivery::Pending => 4,
    }
}

const DELIVERIES: [Delivery; 5] = [
    Delivery::Sent,
    Delivery::Dropped,
    Delivery::Reset,
    Delivery::Hung,
    Delivery::Pending,
];

/// Where some of a record's fields come from instead of the record.
enum Parts<'a> {
    /// All from the record.
    Own,
    /// The encoded fingerprint and intent, and the encoded body, of another record (see
    /// [`Store::push_like`]).
    Like(&'a [u8], &'a [u8]),
    /// The intent and the body as JSON text, where given (see [`Store::push_texts`]).
    Texts(&'a super::Texts<'a>),
}

fn encode(
    out: &mut Vec<u8>,
    r: &Record,
    parts: Parts<'_>,
    strings: &mut Strings,
    fate_buf: &mut String,
) {
    // Destructured in full so that a field added to Record is a compile error here.
    let Record {
        seq: _,
        service,
        route,
        method,
        path,
        received_at,
        idempotency_key,
        fingerprint,
        intent,
        work_id,
        revision,
        body,
        body_truncated,
        disposition,
        replay_of,
        executed_after_expiry,
        fate,
        applies_at,
        cancelled_at,
        response,
        actor,
        event,
        detail,
    } = r;
    let received = *received_at;
    let (service, route, method, path) = match &parts {
        Parts::Texts(super::Texts { names: Some(n), .. }) => (n.service, n.route, n.method, n.path),
        _ => (&service[..], route.as_deref(), &method[..], &path[..]),
    };
    // The fields filters look at come first.
    put_str(out, Some(service), Some((strings, Field::Service)));
    put_str(out, route, Some((strings, Field::Route)));
    out.push(disposition_code(*disposition));
    put_str(out, idempotency_key.as_deref(), None);
    put_str(out, work_id.as_deref(), None);
    put_str(out, actor.as_deref(), Some((strings, Field::Actor)));
    put_str(out, event.as_deref(), Some((strings, Field::Event)));
    // Then the rest.
    put_str(out, Some(method), Some((strings, Field::Method)));
    put_str(out, Some(path), Some((strings, Field::Path)));
    put_varint(out, received.as_secs());
    put_varint(out, received.subsec_nanos() as u64);
    match parts {
        Parts::Like(fingerprint_and_intent, body) => {
            out.extend_from_slice(fingerprint_and_intent);
            put_json(out, revision.as_ref());
            out.extend_from_slice(body);
        }
        Parts::Own => {
            put_fingerprint(out, fingerprint.as_deref());
            put_json(out, intent.as_ref());
            put_json(out, revision.as_ref());
            put_json(out, Some(body));
        }
        Parts::Texts(t) => {
            put_fingerprint(out, fingerprint.as_deref());
            match t.intent {
                Some(text) => put_json_text(out, text),
                None => put_json(out, intent.as_ref()),
            }
            put_json(out, revision.as_ref());
            match t.body {
                Some(text) => put_json_text(out, text),
                None => put_json(out, Some(body)),
            }
        }
    }
    out.push(*body_truncated as u8 | (*executed_after_expiry as u8) << 1);
    put_varint(out, replay_of.map_or(0, |s| s + 1));
    let fate_text = fate.map(|f| match f.plain_name() {
        Some(name) => name,
        None => {
            use std::fmt::Write as _;
            fate_buf.clear();
            let _ = write!(fate_buf, "{f}");
            fate_buf.as_str()
        }
    });
    put_str(out, fate_text, Some((strings, Field::Fate)));
    put_time(out, *applies_at, received);
    put_time(out, *cancelled_at, received);
    let ResponsePlan {
        delivery,
        status,
        at,
    } = response;
    out.push(delivery_code(*delivery));
    put_varint(out, status.map_or(0, |s| s as u64 + 1));
    put_time(out, *at, received);
    put_json(out, detail.as_ref());
}

/// The fields of an agent's events that depend only on the agent (service, route, disposition
/// and key; actor; the empty method and path of events about no request), encoded once per agent: an A2A round trip appends six
/// events of one agent, and interning the same four strings for each cost a third of the append.
/// Interned ids never change and the table only grows, so the bytes stay what encoding each
/// field again would give.
#[derive(Default)]
struct AgentFields {
    /// The agent these are for (`None` before the first event).
    agent: Option<String>,
    /// Service, route, disposition, key.
    head: Vec<u8>,
    actor: Vec<u8>,
    /// Method and path (the same for every agent): encoded after the first event's name, as
    /// the fields come, so that strings are interned (numbered) in the order encoding each
    /// record would intern them.
    tail: Option<Vec<u8>>,
}

impl AgentFields {
    fn encode(&mut self, agent: &str, strings: &mut Strings, actor: &mut String) {
        let name = self.agent.get_or_insert_with(String::new);
        name.clear();
        name.push_str(agent);
        self.head.clear();
        put_str(&mut self.head, Some(agent), Some((strings, Field::Service)));
        put_str(&mut self.head, None, Some((strings, Field::Route)));
        self.head.push(disposition_code(Disposition::Agent));
        put_str(&mut self.head, None, None);
        actor.clear();
        actor.push_str("agent:");
        actor.push_str(agent);
        self.actor.clear();
        put_str(&mut self.actor, Some(actor), Some((strings, Field::Actor)));
    }
}

/// What [`encode`] writes for `r.record()` with `parts`, field by field in the same order.
fn encode_replay(out: &mut Vec<u8>, r: &Replay<'_>, parts: Parts<'_>, strings: &mut Strings) {
    let received = r.received_at;
    put_str(out, Some(r.service), Some((strings, Field::Service)));
    put_str(out, Some(r.route), Some((strings, Field::Route)));
    out.push(disposition_code(Disposition::Replayed));
    put_str(out, Some(r.key), None);
    put_str(out, r.work_id, None);
    put_str(out, r.actor, Some((strings, Field::Actor)));
    put_str(out, None, Some((strings, Field::Event)));
    put_str(out, Some(r.method), Some((strings, Field::Method)));
    put_str(out, Some(r.path), Some((strings, Field::Path)));
    put_varint(out, received.as_secs());
    put_varint(out, received.subsec_nanos() as u64);
    match parts {
        Parts::Like(fingerprint_and_intent, body) => {
            out.extend_from_slice(fingerprint_and_intent);
            put_json(out, r.revision);
            out.extend_from_slice(body);
        }
        // As `encode` writes a record's own (none of them, for a replay's record).
        Parts::Own | Parts::Texts(_) => {
            put_fingerprint(out, None);
            put_json(out, None);
            put_json(out, r.revision);
            put_json(out, Some(&Value::Null));
        }
    }
    out.push(r.body_truncated as u8);
    put_varint(out, r.replay_of + 1);
    put_str(out, None, Some((strings, Field::Fate)));
    put_time(out, None, received);
    put_time(out, None, received);
    out.push(delivery_code(Delivery::Sent));
    put_varint(out, r.status as u64 + 1);
    put_time(out, Some(received), received);
    put_json(out, None);
}

/// What [`encode`] writes for `ev.record()`, field by field in the same order, without the
/// record (`fields` are `ev.agent`'s: [`AgentFields::encode`]); with `request`, the method, path and
/// body (compact JSON text) of the request the event is about.
fn encode_agent_event(
    out: &mut Vec<u8>,
    ev: &AgentEvent<'_>,
    request: Option<(&str, &str, &[u8])>,
    strings: &mut Strings,
    fields: &mut AgentFields,
) {
    let received = ev.at;
    out.extend_from_slice(&fields.head);
    put_str(out, ev.work_id, None);
    out.extend_from_slice(&fields.actor);
    put_str(out, Some(ev.event), Some((strings, Field::Event)));
    match request {
        Some((method, path, _)) => {
            put_str(out, Some(method), Some((strings, Field::Method)));
            put_str(out, Some(path), Some((strings, Field::Path)));
        }
        None => {
            let tail = fields.tail.get_or_insert_with(|| {
                let mut tail = Vec::new();
                put_str(&mut tail, Some(""), Some((strings, Field::Method)));
                put_str(&mut tail, Some(""), Some((strings, Field::Path)));
                tail
            });
            out.extend_from_slice(tail);
        }
    }
    put_varint(out, received.as_secs());
    put_varint(out, received.subsec_nanos() as u64);
    put_fingerprint(out, None);
    put_json(out, None);
    put_json(out, ev.revision);
    match request {
        Some((_, _, body)) => put_json_text(out, body),
        None => put_json(out, Some(&Value::Null)),
    }
    out.push(0);
    put_varint(out, 0);
    put_str(out, None, Some((strings, Field::Fate)));
    put_time(out, None, received);
    put_time(out, None, received);
    out.push(delivery_code(Delivery::Sent));
    put_varint(out, 0);
    put_time(out, Some(received), received);
    // `put_json` of the detail, from its text.
    out.push(2);
    out.extend_from_slice(&(ev.detail.len() as u32).to_le_bytes());
    out.extend_from_slice(ev.detail);
}

// ---------------------------------------------------------------------------------------------
// Decoding

/// A string as stored: interned or inline.
enum Str<'a> {
    None,
    Inline(&'a [u8]),
    Interned(u32),
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    strings: &'a Strings,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8], strings: &'a Strings) -> Reader<'a> {
        Reader {
            buf,
            pos: 0,
            strings,
        }
    }

    fn byte(&mut self) -> u8 {
        let b = self.buf.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b
    }

    fn varint(&mut self) -> u64 {
        let mut v = 0u64;
        let mut shift = 0;
        loop {
            let b = self.byte();
            v |= ((b & 0x7f) as u64) << shift;
            if b < 0x80 || shift >= 63 {
                return v;
            }
            shift += 7;
        }
    }

    fn take(&mut self, n: usize) -> &'a [u8] {
        let end = (self.pos + n).min(self.buf.len());
        let s = &self.buf[self.pos.min(end)..end];
        self.pos = end;
        s
    }

    fn str_ref(&mut self) -> Str<'a> {
        match self.varint() {
            0 => Str::None,
            1 => {
                let n = self.varint() as usize;
                Str::Inline(self.take(n))
            }
            id => Str::Interned((id - 2) as u32),
        }
    }

    fn text(&self, s: Str<'a>) -> Option<&'a str> {
        match s {
            Str::None => None,
            Str::Inline(b) => Some(std::str::from_utf8(b).unwrap_or("")),
            Str::Interned(id) => Some(self.strings.table.get(id as usize).map_or("", |s| s)),
        }
    }

    fn string(&mut self) -> Option<String> {
        let s = self.str_ref();
        self.text(s).map(str::to_string)
    }

    /// Whether a stored string equals `want` (a missing one never does).
    fn is(&mut self, want: &str) -> bool {
        let s = self.str_ref();
        self.text(s) == Some(want)
    }

    fn time(&mut self, received: Duration) -> Option<Duration> {
        match self.byte() {
            0 => None,
            1 => Some(received),
            _ => {
                let secs = self.varint();
                let nanos = self.varint() as u32;
                Some(Duration::new(secs, nanos))
            }
        }
    }

    fn json(&mut self) -> Option<Value> {
        match self.byte() {
            0 => None,
            1 => Some(Value::Null),
            _ => {
                let len = u32::from_le_bytes(self.take(4).try_into().unwrap_or([0; 4]));
                let text = self.take(len as usize);
                Some(serde_json::from_slice(text).unwrap_or(Value::Null))
            }
        }
    }

    fn fingerprint(&mut self) -> Option<String> {
        match self.varint() {
            2 => {
                let b: [u8; 8] = self.take(8).try_into().unwrap_or([0; 8]);
                Some(crate::hash::hex16(u64::from_le_bytes(b)))
            }
            1 => {
                let n = self.varint() as usize;
                Some(String::from_utf8_lossy(self.take(n)).into_owned())
            }
            _ => None,
        }
    }

    fn skip_fingerprint(&mut self) {
        match self.varint() {
            2 => {
                self.take(8);
            }
            1 => {
                let n = self.varint() as usize;
                self.take(n);
            }
            _ => {}
        }
    }

    fn skip_json(&mut self) {
        if self.byte() == 2 {
            let len = u32::from_le_bytes(self.take(4).try_into().unwrap_or([0; 4]));
            self.take(len as usize);
        }
    }

    /// Where the fingerprint and intent (together) and the body are in a record's bytes.
    fn shared_parts(mut self) -> SharedParts {
        // service, route, disposition, key, work id, actor, event, method, path, received at
        self.str_ref();
        self.str_ref();
        self.byte();
        for _ in 0..6 {
            self.str_ref();
        }
        self.varint();
        self.varint();
        let start = self.pos;
        self.skip_fingerprint();
        self.skip_json();
        let intent_end = self.pos;
        self.skip_json(); // revision
        let body_start = self.pos;
        self.skip_json();
        (start..intent_end, body_start..self.pos)
    }

    fn record(mut self, seq: u64) -> Record {
        let service = self.string().unwrap_or_default();
        let route = self.string();
        let disposition = DISPOSITIONS
            .get(self.byte() as usize)
            .copied()
            .unwrap_or_default();
        let idempotency_key = self.string();
        let work_id = self.string();
        let actor = self.string();
        let event = self.string();
        let method = self.string().unwrap_or_default();
        let path = self.string().unwrap_or_default();
        let secs = self.varint();
        let received_at = Duration::new(secs, self.varint() as u32);
        let fingerprint = self.fingerprint();
        let intent = self.json();
        let revision = self.json();
        let body = self.json().unwrap_or(Value::Null);
        let flags = self.byte();
        let replay_of = self.varint().checked_sub(1);
        let fate = self.string().and_then(|f| f.parse::<Fate>().ok());
        let applies_at = self.time(received_at);
        let cancelled_at = self.time(received_at);
        let delivery = DELIVERIES
            .get(self.byte() as usize)
            .copied()
            .unwrap_or_default();
        let status = self.varint().checked_sub(1).map(|s| s as u16);
        let at = self.time(received_at);
        let detail = self.json();
        Record {
            seq,
            service,
            route,
            method,
            path,
            received_at,
            idempotency_key,
            fingerprint,
            intent,
            work_id,
            revision,
            body,
            body_truncated: flags & 1 != 0,
            disposition,
            replay_of,
            executed_after_expiry: flags & 2 != 0,
            fate,
            applies_at,
            cancelled_at,
            response: ResponsePlan {
                delivery,
                status,
                at,
            },
            actor,
            event,
            detail,
        }
    }

    /// [`Filter::matches`] on the encoded fields (`since` is checked by the caller).
    fn matches(mut self, f: &Filter) -> bool {
        if !self.want(&f.service) || !self.want(&f.route) {
            return false;
        }
        let d = DISPOSITIONS.get(self.byte() as usize).copied();
        if f.disposition.is_some_and(|w| Some(w) != d) {
            return false;
        }
        self.want(&f.key) && self.want(&f.work_id) && self.want(&f.actor) && self.want(&f.event)
    }

    /// Reads the next string: whether it is `w` (any string, when `w` is `None`).
    fn want(&mut self, w: &Option<String>) -> bool {
        match w {
            None => {
                self.str_ref();
                true
            }
            Some(w) => self.is(w),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `hex16_value` must answer, a digit at a time.
    fn hex16_slowly(h: &[u8]) -> Option<u64> {
        (h.len() == 16).then_some(())?;
        h.iter().try_fold(0u64, |v, &c| {
            let d = match c {
                b'0'..=b'9' => c - b'0',
                b'a'..=b'f' => c - b'a' + 10,
                _ => return None,
            };
            Some(v << 4 | d as u64)
        })
    }

    #[test]
    fn hex_fingerprints_read_as_a_digit_at_a_time_would_with_any_byte_anywhere() {
        let valid = [
            "0123456789abcdef",
            "fedcba9876543210",
            "0000000000000000",
            "ffffffffffffffff",
            "07a2bf1f41436c9a",
        ];
        for v in valid {
            assert_eq!(hex16_value(v), hex16_slowly(v.as_bytes()), "{v}");
            assert!(hex16_value(v).is_some());
            for at in 0..16 {
                for c in 0..=255u8 {
                    let mut b = v.as_bytes().to_vec();
                    b[at] = c;
                    let want = hex16_slowly(&b);
                    assert_eq!(hex16_bytes(&b), want, "{v} with {c:#x} at {at}");
                    if let Ok(s) = std::str::from_utf8(&b) {
                        assert_eq!(hex16_value(s), want, "{s:?}");
                    }
                }
            }
        }
        for bad in [
            "",
            "0123456789abcde",
            "0123456789abcdef0",
            "0123456789ABCDEF",
        ] {
            assert_eq!(hex16_value(bad), None, "{bad}");
        }
        assert_eq!(hex16_value("00000000000000ff"), Some(255));
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..10_000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            assert_eq!(hex16_value(&crate::hash::hex16(x)), Some(x));
        }
    }
    use serde_json::json;

    fn record(seq: u64) -> Record {
        Record {
            seq,
            service: "pay".into(),
            route: Some("create".into()),
            method: "POST".into(),
            path: format!("/v1/t/{seq}"),
            received_at: Duration::new(12, 345_678_901),
            idempotency_key: Some(format!("k-{seq}")),
            fingerprint: Some("00ff00ff00ff00ff".into()),
            intent: Some(json!({"/to": "a", "/n": seq})),
            work_id: Some("w".into()),
            revision: Some(json!(2)),
            body: json!({"to": "a", "n": seq, "f": 1.5}),
            body_truncated: true,
            disposition: Disposition::Replayed,
            replay_of: Some(0),
            executed_after_expiry: true,
            fate: Some("apply-later:2s".parse().unwrap()),
            applies_at: Some(Duration::new(14, 345_678_901)),
            cancelled_at: Some(Duration::new(12, 345_678_901)),
            response: ResponsePlan {
                delivery: Delivery::Pending,
                status: Some(202),
                at: None,
            },
            actor: Some("agent:x".into()),
            event: Some("message".into()),
            detail: Some(json!({"a": [1, null, "x"]})),
        }
    }

    fn same(a: &Record, b: &Record) -> bool {
        format!("{a:?}") == format!("{b:?}")
    }

    #[test]
    fn every_field_round_trips() {
        let mut s = Store::default();
        let full = record(1);
        let mut bare = Record::agent_event("x", "e", Duration::ZERO, Value::Null);
        bare.detail = None;
        bare.actor = None;
        bare.event = None;
        bare.fingerprint = Some("not hex".into());
        bare.route = None;
        bare.method = "M\u{e9}".into();
        s.push(&full);
        s.push(&bare);
        assert!(same(&s.get(0, 1).unwrap(), &full));
        assert!(same(&s.get(1, 0).unwrap(), &bare));
        for (i, d) in DISPOSITIONS.iter().enumerate() {
            assert_eq!(disposition_code(*d) as usize, i);
        }
        for (i, d) in DELIVERIES.iter().enumerate() {
            assert_eq!(delivery_code(*d) as usize, i);
        }
        // Small records stay small.
        let mut small = Store::default();
        for i in 1..=1000 {
            let mut r = record(i);
            r.actor = None;
            r.event = None;
            r.detail = None;
            r.cancelled_at = None;
            small.push(&r);
        }
        let bytes: usize = small.chunks.iter().map(Vec::len).sum();
        assert!(bytes / 1000 < 160, "{} bytes a record", bytes / 1000);
    }

    #[test]
    fn a_record_pushed_like_another_takes_its_fingerprint_intent_and_body_only() {
        let mut s = Store::default();
        let original = record(1);
        let mut unshared = record(1);
        unshared.fingerprint = Some("inline, not hex".into());
        s.push(&original);
        s.push(&unshared);
        for (like, from) in [(0, &original), (1, &unshared)] {
            let mut replay = record(7);
            replay.fingerprint = None;
            replay.intent = None;
            replay.body = Value::Null;
            replay.revision = Some(json!("r-9"));
            replay.path = "/other".into();
            s.push_like(&replay, like);
            let got = s.get(s.len() - 1, 7).unwrap();
            let mut want = replay.clone();
            want.fingerprint = from.fingerprint.clone();
            want.intent = from.intent.clone();
            want.body = from.body.clone();
            assert!(same(&got, &want), "{got:?}\n{want:?}");
        }
    }

    #[test]
    fn agent_events_encode_as_their_records() {
        let rev = json!({"r": [1, "x"]});
        for (work_id, revision, detail) in [
            (None, None, json!({})),
            (
                Some("task-1"),
                Some(&rev),
                json!({"a": "q\"\n\u{e9}", "b": [1.5, null], "c": {"d": true}}),
            ),
            (
                Some(""),
                Some(&Value::Null),
                json!({"state": "TASK_STATE_WORKING"}),
            ),
        ] {
            let text = serde_json::to_vec(&detail).unwrap();
            let ev = AgentEvent {
                agent: "worker",
                event: "status",
                at: Duration::new(3, 7),
                work_id,
                revision,
                detail: &text,
            };
            let mut rec = Record::agent_event("worker", "status", Duration::new(3, 7), detail);
            rec.work_id = work_id.map(str::to_string);
            rec.revision = revision.cloned();
            assert!(same(&ev.record(), &rec));
            let (mut a, mut b) = (Store::default(), Store::default());
            for _ in 0..2 {
                a.push(&rec);
                b.push_agent_event(&ev);
            }
            assert_eq!(a.chunks, b.chunks);
            assert_eq!(a.index, b.index);
            assert!(same(&b.get(1, 2).unwrap(), &{
                rec.seq = 2;
                rec
            }));
        }
    }

    /// A replay written from its parts is the same bytes as its record pushed like the original.
    #[test]
    fn replays_encode_as_their_records_pushed_like_the_original() {
        let rev = json!(7);
        let (mut a, mut b) = (Store::default(), Store::default());
        let original = record(1);
        a.push(&original);
        b.push(&original);
        for (i, (work_id, revision, actor, truncated)) in [
            (None, None, None, false),
            (Some("task-1"), Some(&rev), Some("agent:worker"), true),
            (Some(""), Some(&Value::Null), None, false),
        ]
        .into_iter()
        .enumerate()
        {
            let r = Replay {
                service: "pay",
                route: "create",
                method: "POST",
                path: "/v1/transfers",
                received_at: Duration::new(9, i as u32),
                key: "k-1",
                work_id,
                revision,
                body_truncated: truncated,
                replay_of: 1,
                status: 201,
                actor,
            };
            a.push_like(&r.record(), 0);
            b.push_replay(&r, 0);
            assert_eq!(a.chunks, b.chunks);
            assert_eq!(a.index, b.index);
            // Also when the original is no longer held (nothing to copy).
            a.push_like(&r.record(), 99);
            b.push_replay(&r, 99);
            assert_eq!(a.chunks, b.chunks);
        }
        // Replays of two originals in turn: each copies its own original's parts.
        let mut other = record(2);
        other.body = json!({"to": "acct-2", "amount": 5});
        other.intent = Some(json!({"amount": 5}));
        a.push(&other);
        b.push(&other);
        let second = a.index.len() - 1;
        for (i, like) in [second, 0, second, second, 0].into_iter().enumerate() {
            let r = Replay {
                service: "pay",
                route: "create",
                method: "POST",
                path: "/v1/transfers",
                received_at: Duration::new(10, i as u32),
                key: "k-2",
                work_id: None,
                revision: None,
                body_truncated: false,
                replay_of: like as u64 + 1,
                status: 201,
                actor: None,
            };
            a.push_like(&r.record(), like);
            b.push_replay(&r, like);
            assert_eq!(a.chunks, b.chunks, "replay {i} of record {like}");
        }
    }

    /// The fields an agent's events share are encoded once per agent: still the same bytes
    /// when events of several agents and other records come in between.
    #[test]
    fn agent_events_of_several_agents_encode_as_their_records() {
        let (mut a, mut b) = (Store::default(), Store::default());
        let detail = json!({"state": "TASK_STATE_WORKING"});
        let text = serde_json::to_vec(&detail).unwrap();
        for (i, agent) in ["worker", "worker", "planner", "", "worker", "planner"]
            .into_iter()
            .enumerate()
        {
            let event = ["status", "message", "result"][i % 3];
            let ev = AgentEvent {
                agent,
                event,
                at: Duration::new(3, i as u32),
                work_id: Some("task-1"),
                revision: None,
                detail: &text,
            };
            a.push(&ev.record());
            b.push_agent_event(&ev);
            let other = record(i as u64 + 1);
            a.push(&other);
            b.push(&other);
        }
        assert_eq!(a.chunks, b.chunks);
        assert_eq!(a.index, b.index);
    }

    #[test]
    fn filters_match_on_encoded_records_as_on_records() {
        let mut s = Store::default();
        let mut records = Vec::new();
        for i in 0..40u64 {
            let mut r = record(i + 1);
            r.service = ["pay", "bank"][(i % 2) as usize].into();
            r.route = [None, Some("create".into())][(i % 3 == 0) as usize].clone();
            r.disposition = DISPOSITIONS[(i % 11) as usize];
            r.idempotency_key = (i % 4 != 0).then(|| format!("k-{}", i % 5));
            r.work_id = (i % 5 != 0).then(|| format!("w-{}", i % 3));
            r.actor = (i % 2 == 0).then(|| "agent:x".into());
            r.event = (i % 7 == 0).then(|| "message".into());
            s.push(&r);
            records.push(r);
        }
        let filters = [
            Filter::default(),
            Filter {
                service: Some("pay".into()),
                ..Filter::default()
            },
            Filter {
                route: Some("create".into()),
                disposition: Some(Disposition::Replayed),
                ..Filter::default()
            },
            Filter {
                key: Some("k-2".into()),
                since: Some(10),
                ..Filter::default()
            },
            Filter {
                work_id: Some("w-1".into()),
                actor: Some("agent:x".into()),
                ..Filter::default()
            },
            Filter {
                event: Some("message".into()),
                service: Some("nope".into()),
                ..Filter::default()
            },
            Filter {
                event: Some("message".into()),
                ..Filter::default()
            },
        ];
        for f in &filters {
            for (i, r) in records.iter().enumerate() {
                assert_eq!(s.matches(i, r.seq, f), f.matches(r), "{f:?} on #{}", r.seq);
            }
        }
    }

    #[test]
    fn chunks_are_released_as_old_records_go_and_replace_rewrites() {
        let mut s = Store::default();
        let mut r = record(1);
        r.body = Value::String("x".repeat(100_000));
        for _ in 0..50 {
            s.push(&r);
        }
        assert!(s.chunks.len() >= 5);
        for _ in 0..45 {
            s.pop_front();
        }
        assert!(s.chunks.len() <= 2, "{} chunks left", s.chunks.len());
        assert_eq!(s.len(), 5);
        let mut changed = s.get(2, 48).unwrap();
        changed.cancelled_at = Some(Duration::from_secs(99));
        s.replace(2, &changed);
        assert_eq!(
            s.get(2, 48).unwrap().cancelled_at,
            Some(Duration::from_secs(99))
        );
        assert!(same(&s.get(4, 50).unwrap(), &{
            let mut x = r.clone();
            x.seq = 50;
            x
        }));
        // A record larger than a chunk gets a chunk of its own.
        r.body = Value::String("y".repeat(3 << 20));
        s.push(&r);
        assert_eq!(s.get(5, 51).unwrap().body, r.body);
    }

    #[test]
    fn a_detail_given_as_text_is_stored_as_the_value_would_be() {
        let mut s = Store::default();
        for detail in [
            json!({"a": [1, null, "x\n"], "b": {"c": true}}),
            json!(null),
        ] {
            let mut bare = record(3);
            bare.detail = None;
            s.push_with_detail(&bare, serde_json::to_string(&detail).unwrap().as_bytes());
            let mut r = record(3);
            r.detail = Some(detail);
            s.push(&r);
            let n = s.len();
            assert!(same(&s.get(n - 2, 3).unwrap(), &s.get(n - 1, 3).unwrap()));
            // Byte for byte: the two encodings sit side by side in one chunk.
            let len = (s.index[n - 1] - s.index[n - 2]) as usize;
            assert_eq!(
                s.bytes(n - 2).unwrap()[..len],
                s.bytes(n - 1).unwrap()[..len]
            );
        }
    }
}
