//! The ledger: ground truth of every request a world received and what took effect.
//!
//! One [`Record`] per request, appended in arrival order, numbered by `seq` from 1. A record keeps
//! the *effect* (was the action applied, when, was it cancelled first) apart from the *response*
//! (sent, delayed, dropped, reset, hung): a client's view and the world's truth differ exactly
//! there. Timed parts are stored as scheduled scenario times and resolved against the clock when
//! read ([`Record::view`]), so an `apply-later` effect or a delayed response needs no timer to be
//! reported correctly at any instant, and a lookup with lag can ask "as of `now - lag`".
//!
//! [`Entry`] is the serialized view (the `GET /_admin/ledger` and JSONL shape); it deserializes
//! too, so offline tools can read an exported ledger. Imports `clock` and `fate` only.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::watch;

use crate::clock::Clock;
use crate::fate::Fate;

mod codec;

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
    /// A cancellation request.
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
}

/// The response part of a record, as scheduled.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResponsePlan {
    pub delivery: Delivery,
    /// Status the client receives; `None` when it receives nothing.
    pub status: Option<u16>,
    /// When it is (or was) sent; for `Sent`, a future time means still pending.
    pub at: Option<Duration>,
}

/// One request as the world keeps it (serialized as is into the journal).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Record {
    pub seq: u64,
    pub service: String,
    pub route: Option<String>,
    pub method: String,
    pub path: String,
    pub received_at: Duration,
    pub idempotency_key: Option<String>,
    pub fingerprint: Option<String>,
    pub intent: Option<Value>,
    pub work_id: Option<String>,
    pub revision: Option<Value>,
    pub body: Value,
    pub body_truncated: bool,
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
    pub detail: Option<Value>,
}

impl Record {
    /// The record, moved out: what is left owns nothing (no strings, no trees) but keeps its
    /// numbers.
    fn take(&mut self) -> Record {
        Record {
            service: std::mem::take(&mut self.service),
            route: self.route.take(),
            method: std::mem::take(&mut self.method),
            path: std::mem::take(&mut self.path),
            idempotency_key: self.idempotency_key.take(),
            fingerprint: self.fingerprint.take(),
            intent: self.intent.take(),
            work_id: self.work_id.take(),
            revision: self.revision.take(),
            body: self.body.take(),
            response: self.response.clone(),
            actor: self.actor.take(),
            event: self.event.take(),
            detail: self.detail.take(),
            ..*self
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
    /// The action id used in responses and lookups.
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
        if let Some(c) = self.cancelled_at {
            if c <= t && c < applies_at {
                return Some(ActionState::Cancelled);
            }
        }
        Some(if applies_at <= t {
            ActionState::Applied
        } else {
            ActionState::Pending
        })
    }

    /// When the effect took place, as of `t`.
    pub fn applied_at(&self, t: Duration) -> Option<Duration> {
        match self.state_at(t) {
            Some(ActionState::Applied) => self.applies_at,
            _ => None,
        }
    }

    /// The serialized view as of the clock's current time.
    pub fn view(&self, clock: &Clock) -> Entry {
        let now = clock.now();
        let applied_at = self.applied_at(now);
        let delivery = match self.response.delivery {
            Delivery::Sent if self.response.at.is_some_and(|at| at > now) => Delivery::Pending,
            d => d,
        };
        let sent = delivery == Delivery::Sent
            || delivery == Delivery::Dropped
            || delivery == Delivery::Reset;
        Entry {
            seq: self.seq,
            service: self.service.clone(),
            route: self.route.clone(),
            method: self.method.clone(),
            path: self.path.clone(),
            received_at: clock.rfc3339(self.received_at),
            idempotency_key: self.idempotency_key.clone(),
            fingerprint: self.fingerprint.clone(),
            intent: self.intent.clone(),
            work_id: self.work_id.clone(),
            revision: self.revision.clone(),
            body: self.body.clone(),
            body_truncated: self.body_truncated,
            disposition: self.disposition,
            replay_of: self.replay_of,
            executed_after_expiry: self.executed_after_expiry,
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
            detail: self.detail.clone(),
        }
    }
}

impl Record {
    /// A bare record for an agent event at time `at`: no body, no action, response "sent".
    pub fn agent_event(agent: &str, event: &str, at: Duration, detail: Value) -> Record {
        Record {
            seq: 0,
            service: agent.to_string(),
            route: None,
            method: String::new(),
            path: String::new(),
            received_at: at,
            idempotency_key: None,
            fingerprint: None,
            intent: None,
            work_id: None,
            revision: None,
            body: Value::Null,
            body_truncated: false,
            disposition: Disposition::Agent,
            replay_of: None,
            executed_after_expiry: false,
            fate: None,
            applies_at: None,
            cancelled_at: None,
            response: ResponsePlan {
                delivery: Delivery::Sent,
                status: None,
                at: Some(at),
            },
            actor: Some(format!("agent:{agent}")),
            event: Some(event.to_string()),
            detail: Some(detail),
        }
    }
}

/// An agent's event as [`Record::agent_event`] makes it (plus `work_id` and `revision`), borrowed,
/// with its detail already written as compact JSON text: what [`Ledger::append_agent_event`]
/// encodes without a `Record`, or a detail tree built only to be serialised and dropped.
pub struct AgentEvent<'a> {
    pub agent: &'a str,
    pub event: &'a str,
    pub at: Duration,
    pub work_id: Option<&'a str>,
    pub revision: Option<&'a Value>,
    /// A JSON object as `serde_json` writes the `Value` it stands for: compact, keys in order.
    pub detail: &'a [u8],
}

