//! One test per idempotency rule: replay, 409 in flight, mismatch, missing key, expiry, `ignore`,
//! the provider presets, fingerprints over chosen fields, and 500 concurrent retries (REC-4, ACC-1).

mod common;

use common::*;
use serde_json::{json, Value};
use std::sync::{Arc, Barrier};

const CREATE: &str = "/payments/v1/transfers";

fn with(service_extra: &str, route_extra: &str) -> Da {
    Da::start(&payments(service_extra, route_extra))
}

fn post_key(da: &Da, header: &str, key: &str, body: &Value) -> Result<Resp, std::io::Error> {
    da.post_json(CREATE, &[(header, key)], body)
}

fn applied(ledger: &[Value]) -> usize {
    ledger.iter().filter(|e| e["applied"] == true).count()
}

#[test]
fn acc1_a_repeat_within_retention_is_replayed_and_applied_once() {
    let da = with(r#"idempotency = { preset = "stripe" }"#, "");
    let first = post_key(&da, "Idempotency-Key", "k-1", &transfer()).unwrap();
    assert_eq!(first.status, 201);
    assert_eq!(
        first.header("idempotent-replayed"),
        None,
        "a first execution is not a replay"
    );
    let again = post_key(&da, "Idempotency-Key", "k-1", &transfer()).unwrap();
    assert_eq!(again.status, 201);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(
        again.json(),
        first.json(),
        "the stored response, byte for byte"
    );
    assert_eq!(again.json()["id"], "act_1");

    let l = da.ledger();
    assert_eq!(l.len(), 2);
    assert_eq!(l[0]["disposition"], "executed");
    assert_eq!(l[0]["idempotency_key"], "k-1");
    assert_eq!(l[1]["disposition"], "replayed");
    assert_eq!(l[1]["replay_of"], 1);
    assert_eq!(l[1]["applied"], false);
    assert_eq!(l[1]["fate"], Value::Null, "a replay draws no fate");
    assert_eq!(l[1]["fingerprint"], l[0]["fingerprint"]);
    assert_eq!(applied(&l), 1);
}

#[test]
fn rec4_the_retry_of_a_dropped_response_gets_the_stored_response_and_applies_nothing() {
    let da = Da::start(LOST_RESPONSE);
    assert!(
        post_key(&da, "Idempotency-Key", "k-1", &transfer()).is_err(),
        "1st attempt: response lost"
    );
    let r = post_key(&da, "Idempotency-Key", "k-1", &transfer()).unwrap();
    assert_eq!(r.status, 201);
    assert_eq!(r.header("idempotent-replayed"), Some("true"));
    assert_eq!(
        r.json()["id"],
        "act_1",
        "the response the client never received"
    );
    let l = da.ledger();
    assert_eq!(l[0]["response"]["delivery"], "dropped");
    assert_eq!(l[1]["disposition"], "replayed");
    assert_eq!(l[1]["replay_of"], 1);
    assert_eq!(l[1]["response"]["delivery"], "sent");
    assert_eq!(applied(&l), 1);
}

#[test]
fn a_repeat_while_the_first_is_in_flight_gets_409_and_the_first_still_completes() {
    let da = with(
        r#"idempotency = { preset = "stripe" }"#,
        r#"fates = ["delay:5s"]"#,
    );
    let body = transfer().to_string();
    let h = [
        ("content-type", "application/json"),
        ("Idempotency-Key", "k-1"),
    ];
    let first = send(&da.url, "POST", CREATE, &h, body.as_bytes());
    da.wait_for("service=payments", 1);

    let second = post_key(&da, "Idempotency-Key", "k-1", &transfer()).unwrap();
    assert_eq!(second.status, 409);
    assert_eq!(second.json()["status"], 409);
    let l = da.ledger();
    assert_eq!(l[1]["disposition"], "conflict");
    assert_eq!(l[1]["applied"], false);
    assert_eq!(l[1]["detail"]["key_owner"], 1);

    da.advance("5s");
    let r = read_response(first).unwrap();
    assert_eq!(r.status, 201);
    // Once the first has answered, the same key is a replay.
    let third = post_key(&da, "Idempotency-Key", "k-1", &transfer()).unwrap();
    assert_eq!(third.header("idempotent-replayed"), Some("true"));
    let l = da.ledger();
    assert_eq!(l[2]["disposition"], "replayed");
    assert_eq!(l[2]["replay_of"], 1);
    assert_eq!(applied(&l), 1);
}

#[test]
fn rec4_stripe_rejects_a_key_reused_for_another_payload_with_400_idempotency_error() {
    let da = with(r#"idempotency = { preset = "stripe" }"#, "");
    assert_eq!(
        post_key(&da, "Idempotency-Key", "k-1", &transfer())
            .unwrap()
            .status,
        201
    );
    let other = json!({"to": "acct-9", "amount": 999});
    let r = post_key(&da, "Idempotency-Key", "k-1", &other).unwrap();
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["type"], "idempotency_error");
    let l = da.ledger();
    assert_eq!(l[1]["disposition"], "mismatch");
    assert_eq!(l[1]["applied"], false);
    assert_eq!(l[1]["detail"]["key_owner"], 1);
    assert_ne!(l[1]["fingerprint"], l[0]["fingerprint"]);
    assert_eq!(applied(&l), 1);
}

#[test]
fn rec4_ietf_rejects_a_key_reused_for_another_payload_with_422() {
    let da = with(r#"idempotency = { preset = "ietf" }"#, "");
    assert_eq!(
        post_key(&da, "Idempotency-Key", "k-1", &transfer())
            .unwrap()
            .status,
        201
    );
    let r = post_key(
        &da,
        "Idempotency-Key",
        "k-1",
        &json!({"to": "elsewhere", "amount": 100}),
    )
    .unwrap();
    assert_eq!(r.status, 422);
    assert!(
        r.json()["error"]
            .as_str()
            .unwrap()
            .contains("different request payload"),
        "{}",
        r.text()
    );
    assert_eq!(da.ledger()[1]["disposition"], "mismatch");
}

#[test]
fn key_order_and_whitespace_do_not_make_a_different_payload() {
    let da = with(r#"idempotency = { preset = "ietf" }"#, "");
    let h = [
        ("content-type", "application/json"),
        ("Idempotency-Key", "k-1"),
    ];
    assert_eq!(
        da.call("POST", CREATE, &h, r#"{"to":"acct-9","amount":100}"#)
            .status,
        201
    );
    let r = da.call(
        "POST",
        CREATE,
        &h,
        "{ \"amount\": 100,\n  \"to\": \"acct-9\" }",
    );
    assert_eq!(r.status, 201);
    assert_eq!(da.ledger()[1]["disposition"], "replayed");
}

#[test]
fn a_required_key_that_is_missing_gets_400_and_nothing_runs() {
    let da = with(r#"idempotency = { preset = "ietf", required = true }"#, "");
    let r = da.post_json(CREATE, &[], &transfer()).unwrap();
    assert_eq!(r.status, 400);
    assert!(
        r.json()["error"]
            .as_str()
            .unwrap()
            .contains("Idempotency-Key"),
        "{}",
        r.text()
    );
    let l = da.ledger();
    assert_eq!(l[0]["disposition"], "missing-key");
    assert_eq!(l[0]["applied"], false);
    assert_eq!(l[0]["fate"], Value::Null);
    assert_eq!(l[0]["idempotency_key"], Value::Null);
    // With a key it goes through.
    assert_eq!(
        post_key(&da, "Idempotency-Key", "k-1", &transfer())
            .unwrap()
            .status,
        201
    );
}

#[test]
fn rec4_after_retention_the_key_is_forgotten_and_the_request_executes_again() {
    let da = with(
        r#"idempotency = { preset = "stripe", retention = "24h" }"#,
        "",
    );
    assert_eq!(
        post_key(&da, "Idempotency-Key", "k-1", &transfer())
            .unwrap()
            .status,
        201
    );
    da.advance("23h");
    let within = post_key(&da, "Idempotency-Key", "k-1", &transfer()).unwrap();
    assert_eq!(
        within.header("idempotent-replayed"),
        Some("true"),
        "23h in: still remembered"
    );
    da.advance("2h");
    let after = post_key(&da, "Idempotency-Key", "k-1", &transfer()).unwrap();
    assert_eq!(after.status, 201);
    assert_eq!(after.header("idempotent-replayed"), None);
    assert_eq!(after.json()["id"], "act_3", "a new action");

    let l = da.ledger();
    assert_eq!(l[0]["executed_after_expiry"], false);
    assert_eq!(l[1]["disposition"], "replayed");
    assert_eq!(l[2]["disposition"], "executed");
    assert_eq!(
        l[2]["executed_after_expiry"], true,
        "the ledger marks the re-execution"
    );
    assert_eq!(applied(&l), 2, "the same intent took effect twice");
    // The re-execution owns the key now.
    post_key(&da, "Idempotency-Key", "k-1", &transfer()).unwrap();
    assert_eq!(da.ledger()[3]["replay_of"], 3);
}

#[test]
fn mode_ignore_executes_every_request_whatever_its_key() {
    let da = with(
        r#"idempotency = { preset = "stripe", mode = "ignore" }"#,
        "",
    );
    for _ in 0..3 {
        let r = post_key(&da, "Idempotency-Key", "k-1", &transfer()).unwrap();
        assert_eq!(r.status, 201);
        assert_eq!(r.header("idempotent-replayed"), None);
    }
    let l = da.ledger();
    assert!(
        l.iter()
            .all(|e| e["disposition"] == "executed" && e["idempotency_key"] == "k-1"),
        "{l:?}"
    );
    assert_eq!(applied(&l), 3);
}

#[test]
fn without_an_idempotency_table_keys_are_recorded_but_not_honoured() {
    let da = with("", "");
    post_key(&da, "Idempotency-Key", "k-1", &transfer()).unwrap();
    post_key(&da, "Idempotency-Key", "k-1", &transfer()).unwrap();
    let l = da.ledger();
    assert_eq!(applied(&l), 2);
    assert_eq!(l[1]["idempotency_key"], "k-1");
}

#[test]
fn rec4_checkout_caches_only_2xx_so_a_retry_after_a_lying_500_applies_again() {
    let da = with(
        r#"idempotency = { preset = "checkout" }"#,
        r#"fates = ["error-after-apply:500", "respond"]"#,
    );
    let h = "Cko-Idempotency-Key";
    assert_eq!(post_key(&da, h, "k-1", &transfer()).unwrap().status, 500);
    let retry = post_key(&da, h, "k-1", &transfer()).unwrap();
    assert_eq!(retry.status, 201);
    assert_eq!(retry.json()["id"], "act_2", "executed again, not replayed");
    let third = post_key(&da, h, "k-1", &transfer()).unwrap();
    assert_eq!(third.json()["id"], "act_2", "the 2xx was cached");

    let l = da.ledger();
    assert_eq!(l[0]["applied"], true, "the 500 lied: it applied");
    assert_eq!(l[1]["disposition"], "executed");
    assert_eq!(l[2]["disposition"], "replayed");
    assert_eq!(l[2]["replay_of"], 2);
    assert_eq!(
        applied(&l),
        2,
        "a retry under checkout's contract is a second effect"
    );
}

#[test]
fn checkout_reads_its_own_header_not_idempotency_key() {
    let da = with(r#"idempotency = { preset = "checkout" }"#, "");
    post_key(&da, "Idempotency-Key", "k-1", &transfer()).unwrap();
    post_key(&da, "Idempotency-Key", "k-1", &transfer()).unwrap();
    let l = da.ledger();
    assert_eq!(applied(&l), 2);
    assert_eq!(l[0]["idempotency_key"], Value::Null);
}

#[test]
fn paypal_uses_paypal_request_id_and_replays_the_latest_state() {
    let da = with(
        r#"idempotency = { preset = "paypal" }"#,
        r#"fates = ["apply-later:2s"]"#,
    );
    let h = "PayPal-Request-Id";
    let first = post_key(&da, h, "req-1", &transfer()).unwrap();
    assert_eq!(first.status, 202);
    let early = post_key(&da, h, "req-1", &transfer()).unwrap();
    assert_eq!(early.json()["state"], "pending");
    assert_eq!(early.json()["id"], "act_1");
    da.advance("2s");
    let late = post_key(&da, h, "req-1", &transfer()).unwrap();
    assert_eq!(late.status, 200);
    assert_eq!(
        late.json()["state"],
        "applied",
        "not a byte-for-byte replay: the current state"
    );
    assert!(late.json()["applied_at"].is_string());

    let l = da.ledger();
    assert_eq!(l[0]["idempotency_key"], "req-1");
    assert_eq!(l[1]["replay_of"], 1);
    assert_eq!(l[2]["replay_of"], 1);
    assert_eq!(applied(&l), 1);
}

#[test]
fn paypal_ignores_an_idempotency_key_header() {
    let da = with(r#"idempotency = { preset = "paypal" }"#, "");
    post_key(&da, "Idempotency-Key", "k-1", &transfer()).unwrap();
    post_key(&da, "Idempotency-Key", "k-1", &transfer()).unwrap();
    assert_eq!(
        applied(&da.ledger()),
        2,
        "omitting PayPal-Request-Id duplicates the request"
    );
}

#[test]
fn adyen_echoes_the_key_header_on_first_responses_and_replays() {
    let da = with(r#"idempotency = { preset = "adyen" }"#, "");
    let first = post_key(&da, "Idempotency-Key", "k-1", &transfer()).unwrap();
    assert_eq!(first.header("idempotency-key"), Some("k-1"));
    let again = post_key(&da, "Idempotency-Key", "k-1", &transfer()).unwrap();
    assert_eq!(again.header("idempotency-key"), Some("k-1"));
    let echoes = |r: &common::Resp| {
        r.headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case("idempotency-key"))
            .count()
    };
    assert_eq!(
        (echoes(&first), echoes(&again)),
        (1, 1),
        "the key is echoed once, on the replay too"
    );
    assert_eq!(
        again.header("idempotent-replayed"),
        None,
        "Adyen marks replays only by the echo"
    );
    assert_eq!(again.json(), first.json());
    assert_eq!(da.ledger()[1]["disposition"], "replayed");
    // Adyen keeps keys for 31 days.
    da.advance("30d");
    post_key(&da, "Idempotency-Key", "k-1", &transfer()).unwrap();
    assert_eq!(da.ledger()[2]["disposition"], "replayed");
}

#[test]
fn a_pointer_fingerprint_compares_only_the_listed_fields() {
    let da = with(
        r#"idempotency = { preset = "ietf", fingerprint = ["/to"] }"#,
        "",
    );
    post_key(
        &da,
        "Idempotency-Key",
        "k-1",
        &json!({"to": "a", "amount": 1, "memo": "x"}),
    )
    .unwrap();
    let same_to = post_key(
        &da,
        "Idempotency-Key",
        "k-1",
        &json!({"to": "a", "amount": 2}),
    )
    .unwrap();
    assert_eq!(same_to.status, 201);
    let other_to = post_key(
        &da,
        "Idempotency-Key",
        "k-1",
        &json!({"to": "b", "amount": 1}),
    )
    .unwrap();
    assert_eq!(other_to.status, 422);
    let d: Vec<Value> = da
        .ledger()
        .iter()
        .map(|e| e["disposition"].clone())
        .collect();
    assert_eq!(
        d,
        vec![json!("executed"), json!("replayed"), json!("mismatch")]
    );
}

#[test]
fn fingerprint_none_replays_any_payload_under_a_known_key() {
    let da = with(
        r#"idempotency = { preset = "ietf", fingerprint = "none" }"#,
        "",
    );
    post_key(&da, "Idempotency-Key", "k-1", &transfer()).unwrap();
    let r = post_key(&da, "Idempotency-Key", "k-1", &json!({"to": "zzz"})).unwrap();
    assert_eq!(r.status, 201);
    let l = da.ledger();
    assert_eq!(l[1]["disposition"], "replayed");
    assert_eq!(l[1]["fingerprint"], Value::Null);
}

#[test]
fn keys_are_scoped_per_key_value() {
    let da = with(r#"idempotency = { preset = "stripe" }"#, "");
    post_key(&da, "Idempotency-Key", "k-1", &transfer()).unwrap();
    post_key(&da, "Idempotency-Key", "k-2", &transfer()).unwrap();
    assert_eq!(applied(&da.ledger()), 2, "another key is another attempt");
}

/// Fire `n` requests at once (all released by one barrier), each on its own connection.
fn concurrently(
    da: &Da,
    n: usize,
    headers: &[(&str, &str)],
    body: &str,
) -> Vec<std::thread::JoinHandle<Result<Resp, std::io::Error>>> {
    let barrier = Arc::new(Barrier::new(n));
    (0..n)
        .map(|_| {
            let (url, barrier, body) = (da.url.clone(), barrier.clone(), body.to_string());
            let headers: Vec<(String, String)> = headers
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            std::thread::spawn(move || {
                let h: Vec<(&str, &str)> = headers
                    .iter()
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect();
                barrier.wait();
                request(&url, "POST", CREATE, &h, body.as_bytes())
            })
        })
        .collect()
}

#[test]
fn acc1_500_concurrent_requests_with_one_key_apply_exactly_once() {
    let da = with(r#"idempotency = { preset = "stripe" }"#, "");
    let h = [
        ("content-type", "application/json"),
        ("Idempotency-Key", "k-burst"),
    ];
    let threads = concurrently(&da, 500, &h, &transfer().to_string());
    let resps: Vec<Resp> = threads
        .into_iter()
        .map(|t| t.join().unwrap().expect("every request answered"))
        .collect();

    let l = da.ledger();
    assert_eq!(l.len(), 500);
    let executed: Vec<&Value> = l.iter().filter(|e| e["applied"] == true).collect();
    assert_eq!(executed.len(), 1, "exactly one effect");
    assert_eq!(executed[0]["disposition"], "executed");
    let owner = executed[0]["seq"].clone();
    for e in l.iter().filter(|e| e["applied"] == false) {
        match e["disposition"].as_str().unwrap() {
            "replayed" => assert_eq!(e["replay_of"], owner),
            "conflict" => assert_eq!(e["detail"]["key_owner"], owner),
            other => panic!("unexpected disposition {other}: {e}"),
        }
    }
    // Every client that got a 201 got the same action.
    let id = format!("act_{owner}");
    for r in resps.iter().filter(|r| r.status == 201) {
        assert_eq!(r.json()["id"], id.as_str());
    }
    assert!(resps.iter().all(|r| r.status == 201 || r.status == 409));
}

#[test]
fn acc1_concurrent_requests_while_the_first_is_delayed_all_conflict() {
    let da = with(
        r#"idempotency = { preset = "stripe" }"#,
        r#"fates = ["delay:1s"]"#,
    );
    let h = [
        ("content-type", "application/json"),
        ("Idempotency-Key", "k-burst"),
    ];
    let threads = concurrently(&da, 100, &h, &transfer().to_string());
    // All 100 are admitted at scenario time zero: one executes (its response waits for the
    // clock), the other 99 conflict with it and are answered at once.
    let l = da.wait_for("service=payments", 100);
    da.advance("1s");
    let resps: Vec<Resp> = threads
        .into_iter()
        .map(|t| t.join().unwrap().unwrap())
        .collect();
    assert_eq!(resps.iter().filter(|r| r.status == 201).count(), 1);
    assert_eq!(resps.iter().filter(|r| r.status == 409).count(), 99);
    assert_eq!(
        l.iter().filter(|e| e["disposition"] == "executed").count(),
        1
    );
    assert_eq!(
        l.iter().filter(|e| e["disposition"] == "conflict").count(),
        99
    );
    assert_eq!(applied(&da.ledger()), 1);
}

#[test]
fn a_request_refused_before_it_began_leaves_the_key_free() {
    let da = with(
        r#"idempotency = { preset = "stripe" }"#,
        r#"fates = ["error-before-apply:503", "respond"]"#,
    );
    assert_eq!(
        post_key(&da, "Idempotency-Key", "k-1", &transfer())
            .unwrap()
            .status,
        503
    );
    let retry = post_key(&da, "Idempotency-Key", "k-1", &transfer()).unwrap();
    assert_eq!(retry.status, 201);
    assert_eq!(
        retry.header("idempotent-replayed"),
        None,
        "nothing was stored for a request that never ran"
    );
    let l = da.ledger();
    assert_eq!(l[1]["disposition"], "executed");
    assert_eq!(applied(&l), 1);
}

#[test]
fn stripe_replays_a_lying_500_because_it_caches_every_response() {
    let da = with(
        r#"idempotency = { preset = "stripe" }"#,
        r#"fates = ["error-after-apply:500", "respond"]"#,
    );
    assert_eq!(
        post_key(&da, "Idempotency-Key", "k-1", &transfer())
            .unwrap()
            .status,
        500
    );
    let retry = post_key(&da, "Idempotency-Key", "k-1", &transfer()).unwrap();
    assert_eq!(retry.status, 500, "the stored 500, replayed");
    assert_eq!(retry.header("idempotent-replayed"), Some("true"));
    assert_eq!(applied(&da.ledger()), 1);
}

#[test]
fn a_route_policy_overrides_the_service_policy() {
    let da = with(
        r#"idempotency = { preset = "stripe" }"#,
        r#"idempotency = { mode = "ignore" }"#,
    );
    post_key(&da, "Idempotency-Key", "k-1", &transfer()).unwrap();
    post_key(&da, "Idempotency-Key", "k-1", &transfer()).unwrap();
    assert_eq!(applied(&da.ledger()), 2);
}

/// A replay of the very bytes a key was executed with skips parsing its body (the fast lane);
/// one with the same JSON written otherwise does not. Both must answer and record alike.
#[test]
fn acc1_a_replay_of_the_same_bytes_is_answered_and_recorded_as_any_other_replay() {
    for (preset, long) in [("stripe", false), ("adyen", false), ("ietf", true)] {
        let scenario = payments(&format!("idempotency = {{ preset = \"{preset}\" }}"), "").replace(
            "clock = \"manual\"",
            "clock = \"manual\"\nledger_body_bytes = 40",
        );
        let da = Da::start(&scenario);
        let same = if long {
            r#"{"to":"acct-9","amount":100,"memo":"longer than the ledger keeps"}"#
        } else {
            r#"{"to":"acct-9","amount":100}"#
        };
        let other = format!(" {}\n", same.replace(',', ", "));
        let call = |body: &str, work: &str, rev: &str| {
            da.call(
                "POST",
                CREATE,
                &[
                    ("content-type", "application/json"),
                    ("Idempotency-Key", "k-1"),
                    ("X-Work-Id", work),
                    ("X-Revision", rev),
                ],
                body,
            )
        };
        let first = call(same, "w-1", "1");
        let fast = call(same, "w-2", "2");
        let slow = call(&other, "w-2", "2");
        assert_eq!(first.status, 201);
        for r in [&fast, &slow] {
            assert_eq!((r.status, &r.body), (first.status, &first.body), "{preset}");
        }
        let names = |r: &Resp| {
            let mut h: Vec<String> = r.headers.iter().map(|(k, v)| format!("{k}: {v}")).collect();
            h.retain(|l| !l.starts_with("date:") && !l.starts_with("x-doubleagent-seq"));
            h
        };
        assert_eq!(names(&fast), names(&slow), "{preset}");

        let l = da.ledger();
        assert_eq!(l.len(), 3);
        // A body cut short is kept as the text it was sent as, so only there may they differ.
        let strip = |e: &Value| {
            let mut e = e.clone();
            for k in ["seq", "received_at", "body"] {
                e.as_object_mut().unwrap().remove(k);
            }
            e
        };
        if !long {
            assert_eq!(l[1]["body"], l[2]["body"]);
        }
        assert_eq!(strip(&l[1]), strip(&l[2]), "{preset}");
        assert_eq!(l[1]["disposition"], "replayed");
        assert_eq!(l[1]["work_id"], "w-2");
        assert_eq!(l[1]["revision"], 2);
        assert_eq!(l[1]["intent"], l[0]["intent"]);
        assert_eq!(l[1]["body"], l[0]["body"]);
        assert_eq!(l[1]["body_truncated"], long, "{preset}");
    }
}

/// After a run of fresh keys a worker stops looking for a replay before reading the body (that
/// look-up would find nothing) and looks again now and then: however a replay is taken, it is
/// answered and recorded alike.
#[test]
fn acc1_replays_among_many_fresh_keys_are_answered_and_recorded_alike() {
    let da = with(r#"idempotency = { preset = "stripe" }"#, "");
    let post = |key: &str| post_key(&da, "Idempotency-Key", key, &transfer()).unwrap();
    let first = post("k-0");
    assert_eq!(first.status, 201);
    for i in 1..=40 {
        assert_eq!(post(&format!("k-{i}")).status, 201);
    }
    for i in 0..40 {
        let again = post("k-0");
        assert_eq!(
            (again.status, again.json()),
            (201, first.json()),
            "replay {i}"
        );
        assert_eq!(
            again.header("idempotent-replayed"),
            Some("true"),
            "replay {i}"
        );
        assert_eq!(post(&format!("k-fresh-{i}")).status, 201);
    }
    let l = da.ledger();
    assert_eq!(l.len(), 1 + 40 + 80);
    assert_eq!(applied(&l), 1 + 40 + 40);
    let strip = |e: &Value| {
        let mut e = e.clone();
        for k in ["seq", "received_at", "response"] {
            e.as_object_mut().unwrap().remove(k);
        }
        e
    };
    let replays: Vec<&Value> = l
        .iter()
        .filter(|e| e["idempotency_key"] == "k-0")
        .skip(1)
        .collect();
    assert_eq!(replays.len(), 40);
    for r in &replays {
        assert_eq!(r["disposition"], "replayed");
        assert_eq!(r["replay_of"], 1);
        assert_eq!(r["response"]["status"], 201);
        assert_eq!(strip(r), strip(replays[0]));
    }
    assert_eq!(replays[0]["fingerprint"], l[0]["fingerprint"]);
    assert_eq!(replays[0]["intent"], l[0]["intent"]);
    assert_eq!(replays[0]["body"], l[0]["body"]);
}

/// The fast lane is for the same bytes only: a key reused for another payload is still refused.
#[test]
fn rec4_a_reused_key_with_bytes_that_differ_in_one_place_is_still_a_mismatch() {
    let da = with(r#"idempotency = { preset = "ietf" }"#, "");
    let h = [
        ("content-type", "application/json"),
        ("Idempotency-Key", "k-1"),
    ];
    assert_eq!(
        da.call("POST", CREATE, &h, r#"{"to":"acct-9","amount":100}"#)
            .status,
        201
    );
    let r = da.call("POST", CREATE, &h, r#"{"to":"acct-9","amount":101}"#);
    assert_eq!(r.status, 422);
    assert_eq!(da.ledger()[1]["disposition"], "mismatch");
}

/// Flat bodies of short strings and integers are read without a JSON tree; a body with an
/// escape, a fraction or nesting is parsed. However a body is read, the same content must give
/// the same ledger body, intent and fingerprint (a retry that reformats its body is still a
/// replay: ACC-1, REC-4), and placeholders that name the body must still expand, typed.
#[test]
fn acc1_bodies_read_flat_or_parsed_are_recorded_and_fingerprinted_alike() {
    let da = Da::start(
        r#"
name = "t"
[services.payments]
idempotency = { preset = "stripe" }
[[services.payments.routes]]
name = "create-transfer"
method = "POST"
path = "/v1/transfers"
kind = "action"
intent = ["/to", "/amount"]
respond = { status = 201, json = { id = "{{action.id}}", to = "{{body./to}}", amount = "{{body./amount}}" } }
"#,
    );
    let post = |key: &str, body: &str| {
        da.call(
            "POST",
            CREATE,
            &[
                ("content-type", "application/json"),
                ("Idempotency-Key", key),
            ],
            body,
        )
    };
    let flat = r#" { "to" : "acct-9", "amount": 100 } "#;
    let escaped = r#"{"amount":100,"to":"acct\u002d9"}"#;

    let first = post("k-1", flat);
    assert_eq!(first.status, 201);
    assert_eq!(
        first.json(),
        json!({"id": "act_1", "to": "acct-9", "amount": 100})
    );
    let again = post("k-1", escaped);
    assert_eq!(
        again.header("idempotent-replayed"),
        Some("true"),
        "{}",
        again.text()
    );

    assert_eq!(post("k-2", escaped).status, 201);
    let again = post("k-2", flat);
    assert_eq!(
        again.header("idempotent-replayed"),
        Some("true"),
        "{}",
        again.text()
    );

    let fraction = post("k-3", r#"{"to":"acct-9","amount":100.5}"#);
    assert_eq!(fraction.json()["amount"], 100.5);

    let l = da.ledger();
    assert_eq!(l.len(), 5);
    let (read_flat, parsed) = (&l[0], &l[2]);
    assert_eq!(read_flat["body"], json!({"amount": 100, "to": "acct-9"}));
    assert_eq!(
        read_flat["intent"],
        json!({"/amount": 100, "/to": "acct-9"})
    );
    assert_eq!(parsed["disposition"], "executed");
    for field in ["body", "intent", "fingerprint"] {
        assert_eq!(read_flat[field], parsed[field], "{field}");
    }
    assert_eq!(l[4]["intent"], json!({"/amount": 100.5, "/to": "acct-9"}));
}

/// An executed action's response and ledger entry name the request it answers: its method,
/// path and path parameters in the response's placeholders, its service, route, method and path
/// in the entry, and a canary its path carries noted as evidence of use (ACC-2).
#[test]
fn acc2_an_executed_action_names_its_request_in_its_response_and_entry() {
    let da = Da::start(
        r#"
name = "t"
[services.payments]
idempotency = { preset = "stripe" }
[[services.payments.routes]]
name = "pay-into"
method = "POST"
path = "/v1/accounts/{acct}/transfers"
kind = "action"
intent = ["/to", "/amount"]
respond = { status = 201, json = { id = "{{action.id}}", method = "{{request.method}}", path = "{{request.path}}", acct = "{{path.acct}}" } }
"#,
    );
    let canary = "cny-0123456789abcdef";
    let path = format!("/payments/v1/accounts/{canary}/transfers");
    let r = da.call(
        "POST",
        &path,
        &[
            ("content-type", "application/json"),
            ("Idempotency-Key", "k-1"),
        ],
        r#"{"to":"acct-9","amount":100}"#,
    );
    assert_eq!(r.status, 201);
    assert_eq!(
        r.json(),
        json!({
            "id": "act_1",
            "method": "POST",
            "path": format!("/v1/accounts/{canary}/transfers"),
            "acct": canary,
        })
    );
    let l = da.ledger();
    assert_eq!(l.len(), 1);
    let e = &l[0];
    assert_eq!(e["disposition"], "executed", "{e}");
    assert_eq!(e["service"], "payments", "{e}");
    assert_eq!(e["route"], "pay-into", "{e}");
    assert_eq!(e["method"], "POST", "{e}");
    assert_eq!(e["path"], format!("/v1/accounts/{canary}/transfers"), "{e}");
    assert_eq!(e["detail"]["canaries"], json!([canary]), "{e}");
}

/// A replay of the very same bytes that carries a canary (ACC-2's evidence that a result was
/// used) has it noted like any other request, wherever it sits.
#[test]
fn acc2_a_replay_of_the_same_bytes_notes_the_canaries_it_carries() {
    let da = with(r#"idempotency = { preset = "stripe" }"#, "");
    let canary = "cny-0123456789abcdef";
    let body = r#"{"to":"acct-9","amount":100}"#;
    let post = |extra: &[(&str, &str)]| {
        let mut h = vec![
            ("content-type", "application/json"),
            ("Idempotency-Key", "k-1"),
        ];
        h.extend_from_slice(extra);
        da.call("POST", CREATE, &h, body)
    };
    assert_eq!(post(&[]).status, 201);
    assert_eq!(post(&[]).header("idempotent-replayed"), Some("true"));
    assert_eq!(
        post(&[("X-Note", canary)]).header("idempotent-replayed"),
        Some("true")
    );
    let l = da.ledger();
    assert_eq!(l.len(), 3);
    assert_eq!(l[1]["disposition"], "replayed");
    assert_eq!(l[1]["detail"], Value::Null);
    assert_eq!(l[2]["disposition"], "replayed");
    assert_eq!(l[2]["detail"]["canaries"], json!([canary]));
}

/// Canaries an executed action carries in its headers and anywhere in its body (here at the
/// end of a large one) are noted beside the rest of its entry's detail (ACC-2).
#[test]
fn acc2_an_action_notes_canaries_in_its_headers_and_body_beside_its_other_detail() {
    let da = with(
        r#"idempotency = { preset = "stripe" }"#,
        "repeatable = true",
    );
    let in_header = "cny-0123456789abcdef";
    let in_body = "cny-fedcba9876543210";
    let body = json!({
        "to": "acct-9",
        "amount": 100,
        "memo": format!("{}{in_body}", "x".repeat(200_000)),
    });
    let r = da
        .post_json(
            CREATE,
            &[("Idempotency-Key", "k-1"), ("X-Note", in_header)],
            &body,
        )
        .unwrap();
    assert_eq!(r.status, 201);
    let l = da.ledger();
    assert_eq!(l.len(), 1);
    assert_eq!(l[0]["disposition"], "executed", "{}", l[0]["detail"]);
    assert_eq!(
        l[0]["detail"],
        json!({"repeatable": true, "canaries": [in_header, in_body]})
    );
}
