//! A2A's gRPC binding (SPEC §10) against the real binary, through a tonic client generated from
//! the same `proto/a2a.proto`: the ready line and the agent card say where the gRPC listener is
//! and which tenant names the agent; calls reach the one engine (a task made over gRPC is read
//! over JSON-RPC and cancelled over HTTP+JSON); errors are gRPC statuses with the spec's
//! `ErrorInfo`; streams end with the terminal state; a scenario can leave a binding out. Rule
//! IDs from shared/spec/rules.md are in the test names.

mod common;

use common::*;
use serde_json::{json, Value};
use tonic::transport::Channel;
use tonic::{Code, Request};
use tonic_types::StatusExt;

#[allow(clippy::all, dead_code, missing_docs)]
mod pb {
    include!(concat!(env!("OUT_DIR"), "/lf.a2a.v1.rs"));
}

use pb::a2a_service_client::A2aServiceClient;

const SCENARIO: &str = r#"
name = "a2a-grpc"
clock = "manual"

[agents.researcher]
protocol = "a2a"
work = "3s"
cancel = "honor"

[agents.researcher.result]
text = "Vendor is {{canary}}"

[agents.writer]
protocol = "a2a"
work = "1s"

[agents.writer.result]
text = "written"
"#;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// The ready line's gRPC `host:port`.
fn grpc_addr(da: &Da) -> String {
    da.ready["grpc"]
        .as_str()
        .expect("the ready line names the gRPC listener")
        .to_string()
}

async fn client(da: &Da) -> A2aServiceClient<Channel> {
    A2aServiceClient::connect(format!("http://{}", grpc_addr(da)))
        .await
        .expect("connect to the gRPC listener")
}

fn send_request(tenant: &str, id: &str, immediately: bool) -> pb::SendMessageRequest {
    pb::SendMessageRequest {
        tenant: tenant.into(),
        message: Some(pb::Message {
            message_id: id.into(),
            role: pb::Role::User as i32,
            parts: vec![pb::Part {
                content: Some(pb::part::Content::Text("research the vendor".into())),
                ..Default::default()
            }],
            ..Default::default()
        }),
        configuration: Some(pb::SendMessageConfiguration {
            return_immediately: immediately,
            ..Default::default()
        }),
        metadata: None,
    }
}

fn task_of(r: pb::SendMessageResponse) -> pb::Task {
    match r.payload {
        Some(pb::send_message_response::Payload::Task(t)) => t,
        other => panic!("expected a task, got {other:?}"),
    }
}

