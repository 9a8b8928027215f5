//! Errors doubleagent itself produces on a fake service come in the route's provider shape, so
//! an official SDK raises its own error type (stripe-python picks its exception by status and
//! `error.type`) instead of crashing on a body it cannot read (rules REC-4, ACC-3: a client
//! that cannot read an error cannot decide whether to retry).

mod common;

use common::*;
use serde_json::json;

fn scenario(idempotency: &str, fates: &str) -> Da {
    Da::start(&payments(idempotency, &format!("fates = [{fates}]")))
}

fn post(da: &Da, key: &str) -> Resp {
    da.post_json(
        "/payments/v1/transfers",
        &[("Idempotency-Key", key)],
        &transfer(),
    )
    .unwrap()
}

#[test]
fn stripe_fate_errors_carry_the_error_type_the_sdk_maps_to_its_exceptions() {
    let da = scenario(
        r#"idempotency = { preset = "stripe" }"#,
        r#""error-after-apply:500", "error-after-apply:402", "error-before-apply:429""#,
    );
    let want = [
        (500, "api_error"),
        (402, "card_error"),
        (429, "invalid_request_error"),
    ];
    for (i, (status, kind)) in want.into_iter().enumerate() {
        let r = post(&da, &format!("k-{i}"));
        assert_eq!(r.status, status);
        let b = r.json();
        assert_eq!(b["error"]["type"], kind, "{b}");
        assert!(b["error"]["message"].is_string(), "{b}");
    }
}

#[test]
fn stripe_unmatched_and_lookup_misses_are_invalid_request_errors_with_resource_missing() {
    let da = scenario(r#"idempotency = { preset = "stripe" }"#, r#""respond""#);
    for path in ["/payments/v1/nope", "/payments/v1/transfers/pi_404"] {
        let r = da.get(path);
        assert_eq!(r.status, 404);
        let b = r.json();
        assert_eq!(
            (b["error"]["type"].as_str(), b["error"]["code"].as_str()),
            (Some("invalid_request_error"), Some("resource_missing")),
            "{path}: {b}"
        );
    }
    assert_eq!(da.ledger().len(), 2, "both still recorded");
}

#[test]
fn ietf_errors_are_problem_details() {
    let da = scenario(
        r#"idempotency = { preset = "ietf" }"#,
        r#""error-after-apply:503""#,
    );
    let r = post(&da, "k-1");
    assert_eq!(r.header("content-type"), Some("application/problem+json"));
    let b = r.json();
    assert_eq!(
        (b["status"].as_u64(), b["title"].as_str()),
        (Some(503), Some("Service Unavailable"))
    );
}

#[test]
fn paypal_adyen_and_checkout_errors_use_their_providers_members() {
    for (preset, member) in [
        ("paypal", "debug_id"),
        ("adyen", "errorType"),
        ("checkout", "error_codes"),
    ] {
        let da = scenario(
            &format!(r#"idempotency = {{ preset = "{preset}" }}"#),
            r#""error-after-apply:500""#,
        );
        let key_header = match preset {
            "paypal" => "PayPal-Request-Id",
            "checkout" => "Cko-Idempotency-Key",
            _ => "Idempotency-Key",
        };
        let r = da
            .post_json(
                "/payments/v1/transfers",
                &[(key_header, "k-1")],
                &transfer(),
            )
            .unwrap();
        assert_eq!(r.status, 500);
        assert!(!r.json()[member].is_null(), "{preset}: {}", r.text());
    }
}

#[test]
fn a_service_can_choose_another_shape_and_a_service_without_one_keeps_the_generic() {
    let da = scenario(
        r#"idempotency = { preset = "stripe", errors = "generic" }"#,
        r#""error-after-apply:500""#,
    );
    assert_eq!(
        post(&da, "k-1").json(),
        json!({"error": "internal server error", "status": 500})
    );
    let da = scenario("", r#""error-after-apply:500""#);
    assert_eq!(post(&da, "k-1").json()["error"], "internal server error");
}

#[test]
fn an_error_template_on_the_service_or_route_replaces_the_shape() {
    let da = Da::start(&payments(
        r#"idempotency = { preset = "stripe" }
error = { fault = { code = "{{error.status}}", text = "{{error.message}}", kind = "{{error.kind}}" } }"#,
        r#"fates = ["error-after-apply:503"]"#,
    ));
    let r = post(&da, "k-1");
    assert_eq!(r.status, 503);
    assert_eq!(
        r.json(),
        json!({"fault": {"code": 503, "text": "service unavailable", "kind": "fate"}})
    );
    let miss = da.get("/payments/v1/transfers/act_9");
    assert_eq!(miss.status, 404);
    assert_eq!(
        miss.json()["fault"]["kind"],
        "not-found",
        "the lookup route inherits the service's"
    );
}

#[test]
fn rec4_a_key_longer_than_the_provider_takes_is_refused_in_its_shape_and_recorded() {
    // Stripe takes keys of up to 255 characters, Adyen 64: a fake that took longer ones would
    // hide a client whose keys the real provider refuses.
    let da = scenario(r#"idempotency = { preset = "stripe" }"#, r#""respond""#);
    assert_eq!(post(&da, &"k".repeat(255)).status, 201);
    let r = post(&da, &"k".repeat(256));
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(r.json()["error"]["type"], "invalid_request_error");
    let e = da.ledger().last().unwrap().clone();
    assert_eq!(e["disposition"], "unmatched");
    assert_eq!(e["applied"], false);
    assert!(
        e["detail"]["reason"]
            .as_str()
            .unwrap()
            .contains("at most 255"),
        "{e}"
    );
    let adyen = scenario(r#"idempotency = { preset = "adyen" }"#, r#""respond""#);
    assert_eq!(post(&adyen, &"k".repeat(64)).status, 201);
    assert_eq!(post(&adyen, &"k".repeat(65)).status, 400);
    // A scenario sets its own limit, or none (0).
    let own = scenario(r#"idempotency = { max_key_length = 3 }"#, r#""respond""#);
    assert_eq!(post(&own, "abcd").status, 400);
    let none = scenario(
        r#"idempotency = { preset = "stripe", max_key_length = 0 }"#,
        r#""respond""#,
    );
    assert_eq!(post(&none, &"k".repeat(300)).status, 201);
}