impl AgentEvent<'_> {
    /// The record this event stands for.
    pub fn record(&self) -> Record {
        let detail = serde_json::from_slice(self.detail).unwrap_or(Value::Null);
        let mut rec = Record::agent_event(self.agent, self.event, self.at, detail);
        rec.work_id = self.work_id.map(str::to_string);
        rec.revision = self.revision.cloned();
        rec
    }
}

/// A replay of an executed request, borrowed from the request and its route: what
/// [`Ledger::append_replay`] encodes (with the original's fingerprint, intent and body) without
/// a `Record` — the fast lane of replays of the very same bytes.
pub struct Replay<'a> {
    pub service: &'a str,
    pub route: &'a str,
    pub method: &'a str,
    pub path: &'a str,
    pub received_at: Duration,
    pub key: &'a str,
    pub work_id: Option<&'a str>,
    pub revision: Option<&'a Value>,
    pub body_truncated: bool,
    pub replay_of: u64,
    /// Sent at once with this status.
    pub status: u16,
    pub actor: Option<&'a str>,
}

impl Replay<'_> {
    /// The record this replay stands for (its fingerprint, intent and body are the original's).
    pub fn record(&self) -> Record {
        Record {
            seq: 0,
            service: self.service.to_string(),
            route: Some(self.route.to_string()),
            method: self.method.to_string(),
            path: self.path.to_string(),
            received_at: self.received_at,
            idempotency_key: Some(self.key.to_string()),
            fingerprint: None,
            intent: None,
            work_id: self.work_id.map(str::to_string),
            revision: self.revision.cloned(),
            body: Value::Null,
            body_truncated: self.body_truncated,
            disposition: Disposition::Replayed,
            replay_of: Some(self.replay_of),
            executed_after_expiry: false,
            fate: None,
            applies_at: None,
            cancelled_at: None,
            response: ResponsePlan {
                delivery: Delivery::Sent,
                status: Some(self.status),
                at: Some(self.received_at),
            },
            actor: self.actor.map(str::to_string),
            event: None,
            detail: None,
        }
    }
}

impl Record {
    /// A declaration made through the admin API (`service` is `_admin`, no actor).
    pub fn declaration(event: &str, at: Duration, detail: Value) -> Record {
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
    let mut out = Vec::with_capacity(24);
    write_action_id(&mut out, seq);
    String::from_utf8(out).unwrap_or_default()
}

/// [`action_id`] written onto `out`. Digit by digit: rendered into most responses, and format!
/// costs several times more.
pub fn write_action_id(out: &mut Vec<u8>, seq: u64) {
    let mut digits = [0u8; 20];
    let mut n = seq;
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(b"act_");
    out.extend_from_slice(&digits[i..]);
}

/// The seq inside an action id.
pub fn parse_action_id(id: &str) -> Option<u64> {
    id.strip_prefix("act_")?.parse().ok()
}

/// The serialized ledger entry. Every field but `seq` has a default when read back, so hand-made
/// ledgers (test fixtures, other tools' exports) need only the fields that matter to them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Entry {
    pub seq: u64,
    pub service: String,
    pub route: Option<String>,
    pub method: String,
    pub path: String,
    pub received_at: String,
    pub idempotency_key: Option<String>,
    pub fingerprint: Option<String>,
    pub intent: Option<Value>,
    pub work_id: Option<String>,
    pub revision: Option<Value>,
    pub body: Value,
    #[serde(default)]
    pub body_truncated: bool,
    pub disposition: Disposition,
    pub replay_of: Option<u64>,
    pub executed_after_expiry: bool,
    pub fate: Option<String>,
    pub action_id: Option<String>,
    pub applied: bool,
    pub applied_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelled_at: Option<String>,
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
        self.service.as_ref().is_none_or(|s| *s == r.service)
            && self
                .route
                .as_ref()
                .is_none_or(|x| r.route.as_ref() == Some(x))
            && self
                .key
                .as_ref()
                .is_none_or(|k| r.idempotency_key.as_ref() == Some(k))
            && self
                .work_id
                .as_ref()
                .is_none_or(|w| r.work_id.as_ref() == Some(w))
            && self.since.is_none_or(|s| r.seq > s)
            && self.disposition.is_none_or(|d| r.disposition == d)
            && self
                .event
                .as_ref()
                .is_none_or(|e| r.event.as_ref() == Some(e))
            && self
                .actor
                .as_ref()
                .is_none_or(|a| r.actor.as_ref() == Some(a))
    }
}

