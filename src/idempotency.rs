//! Idempotency keys as configuration: a [`Policy`] per service or route (a provider preset plus
//! overrides) and the [`KeyStore`] that remembers keys within their retention window.
//!
//! Providers disagree on retention, which responses are kept, mismatch handling and replay
//! marking (docs/scenarios.md, Idempotency); the presets copy them. The pipeline asks
//! [`KeyStore::decide`], then [`KeyStore::remember`]s the outcome. Expiry is derived from the
//! scenario clock, never scheduled.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::hash::BuildHasher;
use std::time::Duration;

use hyper::header::HeaderName;
use serde_json::Value;

use crate::chunks::Chunks;
use crate::hash::{FastMap, FastSet, FastState};

/// Whether keys de-duplicate at all.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Honor,
    Ignore,
}

/// What a request's fingerprint covers, to tell "same request" from "same key, other payload".
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fingerprint {
    /// The whole body (canonical JSON when it parses, raw bytes otherwise).
    Body,
    /// No comparison: any payload under a known key is a replay.
    None,
    Pointers(Vec<String>),
}

/// Which executed responses are kept for replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
pub enum Cache {
    /// Every response, 5xx included (Stripe).
    #[serde(rename = "all")]
    All,
    /// Only 2xx; after an error the key is free and a retry executes again (checkout.com).
    #[serde(rename = "2xx")]
    TwoXx,
    /// Not a byte-for-byte replay: the current state of the action (PayPal).
    #[serde(rename = "latest")]
    Latest,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Policy {
    pub mode: Mode,
    /// Header carrying the key, as configured (matching is case-insensitive).
    pub header: String,
    pub header_name: HeaderName,
    pub required: bool,
    pub retention: Duration,
    pub fingerprint: Fingerprint,
    pub cache: Cache,
    /// Header added to replayed responses (`Idempotent-Replayed: true`), if any.
    pub replay_header: Option<Cow<'static, str>>,
    /// Echo the key header on every response (Adyen's replay marker).
    pub echo_key: bool,
    /// Status for "same key, different payload".
    pub mismatch_status: u16,
    /// Status for "same key while the first request is still in flight".
    pub conflict_status: u16,
    /// Status for a missing key when `required`.
    pub missing_status: u16,
    /// How the errors doubleagent produces on this route are written.
    pub errors: ErrorShape,
    /// The longest key taken, in characters (Stripe 255, Adyen 64); a longer one is refused.
    pub max_key_length: Option<usize>,
}

/// The shape of an error body, as a provider writes it (see `service::errors`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ErrorShape {
    /// doubleagent's own `{"error": "...", "status": N}`.
    Generic,
    /// RFC 9457 problem details (the IETF draft's choice).
    Problem,
    /// `{"error": {"type", "code", "message"}}`.
    Stripe,
    /// `{"status", "errorCode", "message", "errorType"}`.
    Adyen,
    /// `{"name", "message", "debug_id", "details"}`.
    Paypal,
    /// `{"request_id", "error_type", "error_codes"}`.
    Checkout,
}

/// The providers whose behaviour a preset copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Preset {
    Ietf,
    Stripe,
    Adyen,
    Paypal,
    Checkout,
    #[serde(alias = "off")]
    None,
}

