//! Fake MCP tool servers (issue 28), driven over raw Streamable HTTP against the real binary:
//! both eras' handshakes and checks, tool calls as actions of the route they name (ledger,
//! fates, idempotency), and the refusals. Rule IDs from shared/spec/rules.md are in the test
//! names (`acct` = ACC-T, the rig itself).

mod common;

use common::*;
use serde_json::{json, Value};

/// The issue's `[mcp.payments]` example, verbatim, over the core issue's payments service.
const MCP: &str = r#"
[mcp.payments]                            # an MCP server at /mcp/payments (Streamable HTTP, one endpoint)
versions = ["2025-11-25", "2026-07-28"]   # served side by side (default: both); `initialize` selects the older
cancel = "ignore"                         # a cancelled call still takes effect; "honor": it does not, if not yet applied

[[mcp.payments.tools]]
name = "create_transfer"
description = "Move money to an account."
input_schema = { type = "object", required = ["to", "amount"], properties = { to = { type = "string" }, amount = { type = "integer" }, idempotency_key = { type = "string" } } }
annotations = { idempotentHint = true }   # advertised as written, true or not
call = { service = "payments", route = "create-transfer" }   # the arguments are the body: that route's fates, idempotency and ledger apply
key = "/idempotency_key"                  # where the call's idempotency key is read (a pointer into the arguments)

[[mcp.payments.tools]]
name = "get_transfer"
input_schema = { type = "object", required = ["id"], properties = { id = { type = "string" } } }
annotations = { readOnlyHint = true }
call = { service = "payments", route = "get-transfer", path = { id = "/id" } }
"#;

/// The issue's example: the first transfer is applied and its response lost.
fn issue() -> String {
    format!("{LOST_RESPONSE}{MCP}")
}

/// The same, with every transfer answered (or given `fates`).
fn with_fates(fates: &str) -> String {
    issue().replace(
        "fates = [\"drop-after-apply\", \"respond\"]",
        &format!("fates = {fates}"),
    )
}

const ACCEPT: (&str, &str) = ("accept", "application/json, text/event-stream");

fn post(da: &Da, headers: &[(&str, &str)], body: &Value) -> Result<Resp, std::io::Error> {
    let mut h = vec![ACCEPT];
    h.extend_from_slice(headers);
    da.post_json("/mcp/payments", &h, body)
}

fn rpc(id: Value, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A legacy session: `initialize`, then `notifications/initialized`.
fn session(da: &Da) -> String {
    let init = rpc(
        json!(0),
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    let r = post(da, &[], &init).unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(json_of(&r)["result"]["protocolVersion"], "2025-11-25");
    let sid = r
        .header("mcp-session-id")
        .expect("a session id")
        .to_string();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let h = [("mcp-session-id", sid.as_str())];
    assert_eq!(post(da, &h, &note).unwrap().status, 202);
    sid
}

/// A JSON answer, or the message of a one-event stream.
fn json_of(r: &Resp) -> Value {
    let text = r.text();
    match text.split_once("data: ") {
        Some((_, data)) if text.starts_with("event:") || text.starts_with("id:") => {
            serde_json::from_str(data.trim_end()).unwrap()
        }
        _ => r.json(),
    }
}

/// A legacy `tools/call` in session `sid`.
fn legacy_call(da: &Da, sid: &str, id: i64, tool: &str, args: Value) -> std::io::Result<Resp> {
    let h = [
        ("mcp-session-id", sid),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let body = rpc(
        json!(id),
        "tools/call",
        json!({"name": tool, "arguments": args}),
    );
    post(da, &h, &body)
}

/// A modern request's `_meta`.
fn meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}})
}

/// A modern `tools/call` with its headers.
fn modern_call(da: &Da, id: &str, tool: &str, args: Value) -> std::io::Result<Resp> {
    let h = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", tool),
    ];
    let params = json!({"name": tool, "arguments": args, "_meta": meta()});
    post(da, &h, &rpc(json!(id), "tools/call", params))
}

fn transfers(da: &Da) -> Vec<Value> {
    da.ledger()
        .into_iter()
        .filter(|e| e["route"] == "create-transfer")
        .collect()
}

fn events(da: &Da, event: &str) -> Vec<Value> {
    da.ledger()
        .into_iter()
        .filter(|e| e["service"] == "mcp/payments" && e["event"] == event)
        .collect()
}

