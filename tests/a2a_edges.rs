//! A2A agents at their edges, against the real binary: what is refused (an oversized body, an
//! unknown filter or role, a push target at the server's own listeners) is refused in the
//! binding's error shape and recorded.

mod common;

use common::*;
use serde_json::{json, Value};

const SCENARIO: &str = r#"
name = "a2a-edges"
clock = "manual"

[agents.ack]
protocol = "a2a"
work = "3s"
"#;

/// The ledger's agent entries of `event`.
fn entries(da: &Da, agent: &str, event: &str) -> Vec<Value> {
    let q = format!("/_admin/ledger?service={agent}&event={event}&disposition=agent");
    da.get(&q).json()["entries"].as_array().unwrap().clone()
}

#[test]
fn an_oversized_body_is_refused_in_the_bindings_error_shape_and_recorded() {
    let da = Da::start(&format!(
        "max_body_bytes = 1024\n{SCENARIO}\n[agents.chat]\nprotocol = \"ag-ui\"\n[[agents.chat.iterations]]\ntext = \"hi\"\n"
    ));
    let big = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
        "params": {"message": {"messageId": "m", "role": "ROLE_USER",
            "parts": [{"text": "x".repeat(4000)}]}}});
    let json = [("content-type", "application/json"), ("A2A-Version", "1.0")];
    // JSON-RPC: a JSON-RPC error (Invalid Request), with 413.
    let r = da.call("POST", "/agents/ack", &json, &big.to_string());
    assert_eq!(r.status, 413, "{}", r.text());
    assert_eq!(r.json()["jsonrpc"], "2.0", "{}", r.text());
    assert_eq!(r.json()["error"]["code"], -32600, "{}", r.text());
    // HTTP+JSON: the binding's error object, with 413.
    let r = da.call(
        "POST",
        "/agents/ack/message:send",
        &json,
        &big["params"].to_string(),
    );
    assert_eq!(r.status, 413, "{}", r.text());
    let e = &r.json()["error"];
    assert_eq!(e["details"][0]["reason"], "INVALID_REQUEST", "{}", r.text());
    // Both recorded; nothing was sent.
    let refused = entries(&da, "ack", "rpc-error");
    assert_eq!(refused.len(), 2, "{refused:?}");
    assert!(entries(&da, "ack", "message").is_empty());
    // AG-UI: refused and recorded as a rejected run.
    let headers = [
        ("content-type", "application/json"),
        ("accept", "text/event-stream"),
    ];
    let r = da.call("POST", "/agents/chat", &headers, &"x".repeat(4000));
    assert_eq!(r.status, 413, "{}", r.text());
    assert_eq!(entries(&da, "chat", "run-rejected").len(), 1);
}

/// One JSON-RPC call's answer (HTTP 200 always).
fn rpc(da: &Da, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let r = da
        .post_json("/agents/ack", &[("A2A-Version", "1.0")], &body)
        .unwrap();
    assert_eq!(r.status, 200, "{method}: {}", r.text());
    r.json()
}

#[test]
fn a_push_target_on_the_servers_own_grpc_listener_is_refused_even_with_any_port() {
    let da = Da::start(&format!("{SCENARIO}push_ports = \"any\"\n"));
    let grpc = da.ready["grpc"]
        .as_str()
        .expect("a gRPC listener")
        .to_string();
    let m = json!({"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}]});
    let sent = rpc(
        &da,
        "SendMessage",
        json!({"message": m, "configuration": {"returnImmediately": true}}),
    );
    let task = sent["result"]["task"]["id"].as_str().unwrap().to_string();
    let port = grpc.rsplit(':').next().unwrap();
    for own in [grpc.clone(), format!("localhost:{port}")] {
        let cfg = json!({"taskId": task, "url": format!("http://{own}/x")});
        let r = rpc(&da, "CreateTaskPushNotificationConfig", cfg);
        assert_eq!(r["error"]["code"], -32602, "{own}: {r}");
        assert!(
            r["error"]["message"]
                .as_str()
                .unwrap()
                .contains("own listener"),
            "{r}"
        );
    }
}
