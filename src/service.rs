//! Fake services: the action pipeline a request runs through, independent of HTTP.
//!
//! [`admit`] runs a [`Request`] through match → idempotency → fate → ledger in one critical
//! section over the world, returning an [`Outcome`]: the response and a [`Plan`] for delivering
//! it. The HTTP server carries out the plan on a socket; an agent's side-effect step calls
//! [`call`], which carries it out in process. Admission is synchronous, so an attempt's effect
//! is in the ledger before anything is sent, as a real provider commits before it replies.
//!
//! `route` matches, `action` decides and executes, `target` answers lookups and cancels,
//! `canary` finds the canaries a request carries.

use std::borrow::Cow;
use std::time::Duration;

use hyper::body::Bytes;
use hyper::HeaderMap;
use serde_json::{json, Value};

use crate::fate::Fate;
use crate::idempotency::{KeyRecord, Stored, JSON_HEADERS};
use crate::ledger::{Delivery, Disposition, JsonText, Record, ResponsePlan};
use crate::revision::Revision;
use crate::scenario::{ErrorStyle, RouteKind};
use crate::world::{State, World};

mod action;
mod canary;
pub mod errors;
pub mod form;
mod route;
mod target;

use errors::{Failure, Kind};

pub(crate) use route::header_text;
pub use route::header_value;
pub use target::cancel_pending;

/// A request to a fake service, however it arrived. Names are borrowed where the caller has
/// them, so a replay copies none.
#[derive(Clone, Debug, Default)]
pub struct Request<'a> {
    pub service: Cow<'a, str>,
    pub method: Cow<'a, str>,
    /// Path below the service's mount point, starting with '/'.
    pub path: Cow<'a, str>,
    pub headers: HeaderMap,
    /// As received (the server hands over the bytes hyper read, without a copy).
    pub body: Bytes,
    /// The body was over the cap and `body` holds only its start.
    pub too_large: bool,
    /// The client went away before sending the whole body: recorded, never executed.
    pub incomplete: bool,
    /// `None` for an outside client; `agent:NAME` for an agent's own call.
    pub actor: Option<String>,
    /// Set by in-process callers (an agent's task id and revision) instead of headers.
    pub work_id: Option<String>,
    pub revision: Option<Revision>,
    /// The caller never reads the response (an A2A side-effect step): it is rendered only when a
    /// key store keeps it; its status is decided and recorded all the same.
    pub unread: bool,
    /// The protocol the request came through, when not plain HTTP (an MCP tool call): its facts
    /// go into the entry's `detail` under the protocol's name.
    pub via: Option<Via>,
    /// The effect lands this long after admission instead of at once (an MCP task's work): a
    /// fate that applies then applies at the end of it, and is pending until.
    pub defer: Option<Duration>,
}

impl Request<'_> {
    /// The request with its names copied, to outlive what it borrowed (an MCP task's call).
    pub fn into_owned(self) -> Request<'static> {
        let own = |c: Cow<'_, str>| Cow::Owned(c.into_owned());
        Request {
            service: own(self.service),
            method: own(self.method),
            path: own(self.path),
            headers: self.headers,
            body: self.body,
            too_large: self.too_large,
            incomplete: self.incomplete,
            actor: self.actor,
            work_id: self.work_id,
            revision: self.revision,
            unread: self.unread,
            via: self.via,
            defer: self.defer,
        }
    }
}

/// What a protocol wrapped around a request knows of it (an MCP call's server, tool, id, key...).
#[derive(Clone, Debug)]
pub struct Via {
    /// The key in `detail` (`mcp`).
    pub protocol: &'static str,
    pub facts: Value,
}

/// A response to deliver.
#[derive(Clone, Debug, PartialEq)]
pub struct Response {
    pub status: u16,
    /// Mostly static text: borrowed, not allocated, per response.
    pub headers: Vec<(Cow<'static, str>, Cow<'static, str>)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn json(status: u16, v: &Value) -> Response {
        Response::json_of(status, v)
    }