#[test]
fn acct_initialize_then_tools_list_advertises_the_tools_as_written() {
    let da = Da::start(&issue());
    let sid = session(&da);
    let h = [("mcp-session-id", sid.as_str())];
    let r = post(&da, &h, &rpc(json!(1), "ping", json!({}))).unwrap();
    assert_eq!(r.json(), json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
    let r = post(&da, &h, &rpc(json!("l"), "tools/list", json!({}))).unwrap();
    let tools = r.json()["result"]["tools"].clone();
    assert_eq!(tools[0]["name"], "create_transfer");
    assert_eq!(tools[0]["description"], "Move money to an account.");
    assert_eq!(tools[0]["inputSchema"]["required"], json!(["to", "amount"]));
    assert_eq!(tools[0]["annotations"], json!({"idempotentHint": true}));
    assert_eq!(tools[1]["annotations"], json!({"readOnlyHint": true}));
    // The handshake is an entry of the server's own, not an action.
    let init = events(&da, "initialize");
    assert_eq!(init[0]["detail"]["session"], sid.as_str());
    assert_eq!(init[0]["actor"], "mcp:payments");
    // DELETE ends the session; it is then unknown (404), and the client must re-initialize.
    let r = da.call("DELETE", "/mcp/payments", &h, "");
    assert_eq!(r.status, 200);
    let r = post(&da, &h, &rpc(json!(2), "ping", json!({}))).unwrap();
    assert_eq!(r.status, 404, "{}", r.text());
}

#[test]
fn rec4_a_tool_call_lands_in_the_ledger_with_its_mcp_facts() {
    let da = Da::start(&with_fates("[\"respond\"]"));
    let sid = session(&da);
    let args = json!({"to": "acct-9", "amount": 100, "idempotency_key": "k-1"});
    let r = legacy_call(&da, &sid, 7, "create_transfer", args).unwrap();
    let v = r.json();
    assert_eq!(v["id"], 7);
    assert_eq!(v["result"]["isError"], false, "{v}");
    assert_eq!(v["result"]["structuredContent"]["status"], "succeeded");
    let t = transfers(&da);
    assert_eq!(t.len(), 1);
    let e = &t[0];
    assert_eq!(
        (e["disposition"].as_str(), e["applied"].as_bool()),
        (Some("executed"), Some(true))
    );
    assert_eq!(e["method"], "POST");
    assert_eq!(e["path"], "/v1/transfers");
    assert_eq!(e["idempotency_key"], "k-1");
    assert_eq!(e["body"]["amount"], 100);
    assert_eq!(
        e["detail"]["mcp"],
        json!({"server": "payments", "tool": "create_transfer", "jsonrpc_id": 7, "era": "legacy",
            "protocol_version": "2025-11-25", "session": sid, "response": "json", "key": "k-1",
            "key_source": {"argument": "/idempotency_key"}})
    );
    // The lookup tool reads the ledger through the route's lookup, by the key as the id.
    let r = legacy_call(&da, &sid, 8, "get_transfer", json!({"id": "k-1"})).unwrap();
    let v = r.json();
    assert_eq!(v["result"]["isError"], false, "{v}");
    assert_eq!(v["result"]["structuredContent"]["state"], "applied", "{v}");
}

#[test]
fn acct_rec4_a_dropped_response_after_the_effect_is_in_the_ledger_and_never_reaches_the_client() {
    let da = Da::start(&issue());
    let sid = session(&da);
    let args = json!({"to": "acct-9", "amount": 100});
    let r = legacy_call(&da, &sid, 1, "create_transfer", args.clone());
    assert!(r.is_err(), "the client must see no response: {r:?}");
    let t = transfers(&da);
    assert_eq!(t.len(), 1);
    assert_eq!(t[0]["applied"], true);
    assert_eq!(t[0]["response"]["delivery"], "dropped");
    assert_eq!(t[0]["detail"]["mcp"]["jsonrpc_id"], 1);
    // A re-call without a key (what the 2026 spec tells a client to do) executes again: the
    // ledger shows the same intent applied twice (ACC-1), which is what the verifier judges.
    let r = legacy_call(&da, &sid, 2, "create_transfer", args).unwrap();
    assert_eq!(r.json()["result"]["isError"], false);
    let applied = transfers(&da)
        .iter()
        .filter(|e| e["applied"] == true)
        .count();
    assert_eq!(applied, 2);
}

#[test]
fn acc1_the_same_key_retried_after_a_drop_is_replayed_not_executed_again() {
    let da = Da::start(&issue());
    let args = json!({"to": "acct-9", "amount": 100, "idempotency_key": "k-7"});
    assert!(modern_call(&da, "a", "create_transfer", args.clone()).is_err());
    let r = modern_call(&da, "b", "create_transfer", args).unwrap();
    let v = r.json();
    assert_eq!(v["result"]["resultType"], "complete");
    assert_eq!(v["result"]["isError"], false, "{v}");
    let t = transfers(&da);
    assert_eq!(t.len(), 2);
    assert_eq!(t[1]["disposition"], "replayed");
    assert_eq!(t[1]["replay_of"], t[0]["seq"]);
    assert_eq!(t[1]["detail"]["mcp"]["era"], "modern");
    assert_eq!(t[1]["detail"]["mcp"]["jsonrpc_id"], "b");
    // The replay is the stored answer of the first execution: the same transfer id.
    assert_eq!(
        v["result"]["structuredContent"]["id"],
        format!("act_{}", t[0]["seq"])
    );
    // The same key with other arguments is refused as the route's policy says (Stripe: 400).
    let other = json!({"to": "acct-9", "amount": 999, "idempotency_key": "k-7"});
    let v = modern_call(&da, "c", "create_transfer", other)
        .unwrap()
        .json();
    assert_eq!(
        v["error"]["data"]["type"], "idempotency_key_conflict",
        "{v}"
    );
    assert_eq!(transfers(&da)[2]["disposition"], "mismatch");
}

#[test]
fn acc1_a_lie_reports_is_error_though_the_effect_happened() {
    let da = Da::start(&with_fates("[\"error-after-apply:500\"]"));
    let args = json!({"to": "acct-9", "amount": 100});
    let v = modern_call(&da, "a", "create_transfer", args)
        .unwrap()
        .json();
    assert_eq!(v["result"]["isError"], true, "{v}");
    assert!(v["result"].get("structuredContent").is_none());
    assert_eq!(transfers(&da)[0]["applied"], true);
}

#[test]
fn rec4_a_delayed_answer_waits_on_the_scenario_clock() {
    let da = Da::start(&with_fates("[\"delay:5s\"]"));
    let params =
        json!({"name": "create_transfer", "arguments": {"to": "a", "amount": 1}, "_meta": meta()});
    let body = rpc(json!("d"), "tools/call", params).to_string();
    let headers = [
        ACCEPT,
        ("content-type", "application/json"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "create_transfer"),
    ];
    let s = send(&da.url, "POST", "/mcp/payments", &headers, body.as_bytes());
    da.wait_for("route=create-transfer", 1);
    da.advance("5s");
    let r = read_response(s).unwrap();
    assert_eq!(r.json()["result"]["isError"], false);
}

#[test]
fn envelopes_are_told_apart_and_malformed_ones_refused() {
    let da = Da::start(&issue());
    let raw = |h: &[(&str, &str)], body: &str| {
        let mut headers = vec![ACCEPT, ("content-type", "application/json")];
        headers.extend_from_slice(h);
        da.req("POST", "/mcp/payments", &headers, body).unwrap()
    };
    let sid = session(&da);
    let h = [("mcp-session-id", sid.as_str())];
    let r = raw(&h, r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#);
    assert_eq!((r.status, json_of(&r)["id"].clone()), (200, json!(7)));
    let note = raw(
        &h,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    );
    assert_eq!(note.status, 202);
    let resp = raw(&h, r#"{"jsonrpc":"2.0","id":"s1","result":{}}"#);
    assert_eq!(resp.status, 202);
    assert!(events(&da, "rpc-error").is_empty());
    let bad = |b: &str| json_of(&raw(&h, b))["error"]["code"].as_i64().unwrap();
    assert_eq!(bad("{nope"), -32700);
    assert_eq!(bad(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#), -32600);
    assert_eq!(
        bad(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#),
        -32600
    );
    assert_eq!(bad(r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#), -32600);
    assert_eq!(
        bad(r#"{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}"#),
        -32600
    );
    // An error carries its code, status and data, and echoes a string id.
    let mut m = meta();
    m["io.modelcontextprotocol/protocolVersion"] = "2030-01-01".into();
    let h = [
        ("mcp-protocol-version", "2030-01-01"),
        ("mcp-method", "tools/list"),
    ];
    let r = post(&da, &h, &rpc(json!("a"), "tools/list", json!({"_meta": m}))).unwrap();
    assert_eq!(r.status, 400);
    let b = r.json();
    assert_eq!(b["error"]["code"], -32022);
    assert_eq!(b["error"]["data"]["supported"][0], "2026-07-28");
    assert_eq!(b["id"], "a");
}

#[test]
fn bad_requests_get_json_rpc_errors_and_are_recorded_as_refusals() {
    let da = Da::start(&issue());
    // Not JSON: -32700 on 400.
    let r = da
        .req(
            "POST",
            "/mcp/payments",
            &[ACCEPT, ("content-type", "application/json")],
            "{nope",
        )
        .unwrap();
    assert_eq!(r.status, 400);
    assert_eq!(r.json()["error"]["code"], -32700);
    // An unknown session: 404.
    let r = legacy_call(&da, "payments-99", 1, "create_transfer", json!({})).unwrap();
    assert_eq!(r.status, 404, "{}", r.text());
    // Modern: a missing Mcp-Name header is -32020 on 400; an unknown version -32022.
    let params =
        json!({"name": "create_transfer", "arguments": {"to": "a", "amount": 1}, "_meta": meta()});
    let h = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
    ];
    let r = post(&da, &h, &rpc(json!(3), "tools/call", params)).unwrap();
    assert_eq!(
        (r.status, r.json()["error"]["code"].as_i64()),
        (400, Some(-32020))
    );
    let mut m = meta();
    m["io.modelcontextprotocol/protocolVersion"] = "2031-01-01".into();
    let h = [
        ("mcp-protocol-version", "2031-01-01"),
        ("mcp-method", "tools/list"),
    ];
    let r = post(&da, &h, &rpc(json!(4), "tools/list", json!({"_meta": m}))).unwrap();
    let v = r.json();
    assert_eq!((r.status, v["error"]["code"].as_i64()), (400, Some(-32022)));
    assert_eq!(v["error"]["data"]["supported"], json!(["2026-07-28"]));
    // An unknown tool is a protocol error.
    let v = modern_call(&da, "5", "wire_money", json!({}))
        .unwrap()
        .json();
    assert_eq!(v["error"]["code"], -32602);
    assert_eq!(v["error"]["message"], "Unknown tool: wire_money");
    // Each refusal is recorded; none is an action.
    let refused = events(&da, "rpc-error");
    let codes: Vec<i64> = refused
        .iter()
        .map(|e| e["detail"]["code"].as_i64().unwrap())
        .collect();
    assert_eq!(codes, [-32700, -32600, -32020, -32022, -32602]);
    assert!(transfers(&da).is_empty());
}

#[test]
fn invalid_arguments_are_a_tool_error_and_nothing_is_executed() {
    let da = Da::start(&issue());
    let v = modern_call(&da, "a", "create_transfer", json!({"to": 5}))
        .unwrap()
        .json();
    assert_eq!(v["result"]["isError"], true, "{v}");
    let text = v["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("missing required property \"amount\""),
        "{text}"
    );
    assert!(
        text.contains("/to: expected string, found integer"),
        "{text}"
    );
    assert_eq!(events(&da, "invalid-arguments").len(), 1);
    assert!(transfers(&da).is_empty());
}

#[test]
fn modern_discover_names_the_served_version() {
    let da = Da::start(&issue());
    let h = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "server/discover"),
    ];
    let r = post(
        &da,
        &h,
        &rpc(json!("p"), "server/discover", json!({"_meta": meta()})),
    )
    .unwrap();
    let v = r.json();
    assert_eq!(
        v["result"]["supportedVersions"],
        json!(["2026-07-28"]),
        "{v}"
    );
    assert_eq!(v["result"]["resultType"], "complete");
    assert_eq!(
        v["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "payments"
    );
    // `ping` is gone from the modern era: -32601 on 404.
    let h = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "ping"),
    ];
    let r = post(&da, &h, &rpc(json!("q"), "ping", json!({"_meta": meta()}))).unwrap();
    assert_eq!(
        (r.status, r.json()["error"]["code"].as_i64()),
        (404, Some(-32601))
    );
}

#[test]
fn a_bad_mcp_scenario_is_rejected_with_its_location() {
    let bad = issue().replace(
        "route = \"get-transfer\", path",
        "route = \"get-transfr\", path",
    );
    let path = temp_file("bad.toml", &bad);
    let out = std::process::Command::new(bin())
        .args(["check", "bad.toml"])
        .current_dir(path.parent().unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("bad.toml:40:32: mcp.payments.tools[1].call.route: no route named \"get-transfr\" in service \"payments\"; did you mean `get-transfer`?"),
        "{err}"
    );
}

#[test]
fn rec4_a_reset_fate_resets_the_mcp_connection_after_the_effect() {
    let da = Da::start(&with_fates("[\"reset-after-apply\"]"));
    let args = json!({"to": "acct-9", "amount": 100});
    let err = modern_call(&da, "r", "create_transfer", args).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::ConnectionReset, "{err}");
    let t = transfers(&da);
    assert_eq!(
        (
            t[0]["applied"].as_bool(),
            t[0]["response"]["delivery"].as_str()
        ),
        (Some(true), Some("reset"))
    );
}

#[test]
fn acc1_a_blind_re_call_after_a_drop_is_found_by_the_verifier_like_an_http_retry() {
    let da = Da::start(&issue());
    let args = json!({"to": "acct-9", "amount": 100});
    assert!(modern_call(&da, "a", "create_transfer", args.clone()).is_err());
    modern_call(&da, "b", "create_transfer", args).unwrap();
    let report = da.get("/_admin/verify").json();
    let rules: Vec<&str> = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["rule"].as_str())
        .collect();
    assert!(rules.contains(&"ACC-1"), "{report}");
}

#[test]
fn rec2_the_work_id_and_revision_headers_reach_the_action() {
    let da = Da::start(&with_fates("[\"respond\"]"));
    let params =
        json!({"name": "create_transfer", "arguments": {"to": "a", "amount": 1}, "_meta": meta()});
    let h = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "create_transfer"),
        ("x-work-id", "task-3"),
        ("x-revision", "2"),
    ];
    post(&da, &h, &rpc(json!(1), "tools/call", params)).unwrap();
    let t = transfers(&da);
    assert_eq!(
        (t[0]["work_id"].as_str(), t[0]["revision"].as_i64()),
        (Some("task-3"), Some(2))
    );
}

