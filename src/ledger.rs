//! The ledger: ground truth of every request a world received and what took effect.
//!
//! One [`Record`] per request, in arrival order, numbered by `seq` from 1. A record keeps the
//! *effect* (applied, when, cancelled first) apart from the *response* (sent, delayed, dropped,
//! reset, hung): a client's view and the world's truth differ exactly there. Timed parts are
//! scheduled scenario times resolved when read ([`Record::view`]), so nothing needs a timer and
//! a lookup with lag can ask "as of `now - lag`". [`Entry`] is the serialized view (admin API,
//! JSONL), readable back by offline tools. Imports `clock` and `fate` only.

use std::borrow::Cow;
use std::time::Duration;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;
use tokio::sync::watch;

use crate::clock::Clock;
use crate::fate::Fate;
use crate::idempotency::KeyRecord;
use crate::revision::Revision;

mod counts;
mod store;

pub use counts::{CountKey, Counts};

/// What the world did with a request.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "kebab-case")]
pub enum Disposition {
    /// Ran through its fate (whether or not that fate applied anything).
    #[default]
    Executed,
    /// Answered from an idempotency key's stored response; nothing applied.
    Replayed,
    /// Same key while the first request was still in flight.
    Conflict,
    /// Same key with a different fingerprint.
    Mismatch,
    /// The policy requires a key and none came.
    MissingKey,
    /// An authoritative state lookup.
    Lookup,
    Cancel,
    /// Matched no route (or was malformed at the HTTP level).
    Unmatched,
    /// Rejected before routing: body over the cap.
    TooLarge,
    /// An agent interaction (message, task, cancel, result, push, run, ...); `event` says which.
    Agent,
    /// Something the orchestrator or its test declared through the admin API: a revision taking
    /// over (`event: revision`) or its own account of what happened (`event: claims`).
    Declaration,
}

impl Disposition {
    /// The wire spelling (`executed`, `missing-key`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Disposition::Executed => "executed",
            Disposition::Replayed => "replayed",
            Disposition::Conflict => "conflict",
            Disposition::Mismatch => "mismatch",
            Disposition::MissingKey => "missing-key",
            Disposition::Lookup => "lookup",
            Disposition::Cancel => "cancel",
            Disposition::Unmatched => "unmatched",
            Disposition::TooLarge => "too-large",
            Disposition::Agent => "agent",
            Disposition::Declaration => "declaration",
        }
    }
}

impl Delivery {
    /// The wire spelling (`sent`, `dropped`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Delivery::Sent => "sent",
            Delivery::Dropped => "dropped",
            Delivery::Reset => "reset",
            Delivery::Hung => "hung",
            Delivery::Pending => "pending",
            Delivery::Abandoned => "abandoned",
        }
    }
}

/// What became of the response.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Delivery {
    #[default]
    Sent,
    Dropped,
    Reset,
    Hung,
    Pending,
    /// The client closed its connection before its (delayed) response was written.
    Abandoned,
}

/// The response part of a record, as scheduled.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ResponsePlan {
    pub delivery: Delivery,
    /// Status the client receives; `None` when it receives nothing.
    pub status: Option<u16>,
    /// When it is (or was) sent; for `Sent`, a future time means still pending.
    pub at: Option<Duration>,
}

/// One request as the world keeps it (serialized as is into the journal).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Record {
    pub seq: u64,
    pub service: String,
    pub route: Option<String>,
    pub method: String,
    pub path: String,
    pub received_at: Duration,
    pub idempotency_key: Option<String>,
    pub fingerprint: Option<String>,
    pub intent: Option<JsonText>,
    pub work_id: Option<String>,
    pub revision: Option<Revision>,
    pub body: JsonText,
    pub body_truncated: bool,
    /// The text of a body that `body` holds decoded (a form), cut as `body` would be.
    #[serde(default)]
    pub raw_body: Option<String>,
    /// An action's own id, read from its response at the route's `id` pointer.
    #[serde(default)]
    pub object_id: Option<String>,
    pub disposition: Disposition,
    pub replay_of: Option<u64>,
    pub executed_after_expiry: bool,
    pub fate: Option<Fate>,
    /// When the effect takes (or took) place, if it ever does.
    pub applies_at: Option<Duration>,
    pub cancelled_at: Option<Duration>,
    pub response: ResponsePlan,
    /// Who sent it: `None` for an outside client, `agent:NAME` for an agent's own call.
    pub actor: Option<String>,
    /// For agent entries: what happened (`message`, `task-created`, `cancel`, `result`, `push`...).
    pub event: Option<String>,
    /// Kind-specific facts: a lookup's answer, a cancel's outcome, an unmatched request's reason.
    pub detail: Option<JsonText>,
    /// Executed because its key had been forgotten to keep `--max-keys` (last: the store's
    /// positional encoding reads records without it).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub key_forgotten: bool,
}