impl Preset {
    pub fn policy(self) -> Policy {
        let base = Policy {
            mode: Mode::Honor,
            header: "Idempotency-Key".into(),
            header_name: HeaderName::from_static("idempotency-key"),
            required: false,
            retention: Duration::from_secs(24 * 3600),
            fingerprint: Fingerprint::Body,
            cache: Cache::All,
            replay_header: None,
            echo_key: false,
            mismatch_status: 422,
            conflict_status: 409,
            missing_status: 400,
            errors: ErrorShape::Problem,
            max_key_length: None,
        };
        match self {
            // The draft's codes: 409 in flight, 422 mismatch, 400 missing (when required).
            Preset::Ietf => base,
            Preset::Stripe => Policy {
                replay_header: Some(Cow::Borrowed("Idempotent-Replayed")),
                mismatch_status: 400,
                errors: ErrorShape::Stripe,
                max_key_length: Some(255),
                ..base
            },
            Preset::Adyen => Policy {
                retention: Duration::from_secs(31 * 24 * 3600),
                echo_key: true,
                errors: ErrorShape::Adyen,
                max_key_length: Some(64),
                ..base
            },
            Preset::Paypal => Policy {
                header: "PayPal-Request-Id".into(),
                header_name: HeaderName::from_static("paypal-request-id"),
                retention: Duration::from_secs(72 * 3600),
                cache: Cache::Latest,
                errors: ErrorShape::Paypal,
                ..base
            },
            Preset::Checkout => Policy {
                header: "Cko-Idempotency-Key".into(),
                header_name: HeaderName::from_static("cko-idempotency-key"),
                cache: Cache::TwoXx,
                errors: ErrorShape::Checkout,
                ..base
            },
            Preset::None => Policy {
                mode: Mode::Ignore,
                errors: ErrorShape::Generic,
                ..base
            },
        }
    }
}

impl Default for Policy {
    /// Without an `idempotency` table a service ignores keys: every request executes.
    fn default() -> Self {
        Preset::None.policy()
    }
}

impl Policy {
    /// Why `key` is refused before anything else: longer than the provider takes.
    pub fn refuses_key(&self, key: &str) -> Option<String> {
        let max = self.max_key_length.filter(|max| key.len() > *max)?;
        let n = key.chars().count();
        (n > max).then(|| {
            format!("the idempotency key is {n} characters long; this API takes at most {max}")
        })
    }

    pub fn caches(&self, status: u16) -> bool {
        match self.cache {
            Cache::All | Cache::Latest => true,
            Cache::TwoXx => (200..300).contains(&status),
        }
    }
}

/// A response kept for replay.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct StoredResponse {
    pub status: u16,
    /// Borrowed where they are the usual static ones ([`JSON_HEADERS`]): a key store holds many.
    pub headers: Cow<'static, [Header]>,
    pub body: Vec<u8>,
}

pub type Header = (Cow<'static, str>, Cow<'static, str>);

pub const JSON_HEADERS: &[Header] = &[(
    Cow::Borrowed("content-type"),
    Cow::Borrowed("application/json"),
)];

/// What the store remembers about one key.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct KeyRecord {
    pub fingerprint: Option<String>,
    /// Ledger seq of the execution that owns the key.
    pub seq: u64,
    pub created_at: Duration,
    /// Until this time the first request is still in flight (its response not yet given).
    pub completes_at: Duration,
    pub response: StoredResponse,
}

/// What to do with an incoming request, given its key.
#[derive(Clone, Debug, PartialEq)]
pub enum Decision<'s> {
    /// Execute. `after_expiry` is true when the key was known but its retention had passed.
    Execute { after_expiry: bool },
    /// Answer with the stored response of `of` without applying anything.
    Replay { of: u64, response: Stored<'s> },
    /// The first request with this key is still in flight.
    Conflict { of: u64 },
    /// Same key, different fingerprint.
    Mismatch { of: u64 },
    /// The policy requires a key and none came.
    Missing,
}

/// An execution's outcome as [`KeyStore::remember_parts`] takes it: a [`KeyRecord`]'s parts.
#[derive(Clone, Debug)]
pub struct Kept<'a> {
    pub fingerprint: Option<&'a str>,
    pub seq: u64,
    pub created_at: Duration,
    pub completes_at: Duration,
    pub status: u16,
    pub headers: Cow<'static, [Header]>,
    pub body: &'a [u8],
}