    /// doubleagent's own error answer (not a provider's): `{"error": MESSAGE, "status": STATUS}`.
    pub fn own_error(status: u16, message: impl std::fmt::Display) -> Response {
        Response::json(
            status,
            &json!({"error": message.to_string(), "status": status}),
        )
    }

    /// A JSON response from any serializable value (structs keep their field order).
    pub fn json_of<T: serde::Serialize + ?Sized>(status: u16, v: &T) -> Response {
        Response {
            status,
            headers: vec![("content-type".into(), "application/json".into())],
            body: serde_json::to_vec(v).unwrap_or_default(),
        }
    }

    /// A copy of a stored response, with room for the headers a replay adds.
    fn from_stored(s: Stored<'_>) -> Response {
        let mut headers = Vec::with_capacity(s.headers.len() + 2);
        headers.extend(s.headers.iter().cloned());
        Response {
            status: s.status,
            headers,
            body: s.body.to_vec(),
        }
    }

    /// What a key store keeps of this response (borrowed: it copies what it keeps).
    fn kept(&self) -> (Cow<'static, [crate::idempotency::Header]>, &[u8]) {
        let headers = if self.headers == JSON_HEADERS {
            Cow::Borrowed(JSON_HEADERS)
        } else {
            Cow::Owned(self.headers.clone())
        };
        (headers, &self.body)
    }
}

/// How the response reaches (or fails to reach) the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Plan {
    Now,
    /// At this scenario time.
    At(Duration),
    /// Close the connection without a response.
    Drop,
    /// Reset the connection (TCP RST).
    Reset,
    /// Hold the connection open until the world closes.
    Hang,
}

/// What admission decided.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub seq: u64,
    pub response: Response,
    pub plan: Plan,
    /// What the world did with it (a protocol that wraps the answer tells a key conflict or
    /// mismatch from the route's own error).
    pub disposition: Disposition,
}

/// Run a request through the pipeline and carry out its delivery plan in process: `None` when
/// the response never arrives (dropped, reset, hung, or the world closed while it was delayed).
pub async fn call(world: &World, req: Request<'_>) -> (u64, Option<Response>) {
    let out = admit(world, req);
    let resp = match out.plan {
        Plan::Now => Some(out.response),
        Plan::At(t) => world.clock.wait_until(t).await.then_some(out.response),
        Plan::Drop | Plan::Reset | Plan::Hang => None,
    };
    (out.seq, resp)
}

/// What the per-request log event says, taken from the record before it goes into the ledger.
struct RequestLog {
    service: String,
    route: Option<String>,
    method: String,
    path: String,
    disposition: Disposition,
    fate: Option<Fate>,
    applied: bool,
}

