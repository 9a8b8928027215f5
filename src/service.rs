//! Fake services: the action pipeline a request runs through, independent of HTTP.
//!
//! [`admit`] takes a [`Request`] (service-relative path, headers, body) and, in one critical
//! section over the world, does match → idempotency → fate → ledger, returning an [`Outcome`]:
//! the response and a [`Plan`] for delivering it (now, at a later scenario time, never, by
//! reset, or by hanging). The HTTP server is one caller and carries out the plan on a socket;
//! an agent's side-effect step is another and calls [`call`], which carries out the plan in
//! process. Because admission is synchronous, the effect of an attempt is in the ledger before
//! anything is sent, exactly as a real provider commits before it replies.

use std::borrow::Cow;
use std::cell::OnceCell;
use std::time::Duration;

use hyper::body::Bytes;
use hyper::HeaderMap;
use serde_json::{json, Value};

use crate::compact::Flat;
use crate::fate::Fate;
use crate::idempotency::{
    fingerprint, fingerprint_bytes, raw_id, Cache, Decision, Fingerprint, Kept, Mode, Stored,
    JSON_HEADERS,
};
use crate::journal::Line;
use crate::ledger::{
    parse_action_id, ActionState, Delivery, Disposition, Names, Record, Replay, ResponsePlan, Texts,
};
use crate::scenario::{did_you_mean, CancelPolicy, RespondBody, Route, RouteKind, Service};
use crate::template;
use crate::world::{State, World};

/// A request to a fake service, however it arrived. Its names are borrowed where the caller
/// has them (the server from hyper's request, an agent from its script): a replay, which keeps
/// none of them, copies none.
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
    pub revision: Option<Value>,
    /// The caller never reads the response's headers or body (an A2A agent's side-effect step):
    /// an executed action's response is then rendered only when a key store keeps it. Its status
    /// is decided, and recorded, all the same.
    pub unread: bool,
}

