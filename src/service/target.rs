//! Lookups and cancels: requests about an earlier action, named by its action id or its
//! idempotency key, answered from the ledger as of the request's time (a lookup's `lag` ago).

use serde_json::{json, Value};

use super::Response;
use crate::journal::Line;
use crate::ledger::{parse_action_id, ActionState, Disposition, Record};
use crate::scenario::{CancelPolicy, Route, Service};
use crate::world::{State, World};

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

pub(super) fn action_view(world: &World, rec: &Record, state: Option<ActionState>) -> Value {
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
        return Response::json(503, &json!({"error": "lookup unavailable", "status": 503}));
    }
    // As of `lag` ago; before time zero nothing existed yet.
    let as_of = record.received_at.checked_sub(route.lag);
    let found = as_of.and_then(|t| {
        resolve_target(st, svc, route, id).and_then(|rec| rec.state_at(t).map(|s| (rec, s)))
    });
    match found {
        Some((rec, state)) => {
            record.detail = Some(json!({"id": id, "target": rec.seq, "answer": state}).into());
            let mut v = action_view(world, &rec, Some(state));
            if state != ActionState::Applied {
                v["applied_at"] = Value::Null;
            }
            Response::json(200, &v)
        }
        None => {
            record.detail = Some(json!({"id": id, "answer": "unknown"}).into());
            Response::json(
                404,
                &json!({"error": format!("no action \"{id}\""), "id": id, "state": "unknown", "status": 404}),
            )
        }
    }
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
    record.detail = Some(json!({"id": id, "target": seq, "outcome": outcome}).into());
    resp
}