impl Kept<'_> {
    /// The owned record of these parts (what a journal line keeps).
    pub fn to_record(&self) -> KeyRecord {
        KeyRecord {
            fingerprint: self.fingerprint.map(str::to_string),
            seq: self.seq,
            created_at: self.created_at,
            completes_at: self.completes_at,
            response: StoredResponse {
                status: self.status,
                headers: self.headers.clone(),
                body: self.body.to_vec(),
            },
        }
    }
}

impl KeyRecord {
    pub fn kept(&self) -> Kept<'_> {
        Kept {
            fingerprint: self.fingerprint.as_deref(),
            seq: self.seq,
            created_at: self.created_at,
            completes_at: self.completes_at,
            status: self.response.status,
            headers: self.response.headers.clone(),
            body: &self.response.body,
        }
    }
}

/// A stored response as the store holds it, borrowed.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stored<'a> {
    pub status: u16,
    pub headers: &'a Cow<'static, [Header]>,
    pub body: &'a [u8],
}

/// Keys remembered by one world, scoped per service, at most `max`: past that the oldest go
/// first. Expired keys stay until then, so a retry after expiry is still recognised (the
/// ledger marks `executed_after_expiry`).
///
/// Records sit in a ring in remembering order and their texts back to back in large chunks,
/// so a full store turning over (a load test's new key per request) allocates nothing per
/// record. The index holds (hash of key, place); a lookup confirms the key, so a 64-bit
/// collision only forgets the older record early, never gives a wrong answer.
#[derive(Debug)]
pub struct KeyStore {
    /// Hash of (service, key) → place of its slot (counted from the first slot ever kept).
    index: FastMap<u64, u64>,
    /// In the order they were remembered. A slot whose key was remembered again since is empty.
    slots: VecDeque<Slot>,
    /// The place of `slots[0]`.
    first: u64,
    live: usize,
    max: usize,
    state: FastState,
    /// The slots' texts, in the same order: a chunk goes once no slot points into it.
    chunks: Chunks,
    /// Hashes of the keys forgotten to keep `max` (the latest `max` of them), so a retry with
    /// one is marked `key_forgotten` rather than taken for a new request.
    forgotten: (VecDeque<u64>, FastSet<u64>),
}

/// Full size of a text chunk; a store keeping few keys (a test's session) starts at 4 KB.
#[doc(hidden)]
pub const TEXT_CHUNK: usize = 256 << 10;

#[derive(Debug)]
struct Slot {
    hash: u64,
    /// Where its texts start: chunk number << 32 | offset. There, one after the other:
    /// `service\u{1f}key` (service names cannot contain U+001F), the fingerprint, the body.
    at: u64,
    id_len: u32,
    /// `u32::MAX`: no fingerprint.
    fp_len: u32,
    body_len: u32,
    /// False once the key was remembered again (or forgotten early, see [`KeyStore`]).
    live: bool,
    seq: u64,
    /// Scenario times in nanoseconds ([`Slot::time`]): 16 bytes a key less than `Duration`s.
    created_at: u64,
    completes_at: u64,
    status: u16,
    headers: Cow<'static, [Header]>,
}

impl Slot {
    /// A scenario time as a slot keeps it; past u64 nanoseconds (584 years) it stays there, which
    /// reads as "never" to every comparison a slot's times take part in.
    fn time(t: Duration) -> u64 {
        u64::try_from(t.as_nanos()).unwrap_or(u64::MAX)
    }

    fn created_at(&self) -> Duration {
        Duration::from_nanos(self.created_at)
    }

    fn completes_at(&self) -> Duration {
        Duration::from_nanos(self.completes_at)
    }
}

/// A slot's texts as stored: id (`service\u{1f}key`), fingerprint, response body.
type SlotTexts<'s> = (&'s [u8], Option<&'s [u8]>, &'s [u8]);

struct Found<'s> {
    slot: &'s Slot,
    /// As bytes: only a lookup by key needs it as text.
    fingerprint: Option<&'s [u8]>,
    body: &'s [u8],
}