/// A response to deliver.
#[derive(Clone, Debug, PartialEq)]
pub struct Response {
    pub status: u16,
    /// Mostly static text ("content-type", "application/json"): borrowed, not allocated, per
    /// response.
    pub headers: Vec<(Cow<'static, str>, Cow<'static, str>)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn json(status: u16, v: &Value) -> Response {
        Response::json_of(status, v)
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

/// Admit a request: match, idempotency, fate, ledger — atomically.
///
/// What the record keeps of the request (service, method, path, key, fingerprint, intent, work
/// id, revision) is moved into it, not copied, and read back from it from then on.
pub fn admit(world: &World, mut req: Request<'_>) -> Outcome {
    // When the request was received: read once, before anything else.
    let now = world.clock.now();
    let scenario: &crate::scenario::Scenario = &world.scenario;
    let service = scenario.service(&req.service);
    let whole = !req.too_large && !req.incomplete;
    // Where no route of the service matches on the body, the route is found without parsing it,
    // and a replay of the very same bytes needs none of the body at all.
    let early = service
        .filter(|s| whole && s.routes.iter().all(|r| r.matcher.json.is_empty()))
        .map(|s| find_route(s, &req, None).map(|(r, p)| (s, r, p)));
    // The route and exact bytes as one number: the fast lane's test, and what the key store
    // keeps if this executes.
    let raw = match &early {
        Some(Some((_, route, _)))
            if route.kind == RouteKind::Action && route.idempotency.mode == Mode::Honor =>
        {
            Some(raw_id(&route.name, &req.body))
        }
        _ => None,
    };
    if let (Some(Some((svc, route, _))), Some(raw)) = (&early, raw) {
        let misses = LANE_MISSES.get();
        if lane_open(misses) {
            if let Some(out) = replay_of_same(world, svc, route, &mut req, raw, now) {
                LANE_MISSES.set(0);
                return out;
            }
        }
        LANE_MISSES.set(lane_missed(misses));
    }
    // Out of the request while it lends parts of itself to the record (restored for `finish`).
    let body = std::mem::take(&mut req.body);
    // A simple body of an action found without it is read without a tree (`compact`): its
    // text, fingerprint and intent come from the bytes; placeholders that name it parse it then.
    let flat = match &early {
        Some(Some((_, route, _)))
            if route.kind == RouteKind::Action
                && !matches!(route.idempotency.fingerprint, Fingerprint::Pointers(_)) =>
        {
            Flat::read(&body)
        }
        _ => None,
    };
    let json = if req.too_large || flat.is_some() {
        None
    } else {
        serde_json::from_slice::<Value>(&body).ok()
    };
    let (work_id, revision) = work_of(
        service,
        &req.headers,
        req.work_id.take(),
        req.revision.take(),
    );
    let mut json = json;
    // Matching and what an action reads from its request (key, fingerprint, intent) need no
    // world state: worked out before the lock is taken, so that the critical section is short.
    let found = match early {
        Some(found) => found,
        None if whole => {
            service.and_then(|s| find_route(s, &req, json.as_ref()).map(|(r, p)| (s, r, p)))
        }
        None => None,
    };
    let prepared = found
        .as_ref()
        .filter(|(_, route, _)| route.kind == RouteKind::Action)
        .map(|(_, route, _)| Prepared::of(route, &req, &body, json.as_ref(), flat.as_ref()));
    let (idempotency_key, fingerprint, texts) = match prepared {
        Some(p) => (p.key, p.fp, Some((p.text, p.body, p.intent))),
        None => (None, None, None),
    };
    let (intent_text, body_text) = match &texts {
        Some((text, body, intent)) => (
            intent.clone().map(|r| &text[r]),
            body.clone().map(|r| &text[r]),
        ),
        None => (None, None),
    };
    // What the ledger keeps of a body is the parsed JSON when it fits, else text (`ledger_body`).
    let body_text = body_text.filter(|_| body.len() <= scenario.ledger_body_bytes);
    // An action's record leaves its service, route, method and path to these (see `Names`);
    // any other request's record owns them.
    let named = texts.is_some();
    let lent: [Cow<'_, str>; 3] = match named {
        true => [
            std::mem::take(&mut req.service),
            std::mem::take(&mut req.method),
            std::mem::take(&mut req.path),
        ],
        false => Default::default(),
    };
    let names = named.then(|| Names {
        service: &lent[0],
        route: found.as_ref().map(|(_, r, _)| *r).map(|r| r.name.as_str()),
        method: &lent[1],
        path: &lent[2],
    });
    let mut record = new_record(
        take_names(&mut req),
        req.actor.take(),
        now,
        idempotency_key,
        work_id,
        revision,
    );
    record.fingerprint = fingerprint;
    // Before the lock: the scan reads the whole body, which may be large.
    let canaries = match record.actor {
        None => canaries_in(
            names.map_or(record.path.as_str(), |n| n.path),
            &req.headers,
            &body,
        ),
        Some(_) => Vec::new(),
    };
    let mut st = world.lock();
    record.seq = st.ledger.next_seq();

    let (response, plan) = if req.too_large {
        record.disposition = Disposition::TooLarge;
        let r = Response::json(
            413,
            &json!({
                "error": format!("request body is larger than the scenario's max_body_bytes ({} bytes)", scenario.max_body_bytes),
                "status": 413
            }),
        );
        (r, Plan::Now)
    } else if req.incomplete {
        // Malformed at the HTTP level (disposition stays `unmatched`): no provider acts on a
        // request it never fully received, and nobody is left to answer.
        let reason = "incomplete body: the client closed the connection before sending all of it";
        record.detail = Some(json!({ "reason": reason }));
        (
            Response::json(400, &json!({"error": reason, "status": 400})),
            Plan::Drop,
        )
    } else {
        match found {
            None => (unmatched(&scenario.services, service, &record), Plan::Now),
            Some((svc, route, params)) => {
                if names.is_none() {
                    record.route = Some(route.name.clone());
                }
                match route.kind {
                    RouteKind::Action => action(
                        world,
                        &mut st,
                        svc,
                        route,
                        ActionBody {
                            bytes: &body,
                            raw,
                            tree: &match flat {
                                Some(_) => Tree::Later(&body, OnceCell::new()),
                                None => Tree::Parsed(json.as_ref()),
                            },
                            intent: intent_text,
                            unread: req.unread,
                            names,
                        },
                        &mut record,
                    ),
                    RouteKind::Lookup => (
                        lookup(world, &mut st, svc, route, &params, &mut record),
                        Plan::Now,
                    ),
                    RouteKind::Cancel => (
                        cancel(world, &mut st, svc, route, &params, &mut record),
                        Plan::Now,
                    ),
                }
            }
        }
    };
    let append = match (&texts, body_text) {
        // An action: its intent (and its body, when it is kept as JSON) are already text.
        (Some(_), kept) => {
            if kept.is_none() {
                (record.body, record.body_truncated) = ledger_body(
                    &body,
                    json.take(),
                    scenario.ledger_body_bytes,
                    req.too_large,
                );
            }
            Append::Texts(Texts {
                intent: intent_text,
                body: kept,
                names,
            })
        }
        (None, _) => {
            (record.body, record.body_truncated) = ledger_body(
                &body,
                json.take(),
                scenario.ledger_body_bytes,
                req.too_large,
            );
            Append::Record
        }
    };
    req.body = body;
    finish(world, st, record, append, response, plan, canaries)
}

/// How [`finish`] appends the record.
enum Append<'a> {
    /// As it is.
    Record,
    /// With the fingerprint, intent and body of this earlier record ([`Ledger::append_like`]).
    ///
    /// [`Ledger::append_like`]: crate::ledger::Ledger::append_like
    Like(u64),
    /// With its intent and body as these texts, where given ([`Ledger::append_texts`]).
    ///
    /// [`Ledger::append_texts`]: crate::ledger::Ledger::append_texts
    Texts(Texts<'a>),
}

/// The work id and revision a request carries: given by in-process callers (an agent's step),
/// sent as headers by HTTP clients (`work_id` and `revision`: what the caller gave).
fn work_of(
    service: Option<&Service>,
    headers: &HeaderMap,
    work_id: Option<String>,
    revision: Option<Value>,
) -> (Option<String>, Option<Value>) {
    let found = match service {
        Some(s) if work_id.is_none() || revision.is_none() => {
            header_values(headers, [&s.work_id_header, &s.revision_header])
        }
        _ => [None, None],
    };
    work_from(found, work_id, revision)
}

/// [`work_of`] from the work-id and revision headers' values, found already.
fn work_from(
    [work_header, revision_header]: [Option<&hyper::header::HeaderValue>; 2],
    work_id: Option<String>,
    revision: Option<Value>,
) -> (Option<String>, Option<Value>) {
    let text = |v: &hyper::header::HeaderValue| header_text(v).into_owned();
    let work_id = work_id.or_else(|| work_header.map(text));
    let revision = revision.or_else(|| {
        revision_header
            .map(text)
            .map(|r| match r.trim().parse::<i64>() {
                Ok(n) => Value::from(n),
                Err(_) => Value::String(r),
            })
    });
    (work_id, revision)
}

/// A request header's (first) value. A request carries a handful of headers: comparing names
/// in order costs less than hashing the name for the map's lookup, several times a request.
pub fn header_value<'h>(
    headers: &'h HeaderMap,
    name: &hyper::header::HeaderName,
) -> Option<&'h hyper::header::HeaderValue> {
    let [v] = header_values(headers, [name]);
    v
}

/// Several headers' (first) values, in one pass over a request's few headers.
fn header_values<'h, const N: usize>(
    headers: &'h HeaderMap,
    names: [&hyper::header::HeaderName; N],
) -> [Option<&'h hyper::header::HeaderValue>; N] {
    header_values_seeing(headers, names, |_| {})
}

/// [`header_values`], showing every value to `each` in the same pass.
fn header_values_seeing<'h, const N: usize>(
    headers: &'h HeaderMap,
    names: [&hyper::header::HeaderName; N],
    mut each: impl FnMut(&hyper::header::HeaderValue),
) -> [Option<&'h hyper::header::HeaderValue>; N] {
    if headers.len() > 8 {
        headers.values().for_each(each);
        return names.map(|n| headers.get(n));
    }
    let mut found = [None; N];
    for (k, v) in headers {
        each(v);
        for (name, slot) in names.iter().zip(found.iter_mut()) {
            if slot.is_none() && k == *name {
                *slot = Some(v);
            }
        }
    }
    found
}

/// A header's value as text: as it is when it is visible ASCII (as nearly every value is; the
/// check is cheaper than `from_utf8_lossy`'s), else with invalid UTF-8 replaced.
fn header_text(v: &hyper::header::HeaderValue) -> Cow<'_, str> {
    match v.to_str() {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(v.as_bytes()),
    }
}

