//! A2A's HTTP+JSON binding (SPEC §11) against the real binary: the REST paths reach the same
//! engine as JSON-RPC (a task made over one binding is read, cancelled and subscribed over the
//! other), successes are bare results, errors are `google.rpc.Status` bodies with the HTTP
//! status of SPEC §5.4, streams are SSE of bare `StreamResponse`s, and every entry says which
//! binding the call came over. Rule IDs from shared/spec/rules.md are in the test names.

mod common;

use std::thread;

use common::*;
use serde_json::{json, Value};

const SCENARIO: &str = r#"
name = "a2a-rest"
clock = "manual"

[agents.researcher]
protocol = "a2a"
work = "3s"
cancel = "honor"
push_ports = [9]

[agents.researcher.result]
text = "Vendor is {{canary}}"

[agents.stubborn]
protocol = "a2a"
work = "3s"
cancel = "too-late"

[agents.stubborn.result]
text = "done"
"#;

const A2A_JSON: &str = "application/a2a+json";

fn rest(da: &Da, method: &str, path: &str, body: Option<Value>) -> Resp {
    let text = body.map(|b| b.to_string()).unwrap_or_default();
    let mut headers = vec![("A2A-Version", "1.0")];
    if !text.is_empty() {
        headers.push(("content-type", A2A_JSON));
    }
    da.call(method, path, &headers, &text)
}

/// A success: HTTP 200 and the result itself, no JSON-RPC envelope.
fn ok(r: Resp) -> Value {
    assert_eq!(r.status, 200, "{}", r.text());
    let v = r.json();
    assert!(
        v.get("jsonrpc").is_none() && v.get("result").is_none(),
        "{v}"
    );
    v
}

fn user(id: &str) -> Value {
    json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": "research the vendor"}]})
}

fn start(da: &Da, agent: &str, id: &str) -> Value {
    let body = json!({"message": user(id), "configuration": {"returnImmediately": true}});
    let sent = ok(rest(
        da,
        "POST",
        &format!("/agents/{agent}/message:send"),
        Some(body),
    ));
    sent["task"].clone()
}

fn rpc(da: &Da, agent: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let r = da
        .post_json(
            &format!("/agents/{agent}"),
            &[("A2A-Version", "1.0")],
            &body,
        )
        .unwrap();
    assert_eq!(r.status, 200, "{}", r.text());
    r.json()
}

fn entries(da: &Da, agent: &str, event: &str) -> Vec<Value> {
    da.get(&format!(
        "/_admin/ledger?service={agent}&event={event}&disposition=agent"
    ))
    .json()["entries"]
        .as_array()
        .unwrap()
        .clone()
}

/// The error body of a failed REST call: its HTTP status must be `status`, and the body says
/// the same, with the gRPC status name and the A2A reason as an `ErrorInfo`.
fn error(r: Resp, status: u16, name: &str, reason: Option<&str>) -> Value {
    assert_eq!(r.status, status, "{}", r.text());
    let v = r.json();
    let e = &v["error"];
    assert_eq!(e["code"], status, "{v}");
    assert_eq!(e["status"], name, "{v}");
    assert!(e["message"].as_str().is_some_and(|m| !m.is_empty()), "{v}");
    if let Some(reason) = reason {
        let info = &e["details"][0];
        assert_eq!(info["@type"], "type.googleapis.com/google.rpc.ErrorInfo");
        assert_eq!(info["reason"], reason, "{v}");
        assert_eq!(info["domain"], "a2a-protocol.org");
    }
    v
}