/// The append-only list of records, with a watch that ticks on every append so waiters
/// (`ledger/wait`) need no polling. Optionally bounded: past `max` records the oldest are evicted
/// (and counted), so a sidecar left running for days keeps flat memory.
/// Where appended records are also sent (the journal), so that no code path that appends can
/// forget to persist.
pub trait Sink: Send + Sync {
    fn appended(&self, record: &Record);
}

/// A record's intent and body as compact JSON text, for [`Ledger::append_texts`].
#[derive(Default)]
pub struct Texts<'a> {
    pub intent: Option<&'a [u8]>,
    pub body: Option<&'a [u8]>,
    /// Its service, route, method and path, borrowed, where the record's own are left empty.
    pub names: Option<Names<'a>>,
}

/// A record's service, route, method and path, borrowed from the request and the scenario. An
/// action's record is appended with them instead of its own strings, which are then never
/// allocated: four strings made, copied and freed per request only to be encoded.
#[derive(Clone, Copy, Debug)]
pub struct Names<'a> {
    pub service: &'a str,
    pub route: Option<&'a str>,
    pub method: &'a str,
    pub path: &'a str,
}

impl<'a> Names<'a> {
    /// A record's own.
    pub fn of(r: &'a Record) -> Names<'a> {
        Names {
            service: &r.service,
            route: r.route.as_deref(),
            method: &r.method,
            path: &r.path,
        }
    }

    /// The record with these as its own strings.
    pub fn fill(&self, r: &mut Record) {
        r.service = self.service.to_string();
        r.route = self.route.map(str::to_string);
        r.method = self.method.to_string();
        r.path = self.path.to_string();
    }
}

pub struct Ledger {
    /// The records, encoded (see `codec`): a few hundred bytes less each than as `Record`s.
    records: codec::Store,
    counts: Counts,
    sink: Option<Box<dyn Sink>>,
    /// Seq of the oldest record held.
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
            records: codec::Store::default(),
            counts: Counts::default(),
            sink: None,
            first_seq: 1,
            max: max.map(|m| m.max(1)),
            evicted: 0,
            appended: watch::channel(0).0,
        }
    }

    /// The seq the next record will get.
    pub fn next_seq(&self) -> u64 {
        self.first_seq + self.records.len() as u64
    }

    /// Append a record; its `seq` is overwritten with the next one, which is returned.
    pub fn append(&mut self, mut record: Record) -> u64 {
        let seq = self.next_seq();
        record.seq = seq;
        if let Some(sink) = &self.sink {
            sink.appended(&record);
        }
        self.counts.add(&record);
        self.records.push(&record);
        self.pushed(seq);
        seq
    }

    /// [`append`](Self::append) a record whose fingerprint, intent and body are those of record
    /// `like` (a replay of the very same request bytes): they are copied as they are encoded
    /// instead of being parsed and encoded again, and `record`'s own are ignored. Returns `None`
    /// (appending nothing) when `like` is no longer held.
    pub fn append_like(&mut self, mut record: Record, like: u64) -> Option<u64> {
        let at = self.position(like)?;
        let seq = self.next_seq();
        record.seq = seq;
        if let Some(sink) = &self.sink {
            // The journal keeps whole records.
            let original = self.records.get(at, like)?;
            record.fingerprint = original.fingerprint;
            record.intent = original.intent;
            record.body = original.body;
            sink.appended(&record);
        }
        self.counts.add(&record);
        self.records.push_like(&record, at);
        self.pushed(seq);
        Some(seq)
    }

    /// [`append_like`](Self::append_like) of `r.record()`, encoded from its borrowed parts (the
    /// same bytes); with a sink, the record is made and appended as usual.
    pub fn append_replay(&mut self, r: &Replay<'_>, like: u64) -> Option<u64> {
        if self.sink.is_some() {
            return self.append_like(r.record(), like);
        }
        let at = self.position(like)?;
        let seq = self.next_seq();
        self.counts
            .bump(r.service, r.route, Disposition::Replayed, "", 1);
        self.records.push_replay(r, at);
        self.pushed(seq);
        Some(seq)
    }

    /// [`append`](Self::append) a record whose intent and/or body are given as their compact
    /// JSON text (as `serde_json` writes the `Value`), already written for other uses: encoded as
    /// they are instead of being built as trees only to be serialised and dropped. `record`'s own
    /// intent and body are ignored where a text is given. The record is borrowed (its `seq` is
    /// set): the caller drops it, and its strings, once it has released the world's lock. With
    /// a journal its parts are moved into the whole record the journal gets (and kept there).
    pub fn append_texts(&mut self, record: &mut Record, texts: &Texts<'_>) -> u64 {
        if self.sink.is_some() {
            // The journal keeps whole records.
            let parse = |t: &[u8]| serde_json::from_slice(t).unwrap_or(Value::Null);
            if let Some(names) = &texts.names {
                names.fill(record);
            }
            let mut whole = record.take();
            if let Some(t) = texts.intent {
                whole.intent = Some(parse(t));
            }
            if let Some(t) = texts.body {
                whole.body = parse(t);
            }
            record.seq = self.append(whole);
            return record.seq;
        }
        let seq = self.next_seq();
        record.seq = seq;
        match &texts.names {
            Some(n) => self.counts.add_as(record, n.service, n.route),
            None => self.counts.add(record),
        }
        self.records.push_texts(record, texts);
        self.pushed(seq);
        seq
    }

    /// [`Ledger::append`] of `ev.record()`, encoded straight from its parts (with a sink, the
    /// record is made and appended as usual, since the sink takes a `Record`).
    pub fn append_agent_event(&mut self, ev: &AgentEvent<'_>) -> u64 {
        if self.sink.is_some() {
            return self.append(ev.record());
        }
        let seq = self.next_seq();
        self.counts.bump(ev.agent, "", Disposition::Agent, "", 1);
        self.records.push_agent_event(ev);
        self.pushed(seq);
        seq
    }

    /// [`append_agent_event`](Self::append_agent_event) of an event about a request the agent
    /// was sent: the record also has the request's `method`, `path` and `body` (compact JSON
    /// text, as serde_json writes the `Value`; `null` for none).
    pub fn append_agent_request(
        &mut self,
        ev: &AgentEvent<'_>,
        method: &str,
        path: &str,
        body: &[u8],
    ) -> u64 {
        if self.sink.is_some() {
            let mut record = ev.record();
            record.method = method.to_string();
            record.path = path.to_string();
            record.body = serde_json::from_slice(body).unwrap_or(Value::Null);
            return self.append(record);
        }
        let seq = self.next_seq();
        self.counts.bump(ev.agent, "", Disposition::Agent, "", 1);
        self.records.push_agent_request(ev, method, path, body);
        self.pushed(seq);
        seq
    }

    /// Whether the record `seq` is still held (not evicted, not yet to come).
    pub fn holds(&self, seq: u64) -> bool {
        self.position(seq).is_some()
    }

    /// After a record numbered `seq` went in: evict past the bound, wake waiters.
    fn pushed(&mut self, seq: u64) {
        self.evict();
        // Waiters subscribe under the same world lock that appends hold, so skipping the
        // notification when nobody listens loses no wake-up; it saves waking eight idle
        // `Notify`s per request.
        if self.appended.receiver_count() > 0 {
            self.appended.send_replace(seq);
        }
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
        self.records.get(self.position(seq)?, seq)
    }

    /// Change the record numbered `seq` (a cancel stopping a pending action); false if it is no
    /// longer held.
    pub fn update(&mut self, seq: u64, change: impl FnOnce(&mut Record)) -> bool {
        let Some(i) = self.position(seq) else {
            return false;
        };
        let Some(mut r) = self.records.get(i, seq) else {
            return false;
        };
        change(&mut r);
        r.seq = seq;
        self.records.replace(i, &r);
        true
    }

    /// [`append`](Self::append) a record whose detail is given as compact JSON text, exactly
    /// as serializing the `Value` would write it (members sorted by name, as `serde_json` keeps
    /// them); `record.detail` is ignored. Agents write their entries' details this way instead
    /// of building trees only to be serialized and dropped (a few per request). The journal,
    /// which takes whole records, gets the detail parsed back.
    pub fn append_with_detail(&mut self, mut record: Record, detail: &[u8]) -> u64 {
        let seq = self.next_seq();
        record.seq = seq;
        record.detail = None;
        if let Some(sink) = &self.sink {
            record.detail = Some(serde_json::from_slice(detail).unwrap_or(Value::Null));
            sink.appended(&record);
            record.detail = None;
        }
        self.counts.add(&record);
        self.records.push_with_detail(&record, detail);
        self.pushed(seq);
        seq
    }

    /// The records still held, oldest first (each decoded as it is reached).
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = Record> + '_ {
        (0..self.records.len()).filter_map(move |i| self.records.get(i, self.first_seq + i as u64))
    }

    /// The records that pass `filter`, oldest first: tested before they are decoded, and
    /// starting after the `since` cursor.
    pub fn matching<'a>(&'a self, filter: &'a Filter) -> impl Iterator<Item = Record> + 'a {
        let start = filter
            .since
            .map_or(0, |s| s.saturating_sub(self.first_seq - 1) as usize);
        (start.min(self.records.len())..self.records.len()).filter_map(move |i| {
            let seq = self.first_seq + i as u64;
            if self.records.matches(i, seq, filter) {
                self.records.get(i, seq)
            } else {
                None
            }
        })
    }

    /// How many records pass `filter`, without decoding any.
    pub fn count_matching(&self, filter: &Filter) -> usize {
        let start = filter
            .since
            .map_or(0, |s| s.saturating_sub(self.first_seq - 1) as usize);
        (start.min(self.records.len())..self.records.len())
            .filter(|&i| self.records.matches(i, self.first_seq + i as u64, filter))
            .count()
    }

    /// Records still held.
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

    /// Put back a record read from the journal, with its own seq (replay after a restart).
    pub fn restore(&mut self, record: Record) {
        if self.records.len() == 0 && self.first_seq == 1 && record.seq > 1 {
            // The journal starts after evictions: keep numbering where it was.
            self.first_seq = record.seq;
        }
        if record.seq != self.next_seq() {
            return;
        }
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

/// The labels requests are counted by, for metrics.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CountKey {
    pub service: String,
    pub route: String,
    pub disposition: Disposition,
    pub fate: String,
}

