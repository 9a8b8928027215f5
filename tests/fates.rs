//! One test per fate: what the client sees, and what the ledger says took effect (ACC-T, REC-4).

mod common;

use common::*;
use serde_json::Value;
use std::io::ErrorKind;

fn with_fates(fates: &str) -> Da {
    Da::start(&payments("", &format!("fates = {fates}")))
}

fn only_entry(da: &Da) -> Value {
    let l = da.ledger();
    assert_eq!(l.len(), 1, "{l:?}");
    l[0].clone()
}

#[test]
fn respond_applies_and_answers() {
    let da = with_fates(r#"["respond"]"#);
    let r = da
        .post_json("/payments/v1/transfers", &[], &transfer())
        .unwrap();
    assert_eq!(r.status, 201);
    assert_eq!(r.json()["id"], "act_1");
    let e = only_entry(&da);
    assert_eq!(e["applied"], true);
    assert_eq!(e["disposition"], "executed");
    assert_eq!(e["fate"], "respond");
    assert_eq!(e["response"]["delivery"], "sent");
    assert_eq!(e["response"]["status"], 201);
    assert_eq!(
        e["intent"],
        serde_json::json!({"/to": "acct-9", "/amount": 100})
    );
}

#[test]
fn acc_t_delay_applies_at_once_and_answers_when_the_clock_reaches_it() {
    let da = with_fates(r#"["delay:5s"]"#);
    let conn = send(
        &da.url,
        "POST",
        "/payments/v1/transfers",
        &[("content-type", "application/json")],
        transfer().to_string().as_bytes(),
    );
    let e = &da.wait_for("service=payments", 1)[0];
    assert_eq!(e["applied"], true, "the effect precedes the response");
    assert_eq!(e["response"]["delivery"], "pending");
    da.advance("5s");
    let r = read_response(conn).unwrap();
    assert_eq!(r.status, 201);
    let e = only_entry(&da);
    assert_eq!(e["response"]["delivery"], "sent");
    assert_eq!(e["fate"], "delay:5s");
}

#[test]
fn acc_t_drop_after_apply_closes_without_a_response_but_the_effect_stands() {
    let da = with_fates(r#"["drop-after-apply"]"#);
    let err = da
        .post_json("/payments/v1/transfers", &[], &transfer())
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::UnexpectedEof);
    let e = only_entry(&da);
    assert_eq!(e["applied"], true);
    assert_eq!(e["response"]["delivery"], "dropped");
    assert_eq!(e["response"]["status"], Value::Null);
}

#[test]
fn hang_after_apply_holds_the_connection_until_released() {
    let da = with_fates(r#"["hang-after-apply"]"#);
    let conn = send(
        &da.url,
        "POST",
        "/payments/v1/transfers",
        &[("content-type", "application/json")],
        transfer().to_string().as_bytes(),
    );
    let e = &da.wait_for("service=payments", 1)[0];
    assert_eq!(e["applied"], true);
    assert_eq!(e["response"]["delivery"], "hung");
    // A reset releases hung connections; the client must then see a close with no bytes at all,
    // which proves nothing was sent while it hung.
    assert_eq!(da.call("POST", "/_admin/reset", &[], "").status, 200);
    assert_eq!(
        read_response(conn).unwrap_err().kind(),
        ErrorKind::UnexpectedEof
    );
}

#[test]
fn reset_after_apply_resets_the_connection() {
    let da = with_fates(r#"["reset-after-apply"]"#);
    let err = da
        .post_json("/payments/v1/transfers", &[], &transfer())
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::ConnectionReset, "{err}");
    let e = only_entry(&da);
    assert_eq!(e["applied"], true);
    assert_eq!(e["response"]["delivery"], "reset");
}

#[test]
fn drop_before_apply_loses_the_request_and_applies_nothing() {
    let da = with_fates(r#"["drop-before-apply"]"#);
    let err = da
        .post_json("/payments/v1/transfers", &[], &transfer())
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::UnexpectedEof);
    let e = only_entry(&da);
    assert_eq!(e["applied"], false);
    assert_eq!(e["response"]["delivery"], "dropped");
    assert_eq!(
        da.get("/payments/v1/transfers/act_1").status,
        404,
        "nothing exists to look up"
    );
}

#[test]
fn error_before_apply_refuses_with_retry_after_and_applies_nothing() {
    let da = with_fates(r#"["error-before-apply:429"]"#);
    let r = da
        .post_json("/payments/v1/transfers", &[], &transfer())
        .unwrap();
    assert_eq!(r.status, 429);
    assert_eq!(r.header("retry-after"), Some("1"));
    assert_eq!(r.json()["status"], 429);
    let e = only_entry(&da);
    assert_eq!(e["applied"], false);
    assert_eq!(e["response"]["status"], 429);
}

#[test]
fn rec4_error_after_apply_is_a_500_that_lies() {
    let da = with_fates(r#"["error-after-apply:500"]"#);
    let r = da
        .post_json("/payments/v1/transfers", &[], &transfer())
        .unwrap();
    assert_eq!(r.status, 500);
    let e = only_entry(&da);
    assert_eq!(e["applied"], true, "the effect happened despite the 500");
    assert_eq!(e["response"]["status"], 500);
    assert_eq!(
        da.get("/payments/v1/transfers/act_1").json()["state"],
        "applied"
    );
}

#[test]
fn apply_later_answers_202_and_stays_pending_until_its_time() {
    let da = with_fates(r#"["apply-later:2s"]"#);
    let r = da
        .post_json("/payments/v1/transfers", &[], &transfer())
        .unwrap();
    assert_eq!(r.status, 202);
    assert_eq!(r.json()["status"], "pending");
    assert_eq!(
        da.get("/payments/v1/transfers/act_1").json()["state"],
        "pending"
    );
    assert_eq!(da.ledger()[0]["applied"], false);
    da.advance("2s");
    assert_eq!(
        da.get("/payments/v1/transfers/act_1").json()["state"],
        "applied"
    );
    let e = &da.ledger()[0];
    assert_eq!(e["applied"], true);
    assert!(e["applied_at"].as_str().unwrap() > e["received_at"].as_str().unwrap());
}

#[test]
fn the_fate_sequence_advances_per_attempt_and_its_last_fate_repeats() {
    let da = with_fates(r#"["drop-after-apply", "error-before-apply:503", "respond"]"#);
    let statuses: Vec<Option<u16>> = (0..4)
        .map(|_| {
            da.post_json("/payments/v1/transfers", &[], &transfer())
                .ok()
                .map(|r| r.status)
        })
        .collect();
    assert_eq!(statuses, vec![None, Some(503), Some(201), Some(201)]);
}

#[test]
fn fates_can_be_counted_per_intent() {
    let da = Da::start(&payments(
        "",
        "fates = [\"drop-after-apply\", \"respond\"]\nper = \"intent\"",
    ));
    let a = serde_json::json!({"to": "a", "amount": 1});
    let b = serde_json::json!({"to": "b", "amount": 1});
    assert!(
        da.post_json("/payments/v1/transfers", &[], &a).is_err(),
        "1st attempt of intent a"
    );
    assert!(
        da.post_json("/payments/v1/transfers", &[], &b).is_err(),
        "1st attempt of intent b"
    );
    assert_eq!(
        da.post_json("/payments/v1/transfers", &[], &a)
            .unwrap()
            .status,
        201
    );
}

fn seeded_run(seed: &str) -> Vec<String> {
    let da = Da::start_args(&[
        common::temp_file(
            "s.toml",
            &payments(
                "",
                "fates = { random = { respond = 1, \"error-before-apply:503\" = 1 } }",
            ),
        )
        .to_str()
        .unwrap(),
        "--seed",
        seed,
    ]);
    for _ in 0..40 {
        let _ = da.post_json("/payments/v1/transfers", &[], &transfer());
    }
    da.ledger()
        .iter()
        .map(|e| e["fate"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn the_same_seed_gives_the_same_fates_and_another_seed_does_not() {
    let a = seeded_run("42");
    assert_eq!(a, seeded_run("42"));
    assert_ne!(a, seeded_run("43"));
    assert!(a.iter().any(|f| f == "respond") && a.iter().any(|f| f != "respond"));
}

/// A client that gives up on a delayed response (an `AbortSignal.timeout`, a read timeout) is
/// recorded as `abandoned`, not `sent`, and the verdict does not change with when it is
/// verified (REC-4, ACC-3).
#[test]
fn rec4_a_client_that_closes_before_a_delayed_response_is_recorded_as_abandoned() {
    let da = Da::start(&payments(
        r#"idempotency = { preset = "stripe" }"#,
        r#"fates = ["delay:3s", "respond"]"#,
    ));
    let body = transfer().to_string();
    let req = format!(
        "POST /payments/v1/transfers HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nIdempotency-Key: k-1\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let s = send_raw(&da.url, req.as_bytes());
    da.wait_for("service=payments", 1);
    drop(s); // the client gives up
    let abandoned = || da.ledger()[0]["response"]["delivery"] == "abandoned";
    let mut polls = 0;
    while !abandoned() {
        polls += 1;
        assert!(
            polls < 2000,
            "never marked abandoned: {:?}",
            da.ledger()[0]["response"]
        );
        std::thread::yield_now();
    }
    // A new-key retry of the same transfer: a blind retry of an outcome the client never saw.
    da.post_json(
        "/payments/v1/transfers",
        &[("Idempotency-Key", "k-2")],
        &transfer(),
    )
    .unwrap();
    let rules = |v: serde_json::Value| -> Vec<String> {
        v["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["rule"].as_str().unwrap().to_string())
            .collect()
    };
    let before = rules(da.get("/_admin/verify").json());
    assert!(before.iter().any(|r| r == "REC-4"), "{before:?}");
    da.advance("5s");
    assert_eq!(
        da.ledger()[0]["response"]["delivery"],
        "abandoned",
        "still, after its time passed"
    );
    assert_eq!(
        rules(da.get("/_admin/verify").json()),
        before,
        "the same verdict whenever verified"
    );
}

/// A client that gives up on a hung response is recorded as having gone away, with when
/// (REC-4: its outcome is unknown to it either way).
#[test]
fn rec4_a_client_that_closes_a_hung_connection_is_recorded_as_abandoned() {
    let da = with_fates(r#"["hang-after-apply"]"#);
    let conn = send(
        &da.url,
        "POST",
        "/payments/v1/transfers",
        &[("content-type", "application/json")],
        transfer().to_string().as_bytes(),
    );
    da.wait_for("service=payments", 1);
    drop(conn);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while da.ledger()[0]["response"]["delivery"] != "abandoned" {
        assert!(
            std::time::Instant::now() < deadline,
            "{:?}",
            da.ledger()[0]["response"]
        );
        std::thread::yield_now();
    }
    assert_eq!(da.ledger()[0]["applied"], true);
}
