//! The 2026-07-28 era's request checks (SEP-2575), as the official conformance kit holds a
//! server to them: every request, `server/discover` included, carries `_meta` with the protocol
//! version and the client's capabilities (-32602); its headers repeat the body (-32020); an
//! unsupported version is -32022 naming the supported and requested ones; methods the era removed
//! (`initialize`) are unknown there (404, -32601). Each is 400 (404) and recorded as a refusal,
//! never an action (ACC-T).

mod common;

use common::*;
use serde_json::{json, Value};

fn scenario() -> String {
    format!(
        "{LOST_RESPONSE}\n[mcp.payments]\n[[mcp.payments.tools]]\nname = \"pay\"\ncall = {{ service = \"payments\", route = \"create-transfer\" }}\n"
    )
}

fn meta(version: &str) -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}})
}

/// POST one request with the modern headers (`version` in MCP-Protocol-Version).
fn send_modern(da: &Da, version: &str, method: &str, params: Value) -> (u16, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let h = [
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", version),
        ("mcp-method", method),
    ];
    let r = da.post_json("/mcp/payments", &h, &body).unwrap();
    (r.status, r.json())
}

fn refusals(da: &Da) -> Vec<Value> {
    da.ledger()
        .into_iter()
        .filter(|e| e["event"] == "rpc-error")
        .collect()
}

#[test]
fn acct_discover_without_meta_or_its_capabilities_is_refused_400_with_32602() {
    let da = Da::start(&scenario());
    let (status, v) = send_modern(&da, "2026-07-28", "server/discover", json!({}));
    assert_eq!((status, &v["error"]["code"]), (400, &json!(-32602)), "{v}");
    assert_eq!(v["id"], 7, "the error carries the request's id");
    let mut partial = meta("2026-07-28");
    partial
        .as_object_mut()
        .unwrap()
        .remove("io.modelcontextprotocol/clientCapabilities");
    let (status, v) = send_modern(
        &da,
        "2026-07-28",
        "server/discover",
        json!({"_meta": partial}),
    );
    assert_eq!((status, &v["error"]["code"]), (400, &json!(-32602)), "{v}");
    let (status, v) = send_modern(
        &da,
        "2026-07-28",
        "server/discover",
        json!({"_meta": meta("2026-07-28")}),
    );
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["result"]["supportedVersions"], json!(["2026-07-28"]));
    assert_eq!(refusals(&da).len(), 2, "both refusals are recorded");
}

#[test]
fn acct_an_unsupported_version_is_32022_naming_supported_and_requested() {
    let da = Da::start(&scenario());
    let (status, v) = send_modern(
        &da,
        "v999.0.0",
        "server/discover",
        json!({"_meta": meta("v999.0.0")}),
    );
    assert_eq!((status, &v["error"]["code"]), (400, &json!(-32022)), "{v}");
    assert_eq!(v["error"]["data"]["supported"], json!(["2026-07-28"]));
    assert_eq!(v["error"]["data"]["requested"], "v999.0.0");
}

#[test]
fn acct_a_version_header_that_contradicts_meta_is_a_header_mismatch_first() {
    let da = Da::start(&scenario());
    let (status, v) = send_modern(
        &da,
        "2026-07-28",
        "server/discover",
        json!({"_meta": meta("v999.0.0")}),
    );
    assert_eq!((status, &v["error"]["code"]), (400, &json!(-32020)), "{v}");
}

#[test]
fn acct_initialize_from_a_modern_client_is_an_unknown_method_and_a_legacy_one_still_opens_a_session(
) {
    let da = Da::start(&scenario());
    let (status, v) = send_modern(
        &da,
        "2026-07-28",
        "initialize",
        json!({"_meta": meta("2026-07-28")}),
    );
    assert_eq!((status, &v["error"]["code"]), (404, &json!(-32601)), "{v}");

    let legacy = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    let h = [("accept", "application/json, text/event-stream")];
    let r = da.post_json("/mcp/payments", &h, &legacy).unwrap();
    assert_eq!(r.status, 200);
    assert!(r.header("mcp-session-id").is_some());
    assert_eq!(r.json()["result"]["protocolVersion"], "2025-11-25");
}