/// The request's service, method and path, for its record to own (empty where lent already).
fn take_names(req: &mut Request<'_>) -> [String; 3] {
    [
        std::mem::take(&mut req.service).into_owned(),
        std::mem::take(&mut req.method).into_owned(),
        std::mem::take(&mut req.path).into_owned(),
    ]
}

/// A request's record before admission decides anything: unmatched, answered now.
fn new_record(
    [service, method, path]: [String; 3],
    actor: Option<String>,
    now: Duration,
    idempotency_key: Option<String>,
    work_id: Option<String>,
    revision: Option<Value>,
) -> Record {
    Record {
        seq: 0,
        service,
        route: None,
        method,
        path,
        received_at: now,
        idempotency_key,
        fingerprint: None,
        intent: None,
        work_id,
        revision,
        // Filled in last, from the parsed body, which is then no longer needed: moved, not copied.
        body: Value::Null,
        body_truncated: false,
        disposition: Disposition::Unmatched,
        replay_of: None,
        executed_after_expiry: false,
        fate: None,
        applies_at: None,
        cancelled_at: None,
        response: ResponsePlan {
            delivery: Delivery::Sent,
            status: None,
            at: Some(now),
        },
        actor,
        event: None,
        detail: None,
    }
}

// When the fast lane is tried. Its look-up takes the world's lock once more before the
// ordinary path takes it again, and under a load of fresh keys (a load test sends a new key with
// every request) it never finds anything: ~0.5 k instructions of a recorded action's ~23 k spent
// for nothing. So after a run of misses on a thread the lane is tried on one request in
// `LANE_PROBE` only, and a hit opens it again. Skipping it changes no answer and no entry: the
// ordinary path decides the same way for everything the lane takes, it only reads the body to
// do so.
const LANE_OPEN: u32 = 4;
const LANE_PROBE: u32 = 16;

thread_local! {
    /// This thread's misses of the fast lane in a row (kept within `LANE_OPEN + LANE_PROBE`).
    static LANE_MISSES: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Whether a request finding `misses` misses in a row tries the fast lane.
fn lane_open(misses: u32) -> bool {
    misses <= LANE_OPEN
}

/// The count after one more miss (or skip): past `LANE_OPEN`, it cycles through the probe.
fn lane_missed(misses: u32) -> u32 {
    if misses + 1 >= LANE_OPEN + LANE_PROBE {
        LANE_OPEN
    } else {
        misses + 1
    }
}

/// The fast lane of replays (for a whole request to `route`, found without reading the body): a
/// keyed request that brings the very bytes its key was executed with, to the same route, is answered from the key's stored response and recorded with the
/// original's fingerprint, intent and body (copied as encoded) without parsing its own body.
/// `None` (nothing done, `req` untouched) sends the request down the ordinary path, which
/// decides the same way for everything this lane takes: a replay it is, by any fingerprint.
fn replay_of_same(
    world: &World,
    svc: &Service,
    route: &Route,
    req: &mut Request<'_>,
    raw: u64,
    now: Duration,
) -> Option<Outcome> {
    let policy = &route.idempotency;
    if route.kind != RouteKind::Action
        || policy.mode != Mode::Honor
        || policy.cache == Cache::Latest
    {
        return None;
    }
    // The headers' values are tested for canaries in the same pass (see `plain` below).
    let mut canary_in_headers = false;
    let [key, work_header, revision_header] = header_values_seeing(
        &req.headers,
        [
            &policy.header_name,
            &svc.work_id_header,
            &svc.revision_header,
        ],
        |v| canary_in_headers = canary_in_headers || may_be_canary(v.as_bytes()),
    );
    // Borrowed (valid UTF-8, as keys are): copied only once this is a replay.
    let key = header_text(key?);
    // An outside request's canaries are found before the lock (the scan reads the whole body);
    // without any, and without a log line to write, the replay is encoded straight from the
    // request's parts (`plain`, below).
    let may_carry =
        req.actor.is_none() && (canary_in_headers || may_carry_canary_besides_headers(req));
    let canaries = match may_carry {
        true => canaries_in(&req.path, &req.headers, &req.body),
        false => Vec::new(),
    };
    let plain =
        !tracing::enabled!(target: "doubleagent::request", tracing::Level::INFO) && !may_carry;
    let mut st = world.lock();
    let (of, stored) = st.keys.replay_of_same(policy, &svc.name, &key, raw, now)?;
    if !st.ledger.holds(of) {
        return None;
    }
    let mut response = Response::from_stored(stored);
    let (work_id, revision) = work_from(
        [work_header, revision_header],
        req.work_id.take(),
        req.revision.take(),
    );
    if let Some(h) = &policy.replay_header {
        response.headers.push((h.clone(), "true".into()));
    }
    if policy.echo_key {
        response
            .headers
            .push((policy.header.clone().into(), key.to_string().into()));
    }
    // As `ledger_body` decides for these bytes (the original's body is the same).
    let body_truncated = req.body.len() > world.scenario.ledger_body_bytes;
    if plain {
        let replay = Replay {
            service: &req.service,
            route: &route.name,
            method: &req.method,
            path: &req.path,
            received_at: now,
            key: &key,
            work_id: work_id.as_deref(),
            revision: revision.as_ref(),
            body_truncated,
            replay_of: of,
            status: response.status,
            actor: req.actor.as_deref(),
        };
        // Held: checked under this same lock.
        let seq = st.ledger.append_replay(&replay, of).unwrap_or_default();
        forget_evicted(&mut st);
        return Some(Outcome {
            seq,
            response,
            plan: Plan::Now,
        });
    }
    let key = key.into_owned();
    let names = take_names(req);
    let mut record = new_record(names, req.actor.take(), now, Some(key), work_id, revision);
    record.seq = st.ledger.next_seq();
    record.route = Some(route.name.clone());
    record.disposition = Disposition::Replayed;
    record.replay_of = Some(of);
    record.body_truncated = body_truncated;
    Some(finish(
        world,
        st,
        record,
        Append::Like(of),
        response,
        Plan::Now,
        canaries,
    ))
}

/// The end of every admission: the record learns how its response goes out and which canaries
/// the request carried (found by the caller before it took the lock, see [`canaries_in`]), goes
/// into the ledger, and the request's log event is written once the lock is released.
fn finish(
    world: &World,
    mut st: std::sync::MutexGuard<'_, State>,
    mut record: Record,
    append: Append<'_>,
    response: Response,
    plan: Plan,
    canaries: Vec<String>,
) -> Outcome {
    let now = record.received_at;
    record.response = match plan {
        Plan::Now => ResponsePlan {
            delivery: Delivery::Sent,
            status: Some(response.status),
            at: Some(now),
        },
        Plan::At(t) => ResponsePlan {
            delivery: Delivery::Sent,
            status: Some(response.status),
            at: Some(t),
        },
        Plan::Drop => ResponsePlan {
            delivery: Delivery::Dropped,
            status: None,
            at: Some(now),
        },
        Plan::Reset => ResponsePlan {
            delivery: Delivery::Reset,
            status: None,
            at: Some(now),
        },
        Plan::Hang => ResponsePlan {
            delivery: Delivery::Hung,
            status: None,
            at: None,
        },
    };
    // Where the record does not hold its own service, route, method and path.
    let names = match &append {
        Append::Texts(t) => t.names,
        _ => None,
    };
    note_canaries(canaries, &mut record);
    // One log event per request (target `doubleagent::request`; the binary shows it by default
    // with --log-format json: one object per request), carrying its seq. Its fields are copied
    // under the lock and the event is written after it is released, so that formatting and
    // writing a log line never holds up other requests.
    let log = tracing::enabled!(target: "doubleagent::request", tracing::Level::INFO).then(|| {
        let n = names.unwrap_or(Names::of(&record));
        RequestLog {
            service: n.service.to_string(),
            route: n.route.map(str::to_string),
            method: n.method.to_string(),
            path: n.path.to_string(),
            disposition: record.disposition,
            fate: record.fate,
            applied: record.applies_at.is_some(),
        }
    });
    let seq = match append {
        Append::Record => st.ledger.append(record),
        // Held: the caller checked under this same lock.
        Append::Like(of) => st.ledger.append_like(record, of).unwrap_or_default(),
        // Borrowed: the record (and its strings) is dropped after the lock is released.
        Append::Texts(texts) => st.ledger.append_texts(&mut record, &texts),
    };
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
    }
}