/// A JSON value kept as the text serde_json writes for it: a record's `body`, `intent` and
/// `detail`. Records are written far more often than read, and text skips building and
/// freeing a `Value` per record. In JSON (the journal) it is the value itself. `null` (a new
/// record's body until it is set) is borrowed, not allocated.
#[derive(Clone, Debug)]
pub struct JsonText(Cow<'static, str>);

impl JsonText {
    /// The text `v` serialises to (bodies and details always do; `null` should one not).
    pub fn of(v: &(impl Serialize + ?Sized)) -> JsonText {
        // Written by serde_json, so not parsed again to be checked.
        JsonText(serde_json::to_string(v).map_or(Cow::Borrowed("null"), Cow::Owned))
    }

    /// A value from text read back (checked: a store's bytes could in principle be corrupt).
    fn from_text(text: String) -> JsonText {
        match serde_json::from_str::<&RawValue>(&text) {
            Ok(_) => JsonText(Cow::Owned(text)),
            Err(_) => JsonText::default(),
        }
    }

    pub fn value(&self) -> Value {
        serde_json::from_str(&self.0).unwrap_or(Value::Null)
    }

    pub fn text(&self) -> &str {
        &self.0
    }
}

impl Default for JsonText {
    /// `null`.
    fn default() -> JsonText {
        JsonText(Cow::Borrowed("null"))
    }
}

impl From<Value> for JsonText {
    fn from(v: Value) -> JsonText {
        JsonText::of(&v)
    }
}

impl Serialize for JsonText {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if s.is_human_readable() {
            // As the JSON it is (checked when made), not as a string of it.
            let raw = serde_json::from_str::<&RawValue>(&self.0).ok();
            raw.unwrap_or(RawValue::NULL).serialize(s)
        } else {
            s.serialize_str(&self.0)
        }
    }
}

impl<'de> Deserialize<'de> for JsonText {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<JsonText, D::Error> {
        if d.is_human_readable() {
            // Through a `Value`: the journal's lines are tagged enums, which serde buffers, and
            // a raw value can be read only straight from JSON text.
            Value::deserialize(d).map(|v| JsonText::of(&v))
        } else {
            String::deserialize(d).map(JsonText::from_text)
        }
    }
}

/// State of an action at some instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ActionState {
    Pending,
    Applied,
    Cancelled,
}

impl Record {
    pub fn action_id(&self) -> String {
        action_id(self.seq)
    }

    /// Whether this record is an execution of an action (as opposed to a replay, lookup...).
    pub fn is_action(&self) -> bool {
        self.disposition == Disposition::Executed
    }

    /// The effect's state as of scenario time `t`; `None` if, at `t`, the world holds no such
    /// action (not yet received, or its fate meant nothing was ever recorded by the provider).
    pub fn state_at(&self, t: Duration) -> Option<ActionState> {
        if !self.is_action() || self.received_at > t {
            return None;
        }
        let applies_at = self.applies_at?;
        Some(match self.cancelled_at {
            Some(c) if c <= t && c < applies_at => ActionState::Cancelled,
            _ if applies_at <= t => ActionState::Applied,
            _ => ActionState::Pending,
        })
    }

    /// When the effect took place, as of `t`.
    pub fn applied_at(&self, t: Duration) -> Option<Duration> {
        let applied = self.state_at(t) == Some(ActionState::Applied);
        self.applies_at.filter(|_| applied)
    }