/// Admit a request: match, idempotency, fate, ledger — atomically. The body is parsed once;
/// matching and what an action reads from its request are worked out before the lock is taken,
/// so the critical section is short.
pub fn admit(world: &World, mut req: Request<'_>) -> Outcome {
    let scenario: &crate::scenario::Scenario = &world.scenario;
    let service = scenario.service(&req.service);
    let encoding = form::encoding(&req.headers);
    let json = match req.too_large {
        true => None,
        false => form::decode(encoding, &req.body),
    };
    let (work_id, revision) = route::work_of(
        service,
        &req.headers,
        req.work_id.take(),
        req.revision.take(),
    );
    // A body that declares JSON and is not: refused as a provider refuses it, not read as text.
    let mut refused = match (&json, service, req.too_large || req.incomplete) {
        (None, Some(_), false) => form::malformed(encoding, &req.body),
        _ => None,
    };
    let found = match !req.too_large && !req.incomplete && refused.is_none() {
        true => service.and_then(|s| route::find(s, &req, json.as_ref()).map(|(r, p)| (s, r, p))),
        false => None,
    };
    let mut record = new_record(&mut req, work_id, revision);
    // The body's model as text, written once: the ledger keeps it, and an action's fingerprint
    // and intent are read from it.
    let text = json.as_ref().map(JsonText::of);
    if let Some((_, route, _)) = found
        .as_ref()
        .filter(|(_, r, _)| r.kind == RouteKind::Action)
    {
        let p = action::Prepared::of(route, &req, json.as_ref(), text.as_ref());
        refused = p
            .key
            .as_deref()
            .and_then(|k| route.idempotency.refuses_key(k));
        record.idempotency_key = p.key;
        record.fingerprint = p.fingerprint;
        record.intent = p.intent;
    }
    (record.body, record.body_truncated) =
        ledger_body(&req.body, text, scenario.ledger_body_bytes, req.too_large);
    if encoding == form::Encoding::Form && json.is_some() {
        let cut = req.body.len().min(scenario.ledger_body_bytes);
        record.raw_body = Some(String::from_utf8_lossy(&req.body[..cut]).into_owned());
    }
    // Before the lock: the scan reads the whole body, which may be large.
    let canaries = match record.actor {
        None => canary::canaries_in(&record.path, &req.headers, &req.body),
        Some(_) => Vec::new(),
    };
    let mut st = world.lock();
    // Read under the lock: admissions are then in time order as they are in seq order, so a
    // request admitted after an execution never sees it as still in progress (a 409).
    record.received_at = world.clock.now();
    record.seq = st.ledger.next_seq();
    let mut key = None;
    let shape = service.map_or(&ErrorStyle::GENERIC, |s| &s.errors);
    let (response, plan) = if req.too_large {
        record.disposition = Disposition::TooLarge;
        let error = format!(
            "request body is larger than the scenario's max_body_bytes ({} bytes)",
            scenario.max_body_bytes
        );
        let f = Failure::new(413, Kind::TooLarge, error);
        (f.respond(shape, record.seq), Plan::Now)
    } else if req.incomplete {
        // Malformed at the HTTP level (disposition stays `unmatched`): no provider acts on a
        // request it never fully received, and nobody is left to answer.
        let reason = "incomplete body: the client closed the connection before sending all of it";
        record.detail = Some(json!({ "reason": reason }).into());
        let f = Failure::new(400, Kind::Incomplete, reason);
        (f.respond(shape, record.seq), Plan::Drop)
    } else if let Some(reason) = refused {
        // Refused before its route runs, as `unmatched` with its reason: nothing is executed.
        record.detail = Some(json!({ "reason": reason }).into());
        let f = Failure::new(400, Kind::Malformed, reason);
        (f.respond(shape, record.seq), Plan::Now)
    } else {
        match found {
            None => (
                route::unmatched(&scenario.services, service, &record),
                Plan::Now,
            ),
            Some((svc, route, params)) => {
                record.route = Some(route.name.clone());
                match route.kind {
                    RouteKind::Action => {
                        let (response, plan, kept) = action::action(
                            world,
                            &mut st,
                            svc,
                            route,
                            &req,
                            json.as_ref(),
                            &mut record,
                        );
                        key = kept;
                        (response, plan)
                    }
                    RouteKind::Lookup => (
                        target::lookup(world, &mut st, svc, route, &params, &mut record),
                        Plan::Now,
                    ),
                    RouteKind::Cancel => (
                        target::cancel(world, &mut st, svc, route, &params, &mut record),
                        Plan::Now,
                    ),
                }
            }
        }
    };
    if let Some(via) = req.via.take() {
        note_via(&mut record, via);
    }
    finish(world, st, &mut record, (response, plan), canaries, key)
}

/// A wrapping protocol's facts, beside what the pipeline noted in the detail.
fn note_via(record: &mut Record, via: Via) {
    let mut detail = match record.detail.as_ref().map(|d| d.value()) {
        Some(Value::Object(d)) => d,
        _ => serde_json::Map::new(),
    };
    detail.insert(via.protocol.into(), via.facts);
    record.detail = Some(Value::Object(detail).into());
}

