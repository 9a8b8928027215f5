//! The MCP endpoint's transport edges, against the real binary: bodies over the cap, batches,
//! methods other than POST, `Last-Event-ID` resumption, request ids (reference: shared
//! reference/mcp.md §A.1–A.4). Rule IDs in the test names (`acct` = ACC-T, the rig itself).

mod common;

use common::*;
use serde_json::{json, Value};

fn scenario(top: &str, server: &str) -> String {
    let base = LOST_RESPONSE.replace(
        "fates = [\"drop-after-apply\", \"respond\"]",
        "fates = [\"respond\"]",
    );
    format!(
        r#"{top}
{base}
[mcp.payments]
{server}

[[mcp.payments.tools]]
name = "create_transfer"
input_schema = {{ type = "object" }}
call = {{ service = "payments", route = "create-transfer" }}
"#
    )
}

const ACCEPT: (&str, &str) = ("accept", "application/json, text/event-stream");

fn rpc(id: Value, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn events(da: &Da, event: &str) -> Vec<Value> {
    da.ledger()
        .into_iter()
        .filter(|e| e["service"] == "mcp/payments" && e["event"] == event)
        .collect()
}

#[test]
fn acct_an_oversized_body_is_a_recorded_json_rpc_refusal_on_413() {
    let da = Da::start(&scenario("max_body_bytes = 256", ""));
    let big = "x".repeat(1024);
    let body = rpc(
        json!(1),
        "tools/call",
        json!({"name": "create_transfer", "arguments": {"note": big}}),
    );
    let r = da.post_json("/mcp/payments", &[ACCEPT], &body).unwrap();
    assert_eq!(r.status, 413, "{}", r.text());
    let v = r.json();
    assert_eq!(v["jsonrpc"], "2.0", "{v}");
    assert_eq!(v["error"]["code"], -32600, "{v}");
    let refused = events(&da, "rpc-error");
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0]["detail"]["http_status"], 413);
}