impl<'s> Found<'s> {
    fn stored(&self) -> Stored<'s> {
        Stored {
            status: self.slot.status,
            headers: &self.slot.headers,
            body: self.body,
        }
    }
}

impl Default for KeyStore {
    fn default() -> Self {
        KeyStore::bounded(usize::MAX)
    }
}

impl KeyStore {
    pub fn bounded(max: usize) -> KeyStore {
        KeyStore {
            index: FastMap::default(),
            slots: VecDeque::new(),
            first: 0,
            live: 0,
            max: max.max(1),
            state: FastState::default(),
            chunks: Chunks::new(TEXT_CHUNK, 4 << 10),
            forgotten: Default::default(),
        }
    }

    /// Whether `key` is not remembered because it was forgotten to keep `max` (`--max-keys`).
    pub fn forgot(&self, service: &str, key: &str) -> bool {
        self.find(service, key).is_none() && self.forgotten.1.contains(&self.hash(service, key))
    }

    fn hash(&self, service: &str, key: &str) -> u64 {
        self.state.hash_one((service, key))
    }

    fn texts(&self, slot: &Slot) -> Option<SlotTexts<'_>> {
        let (id, rest) = self
            .chunks
            .from(slot.at)?
            .split_at_checked(slot.id_len as usize)?;
        let (fp, rest) = match slot.fp_len {
            u32::MAX => (None, rest),
            n => {
                let (fp, rest) = rest.split_at_checked(n as usize)?;
                (Some(fp), rest)
            }
        };
        Some((id, fp, rest.get(..slot.body_len as usize)?))
    }

    fn find(&self, service: &str, key: &str) -> Option<Found<'_>> {
        let place = *self.index.get(&self.hash(service, key))?;
        let slot = self
            .slots
            .get(usize::try_from(place.checked_sub(self.first)?).ok()?)?;
        if !slot.live {
            return None;
        }
        let (id, fingerprint, body) = self.texts(slot)?;
        let named = id.len() == service.len() + 1 + key.len()
            && id.starts_with(service.as_bytes())
            && id[service.len()] == 0x1f
            && id.ends_with(key.as_bytes());
        named.then_some(Found {
            slot,
            fingerprint,
            body,
        })
    }

    pub fn decide(
        &self,
        policy: &Policy,
        service: &str,
        key: Option<&str>,
        fingerprint: Option<&str>,
        now: Duration,
    ) -> Decision<'_> {
        if policy.mode == Mode::Ignore {
            return Decision::Execute {
                after_expiry: false,
            };
        }
        let Some(key) = key else {
            return if policy.required {
                Decision::Missing
            } else {
                Decision::Execute {
                    after_expiry: false,
                }
            };
        };
        let Some(rec) = self.find(service, key) else {
            return Decision::Execute {
                after_expiry: false,
            };
        };
        let slot = rec.slot;
        if now >= slot.created_at() + policy.retention {
            return Decision::Execute { after_expiry: true };
        }
        if now < slot.completes_at() {
            return Decision::Conflict { of: slot.seq };
        }
        if policy.fingerprint != Fingerprint::None
            && rec.fingerprint != fingerprint.map(str::as_bytes)
        {
            return Decision::Mismatch { of: slot.seq };
        }
        Decision::Replay {
            of: slot.seq,
            response: rec.stored(),
        }
    }

    /// Remember an execution's outcome under its key (replacing an expired record).
    pub fn remember(&mut self, service: &str, key: &str, record: KeyRecord) {
        self.remember_parts(service, key, record.kept());
    }

    /// [`remember`](Self::remember) from borrowed parts.
    pub fn remember_parts(&mut self, service: &str, key: &str, kept: Kept<'_>) {
        let hash = self.hash(service, key);
        let place = self.first + self.slots.len() as u64;
        if let Some(old) = self.index.insert(hash, place) {
            // The key's earlier record (or, in a collision, another key's) gives way.
            let old = old
                .checked_sub(self.first)
                .and_then(|i| usize::try_from(i).ok());
            if let Some(slot) = old.and_then(|i| self.slots.get_mut(i)) {
                if std::mem::replace(&mut slot.live, false) {
                    self.live -= 1;
                }
            }
        }
        let fp = kept.fingerprint.unwrap_or("");
        let at = self.chunks.place(&[
            service.as_bytes(),
            b"\x1f",
            key.as_bytes(),
            fp.as_bytes(),
            kept.body,
        ]);
        self.slots.push_back(Slot {
            hash,
            at,
            id_len: (service.len() + 1 + key.len()) as u32,
            fp_len: kept.fingerprint.map_or(u32::MAX, |f| f.len() as u32),
            body_len: kept.body.len() as u32,
            live: true,
            seq: kept.seq,
            created_at: Slot::time(kept.created_at),
            completes_at: Slot::time(kept.completes_at),
            status: kept.status,
            headers: kept.headers,
        });
        self.live += 1;
        while self.live > self.max {
            self.forget_oldest();
        }
        // Empty slots would otherwise pile up under repeated re-use of the same keys.
        if self.slots.len() > 2 * self.live + 64 {
            self.compact();
        }
        self.chunks.release_before(self.slots.front().map(|s| s.at));
    }

    /// Forget the oldest record (and the empty slots before it).
    fn forget_oldest(&mut self) {
        while let Some(slot) = self.slots.pop_front() {
            let place = self.first;
            self.first += 1;
            if slot.live {
                if self.index.get(&slot.hash) == Some(&place) {
                    self.index.remove(&slot.hash);
                }
                self.live -= 1;
                let (order, set) = &mut self.forgotten;
                if set.insert(slot.hash) {
                    order.push_back(slot.hash);
                }
                if order.len() > self.max {
                    order.pop_front().map(|h| set.remove(&h));
                }
                return;
            }
        }
    }

    /// Drop the empty slots and re-index the rest.
    fn compact(&mut self) {
        self.slots.retain(|s| s.live);
        for (i, slot) in self.slots.iter().enumerate() {
            self.index.insert(slot.hash, self.first + i as u64);
        }
    }

    /// Forget the record execution `seq` left under a key (it could not be journaled).
    pub fn forget(&mut self, service: &str, key: &str, seq: u64) {
        let hash = self.hash(service, key);
        let Some(&place) = self.index.get(&hash) else {
            return;
        };
        let i = place
            .checked_sub(self.first)
            .and_then(|i| usize::try_from(i).ok());
        if let Some(slot) = i.and_then(|i| self.slots.get_mut(i)) {
            if slot.live && slot.seq == seq {
                slot.live = false;
                self.live -= 1;
                self.index.remove(&hash);
            }
        }
    }

    /// The record for a key, expired or not (lookups by key use it).
    pub fn get(&self, service: &str, key: &str) -> Option<KeyRecord> {
        let rec = self.find(service, key)?;
        let slot = rec.slot;
        let fingerprint = rec.fingerprint.map(std::str::from_utf8).transpose().ok()?;
        let kept = Kept {
            fingerprint,
            seq: slot.seq,
            created_at: slot.created_at(),
            completes_at: slot.completes_at(),
            status: slot.status,
            headers: slot.headers.clone(),
            body: rec.body,
        };
        Some(kept.to_record())
    }

    pub fn len(&self) -> usize {
        self.live
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Slots held, empty ones included: what the store's ring costs (for the tests).
    #[doc(hidden)]
    pub fn slot_count(&self) -> usize {
        self.slots.len()
    }

    /// The chunks holding the kept texts (for the tests).
    #[doc(hidden)]
    pub fn chunks(&self) -> &Chunks {
        &self.chunks
    }
}