/// Payments answered at once or refused (`fates`), and task tools: `book` (2 s) and
/// `refusing` (tasks required, its route refusing before anything applies).
fn tasks_scenario() -> String {
    let base = LOST_RESPONSE.replace(
        "fates = [\"drop-after-apply\", \"respond\"]",
        "fates = [\"respond\"]",
    );
    format!(
        r#"{base}
[[services.payments.routes]]
name = "refuse"
method = "POST"
path = "/v1/refuse"
kind = "action"
fates = ["error-before-apply:500"]

[[services.payments.routes]]
name = "keyed"
method = "POST"
path = "/v1/keyed"
kind = "action"
idempotency = {{ required = true }}
fates = ["respond"]

[mcp.payments]
[[mcp.payments.tools]]
name = "book"
input_schema = {{ type = "object" }}
call = {{ service = "payments", route = "create-transfer" }}
task = {{ duration = "2s" }}

[[mcp.payments.tools]]
name = "refusing"
call = {{ service = "payments", route = "refuse" }}
task = {{ support = "required" }}

[[mcp.payments.tools]]
name = "sampled"
input_schema = {{ type = "object" }}
requires = ["sampling"]
call = {{ service = "payments", route = "create-transfer" }}

[[mcp.payments.tools]]
name = "keyless"
call = {{ service = "payments", route = "keyed" }}
task = {{ support = "required" }}

[[mcp.payments.tools]]
name = "ask"
input_schema = {{ type = "object" }}
call = {{ service = "payments", route = "create-transfer" }}
input = {{ key = "user_name", message = "Your name?", schema = {{ type = "object", properties = {{ name = {{ type = "string" }} }} }} }}
"#
    )
}

/// A modern request whose `_meta` declares `caps`, with the headers a router reads (`name`: the
/// Mcp-Name header, if any).
fn declaring(
    da: &Da,
    caps: Value,
    method: &str,
    mut params: Value,
    name: Option<&str>,
) -> (u16, Value) {
    params["_meta"] = meta("2026-07-28");
    params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = caps;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut h = vec![
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
    ];
    if let Some(n) = name {
        h.push(("mcp-name", n));
    }
    let r = da.post_json("/mcp/payments", &h, &body).unwrap();
    (r.status, r.json())
}

/// [`declaring`] the tasks extension.
fn task_call(da: &Da, method: &str, params: Value, name: Option<&str>) -> (u16, Value) {
    let tasks = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    declaring(da, tasks, method, params, name)
}

/// Call `tool` with `args`: it answers with a task, whose id this is.
fn create_task(da: &Da, tool: &str, args: Value) -> String {
    let params = json!({"name": tool, "arguments": args});
    let (_, created) = task_call(da, "tools/call", params, Some(tool));
    assert_eq!(created["result"]["resultType"], "task", "{created}");
    created["result"]["taskId"].as_str().unwrap().to_string()
}

/// The task's `tasks/get` result.
fn task_of(da: &Da, id: &str) -> Value {
    task_call(da, "tasks/get", json!({"taskId": id}), None).1["result"].clone()
}

/// The entries for which `pick` holds.
fn entries_where(da: &Da, pick: impl Fn(&Value) -> bool) -> Vec<Value> {
    da.ledger().into_iter().filter(|e| pick(e)).collect()
}

#[test]
fn rec3_cancelling_a_finished_modern_task_is_acknowledged_and_changes_nothing() {
    let da = Da::start(&tasks_scenario());
    let id = create_task(&da, "book", json!({"to": "a", "amount": 1}));
    da.advance("3s");
    let (status, ack) = task_call(&da, "tasks/cancel", json!({"taskId": id}), Some(&id));
    assert_eq!(status, 200, "{ack}");
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    assert!(ack["result"].get("taskId").is_none(), "an empty ack: {ack}");
    let got = task_of(&da, &id);
    assert_eq!(got["status"], "completed", "{got}");
    let cancels = entries_where(&da, |e| e["event"] == "task-cancel");
    assert_eq!(cancels[0]["detail"]["outcome"], "already-terminal");
}