/// Request counts by (service, route, disposition, fate), kept as records are appended so that
/// they survive eviction. Found by a hash of the borrowed labels: counting a request allocates
/// only the first time its label set is seen.
#[derive(Clone, Debug, Default)]
pub struct Counts {
    /// Label-set hash → index in `sets`.
    map: crate::hash::FastMap<u64, usize>,
    sets: Vec<(CountKey, u64)>,
    /// Every set's labels (service, route, fate) one after the other, and where each set's
    /// start, in `sets`' order: what a count compares against. Kept together, away from the
    /// allocator's small blocks (where the `CountKey`s' strings live), whose cache lines the
    /// other worker keeps writing: a count read its labels from another core's cache.
    labels: Vec<u8>,
    spans: Vec<[u32; 4]>,
    /// The indexes of the label sets counted last, most recent first (each checked against the
    /// labels, so a stale or unused slot is only a miss):
    /// appends mostly repeat a few label sets (a service's route; an agent's events), and
    /// comparing labels costs less than hashing them.
    recent: [usize; 4],
}

/// Whether two labels are the same bytes. Labels are short (a service's, a route's, a fate's
/// name, an agent event's; often empty), and this runs for every entry appended, several times
/// (here and in the encoding's interned strings): a slice's `==` calls `memcmp` even for a few
/// bytes (or none), these compare up to 16 bytes in two words.
#[inline]
fn same_label(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    // Two overlapping words cover every byte of `s` when `w <= n <= 2 * w`.
    #[inline(always)]
    fn ends<const W: usize>(s: &[u8]) -> Option<([u8; W], [u8; W])> {
        let head = s.first_chunk::<W>()?;
        let tail = s.last_chunk::<W>()?;
        Some((*head, *tail))
    }
    match n {
        0 => true,
        1..=3 => a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1],
        4..=7 => ends::<4>(a) == ends::<4>(b),
        8..=16 => ends::<8>(a) == ends::<8>(b),
        _ => a == b,
    }
}

