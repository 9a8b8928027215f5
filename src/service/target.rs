//! Lookups and cancels: requests about an earlier action, named by its action id or its
//! idempotency key or its own id (an action route's `id` pointer into its response), answered
//! from the ledger as of the request's time (a lookup's `lag` ago), in the lookup route's
//! `respond` template when it has one.

use serde_json::{json, Value};

use super::errors::{Failure, Kind};
use super::Response;
use crate::journal::Line;
use crate::ledger::{parse_action_id, ActionState, Disposition, JsonText, Record};
use crate::scenario::{CancelPolicy, Respond, RespondBody, Route, Service};
use crate::template;
use crate::world::{State, World};

/// Resolve a lookup/cancel `{id}`: an action id of this service or an idempotency key.
fn resolve_target(st: &mut State, svc: &Service, route: &Route, id: &str) -> Option<Record> {
    let by_id = parse_action_id(id);
    let seq = by_id
        .or_else(|| st.by_key.get(&svc.name, id))
        .or_else(|| st.by_object.get(&svc.name, id))?;
    let rec = st.ledger.get(seq)?;
    let visible = rec.service == svc.name
        && (by_id.is_some()
            || rec.idempotency_key.as_deref() == Some(id)
            || rec.object_id.as_deref() == Some(id))
        && rec.is_action()
        && route
            .of
            .as_ref()
            .is_none_or(|of| rec.route.as_ref().is_some_and(|r| of.contains(r)));
    visible.then_some(rec)
}

/// A lookup route's own answer for the action found (its `respond`, as a template).
fn render_lookup(
    world: &World,
    respond: &Respond,
    target: &Record,
    state: ActionState,
    params: &[(String, String)],
) -> (Response, Vec<String>) {
    let found = Found {
        world,
        target,
        state,
        params,
    };
    // Every name was checked at load: one without a value here is sent as `null`.
    let vars = template::OrNull(&found);
    let mut headers: Vec<(
        std::borrow::Cow<'static, str>,
        std::borrow::Cow<'static, str>,
    )> = respond
        .headers
        .iter()
        .map(|(k, v)| (k.clone().into(), template::text(v, &vars).into()))
        .collect();
    let warnings = super::action::keep_fit_headers(&mut headers);
    let body = match &respond.body {
        RespondBody::Json(v, _) => {
            if !headers
                .iter()
                .any(|(k, _)| k.eq_ignore_ascii_case("content-type"))
            {
                headers.push(("content-type".into(), "application/json".into()));
            }
            serde_json::to_vec(&template::json(v, &vars)).unwrap_or_default()
        }
        RespondBody::Text(t) => template::text(t, &vars).into_bytes(),
    };
    let response = Response {
        status: respond.status,
        headers,
        body,
    };
    (response, warnings)
}

/// Placeholders of a lookup's answer, about the action found: `{{action.id}}`,
/// `{{action.seq}}`, `{{id}}` (its own id, else its action id), `{{state}}`, `{{key}}`,
/// `{{applied_at}}`, `{{received_at}}`, `{{now}}`, `{{body./pointer}}` (its request's body),
/// `{{intent}}`, `{{path.NAME}}` (the lookup's path).
struct Found<'a> {
    world: &'a World,
    target: &'a Record,
    state: ActionState,
    params: &'a [(String, String)],
}

impl template::Vars for Found<'_> {
    fn var(&self, name: &str) -> Option<Value> {
        let r = self.target;
        let clock = &self.world.clock;
        Some(match name {
            "action.id" => Value::from(r.action_id()),
            "action.seq" => Value::from(r.seq),
            "id" => Value::from(r.object_id.clone().unwrap_or_else(|| r.action_id())),
            "state" => serde_json::to_value(self.state).ok()?,
            "key" => Value::from(r.idempotency_key.clone()?),
            "applied_at" => Value::from(
                r.applied_at(clock.now())
                    .filter(|_| self.state == ActionState::Applied)
                    .map(|t| clock.rfc3339(t))?,
            ),
            "received_at" => Value::from(clock.rfc3339(r.received_at)),
            "now" => Value::from(clock.rfc3339(clock.now())),
            "intent" => r.intent.as_ref()?.value(),
            _ => {
                if let Some(p) = name.strip_prefix("body.") {
                    r.body.value().pointer(p)?.clone()
                } else if let Some(seg) = name.strip_prefix("path.") {
                    let (_, v) = self.params.iter().find(|(k, _)| k == seg)?;
                    Value::from(v.as_str())
                } else {
                    return None;
                }
            }
        })
    }
}