#[test]
fn the_ready_line_names_the_mcp_endpoint_and_an_sse_only_client_gets_an_event_stream() {
    let da = Da::start(&with_fates("[\"respond\"]"));
    assert_eq!(
        da.ready["mcp"]["payments"],
        format!("{}/mcp/payments", da.url)
    );
    let init = rpc(
        json!(0),
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}}),
    );
    let r = da
        .req(
            "POST",
            "/mcp/payments",
            &[
                ("accept", "text/event-stream"),
                ("content-type", "application/json"),
            ],
            &init.to_string(),
        )
        .unwrap();
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    let text = r.text();
    let data = text
        .strip_prefix("event: message\ndata: ")
        .unwrap()
        .trim_end();
    let v: Value = serde_json::from_str(data).unwrap();
    // A version this server does not serve is answered with the newest legacy one it does.
    assert_eq!(v["result"]["protocolVersion"], "2025-11-25");
}

#[test]
fn rec4_the_shipped_scenario_loses_the_first_response_and_a_lookup_tells_the_truth() {
    let da = Da::start_file("mcp-lost-response.toml");
    let sid = session(&da);
    let args = json!({"to": "acct-9", "amount": 100, "idempotency_key": "pay-1"});
    assert!(legacy_call(&da, &sid, 1, "create_transfer", args).is_err());
    let v = legacy_call(&da, &sid, 2, "get_transfer", json!({"id": "pay-1"}))
        .unwrap()
        .json();
    assert_eq!(v["result"]["structuredContent"]["state"], "applied", "{v}");
    let report = da.get("/_admin/verify").json();
    assert_eq!(report["findings"], json!([]), "{report}");
}

