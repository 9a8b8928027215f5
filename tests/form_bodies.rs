//! Form-encoded bodies (`application/x-www-form-urlencoded`, as stripe-python sends them) are
//! read into the same JSON model as a JSON body: intents, fingerprints, `match.json`, templates
//! and the ledger's `body` (rules ACC-1, REC-4).

mod common;

use common::*;
use serde_json::{json, Value};

const CREATE: &str = "/payments/v1/payment_intents";

fn stripe_like(route_extra: &str) -> Da {
    Da::start(&format!(
        r#"
name = "form"
seed = 1
clock = "manual"

[services.payments]
idempotency = {{ preset = "stripe", retention = "24h" }}

[[services.payments.routes]]
name = "create-intent"
method = "POST"
path = "/v1/payment_intents"
kind = "action"
intent = ["/amount", "/currency"]
respond = {{ status = 200, json = {{ id = "pi_{{{{action.seq}}}}", amount = "{{{{body./amount}}}}", order = "{{{{body./metadata/order}}}}" }} }}
{route_extra}
"#
    ))
}

fn post_form(da: &Da, key: Option<&str>, form: &str) -> Resp {
    let mut h = vec![("content-type", "application/x-www-form-urlencoded")];
    if let Some(k) = key {
        h.push(("Idempotency-Key", k));
    }
    da.call("POST", CREATE, &h, form)
}

fn findings(da: &Da) -> Vec<String> {
    da.get("/_admin/verify").json()["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_form_body_is_recorded_decoded_with_its_text_beside_it() {
    let da = stripe_like("");
    let r = post_form(
        &da,
        Some("k-1"),
        "amount=100&currency=usd&metadata[order]=7&items[0][price]=p_1",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(
        r.json(),
        json!({"id": "pi_1", "amount": "100", "order": "7"}),
        "templates read the form's fields"
    );
    let l = da.ledger();
    assert_eq!(
        l[0]["body"],
        json!({"amount": "100", "currency": "usd", "metadata": {"order": "7"}, "items": [{"price": "p_1"}]})
    );
    assert_eq!(
        l[0]["raw_body"],
        "amount=100&currency=usd&metadata[order]=7&items[0][price]=p_1"
    );
    assert_eq!(
        l[0]["intent"],
        json!({"/amount": "100", "/currency": "usd"})
    );
}

#[test]
fn acc1_two_different_form_payments_are_not_a_duplicate_but_the_same_one_twice_is() {
    let da = stripe_like("");
    post_form(&da, Some("k-1"), "amount=100&currency=usd");
    post_form(&da, Some("k-2"), "amount=200&currency=usd");
    assert!(
        !findings(&da).iter().any(|r| r == "ACC-1"),
        "different amounts are different payments"
    );
    post_form(&da, Some("k-3"), "currency=usd&amount=100");
    assert!(
        findings(&da).iter().any(|r| r == "ACC-1"),
        "the same payment under a new key is applied twice"
    );
}

#[test]
fn rec4_a_key_reused_for_another_form_amount_is_refused_and_flagged() {
    let da = stripe_like("");
    assert_eq!(
        post_form(&da, Some("k-1"), "amount=100&currency=usd").status,
        200
    );
    let again = post_form(&da, Some("k-1"), "amount=200&currency=usd");
    assert_eq!(again.status, 400, "{}", again.text());
    let replay = post_form(&da, Some("k-1"), "currency=usd&amount=100");
    assert_eq!(
        replay.header("idempotent-replayed"),
        Some("true"),
        "same fields, other order"
    );
    assert_eq!(replay.json()["amount"], "100");
    assert!(findings(&da).iter().any(|r| r == "REC-4"));
}

#[test]
fn match_json_selects_a_route_by_a_form_field() {
    let da = stripe_like(
        r#"match = { json = { "/currency" = "eur" } }
fates = ["error-after-apply:500"]"#,
    );
    let r = post_form(&da, None, "amount=1&currency=usd");
    assert_eq!(r.status, 404, "no route matches usd: {}", r.text());
    let r = post_form(&da, None, "amount=1&currency=eur");
    assert_eq!(r.status, 500, "{}", r.text());
    let l: Vec<Value> = da.ledger();
    assert_eq!(l[1]["route"], "create-intent");
}