pub(super) fn action_view(world: &World, rec: &Record, state: Option<ActionState>) -> Value {
    let now = world.clock.now();
    json!({
        "id": rec.action_id(),
        "state": state,
        "route": rec.route,
        "idempotency_key": rec.idempotency_key,
        "intent": rec.intent.as_ref().map(JsonText::value),
        "received_at": world.clock.rfc3339(rec.received_at),
        "applied_at": rec.applied_at(now).filter(|_| state == Some(ActionState::Applied)).map(|t| world.clock.rfc3339(t)),
    })
}

pub(super) fn lookup(
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
        record.detail = Some(json!({"id": id, "answer": "unavailable"}).into());
        return Failure::new(503, Kind::Unavailable, "lookup unavailable")
            .respond(&route.errors, record.seq);
    }
    // As of `lag` ago; before time zero nothing existed yet.
    let as_of = record.received_at.checked_sub(route.lag);
    let found = as_of.and_then(|t| {
        resolve_target(st, svc, route, id).and_then(|rec| rec.state_at(t).map(|s| (rec, s)))
    });
    match found {
        Some((rec, state)) => {
            record.detail = Some(json!({"id": id, "target": rec.seq, "answer": state}).into());
            if let Some(respond) = &route.lookup_respond {
                let (response, warnings) = render_lookup(world, respond, &rec, state, params);
                super::action::note_warnings(record, warnings);
                return response;
            }
            let mut v = action_view(world, &rec, Some(state));
            if state != ActionState::Applied {
                v["applied_at"] = Value::Null;
            }
            Response::json(200, &v)
        }
        None => {
            record.detail = Some(json!({"id": id, "answer": "unknown"}).into());
            Failure::new(404, Kind::NotFound, format!("no action \"{id}\""))
                .with("id", id)
                .with("state", "unknown")
                .respond(&route.errors, record.seq)
        }
    }
}

/// Mark pending action `seq` cancelled at `now`, and journal it: the one way an effect is
/// stopped, by a cancel route or an honoured MCP cancellation.
fn mark_cancelled(world: &World, st: &mut State, seq: u64, now: std::time::Duration) {
    if st.ledger.update(seq, |r| r.cancelled_at = Some(now)) {
        world.note(|session| Line::Cancel {
            session,
            seq,
            at: now,
        });
    }
}

/// Stop action `seq` if its effect is still pending (an MCP `notifications/cancelled` under
/// `cancel = "honor"`); its state after (`None`: no longer held, or it never applied).
pub fn cancel_pending(world: &World, seq: u64) -> Option<ActionState> {
    let now = world.clock.now();
    let mut st = world.lock();
    let state = st.ledger.get(seq)?.state_at(now)?;
    if state == ActionState::Pending {
        mark_cancelled(world, &mut st, seq, now);
    }
    Some(state)
}

pub(super) fn cancel(
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
        record.detail = Some(json!({"id": id, "outcome": "unknown"}).into());
        return Failure::new(404, Kind::NotFound, format!("no action \"{id}\""))
            .with("id", id)
            .respond(&route.errors, record.seq);
    };
    let (seq, state) = target;
    let (outcome, resp) = match (route.cancel_policy, state) {
        (CancelPolicy::AckOnly, _) => (
            "acknowledged",
            Response::json(202, &json!({"id": id, "status": "stop requested"})),
        ),
        (CancelPolicy::Honor, ActionState::Pending) => {
            mark_cancelled(world, st, seq, now);
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
            Failure::new(409, Kind::TooLate, "the action has already been applied")
                .with("id", id.as_str())
                .with("state", "applied")
                .respond(&route.errors, record.seq),
        ),
    };
    record.detail = Some(json!({"id": id, "target": seq, "outcome": outcome}).into());
    resp
}