#[test]
fn rec4_a_lookup_tool_finds_an_action_whose_key_a_url_must_encode() {
    let da = Da::start_file("mcp-lost-response.toml");
    let sid = session(&da);
    for (n, key) in ["pay/1", "x y%", "a%2Bb", "ключ"].into_iter().enumerate() {
        let n = n as i64 * 2;
        let args = json!({"to": "acct-9", "amount": 100, "idempotency_key": key});
        // The shipped scenario loses the first response: the effect stands either way.
        let _ = legacy_call(&da, &sid, n + 1, "create_transfer", args);
        let v = legacy_call(&da, &sid, n + 2, "get_transfer", json!({"id": key}))
            .unwrap()
            .json();
        let found = &v["result"]["structuredContent"];
        assert_eq!(found["state"], "applied", "{key}: {v}");
        assert_eq!(found["idempotency_key"], key, "{v}");
    }
}

#[test]
fn malformed_input_of_every_kind_is_answered_and_never_crashes_the_server() {
    let da = Da::start(&issue());
    let sid = session(&da);
    let bodies = [
        "",
        "null",
        "[]",
        "\"x\"",
        "{}",
        r#"{"jsonrpc":"2.0"}"#,
        r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":7}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_transfer","arguments":[1]}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_transfer","arguments":{"id":"a/b"}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_transfer","arguments":{"id":{"x":1}}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_transfer","arguments":{"to":"a","amount":1,"idempotency_key":"a\u0001b"}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_transfer","arguments":{"to":"a","amount":1,"idempotency_key":[]}}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":5}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":"x"}}"#,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":7}}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":[]}}"#,
    ];
    let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    let header_sets: [&[(&str, &str)]; 3] = [
        &[],
        &[("mcp-session-id", &sid), ("mcp-protocol-version", "bogus")],
        &[
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "=?base64?!!?="),
            ("mcp-name", ""),
        ],
    ];
    for headers in header_sets {
        for body in bodies.iter().copied().chain([deep.as_str()]) {
            let mut h = vec![ACCEPT, ("content-type", "application/json")];
            h.extend_from_slice(headers);
            let r = da.req("POST", "/mcp/payments", &h, body);
            let r = r.unwrap_or_else(|e| panic!("no answer to {body:?} with {headers:?}: {e}"));
            assert!(r.status < 500, "{body:?}: {} {}", r.status, r.text());
        }
    }
    // Non-UTF-8 header values, and other methods.
    let raw = b"POST /mcp/payments HTTP/1.1\r\nHost: x\r\nConnection: close\r\nmcp-session-id: \xff\xfe\r\nContent-Length: 40\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}";
    assert_eq!(raw_request(&da.url, raw).unwrap().status, 404);
    assert_eq!(da.call("GET", "/mcp/payments", &[], "").status, 405);
    assert_eq!(da.call("POST", "/mcp/nobody", &[], "{}").status, 404);
    // Still serving.
    let h = [("mcp-session-id", sid.as_str())];
    let r = post(&da, &h, &rpc(json!(9), "ping", json!({}))).unwrap();
    assert_eq!(r.status, 200);
}