impl Counts {
    fn hash(service: &str, route: &str, d: Disposition, fate: &str) -> u64 {
        use std::hash::BuildHasher;
        crate::hash::FastState::default().hash_one((service, route, d, fate))
    }

    /// Whether the label set at `at` is this one (false for an index past the end).
    #[inline(always)]
    fn is_set(&self, at: usize, service: &str, route: &str, d: Disposition, fate: &str) -> bool {
        let (Some(&[a, b, c, e]), Some((k, _))) = (self.spans.get(at), self.sets.get(at)) else {
            return false;
        };
        let is = |from: u32, to: u32, l: &str| {
            self.labels
                .get(from as usize..to as usize)
                .is_some_and(|t| same_label(t, l.as_bytes()))
        };
        k.disposition == d && is(b, c, route) && is(a, b, service) && is(c, e, fate)
    }

    /// Counts `by` more of a label set: inlined, as most counts repeat one of the last few
    /// label sets; the rest (a hash and a map) out of line, so that this path stays small.
    #[inline]
    fn bump(&mut self, service: &str, route: &str, d: Disposition, fate: &str, by: u64) {
        for i in 0..self.recent.len() {
            let at = self.recent[i];
            if self.is_set(at, service, route, d, fate) {
                if let Some((_, n)) = self.sets.get_mut(at) {
                    *n += by;
                }
                codec::to_front(&mut self.recent, i);
                return;
            }
        }
        self.bump_found(service, route, d, fate, by);
    }