    /// The serialized view as of the clock's current time.
    pub fn view(&self, clock: &Clock) -> Entry {
        let now = clock.now();
        let applied_at = self.applied_at(now);
        let delivery = match self.response.delivery {
            Delivery::Sent if self.response.at.is_some_and(|at| at > now) => Delivery::Pending,
            d => d,
        };
        let sent = !matches!(delivery, Delivery::Hung | Delivery::Pending);
        Entry {
            seq: self.seq,
            service: self.service.clone(),
            route: self.route.clone(),
            method: self.method.clone(),
            path: self.path.clone(),
            received_at: clock.rfc3339(self.received_at),
            idempotency_key: self.idempotency_key.clone(),
            fingerprint: self.fingerprint.clone(),
            intent: self.intent.as_ref().map(JsonText::value),
            work_id: self.work_id.clone(),
            revision: self.revision.clone(),
            body: self.body.value(),
            body_truncated: self.body_truncated,
            raw_body: self.raw_body.clone(),
            object_id: self.object_id.clone(),
            disposition: self.disposition,
            replay_of: self.replay_of,
            executed_after_expiry: self.executed_after_expiry,
            key_forgotten: self.key_forgotten,
            fate: self.fate.map(|f| f.to_string()),
            action_id: self.is_action().then(|| self.action_id()),
            applied: applied_at.is_some(),
            applied_at: applied_at.map(|t| clock.rfc3339(t)),
            cancelled_at: self.cancelled_at.map(|t| clock.rfc3339(t)),
            response: EntryResponse {
                delivery,
                status: if delivery == Delivery::Pending {
                    None
                } else {
                    self.response.status
                },
                at: self.response.at.filter(|_| sent).map(|t| clock.rfc3339(t)),
            },
            actor: self.actor.clone(),
            event: self.event.clone(),
            detail: self.detail.as_ref().map(JsonText::value),
        }
    }

    /// A bare record for an agent event at time `at`: no body, no action, response "sent".
    pub fn agent_event(agent: &str, event: &str, at: Duration, detail: impl Serialize) -> Record {
        Record {
            service: agent.to_string(),
            received_at: at,
            disposition: Disposition::Agent,
            response: ResponsePlan {
                delivery: Delivery::Sent,
                status: None,
                at: Some(at),
            },
            actor: Some(["agent:", agent].concat()),
            event: Some(event.to_string()),
            detail: Some(JsonText::of(&detail)),
            ..Record::default()
        }
    }

    /// The journal could not take this record: it did not take effect (a restart would not
    /// know it), and the server answers 503 instead of what was planned, so nothing is
    /// acknowledged that the journal does not hold.
    fn unjournaled(&mut self) {
        let sent = self.response.delivery == Delivery::Sent;
        if self.fate.is_some() {
            self.fate = Some(match sent {
                true => Fate::ErrorBeforeApply(503),
                false => Fate::DropBeforeApply,
            });
            self.applies_at = None;
        }
        if sent {
            self.response.status = Some(503);
        }
    }

    /// The client went away at `at` without its response: nothing was written to it.
    pub fn abandon(&mut self, at: Duration) {
        self.response = ResponsePlan {
            delivery: Delivery::Abandoned,
            status: None,
            at: Some(at),
        };
    }

    /// The placeholder of entry `seq`, whose journal line was lost (`--journal-recover`); `at`
    /// is the time of the entry after it.
    pub fn journal_lost(seq: u64, at: Duration) -> Record {
        let reason = "this entry's journal line was lost: damaged or missing and left out at a restart (--journal-recover), or never written (answered 503)";
        Record {
            seq,
            ..Record::declaration("journal-lost", at, serde_json::json!({ "reason": reason }))
        }
    }

    /// A declaration made through the admin API (`service` is `_admin`, no actor).
    pub fn declaration(event: &str, at: Duration, detail: impl Serialize) -> Record {
        Record {
            disposition: Disposition::Declaration,
            actor: None,
            method: "POST".into(),
            path: format!("/{event}"),
            ..Record::agent_event("_admin", event, at, detail)
        }
    }
}

/// `act_<seq>`: action ids are ledger positions, so they are stable for a given run.
pub fn action_id(seq: u64) -> String {
    format!("act_{seq}")
}

pub fn parse_action_id(id: &str) -> Option<u64> {
    id.strip_prefix("act_")?.parse().ok()
}