/// After an append: the key index forgets the executions the ledger no longer holds.
fn forget_evicted(st: &mut State) {
    let (first, held) = (
        st.ledger.next_seq() - st.ledger.len() as u64,
        st.ledger.len(),
    );
    st.by_key.forget_before(first, held);
}

/// Whether a request may carry a canary in its path or body, two of the places
/// [`canaries_in`] looks (a quick test: `false` means none); its headers' values are tested
/// with [`may_be_canary`] by the caller's own pass over them.
fn may_carry_canary_besides_headers(req: &Request<'_>) -> bool {
    may_be_canary(req.path.as_bytes()) || may_be_canary(&req.body)
}

/// Whether `bytes` may hold a canary: long enough, and "cny-" in it.
fn may_be_canary(bytes: &[u8]) -> bool {
    bytes.len() >= 20 && may_hold_canary(bytes)
}

/// Canaries (`cny-` + 16 hex digits, issued by agents in their results) that an outside
/// request carries in its path (the request's, wherever it is kept by now), its headers' values
/// or its body: the verifier's evidence that a result was used (ACC-2). The ledger may keep
/// only part of a body, so the scan reads the request itself; it reads all of it, so callers
/// run it before they lock the world.
fn canaries_in(path: &str, headers: &HeaderMap, body: &[u8]) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let mut scan = |bytes: &[u8]| {
        if !may_be_canary(bytes) {
            return;
        }
        let mut i = 0;
        while let Some(at) = bytes[i..].windows(4).position(|w| w == b"cny-") {
            let start = i + at;
            let token = bytes.get(start..start + 20);
            if let Some(t) = token.filter(|t| t[4..].iter().all(u8::is_ascii_hexdigit)) {
                let t = String::from_utf8_lossy(t).into_owned();
                if !found.contains(&t) {
                    found.push(t);
                }
            }
            i = start + 4;
        }
    };
    std::iter::once(path.as_bytes())
        .chain(headers.values().map(|v| v.as_bytes()))
        .chain(std::iter::once(body))
        .for_each(&mut scan);
    found
}

/// Notes the canaries [`canaries_in`] found in the record's `detail.canaries`, beside whatever
/// else the admission put in its detail.
fn note_canaries(found: Vec<String>, record: &mut Record) {
    if found.is_empty() {
        return;
    }
    let detail = record.detail.get_or_insert_with(|| json!({}));
    if let Some(m) = detail.as_object_mut() {
        m.insert("canaries".into(), json!(found));
    }
}

/// Whether `bytes` contains "cny-" at all (the common answer is no). Eight bytes at a time are
/// tested for '-'; only where one is are the three bytes before it compared with "cny" (a body
/// with dashes in its values is not then compared at every position).
fn may_hold_canary(bytes: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let after_cny = |at: usize| at >= 3 && bytes[at] == b'-' && &bytes[at - 3..at] == b"cny";
    let mut i = 0;
    while let Some(word) = bytes.get(i..i + 8) {
        let x = u64::from_le_bytes(word.try_into().unwrap_or_default()) ^ (ONES * b'-' as u64);
        // A high bit for each byte that was '-' (and, rarely, a byte above one: checked anyway).
        let mut dashes = x.wrapping_sub(ONES) & !x & (ONES << 7);
        while dashes != 0 {
            if after_cny(i + (dashes.trailing_zeros() / 8) as usize) {
                return true;
            }
            dashes &= dashes - 1;
        }
        i += 8;
    }
    (i..bytes.len()).any(after_cny)
}