/// A request's record before admission decides anything: unmatched, answered (its time and
/// response plan are set under the lock).
fn new_record(
    req: &mut Request<'_>,
    work_id: Option<String>,
    revision: Option<Revision>,
) -> Record {
    let take = |s: &mut Cow<'_, str>| std::mem::take(s).into_owned();
    // Filled in last: the parsed body is moved, not copied.
    Record {
        service: take(&mut req.service),
        method: take(&mut req.method),
        path: take(&mut req.path),
        work_id,
        revision,
        disposition: Disposition::Unmatched,
        actor: req.actor.take(),
        ..Record::default()
    }
}

/// How a plan shows in the record.
fn response_plan(plan: Plan, status: u16, now: Duration) -> ResponsePlan {
    let (delivery, status, at) = match plan {
        Plan::Now => (Delivery::Sent, Some(status), Some(now)),
        Plan::At(t) => (Delivery::Sent, Some(status), Some(t)),
        Plan::Drop => (Delivery::Dropped, None, Some(now)),
        Plan::Reset => (Delivery::Reset, None, Some(now)),
        Plan::Hang => (Delivery::Hung, None, None),
    };
    ResponsePlan {
        delivery,
        status,
        at,
    }
}

/// The end of every admission: the record gets its response plan and canaries, goes into the
/// ledger, and its log event is written once the lock is released.
fn finish(
    world: &World,
    mut st: std::sync::MutexGuard<'_, State>,
    record: &mut Record,
    (response, plan): (Response, Plan),
    canaries: Vec<String>,
    key: Option<KeyRecord>,
) -> Outcome {
    record.response = response_plan(plan, response.status, record.received_at);
    canary::note_canaries(canaries, record);
    // One log event per request (target `doubleagent::request`), carrying its seq. Fields are
    // copied under the lock and the event written after it is released, so logging never holds
    // up other requests.
    let log = tracing::enabled!(target: "doubleagent::request", tracing::Level::INFO).then(|| {
        RequestLog {
            service: record.service.clone(),
            route: record.route.clone(),
            method: record.method.clone(),
            path: record.path.clone(),
            disposition: record.disposition,
            fate: record.fate,
            applied: record.applies_at.is_some(),
        }
    });
    let disposition = record.disposition;
    let (seq, written) = st.ledger.append_keyed(record, key.as_ref());
    if let (false, Some(_), Some(k)) = (written, &key, &record.idempotency_key) {
        // Not journaled, so it did not take effect: a retry with its key executes afresh.
        st.keys.forget(&record.service, k, seq);
    }
    forget_evicted(&mut st);
    drop(st);
    if let Some(l) = log {
        tracing::info!(
            target: "doubleagent::request",
            seq,
            session = world.session.as_deref().unwrap_or("default"),
            service = %l.service,
            route = l.route.as_deref().unwrap_or(""),
            method = %l.method,
            path = %l.path,
            disposition = l.disposition.as_str(),
            fate = %l.fate.map(|f| f.to_string()).unwrap_or_default(),
            applied = l.applied,
            status = response.status,
            delivery = ?plan,
            "request"
        );
    }
    Outcome {
        seq,
        response,
        plan,
        disposition,
    }
}

/// After an append: the key index forgets the executions the ledger no longer holds.
fn forget_evicted(st: &mut State) {
    let (first, held) = (
        st.ledger.next_seq() - st.ledger.len() as u64,
        st.ledger.len(),
    );
    st.by_key.forget_before(first, held);
    st.by_object.forget_before(first, held);
}

/// What the ledger keeps of a body: the JSON when it parses and fits, else (a prefix of) the text.
fn ledger_body(
    raw: &[u8],
    json: Option<JsonText>,
    cap: usize,
    too_large: bool,
) -> (JsonText, bool) {
    if raw.is_empty() {
        return (JsonText::default(), false);
    }
    if let (Some(v), true) = (json, raw.len() <= cap) {
        return (v, false);
    }
    let cut = raw.len().min(cap);
    let text = String::from_utf8_lossy(&raw[..cut]);
    (JsonText::of(&*text), too_large || cut < raw.len())
}