fn state(t: &pb::Task) -> pb::TaskState {
    t.status
        .as_ref()
        .map_or(pb::TaskState::Unspecified, |s| s.state())
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

#[test]
fn the_card_lists_the_grpc_interface_at_the_ready_lines_address_with_the_agent_as_tenant() {
    let da = Da::start(SCENARIO);
    let card = da
        .get("/agents/researcher/.well-known/agent-card.json")
        .json();
    let grpc: Vec<&Value> = card["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["protocolBinding"] == "GRPC")
        .collect();
    assert_eq!(grpc.len(), 1, "{card}");
    assert_eq!(grpc[0]["url"], grpc_addr(&da), "{card}");
    assert_eq!(grpc[0]["tenant"], "researcher", "{card}");
    assert_eq!(grpc[0]["protocolVersion"], "1.0");
}

#[test]
fn a_task_sent_over_grpc_is_read_over_jsonrpc_and_cancelled_over_rest_rec_3() {
    let da = Da::start(SCENARIO);
    let rt = runtime();
    let task = rt.block_on(async {
        let mut c = client(&da).await;
        let sent = c
            .send_message(send_request("researcher", "g-1", true))
            .await
            .expect("SendMessage over gRPC");
        task_of(sent.into_inner())
    });
    assert_eq!(state(&task), pb::TaskState::Submitted, "{task:?}");

    // The same task, seen over JSON-RPC.
    let got = rpc(&da, "researcher", "GetTask", json!({"id": task.id}));
    assert_eq!(got["result"]["id"], task.id.as_str(), "{got}");
    assert_eq!(got["result"]["history"][0]["messageId"], "g-1", "{got}");

    // Cancelled over HTTP+JSON; gRPC then reads the terminal state (stop requested, then
    // confirmed: REC-3).
    let r = da.call(
        "POST",
        &format!("/agents/researcher/tasks/{}:cancel", task.id),
        &[("A2A-Version", "1.0"), ("content-type", "application/json")],
        "{}",
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let seen = rt.block_on(async {
        let mut c = client(&da).await;
        c.get_task(pb::GetTaskRequest {
            tenant: "researcher".into(),
            id: task.id.clone(),
            history_length: None,
        })
        .await
        .expect("GetTask over gRPC")
        .into_inner()
    });
    assert_eq!(state(&seen), pb::TaskState::Canceled, "{seen:?}");

    let sent = entries(&da, "researcher", "message");
    assert_eq!(sent.len(), 1, "{sent:?}");
    assert_eq!(sent[0]["detail"]["binding"], "GRPC", "{sent:?}");
    let cancels = entries(&da, "researcher", "cancel");
    assert_eq!(cancels[0]["detail"]["binding"], "HTTP+JSON", "{cancels:?}");
}

#[test]
fn grpc_errors_are_statuses_with_the_a2a_error_info_rec_6() {
    let da = Da::start(SCENARIO);
    let rt = runtime();
    rt.block_on(async {
        let mut c = client(&da).await;
        let e = c
            .get_task(pb::GetTaskRequest {
                tenant: "researcher".into(),
                id: "no-such-task".into(),
                history_length: None,
            })
            .await
            .expect_err("an unknown task is an error");
        assert_eq!(e.code(), Code::NotFound, "{e:?}");
        let info = e.get_details_error_info().expect("an ErrorInfo detail");
        assert_eq!(info.reason, "TASK_NOT_FOUND", "{info:?}");
        assert_eq!(info.domain, "a2a-protocol.org");

        // A finished task cannot be cancelled: FAILED_PRECONDITION, TASK_NOT_CANCELABLE.
        let sent = c
            .send_message(send_request("writer", "w-1", true))
            .await
            .unwrap();
        let task = task_of(sent.into_inner());
        da.advance("2s");
        let e = c
            .cancel_task(pb::CancelTaskRequest {
                tenant: "writer".into(),
                id: task.id.clone(),
                metadata: None,
            })
            .await
            .expect_err("a completed task is not cancelable");
        assert_eq!(e.code(), Code::FailedPrecondition, "{e:?}");
        let info = e.get_details_error_info().expect("an ErrorInfo detail");
        assert_eq!(info.reason, "TASK_NOT_CANCELABLE", "{info:?}");

        // Two A2A agents: a call that names none cannot be routed.
        let e = c
            .get_task(pb::GetTaskRequest {
                tenant: String::new(),
                id: task.id.clone(),
                history_length: None,
            })
            .await
            .expect_err("no tenant with two agents");
        assert_eq!(e.code(), Code::InvalidArgument, "{e:?}");
    });
    // Refusals are recorded like every other call's.
    assert!(!entries(&da, "researcher", "rpc-error").is_empty());
}

#[test]
fn a_streaming_send_over_grpc_ends_with_the_terminal_state_acc_t() {
    let da = Da::start(SCENARIO);
    let rt = runtime();
    let states = rt.block_on(async {
        let mut c = client(&da).await;
        let mut events = c
            .send_streaming_message(Request::new(send_request("researcher", "s-1", false)))
            .await
            .expect("SendStreamingMessage")
            .into_inner();
        let first = events.message().await.unwrap().expect("a first event");
        let mut states = vec![match first.payload {
            Some(pb::stream_response::Payload::Task(t)) => state(&t),
            other => panic!("the stream opens with the task, got {other:?}"),
        }];
        da.advance("3s");
        while let Some(ev) = events.message().await.expect("no stream error") {
            if let Some(pb::stream_response::Payload::StatusUpdate(u)) = ev.payload {
                states.push(u.status.map_or(pb::TaskState::Unspecified, |s| s.state()));
            }
        }
        states
    });
    assert_eq!(
        states.first(),
        Some(&pb::TaskState::Submitted),
        "{states:?}"
    );
    assert_eq!(states.last(), Some(&pb::TaskState::Completed), "{states:?}");
}

#[test]
fn a_named_sessions_card_routes_grpc_calls_into_that_session_by_tenant() {
    let da = Da::start(SCENARIO);
    let card = da
        .get("/_s/run-7/agents/researcher/.well-known/agent-card.json")
        .json();
    let tenant = card["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["protocolBinding"] == "GRPC")
        .map(|i| i["tenant"].as_str().unwrap().to_string())
        .expect("a GRPC interface");
    assert_eq!(tenant, "_s/run-7/researcher");
    let rt = runtime();
    rt.block_on(async {
        let mut c = client(&da).await;
        c.send_message(send_request(&tenant, "n-1", true))
            .await
            .expect("SendMessage into the session");
    });
    let in_session = da.get("/_s/run-7/_admin/ledger?event=message").json();
    assert_eq!(
        in_session["entries"].as_array().unwrap().len(),
        1,
        "{in_session}"
    );
    let default = da.get("/_admin/ledger?event=message").json();
    assert!(
        default["entries"].as_array().unwrap().is_empty(),
        "{default}"
    );
}

#[test]
fn an_agent_can_be_restricted_to_some_bindings_and_refuses_the_others() {
    let da = Da::start(
        r#"
name = "rest-only"

[agents.clerk]
protocol = "a2a"
bindings = ["HTTP+JSON"]
"#,
    );
    // No agent serves gRPC: no listener, and the card lists only HTTP+JSON.
    assert!(da.ready.get("grpc").is_none(), "{}", da.ready);
    let card = da.get("/agents/clerk/.well-known/agent-card.json").json();
    let bindings: Vec<&Value> = card["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| &i["protocolBinding"])
        .collect();
    assert_eq!(bindings, [&json!("HTTP+JSON")], "{card}");
    // JSON-RPC is refused with UnsupportedOperationError, and the refusal is recorded.
    let r = rpc(&da, "clerk", "ListTasks", json!({}));
    assert_eq!(r["error"]["code"], -32004, "{r}");
    assert_eq!(entries(&da, "clerk", "rpc-error").len(), 1);
    // HTTP+JSON is served.
    let r = da.call("GET", "/agents/clerk/tasks", &[("A2A-Version", "1.0")], "");
    assert_eq!(r.status, 200, "{}", r.text());
}

#[test]
fn a_scenario_with_no_bindings_or_an_unknown_one_is_rejected_with_its_location() {
    for (bindings, says) in [("[]", "at least one binding"), ("[\"SOAP\"]", "SOAP")] {
        let path = temp_file(
            "bindings.toml",
            &format!("name = \"b\"\n\n[agents.clerk]\nprotocol = \"a2a\"\nbindings = {bindings}\n"),
        );
        let out = std::process::Command::new(bin())
            .args(["check", path.to_str().unwrap()])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("bindings"), "{err}");
        assert!(err.contains(says), "{err}");
        assert!(err.contains(":5:"), "the line of the key: {err}");
    }
}

#[test]
fn a_scenario_naming_grpc_is_refused_by_a_server_without_a_grpc_listener_and_a_default_one_is_served_without_it(
) {
    // Started with a scenario whose only agent leaves gRPC out: no gRPC listener.
    let da = Da::start(
        r#"
name = "rest-only"

[agents.clerk]
protocol = "a2a"
bindings = ["HTTP+JSON"]
"#,
    );
    assert!(da.ready.get("grpc").is_none(), "{}", da.ready);
    let grpc_only = "name = \"grpc-only\"\n[agents.g]\nprotocol = \"a2a\"\nbindings = [\"GRPC\"]\n";
    let r = da.call("POST", "/_admin/scenario", &[], grpc_only);
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("--grpc-listen"), "{}", r.text());
    // Nothing changed: the old agent still answers, the new one does not exist.
    let r = da.call("GET", "/agents/clerk/tasks", &[("A2A-Version", "1.0")], "");
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(da.get("/agents/g/.well-known/agent-card.json").status, 404);
    // An agent that serves every binding by default is taken and served over the other two,
    // its card listing only those.
    let default = "name = \"default-bindings\"\n[agents.d]\nprotocol = \"a2a\"\n";
    let r = da.call("POST", "/_admin/scenario", &[], default);
    assert_eq!(r.status, 200, "{}", r.text());
    let card = da.get("/agents/d/.well-known/agent-card.json").json();
    let bindings: Vec<&str> = card["supportedInterfaces"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["protocolBinding"].as_str().unwrap())
        .collect();
    assert_eq!(bindings, ["JSONRPC", "HTTP+JSON"], "{card}");
    // A server with a listener takes it, and the answer says where gRPC is.
    let da = Da::start(SCENARIO);
    let r = da.call("POST", "/_admin/scenario", &[], grpc_only);
    assert_eq!(r.status, 200, "{}", r.text());
    assert_eq!(r.json()["grpc"], da.ready["grpc"], "{}", r.text());
}

#[test]
fn a_grpc_message_over_max_body_bytes_is_refused_and_recorded() {
    let da = Da::start(&format!("max_body_bytes = 1024\n{SCENARIO}"));
    let rt = runtime();
    rt.block_on(async {
        let mut c = client(&da).await;
        let mut req = send_request("researcher", "m-big", true);
        if let Some(m) = req.message.as_mut() {
            m.parts[0].content = Some(pb::part::Content::Text("x".repeat(4000)));
        }
        let err = c.send_message(Request::new(req)).await.unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
        assert!(err.message().contains("max_body_bytes"), "{err:?}");
        // 5 MiB: over tonic's default limit too, still refused by the scenario's and recorded.
        let mut req = send_request("researcher", "m-huge", true);
        if let Some(m) = req.message.as_mut() {
            m.parts[0].content = Some(pb::part::Content::Text("x".repeat(5 << 20)));
        }
        let err = c.send_message(Request::new(req)).await.unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    });
    assert_eq!(entries(&da, "researcher", "rpc-error").len(), 2);
    assert!(entries(&da, "researcher", "message").is_empty());
}

#[test]
fn calls_waiting_on_a_task_at_shutdown_are_told_the_server_stopped_not_that_it_was_reset() {
    let path = temp_file("scenario.toml", SCENARIO);
    let da = Da::start_args(&[path.to_str().unwrap(), "--drain-timeout", "300ms"]);
    let url = da.url.clone();
    // A blocking SendMessage: the manual clock never moves, so it waits until the server stops.
    let blocking = std::thread::spawn(move || {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
            "params": {"message": {"messageId": "b-1", "role": "ROLE_USER",
                "parts": [{"text": "research"}]}}});
        let head = [("content-type", "application/json")];
        let s = send(
            &url,
            "POST",
            "/agents/researcher",
            &head,
            body.to_string().as_bytes(),
        );
        read_response(s).map(|r| r.json())
    });
    let rt = runtime();
    let ended = rt.block_on(async {
        let mut c = client(&da).await;
        let sent = c
            .send_message(Request::new(send_request("researcher", "s-1", true)))
            .await
            .expect("SendMessage");
        let id = task_of(sent.into_inner()).id;
        let sub = pb::SubscribeToTaskRequest {
            tenant: "researcher".into(),
            id,
        };
        let mut events = c
            .subscribe_to_task(Request::new(sub))
            .await
            .unwrap()
            .into_inner();
        events
            .message()
            .await
            .unwrap()
            .expect("the task as it stands");
        da.wait_for("service=researcher&event=message", 2);
        let pid = da.child.id().to_string();
        std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        loop {
            match events.message().await {
                Ok(Some(_)) => {}
                other => break other.map(|_| ()),
            }
        }
    });
    // The task is still working: the stream ends with an error, not with status OK.
    let e = ended.expect_err("a subscription cut by shutdown ends with an error status");
    assert!(e.message().contains("server stopped"), "{e:?}");
    let answer = blocking
        .join()
        .unwrap()
        .expect("the waiting call is answered");
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("server stopped"), "{answer}");
}