#[cfg(test)]
#[test]
fn canaries_are_found_wherever_they_sit_in_a_word() {
    let canary = "cny-0123456789abcdef";
    for pad in 0..20 {
        let text = format!("{}{canary}{}", "x".repeat(pad), "y".repeat(pad % 5));
        assert!(may_hold_canary(text.as_bytes()), "{text}");
        let none = text.replace('-', "_");
        assert!(!may_hold_canary(none.as_bytes()), "{none}");
        let dashes = text.replace("cny", "cn-");
        assert!(!may_hold_canary(dashes.as_bytes()), "{dashes}");
    }
    assert!(!may_hold_canary(b""));
    assert!(may_hold_canary(b"cny-"));
    // Against the plain search, on pseudo-random strings up to 39 bytes long of the letters
    // that matter and one that does not.
    let letters = b"cny-x";
    let mut seed = 1u64;
    for len in 0..40 {
        for _ in 0..400 {
            let text: Vec<u8> = (0..len)
                .map(|_| {
                    seed = seed
                        .wrapping_mul(6364136223846793005)
                        .wrapping_add(1442695040888963407);
                    letters[(seed >> 33) as usize % letters.len()]
                })
                .collect();
            let plain = text.windows(4).any(|w| w == b"cny-");
            assert_eq!(
                may_hold_canary(&text),
                plain,
                "{:?}",
                String::from_utf8_lossy(&text)
            );
        }
    }
}

/// What the ledger keeps of a body: the JSON itself when it parses and fits, else (a prefix of)
/// the text.
fn ledger_body(raw: &[u8], json: Option<Value>, cap: usize, too_large: bool) -> (Value, bool) {
    if raw.is_empty() {
        return (Value::Null, false);
    }
    if let (Some(v), true) = (json, raw.len() <= cap) {
        return (v, false);
    }
    let cut = raw.len().min(cap);
    let text = String::from_utf8_lossy(&raw[..cut]).into_owned();
    (Value::String(text), too_large || cut < raw.len())
}

fn find_route<'s>(
    svc: &'s Service,
    req: &Request<'_>,
    json: Option<&Value>,
) -> Option<(&'s Route, Vec<(String, String)>)> {
    svc.routes.iter().find_map(|r| {
        if r.method != req.method {
            return None;
        }
        let params = r.path.matches(&req.path)?;
        let headers_ok = r.matcher.headers.iter().all(|(k, v)| {
            req.headers
                .get(k.as_str())
                .is_some_and(|h| h.as_bytes() == v.as_bytes())
        });
        let json_ok = r
            .matcher
            .json
            .iter()
            .all(|(p, v)| json.and_then(|j| at(j, p)) == Some(v));
        (headers_ok && json_ok).then_some((r, params))
    })
}

fn unmatched(all: &[Service], service: Option<&Service>, req: &Record) -> Response {
    let asked = format!("{} {}", req.method, req.path);
    match service {
        None => {
            let names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
            Response::json(
                404,
                &json!({
                    "error": format!("no service named \"{}\"{}", req.service, did_you_mean(&req.service, names.iter().copied())),
                    "status": 404,
                    "services": names,
                }),
            )
        }
        Some(svc) => {
            let mut closest: Vec<(usize, String)> = svc
                .routes
                .iter()
                .map(|r| {
                    let cand = format!("{} {}", r.method, r.path.raw);
                    (distance(&asked, &cand), format!("{cand} ({})", r.name))
                })
                .collect();
            closest.sort();
            Response::json(
                404,
                &json!({
                    "error": format!("no route of service \"{}\" matches {asked}", svc.name),
                    "status": 404,
                    "closest": closest.into_iter().take(3).map(|(_, c)| c).collect::<Vec<_>>(),
                }),
            )
        }
    }
}

fn distance(a: &str, b: &str) -> usize {
    // Common-prefix length counts most: "/v1/transfer" is nearer "/v1/transfers" than "/v2".
    let common = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    a.chars().count().max(b.chars().count()) - common
}

/// What an action reads from its request, worked out before the world is locked. The intent
/// and the body are kept as the compact JSON text the ledger records (and the fingerprint and
/// fate stream read), written once, rather than as trees serialised again and again.
struct Prepared {
    key: Option<String>,
    fp: Option<String>,
    /// The parsed body's compact JSON text, then the intent's (one buffer for both).
    text: Vec<u8>,
    /// Where in `text` the body is, if it parsed.
    body: Option<std::ops::Range<usize>>,
    /// Where in `text` the intent is: the body's when the route names no pointers.
    intent: Option<std::ops::Range<usize>>,
}

impl Prepared {
    fn of(
        route: &Route,
        req: &Request<'_>,
        raw: &[u8],
        json: Option<&Value>,
        flat: Option<&Flat>,
    ) -> Prepared {
        let policy = &route.idempotency;
        let mut text = Vec::with_capacity(2 * raw.len() + 16);
        let body = match (flat, json) {
            (Some(f), _) => {
                f.write(&mut text);
                Some(0..text.len())
            }
            (None, Some(v)) => {
                let _ = serde_json::to_writer(&mut text, v);
                Some(0..text.len())
            }
            (None, None) => None,
        };
        let fp = match (&policy.fingerprint, &body) {
            // The same bytes `fingerprint` would hash, already written.
            (Fingerprint::Body, Some(b)) => Some(fingerprint_bytes(&text[b.clone()])),
            (how, _) => fingerprint(how, raw, json),
        };
        let intent = if route.intent.is_empty() {
            body.clone()
        } else {
            let start = text.len();
            write_intent(&mut text, route, json, flat);
            Some(start..text.len())
        };
        Prepared {
            key: header_value(&req.headers, &policy.header_name)
                .map(|v| header_text(v).into_owned()),
            fp,
            text,
            body,
            intent,
        }
    }
}

/// An action's part of admission (the key, fingerprint and intent are already in `record`).
/// What an action's admission reads of its request's body.
struct ActionBody<'a> {
    /// As received.
    bytes: &'a [u8],
    /// Its `raw_id` with the route, if already worked out.
    raw: Option<u64>,
    /// As parsed (or to be parsed).
    tree: &'a Tree<'a>,
    /// The action's intent as JSON text.
    intent: Option<&'a [u8]>,
    /// Nobody reads the response ([`Request::unread`]).
    unread: bool,
    /// What the record names, where it does not hold them itself.
    names: Option<Names<'a>>,
}

fn action(
    world: &World,
    st: &mut State,
    svc: &Service,
    route: &Route,
    body: ActionBody<'_>,
    record: &mut Record,
) -> (Response, Plan) {
    let (mut response, plan) = decide_and_execute(world, st, svc, route, body, record);
    // Providers that echo the key do so on every answer to a keyed request, replays included;
    // stored responses are kept without it, so a replay carries it once.
    if let (true, Some(k)) = (route.idempotency.echo_key, &record.idempotency_key) {
        response
            .headers
            .push((route.idempotency.header.clone().into(), k.clone().into()));
    }
    (response, plan)
}