/// The issue's example answering over event streams, with the given fates.
fn sse_with_fates(fates: &str) -> String {
    with_fates(fates).replace(
        "cancel = \"ignore\" ",
        "responses = \"sse\"\ncancel = \"ignore\" ",
    )
}

fn modern_headers(tool: &str) -> Vec<(&str, &str)> {
    vec![
        ACCEPT,
        ("content-type", "application/json"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", tool),
    ]
}

fn modern_body(id: &str, tool: &str, args: Value) -> String {
    let params = json!({"name": tool, "arguments": args, "_meta": meta()});
    rpc(json!(id), "tools/call", params).to_string()
}

#[test]
fn acct_rec4_an_sse_answer_dropped_after_the_effect_is_cut_off_after_its_headers() {
    let da = Da::start(&sse_with_fates("[\"drop-after-apply\", \"respond\"]"));
    let args = json!({"to": "acct-9", "amount": 100});
    let body = modern_body("a", "create_transfer", args.clone());
    let h = modern_headers("create_transfer");
    let s = send(&da.url, "POST", "/mcp/payments", &h, body.as_bytes());
    let r = read_response(s).unwrap();
    assert_eq!(r.status, 200);
    assert_eq!(r.header("content-type"), Some("text/event-stream"));
    // Not one event, and no end of the chunked body: the stream was cut, not finished.
    assert!(!r.text().contains("data:"), "{}", r.text());
    assert!(!r.text().ends_with("0\r\n\r\n"), "{:?}", r.text());
    let t = transfers(&da);
    assert_eq!(
        (
            t[0]["applied"].as_bool(),
            t[0]["response"]["delivery"].as_str()
        ),
        (Some(true), Some("dropped"))
    );
    assert_eq!(t[0]["detail"]["mcp"]["response"], "sse");
    // The next answer is a whole stream with the result in one `message` event.
    let body = modern_body("b", "create_transfer", args);
    let r = send(&da.url, "POST", "/mcp/payments", &h, body.as_bytes());
    // An answer ready at once goes whole, with its length.
    let text = read_response(r).unwrap().text();
    assert!(text.starts_with("event: message\ndata: {"), "{text}");
    let v: Value = serde_json::from_str(text["event: message\ndata: ".len()..].trim_end()).unwrap();
    assert_eq!(v["result"]["isError"], false);
}

#[test]
fn acct_a_delayed_sse_answer_holds_the_open_stream_until_the_clock_moves() {
    let da = Da::start(&sse_with_fates("[\"delay:10s\"]"));
    let body = modern_body("a", "create_transfer", json!({"to": "a", "amount": 1}));
    let mut s = send(
        &da.url,
        "POST",
        "/mcp/payments",
        &modern_headers("create_transfer"),
        body.as_bytes(),
    );
    let head = read_until(&mut s, "\r\n\r\n");
    assert!(String::from_utf8_lossy(&head).contains("text/event-stream"));
    da.advance("10s");
    let mut rest = Vec::new();
    std::io::Read::read_to_end(&mut s, &mut rest).unwrap();
    let all = [head, rest].concat();
    let at = all.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    let text = String::from_utf8(dechunk(&all[at..])).unwrap();
    assert!(text.contains("\"isError\":false"), "{text}");
}

#[test]
fn acc1_rec4_a_key_from_meta_or_params_is_honoured_like_one_from_an_argument() {
    let src = issue()
        .replace(
            "key = \"/idempotency_key\"",
            "key = { params = \"idempotencyKey\" }",
        )
        .replace(
            "name = \"get_transfer\"",
            "name = \"get_transfer\"\nkey = { meta = \"dev.doubleagent/idempotencyKey\" }",
        );
    let da = Da::start(&src);
    // SEP-3182's capability is advertised once a tool takes its key from params.
    let h = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "server/discover"),
    ];
    let v = post(
        &da,
        &h,
        &rpc(json!(0), "server/discover", json!({"_meta": meta()})),
    )
    .unwrap()
    .json();
    assert_eq!(
        v["result"]["capabilities"]["tools"]["idempotency"],
        json!({}),
        "{v}"
    );
    let call = |id: &str, extra: Value| {
        let mut params = json!({"name": "create_transfer", "arguments": {"to": "a", "amount": 1}, "_meta": meta()});
        params
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        post(
            &da,
            &modern_headers("create_transfer")[2..],
            &rpc(json!(id), "tools/call", params),
        )
    };
    assert!(call("a", json!({"idempotencyKey": "p-1"})).is_err());
    let v = call("b", json!({"idempotencyKey": "p-1"})).unwrap().json();
    assert_eq!(v["result"]["isError"], false, "{v}");
    let t = transfers(&da);
    assert_eq!(t[1]["disposition"], "replayed");
    assert_eq!(
        t[1]["detail"]["mcp"]["key_source"],
        json!({"params": "idempotencyKey"})
    );
    // A lookup whose key rides in _meta: recorded with its source.
    let mut m = meta();
    m["dev.doubleagent/idempotencyKey"] = "m-1".into();
    let params = json!({"name": "get_transfer", "arguments": {"id": "p-1"}, "_meta": m});
    post(
        &da,
        &modern_headers("get_transfer")[2..],
        &rpc(json!("c"), "tools/call", params),
    )
    .unwrap();
    let e = da
        .ledger()
        .into_iter()
        .find(|e| e["route"] == "get-transfer")
        .unwrap();
    assert_eq!(e["detail"]["mcp"]["key"], "m-1");
    assert_eq!(
        e["detail"]["mcp"]["key_source"],
        json!({"meta": "dev.doubleagent/idempotencyKey"})
    );
}

