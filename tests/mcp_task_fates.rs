//! Fates of a task's own methods (issue 28, item 5; the reference's D.2.6): `task.fates` gives
//! `tasks/get`, `tasks/result`, `tasks/cancel` and `tasks/update` each a fate schedule, counted
//! per task. A poll whose answer is lost teaches the client nothing, so the verifier does not
//! count it as reconciliation (REC-4); a cancel acknowledged and not done lets the effect land
//! (REC-3 when believed). Against the real binary, over raw Streamable HTTP.

mod common;

use common::*;
use serde_json::{json, Value};

const VERSION: &str = "2026-07-28";

/// Payments that answer every transfer, and a tool `book` whose calls run as 2 s tasks with the
/// given `fates` table.
fn scenario(fates: &str) -> String {
    let base = LOST_RESPONSE.replace(
        "fates = [\"drop-after-apply\", \"respond\"]",
        "fates = [\"respond\"]",
    );
    format!(
        "{base}\n[mcp.payments]\ncancel = \"honor\"\n[[mcp.payments.tools]]\nname = \"book\"\ninput_schema = {{ type = \"object\" }}\ncall = {{ service = \"payments\", route = \"create-transfer\" }}\ntask = {{ duration = \"2s\", fates = {fates} }}\n"
    )
}

/// A 2026-07-28 request that declares the tasks extension.
fn modern(da: &Da, id: u64, method: &str, mut params: Value) -> std::io::Result<Resp> {
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}});
    let name = params["name"].as_str().unwrap_or("").to_string();
    let h = [
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", VERSION),
        ("mcp-method", method),
        ("mcp-name", name.as_str()),
    ];
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    da.post_json("/mcp/payments", &h, &body)
}

fn book(da: &Da, id: u64) -> Value {
    let args = json!({"to": "acct-9", "amount": 100});
    let r = modern(
        da,
        id,
        "tools/call",
        json!({"name": "book", "arguments": args}),
    );
    r.unwrap().json()
}

fn events(da: &Da, event: &str) -> Vec<Value> {
    da.ledger()
        .into_iter()
        .filter(|e| e["detail"]["event"] == event || e["event"] == event)
        .collect()
}

fn findings(da: &Da, rule: &str) -> Vec<Value> {
    da.get("/_admin/verify").json()["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == rule)
        .cloned()
        .collect()
}

fn transfers(da: &Da) -> Vec<Value> {
    da.ledger()
        .into_iter()
        .filter(|e| e["route"] == "create-transfer")
        .collect()
}

#[test]
fn rec4_a_poll_whose_answer_was_dropped_is_no_reconciliation_and_the_next_poll_answers() {
    let da = Da::start(&scenario(r#"{ get = ["drop-after-apply", "respond"] }"#));
    let task = book(&da, 1);
    let id = task["result"]["taskId"].clone();
    assert_eq!(task["result"]["resultType"], "task", "{task}");
    let first = modern(&da, 2, "tasks/get", json!({"taskId": id}));
    assert!(first.is_err(), "the first poll's answer is lost");
    let polls = events(&da, "task-get");
    assert_eq!(polls.len(), 1, "{polls:?}");
    let detail = &polls[0]["detail"];
    assert_eq!(detail["fate"], "drop-after-apply", "{detail}");
    assert_eq!(detail["answered"], false, "{detail}");

    // Calling the tool again now is a blind re-call: the lost poll taught nothing.
    book(&da, 3);
    let found = findings(&da, "REC-4");
    assert_eq!(found.len(), 1, "{found:?}");

    // The task's next poll is answered (the schedule counts per task).
    let second = modern(&da, 4, "tasks/get", json!({"taskId": id})).unwrap();
    assert_eq!(
        second.json()["result"]["status"],
        "working",
        "{}",
        second.text()
    );
}

#[test]
fn rec3_a_cancel_acknowledged_and_not_done_lets_the_effect_land() {
    let da = Da::start(&scenario(r#"{ cancel = ["respond-without-apply"] }"#));
    let task = book(&da, 1);
    let id = task["result"]["taskId"].clone();
    let cancel = modern(&da, 2, "tasks/cancel", json!({"taskId": id})).unwrap();
    assert!(cancel.json()["result"].is_object(), "{}", cancel.text());
    let c = events(&da, "task-cancel");
    assert_eq!(c[0]["detail"]["outcome"], "lied", "{c:?}");
    da.advance("2s");
    let got = modern(&da, 3, "tasks/get", json!({"taskId": id}))
        .unwrap()
        .json();
    assert_eq!(got["result"]["status"], "completed", "{got}");
    assert_eq!(transfers(&da)[0]["applied"], true);

    let claims =
        json!({"actions": [{"intent": {"to": "acct-9", "amount": 100}, "claim": "cancelled"}]});
    let r = da.post_json("/_admin/claims", &[], &claims).unwrap();
    assert!(r.status < 300, "{}", r.text());
    assert_eq!(findings(&da, "REC-3").len(), 1);
}

#[test]
fn a_cancel_refused_with_a_server_error_leaves_the_task_running() {
    let da = Da::start(&scenario(
        r#"{ cancel = ["error-before-apply:503", "respond"] }"#,
    ));
    let task = book(&da, 1);
    let id = task["result"]["taskId"].clone();
    let refused = modern(&da, 2, "tasks/cancel", json!({"taskId": id})).unwrap();
    assert_eq!(refused.status, 503, "{}", refused.text());
    let body = refused.json();
    assert_eq!(body["error"]["code"], -32603, "{body}");
    assert_eq!(body["id"], 2, "{body}");
    let c = events(&da, "task-cancel");
    assert_eq!(c[0]["detail"]["answered"], false, "{c:?}");
    let got = modern(&da, 3, "tasks/get", json!({"taskId": id}))
        .unwrap()
        .json();
    assert_eq!(got["result"]["status"], "working", "{got}");

    // The second cancel is honoured: nothing applies.
    let ok = modern(&da, 4, "tasks/cancel", json!({"taskId": id})).unwrap();
    assert_eq!(ok.status, 200, "{}", ok.text());
    da.advance("2s");
    assert_eq!(transfers(&da)[0]["applied"], false);
}

#[test]
fn task_method_fates_that_cannot_apply_are_rejected_at_load_with_their_path() {
    for (fates, why) in [
        (r#"{ get = ["apply-later:1s"] }"#, "answers now or never"),
        (
            r#"{ result = ["respond-without-apply"] }"#,
            "belongs to `cancel`",
        ),
        (r#"{ poll = ["respond"] }"#, "unknown"),
    ] {
        let path = temp_file("task-fates.toml", &scenario(fates));
        let out = std::process::Command::new(bin())
            .args(["check", path.to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{fates}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("mcp.payments.tools[0].task.fates"), "{err}");
        assert!(err.contains(why), "{fates}: {err}");
    }
}