fn decide_and_execute(
    world: &World,
    st: &mut State,
    svc: &Service,
    route: &Route,
    body: ActionBody<'_>,
    record: &mut Record,
) -> (Response, Plan) {
    let ActionBody {
        bytes: raw_body,
        raw,
        tree,
        intent,
        unread,
        names,
    } = body;
    let now = record.received_at;
    let policy = &route.idempotency;
    let decision = st.keys.decide(
        policy,
        &svc.name,
        record.idempotency_key.as_deref(),
        record.fingerprint.as_deref(),
        now,
    );
    match decision {
        Decision::Missing => {
            record.disposition = Disposition::MissingKey;
            let r = Response::json(
                policy.missing_status,
                &json!({
                    "error": format!("this endpoint requires an idempotency key in the {} header", policy.header),
                    "status": policy.missing_status,
                }),
            );
            (r, Plan::Now)
        }
        Decision::Conflict { of } => {
            record.disposition = Disposition::Conflict;
            record.detail = Some(json!({"key_owner": of}));
            let r = Response::json(
                policy.conflict_status,
                &json!({
                    "error": "a request with this idempotency key is still in progress; retry later",
                    "status": policy.conflict_status,
                }),
            );
            (r, Plan::Now)
        }
        Decision::Mismatch { of } => {
            record.disposition = Disposition::Mismatch;
            record.detail = Some(json!({"key_owner": of}));
            (
                Response::json(policy.mismatch_status, &policy.mismatch_body),
                Plan::Now,
            )
        }
        Decision::Replay { of, response } => {
            record.disposition = Disposition::Replayed;
            record.replay_of = Some(of);
            let mut r = if policy.cache == Cache::Latest {
                match st.ledger.get(of) {
                    Some(orig) => {
                        Response::json(200, &action_view(world, &orig, orig.state_at(now)))
                    }
                    None => Response::from_stored(response.view()),
                }
            } else {
                Response::from_stored(response.view())
            };
            if let Some(h) = &policy.replay_header {
                r.headers.push((h.clone(), "true".into()));
            }
            (r, Plan::Now)
        }
        Decision::Execute { after_expiry } => {
            record.disposition = Disposition::Executed;
            record.executed_after_expiry = after_expiry;
            if route.repeatable {
                // Carried in the entry so an exported ledger can be verified without the scenario.
                record.detail = Some(json!({"repeatable": true}));
            }
            let mut stream = std::mem::take(&mut st.stream_buf);
            route.write_fate_stream(
                &mut stream,
                &svc.name,
                intent,
                record.idempotency_key.as_deref(),
            );
            let ordinal = match st.counters.get_mut(stream.as_str()) {
                Some(counter) => {
                    *counter += 1;
                    *counter - 1
                }
                None => {
                    st.counters.insert(stream.clone(), 1);
                    0
                }
            };
            let fate = route.fates.pick(world.seed, &stream, ordinal);
            st.stream_buf = stream;
            record.fate = Some(fate);
            record.applies_at = match fate {
                Fate::ApplyLater(d) => Some(now + d),
                f if f.applies() => Some(now),
                _ => None,
            };
            // Rendering is most of what answering costs; an answer nobody reads and no key store
            // keeps needs only its status.
            let ok = if unread && record.idempotency_key.is_none() {
                Response {
                    status: route.respond.status,
                    headers: Vec::new(),
                    body: Vec::new(),
                }
            } else {
                render_respond(world, route, tree, record, names)
            };
            let (response, plan, completes_at) = match fate {
                Fate::Respond => (ok, Plan::Now, now),
                Fate::Delay(d) => (ok, Plan::At(now + d), now + d),
                Fate::DropAfterApply => (ok, Plan::Drop, now),
                Fate::HangAfterApply => (ok, Plan::Hang, now),
                Fate::ResetAfterApply => (ok, Plan::Reset, now),
                Fate::DropBeforeApply => (ok, Plan::Drop, now),
                Fate::ErrorBeforeApply(s) => {
                    let mut r = Response::json(s, &json!({"error": error_text(s), "status": s}));
                    if s == 429 || s == 503 {
                        r.headers.push(("retry-after".into(), "1".into()));
                    }
                    (r, Plan::Now, now)
                }
                Fate::ErrorAfterApply(s) => (
                    Response::json(s, &json!({"error": error_text(s), "status": s})),
                    Plan::Now,
                    now,
                ),
                Fate::ApplyLater(_) => {
                    let r = Response::json(
                        202,
                        &json!({"id": record.action_id(), "status": "pending"}),
                    );
                    (r, Plan::Now, now)
                }
            };
            // A provider remembers a key only once execution began (Stripe: "saves only after
            // endpoint execution begins"), and only responses its cache policy keeps.
            if let Some(k) = &record.idempotency_key {
                if policy.mode == Mode::Honor && fate.applies() && policy.caches(response.status) {
                    let (headers, body) = response.kept();
                    let kept = Kept {
                        fingerprint: record.fingerprint.as_deref(),
                        seq: record.seq,
                        created_at: now,
                        completes_at,
                        status: response.status,
                        headers,
                        body,
                        raw: raw.unwrap_or_else(|| raw_id(route.name.as_str(), raw_body)),
                    };
                    world.note(|session| Line::Key {
                        session,
                        service: svc.name.clone(),
                        key: k.clone(),
                        record: Box::new(kept.to_record()),
                    });
                    st.keys.remember_parts(&svc.name, k, kept);
                }
                if fate.applies() {
                    st.by_key.insert(&svc.name, k, record.seq);
                }
            }
            (response, plan)
        }
    }
}

fn error_text(status: u16) -> &'static str {
    match status {
        429 => "too many requests",
        500 => "internal server error",
        502 => "bad gateway",
        503 => "service unavailable",
        504 => "gateway timeout",
        _ => "request failed",
    }
}

/// The intent of an action whose route names pointers, as compact JSON text: an object of the
/// values at them (null where absent), written as a `serde_json` map of them would be: keys in
/// byte order, each once.
fn write_intent(out: &mut Vec<u8>, route: &Route, json: Option<&Value>, flat: Option<&Flat>) {
    out.push(b'{');
    // In byte order and each once since the scenario was loaded.
    for (i, (p, key)) in route.intent.iter().zip(&route.intent_keys).enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(&key.json);
        match flat {
            Some(f) if p.is_empty() => f.write(out),
            Some(f) => out.extend_from_slice(
                key.member
                    .as_deref()
                    .and_then(|m| f.member(m.as_bytes()))
                    .unwrap_or(b"null"),
            ),
            None => {
                let _ = serde_json::to_writer(
                    &mut *out,
                    json.and_then(|j| at(j, p)).unwrap_or(&Value::Null),
                );
            }
        }
    }
    out.push(b'}');
}