/// The serialized ledger entry. Read back, it needs the fields every entry has (`seq`, `service`,
/// `received_at`, `disposition`); the others have defaults, so hand-made ledgers (test fixtures,
/// other tools' exports) need only the fields that matter to them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
pub struct Entry {
    pub seq: u64,
    pub service: String,
    pub route: Option<String>,
    #[serde(default)]
    pub method: String,
    #[serde(default)]
    pub path: String,
    pub received_at: String,
    pub idempotency_key: Option<String>,
    pub fingerprint: Option<String>,
    pub intent: Option<Value>,
    pub work_id: Option<String>,
    pub revision: Option<Revision>,
    #[serde(default)]
    pub body: Value,
    #[serde(default)]
    pub body_truncated: bool,
    /// The body as sent when `body` is its decoded form (`application/x-www-form-urlencoded`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub raw_body: Option<String>,
    /// An action's own id in its response (the route's `id` pointer), which lookups also know.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_id: Option<String>,
    pub disposition: Disposition,
    pub replay_of: Option<u64>,
    #[serde(default)]
    pub executed_after_expiry: bool,
    /// Executed because the service had forgotten its key to keep `--max-keys`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub key_forgotten: bool,
    pub fate: Option<String>,
    pub action_id: Option<String>,
    #[serde(default)]
    pub applied: bool,
    pub applied_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelled_at: Option<String>,
    #[serde(default)]
    pub response: EntryResponse,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub actor: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<Value>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct EntryResponse {
    pub delivery: Delivery,
    pub status: Option<u16>,
    pub at: Option<String>,
}

/// Which entries a reader wants (`GET /_admin/ledger?service=..&route=..`).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Filter {
    pub service: Option<String>,
    pub route: Option<String>,
    pub key: Option<String>,
    pub work_id: Option<String>,
    /// Only entries with `seq > since` (a cursor).
    pub since: Option<u64>,
    pub disposition: Option<Disposition>,
    pub event: Option<String>,
    pub actor: Option<String>,
}

impl Filter {
    pub fn matches(&self, r: &Record) -> bool {
        let is =
            |want: &Option<String>, has: Option<&String>| want.is_none() || want.as_ref() == has;
        is(&self.service, Some(&r.service))
            && is(&self.route, r.route.as_ref())
            && is(&self.key, r.idempotency_key.as_ref())
            && is(&self.work_id, r.work_id.as_ref())
            && self.since.is_none_or(|s| r.seq > s)
            && self.disposition.is_none_or(|d| r.disposition == d)
            && is(&self.event, r.event.as_ref())
            && is(&self.actor, r.actor.as_ref())
    }
}

/// At most this many placeholders for seqs lost in a journal; beyond, held records are dropped.
const MAX_PLACEHOLDERS: usize = 1_000_000;

/// Where appended records are also sent (the journal), so no path that appends can forget it.
pub trait Sink: Send + Sync {
    /// Persist `record` with its execution's key record, both or neither; false if it could not.
    fn appended(&self, record: &Record, key: Option<&KeyRecord>) -> bool;
}

/// The append-only list of records, with a watch that ticks on every append so waiters
/// (`ledger/wait`) need no polling. Optionally bounded: past `max` records the oldest are evicted
/// (and counted), so a sidecar left running for days keeps flat memory.
pub struct Ledger {
    /// The records, encoded (see `store`): a few hundred bytes each instead of kilobytes.
    records: store::Store,
    counts: Counts,
    sink: Option<Box<dyn Sink>>,
    first_seq: u64,
    max: Option<usize>,
    evicted: u64,
    appended: watch::Sender<u64>,
}

impl Default for Ledger {
    fn default() -> Self {
        Ledger::bounded(None)
    }
}

impl Ledger {
    pub fn bounded(max: Option<usize>) -> Ledger {
        Ledger {
            records: store::Store::default(),
            counts: Counts::default(),
            sink: None,
            first_seq: 1,
            max: max.map(|m| m.max(1)),
            evicted: 0,
            appended: watch::channel(0).0,
        }
    }

    pub fn next_seq(&self) -> u64 {
        self.first_seq + self.records.len() as u64
    }

    /// Append a record; its `seq` is overwritten with the next one, which is returned.
    pub fn append(&mut self, mut record: Record) -> u64 {
        self.append_keyed(&mut record, None).0
    }

