//! Revisions and claims declared to a running server: validation (precise 400s), their place in
//! the ledger, and the live verdict at `GET /_admin/verify`.

mod common;

use common::*;
use serde_json::json;

fn post(da: &Da, path: &str, body: &str) -> Resp {
    da.call("POST", path, &[("content-type", "application/json")], body)
}

#[test]
fn rec2_a_declared_revision_is_kept_in_the_ledger_and_governs_later_actions() {
    let da = Da::start(&payments("", ""));
    let r = post(&da, "/_admin/revision", r#"{"revision": 2}"#);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["seq"], 1);
    da.post_json(
        "/payments/v1/transfers",
        &[("X-Revision", "1")],
        &transfer(),
    )
    .unwrap();
    let ledger = da.ledger();
    assert_eq!(ledger[0]["disposition"], "declaration");
    assert_eq!(ledger[0]["event"], "revision");
    assert_eq!(ledger[0]["revision"], 2);
    let report = da.get("/_admin/verify").json();
    assert_eq!(report["clean"], false);
    assert_eq!(report["findings"][0]["rule"], "REC-2");
    assert_eq!(report["findings"][0]["entries"], json!([1, 2]));
}

#[test]
fn a_revision_scoped_to_a_work_id_governs_only_that_work() {
    let da = Da::start(&payments("", ""));
    post(
        &da,
        "/_admin/revision",
        r#"{"revision": 3, "work_id": "w-1"}"#,
    );
    da.post_json(
        "/payments/v1/transfers",
        &[("X-Revision", "1"), ("X-Work-Id", "w-2")],
        &transfer(),
    )
    .unwrap();
    assert_eq!(da.get("/_admin/verify").json()["findings"], json!([]));
    let other = json!({"to": "acct-1", "amount": 1});
    da.post_json(
        "/payments/v1/transfers",
        &[("X-Revision", "1"), ("X-Work-Id", "w-1")],
        &other,
    )
    .unwrap();
    assert_eq!(
        da.get("/_admin/verify").json()["findings"][0]["rule"],
        "REC-2"
    );
}

#[test]
fn malformed_declarations_get_a_precise_400_and_change_nothing() {
    let da = Da::start(&payments("", ""));
    let r = post(&da, "/_admin/revision", r#"{"revison": 2}"#);
    assert_eq!(r.status, 400);
    assert!(
        r.json()["error"]
            .as_str()
            .unwrap()
            .contains("unknown field `revison`"),
        "{}",
        r.text()
    );
    let r = post(
        &da,
        "/_admin/claims",
        r#"{"actions": [{"key": "k-1", "claim": "done"}]}"#,
    );
    assert_eq!(r.status, 400);
    let err = r.json()["error"].as_str().unwrap().to_string();
    assert!(err.contains("actions[0].claim: unknown variant `done`, expected one of `succeeded`, `failed`, `cancelled`, `unknown`"), "{err}");
    let r = post(
        &da,
        "/_admin/claims",
        r#"{"actions": [{"key": "k-1", "work_id": "w", "claim": "failed"}]}"#,
    );
    assert_eq!(r.status, 400);
    assert!(r.json()["error"]
        .as_str()
        .unwrap()
        .contains("exactly one of `key`, `intent` or `work_id`"));
    let r = post(
        &da,
        "/_admin/claims",
        r#"{"tasks": [{"task_id": "t", "claim": "stopped"}]}"#,
    );
    assert_eq!(r.status, 400);
    assert!(r.json()["error"]
        .as_str()
        .unwrap()
        .contains("tasks[0].claim"));
    assert_eq!(
        da.ledger().len(),
        0,
        "nothing recorded from rejected declarations"
    );
}

#[test]
fn acc3_claims_submitted_to_the_server_are_checked_against_the_ledger() {
    let da = Da::start(&payments("", "fates = [\"error-after-apply:500\"]"));
    let r = da
        .post_json(
            "/payments/v1/transfers",
            &[("Idempotency-Key", "k-1")],
            &transfer(),
        )
        .unwrap();
    assert_eq!(r.status, 500);
    let before = da.get("/_admin/verify").json();
    assert_eq!(before["claims"], false);
    assert!(before["notes"][0]
        .as_str()
        .unwrap()
        .contains("no claims were submitted"));
    let r = post(
        &da,
        "/_admin/claims",
        r#"{"actions": [{"intent": {"to": "acct-9", "amount": 100}, "claim": "failed"}]}"#,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let report = da.get("/_admin/verify").json();
    assert_eq!(report["claims"], true);
    assert_eq!(report["findings"][0]["rule"], "ACC-3");
    assert!(report["findings"][0]["summary"]
        .as_str()
        .unwrap()
        .contains("claimed failed but it took effect"));
}
