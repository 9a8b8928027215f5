//! MCP state across a `--journal` restart (kill -9, then the same journal), against the real
//! binary: legacy sessions and tasks of both eras come back from the ledger, so a client holding
//! a session or a task id goes on learning what happened (REC-4: query the authoritative state
//! before retrying), and a task that cannot honestly go on is failed with a recorded entry.

mod common;

use common::*;
use serde_json::{json, Value};

fn scenario() -> String {
    let base = LOST_RESPONSE.replace(
        "fates = [\"drop-after-apply\", \"respond\"]",
        "fates = [\"respond\"]",
    );
    let schema = r#"input_schema = { type = "object" }
call = { service = "payments", route = "create-transfer" }"#;
    format!(
        r#"{base}
[mcp.payments]
cancel = "honor"

[[mcp.payments.tools]]
name = "book"
{schema}
task = {{ duration = "30s", poll_interval = "5s", ttl = "1h", cancel = "honor" }}

[[mcp.payments.tools]]
name = "confirm"
{schema}
task = {{ duration = "10s", input = {{ after = "1s", message = "Go?", schema = {{ type = "object", properties = {{ ok = {{ type = "boolean" }} }} }} }} }}
"#
    )
}

const ACCEPT: (&str, &str) = ("accept", "application/json, text/event-stream");

fn post(da: &Da, headers: &[(&str, &str)], body: &Value) -> Resp {
    let mut h = vec![ACCEPT];
    h.extend_from_slice(headers);
    da.post_json("/mcp/payments", &h, body).unwrap()
}

fn rpc(id: Value, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn legacy(da: &Da, sid: &str, id: i64, method: &str, params: Value) -> Resp {
    let h = [
        ("mcp-session-id", sid),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    post(da, &h, &rpc(json!(id), method, params))
}

fn modern(da: &Da, id: &str, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}});
    let name = params["name"]
        .as_str()
        .or(params["taskId"].as_str())
        .unwrap_or("")
        .to_string();
    let h = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
        ("mcp-name", &name),
    ];
    post(da, &h, &rpc(json!(id), method, params)).json()
}

#[test]
fn rec4_mcp_sessions_and_tasks_survive_a_journaled_restart() {
    let path = temp_file("scenario.toml", &scenario());
    let journal = path.with_file_name("journal.jsonl");
    let start = || {
        Da::start_args(&[
            path.to_str().unwrap(),
            "--journal",
            journal.to_str().unwrap(),
        ])
    };
    let da = start();
    let init = rpc(
        json!(0),
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    let sid = post(&da, &[], &init)
        .header("mcp-session-id")
        .unwrap()
        .to_string();
    let book =
        json!({"name": "book", "arguments": {"to": "a", "amount": 1}, "task": {"ttl": 60000}});
    let v = legacy(&da, &sid, 1, "tools/call", book).json();
    let legacy_id = v["result"]["task"]["taskId"].as_str().unwrap().to_string();
    let asks = json!({"name": "confirm", "arguments": {"to": "b", "amount": 2}, "task": {}});
    let v = legacy(&da, &sid, 2, "tools/call", asks).json();
    let asking_id = v["result"]["task"]["taskId"].as_str().unwrap().to_string();
    let v = modern(
        &da,
        "m1",
        "tools/call",
        json!({"name": "book", "arguments": {"to": "c", "amount": 3}}),
    );
    let modern_id = v["result"]["taskId"].as_str().unwrap().to_string();
    let before = modern(&da, "m2", "tasks/get", json!({"taskId": modern_id}));
    assert_eq!(before["result"]["status"], "working", "{before}");
    // kill -9: nothing is flushed on the way out.
    drop(da);

    let da = start();
    da.advance("60s");
    // The modern task: its effect landed, and tasks/get says so with the result.
    let v = modern(&da, "m3", "tasks/get", json!({"taskId": modern_id}));
    assert_eq!(v["result"]["status"], "completed", "{v}");
    assert_eq!(v["result"]["result"]["isError"], false, "{v}");
    assert_eq!(v["result"]["createdAt"], before["result"]["createdAt"]);
    // The legacy session is still open, and its task's result is there.
    let v = legacy(&da, &sid, 3, "tasks/get", json!({"taskId": legacy_id})).json();
    assert_eq!(v["result"]["status"], "completed", "{v}");
    let v = legacy(&da, &sid, 4, "tasks/result", json!({"taskId": legacy_id})).json();
    assert_eq!(v["result"]["isError"], false, "{v}");
    let v = legacy(&da, &sid, 5, "tasks/list", json!({})).json();
    assert_eq!(v["result"]["tasks"].as_array().unwrap().len(), 2, "{v}");
    // The task waiting for its question's answer cannot go on: failed, and recorded.
    let v = legacy(&da, &sid, 6, "tasks/get", json!({"taskId": asking_id})).json();
    assert_eq!(v["result"]["status"], "failed", "{v}");
    let ledger = da.ledger();
    let interrupted: Vec<&Value> = ledger
        .iter()
        .filter(|e| e["event"] == "task-interrupted")
        .collect();
    assert_eq!(interrupted.len(), 1, "{ledger:?}");
    assert_eq!(interrupted[0]["detail"]["task_id"], asking_id.as_str());
    assert_eq!(interrupted[0]["detail"]["reason"], "restart");
    // Both booked transfers landed once each; a new session gets a fresh id.
    let landed = ledger
        .iter()
        .filter(|e| e["route"] == "create-transfer" && e["applied"] == true)
        .count();
    assert_eq!(landed, 2);
    let again = post(&da, &[], &init)
        .header("mcp-session-id")
        .unwrap()
        .to_string();
    assert_ne!(again, sid);
    // A second restart finds the interrupted task failed already: no second entry.
    drop(da);
    let da = start();
    let v = legacy(&da, &sid, 7, "tasks/get", json!({"taskId": asking_id})).json();
    assert_eq!(v["result"]["status"], "failed", "{v}");
    let ledger = da.ledger();
    let n = ledger
        .iter()
        .filter(|e| e["event"] == "task-interrupted")
        .count();
    assert_eq!(n, 1);
}