    /// [`bump`](Self::bump) of a label set not counted lately: found by its hash, or added.
    #[inline(never)]
    fn bump_found(&mut self, service: &str, route: &str, d: Disposition, fate: &str, by: u64) {
        let mut h = Counts::hash(service, route, d, fate);
        let at = loop {
            match self.map.get(&h) {
                Some(&at) if self.is_set(at, service, route, d, fate) => break at,
                // A 64-bit collision between label sets: probe the next number.
                Some(_) => h = h.wrapping_add(1),
                None => {
                    let key = CountKey {
                        service: service.into(),
                        route: route.into(),
                        disposition: d,
                        fate: fate.into(),
                    };
                    self.sets.push((key, 0));
                    let mut span = [0u32; 4];
                    for (i, l) in [service, route, fate].into_iter().enumerate() {
                        span[i] = self.labels.len() as u32;
                        self.labels.extend_from_slice(l.as_bytes());
                    }
                    span[3] = self.labels.len() as u32;
                    self.spans.push(span);
                    self.map.insert(h, self.sets.len() - 1);
                    break self.sets.len() - 1;
                }
            }
        };
        if let Some((_, n)) = self.sets.get_mut(at) {
            *n += by;
        }
        let last = self.recent.len() - 1;
        self.recent[last] = at;
        codec::to_front(&mut self.recent, last);
    }

    fn add(&mut self, r: &Record) {
        self.add_as(r, &r.service, r.route.as_deref());
    }

    /// [`add`](Self::add) of `r` under this service and route (its own may be left empty).
    fn add_as(&mut self, r: &Record, service: &str, route: Option<&str>) {
        // The fate's name is written into a reused buffer: counting allocates nothing.
        thread_local! {
            static FATE: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
        }
        let count = |fate: &str, counts: &mut Counts| {
            counts.bump(service, route.unwrap_or(""), r.disposition, fate, 1)
        };
        match r.fate.map(|f| (f, f.plain_name())) {
            None => count("", self),
            Some((_, Some(name))) => count(name, self),
            Some((f, None)) => FATE.with(|b| match b.try_borrow_mut() {
                Ok(mut buf) => {
                    use std::fmt::Write as _;
                    buf.clear();
                    let _ = write!(buf, "{f}");
                    count(&buf, self);
                }
                Err(_) => count(&f.to_string(), self),
            }),
        }
    }

    /// Add another set of counts to these (a retired world's, into the server's totals).
    pub fn merge(&mut self, other: &Counts) {
        for (k, n) in &other.sets {
            self.bump(&k.service, &k.route, k.disposition, &k.fate, *n);
        }
    }