#[test]
fn rec4_tool_calls_and_refusals_survive_a_journaled_restart_and_the_key_still_replays() {
    let scenario = temp_file("scenario.toml", &issue());
    let journal = scenario.with_file_name("journal.jsonl");
    let start = || {
        Da::start_args(&[
            scenario.to_str().unwrap(),
            "--journal",
            journal.to_str().unwrap(),
        ])
    };
    let da = start();
    let args = json!({"to": "acct-9", "amount": 100, "idempotency_key": "j-1"});
    assert!(modern_call(&da, "a", "create_transfer", args.clone()).is_err());
    modern_call(&da, "b", "wire_money", json!({})).unwrap();
    let before = da.ledger();
    assert_eq!(da.terminate().code(), Some(0));
    let da = start();
    assert_eq!(da.ledger(), before);
    // The stored answer survived: the same key replays instead of moving the money again.
    let v = modern_call(&da, "c", "create_transfer", args)
        .unwrap()
        .json();
    assert_eq!(v["result"]["isError"], false, "{v}");
    assert_eq!(transfers(&da)[1]["disposition"], "replayed");
}

/// `notifications/cancelled` for request `id` of session `sid`.
fn cancel_note(da: &Da, sid: &str, id: i64) {
    let note = json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": id, "reason": "timeout"}});
    let h = [("mcp-session-id", sid)];
    assert_eq!(post(da, &h, &note).unwrap().status, 202);
}