/// An SSE response read to its end: the `data:` of each event.
fn sse(r: Resp) -> Vec<Value> {
    assert_eq!(r.status, 200, "{}", r.text());
    assert!(
        r.header("content-type")
            .is_some_and(|c| c.starts_with("text/event-stream")),
        "{:?}",
        r.header("content-type")
    );
    let raw = if r
        .header("transfer-encoding")
        .is_some_and(|t| t.contains("chunked"))
    {
        dechunk(&r.body)
    } else {
        r.body.clone()
    };
    // SSE allows CRLF, LF or CR line ends; `lines` reads the first two alike.
    let text = String::from_utf8(raw).unwrap().replace("\r\n", "\n");
    text.split("\n\n")
        .filter_map(|ev| ev.lines().find_map(|l| l.strip_prefix("data: ")))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

/// Each stream event's kind, with the state where it has one.
fn kinds(events: &[Value]) -> Vec<String> {
    let state = |v: &Value| v["status"]["state"].as_str().unwrap_or("").to_string();
    events
        .iter()
        .map(|e| {
            let (k, v) = e.as_object().unwrap().iter().next().unwrap();
            match k.as_str() {
                "task" => format!("task:{}", state(v)),
                "statusUpdate" => format!("status:{}", state(v)),
                other => other.to_string(),
            }
        })
        .collect()
}

#[test]
fn acct_rest_send_get_list_and_cancel_reach_the_engine_and_say_their_binding() {
    let da = Da::start(SCENARIO);
    let task = start(&da, "researcher", "r-1");
    let id = task["id"].as_str().unwrap().to_string();
    let ctx = task["contextId"].as_str().unwrap().to_string();

    let got = ok(rest(
        &da,
        "GET",
        &format!("/agents/researcher/tasks/{id}?historyLength=1"),
        None,
    ));
    assert_eq!(got["id"], id);
    assert_eq!(got["history"].as_array().map(Vec::len), Some(1), "{got}");

    let listed = ok(rest(
        &da,
        "GET",
        &format!("/agents/researcher/tasks?contextId={ctx}&pageSize=5"),
        None,
    ));
    assert_eq!(listed["tasks"][0]["id"], id, "{listed}");

    // REC-3: the honour policy cancels; the entry says the call came over HTTP+JSON.
    let canceled = ok(rest(
        &da,
        "POST",
        &format!("/agents/researcher/tasks/{id}:cancel"),
        Some(json!({"id": id})),
    ));
    assert_eq!(canceled["status"]["state"], "TASK_STATE_CANCELED");
    let msg = &entries(&da, "researcher", "message")[0];
    assert_eq!(msg["detail"]["binding"], "HTTP+JSON", "{msg}");
    assert_eq!(msg["detail"]["method"], "SendMessage");
    let cancel = &entries(&da, "researcher", "cancel")[0];
    assert_eq!(cancel["detail"]["binding"], "HTTP+JSON", "{cancel}");
    assert_eq!(cancel["detail"]["outcome"], "honored");
}

#[test]
fn acct_rec3_one_engine_a_task_sent_over_rest_is_read_and_cancelled_over_jsonrpc_and_back() {
    let da = Da::start(SCENARIO);
    let over_rest = start(&da, "stubborn", "r-2");
    let got = rpc(&da, "stubborn", "GetTask", json!({"id": over_rest["id"]}));
    assert_eq!(got["result"]["id"], over_rest["id"], "{got}");
    let refused = rpc(
        &da,
        "stubborn",
        "CancelTask",
        json!({"id": over_rest["id"]}),
    );
    assert_eq!(refused["error"]["code"], -32002, "{refused}");

    let sent = rpc(
        &da,
        "researcher",
        "SendMessage",
        json!({"message": user("j-1"), "configuration": {"returnImmediately": true}}),
    );
    let id = sent["result"]["task"]["id"].as_str().unwrap().to_string();
    let canceled = ok(rest(
        &da,
        "POST",
        &format!("/agents/researcher/tasks/{id}:cancel"),
        None,
    ));
    assert_eq!(canceled["status"]["state"], "TASK_STATE_CANCELED");
    let bindings: Vec<Value> = entries(&da, "stubborn", "cancel")
        .iter()
        .chain(&entries(&da, "researcher", "cancel"))
        .map(|e| e["detail"]["binding"].clone())
        .collect();
    assert_eq!(bindings, [json!("JSONRPC"), json!("HTTP+JSON")]);
}

#[test]
fn rec6_rest_errors_are_google_rpc_status_bodies_with_the_spec_http_status() {
    let da = Da::start(SCENARIO);
    error(
        rest(&da, "GET", "/agents/researcher/tasks/nope", None),
        404,
        "NOT_FOUND",
        Some("TASK_NOT_FOUND"),
    );
    // A stubborn agent's task refuses cancellation: 409 (A2A v1.0.0), with the A2A reason.
    let t = start(&da, "stubborn", "r-3");
    let path = format!(
        "/agents/stubborn/tasks/{}:cancel",
        t["id"].as_str().unwrap()
    );
    error(
        rest(&da, "POST", &path, None),
        409,
        "FAILED_PRECONDITION",
        Some("TASK_NOT_CANCELABLE"),
    );
    let bad = da.call(
        "POST",
        "/agents/researcher/message:send",
        &[("content-type", A2A_JSON)],
        "{not json",
    );
    error(bad, 400, "INVALID_ARGUMENT", None);
    let no_parts = json!({"message": {"messageId": "x", "role": "ROLE_USER", "parts": []}});
    let r = rest(
        &da,
        "POST",
        "/agents/researcher/message:send",
        Some(no_parts),
    );
    error(r, 400, "INVALID_ARGUMENT", None);
    let text = da.call(
        "POST",
        "/agents/researcher/message:send",
        &[("content-type", "text/plain")],
        "hello",
    );
    error(
        text,
        415,
        "INVALID_ARGUMENT",
        Some("CONTENT_TYPE_NOT_SUPPORTED"),
    );
    // Every refusal is recorded, as over JSON-RPC.
    assert!(entries(&da, "researcher", "rpc-error").len() >= 4);
}

#[test]
fn acct_rest_streams_are_sse_of_bare_stream_responses_ending_at_the_terminal_state() {
    let da = Da::start(SCENARIO);
    let url = da.url.clone();
    let body = json!({"message": user("s-1")}).to_string();
    let streamed = thread::spawn(move || {
        let h = [("content-type", A2A_JSON), ("accept", "text/event-stream")];
        sse(request(
            &url,
            "POST",
            "/agents/researcher/message:stream",
            &h,
            body.as_bytes(),
        )
        .unwrap())
    });
    da.wait_for("service=researcher&event=task-created", 1);
    let id = entries(&da, "researcher", "task-created")[0]["work_id"]
        .as_str()
        .unwrap()
        .to_string();
    let url = da.url.clone();
    let path = format!("/agents/researcher/tasks/{id}:subscribe");
    let subscribed = thread::spawn(move || sse(request(&url, "POST", &path, &[], b"").unwrap()));
    da.wait_for("service=researcher&event=subscribe", 1);
    da.advance("3s");
    let events = streamed.join().unwrap();
    assert_eq!(events.first().map(|e| e.get("task").is_some()), Some(true));
    assert_eq!(
        kinds(&events).last().map(String::as_str),
        Some("status:TASK_STATE_COMPLETED"),
        "{events:?}"
    );
    assert!(events.iter().all(|e| e.get("jsonrpc").is_none()));
    assert_eq!(
        kinds(&subscribed.join().unwrap()),
        [
            "task:TASK_STATE_WORKING",
            "artifactUpdate",
            "status:TASK_STATE_COMPLETED"
        ]
    );
}

#[test]
fn acct_rest_push_config_resources_create_get_list_and_delete() {
    let da = Da::start(SCENARIO);
    let t = start(&da, "researcher", "p-1");
    let id = t["id"].as_str().unwrap();
    let configs = format!("/agents/researcher/tasks/{id}/pushNotificationConfigs");
    let created = ok(rest(
        &da,
        "POST",
        &configs,
        Some(json!({"id": "h1", "url": "http://127.0.0.1:9/hook", "token": "t"})),
    ));
    assert_eq!(
        created,
        json!({"taskId": id, "id": "h1", "url": "http://127.0.0.1:9/hook", "token": "t"})
    );
    let listed = ok(rest(&da, "GET", &configs, None));
    assert_eq!(listed["configs"][0]["id"], "h1", "{listed}");
    let got = ok(rest(&da, "GET", &format!("{configs}/h1"), None));
    assert_eq!(got["url"], "http://127.0.0.1:9/hook");
    // PUSH-DEL-002: a delete is idempotent; the second one succeeds too.
    for _ in 0..2 {
        let deleted = rest(&da, "DELETE", &format!("{configs}/h1"), None);
        assert_eq!(deleted.status, 200, "{}", deleted.text());
    }
    assert_eq!(entries(&da, "researcher", "push-config").len(), 2);
    error(
        rest(&da, "GET", &format!("{configs}/h1"), None),
        404,
        "NOT_FOUND",
        Some("TASK_NOT_FOUND"),
    );
}

#[test]
fn acct_rest_paths_under_a_tenant_prefix_are_the_same_calls() {
    let da = Da::start(SCENARIO);
    let body = json!({"message": user("t-1"), "configuration": {"returnImmediately": true}});
    let sent = ok(rest(
        &da,
        "POST",
        "/agents/researcher/acme/message:send",
        Some(body),
    ));
    let id = sent["task"]["id"].as_str().unwrap();
    let got = ok(rest(
        &da,
        "GET",
        &format!("/agents/researcher/acme/tasks/{id}"),
        None,
    ));
    assert_eq!(got["id"], id);
    let unknown = rest(&da, "GET", "/agents/researcher/acme/nothing/here", None);
    assert_eq!(unknown.status, 404, "{}", unknown.text());
}
