//! An action's part of admission: what it reads from its request (key, fingerprint, intent), the
//! idempotency decision, and for an execution its fate, its rendered response and the key store
//! remembering it.

use std::borrow::Cow;
use std::cell::RefCell;
use std::time::Duration;

use serde_json::{json, Value};

use super::errors::{Failure, Kind};
use super::route::{header_value, key_text, pointer};
use super::target::action_view;
use super::{Plan, Request, Response};
use crate::fate::Fate;
use crate::idempotency::{
    fingerprint, fingerprint_bytes, Cache, Decision, Fingerprint, Kept, KeyRecord, Mode, Stored,
};
use crate::ledger::{Disposition, JsonText, Ledger, Record};
use crate::scenario::{Per, RespondBody, Route, Service};
use crate::template;
use crate::world::{State, World};

/// What an action reads from its request, worked out before the world is locked.
pub(super) struct Prepared {
    pub key: Option<String>,
    pub fingerprint: Option<String>,
    /// The body itself when the route names no pointers, else an object of the values at them;
    /// none when the body has no JSON model.
    pub intent: Option<JsonText>,
}

impl Prepared {
    /// `text` is the body's JSON model as text (`json` written by serde_json), when it has one.
    pub fn of(
        route: &Route,
        req: &Request<'_>,
        json: Option<&Value>,
        text: Option<&JsonText>,
    ) -> Prepared {
        let policy = &route.idempotency;
        // A body with no JSON model has no intent to read (not one of nulls at every pointer,
        // which would make every such action look like the same one).
        let intent = match (route.intent.is_empty(), json) {
            (true, _) => text.cloned(),
            (false, None) => None,
            (false, Some(_)) => Some(JsonText::of(&Picked(&route.intent, json))),
        };
        let fingerprint = match (&policy.fingerprint, text) {
            // The body's canonical text is already written: hashed, not written again.
            (Fingerprint::Body, Some(t)) => Some(fingerprint_bytes(t.text().as_bytes())),
            (how, _) => fingerprint(how, &req.body, json),
        };
        Prepared {
            key: header_value(&req.headers, &policy.header_name).map(key_text),
            fingerprint,
            intent,
        }
    }
}

/// What an intent holds at a pointer the body does not have.
const NULL: Value = Value::Null;

/// An intent's values by pointer (the route's pointers, in byte order and each once, as a
/// `serde_json::Map` keeps its names): written as a JSON object.
struct Picked<'a>(&'a [String], Option<&'a Value>);

impl serde::Serialize for Picked<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let at = |p: &String| self.1.and_then(|j| pointer(j, p)).unwrap_or(&NULL);
        s.collect_map(self.0.iter().map(|p| (p, at(p))))
    }
}

/// Admit an action: decide by its key and execute it if the decision says so. Also returns,
/// for a journaled world, the key record an execution left, to be journaled with it.
pub(super) fn action(
    world: &World,
    st: &mut State,
    svc: &Service,
    route: &Route,
    req: &Request<'_>,
    json: Option<&Value>,
    record: &mut Record,
) -> (Response, Plan, Option<KeyRecord>) {
    let now = record.received_at;
    let policy = &route.idempotency;
    let mut journaled = None;
    let decision = st.keys.decide(
        policy,
        &svc.name,
        record.idempotency_key.as_deref(),
        record.fingerprint.as_deref(),
        now,
    );
    let (mut response, plan) = match decision {
        Decision::Execute { after_expiry } => {
            record.disposition = Disposition::Executed;
            record.executed_after_expiry = after_expiry;
            record.key_forgotten = (record.idempotency_key.as_deref())
                .is_some_and(|k| !after_expiry && st.keys.forgot(&svc.name, k));
            let (response, plan, key) = execute(world, st, svc, route, req, json, record);
            journaled = key;
            (response, plan)
        }
        Decision::Replay { of, response } => (
            replay(world, &st.ledger, route, of, response, record),
            Plan::Now,
        ),
        Decision::Missing => {
            record.disposition = Disposition::MissingKey;
            let text = format!(
                "this endpoint requires an idempotency key in the {} header",
                policy.header
            );
            let f = Failure::new(policy.missing_status, Kind::MissingKey, text);
            (f.respond(&route.errors, record.seq), Plan::Now)
        }
        Decision::Conflict { of } => {
            record.disposition = Disposition::Conflict;
            record.detail = Some(json!({"key_owner": of}).into());
            let text = "a request with this idempotency key is still in progress; retry later";
            let f = Failure::new(policy.conflict_status, Kind::Conflict, text);
            (f.respond(&route.errors, record.seq), Plan::Now)
        }
        Decision::Mismatch { of } => {
            record.disposition = Disposition::Mismatch;
            record.detail = Some(json!({"key_owner": of}).into());
            let text = "idempotency key reused with a different request payload: keys for \
                        idempotent requests can only be used with the same parameters they were \
                        first used with";
            let f = Failure::new(policy.mismatch_status, Kind::Mismatch, text);
            (f.respond(&route.errors, record.seq), Plan::Now)
        }
    };
    // Providers that echo the key do so on every answer to a keyed request, replays included;
    // stored responses are kept without it, so a replay carries it once.
    if let (true, Some(k)) = (policy.echo_key, &record.idempotency_key) {
        // The readable part of a non-UTF-8 key's text (see `route::key_text`): its DEL and hex
        // cannot go into a header.
        let shown = k.split('\u{7f}').next().unwrap_or_default();
        response
            .headers
            .push((policy.header.clone().into(), shown.to_string().into()));
    }
    (response, plan, journaled)
}

