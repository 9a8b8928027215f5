//! Lookups (the authoritative state of an action, with lag and outages) and cancellation
//! (honoured, too late, or only acknowledged) — what a client must consult before it retries
//! (REC-4) and what a stop request really achieves (REC-3).

mod common;

use common::*;
use serde_json::{json, Value};

const CREATE: &str = "/payments/v1/transfers";

/// The payments service with extra keys on its action, lookup and cancel routes.
fn world(action: &str, lookup: &str, cancel: &str) -> Da {
    Da::start(&format!(
        r#"
name = "t"
clock = "manual"

[services.payments]
idempotency = {{ preset = "stripe" }}

[[services.payments.routes]]
name = "create-transfer"
method = "POST"
path = "/v1/transfers"
kind = "action"
respond = {{ status = 201, json = {{ id = "{{{{action.id}}}}", status = "succeeded" }} }}
{action}

[[services.payments.routes]]
name = "get-transfer"
method = "GET"
path = "/v1/transfers/{{id}}"
kind = "lookup"
{lookup}

[[services.payments.routes]]
name = "cancel-transfer"
method = "POST"
path = "/v1/transfers/{{id}}/cancel"
kind = "cancel"
{cancel}
"#
    ))
}

fn create(da: &Da, key: Option<&str>) -> Result<Resp, std::io::Error> {
    let h: Vec<(&str, &str)> = key.map(|k| ("Idempotency-Key", k)).into_iter().collect();
    da.post_json(CREATE, &h, &transfer())
}

fn cancel(da: &Da, id: &str) -> Resp {
    da.call("POST", &format!("{CREATE}/{id}/cancel"), &[], "")
}

fn state(da: &Da, id: &str) -> Value {
    let r = da.get(&format!("{CREATE}/{id}"));
    assert_eq!(r.status, 200, "lookup {id}: {}", r.text());
    r.json()["state"].clone()
}

fn last(da: &Da) -> Value {
    da.ledger().last().unwrap().clone()
}

#[test]
fn rec4_lookup_by_action_id_shows_the_applied_action() {
    let da = world("", "", "");
    create(&da, None).unwrap();
    let r = da.get(&format!("{CREATE}/act_1"));
    assert_eq!(r.status, 200);
    let v = r.json();
    assert_eq!(v["id"], "act_1");
    assert_eq!(v["state"], "applied");
    assert_eq!(v["route"], "create-transfer");
    assert!(v["applied_at"].is_string());
    let e = last(&da);
    assert_eq!(e["disposition"], "lookup");
    assert_eq!(e["route"], "get-transfer");
    assert_eq!(e["applied"], false, "a lookup applies nothing");
    assert_eq!(
        e["detail"],
        json!({"id": "act_1", "target": 1, "answer": "applied"})
    );
}

#[test]
fn rec4_lookup_by_idempotency_key_finds_the_action_whose_response_was_lost() {
    let da = world(r#"fates = ["drop-after-apply"]"#, "", "");
    assert!(create(&da, Some("k-lost")).is_err());
    let r = da.get(&format!("{CREATE}/k-lost"));
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["id"], "act_1");
    assert_eq!(
        r.json()["state"],
        "applied",
        "the client can learn the outcome it never received"
    );
    assert_eq!(r.json()["idempotency_key"], "k-lost");
    assert_eq!(last(&da)["detail"]["target"], 1);
}

#[test]
fn lookup_of_an_unknown_id_is_a_json_404_and_is_recorded() {
    let da = world("", "", "");
    for id in ["act_99", "no-such-key", "act_0", "act_x"] {
        let r = da.get(&format!("{CREATE}/{id}"));
        assert_eq!(r.status, 404, "{id}");
        let v = r.json();
        assert_eq!(v["state"], "unknown");
        assert_eq!(v["id"], id);
        assert_eq!(v["status"], 404);
        let e = last(&da);
        assert_eq!(e["disposition"], "lookup");
        assert_eq!(e["detail"], json!({"id": id, "answer": "unknown"}));
    }
}