/// The latest execution (seq) per (service, idempotency key), whatever the idempotency mode:
/// lookups and cancels accept a key as the action's id. It keeps 16 bytes a key (hash, seq);
/// a caller confirms a hit against the record it names, so a collision reads as "unknown".
///
/// Executions are appended to a list and folded into the map on lookup: a load test sends a
/// new key per request and looks few up, and a push is far cheaper than a map insert.
#[derive(Default)]
pub struct KeyIndex {
    map: FastMap<u64, u64>,
    /// (hash, seq) noted since the last fold, in seq order.
    pending: Vec<(u64, u64)>,
    state: FastState,
}

impl KeyIndex {
    pub fn insert(&mut self, service: &str, key: &str, seq: u64) {
        self.pending
            .push((self.state.hash_one((service, key)), seq));
    }

    pub fn get(&mut self, service: &str, key: &str) -> Option<u64> {
        // In seq order: a key executed again names its latest execution.
        self.map.extend(self.pending.drain(..));
        self.map.get(&self.state.hash_one((service, key))).copied()
    }

    /// With a bounded ledger (`--max-entries`), keys whose execution was evicted name nothing
    /// any more: once they are the majority (`held` records remain, the oldest numbered
    /// `first_seq`), drop them, so the index stays proportional to the ledger. Amortised O(1).
    pub fn forget_before(&mut self, first_seq: u64, held: usize) {
        if first_seq > 1 && self.len() > 2 * held + 1024 {
            // Capacity is kept: the index grows back to the same size, without reallocating.
            self.map.retain(|_, seq| *seq >= first_seq);
            let gone = self.pending.partition_point(|&(_, seq)| seq < first_seq);
            self.pending.drain(..gone);
        }
    }