/// A legacy session of `version`.
fn session(da: &Da, version: &str) -> String {
    let init = rpc(
        json!(0),
        "initialize",
        json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    let r = da.post_json("/mcp/payments", &[ACCEPT], &init).unwrap();
    r.header("mcp-session-id").unwrap().to_string()
}

fn legacy(da: &Da, sid: &str, body: &Value) -> Resp {
    let h = [
        ACCEPT,
        ("mcp-session-id", sid),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    da.post_json("/mcp/payments", &h, body).unwrap()
}

fn resume(da: &Da, sid: &str, last: &str) -> Resp {
    let h = [ACCEPT, ("mcp-session-id", sid), ("last-event-id", last)];
    da.call("GET", "/mcp/payments", &h, "")
}

#[test]
fn rec4_a_resumption_replays_only_what_follows_the_last_event_and_only_its_own_sessions() {
    let src = scenario("", "responses = \"sse\"\nresume = \"replay\"")
        .replace("fates = [\"respond\"]", "fates = [\"drop-after-apply\"]");
    let da = Da::start(&src);
    let sid = session(&da, "2025-11-25");
    let call = rpc(
        json!(1),
        "tools/call",
        json!({"name": "create_transfer", "arguments": {}}),
    );
    legacy(&da, &sid, &call);
    let seq = da
        .ledger()
        .into_iter()
        .find(|e| e["route"] == "create-transfer")
        .unwrap()["seq"]
        .as_u64()
        .unwrap();
    // After the priming event: the answer is replayed.
    let r = resume(&da, &sid, &format!("{seq}-0"));
    assert_eq!(r.status, 200);
    assert!(r.text().contains(&format!("id: {seq}-1")), "{}", r.text());
    // After the answer itself: nothing follows it.
    let r = resume(&da, &sid, &format!("{seq}-1"));
    assert!(!r.text().contains("event: message"), "{}", r.text());
    let resumed = events(&da, "resumed");
    assert_eq!(
        resumed[1]["detail"]["outcome"], "nothing-after",
        "{resumed:?}"
    );
    // Another session naming this stream: not its own, so no target and nothing replayed.
    let other = session(&da, "2025-11-25");
    let r = resume(&da, &other, &format!("{seq}-0"));
    assert_eq!(r.status, 404, "{}", r.text());
    let resumed = events(&da, "resumed");
    assert_eq!(resumed[2]["detail"]["target"], Value::Null, "{resumed:?}");
}

#[test]
fn acct_a_2025_03_26_session_may_batch_and_later_ones_may_not() {
    let da = Da::start(&scenario("", "versions = [\"2025-03-26\", \"2025-11-25\"]"));
    let old = session(&da, "2025-03-26");
    let batch = json!([
        rpc(json!(1), "tools/list", json!({})),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        rpc(json!(2), "ping", json!({})),
        rpc(json!(3), "tools/call", json!({"name": "create_transfer", "arguments": {"to": "a"}})),
    ]);
    let h = [
        ACCEPT,
        ("mcp-session-id", old.as_str()),
        ("mcp-protocol-version", "2025-03-26"),
    ];
    let r = da.post_json("/mcp/payments", &h, &batch).unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    let answers = v.as_array().expect("an array of answers");
    let ids: Vec<&Value> = answers.iter().map(|a| &a["id"]).collect();
    assert_eq!(ids, [&json!(1), &json!(2), &json!(3)], "{v}");
    assert_eq!(answers[0]["result"]["tools"][0]["name"], "create_transfer");
    assert_eq!(answers[2]["result"]["isError"], false, "{v}");
    // Only notifications: 202. Empty: one -32600.
    let notes = json!([{"jsonrpc": "2.0", "method": "notifications/initialized"}]);
    assert_eq!(
        da.post_json("/mcp/payments", &h, &notes).unwrap().status,
        202
    );
    let r = da.post_json("/mcp/payments", &h, &json!([])).unwrap();
    assert_eq!(r.json()["error"]["code"], -32600, "{}", r.text());
    // 2025-06-18 removed batching: a 2025-11-25 session is refused.
    let new = session(&da, "2025-11-25");
    let h = [
        ACCEPT,
        ("mcp-session-id", new.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let r = da.post_json("/mcp/payments", &h, &batch).unwrap();
    assert_eq!(
        (r.status, r.json()["error"]["code"].as_i64()),
        (400, Some(-32600))
    );
}

#[test]
fn acct_a_modern_only_server_answers_get_and_delete_with_a_consistent_405() {
    let da = Da::start(&scenario("", "versions = [\"2026-07-28\"]"));
    for (method, headers) in [
        ("GET", vec![ACCEPT, ("last-event-id", "2-0")]),
        ("GET", vec![ACCEPT]),
        ("DELETE", vec![("mcp-session-id", "payments-1")]),
    ] {
        let r = da.call(method, "/mcp/payments", &headers, "");
        assert_eq!(r.status, 405, "{method}: {}", r.text());
        assert_eq!(r.header("allow"), Some("POST"), "{method}");
        assert!(!r.text().contains("DELETE"), "{method}: {}", r.text());
    }
    // A server that also serves a legacy version takes DELETE.
    let da = Da::start(&scenario("", ""));
    let r = da.call("PUT", "/mcp/payments", &[], "");
    assert_eq!(r.header("allow"), Some("POST, DELETE"));
}

#[test]
fn rec3_an_id_still_in_flight_is_not_reused_and_a_cancel_reaches_the_call_in_flight() {
    let src = scenario("", "cancel = \"honor\"").replace(
        "fates = [\"respond\"]",
        "fates = [\"delay:30s\", \"respond\"]",
    );
    let da = Da::start(&src);
    let sid = session(&da, "2025-11-25");
    let call = rpc(
        json!(5),
        "tools/call",
        json!({"name": "create_transfer", "arguments": {"to": "a"}}),
    );
    let h = [
        ACCEPT,
        ("content-type", "application/json"),
        ("mcp-session-id", sid.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let body = serde_json::to_vec(&call).unwrap();
    // The first call's answer waits 30 s on the scenario clock; its client waits too.
    let _held = send(&da.url, "POST", "/mcp/payments", &h, &body);
    da.wait_for("route=create-transfer", 1);
    let again = rpc(
        json!(5),
        "tools/call",
        json!({"name": "create_transfer", "arguments": {"to": "b"}}),
    );
    let v = legacy(&da, &sid, &again).json();
    assert_eq!(v["error"]["code"], -32600, "{v}");
    let seqs: Vec<u64> = da
        .ledger()
        .into_iter()
        .filter(|e| e["route"] == "create-transfer")
        .map(|e| e["seq"].as_u64().unwrap())
        .collect();
    assert_eq!(seqs.len(), 1, "the repeated id executed nothing");
    let note =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}});
    assert_eq!(legacy(&da, &sid, &note).status, 202);
    let c = &events(&da, "cancelled")[0]["detail"];
    assert_eq!(c["target"], seqs[0], "{c}");
}

#[test]
fn acct_a_task_method_without_mcp_name_is_served_but_recorded() {
    let server = "versions = [\"2026-07-28\"]\n\n[[mcp.payments.tools]]\nname = \"book\"\ninput_schema = { type = \"object\" }\ncall = { service = \"payments\", route = \"create-transfer\" }\ntask = { duration = \"1s\" }";
    let da = Da::start(&scenario("", server));
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}});
    let post = |method: &str, name: Option<&str>, params: Value| {
        let mut h = vec![
            ACCEPT,
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", method),
        ];
        if let Some(n) = name {
            h.push(("mcp-name", n));
        }
        da.post_json("/mcp/payments", &h, &rpc(json!(method), method, params))
            .unwrap()
            .json()
    };
    let v = post(
        "tools/call",
        Some("book"),
        json!({"name": "book", "arguments": {}, "_meta": meta}),
    );
    let task = v["result"]["taskId"].as_str().unwrap().to_string();
    let v = post("tasks/get", None, json!({"taskId": task, "_meta": meta}));
    assert_eq!(v["result"]["status"], "working", "{v}");
    let noted = events(&da, "header-violation");
    assert_eq!(noted.len(), 1, "{noted:?}");
    assert_eq!(noted[0]["detail"]["method"], "tasks/get");
    assert_eq!(noted[0]["detail"]["code"], -32020);
    // Naming another task is refused (strict, the default).
    let v = post(
        "tasks/get",
        Some("other"),
        json!({"taskId": task, "_meta": meta}),
    );
    assert_eq!(v["error"]["code"], -32020, "{v}");
}

