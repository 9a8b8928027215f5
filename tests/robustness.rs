//! Whatever a client sends, the world records it and keeps answering: malformed and binary
//! bodies, bodies over the cap, unmatched paths and methods, unknown services, hostile headers
//! and admin input. Each test ends by checking the server still answers health.

mod common;

use common::*;
use serde_json::{json, Value};
use std::io::Write;
use std::net::Shutdown;

const CREATE: &str = "/payments/v1/transfers";

fn healthy(da: &Da) {
    let h = da.get("/_admin/health");
    assert_eq!(h.status, 200, "{}", h.text());
    assert_eq!(h.json()["status"], "ok");
}

fn last(da: &Da) -> Value {
    da.ledger().last().cloned().expect("an entry")
}

fn post_raw(da: &Da, headers: &[(&str, &str)], body: &[u8]) -> Result<Resp, std::io::Error> {
    request(&da.url, "POST", CREATE, headers, body)
}

fn is_fingerprint(v: &Value) -> bool {
    v.as_str()
        .is_some_and(|s| s.len() == 16 && s.chars().all(|c| c.is_ascii_hexdigit()))
}

#[test]
fn a_malformed_json_body_is_refused_with_a_400_in_the_providers_shape_and_recorded() {
    // Bad input gets a 4xx in the provider's shape and is still recorded; nothing runs, so
    // nothing can be counted as an effect (ACC-1).
    let da = Da::start(&payments(
        r#"idempotency = { preset = "stripe" }"#,
        r#"fates = ["error-after-apply:500"]"#,
    ));
    let r = post_raw(
        &da,
        &[
            ("content-type", "application/json"),
            ("Idempotency-Key", "k"),
        ],
        br#"{"to": "acct-9", "amount": "#,
    )
    .unwrap();
    assert_eq!(r.status, 400, "{}", r.text());
    assert_eq!(
        r.json()["error"]["type"],
        "invalid_request_error",
        "{}",
        r.text()
    );
    let e = last(&da);
    assert_eq!(e["disposition"], "unmatched");
    assert_eq!(e["body"], r#"{"to": "acct-9", "amount": "#);
    assert!(
        e["detail"]["reason"]
            .as_str()
            .unwrap()
            .contains("not valid JSON"),
        "{e}"
    );
    assert_eq!(e["applied"], false);
    assert_eq!(e["response"]["status"], 400);
    // The same bytes without a declared type are only text: the fate decides.
    let r = post_raw(&da, &[("Idempotency-Key", "k2")], br#"{"to": "#).unwrap();
    assert_eq!(r.status, 500, "the fate decides, not the body");
    assert_eq!(last(&da)["disposition"], "executed");
    healthy(&da);
}

#[test]
fn acc1_a_body_with_no_json_model_has_no_intent_rather_than_one_of_nulls() {
    let da = Da::start(&payments("", ""));
    for body in [&b"to=acct-9"[..], b"plain text"] {
        assert_eq!(post_raw(&da, &[], body).unwrap().status, 201);
        let e = last(&da);
        assert_eq!(e["disposition"], "executed");
        assert_eq!(e["intent"], Value::Null, "{e}");
        assert!(is_fingerprint(&e["fingerprint"]), "{e}");
    }
    healthy(&da);
}

#[test]
fn rec4_non_json_bodies_are_fingerprinted_over_their_raw_bytes() {
    let da = Da::start(&payments(r#"idempotency = { preset = "ietf" }"#, ""));
    let form = b"to=acct-9&amount=100";
    assert_eq!(
        post_raw(&da, &[("Idempotency-Key", "k-1")], form)
            .unwrap()
            .status,
        201
    );
    let same = post_raw(&da, &[("Idempotency-Key", "k-1")], form).unwrap();
    assert_eq!(same.status, 201);
    let other = post_raw(&da, &[("Idempotency-Key", "k-1")], b"to=acct-9&amount=999").unwrap();
    assert_eq!(other.status, 422);
    let l = da.ledger();
    assert_eq!(l[0]["body"], "to=acct-9&amount=100");
    assert_eq!(l[1]["disposition"], "replayed");
    assert_eq!(l[2]["disposition"], "mismatch");
    assert_eq!(l[0]["fingerprint"], l[1]["fingerprint"]);
    assert_ne!(l[0]["fingerprint"], l[2]["fingerprint"]);
    healthy(&da);
}

#[test]
fn binary_and_invalid_utf8_bodies_are_recorded_without_crashing() {
    let da = Da::start(&payments(r#"idempotency = { preset = "stripe" }"#, ""));
    let junk: Vec<u8> = vec![0xff, 0xfe, 0x00, 0x80, b'{', 0xc3, 0x28, b'}', 0x00];
    assert_eq!(
        post_raw(&da, &[("Idempotency-Key", "bin")], &junk)
            .unwrap()
            .status,
        201
    );
    assert_eq!(
        post_raw(&da, &[("Idempotency-Key", "bin")], &junk)
            .unwrap()
            .header("idempotent-replayed"),
        Some("true")
    );
    let mut other = junk.clone();
    other[0] = 0xfd; // the same text once lossily decoded, but other bytes
    assert_eq!(
        post_raw(&da, &[("Idempotency-Key", "bin")], &other)
            .unwrap()
            .status,
        400,
        "fingerprints cover the raw bytes"
    );
    let l = da.ledger();
    assert!(l[0]["body"].is_string());
    assert!(is_fingerprint(&l[0]["fingerprint"]));
    assert_eq!(l[2]["disposition"], "mismatch");
    healthy(&da);
}

#[test]
fn a_deeply_nested_json_body_is_refused_as_malformed_and_recorded() {
    let da = Da::start(&payments("", ""));
    let deep = "[".repeat(200_000);
    let r = post_raw(
        &da,
        &[("content-type", "application/json")],
        deep.as_bytes(),
    )
    .unwrap();
    assert_eq!(r.status, 400, "{}", r.text());
    let e = last(&da);
    assert!(e["body"].is_string());
    assert_eq!(e["disposition"], "unmatched");
    assert_eq!(e["applied"], false);
    healthy(&da);
}

#[test]
fn a_body_over_max_body_bytes_gets_413_and_is_recorded_as_too_large() {
    let da = Da::start(&format!("max_body_bytes = 64\n{}", payments("", "")));
    let big = json!({"to": "acct-9", "amount": 100, "memo": "x".repeat(200)}).to_string();
    let r = post_raw(
        &da,
        &[
            ("content-type", "application/json"),
            ("Idempotency-Key", "k-big"),
        ],
        big.as_bytes(),
    )
    .unwrap();
    assert_eq!(r.status, 413);
    let v = r.json();
    assert_eq!(v["status"], 413);
    assert!(v["error"].as_str().unwrap().contains("64"), "{v}");
    let e = last(&da);
    assert_eq!(e["disposition"], "too-large");
    assert_eq!(e["route"], Value::Null);
    assert_eq!(e["applied"], false);
    assert_eq!(e["body_truncated"], true);
    assert_eq!(e["response"]["status"], 413);
    let kept = e["body"].as_str().unwrap();
    assert!(kept.len() <= 64 && big.starts_with(kept), "{kept}");
    // A body right at the cap is fine.
    let fits = format!("{{\"to\":\"{}\"}}", "y".repeat(64 - 9));
    assert_eq!(fits.len(), 64);
    assert_eq!(post_raw(&da, &[], fits.as_bytes()).unwrap().status, 201);
    healthy(&da);
}

#[test]
fn a_chunked_body_over_max_body_bytes_gets_413_too() {
    let da = Da::start(&format!("max_body_bytes = 64\n{}", payments("", "")));
    let host = da.url.trim_start_matches("http://");
    let mut req = format!("POST {CREATE} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nTransfer-Encoding: chunked\r\n\r\n").into_bytes();
    for _ in 0..4 {
        req.extend_from_slice(format!("20\r\n{}\r\n", "z".repeat(32)).as_bytes());
    }
    req.extend_from_slice(b"0\r\n\r\n");
    let r = raw_request(&da.url, &req).unwrap();
    assert_eq!(r.status, 413, "{}", r.text());
    assert_eq!(last(&da)["disposition"], "too-large");
    healthy(&da);
}

/// One response from a kept-alive connection: its status and body (by its Content-Length).
fn read_one(s: &mut std::net::TcpStream) -> (u16, Vec<u8>) {
    use std::io::Read;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = got.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "closed mid-response");
        got.extend_from_slice(&buf[..n]);
    };
    let head = String::from_utf8_lossy(&got[..head_end]).to_ascii_lowercase();
    let status = head[9..12].parse().unwrap();
    let len: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length: "))
        .map(|v| v.trim().parse().unwrap())
        .unwrap();
    while got.len() < head_end + len {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "closed mid-body");
        got.extend_from_slice(&buf[..n]);
    }
    (status, got[head_end..head_end + len].to_vec())
}

#[test]
fn bodies_of_known_length_and_chunked_bodies_are_read_whole_on_one_kept_alive_connection() {
    let da = Da::start(&payments("", ""));
    let host = da.url.trim_start_matches("http://");
    let mut s = std::net::TcpStream::connect(host).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let first = br#"{"to":"acct-1","amount":1}"#;
    write!(
        s,
        "POST {CREATE} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        first.len()
    )
    .unwrap();
    s.write_all(first).unwrap();
    assert_eq!(read_one(&mut s).0, 201);
    // The second arrives in three chunks, each written on its own.
    write!(
        s,
        "POST {CREATE} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    )
    .unwrap();
    for piece in [r#"{"to":"#, r#""acct-2","#, r#""amount":2}"#] {
        write!(s, "{:x}\r\n{piece}\r\n", piece.len()).unwrap();
        s.flush().unwrap();
    }
    s.write_all(b"0\r\n\r\n").unwrap();
    assert_eq!(read_one(&mut s).0, 201);
    // And the connection still serves a third.
    write!(s, "GET /_admin/health HTTP/1.1\r\nHost: {host}\r\n\r\n").unwrap();
    assert_eq!(read_one(&mut s).0, 200);
    let l = da.ledger();
    assert_eq!(l.len(), 2);
    assert_eq!(l[0]["body"], json!({"to": "acct-1", "amount": 1}));
    assert_eq!(l[1]["body"], json!({"to": "acct-2", "amount": 2}));
    assert!(l.iter().all(|e| e["disposition"] == "executed"), "{l:?}");
    healthy(&da);
}

#[test]
fn a_body_over_the_ledger_cap_is_kept_as_a_prefix_but_fingerprinted_whole() {
    let da = Da::start(&format!(
        "ledger_body_bytes = 16\n{}",
        payments(r#"idempotency = { preset = "ietf" }"#, "")
    ));
    let a = json!({"to": "acct-9", "amount": 100, "memo": "first"});
    let b = json!({"to": "acct-9", "amount": 100, "memo": "other"});
    assert_eq!(
        da.post_json(CREATE, &[("Idempotency-Key", "k")], &a)
            .unwrap()
            .status,
        201
    );
    assert_eq!(
        da.post_json(CREATE, &[("Idempotency-Key", "k")], &b)
            .unwrap()
            .status,
        422,
        "the tails differ"
    );
    let l = da.ledger();
    assert_eq!(l[0]["body"], a.to_string()[..16]);
    assert_eq!(l[0]["body_truncated"], true);
    assert_eq!(
        l[0]["intent"],
        json!({"/to": "acct-9", "/amount": 100}),
        "intent comes from the whole body"
    );
    healthy(&da);
}

#[test]
fn an_unmatched_path_gets_a_json_404_naming_the_closest_routes_and_is_recorded() {
    let da = Da::start(&payments("", ""));
    let r = da
        .post_json("/payments/v1/transfer", &[], &transfer())
        .unwrap();
    assert_eq!(r.status, 404);
    let v = r.json();
    assert_eq!(v["status"], 404);
    assert!(
        v["error"].as_str().unwrap().contains("POST /v1/transfer"),
        "{v}"
    );
    let closest = v["closest"].as_array().unwrap();
    assert!(!closest.is_empty() && closest.len() <= 3, "{v}");
    assert_eq!(closest[0], "POST /v1/transfers (create-transfer)");
    let e = last(&da);
    assert_eq!(e["disposition"], "unmatched");
    assert_eq!(e["route"], Value::Null);
    assert_eq!(e["service"], "payments");
    assert_eq!(e["path"], "/v1/transfer");
    assert_eq!(
        e["body"],
        transfer(),
        "the body is kept even when nothing matched"
    );
    assert_eq!(e["applied"], false);
    assert_eq!(e["response"]["status"], 404);
    healthy(&da);
}

#[test]
fn a_wrong_method_on_a_known_path_is_unmatched() {
    let da = Da::start(&payments("", ""));
    let r = da.call("DELETE", CREATE, &[], "");
    assert_eq!(r.status, 404);
    assert!(r.json()["closest"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c == "POST /v1/transfers (create-transfer)"));
    assert_eq!(last(&da)["method"], "DELETE");
    healthy(&da);
}

#[test]
fn an_unknown_service_gets_a_404_naming_the_services_and_is_recorded() {
    let da = Da::start(&payments("", ""));
    let r = da
        .post_json("/paymnts/v1/transfers", &[], &transfer())
        .unwrap();
    assert_eq!(r.status, 404);
    let v = r.json();
    assert_eq!(v["services"], json!(["payments"]));
    assert!(
        v["error"]
            .as_str()
            .unwrap()
            .contains("did you mean `payments`"),
        "{v}"
    );
    let e = last(&da);
    assert_eq!(e["service"], "paymnts");
    assert_eq!(e["disposition"], "unmatched");
    // The bare service root is a path too.
    assert_eq!(da.get("/payments").status, 404);
    assert_eq!(last(&da)["path"], "/");
    healthy(&da);
}

#[test]
fn an_extension_method_like_brew_is_recorded_as_unmatched() {
    let da = Da::start(&payments("", ""));
    let r = da.call("BREW", CREATE, &[], "coffee");
    assert_eq!(r.status, 404);
    assert!(r.json()["error"]
        .as_str()
        .unwrap()
        .contains("BREW /v1/transfers"));
    let e = last(&da);
    assert_eq!(e["method"], "BREW");
    assert_eq!(e["disposition"], "unmatched");
    assert_eq!(e["body"], "coffee");
    healthy(&da);
}

#[test]
fn hostile_header_values_are_recorded_without_crashing() {
    let da = Da::start(&payments(r#"idempotency = { preset = "adyen" }"#, ""));
    let host = da.url.trim_start_matches("http://");
    let body = transfer().to_string();
    let mut req = format!(
        "POST {CREATE} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    )
    .into_bytes();
    req.extend_from_slice(b"Idempotency-Key: k-\xff\xfe\r\nX-Work-Id: w-\x80\r\nX-Revision: 99999999999999999999999\r\n\r\n");
    req.extend_from_slice(body.as_bytes());
    let r = raw_request(&da.url, &req).unwrap();
    assert_eq!(r.status, 201, "{}", r.text());
    let e = last(&da);
    assert!(e["idempotency_key"].as_str().unwrap().starts_with("k-"));
    assert!(e["work_id"].as_str().unwrap().starts_with("w-"));
    assert_eq!(
        e["revision"], "99999999999999999999999",
        "too big for a number: kept as text"
    );
    healthy(&da);
}

#[test]
fn odd_lookup_ids_are_unknown_not_errors() {
    let da = Da::start(&payments("", ""));
    for id in [
        "%FF%00",
        "act_18446744073709551616",
        "act_-1",
        "..",
        "act_%20",
    ] {
        let r = da.get(&format!("{CREATE}/{id}"));
        assert_eq!(r.status, 404, "{id}: {}", r.text());
        assert_eq!(r.json()["state"], "unknown");
    }
    healthy(&da);
}

#[test]
fn garbage_on_the_wire_does_not_take_the_server_down() {
    let da = Da::start(&payments("", ""));
    let r = raw_request(&da.url, b"THIS IS NOT HTTP\r\n\r\n");
    if let Ok(r) = r {
        assert!(r.status >= 400, "{r:?}");
    }
    // A client that promises a body and goes away mid-way.
    let host = da.url.trim_start_matches("http://");
    let mut s = send_raw(
        &da.url,
        format!("POST {CREATE} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 1000\r\n\r\n{{\"to\"")
            .as_bytes(),
    );
    s.flush().unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    let _ = read_response(s);
    healthy(&da);
    assert_eq!(da.post_json(CREATE, &[], &transfer()).unwrap().status, 201);
}

#[test]
fn absurd_clock_and_wait_values_from_the_admin_api_do_not_panic() {
    let da = Da::start(&payments(
        "",
        r#"fates = ["respond", "delay:5000000000h", "apply-later:5000000000h"]"#,
    ));
    da.post_json(CREATE, &[], &transfer()).unwrap();
    // Already satisfied: an enormous timeout changes nothing.
    assert_eq!(
        da.get("/_admin/ledger/wait?count=1&timeout=5000000000h")
            .status,
        200
    );
    let advance = |by: &str| {
        da.call(
            "POST",
            "/_admin/clock/advance",
            &[("content-type", "application/json")],
            &format!("{{\"by\": \"{by}\"}}"),
        )
    };
    // u64::MAX milliseconds: parses, but no clock goes there.
    let r = advance("18446744073709551615ms");
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(
        r.json()["error"].as_str().unwrap().starts_with("by:"),
        "{}",
        r.text()
    );
    assert_eq!(
        da.get("/_admin/clock").json()["elapsed_ms"],
        0,
        "nothing moved"
    );
    // Up to the horizon is fine, one step past it is not.
    assert_eq!(advance("365000d").status, 200);
    assert_eq!(advance("1ms").status, 400);
    assert_eq!(da.get("/_admin/clock").status, 200);
    // Far-future fates at the horizon: recorded, pending, and nothing overflows.
    let _delayed = send(
        &da.url,
        "POST",
        CREATE,
        &[],
        transfer().to_string().as_bytes(),
    );
    da.wait_for("route=create-transfer", 2);
    assert_eq!(da.post_json(CREATE, &[], &transfer()).unwrap().status, 202);
    let l = da.ledger();
    assert_eq!(l.len(), 3);
    assert_eq!(l[1]["response"]["delivery"], "pending");
    assert_eq!(l[2]["applied"], false);
    assert_eq!(da.get("/_admin/ledger.jsonl").status, 200);
    healthy(&da);
}

#[test]
fn the_root_answers_with_the_ready_json() {
    let da = Da::start(&payments("", ""));
    let v = da.get("/").json();
    assert_eq!(v["event"], "ready");
    assert_eq!(v["services"]["payments"], format!("{}/payments", da.url));
    assert!(da.ledger().is_empty(), "the root is not a service request");
}

#[test]
fn acc1_a_request_whose_body_never_fully_arrived_is_recorded_but_not_executed() {
    // The client promises 1000 bytes, sends a few and goes away: no provider would act on
    // that, so it must not count as an applied action (a retry would look like a double apply).
    let da = Da::start(&payments("", ""));
    let host = da.url.trim_start_matches("http://");
    let head =
        format!("POST {CREATE} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 1000\r\n\r\n{{\"to\"");
    let mut s = send_raw(&da.url, head.as_bytes());
    s.flush().unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    let e = &da.wait_for("service=payments", 1)[0];
    assert_eq!(e["applied"], false, "{e}");
    assert_eq!(
        e["disposition"], "unmatched",
        "malformed at the HTTP level: {e}"
    );
    assert_eq!(e["fate"], Value::Null);
    assert!(
        e["detail"]["reason"]
            .as_str()
            .unwrap()
            .contains("incomplete"),
        "{e}"
    );
    assert!(read_response(s).is_err(), "nobody is left to answer");
    // The fate sequence was not consumed: the next real request is the first attempt.
    assert_eq!(da.post_json(CREATE, &[], &transfer()).unwrap().status, 201);
    assert_eq!(da.ledger()[1]["action_id"], "act_2");
    healthy(&da);
}

/// `shutdown(SHUT_WR)` after the request (curl reading a body from stdin, some SDKs, proxies)
/// says "nothing more to send", not "gone": every such request is answered and recorded. Many
/// rounds, because the loss was a race between reading the body and seeing the end of input.
#[test]
fn acc1_a_client_that_half_closes_after_sending_is_answered_and_recorded() {
    let da = Da::start(&payments("", ""));
    let rounds = 60;
    for i in 0..rounds {
        let body = transfer().to_string();
        let key = format!("half-{i}");
        let mut s = try_send(
            &da.url,
            "POST",
            CREATE,
            &[
                ("Content-Type", "application/json"),
                ("Idempotency-Key", &key),
            ],
            body.as_bytes(),
        )
        .unwrap();
        s.flush().unwrap();
        s.shutdown(Shutdown::Write).unwrap();
        let r = read_response(s).unwrap_or_else(|e| panic!("round {i}: no answer: {e}"));
        assert_eq!(r.status, 201, "round {i}: {}", r.text());
    }
    // Admin requests too: a scripted `curl -d @- .../claims < claims.json` half-closes.
    let claims = json!({"actions": []}).to_string();
    let s = try_send(&da.url, "POST", "/_admin/claims", &[], claims.as_bytes()).unwrap();
    s.shutdown(Shutdown::Write).unwrap();
    assert_eq!(read_response(s).unwrap().status, 200);
    let l = da.wait_for("service=payments", rounds);
    assert_eq!(l.len(), rounds);
    assert!(
        l.iter().all(|e| e["response"]["delivery"] == "sent"),
        "{l:?}"
    );
    healthy(&da);
}

#[test]
fn routes_can_be_told_apart_by_headers_and_json_body_fields() {
    let toml = r#"
clock = "manual"
[services.payments]

[[services.payments.routes]]
name = "eur-transfer"
method = "POST"
path = "/v1/transfers"
kind = "action"
match = { json = { "/currency" = "eur" } }
respond = { status = 201, json = { route = "eur" } }

[[services.payments.routes]]
name = "urgent-transfer"
method = "POST"
path = "/v1/transfers"
kind = "action"
match = { headers = { "X-Priority" = "urgent" } }
respond = { status = 201, json = { route = "urgent" } }
"#;
    let da = Da::start(toml);
    let eur = da
        .post_json(
            "/payments/v1/transfers",
            &[],
            &serde_json::json!({"currency": "eur"}),
        )
        .unwrap();
    assert_eq!(eur.json()["route"], "eur");
    let urgent = da
        .post_json(
            "/payments/v1/transfers",
            &[("X-Priority", "urgent")],
            &serde_json::json!({"currency": "usd"}),
        )
        .unwrap();
    assert_eq!(urgent.json()["route"], "urgent");
    let neither = da
        .post_json(
            "/payments/v1/transfers",
            &[],
            &serde_json::json!({"currency": "usd"}),
        )
        .unwrap();
    assert_eq!(neither.status, 404);
    let routes: Vec<serde_json::Value> = da.ledger().iter().map(|e| e["route"].clone()).collect();
    assert_eq!(
        routes,
        vec![
            serde_json::json!("eur-transfer"),
            serde_json::json!("urgent-transfer"),
            serde_json::Value::Null
        ]
    );
}