#[test]
fn rec4_a_request_that_never_applied_is_unknown_to_lookup() {
    let da = world(r#"fates = ["error-before-apply:503"]"#, "", "");
    assert_eq!(create(&da, Some("k-1")).unwrap().status, 503);
    assert_eq!(da.get(&format!("{CREATE}/act_1")).status, 404);
    assert_eq!(da.get(&format!("{CREATE}/k-1")).status, 404);
}

#[test]
fn lookup_cannot_see_a_lookup_or_replay_as_an_action() {
    let da = world("", "", "");
    create(&da, Some("k-1")).unwrap();
    create(&da, Some("k-1")).unwrap(); // seq 2: a replay
    da.get(&format!("{CREATE}/act_1")); // seq 3: a lookup
    assert_eq!(
        da.get(&format!("{CREATE}/act_2")).status,
        404,
        "a replay is not an action"
    );
    assert_eq!(
        da.get(&format!("{CREATE}/act_3")).status,
        404,
        "a lookup is not an action"
    );
    assert_eq!(state(&da, "k-1"), "applied");
}

#[test]
fn rec4_a_lagging_lookup_shows_the_state_as_it_was_lag_ago() {
    let da = world(r#"fates = ["apply-later:5s"]"#, r#"lag = "2s""#, "");
    assert_eq!(create(&da, None).unwrap().status, 202);
    da.advance("2s");
    assert_eq!(state(&da, "act_1"), "pending");
    da.advance("3s"); // t = 5s: the effect just happened
    assert_eq!(da.ledger()[0]["applied"], true, "the truth");
    let r = da.get(&format!("{CREATE}/act_1")).json();
    assert_eq!(
        r["state"], "pending",
        "the lookup still reports the state as of t = 3s"
    );
    assert_eq!(r["applied_at"], Value::Null);
    assert_eq!(last(&da)["detail"]["answer"], "pending");
    da.advance("1s");
    assert_eq!(state(&da, "act_1"), "pending", "as of t = 4s");
    da.advance("1s");
    assert_eq!(
        state(&da, "act_1"),
        "applied",
        "as of t = 5s: the lag has passed"
    );
}

#[test]
fn rec4_an_action_received_less_than_lag_ago_is_not_found_yet() {
    let da = world("", r#"lag = "2s""#, "");
    da.advance("10s");
    assert_eq!(create(&da, None).unwrap().status, 201);
    da.advance("1s");
    let r = da.get(&format!("{CREATE}/act_1"));
    assert_eq!(
        r.status,
        404,
        "as of 2s ago the action did not exist: {}",
        r.text()
    );
    da.advance("1s");
    assert_eq!(state(&da, "act_1"), "applied");
}

#[test]
fn rec4_lag_reaches_back_before_the_scenario_started() {
    // At t = 1s, "2s ago" is before time zero, when nothing existed yet.
    let da = world("", r#"lag = "2s""#, "");
    create(&da, None).unwrap();
    da.advance("1s");
    assert_eq!(da.get(&format!("{CREATE}/act_1")).status, 404);
    da.advance("1s");
    assert_eq!(state(&da, "act_1"), "applied");
}

#[test]
fn an_unavailable_lookup_answers_503_and_is_recorded() {
    let da = world("", "available = false", "");
    create(&da, None).unwrap();
    let r = da.get(&format!("{CREATE}/act_1"));
    assert_eq!(r.status, 503);
    assert_eq!(r.json()["status"], 503);
    let e = last(&da);
    assert_eq!(e["disposition"], "lookup");
    assert_eq!(e["response"]["status"], 503);
    assert_eq!(e["detail"], json!({"id": "act_1", "answer": "unavailable"}));
}

#[test]
fn rec3_cancelling_a_pending_action_stops_it_for_good() {
    let da = world(r#"fates = ["apply-later:5s"]"#, "", "");
    assert_eq!(create(&da, None).unwrap().status, 202);
    da.advance("1s");
    let r = cancel(&da, "act_1");
    assert_eq!(r.status, 200);
    assert_eq!(r.json(), json!({"id": "act_1", "state": "cancelled"}));
    let e = last(&da);
    assert_eq!(e["disposition"], "cancel");
    assert_eq!(e["route"], "cancel-transfer");
    assert_eq!(
        e["detail"],
        json!({"id": "act_1", "target": 1, "outcome": "cancelled"})
    );

    da.advance("1h");
    assert_eq!(state(&da, "act_1"), "cancelled");
    let action = &da.ledger()[0];
    assert_eq!(action["applied"], false, "it never took effect");
    assert_eq!(action["applied_at"], Value::Null);
    assert!(action["cancelled_at"].is_string());
    // Cancelling again is harmless.
    assert_eq!(cancel(&da, "act_1").status, 200);
}

#[test]
fn rec3_a_pending_action_can_be_cancelled_by_its_idempotency_key() {
    let da = world(r#"fates = ["apply-later:5s"]"#, "", "");
    create(&da, Some("k-1")).unwrap();
    assert_eq!(cancel(&da, "k-1").status, 200);
    da.advance("10s");
    assert_eq!(state(&da, "k-1"), "cancelled");
    assert_eq!(da.ledger()[0]["applied"], false);
}

#[test]
fn rec3_cancelling_an_applied_action_is_409_too_late() {
    let da = world("", "", "");
    create(&da, None).unwrap();
    let r = cancel(&da, "act_1");
    assert_eq!(r.status, 409);
    assert_eq!(r.json()["state"], "applied");
    assert_eq!(last(&da)["detail"]["outcome"], "too-late");
    assert_eq!(state(&da, "act_1"), "applied");
    assert_eq!(da.ledger()[0]["applied"], true);
}

#[test]
fn rec3_cancel_arriving_when_an_apply_later_is_due_is_too_late() {
    let da = world(r#"fates = ["apply-later:5s"]"#, "", "");
    create(&da, None).unwrap();
    da.advance("5s");
    assert_eq!(cancel(&da, "act_1").status, 409);
    assert_eq!(da.ledger()[0]["applied"], true);
}

#[test]
fn cancelling_an_unknown_action_is_a_json_404_and_is_recorded() {
    let da = world("", "", "");
    let r = cancel(&da, "act_7");
    assert_eq!(r.status, 404);
    assert_eq!(r.json()["id"], "act_7");
    let e = last(&da);
    assert_eq!(e["disposition"], "cancel");
    assert_eq!(e["detail"], json!({"id": "act_7", "outcome": "unknown"}));
}

#[test]
fn rec3_cancelling_a_request_that_never_applied_is_404_not_too_late() {
    // A lost request left nothing to cancel; "already applied" would be a lie.
    let da = world(r#"fates = ["drop-before-apply"]"#, "", "");
    assert!(create(&da, None).is_err());
    let r = cancel(&da, "act_1");
    assert_eq!(r.status, 404, "{}", r.text());
    assert_eq!(last(&da)["detail"]["outcome"], "unknown");
    assert_eq!(da.ledger()[0]["applied"], false);
}

#[test]
fn rec3_ack_only_acknowledges_the_stop_while_the_action_still_takes_effect() {
    let da = world(
        r#"fates = ["apply-later:5s"]"#,
        "",
        r#"policy = "ack-only""#,
    );
    create(&da, None).unwrap();
    let r = cancel(&da, "act_1");
    assert_eq!(r.status, 202);
    assert_eq!(r.json()["status"], "stop requested");
    let e = last(&da);
    assert_eq!(e["disposition"], "cancel");
    assert_eq!(
        e["detail"],
        json!({"id": "act_1", "target": 1, "outcome": "acknowledged"})
    );
    assert_eq!(
        state(&da, "act_1"),
        "pending",
        "stop requested is not a terminal state"
    );

    da.advance("5s");
    assert_eq!(
        state(&da, "act_1"),
        "applied",
        "the stop request did not stop it"
    );
    let action = &da.ledger()[0];
    assert_eq!(action["applied"], true);
    assert_eq!(action["cancelled_at"], Value::Null);
}

/// A Stripe-shaped service: its actions hand out `pi_N`, and a retrieve answers the object.
const OWN_IDS: &str = r#"
name = "own-ids"
seed = 1
clock = "manual"

[services.payments]
idempotency = { preset = "stripe" }

[[services.payments.routes]]
name = "create-intent"
method = "POST"
path = "/v1/payment_intents"
kind = "action"
id = "/id"
respond = { status = 200, json = { id = "pi_{{action.seq}}", object = "payment_intent", amount = "{{body./amount}}" } }

[[services.payments.routes]]
name = "retrieve-intent"
method = "GET"
path = "/v1/payment_intents/{id}"
kind = "lookup"
respond = { json = { id = "{{id}}", object = "payment_intent", amount = "{{body./amount}}", state = "{{state}}", lookup = "{{path.id}}" } }

[[services.payments.routes]]
name = "cancel-intent"
method = "POST"
path = "/v1/payment_intents/{id}/cancel"
kind = "cancel"
"#;

#[test]
fn acc3_a_lookup_finds_an_action_by_the_id_its_own_response_handed_out() {
    let da = Da::start(OWN_IDS);
    let created = da
        .post_json(
            "/payments/v1/payment_intents",
            &[("Idempotency-Key", "k-1")],
            &json!({"amount": 100}),
        )
        .unwrap();
    assert_eq!(created.json()["id"], "pi_1");
    assert_eq!(da.ledger()[0]["object_id"], "pi_1");

    let got = da.get("/payments/v1/payment_intents/pi_1");
    assert_eq!(got.status, 200, "{}", got.text());
    assert_eq!(
        got.json(),
        json!({"id": "pi_1", "object": "payment_intent", "amount": 100, "state": "applied", "lookup": "pi_1"}),
        "the lookup's own template, over the action found"
    );
    // Still found by its action id and its key, answered the same way.
    for other in ["act_1", "k-1"] {
        assert_eq!(
            da.get(&format!("/payments/v1/payment_intents/{other}"))
                .json()["id"],
            "pi_1"
        );
    }
    let missing = da.get("/payments/v1/payment_intents/pi_9");
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json()["error"]["code"], "resource_missing");
}

#[test]
fn rec3_a_cancel_names_an_action_by_its_own_id_too() {
    let da = Da::start(OWN_IDS);
    da.post_json("/payments/v1/payment_intents", &[], &json!({"amount": 5}))
        .unwrap();
    let r = da.call("POST", "/payments/v1/payment_intents/pi_1/cancel", &[], "");
    assert_eq!(r.status, 409, "applied at once, so too late: {}", r.text());
    assert_eq!(da.ledger()[1]["detail"]["target"], 1);
}

#[test]
fn rec4_a_key_that_urls_must_encode_is_found_by_its_encoded_lookup_and_cancel() {
    let da = world("", "", "");
    let keys = [
        ("order 7", "order%207"),
        ("a+b", "a%2Bb"),
        ("x y%", "x%20y%25"),
        ("a/b", "a%2Fb"),
        ("ключ", "%D0%BA%D0%BB%D1%8E%D1%87"),
    ];
    for (key, encoded) in keys {
        create(&da, Some(key)).unwrap();
        assert_eq!(state(&da, encoded), "applied", "{key}");
        assert_eq!(cancel(&da, encoded).status, 409, "{key}: found, too late");
        let found = da.get(&format!("/_admin/ledger?key={encoded}")).json()["entries"].clone();
        assert_eq!(found[0]["idempotency_key"], key, "{found}");
    }
}

#[test]
fn acc3_a_lookup_answer_sends_a_missing_value_as_null_and_leaves_out_an_unfit_header() {
    let lookup = r#"respond = { status = 200, headers = { "X-Memo" = "{{body./memo}}" }, json = { id = "{{id}}", key = "{{key}}", memo = "{{body./memo}}" } }"#;
    let da = world("", lookup, "");
    let injected = json!({"to": "acct-9", "amount": 1, "memo": "a\r\nSet-Cookie: evil=1"});
    assert_eq!(da.post_json(CREATE, &[], &injected).unwrap().status, 201);
    let r = da.get(&format!("{CREATE}/act_1"));
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.json()["key"],
        Value::Null,
        "no key was sent: {}",
        r.text()
    );
    assert_eq!(r.json()["memo"], "a\r\nSet-Cookie: evil=1");
    assert_eq!(r.header("x-memo"), None);
    assert_eq!(r.header("set-cookie"), None);
    let e = last(&da);
    assert_eq!(e["response"]["status"], 200);
    assert!(
        e["detail"]["warnings"]
            .to_string()
            .contains("header `X-Memo`"),
        "{e}"
    );
}