#[test]
fn acct_a_task_only_tool_refused_before_it_applies_still_answers_with_a_task_that_ends_in_the_error(
) {
    let da = Da::start(&tasks_scenario());
    let id = create_task(&da, "refusing", json!({}));
    let got = task_of(&da, &id);
    assert_eq!(got["status"], "completed", "{got}");
    assert_eq!(got["result"]["isError"], true, "{got}");
    let applied = entries_where(&da, |e| e["route"] == "refuse" && e["applied"] == true);
    assert_eq!(applied.len(), 0, "nothing took effect");
}

#[test]
fn acct_a_task_method_whose_mcp_name_contradicts_its_task_id_is_a_header_mismatch() {
    let da = Da::start(&tasks_scenario());
    let id = create_task(&da, "book", json!({"to": "a", "amount": 1}));
    let (status, v) = task_call(
        &da,
        "tasks/get",
        json!({"taskId": id}),
        Some("another-task"),
    );
    assert_eq!((status, &v["error"]["code"]), (400, &json!(-32020)), "{v}");
    // Without the header (as the official Python client sends it) the task is read.
    let (status, v) = task_call(&da, "tasks/get", json!({"taskId": id}), None);
    assert_eq!(
        (status, &v["result"]["status"]),
        (200, &json!("working")),
        "{v}"
    );
}

#[test]
fn acc1_a_question_under_its_own_key_runs_the_call_once_answered_under_that_key() {
    let da = Da::start(&tasks_scenario());
    let args = json!({"to": "a", "amount": 1});
    let (_, asked) = task_call(
        &da,
        "tools/call",
        json!({"name": "ask", "arguments": args}),
        Some("ask"),
    );
    let request = &asked["result"]["inputRequests"]["user_name"];
    assert_eq!(request["method"], "elicitation/create", "{asked}");
    let state = asked["result"]["requestState"].clone();
    let answer = json!({"user_name": {"action": "accept", "content": {"name": "Alice"}}});
    let params =
        json!({"name": "ask", "arguments": args, "requestState": state, "inputResponses": answer});
    let (_, done) = task_call(&da, "tools/call", params, Some("ask"));
    assert_eq!(done["result"]["isError"], false, "{done}");
    assert_eq!(
        entries_where(&da, |e| e["route"] == "create-transfer").len(),
        1
    );
}

#[test]
fn acct_a_task_only_tool_whose_key_is_refused_answers_with_a_task_that_fails_with_the_error() {
    let da = Da::start(&tasks_scenario());
    let id = create_task(&da, "keyless", json!({}));
    let got = task_of(&da, &id);
    assert_eq!(got["status"], "failed", "{got}");
    assert_eq!(got["error"]["code"], -32602, "{got}");
    assert!(got.get("result").is_none(), "{got}");
    let executed = entries_where(&da, |e| {
        e["route"] == "keyed" && e["disposition"] == "executed"
    });
    assert_eq!(executed.len(), 0, "a refused key executes nothing");
}

#[test]
fn acct_a_tool_that_needs_a_client_capability_refuses_a_call_that_does_not_declare_it_32021() {
    let da = Da::start(&tasks_scenario());
    let call = |caps: Value| {
        let params = json!({"name": "sampled", "arguments": {"to": "a", "amount": 1}});
        declaring(&da, caps, "tools/call", params, Some("sampled"))
    };
    let (status, v) = call(json!({}));
    assert_eq!((status, &v["error"]["code"]), (400, &json!(-32021)), "{v}");
    assert_eq!(
        v["error"]["data"]["requiredCapabilities"],
        json!({"sampling": {}})
    );
    let transfers = || entries_where(&da, |e| e["route"] == "create-transfer").len();
    assert_eq!(transfers(), 0, "refused before it ran");
    let (status, v) = call(json!({"sampling": {}}));
    assert_eq!(
        (status, &v["result"]["isError"]),
        (200, &json!(false)),
        "{v}"
    );
    assert_eq!(transfers(), 1);
}

#[test]
fn acct_an_unknown_required_capability_is_located_and_exits_2() {
    let bad = tasks_scenario().replace("requires = [\"sampling\"]", "requires = [\"smapling\"]");
    let (code, err) = check_scenario(&bad);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("requires[0]: unknown client capability \"smapling\""),
        "{err}"
    );
}