    /// Executions noted (a key executed again counts again until a lookup folds it in).
    pub fn len(&self) -> usize {
        self.map.len() + self.pending.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// FNV-1a (the `fnv` crate) as an `io::Write`, to hash serialized JSON without building the text.
#[derive(Default)]
struct Fnv(fnv::FnvHasher);

impl std::io::Write for Fnv {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        std::hash::Hasher::write(&mut self.0, buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A stable 64-bit fingerprint (FNV-1a), printed as 16 hex digits.
pub fn fingerprint_bytes(bytes: &[u8]) -> String {
    let mut h = Fnv::default();
    let _ = std::io::Write::write(&mut h, bytes);
    crate::hash::hex16(std::hash::Hasher::finish(&h.0))
}

/// The fingerprint of a request body under a policy (see [`Fingerprint`]).
pub fn fingerprint(how: &Fingerprint, raw: &[u8], json: Option<&Value>) -> Option<String> {
    match how {
        Fingerprint::None => None,
        Fingerprint::Body => Some(match json {
            // The same bytes as `v.to_string()`, hashed as they are written.
            Some(v) => {
                let mut h = Fnv::default();
                let _ = serde_json::to_writer(&mut h, v);
                crate::hash::hex16(std::hash::Hasher::finish(&h.0))
            }
            None => fingerprint_bytes(raw),
        }),
        Fingerprint::Pointers(ptrs) => {
            let picked: Vec<Value> = ptrs
                .iter()
                .map(|p| {
                    json.and_then(|v| v.pointer(p))
                        .cloned()
                        .unwrap_or(Value::Null)
                })
                .collect();
            Some(fingerprint_bytes(
                Value::Array(picked).to_string().as_bytes(),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_key_costs_at_most_88_bytes_besides_its_texts() {
        // What a key store holds per key grows a load test's memory with every request.
        assert!(
            std::mem::size_of::<Slot>() <= 88,
            "{}",
            std::mem::size_of::<Slot>()
        );
    }

    #[test]
    fn a_slot_keeps_times_to_the_nanosecond_and_a_time_past_its_range_as_never() {
        let t = Duration::new(86_400, 123_456_789);
        assert_eq!(Duration::from_nanos(Slot::time(t)), t);
        assert_eq!(Slot::time(Duration::MAX), u64::MAX);
    }
}