/// The answer to a replay: its stored response, or (cache `latest`) the action's state now.
fn replay(
    world: &World,
    ledger: &Ledger,
    route: &Route,
    of: u64,
    stored: Stored<'_>,
    record: &mut Record,
) -> Response {
    let policy = &route.idempotency;
    record.disposition = Disposition::Replayed;
    record.replay_of = Some(of);
    let now = record.received_at;
    let latest = match policy.cache {
        Cache::Latest => ledger.get(of),
        _ => None,
    };
    let mut r = match latest {
        Some(orig) => Response::json(200, &action_view(world, &orig, orig.state_at(now))),
        None => Response::from_stored(stored),
    };
    if let Some(h) = &policy.replay_header {
        r.headers.push((h.clone(), "true".into()));
    }
    r
}

/// Execute an action: its fate, the response that fate gives, the key store remembering it.
fn execute(
    world: &World,
    st: &mut State,
    svc: &Service,
    route: &Route,
    req: &Request<'_>,
    json: Option<&Value>,
    record: &mut Record,
) -> (Response, Plan, Option<KeyRecord>) {
    let now = record.received_at;
    let mut journaled = None;
    if route.repeatable {
        // Carried in the entry so an exported ledger can be verified without the scenario.
        record.detail = Some(json!({"repeatable": true}).into());
    }
    let fate = pick_fate(world, st, svc, route, record);
    record.fate = Some(fate);
    record.applies_at = match fate {
        Fate::ApplyLater(d) => Some(now + d),
        f if f.applies() => Some(now + req.defer.unwrap_or_default()),
        _ => None,
    };
    // Rendering is most of what answering costs; an answer nobody reads and no key store keeps
    // needs only its status.
    let ok = if req.unread && record.idempotency_key.is_none() && route.id.is_none() {
        Response {
            status: route.respond.status,
            headers: Vec::new(),
            body: Vec::new(),
        }
    } else {
        let (ok, warnings) = render_respond(world, route, json, record);
        note_warnings(record, warnings);
        ok
    };
    record.object_id = route.id.as_deref().and_then(|p| object_id(&ok.body, p));
    if let (Some(id), true) = (&record.object_id, fate.applies()) {
        st.by_object.insert(&svc.name, id, record.seq);
    }
    let (response, plan, completes_at) = fated(fate, ok, now, route, record);
    // A provider remembers a key only once execution began (Stripe: "saves only after endpoint
    // execution begins"), and only responses its cache policy keeps.
    if let Some(k) = &record.idempotency_key {
        let policy = &route.idempotency;
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
            };
            journaled = world.journaled().then(|| kept.to_record());
            st.keys.remember_parts(&svc.name, k, kept);
        }
        if fate.applies() {
            st.by_key.insert(&svc.name, k, record.seq);
        }
    }
    (response, plan, journaled)
}

/// The fate of this attempt: the next of its stream (the route's, or per intent or key).
fn pick_fate(world: &World, st: &mut State, svc: &Service, route: &Route, record: &Record) -> Fate {
    let intent = match route.per {
        Per::Intent => record.intent.as_ref().map(|i| i.text().as_bytes()),
        _ => None,
    };
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
    fate
}