#[test]
fn rec3_a_cancel_under_honor_stops_a_pending_effect_and_under_ignore_it_still_applies() {
    for (policy, outcome, applied) in [("honor", "cancelled", false), ("ignore", "ignored", true)] {
        let src = with_fates("[\"apply-later:10s\"]")
            .replace("cancel = \"ignore\"", &format!("cancel = \"{policy}\""));
        let da = Da::start(&src);
        let sid = session(&da);
        let args = json!({"to": "acct-9", "amount": 100, "idempotency_key": "c-1"});
        let v = legacy_call(&da, &sid, 1, "create_transfer", args)
            .unwrap()
            .json();
        assert_eq!(v["result"]["structuredContent"]["status"], "pending", "{v}");
        cancel_note(&da, &sid, 1);
        let note = &events(&da, "cancelled")[0]["detail"];
        assert_eq!(
            (note["policy"].as_str(), note["outcome"].as_str()),
            (Some(policy), Some(outcome))
        );
        assert_eq!(note["target"], transfers(&da)[0]["seq"]);
        da.advance("10s");
        assert_eq!(transfers(&da)[0]["applied"], applied, "{policy}");
    }
    // Too late once the effect has happened; unknown for a request it never saw.
    let src = with_fates("[\"respond\"]").replace("cancel = \"ignore\"", "cancel = \"honor\"");
    let da = Da::start(&src);
    let sid = session(&da);
    legacy_call(
        &da,
        &sid,
        1,
        "create_transfer",
        json!({"to": "a", "amount": 1}),
    )
    .unwrap();
    cancel_note(&da, &sid, 1);
    cancel_note(&da, &sid, 99);
    let outcomes: Vec<Value> = events(&da, "cancelled")
        .iter()
        .map(|e| e["detail"]["outcome"].clone())
        .collect();
    assert_eq!(outcomes, [json!("too-late"), json!("unknown")]);
}

#[test]
fn a_result_that_does_not_fit_the_output_schema_is_sent_and_noted() {
    let src = with_fates("[\"respond\"]").replace(
        "annotations = { idempotentHint = true }",
        "annotations = { idempotentHint = true }\noutput_schema = { type = \"object\", required = [\"id\", \"amount\"] }",
    );
    let da = Da::start(&src);
    let v = modern_call(&da, "a", "create_transfer", json!({"to": "a", "amount": 1}))
        .unwrap()
        .json();
    assert_eq!(
        v["result"]["structuredContent"]["status"], "succeeded",
        "{v}"
    );
    let noted = events(&da, "output-mismatch");
    assert_eq!(
        noted[0]["detail"]["problems"],
        json!(["/: missing required property \"amount\""])
    );
    assert_eq!(noted[0]["detail"]["action"], transfers(&da)[0]["seq"]);
    let h = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/list"),
    ];
    let v = post(
        &da,
        &h,
        &rpc(json!(1), "tools/list", json!({"_meta": meta()})),
    )
    .unwrap()
    .json();
    assert_eq!(
        v["result"]["tools"][0]["outputSchema"]["required"],
        json!(["id", "amount"])
    );
}

#[test]
fn a_lenient_server_serves_a_header_mismatch_and_records_it() {
    let src = with_fates("[\"respond\"]").replace(
        "cancel = \"ignore\"",
        "headers = \"lenient\"\ncancel = \"ignore\"",
    );
    let da = Da::start(&src);
    let params =
        json!({"name": "create_transfer", "arguments": {"to": "a", "amount": 1}, "_meta": meta()});
    // No Mcp-Name, and a Mcp-Method that names another method.
    let h = [
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/list"),
    ];
    let v = post(&da, &h, &rpc(json!(1), "tools/call", params))
        .unwrap()
        .json();
    assert_eq!(v["result"]["isError"], false, "{v}");
    let noted: Vec<Value> = events(&da, "header-violation")
        .iter()
        .map(|e| e["detail"]["message"].clone())
        .collect();
    assert_eq!(noted.len(), 2, "{noted:?}");
    assert!(
        noted[0].as_str().unwrap().contains("Mcp-Method"),
        "{noted:?}"
    );
    assert!(noted[1].as_str().unwrap().contains("Mcp-Name"), "{noted:?}");
    assert_eq!(transfers(&da).len(), 1);
}