#[test]
fn rec4_legacy_task_methods_reach_the_same_tasks_from_any_session() {
    let server = "[[mcp.payments.tools]]\nname = \"book\"\ninput_schema = { type = \"object\" }\ncall = { service = \"payments\", route = \"create-transfer\" }\ntask = { duration = \"1s\" }";
    let da = Da::start(&scenario("", server));
    let a = session(&da, "2025-11-25");
    let call = rpc(
        json!(1),
        "tools/call",
        json!({"name": "book", "arguments": {}, "task": {}}),
    );
    let v = legacy(&da, &a, &call).json();
    let task = v["result"]["task"]["taskId"].clone();
    // A client that re-initialized (its session expired) looks for it from its new session.
    let b = session(&da, "2025-11-25");
    let v = legacy(
        &da,
        &b,
        &rpc(json!(2), "tasks/get", json!({"taskId": task})),
    )
    .json();
    assert_eq!(v["result"]["taskId"], task, "{v}");
    let v = legacy(&da, &b, &rpc(json!(3), "tasks/list", json!({}))).json();
    assert_eq!(v["result"]["tasks"][0]["taskId"], task, "{v}");
}

#[test]
fn acct_a_request_id_is_a_string_or_an_integer_and_a_refusal_says_which_it_was() {
    let da = Da::start(&scenario("", ""));
    for (id, says) in [
        (json!({"a": 1}), "an object"),
        (json!(1.5), "1.5"),
        (Value::Null, "null"),
    ] {
        let body = rpc(id.clone(), "tools/list", json!({}));
        let r = da.post_json("/mcp/payments", &[ACCEPT], &body).unwrap();
        assert_eq!(r.status, 400, "{id}: {}", r.text());
        let v = r.json();
        assert_eq!(v["error"]["code"], -32600, "{id}: {v}");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{id}: {message}");
    }
}

#[test]
fn acct_a_post_that_accepts_neither_answer_or_is_not_json_is_refused_and_recorded() {
    let da = Da::start(&scenario("", ""));
    let init = rpc(
        json!(1),
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    let body = serde_json::to_string(&init).unwrap();
    let cases = [
        (
            ("accept", "text/html"),
            ("content-type", "application/json"),
            406,
        ),
        (ACCEPT, ("content-type", "text/plain"), 415),
        // What a plain client sends is served.
        (
            ("accept", "*/*"),
            ("content-type", "application/json; charset=utf-8"),
            200,
        ),
        (
            ("accept", "text/event-stream"),
            ("content-type", "application/json"),
            200,
        ),
    ];
    for (accept, content_type, status) in cases {
        let r = da.call("POST", "/mcp/payments", &[accept, content_type], &body);
        assert_eq!(
            r.status,
            status,
            "{accept:?} {content_type:?}: {}",
            r.text()
        );
        if status != 200 {
            assert_eq!(r.json()["error"]["code"], -32600, "{}", r.text());
        }
    }
    let refused = events(&da, "rpc-error");
    let statuses: Vec<&Value> = refused
        .iter()
        .map(|e| &e["detail"]["http_status"])
        .collect();
    assert_eq!(statuses, [&json!(406), &json!(415)]);
}