#[cfg(test)]
#[test]
fn an_intent_written_as_text_is_the_map_of_its_pointers_as_json() {
    let intent_text = |route: &Route, json: Option<&Value>, flat: Option<&Flat>| {
        let mut out = Vec::new();
        write_intent(&mut out, route, json, flat);
        out
    };
    let body: Value = serde_json::from_str(
        r#"{"to":"acct-\"9\"","amount":100,"meta":{"a/b":[1,{"c~d":2.5}]},"z":null}"#,
    )
    .unwrap();
    let pointer_sets: [&[&str]; 5] = [
        &["/to", "/amount"],
        &["/z", "/amount", "/to", "/amount", "/missing"],
        &["/meta/a~1b/1/c~0d", "/meta/a~1b/0", ""],
        &["/\u{e9}", "/to"],
        &["/a~1b", "/c~0d", "/~1", "/\"q", "/to/x"],
    ];
    for pointers in pointer_sets {
        let scenario = crate::scenario::Scenario::from_toml(
            &format!(
                "name = \"t\"\n[services.s]\n[[services.s.routes]]\nname = \"r\"\nmethod = \"POST\"\npath = \"/\"\nkind = \"action\"\nintent = {:?}\n",
                pointers
            ),
            "t.toml",
        )
        .unwrap();
        let route = &scenario.services[0].routes[0];
        for json in [Some(&body), None] {
            let mut m = serde_json::Map::new();
            for p in pointers {
                m.insert(
                    p.to_string(),
                    json.and_then(|j| j.pointer(p))
                        .cloned()
                        .unwrap_or(Value::Null),
                );
            }
            let text = intent_text(route, json, None);
            assert_eq!(
                String::from_utf8(text).unwrap(),
                Value::Object(m).to_string()
            );
            let flat_body = br#"{"z":null,"to":"acct-9","amount":100,"/":1,"a/b":2,"c~d":3}"#;
            let flat = Flat::read(flat_body).unwrap();
            let tree: Value = serde_json::from_slice(flat_body).unwrap();
            assert_eq!(
                intent_text(route, None, Some(&flat)),
                intent_text(route, Some(&tree), None),
                "{pointers:?}"
            );
        }
    }
}

/// `Value::pointer` without its allocation per token (it unescapes every token into a new
/// string); only a token that holds an escape (`~0`, `~1`) is unescaped. Runs several times
/// per request (matchers, intent, placeholders).
fn at<'v>(v: &'v Value, pointer: &str) -> Option<&'v Value> {
    if pointer.is_empty() {
        return Some(v);
    }
    let rest = pointer.strip_prefix('/')?;
    rest.split('/').try_fold(v, |v, token| {
        if token.contains('~') {
            let t = token.replace("~1", "/").replace("~0", "~");
            step(v, &t)
        } else {
            step(v, token)
        }
    })
}

fn step<'v>(v: &'v Value, token: &str) -> Option<&'v Value> {
    match v {
        Value::Object(m) => m.get(token),
        Value::Array(a) => {
            // As RFC 6901 (and `Value::pointer`): digits only, no leading zeros.
            if token.starts_with('+') || (token.len() > 1 && token.starts_with('0')) {
                return None;
            }
            a.get(token.parse::<usize>().ok()?)
        }
        _ => None,
    }
}

/// A request body's JSON tree, for placeholders that name its parts: parsed already, or parsed
/// the first time one asks (a body `compact` read has no tree until then).
enum Tree<'a> {
    Parsed(Option<&'a Value>),
    Later(&'a [u8], OnceCell<Option<Value>>),
}

impl Tree<'_> {
    fn get(&self) -> Option<&Value> {
        match self {
            Tree::Parsed(v) => *v,
            Tree::Later(raw, tree) => tree
                .get_or_init(|| serde_json::from_slice(raw).ok())
                .as_ref(),
        }
    }
}

fn render_respond(
    world: &World,
    route: &Route,
    tree: &Tree<'_>,
    record: &Record,
    names: Option<Names<'_>>,
) -> Response {
    let ctx = Ctx {
        world,
        tree,
        record,
        names: names.unwrap_or(Names::of(record)),
    };
    let mut headers: Vec<(Cow<'static, str>, Cow<'static, str>)> = route
        .respond
        .headers
        .iter()
        .map(|(k, v)| (k.clone().into(), template::text(v, &ctx).into()))
        .collect();
    let body = match &route.respond.body {
        RespondBody::Json(_, compiled) => {
            if !headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
            {
                headers.push(("content-type".into(), "application/json".into()));
            }
            // Written into a reused buffer, then copied out at its exact size: a body whose
            // length is its capacity goes out as the response's bytes without another allocation.
            thread_local! {
                static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
            }
            SCRATCH.with(|scratch| {
                let mut fresh = Vec::new();
                let mut buf = scratch.try_borrow_mut();
                let out = match &mut buf {
                    Ok(b) => &mut **b,
                    Err(_) => &mut fresh,
                };
                out.clear();
                compiled.write(&ctx, out);
                out.to_vec()
            })
        }
        RespondBody::Text(t) => template::text(t, &ctx).into_bytes(),
    };
    Response {
        status: route.respond.status,
        headers,
        body,
    }
}

/// Placeholder context: `{{action.id}}`, `{{action.seq}}`, `{{key}}`, `{{work_id}}`,
/// `{{revision}}`, `{{now}}`, `{{body./pointer}}`, `{{path.NAME}}`.
struct Ctx<'a> {
    world: &'a World,
    tree: &'a Tree<'a>,
    record: &'a Record,
    /// The record's service, route, method and path, wherever they are kept.
    names: Names<'a>,
}

