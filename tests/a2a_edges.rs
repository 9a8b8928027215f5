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

#[test]
fn rest_paths_answer_a_wrong_method_with_405_and_an_unknown_path_with_404_in_the_bindings_error_shape(
) {
    let da = Da::start(SCENARIO);
    let v = [("A2A-Version", "1.0")];
    // A known path, another method: 405 with Allow.
    let r = da.call("DELETE", "/agents/ack/message:send", &v, "");
    assert_eq!(r.status, 405, "{}", r.text());
    assert_eq!(r.header("allow"), Some("POST"), "{:?}", r.headers);
    assert_eq!(r.json()["error"]["code"], 405, "{}", r.text());
    let r = da.call("PUT", "/agents/ack/tasks", &v, "");
    assert_eq!(
        (r.status, r.header("allow")),
        (405, Some("GET")),
        "{}",
        r.text()
    );
    // No such path: 404, the same shape.
    let r = da.call("GET", "/agents/ack/nothing/here", &v, "");
    assert_eq!(r.status, 404, "{}", r.text());
    assert_eq!(r.json()["error"]["status"], "NOT_FOUND", "{}", r.text());
    assert!(r.json()["error"]["details"].is_array(), "{}", r.text());
    // The card answers HEAD as GET does, without a body.
    let r = da.call("HEAD", "/agents/ack/.well-known/agent-card.json", &[], "");
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(r.body.is_empty());
}

fn start_task(da: &Da, id: &str) -> String {
    let m = json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": "hi"}]});
    let params = json!({"message": m, "configuration": {"returnImmediately": true}});
    let sent = rpc(da, "SendMessage", params);
    sent["result"]["task"]["id"].as_str().unwrap().to_string()
}

fn ids(page: &Value) -> Vec<String> {
    let tasks = page["result"]["tasks"].as_array().unwrap();
    tasks
        .iter()
        .map(|t| t["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn list_tasks_pages_neither_repeat_nor_skip_a_task_when_tasks_are_made_between_pages() {
    let da = Da::start(SCENARIO);
    let made: Vec<String> = (1..=3)
        .map(|n| start_task(&da, &format!("m-{n}")))
        .collect();
    let first = rpc(&da, "ListTasks", json!({"pageSize": 2}));
    assert_eq!(ids(&first), [made[2].clone(), made[1].clone()], "{first}");
    // A task made between the pages goes to the front: the next page still starts after the
    // last task handed out.
    start_task(&da, "m-4");
    let token = first["result"]["nextPageToken"].clone();
    let second = rpc(&da, "ListTasks", json!({"pageSize": 2, "pageToken": token}));
    assert_eq!(ids(&second), [made[0].clone()], "{second}");
    assert_eq!(second["result"]["nextPageToken"], "", "{second}");
    let bad = rpc(&da, "ListTasks", json!({"pageToken": "nonsense"}));
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
}

#[test]
fn list_task_push_notification_configs_pages_by_page_size() {
    let da = Da::start(&format!("{SCENARIO}push_ports = [9]\n"));
    let task = start_task(&da, "m-1");
    for n in 1..=3 {
        let cfg = json!({"taskId": task, "id": format!("c-{n}"), "url": "http://127.0.0.1:9/hook"});
        let r = rpc(&da, "CreateTaskPushNotificationConfig", cfg);
        assert!(r.get("error").is_none(), "{r}");
    }
    let config_ids = |page: &Value| -> Vec<String> {
        let configs = page["result"]["configs"].as_array().unwrap();
        configs
            .iter()
            .map(|c| c["id"].as_str().unwrap().to_string())
            .collect()
    };
    let first = rpc(
        &da,
        "ListTaskPushNotificationConfigs",
        json!({"taskId": task, "pageSize": 2}),
    );
    assert_eq!(config_ids(&first), ["c-1", "c-2"], "{first}");
    let token = first["result"]["nextPageToken"].clone();
    let params = json!({"taskId": task, "pageSize": 2, "pageToken": token});
    let second = rpc(&da, "ListTaskPushNotificationConfigs", params);
    assert_eq!(config_ids(&second), ["c-3"], "{second}");
    let last = second["result"]["nextPageToken"].as_str().unwrap_or("");
    assert_eq!(last, "", "{second}");
    let all = rpc(
        &da,
        "ListTaskPushNotificationConfigs",
        json!({"taskId": task}),
    );
    assert_eq!(config_ids(&all).len(), 3, "{all}");
}

#[test]
fn reads_carry_the_tasks_revision_and_refusals_name_their_task_as_work_id() {
    let da = Da::start(&format!(
        "{SCENARIO}revision_key = \"revision\"\ncancel = \"too-late\"\n"
    ));
    let m = json!({"messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "hi"}],
        "metadata": {"revision": 1}});
    let params = json!({"message": m, "configuration": {"returnImmediately": true}});
    let task = rpc(&da, "SendMessage", params)["result"]["task"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    rpc(&da, "GetTask", json!({"id": task}));
    let read = entries(&da, "ack", "get-task");
    assert_eq!(read.len(), 1, "{read:?}");
    assert_eq!(read[0]["revision"], 1, "{}", read[0]);
    assert_eq!(read[0]["work_id"], task.as_str(), "{}", read[0]);
    // A refused cancel and an unknown push config: rpc-error entries naming the task.
    let r = rpc(&da, "CancelTask", json!({"id": task}));
    assert_eq!(r["error"]["code"], -32002, "{r}");
    let r = rpc(
        &da,
        "GetTaskPushNotificationConfig",
        json!({"taskId": task, "id": "nope"}),
    );
    assert_eq!(r["error"]["code"], -32001, "{r}");
    let refused = entries(&da, "ack", "rpc-error");
    assert_eq!(refused.len(), 2, "{refused:?}");
    for e in &refused {
        assert_eq!(e["work_id"], task.as_str(), "{e}");
    }
}

#[test]
fn a_malformed_rest_body_is_refused_with_an_error_info_as_every_other_rest_error() {
    let da = Da::start(SCENARIO);
    let head = [("content-type", "application/json"), ("A2A-Version", "1.0")];
    let r = da.call("POST", "/agents/ack/message:send", &head, "{not json");
    assert_eq!(r.status, 400, "{}", r.text());
    let e = &r.json()["error"];
    assert_eq!(e["status"], "INVALID_ARGUMENT", "{e}");
    assert_eq!(e["details"][0]["reason"], "INVALID_REQUEST", "{e}");
}
