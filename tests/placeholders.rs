//! A response placeholder the request has no value for (`{{key}}` without a key,
//! `{{body./x}}` where the body has no `/x`) is sent as JSON `null`, never as its own text,
//! and the ledger entry says so (issue 27, item 6: ACC-3's "state it explicitly" for the
//! scenario's own output).

mod common;

use common::*;
use serde_json::json;

const SCENARIO: &str = r#"
name = "t"
[services.payments]
[[services.payments.routes]]
name = "create-transfer"
method = "POST"
path = "/v1/transfers"
kind = "action"
respond = { status = 201, json = { id = "{{action.id}}", key = "{{key}}", memo = "{{body./memo}}", text = "k={{key}}" } }
"#;

#[test]
fn acc3_a_placeholder_without_a_value_is_sent_as_null_and_noted_in_the_ledger() {
    let da = Da::start(SCENARIO);
    let r = da
        .post_json("/payments/v1/transfers", &[], &json!({"amount": 1}))
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(
        r.json(),
        json!({"id": "act_1", "key": null, "memo": null, "text": "k=null"})
    );
    let entry = &da.ledger()[0];
    assert_eq!(
        entry["detail"]["warnings"],
        json!([
            "`{{key}}` had no value in this request: sent as null",
            "`{{body./memo}}` had no value in this request: sent as null"
        ]),
        "{entry}"
    );
    // With values, no warnings.
    let r = da
        .post_json(
            "/payments/v1/transfers",
            &[("Idempotency-Key", "k-1")],
            &json!({"amount": 2, "memo": "rent"}),
        )
        .unwrap();
    assert_eq!(r.json()["key"], "k-1");
    assert_eq!(r.json()["memo"], "rent");
    assert!(da.ledger()[1]["detail"].get("warnings").is_none());
}

#[test]
fn acc3_a_header_whose_value_from_the_request_no_header_can_hold_is_left_out_and_noted() {
    let scenario = SCENARIO.replace(
        "respond = { status = 201,",
        "respond = { status = 201, headers = { \"X-Memo\" = \"{{body./memo}}\" },",
    );
    let da = Da::start(&scenario);
    let injected = json!({"memo": "a\r\nSet-Cookie: evil=1"});
    let r = da
        .post_json("/payments/v1/transfers", &[], &injected)
        .unwrap();
    // The ledger keeps what the client got: the 201, without the header.
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.header("x-memo"), None);
    assert_eq!(r.header("set-cookie"), None);
    let entry = &da.ledger()[0];
    assert_eq!(entry["response"]["status"], 201);
    let warnings = entry["detail"]["warnings"].to_string();
    assert!(warnings.contains("header `X-Memo`"), "{entry}");
    let fine = json!({"memo": "rent"});
    let r = da.post_json("/payments/v1/transfers", &[], &fine).unwrap();
    assert_eq!(r.header("x-memo"), Some("rent"));
}

/// An `error` template's placeholder for a fact this failure does not have (`{{error.id}}` on a
/// fate's error) is sent as JSON `null` (the text `null` inside a longer string), as a
/// response's is, never as its own text (ACC-3: the scenario states what it lacks).
#[test]
fn acc3_an_error_template_fact_the_failure_lacks_is_sent_as_null() {
    let da = Da::start(
        r#"
[services.p]
error = { kind = "{{error.kind}}", id = "{{error.id}}", text = "id={{error.id}}", st = "{{error.status}}" }
[[services.p.routes]]
name = "a"
method = "POST"
path = "/x"
kind = "action"
fates = ["error-before-apply:503"]
"#,
    );
    let r = da.post_json("/p/x", &[], &json!({"amount": 1})).unwrap();
    assert_eq!(r.status, 503, "{}", r.text());
    assert_eq!(
        r.json(),
        json!({"kind": "fate", "id": null, "text": "id=null", "st": 503})
    );
}