    /// [`append`](Self::append) an execution with its key record, persisted in one piece; also
    /// whether the sink took it. The caller frees the record once the world's lock is released.
    pub fn append_keyed(&mut self, record: &mut Record, key: Option<&KeyRecord>) -> (u64, bool) {
        let seq = self.next_seq();
        record.seq = seq;
        let written = self
            .sink
            .as_ref()
            .is_none_or(|sink| sink.appended(record, key));
        if !written {
            record.unjournaled();
        }
        self.counts.add(record);
        self.records.push(record);
        self.evict();
        // Waiters subscribe under the same world lock that appends hold, so skipping the
        // notification when nobody listens loses no wake-up.
        if self.appended.receiver_count() > 0 {
            self.appended.send_replace(seq);
        }
        (seq, written)
    }

    fn evict(&mut self) {
        if self.max.is_some_and(|m| self.records.len() > m) {
            self.records.pop_front();
            self.first_seq += 1;
            self.evicted += 1;
        }
    }

    fn position(&self, seq: u64) -> Option<usize> {
        let i = seq.checked_sub(self.first_seq)? as usize;
        (i < self.records.len()).then_some(i)
    }

    /// A copy of the record numbered `seq`, if it is still held.
    pub fn get(&self, seq: u64) -> Option<Record> {
        self.records.get(self.position(seq)?)
    }

    /// Change the record numbered `seq` (a cancel stopping it); false if it is no longer held.
    pub fn update(&mut self, seq: u64, change: impl FnOnce(&mut Record)) -> bool {
        let Some(i) = self.position(seq) else {
            return false;
        };
        let Some(mut r) = self.records.get(i) else {
            return false;
        };
        change(&mut r);
        r.seq = seq;
        self.records.replace(i, &r);
        true
    }

    /// The records still held, oldest first (each decoded as it is reached).
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = Record> + '_ {
        (0..self.records.len()).filter_map(move |i| self.records.get(i))
    }

    /// The records that pass `filter`, oldest first, starting after the `since` cursor.
    pub fn matching<'a>(&'a self, filter: &'a Filter) -> impl Iterator<Item = Record> + 'a {
        let start = filter
            .since
            .map_or(0, |s| s.saturating_sub(self.first_seq - 1) as usize);
        (start.min(self.records.len())..self.records.len())
            .filter_map(move |i| self.records.get(i).filter(|r| filter.matches(r)))
    }

    pub fn count_matching(&self, filter: &Filter) -> usize {
        self.matching(filter).count()
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.len() == 0
    }

    /// Send every record appended from now on to `sink` as well.
    pub fn set_sink(&mut self, sink: Box<dyn Sink>) {
        self.sink = Some(sink);
    }

    /// Put back a record read from the journal, with its own seq (replay after a restart). A
    /// record older than the next seq is ignored; one past it (lines lost to damage before it)
    /// leaves the seqs between as placeholders, so no seq or action id is ever handed out twice.
    pub fn restore(&mut self, record: Record) {
        if self.records.len() == 0 && self.first_seq == 1 && record.seq > 1 {
            // The journal starts after evictions: keep numbering where it was.
            self.first_seq = record.seq;
        }
        let next = self.next_seq();
        if record.seq < next {
            return;
        }
        if record.seq - next > self.max.unwrap_or(MAX_PLACEHOLDERS) as u64 {
            // More lost than could be held anyway: the held ones go as evicted.
            self.evicted += self.records.len() as u64;
            self.records = store::Store::default();
            self.first_seq = record.seq;
        }
        for seq in self.next_seq()..record.seq {
            self.push_restored(Record::journal_lost(seq, record.received_at));
        }
        self.push_restored(record);
    }

    fn push_restored(&mut self, record: Record) {
        self.counts.add(&record);
        self.records.push(&record);
        self.evict();
    }

    /// Requests counted by labels since the ledger began (evicted records included).
    pub fn counts(&self) -> &Counts {
        &self.counts
    }

    /// How many of the oldest records were evicted to respect the bound.
    pub fn evicted(&self) -> u64 {
        self.evicted
    }

    /// A receiver that changes whenever a record is appended.
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.appended.subscribe()
    }
}
