//! The admin API under `/_admin/`: health, the ledger and its filters, long-polling, reset, the
//! manual clock, swapping the scenario, the OpenAPI document, and error shapes. Every error is
//! `{"error": ..., "status": N}`.

mod common;

use common::*;
use serde_json::{json, Value};
use std::time::{Duration, Instant};

const CREATE: &str = "/payments/v1/transfers";

fn stripe() -> Da {
    Da::start(&payments(r#"idempotency = { preset = "stripe" }"#, ""))
}

fn post(da: &Da, headers: &[(&str, &str)]) -> Resp {
    da.post_json(CREATE, headers, &transfer()).unwrap()
}

fn entries(da: &Da, query: &str) -> Vec<Value> {
    let r = da.get(&format!("/_admin/ledger?{query}"));
    assert_eq!(r.status, 200, "{query}: {}", r.text());
    r.json()["entries"].as_array().unwrap().clone()
}

fn seqs(entries: &[Value]) -> Vec<u64> {
    entries.iter().map(|e| e["seq"].as_u64().unwrap()).collect()
}

/// An admin error: the status, and a JSON body `{"error": "...", "status": N}`.
fn admin_error(r: &Resp, status: u16) -> String {
    assert_eq!(r.status, status, "{}", r.text());
    let v = r.json();
    assert_eq!(v["status"], status, "{v}");
    v["error"].as_str().expect("error is a string").to_string()
}

fn advance_body(da: &Da, body: &str) -> Resp {
    da.call(
        "POST",
        "/_admin/clock/advance",
        &[("content-type", "application/json")],
        body,
    )
}

#[test]
fn health_reports_the_scenario_clock_and_entry_count() {
    let da = stripe();
    let h = da.get("/_admin/health");
    assert_eq!(h.status, 200);
    assert_eq!(h.header("content-type"), Some("application/json"));
    let v = h.json();
    assert_eq!(v["status"], "ok");
    assert_eq!(v["scenario"], "t");
    assert_eq!(v["clock"], "manual");
    assert_eq!(v["entries"], 0);
    post(&da, &[]);
    assert_eq!(da.get("/_admin/health").json()["entries"], 1);
}

#[test]
fn admin_requests_are_not_recorded() {
    let da = stripe();
    da.get("/_admin/health");
    da.get("/_admin/clock");
    da.get("/_admin/nope");
    da.advance("1s");
    assert!(da.ledger().is_empty());
}

/// 1 executed k-1/w-1, 2 replayed k-1/w-1, 3 executed k-2/w-2, 4 lookup, 5 unmatched.
fn five_entries() -> Da {
    let da = stripe();
    post(&da, &[("Idempotency-Key", "k-1"), ("X-Work-Id", "w-1")]);
    post(&da, &[("Idempotency-Key", "k-1"), ("X-Work-Id", "w-1")]);
    post(&da, &[("Idempotency-Key", "k-2"), ("X-Work-Id", "w-2")]);
    da.get("/payments/v1/transfers/act_1");
    da.get("/payments/nowhere");
    da
}

#[test]
fn the_ledger_filters_by_service_route_key_work_id_since_and_disposition() {
    let da = five_entries();
    assert_eq!(seqs(&entries(&da, "")), vec![1, 2, 3, 4, 5]);
    assert_eq!(seqs(&entries(&da, "service=payments")), vec![1, 2, 3, 4, 5]);
    assert_eq!(seqs(&entries(&da, "service=ledgerless")), Vec::<u64>::new());
    assert_eq!(seqs(&entries(&da, "route=create-transfer")), vec![1, 2, 3]);
    assert_eq!(seqs(&entries(&da, "route=get-transfer")), vec![4]);
    assert_eq!(seqs(&entries(&da, "key=k-1")), vec![1, 2]);
    assert_eq!(seqs(&entries(&da, "work_id=w-2")), vec![3]);
    assert_eq!(
        seqs(&entries(&da, "since=3")),
        vec![4, 5],
        "since is a cursor: seq > since"
    );
    assert_eq!(seqs(&entries(&da, "since=5")), Vec::<u64>::new());
    assert_eq!(seqs(&entries(&da, "disposition=replayed")), vec![2]);
    assert_eq!(seqs(&entries(&da, "disposition=unmatched")), vec![5]);
    assert_eq!(seqs(&entries(&da, "disposition=lookup")), vec![4]);
    assert_eq!(
        seqs(&entries(
            &da,
            "route=create-transfer&key=k-1&disposition=executed"
        )),
        vec![1],
        "filters combine"
    );
}

#[test]
fn filter_values_are_percent_decoded() {
    let da = stripe();
    post(&da, &[("Idempotency-Key", "a b/c+d")]);
    assert_eq!(seqs(&entries(&da, "key=a%20b%2Fc%2Bd")), vec![1]);
    assert_eq!(
        seqs(&entries(&da, "key=a+b%2Fc%2Bd")),
        vec![1],
        "'+' is a space"
    );
    assert_eq!(
        seqs(&entries(&da, "service=pay%6Dents&key=a+b/c%2Bd")),
        vec![1]
    );
}

#[test]
fn the_openapi_document_lists_every_endpoint() {
    let doc: Value = serde_json::from_str(doubleagent::admin::OPENAPI).unwrap();
    for p in [
        "/_admin/health",
        "/_admin/ledger",
        "/_admin/ledger.jsonl",
        "/_admin/ledger/wait",
        "/_admin/reset",
        "/_admin/clock",
        "/_admin/clock/advance",
        "/_admin/scenario",
        "/_admin/openapi.json",
    ] {
        assert!(
            doc["paths"].get(p).is_some(),
            "{p} missing from openapi.json"
        );
    }
}

#[test]
fn an_unknown_or_malformed_filter_is_a_400_naming_it() {
    let da = stripe();
    let e = admin_error(&da.get("/_admin/ledger?servce=payments"), 400);
    assert!(e.contains("\"servce\""), "{e}");
    assert!(e.contains("did you mean `service`"), "{e}");
    let e = admin_error(&da.get("/_admin/ledger?since=yesterday"), 400);
    assert!(e.starts_with("since:"), "{e}");
    let e = admin_error(&da.get("/_admin/ledger?disposition=lost"), 400);
    assert!(e.contains("\"lost\""), "{e}");
    let e = admin_error(&da.get("/_admin/ledger.jsonl?bogus=1"), 400);
    assert!(e.contains("\"bogus\""), "{e}");
    let e = admin_error(&da.get("/_admin/ledger?key=%zz"), 400);
    assert!(e.contains("percent-encoding"), "{e}");
    // `count` and `timeout` belong to ledger/wait only.
    admin_error(&da.get("/_admin/ledger?count=1"), 400);
}

#[test]
fn ledger_jsonl_is_one_json_object_per_line_in_seq_order() {
    let da = five_entries();
    let r = da.get("/_admin/ledger.jsonl");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/x-ndjson"));
    let text = r.text();
    assert!(text.ends_with('\n'));
    let lines: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect();
    assert_eq!(seqs(&lines), vec![1, 2, 3, 4, 5]);
    assert_eq!(lines, da.ledger(), "the same entries as GET ledger");
    let filtered = da.get("/_admin/ledger.jsonl?key=k-2").text();
    assert_eq!(filtered.lines().count(), 1);
}

#[test]
fn ledger_wait_returns_once_enough_entries_match() {
    let da = stripe();
    // Ask first, then make the requests it waits for.
    let waiting = send(
        &da.url,
        "GET",
        "/_admin/ledger/wait?count=2&route=create-transfer&timeout=15s",
        &[],
        b"",
    );
    da.get("/payments/v1/transfers/act_9"); // does not match the filter
    post(&da, &[]);
    post(&da, &[]);
    let r = read_response(waiting).unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    let got = r.json()["entries"].as_array().unwrap().clone();
    assert_eq!(got.len(), 2);
    assert!(got.iter().all(|e| e["route"] == "create-transfer"));
    // Already satisfied: answers at once.
    assert_eq!(da.get("/_admin/ledger/wait?count=1").status, 200);
}

#[test]
fn ledger_wait_times_out_with_408_and_the_entries_so_far() {
    let da = stripe();
    post(&da, &[]);
    let t0 = Instant::now();
    let r = da.get("/_admin/ledger/wait?count=3&timeout=200ms");
    assert!(t0.elapsed() >= Duration::from_millis(200));
    let e = admin_error(&r, 408);
    assert!(e.contains("1 of 3"), "{e}");
    assert_eq!(r.json()["entries"].as_array().unwrap().len(), 1);
    // The timeout is harness wall time: the manual clock did not move.
    assert_eq!(da.get("/_admin/clock").json()["elapsed_ms"], 0);
}

#[test]
fn ledger_wait_rejects_bad_count_and_timeout() {
    let da = stripe();
    assert!(admin_error(&da.get("/_admin/ledger/wait?count=many"), 400).starts_with("count:"));
    assert!(
        admin_error(&da.get("/_admin/ledger/wait?timeout=forever"), 400).starts_with("timeout:")
    );
}

#[test]
fn reset_empties_the_ledger_and_forgets_keys_fate_sequences_and_time() {
    let da = Da::start(&payments(
        r#"idempotency = { preset = "stripe" }"#,
        r#"fates = ["error-after-apply:500", "respond"]"#,
    ));
    assert_eq!(post(&da, &[("Idempotency-Key", "k-1")]).status, 500);
    assert_eq!(
        post(&da, &[("Idempotency-Key", "k-1")]).status,
        500,
        "replayed"
    );
    da.advance("1h");

    let r = da.call("POST", "/_admin/reset", &[], "");
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["status"], "reset");
    assert!(da.ledger().is_empty());
    assert_eq!(da.get("/_admin/clock").json()["elapsed_ms"], 0);

    let again = post(&da, &[("Idempotency-Key", "k-1")]);
    assert_eq!(again.status, 500, "the fate sequence starts over");
    assert_eq!(
        again.header("idempotent-replayed"),
        None,
        "the key was forgotten"
    );
    let l = da.ledger();
    assert_eq!(l.len(), 1);
    assert_eq!(l[0]["seq"], 1);
    assert_eq!(l[0]["disposition"], "executed");
    assert_eq!(l[0]["action_id"], "act_1");
}

#[test]
fn the_manual_clock_moves_only_when_advanced() {
    let da = stripe();
    let c = da.get("/_admin/clock");
    assert_eq!(c.status, 200);
    let c = c.json();
    assert_eq!(c["kind"], "manual");
    assert_eq!(c["elapsed_ms"], 0);
    assert_eq!(c["elapsed"], "0ms");
    let start = c["now"].as_str().unwrap().to_string();
    assert!(start.ends_with('Z') && start.contains('T'), "{start}");

    let a = da.advance("1m30s");
    assert_eq!(a["elapsed_ms"], 90_000);
    assert_eq!(a["elapsed"], "1m30s");
    let a = da.advance("25h");
    assert_eq!(a["elapsed"], "1d1h1m30s");
    assert!(a["now"].as_str().unwrap() > start.as_str());
    assert_eq!(
        da.get("/_admin/clock").json()["elapsed_ms"],
        a["elapsed_ms"]
    );
    post(&da, &[]);
    assert_eq!(
        da.ledger()[0]["received_at"],
        a["now"],
        "requests are stamped with scenario time"
    );
}

#[test]
fn clock_advance_rejects_a_bad_body_with_400() {
    let da = stripe();
    for body in [
        "",
        "25h",
        "{}",
        r#"{"by": 5}"#,
        r#"{"by": "soon"}"#,
        r#"{"by": "-1s"}"#,
    ] {
        let e = admin_error(&advance_body(&da, body), 400);
        assert!(!e.is_empty(), "{body}");
    }
    assert!(admin_error(&advance_body(&da, r#"{"by": "soon"}"#), 400).starts_with("by:"));
    assert_eq!(
        da.get("/_admin/clock").json()["elapsed_ms"],
        0,
        "nothing moved"
    );
}

#[test]
fn clock_advance_on_a_real_clock_is_409() {
    let toml = payments("", "").replace("clock = \"manual\"", "clock = \"real\"");
    let da = Da::start(&toml);
    assert_eq!(da.get("/_admin/clock").json()["kind"], "real");
    let e = admin_error(&advance_body(&da, r#"{"by": "1s"}"#), 409);
    assert!(e.contains("manual"), "{e}");
}

const SWAPPED: &str = r#"
name = "swapped"
clock = "manual"

[services.bank]

[[services.bank.routes]]
name = "pay"
method = "POST"
path = "/pay"
kind = "action"
respond = { status = 200, json = { ok = true } }
"#;

#[test]
fn posting_a_scenario_swaps_the_services_and_starts_afresh() {
    let da = stripe();
    post(&da, &[]);
    da.advance("1h");
    let r = da.call(
        "POST",
        "/_admin/scenario",
        &[("content-type", "application/toml")],
        SWAPPED,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let ready = r.json();
    assert_eq!(ready["event"], "ready");
    assert_eq!(ready["scenario"], "swapped");
    assert_eq!(ready["url"], da.url.as_str());
    assert_eq!(
        ready["services"],
        json!({"bank": format!("{}/bank", da.url)})
    );

    assert!(da.ledger().is_empty(), "a new world");
    assert_eq!(da.get("/_admin/clock").json()["elapsed_ms"], 0);
    assert_eq!(da.get("/_admin/health").json()["scenario"], "swapped");
    assert_eq!(
        da.call("POST", "/bank/pay", &[], "{}").json(),
        json!({"ok": true})
    );
    let gone = da.post_json(CREATE, &[], &transfer()).unwrap();
    assert_eq!(gone.status, 404);
    assert_eq!(gone.json()["services"], json!(["bank"]));
    // Reset goes back to the start of the *new* scenario.
    da.call("POST", "/_admin/reset", &[], "");
    assert_eq!(da.get("/_admin/health").json()["scenario"], "swapped");
}

#[test]
fn posting_an_invalid_scenario_is_a_located_400_and_changes_nothing() {
    let da = stripe();
    post(&da, &[("Idempotency-Key", "k-1")]);
    let bad = "name = \"broken\"\nclock = \"manual\"\nsevices = {}\n";
    let e = admin_error(&da.call("POST", "/_admin/scenario", &[], bad), 400);
    assert!(e.starts_with("<request body>:3:1: "), "{e}");
    assert!(e.contains("sevices"), "{e}");
    assert!(e.contains("did you mean `services`"), "{e}");

    let e = admin_error(&da.call("POST", "/_admin/scenario", &[], "name = \n"), 400);
    assert!(e.starts_with("<request body>:1:"), "{e}");
    let binary = request(
        &da.url,
        "POST",
        "/_admin/scenario",
        &[],
        &[0xff, 0xfe, 0x00],
    )
    .unwrap();
    assert!(admin_error(&binary, 400).contains("UTF-8"));

    // Nothing changed: same scenario, same ledger, keys still remembered.
    assert_eq!(da.get("/_admin/health").json()["scenario"], "t");
    assert_eq!(da.ledger().len(), 1);
    let again = post(&da, &[("Idempotency-Key", "k-1")]);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
}

#[test]
fn openapi_json_is_an_openapi_3_document() {
    let da = stripe();
    let r = da.get("/_admin/openapi.json");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let doc = r.json();
    assert!(
        doc["openapi"].as_str().unwrap().starts_with("3."),
        "{}",
        doc["openapi"]
    );
    assert!(doc["paths"]["/_admin/ledger/wait"].is_object());
}

#[test]
fn an_unknown_admin_endpoint_is_a_json_404() {
    let da = stripe();
    for (method, path) in [
        ("GET", "/_admin/nope"),
        ("GET", "/_admin"),
        ("GET", "/_admin/"),
    ] {
        let e = admin_error(&da.call(method, path, &[], ""), 404);
        assert!(e.contains("openapi.json"), "{method} {path}: {e}");
    }
    assert!(admin_error(&da.get("/_admin/nope"), 404).contains("GET /_admin/nope"));
    // A known path with a method it does not take: 405 naming what it takes (issue 30 item 8).
    let e = admin_error(&da.call("DELETE", "/_admin/ledger", &[], ""), 405);
    assert!(e.contains("openapi.json"), "{e}");
}

#[test]
fn work_id_and_revision_headers_are_recorded_with_numeric_revisions_as_numbers() {
    let da = stripe();
    post(&da, &[("X-Work-Id", "task-7"), ("X-Revision", "2")]);
    post(&da, &[("x-work-id", "task-8"), ("x-revision", "r2")]);
    post(&da, &[]);
    da.get("/payments/v1/transfers/act_1?x=1");
    let l = da.ledger();
    assert_eq!(l[0]["work_id"], "task-7");
    assert_eq!(l[0]["revision"], json!(2), "a number, not \"2\"");
    assert_eq!(
        l[1]["work_id"], "task-8",
        "header names are case-insensitive"
    );
    assert_eq!(l[1]["revision"], "r2");
    assert_eq!(l[2]["work_id"], Value::Null);
    assert_eq!(l[2]["revision"], Value::Null);
    assert_eq!(l[3]["disposition"], "lookup");
}

#[test]
fn work_id_and_revision_headers_are_configurable_per_service() {
    let da = Da::start(&payments(
        "work_id_header = \"X-Task\"\nrevision_header = \"X-Rev\"",
        "",
    ));
    post(
        &da,
        &[
            ("X-Task", "t-1"),
            ("X-Rev", "3"),
            ("X-Work-Id", "ignored"),
            ("X-Revision", "9"),
        ],
    );
    let e = &da.ledger()[0];
    assert_eq!(e["work_id"], "t-1");
    assert_eq!(e["revision"], 3);
    assert_eq!(seqs(&entries(&da, "work_id=t-1")), vec![1]);
    assert_eq!(seqs(&entries(&da, "work_id=ignored")), Vec::<u64>::new());
}

#[test]
fn every_entry_has_the_documented_fields() {
    let da = five_entries();
    let fields = [
        "seq",
        "service",
        "route",
        "method",
        "path",
        "received_at",
        "idempotency_key",
        "fingerprint",
        "intent",
        "work_id",
        "revision",
        "body",
        "disposition",
        "replay_of",
        "executed_after_expiry",
        "fate",
        "applied",
        "applied_at",
        "response",
    ];
    for e in da.ledger() {
        for f in fields {
            assert!(e.get(f).is_some(), "{f} missing from {e}");
        }
        for f in ["delivery", "status", "at"] {
            assert!(
                e["response"].get(f).is_some(),
                "response.{f} missing from {e}"
            );
        }
    }
}

#[test]
fn an_empty_scenario_body_is_refused_and_changes_nothing() {
    let da = Da::start(LOST_RESPONSE);
    let r = da.call("POST", "/_admin/scenario", &[], "  \n");
    assert_eq!(r.status, 400);
    assert!(r.json()["error"].as_str().unwrap().contains("empty"));
    assert_eq!(da.get("/_admin/health").json()["scenario"], "lost-response");
}

#[test]
fn every_ready_json_keeps_the_documented_key_order() {
    let da = Da::start(LOST_RESPONSE);
    assert!(da
        .get("/")
        .text()
        .starts_with("{\"event\":\"ready\",\"url\":"));
    let swapped = da.call("POST", "/_admin/scenario", &[], LOST_RESPONSE);
    assert!(
        swapped.text().starts_with("{\"event\":\"ready\",\"url\":"),
        "{}",
        swapped.text()
    );
}

#[test]
fn a_bad_replay_header_name_is_a_scenario_error() {
    let da = Da::start(LOST_RESPONSE);
    let bad = payments(
        "idempotency = { preset = \"stripe\", replay_header = \"Bad Header\" }",
        "",
    );
    let r = da.call("POST", "/_admin/scenario", &[], &bad);
    assert_eq!(r.status, 400);
    assert!(
        r.json()["error"]
            .as_str()
            .unwrap()
            .contains("replay_header: \"Bad Header\" is not a valid HTTP header name"),
        "{}",
        r.text()
    );
}

#[test]
fn the_verdict_as_text_reads_as_the_cli_prints_it_acc_1_rec_4() {
    let da = Da::start(LOST_RESPONSE);
    let _ = da.post_json(
        "/payments/v1/transfers",
        &[("Idempotency-Key", "k-1")],
        &transfer(),
    );
    da.post_json(
        "/payments/v1/transfers",
        &[("Idempotency-Key", "k-2")],
        &transfer(),
    )
    .unwrap();
    let r = da.get("/_admin/verify.txt");
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/plain; charset=utf-8"));
    let text = r.text();
    assert!(
        text.starts_with("doubleagent verify: ")
            && text.contains(" finding(s) over 2 ledger entries"),
        "{text}"
    );
    for needle in [
        "\nACC-1  ",
        "\nREC-4  ",
        "POST /payments/v1/transfers key=k-2",
        "expected: ",
    ] {
        assert!(text.contains(needle), "{needle:?} missing from:\n{text}");
    }
    let clean = da.get("/_admin/verify.txt?session=other").text();
    assert!(
        clean.starts_with("doubleagent verify: no findings over 0 ledger entries\n"),
        "{clean}"
    );
}

#[test]
fn an_admin_path_called_with_a_method_it_does_not_take_gets_405_and_allow() {
    let da = Da::start(&payments("", ""));
    let r = da.call("DELETE", "/_admin/ledger", &[], "");
    assert_eq!(r.status, 405, "{}", r.text());
    assert_eq!(r.header("allow"), Some("GET"));
    assert!(r.json()["error"].as_str().unwrap().contains("takes GET"));
    assert_eq!(
        da.call("GET", "/_admin/reset", &[], "").header("allow"),
        Some("POST")
    );
    assert_eq!(
        da.call("GET", "/_admin/nope", &[], "").status,
        404,
        "an unknown path stays 404"
    );
}

#[test]
fn the_openapi_document_states_the_session_name_pattern_and_the_auth_error() {
    let da = Da::start(&payments("", ""));
    let doc = da.get("/_admin/openapi.json").json();
    let ledger = &doc["paths"]["/_admin/ledger"]["get"];
    let session = ledger["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "session")
        .unwrap();
    assert_eq!(session["schema"]["pattern"], "^[A-Za-z0-9._-]{1,64}$");
    assert!(ledger["responses"]["401"].is_object());
    assert!(
        doc["paths"]["/_admin/health"]["get"]["responses"]["401"].is_null(),
        "health needs no token"
    );
}