/// The action's own id in its rendered response: a string, or a number as its text.
fn object_id(body: &[u8], pointer: &str) -> Option<String> {
    let v: Value = serde_json::from_slice(body).ok()?;
    match v.pointer(pointer)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// The response a fate gives, how it is delivered, and when the attempt completes.
fn fated(
    fate: Fate,
    ok: Response,
    now: Duration,
    route: &Route,
    record: &Record,
) -> (Response, Plan, Duration) {
    let error =
        |s: u16| Failure::new(s, Kind::Fate, error_text(s)).respond(&route.errors, record.seq);
    match fate {
        Fate::Respond | Fate::RespondWithoutApply => (ok, Plan::Now, now),
        Fate::Delay(d) => (ok, Plan::At(now + d), now + d),
        Fate::DropAfterApply | Fate::DropBeforeApply => (ok, Plan::Drop, now),
        Fate::HangAfterApply => (ok, Plan::Hang, now),
        Fate::ResetAfterApply => (ok, Plan::Reset, now),
        Fate::ErrorBeforeApply(s) => {
            let mut r = error(s);
            if s == 429 || s == 503 {
                r.headers.push(("retry-after".into(), "1".into()));
            }
            (r, Plan::Now, now)
        }
        Fate::ErrorAfterApply(s) => (error(s), Plan::Now, now),
        Fate::ApplyLater(_) => {
            let r = Response::json(202, &json!({"id": record.action_id(), "status": "pending"}));
            (r, Plan::Now, now)
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

/// The route's `respond` rendered, and a warning for each placeholder this request had no value
/// for (sent as `null`) and each header whose rendered value no header can hold (left out, so
/// the ledger keeps what the client got).
fn render_respond(
    world: &World,
    route: &Route,
    json: Option<&Value>,
    record: &Record,
) -> (Response, Vec<String>) {
    let ctx = Ctx {
        world,
        json,
        record,
        unfilled: RefCell::new(Vec::new()),
    };
    let mut headers: Vec<(Cow<'static, str>, Cow<'static, str>)> = route
        .respond
        .headers
        .iter()
        .map(|(k, v)| (k.clone().into(), template::text(v, &ctx).into()))
        .collect();
    let mut warnings = keep_fit_headers(&mut headers);
    let body = match &route.respond.body {
        RespondBody::Json(_, compiled) => {
            if !headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
            {
                headers.push(("content-type".into(), "application/json".into()));
            }
            // Room for a typical body: grown from empty, it is reallocated several times.
            let mut out = Vec::with_capacity(128);
            compiled.write(&ctx, &mut out);
            out
        }
        RespondBody::Text(t) => template::text(t, &ctx).into_bytes(),
    };
    let response = Response {
        status: route.respond.status,
        headers,
        body,
    };
    let unfilled = ctx.unfilled.into_inner().into_iter();
    warnings.extend(
        unfilled.map(|n| format!("`{{{{{n}}}}}` had no value in this request: sent as null")),
    );
    (response, warnings)
}

/// Leave out the rendered headers no header can hold (a request's text with a line break in a
/// placeholder), so the ledger keeps what the client got; a warning for each.
pub(super) fn keep_fit_headers(
    headers: &mut Vec<(Cow<'static, str>, Cow<'static, str>)>,
) -> Vec<String> {
    let mut warnings = Vec::new();
    headers.retain(|(k, v)| {
        // As the server will build it (no control character but tab).
        let fit = hyper::header::HeaderValue::from_str(v).is_ok();
        if !fit {
            warnings.push(format!(
                "header `{k}`: its value here holds a control character, so it was left out"
            ));
        }
        fit
    });
    warnings
}

/// The response's warnings in the entry: the client got something the scenario did not say,
/// and whoever reads the ledger should know it.
pub(super) fn note_warnings(record: &mut Record, warnings: Vec<String>) {
    if warnings.is_empty() {
        return;
    }
    // Rare (a scenario's placeholder the request could not fill): the detail is read back once.
    let mut detail = match record.detail.as_ref().map(|d| d.value()) {
        Some(Value::Object(d)) => d,
        _ => serde_json::Map::new(),
    };
    detail.insert("warnings".into(), Value::from(warnings));
    record.detail = Some(Value::Object(detail).into());
}

/// Placeholder context: `{{action.id}}`, `{{action.seq}}`, `{{key}}`, `{{work_id}}`,
/// `{{revision}}`, `{{now}}`, `{{body./pointer}}`, `{{path.NAME}}`. Every name is known (checked
/// at load); one this request has no value for is `null`, and noted in `unfilled`.
struct Ctx<'a> {
    world: &'a World,
    json: Option<&'a Value>,
    record: &'a Record,
    unfilled: RefCell<Vec<String>>,
}

impl template::Vars for Ctx<'_> {
    fn write(&self, name: &str, out: &mut Vec<u8>) -> bool {
        // In nearly every response: written without making a `Value`.
        if name != "action.id" {
            return false;
        }
        out.extend_from_slice(b"\"act_");
        // Serialising a number into a `Vec` cannot fail.
        let _ = serde_json::to_writer(&mut *out, &self.record.seq);
        out.push(b'"');
        true
    }

    fn var(&self, name: &str) -> Option<Value> {
        Some(self.value(name).unwrap_or_else(|| {
            let mut unfilled = self.unfilled.borrow_mut();
            if !unfilled.iter().any(|n| n == name) {
                unfilled.push(name.to_string());
            }
            Value::Null
        }))
    }
}

impl Ctx<'_> {
    fn value(&self, name: &str) -> Option<Value> {
        let r = self.record;
        Some(match name {
            "action.id" => Value::from(r.action_id()),
            "action.seq" => Value::from(r.seq),
            "key" => Value::from(r.idempotency_key.clone()?),
            "work_id" => Value::from(r.work_id.clone()?),
            "revision" => r.revision.as_ref()?.to_value(),
            "now" => Value::from(self.world.clock.rfc3339(r.received_at)),
            "request.method" => Value::from(r.method.as_str()),
            "request.path" => Value::from(r.path.as_str()),
            _ => {
                if let Some(p) = name.strip_prefix("body.") {
                    pointer(self.json?, p)?.clone()
                } else if let Some(seg) = name.strip_prefix("path.") {
                    let route = self
                        .world
                        .scenario
                        .service(&r.service)?
                        .route(r.route.as_deref()?)?;
                    let (_, v) = route
                        .path
                        .matches(&r.path)?
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
