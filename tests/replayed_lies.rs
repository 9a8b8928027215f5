//! A replay of a lying 500 teaches the client nothing. Stripe caches 500s, so stripe-python's
//! own same-key retries after `error-after-apply:500` get the same 500 back: the outcome is still
//! unknown to the client, and a new-key retry after them is as blind as one right after the lie.

mod common;

use common::*;
use serde_json::json;

fn lying_500_stripe() -> String {
    payments(
        r#"idempotency = { preset = "stripe" }"#,
        r#"fates = ["error-after-apply:500", "respond"]"#,
    )
}

fn send(da: &Da, key: &str) -> u16 {
    da.post_json(
        "/payments/v1/transfers",
        &[("Idempotency-Key", key)],
        &transfer(),
    )
    .unwrap()
    .status
}

#[test]
fn rec4_a_new_key_retry_after_replays_of_a_lying_500_is_still_blind() {
    let da = Da::start(&lying_500_stripe());
    assert_eq!(send(&da, "k-1"), 500);
    assert_eq!(send(&da, "k-1"), 500, "the 500 is replayed");
    assert_eq!(send(&da, "k-2"), 201);
    let ledger = da.ledger();
    assert_eq!(ledger[1]["disposition"], "replayed");
    let verdict = da.get("/_admin/verify").json();
    let rules: Vec<&str> = verdict["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap())
        .collect();
    assert!(rules.contains(&"REC-4"), "{verdict}");
    assert!(rules.contains(&"ACC-1"), "{verdict}");
}

#[test]
fn acc3_an_outcome_only_replayed_as_a_lying_500_is_never_learned() {
    let da = Da::start(&lying_500_stripe());
    assert_eq!(send(&da, "k-1"), 500);
    assert_eq!(send(&da, "k-1"), 500);
    // Without claims, the verifier cannot say whether it was reported as unknown.
    let verdict = da.get("/_admin/verify").json();
    assert_eq!(verdict["state"], "incomplete", "{verdict}");
    // Claimed succeeded: right by luck, but never learned.
    let r = da.call(
        "POST",
        "/_admin/claims",
        &[("content-type", "application/json")],
        &json!({"actions": [{"key": "k-1", "claim": "succeeded"}]}).to_string(),
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let verdict = da.get("/_admin/verify").json();
    assert_eq!(verdict["findings"][0]["rule"], "ACC-3", "{verdict}");
    assert_eq!(verdict["findings"][0]["entries"], json!([1]), "{verdict}");
}

#[test]
fn rec4_a_replay_of_a_dropped_response_still_confirms_the_outcome() {
    let da = Da::start(&payments(
        r#"idempotency = { preset = "stripe" }"#,
        r#"fates = ["drop-after-apply", "respond"]"#,
    ));
    let _ = da.post_json(
        "/payments/v1/transfers",
        &[("Idempotency-Key", "k-1")],
        &transfer(),
    );
    assert_eq!(send(&da, "k-1"), 201, "the stored answer is replayed");
    let verdict = da.get("/_admin/verify").json();
    assert_eq!(verdict["state"], "clean", "{verdict}");
}