#[test]
fn rec3_a_client_that_closes_a_delayed_sse_stream_leaves_its_call_abandoned() {
    let da = Da::start(&sse_with_fates("[\"delay:10s\"]"));
    let body = modern_body("a", "create_transfer", json!({"to": "a", "amount": 1}));
    let h = modern_headers("create_transfer");
    let mut s = send(&da.url, "POST", "/mcp/payments", &h, body.as_bytes());
    read_until(&mut s, "\r\n\r\n");
    drop(s);
    // Recorded when the client goes, not when the clock would have released the answer.
    let e = da.wait_for("route=create-transfer&since=0", 1);
    assert_eq!(e[0]["applied"], true);
    for _ in 0..100 {
        if transfers(&da)[0]["response"]["delivery"] == "abandoned" {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("not abandoned: {}", transfers(&da)[0]);
}

#[test]
fn acct_a_streamed_call_that_asks_for_progress_hears_it_before_a_delay_or_a_cut() {
    for (fates, cut) in [("[\"delay:10s\"]", false), ("[\"drop-after-apply\"]", true)] {
        let da = Da::start(&sse_with_fates(fates));
        let params = json!({"name": "create_transfer", "arguments": {"to": "a", "amount": 1},
            "_meta": {"progressToken": "p-7", "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {}}});
        let body = rpc(json!("a"), "tools/call", params).to_string();
        let h = modern_headers("create_transfer");
        let mut s = send(&da.url, "POST", "/mcp/payments", &h, body.as_bytes());
        let seen = String::from_utf8(read_until(&mut s, "\"p-7\"")).unwrap();
        assert!(seen.contains("notifications/progress"), "{seen}");
        if !cut {
            da.advance("10s");
        }
        let mut rest = Vec::new();
        std::io::Read::read_to_end(&mut s, &mut rest).unwrap();
        let rest = String::from_utf8_lossy(&rest);
        assert_eq!(rest.contains("\"isError\":false"), !cut, "{fates}: {rest}");
    }
}

#[test]
fn run_exports_each_mcp_endpoint_beside_its_service() {
    let scenario = temp_file("scenario.toml", &with_fates("[\"respond\"]"));
    let out = std::process::Command::new(bin())
        .args(["run", scenario.to_str().unwrap(), "--"])
        .args([
            "sh",
            "-c",
            "echo \"$DOUBLEAGENT_PAYMENTS_URL $DOUBLEAGENT_MCP_PAYMENTS_URL\"",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    // The verdict follows the command's line.
    let urls: Vec<&str> = stdout
        .lines()
        .next()
        .unwrap_or_default()
        .split(' ')
        .collect();
    assert_eq!(urls.len(), 2, "{stdout}");
    assert!(urls[0].ends_with("/payments"), "{stdout}");
    assert_eq!(
        urls[1],
        format!("{}/mcp/payments", urls[0].trim_end_matches("/payments"))
    );
}

#[test]
fn acct_rec4_a_legacy_client_resumes_a_cut_stream_with_last_event_id_replayed_or_lost() {
    for (resume, status) in [("replay", 200), ("lost", 404)] {
        let src = sse_with_fates("[\"drop-after-apply\"]").replace(
            "responses = \"sse\"",
            &format!("responses = \"sse\"\nresume = \"{resume}\""),
        );
        let da = Da::start(&src);
        let sid = session(&da);
        let r = legacy_call(
            &da,
            &sid,
            1,
            "create_transfer",
            json!({"to": "a", "amount": 1}),
        )
        .unwrap();
        let seq = transfers(&da)[0]["seq"].as_u64().unwrap();
        // The priming event names the stream; then the stream is cut.
        let primed = String::from_utf8(dechunk(&r.body)).unwrap_or_default();
        let raw = r.text();
        assert!(raw.contains(&format!("id: {seq}-0")), "{raw:?} {primed:?}");
        assert!(!raw.contains("isError"), "{raw}");
        // It ends cleanly after the priming event, as SEP-1699's polling closes a stream.
        assert!(r.body.ends_with(b"0\r\n\r\n"), "{raw:?}");
        let last = format!("{seq}-0");
        let h = [
            ("mcp-session-id", sid.as_str()),
            ("last-event-id", last.as_str()),
            ACCEPT,
        ];
        let r = da.call("GET", "/mcp/payments", &h, "");
        assert_eq!(r.status, status, "{resume}: {}", r.text());
        if status == 200 {
            let text = r.text();
            assert!(
                text.starts_with(&format!("id: {seq}-1\nevent: message\ndata: ")),
                "{text}"
            );
            assert!(text.contains("\"isError\":false"), "{text}");
        }
        let e = &events(&da, "resumed")[0]["detail"];
        assert_eq!(e["target"], seq);
        assert_eq!(
            e["outcome"],
            if status == 200 { "replayed" } else { "lost" }
        );
    }
    // Resuming needs event streams.
    let bad = issue().replace(
        "cancel = \"ignore\"",
        "resume = \"replay\"\ncancel = \"ignore\"",
    );
    let path = temp_file("bad.toml", &bad);
    let out = std::process::Command::new(bin())
        .arg("check")
        .arg(&path)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("mcp.payments.resume: resuming needs event streams"),
        "{err}"
    );
}

#[test]
fn a_browser_origin_other_than_loopback_or_listed_is_refused_403_and_recorded() {
    // DNS rebinding: a page on evil.example.com whose name resolves to 127.0.0.1 posts to the
    // server with its own Origin (and Host); the transport spec says refuse it with 403.
    let scenario = issue().replace(
        "cancel = \"ignore\"",
        "cancel = \"ignore\"\norigins = [\"https://app.example\"]",
    );
    let da = Da::start(&scenario);
    let init = rpc(
        json!(1),
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "t", "version": "1"}}),
    );
    let evil = post(
        &da,
        &[
            ("origin", "http://evil.example.com"),
            ("host", "evil.example.com"),
        ],
        &init,
    )
    .unwrap();
    assert_eq!(evil.status, 403, "{}", evil.text());
    assert!(json_of(&evil)["error"]["message"]
        .as_str()
        .unwrap()
        .contains("evil.example.com"));
    let refusals = events(&da, "rpc-error");
    assert_eq!(refusals.len(), 1, "{refusals:?}");
    assert_eq!(refusals[0]["detail"]["http_status"], 403);
    for ok in [
        "http://localhost:5173",
        "http://127.0.0.1:8080",
        "https://app.example",
    ] {
        let r = post(&da, &[("origin", ok)], &init).unwrap();
        assert_eq!(r.status, 200, "{ok}: {}", r.text());
    }
    // No Origin at all (every non-browser client) is served.
    assert_eq!(post(&da, &[], &init).unwrap().status, 200);
}

#[test]
fn an_origin_that_is_not_scheme_host_port_is_a_scenario_error() {
    let path = temp_file(
        "origins.toml",
        &issue().replace(
            "cancel = \"ignore\"",
            "cancel = \"ignore\"\norigins = [\"app.example/path\"]",
        ),
    );
    let out = std::process::Command::new(bin())
        .args(["check", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("mcp.payments.origins[0]"), "{err}");
}