impl template::Vars for Ctx<'_> {
    fn write(&self, name: &str, out: &mut Vec<u8>) -> bool {
        if name != "action.id" {
            return false;
        }
        out.push(b'"');
        crate::ledger::write_action_id(out, self.record.seq);
        out.push(b'"');
        true
    }

    fn var(&self, name: &str) -> Option<Value> {
        Some(match name {
            "action.id" => Value::from(self.record.action_id()),
            "action.seq" => Value::from(self.record.seq),
            "key" => Value::from(self.record.idempotency_key.clone()?),
            "work_id" => Value::from(self.record.work_id.clone()?),
            "revision" => self.record.revision.clone()?,
            "now" => Value::from(self.world.clock.rfc3339(self.record.received_at)),
            "request.method" => Value::from(self.names.method),
            "request.path" => Value::from(self.names.path),
            _ => {
                if let Some(p) = name.strip_prefix("body.") {
                    at(self.tree.get()?, p)?.clone()
                } else if let Some(seg) = name.strip_prefix("path.") {
                    let route = self
                        .world
                        .scenario
                        .service(self.names.service)?
                        .route(self.names.route?)?;
                    let (_, v) = route
                        .path
                        .matches(self.names.path)?
                        .into_iter()
                        .find(|(k, _)| k == seg)?;
                    Value::from(v)
                } else {
                    return None;
                }
            }
        })
    }
}

/// Resolve a lookup/cancel `{id}`: an action id of this service or an idempotency key.
fn resolve_target(st: &mut State, svc: &Service, route: &Route, id: &str) -> Option<Record> {
    let by_id = parse_action_id(id);
    let seq = by_id.or_else(|| st.by_key.get(&svc.name, id))?;
    let rec = st.ledger.get(seq)?;
    let visible = rec.service == svc.name
        && (by_id.is_some() || rec.idempotency_key.as_deref() == Some(id))
        && rec.is_action()
        && route
            .of
            .as_ref()
            .is_none_or(|of| rec.route.as_ref().is_some_and(|r| of.contains(r)));
    visible.then_some(rec)
}

fn action_view(world: &World, rec: &Record, state: Option<ActionState>) -> Value {
    let now = world.clock.now();
    json!({
        "id": rec.action_id(),
        "state": state,
        "route": rec.route,
        "idempotency_key": rec.idempotency_key,
        "intent": rec.intent,
        "received_at": world.clock.rfc3339(rec.received_at),
        "applied_at": rec.applied_at(now).filter(|_| state == Some(ActionState::Applied)).map(|t| world.clock.rfc3339(t)),
    })
}

fn lookup(
    world: &World,
    st: &mut State,
    svc: &Service,
    route: &Route,
    params: &[(String, String)],
    record: &mut Record,
) -> Response {
    record.disposition = Disposition::Lookup;
    let id = params
        .iter()
        .find(|(k, _)| k == "id")
        .map(|(_, v)| v.as_str())
        .unwrap_or("");
    if !route.available {
        record.detail = Some(json!({"id": id, "answer": "unavailable"}));
        return Response::json(503, &json!({"error": "lookup unavailable", "status": 503}));
    }
    // As of `lag` ago; before time zero nothing existed yet.
    let as_of = record.received_at.checked_sub(route.lag);
    let found = as_of.and_then(|t| {
        resolve_target(st, svc, route, id).and_then(|rec| rec.state_at(t).map(|s| (rec, s)))
    });
    match found {
        Some((rec, state)) => {
            record.detail = Some(json!({"id": id, "target": rec.seq, "answer": state}));
            let mut v = action_view(world, &rec, Some(state));
            if state != ActionState::Applied {
                v["applied_at"] = Value::Null;
            }
            Response::json(200, &v)
        }
        None => {
            record.detail = Some(json!({"id": id, "answer": "unknown"}));
            Response::json(
                404,
                &json!({"error": format!("no action \"{id}\""), "id": id, "state": "unknown", "status": 404}),
            )
        }
    }
}

fn cancel(
    world: &World,
    st: &mut State,
    svc: &Service,
    route: &Route,
    params: &[(String, String)],
    record: &mut Record,
) -> Response {
    record.disposition = Disposition::Cancel;
    let now = record.received_at;
    let id = params
        .iter()
        .find(|(k, _)| k == "id")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    // An attempt that never applied (lost or refused) left nothing to cancel: unknown, as to lookup.
    let target =
        resolve_target(st, svc, route, &id).and_then(|r| r.state_at(now).map(|s| (r.seq, s)));
    let Some(target) = target else {
        record.detail = Some(json!({"id": id, "outcome": "unknown"}));
        return Response::json(
            404,
            &json!({"error": format!("no action \"{id}\""), "id": id, "status": 404}),
        );
    };
    let (seq, state) = target;
    let (outcome, resp) = match (route.cancel_policy, state) {
        (CancelPolicy::AckOnly, _) => (
            "acknowledged",
            Response::json(202, &json!({"id": id, "status": "stop requested"})),
        ),
        (CancelPolicy::Honor, ActionState::Pending) => {
            if st.ledger.update(seq, |r| r.cancelled_at = Some(now)) {
                world.note(|session| Line::Cancel {
                    session,
                    seq,
                    at: now,
                });
            }
            (
                "cancelled",
                Response::json(200, &json!({"id": id, "state": "cancelled"})),
            )
        }
        (CancelPolicy::Honor, ActionState::Cancelled) => (
            "cancelled",
            Response::json(200, &json!({"id": id, "state": "cancelled"})),
        ),
        (CancelPolicy::Honor, ActionState::Applied) => (
            "too-late",
            Response::json(
                409,
                &json!({"error": "the action has already been applied", "id": id, "state": "applied", "status": 409}),
            ),
        ),
    };
    record.detail = Some(json!({"id": id, "target": seq, "outcome": outcome}));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fast_lane_closes_after_a_run_of_misses_and_is_probed_one_request_in_sixteen() {
        let mut misses = 0;
        let mut tried = Vec::new();
        for _ in 0..(LANE_OPEN + 1 + 4 * LANE_PROBE) {
            tried.push(lane_open(misses));
            misses = lane_missed(misses);
            assert!(misses < LANE_OPEN + LANE_PROBE, "the count stays bounded");
        }
        // Open for the first misses, then tried on one request in `LANE_PROBE`.
        let first = (LANE_OPEN + 1) as usize;
        assert!(tried[..first].iter().all(|&t| t));
        assert_eq!(tried[first..].iter().filter(|&&t| t).count(), 4);
        assert!(!tried[first]);
        // A hit (the count back to 0) opens it again.
        assert!(lane_open(0));
    }
}