    /// Every label set with its count, sorted by labels.
    pub fn sorted(&self) -> Vec<(CountKey, u64)> {
        let mut v: Vec<(CountKey, u64)> = self.sets.clone();
        v.sort();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_compare_as_their_bytes_at_every_length() {
        let base: Vec<u8> = (0..40u8).map(|i| b'a' + i % 26).collect();
        let copy = base.clone();
        for n in 0..base.len() {
            let a = &base[..n];
            assert!(same_label(a, &copy[..n]), "{n}");
            for at in 0..n {
                let mut b = a.to_vec();
                b[at] ^= 1;
                assert!(!same_label(a, &b), "{n} differing at {at}");
            }
            if n > 0 {
                assert!(!same_label(a, &base[..n - 1]), "{n} against {}", n - 1);
            }
        }
    }

    #[test]
    fn counts_add_up_whatever_the_order_of_label_sets() {
        let mut c = Counts::default();
        let mut want = std::collections::BTreeMap::new();
        let labels = ["a", "b", "c", "d", "e", "f"];
        for i in 0..500usize {
            // Runs of one label set, alternations and more sets than the recent ones kept.
            let (s, r) = (labels[(i / 3) % 6], labels[(i * 7) % 5]);
            let d = [Disposition::Executed, Disposition::Replayed][i % 2];
            c.bump(s, r, d, "", 1);
            *want.entry((s, r, d)).or_insert(0u64) += 1;
        }
        let got: Vec<_> = c
            .sorted()
            .into_iter()
            .map(|(k, n)| ((k.service, k.route, k.disposition), n))
            .collect();
        let want: Vec<_> = want
            .into_iter()
            .map(|((s, r, d), n)| ((s.to_string(), r.to_string(), d), n))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn action_ids_are_act_and_the_seq() {
        for seq in [0, 1, 9, 10, 12345, u64::MAX] {
            assert_eq!(action_id(seq), format!("act_{seq}"));
            assert_eq!(parse_action_id(&action_id(seq)), Some(seq));
        }
    }
    use crate::clock::ClockKind;

    fn action(applies_at: Option<u64>, cancelled_at: Option<u64>) -> Record {
        Record {
            seq: 1,
            service: "pay".into(),
            route: Some("create".into()),
            method: "POST".into(),
            path: "/v1/t".into(),
            received_at: Duration::from_secs(1),
            idempotency_key: None,
            fingerprint: None,
            intent: None,
            work_id: None,
            revision: None,
            body: Value::Null,
            body_truncated: false,
            disposition: Disposition::Executed,
            replay_of: None,
            executed_after_expiry: false,
            fate: Some(Fate::ApplyLater(Duration::from_secs(4))),
            applies_at: applies_at.map(Duration::from_secs),
            cancelled_at: cancelled_at.map(Duration::from_secs),
            response: ResponsePlan {
                delivery: Delivery::Sent,
                status: Some(202),
                at: Some(Duration::from_secs(1)),
            },
            actor: None,
            event: None,
            detail: None,
        }
    }

    #[test]
    fn effect_state_is_derived_from_time() {
        let s = |secs| Duration::from_secs(secs);
        let r = action(Some(5), None);
        assert_eq!(r.state_at(s(0)), None, "not received yet");
        assert_eq!(r.state_at(s(1)), Some(ActionState::Pending));
        assert_eq!(r.state_at(s(5)), Some(ActionState::Applied));
        let c = action(Some(5), Some(3));
        assert_eq!(c.state_at(s(2)), Some(ActionState::Pending));
        assert_eq!(c.state_at(s(9)), Some(ActionState::Cancelled));
        let late_cancel = action(Some(5), Some(7));
        assert_eq!(late_cancel.state_at(s(9)), Some(ActionState::Applied));
        assert_eq!(
            action(None, None).state_at(s(9)),
            None,
            "never applied: unknown"
        );
    }

    #[test]
    fn spellings_match_the_serialized_form() {
        for d in [
            Disposition::Executed,
            Disposition::MissingKey,
            Disposition::TooLarge,
            Disposition::Declaration,
        ] {
            assert_eq!(serde_json::to_value(d).unwrap(), d.as_str());
        }
        for d in [Delivery::Sent, Delivery::Hung, Delivery::Pending] {
            assert_eq!(serde_json::to_value(d).unwrap(), d.as_str());
        }
    }

    #[test]
    fn a_bounded_ledger_evicts_the_oldest_and_counts_them() {
        let mut l = Ledger::bounded(Some(2));
        for _ in 0..5 {
            l.append(action(Some(1), None));
        }
        assert_eq!(l.len(), 2);
        assert_eq!(l.evicted(), 3);
        assert!(l.get(3).is_none());
        assert_eq!(l.get(4).map(|r| r.seq), Some(4));
        assert_eq!(l.next_seq(), 6);
    }

    #[test]
    fn agent_events_append_as_their_records() {
        // What the journal would get.
        #[derive(Default)]
        struct Sent(std::sync::Mutex<Vec<String>>);
        impl Sink for std::sync::Arc<Sent> {
            fn appended(&self, r: &Record) {
                self.0.lock().unwrap().push(format!("{r:?}"));
            }
        }
        let detail = serde_json::json!({"state": "x", "task_id": "t-1"});
        let text = serde_json::to_vec(&detail).unwrap();
        let ev = AgentEvent {
            agent: "a",
            event: "status",
            at: Duration::from_secs(2),
            work_id: Some("t-1"),
            revision: None,
            detail: &text,
        };
        let (mut by_parts, mut by_record) = (Ledger::bounded(Some(3)), Ledger::bounded(Some(3)));
        let sink = std::sync::Arc::new(Sent::default());
        let mut journaled = Ledger::bounded(None);
        journaled.set_sink(Box::new(sink.clone()));
        for i in 0..4 {
            by_parts.append(action(None, None));
            by_record.append(action(None, None));
            let seq = by_parts.append_agent_event(&ev);
            assert_eq!(by_record.append(ev.record()), seq);
            assert_eq!(journaled.append_agent_event(&ev), i + 1);
        }
        let all = |l: &Ledger| format!("{:?}", l.iter().collect::<Vec<_>>());
        assert_eq!(all(&by_parts), all(&by_record));
        assert_eq!(by_parts.counts().sorted(), by_record.counts().sorted());
        assert_eq!(by_parts.evicted(), by_record.evicted());
        let mut first = ev.record();
        first.seq = 1;
        assert_eq!(sink.0.lock().unwrap()[0], format!("{first:?}"));
        assert_eq!(sink.0.lock().unwrap().len(), 4);
    }

    #[test]
    fn agent_requests_append_as_their_records() {
        #[derive(Default)]
        struct Sent(std::sync::Mutex<Vec<String>>);
        impl Sink for std::sync::Arc<Sent> {
            fn appended(&self, r: &Record) {
                self.0.lock().unwrap().push(format!("{r:?}"));
            }
        }
        let detail = serde_json::to_vec(&serde_json::json!({"run_id": "r", "state": {}})).unwrap();
        let body = serde_json::json!({"messages": [{"id": "m", "role": "user"}], "runId": "r"});
        let body_text = serde_json::to_vec(&body).unwrap();
        let ev = AgentEvent {
            agent: "a",
            event: "run-started",
            at: Duration::from_secs(2),
            work_id: Some("r"),
            revision: None,
            detail: &detail,
        };
        let mut whole = ev.record();
        whole.method = "POST".into();
        whole.path = "/agents/a".into();
        whole.body = body;
        let (mut by_parts, mut by_record) = (Ledger::bounded(Some(3)), Ledger::bounded(Some(3)));
        let sink = std::sync::Arc::new(Sent::default());
        let mut journaled = Ledger::bounded(None);
        journaled.set_sink(Box::new(sink.clone()));
        for i in 0..4 {
            by_parts.append(action(None, None));
            by_record.append(action(None, None));
            let seq = by_parts.append_agent_request(&ev, "POST", "/agents/a", &body_text);
            assert_eq!(by_record.append(whole.clone()), seq);
            assert_eq!(
                journaled.append_agent_request(&ev, "POST", "/agents/a", &body_text),
                i + 1
            );
        }
        let all = |l: &Ledger| format!("{:?}", l.iter().collect::<Vec<_>>());
        assert_eq!(all(&by_parts), all(&by_record));
        assert_eq!(by_parts.counts().sorted(), by_record.counts().sorted());
        let mut first = whole.clone();
        first.seq = 1;
        assert_eq!(sink.0.lock().unwrap()[0], format!("{first:?}"));
    }

    #[tokio::test]
    async fn view_reports_pending_delivery_until_its_time() {
        let clock = Clock::new(ClockKind::Manual);
        let mut r = action(Some(1), None);
        r.response.at = Some(Duration::from_secs(3));
        assert_eq!(r.view(&clock).response.delivery, Delivery::Pending);
        clock.advance(Duration::from_secs(3)).await.unwrap();
        let v = r.view(&clock);
        assert_eq!(v.response.delivery, Delivery::Sent);
        assert_eq!(v.response.status, Some(202));
        assert!(v.applied);
        assert_eq!(v.action_id.as_deref(), Some("act_1"));
    }
}
