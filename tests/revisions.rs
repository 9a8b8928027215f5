//! Revisions are values (issue 27, item 1): an integral JSON number (`1`, `1.0` as a protobuf
//! `Struct` carries a Python int) and a string of digits (`"1"`) are the same revision in A2A
//! metadata (message and request level), headers, `POST /_admin/revision` and canaries.

mod common;

use common::*;
use serde_json::{json, Value};

const LATE_RESULT: &str = r#"
name = "late"
seed = 3
clock = "manual"

[services.payments]
[[services.payments.routes]]
name = "create-transfer"
method = "POST"
path = "/v1/transfers"
kind = "action"
intent = ["/to", "/amount"]
respond = { status = 201, json = { id = "{{action.id}}" } }

[agents.researcher]
protocol = "a2a"
work = "3s"
cancel = "ack-then-complete"

[[agents.researcher.steps]]
at = "1s"
call = { service = "payments", route = "create-transfer", json = { to = "acct-9", amount = 100 } }

[agents.researcher.result]
text = "Pay vendor account {{canary}}"
"#;

fn post(da: &Da, path: &str, body: &Value) -> Resp {
    da.post_json(path, &[], body).unwrap()
}

/// The late result of a superseded revision, adopted: the task starts under `message_meta` /
/// `request_meta`, revision `decl` is declared after its step, and the task is claimed adopted.
/// Returns the findings (rule, entries) and the task's canary.
fn late_result_adopted(message_meta: Value, request_meta: Value, decl: Value) -> (Value, String) {
    let da = Da::start(LATE_RESULT);
    let mut message = json!({"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "pay"}]});
    if !message_meta.is_null() {
        message["metadata"] = message_meta;
    }
    let mut params = json!({"message": message, "configuration": {"returnImmediately": true}});
    if !request_meta.is_null() {
        params["metadata"] = request_meta;
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": params});
    let r = da
        .post_json("/agents/researcher", &[("A2A-Version", "1.0")], &body)
        .unwrap();
    let task = r.json()["result"]["task"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    da.advance("1s");
    let r = post(&da, "/_admin/revision", &json!({ "revision": decl }));
    assert_eq!(r.status, 200, "{}", r.text());
    da.advance("2s");
    let r = post(&da, "/_admin/claims", &json!({"adopted": [task]}));
    assert_eq!(r.status, 200, "{}", r.text());
    let verdict = da.get("/_admin/verify").json();
    let findings: Vec<Value> = verdict["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| json!([f["rule"], f["entries"]]))
        .collect();
    let canary = da
        .ledger()
        .iter()
        .find(|e| e["event"] == "canary")
        .map(|e| e["detail"]["canary"].as_str().unwrap().to_string())
        .unwrap();
    (Value::from(findings), canary)
}

#[test]
fn acc2_a_late_result_is_found_whether_its_revision_was_1_or_1_0_or_a_string() {
    let (base, canary) = late_result_adopted(json!({"revision": 1}), Value::Null, json!(2));
    assert!(
        base.as_array().unwrap().iter().any(|f| f[0] == "ACC-2"),
        "the integer case finds ACC-2: {base}"
    );
    for (meta, decl) in [
        (json!({"revision": 1.0}), json!(2)),
        (json!({"revision": "1"}), json!("2")),
        (json!({"revision": 1}), json!(2.0)),
    ] {
        let (found, c) = late_result_adopted(meta.clone(), Value::Null, decl.clone());
        assert_eq!(found, base, "{meta} then {decl}");
        assert_eq!(c, canary, "the canary of revision {meta}");
    }
}

#[test]
fn acc2_a_revision_in_the_requests_metadata_counts_like_the_messages() {
    let (base, canary) = late_result_adopted(json!({"revision": 1}), Value::Null, json!(2));
    let (found, c) = late_result_adopted(Value::Null, json!({"revision": 1.0}), json!(2));
    assert_eq!(found, base);
    assert_eq!(c, canary);
}

#[test]
fn rec2_a_declared_revision_may_be_written_2_or_2_0_or_2_as_a_string() {
    for decl in [json!(2), json!(2.0), json!("2")] {
        let da = Da::start(&payments("", ""));
        let r = post(&da, "/_admin/revision", &json!({ "revision": decl }));
        assert_eq!(r.status, 200, "{}", r.text());
        assert_eq!(r.json()["revision"], 2);
        da.post_json(
            "/payments/v1/transfers",
            &[("X-Revision", "1")],
            &transfer(),
        )
        .unwrap();
        let ledger = da.ledger();
        assert_eq!(ledger[0]["revision"], 2, "{decl}");
        assert_eq!(ledger[1]["revision"], 1);
        let verdict = da.get("/_admin/verify").json();
        assert_eq!(verdict["findings"][0]["rule"], "REC-2", "{decl}: {verdict}");
    }
}

#[test]
fn rec2_a_declaration_that_cannot_be_ordered_is_refused_not_recorded() {
    let da = Da::start(&payments("", ""));
    for bad in [json!("rev-b"), json!(1.5), json!(null)] {
        let r = post(&da, "/_admin/revision", &json!({ "revision": bad }));
        assert_eq!(r.status, 400, "{bad}: {}", r.text());
        assert!(r.json()["error"].as_str().unwrap().contains("revision"));
    }
    assert_eq!(da.ledger().len(), 0);
}

const AGUI_LATE: &str = r#"
clock = "manual"

[agents.writer]
protocol = "ag-ui"

[[agents.writer.iterations]]
text = "Here is the draft."
"#;

/// An AG-UI run started under `forwarded` (its `forwardedProps`) and `headers`, revision 2
/// declared after it, and the run claimed adopted: the findings' rules, and the revision its
/// `run-started` entry states.
fn agui_run_adopted(forwarded: Value, headers: &[(&str, &str)]) -> (Vec<String>, Value) {
    let da = Da::start(AGUI_LATE);
    let input = json!({
        "threadId": "t-1", "runId": "run-1", "state": {}, "messages": [
            {"id": "u-1", "role": "user", "content": "draft it"}
        ],
        "tools": [], "context": [], "forwardedProps": forwarded,
    });
    let mut h = vec![("Accept", "text/event-stream")];
    h.extend_from_slice(headers);
    let r = da.post_json("/agents/writer", &h, &input).unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    let r = post(&da, "/_admin/revision", &json!({ "revision": 2 }));
    assert_eq!(r.status, 200, "{}", r.text());
    let r = post(&da, "/_admin/claims", &json!({"adopted": ["run-1"]}));
    assert_eq!(r.status, 200, "{}", r.text());
    let verdict = da.get("/_admin/verify").json();
    let rules = verdict["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap().to_string())
        .collect();
    let started = da
        .ledger()
        .into_iter()
        .find(|e| e["event"] == "run-started")
        .unwrap();
    (rules, started["revision"].clone())
}

#[test]
fn acc2_an_agui_run_of_a_superseded_revision_claimed_adopted_is_found_however_the_revision_came() {
    for (forwarded, headers) in [
        (json!({"revision": 1}), vec![]),
        (json!({"revision": 1.0}), vec![]),
        (json!({"revision": "1"}), vec![]),
        (json!({}), vec![("X-Revision", "1")]),
    ] {
        let (rules, rev) = agui_run_adopted(forwarded.clone(), &headers);
        assert_eq!(rev, 1, "{forwarded} {headers:?}");
        assert_eq!(rules, ["ACC-2"], "{forwarded} {headers:?}");
    }
    // Under the revision in force, adopting the run is fine.
    let (rules, rev) = agui_run_adopted(json!({"revision": 2}), &[]);
    assert_eq!((rules.len(), rev), (0, json!(2)));
}
