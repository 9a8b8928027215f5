//! Multi-round-trip requests over MCP (2026-07-28, issue 28 items 1 and 6): a tool with `input`
//! answers `input_required` with its question and a `requestState`; the call runs only when
//! re-sent with the answer, and the rounds that asked are not actions, so the verifier finds no
//! duplicate (ACC-1) or blind retry (REC-4) in a correct exchange.

mod common;

use common::*;
use serde_json::{json, Value};

fn scenario() -> String {
    format!(
        "{}\n[mcp.payments]\n[[mcp.payments.tools]]\nname = \"pay\"\ninput_schema = {{ type = \"object\" }}\ncall = {{ service = \"payments\", route = \"create-transfer\" }}\ninput = {{ message = \"Send 1 to a?\", schema = {{ type = \"object\", properties = {{ ok = {{ type = \"boolean\" }} }} }} }}\n",
        LOST_RESPONSE.replace("fates = [\"drop-after-apply\", \"respond\"]", "fates = [\"respond\"]")
    )
}

fn call(da: &Da, id: u64, extra: Value) -> Value {
    let mut params = json!({"name": "pay", "arguments": {"to": "a", "amount": 1}, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}});
    for (k, v) in extra.as_object().unwrap() {
        params[k] = v.clone();
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params});
    let h = [
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "pay"),
    ];
    da.post_json("/mcp/payments", &h, &body).unwrap().json()
}

fn actions(da: &Da) -> usize {
    da.get("/_admin/ledger?route=create-transfer").json()["entries"]
        .as_array()
        .unwrap()
        .len()
}

#[test]
fn acc1_rec4_a_call_that_asks_first_runs_once_when_re_sent_with_the_answer() {
    let da = Da::start(&scenario());
    let asked = call(&da, 1, json!({}));
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    let ask = &asked["result"]["inputRequests"]["input"];
    assert_eq!(ask["method"], "elicitation/create");
    assert_eq!(ask["params"]["message"], "Send 1 to a?");
    let state = asked["result"]["requestState"].clone();
    assert_eq!(actions(&da), 0, "asking is no action");

    let wrong = call(
        &da,
        2,
        json!({"requestState": "forged", "inputResponses": {}}),
    );
    assert_eq!(wrong["error"]["code"], -32602, "{wrong}");
    let answer = json!({"input": {"action": "accept", "content": {"ok": true}}});
    let done = call(
        &da,
        3,
        json!({"requestState": state, "inputResponses": answer}),
    );
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert_eq!(done["result"]["isError"], false);
    assert_eq!(actions(&da), 1);

    let declined = json!({"input": {"action": "decline"}});
    let no = call(
        &da,
        4,
        json!({"requestState": state, "inputResponses": declined}),
    );
    assert_eq!(no["result"]["isError"], true, "{no}");
    assert_eq!(actions(&da), 1, "a declined round runs nothing");
    let verdict = da.get("/_admin/verify").json();
    let rules: Vec<&str> = verdict["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["rule"].as_str())
        .collect();
    assert!(
        !rules.contains(&"ACC-1") && !rules.contains(&"REC-4"),
        "{verdict}"
    );
}

#[test]
fn acc1_a_request_state_past_its_ttl_is_refused_and_a_fresh_round_runs_once() {
    let scenario = scenario().replace("input = { message", "input = { ttl = \"30s\", message");
    let da = Da::start(&scenario);
    let asked = call(&da, 1, json!({}));
    let state = asked["result"]["requestState"].clone();
    let answer = json!({"input": {"action": "accept", "content": {"ok": true}}});
    da.advance("31s");
    let late = call(
        &da,
        2,
        json!({"requestState": state, "inputResponses": answer}),
    );
    assert_eq!(late["error"]["code"], -32602, "{late}");
    let message = late["error"]["message"].as_str().unwrap();
    assert!(message.contains("requestState has expired"), "{message}");
    assert_eq!(actions(&da), 0, "an expired round runs nothing");

    let again = call(&da, 3, json!({}));
    let fresh = again["result"]["requestState"].clone();
    assert_ne!(fresh, state, "a new round gets a new state");
    let done = call(
        &da,
        4,
        json!({"requestState": fresh, "inputResponses": answer}),
    );
    assert_eq!(done["result"]["isError"], false, "{done}");
    assert_eq!(actions(&da), 1);
}

#[test]
fn a_task_question_with_a_ttl_of_its_own_is_rejected_at_load() {
    let scenario = format!(
        "{}\n[mcp.payments]\n[[mcp.payments.tools]]\nname = \"pay\"\ncall = {{ service = \"payments\", route = \"create-transfer\" }}\ntask = {{ duration = \"10s\", input = {{ message = \"ok?\", ttl = \"5s\" }} }}\n",
        LOST_RESPONSE
    );
    let path = temp_file("task-input-ttl.toml", &scenario);
    let out = std::process::Command::new(bin())
        .args(["check", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("mcp.payments.tools[0].task.input.ttl"),
        "{err}"
    );
    assert!(err.contains("belongs to a call's input"), "{err}");
}
