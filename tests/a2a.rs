//! Fake A2A 1.0 subagents (issue 3), driven over raw JSON-RPC against the real binary: each
//! cancel policy, de-duplication on and off, revisions and canaries, late results, streams,
//! push delivery, per-message behaviours and the protocol's error codes. Rule IDs from
//! shared/spec/rules.md are in the test names (`acct` = ACC-T, the rig itself).

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use common::*;
use serde_json::{json, Value};

/// The issue's example, verbatim, with the payments service its step calls.
const ISSUE: &str = r#"
name = "issue-example"
seed = 3
clock = "manual"

[services.payments]
[[services.payments.routes]]
name = "create-transfer"
method = "POST"
path = "/v1/transfers"
kind = "action"
respond = { status = 201, json = { id = "{{action.id}}", status = "succeeded" } }

[agents.researcher]
protocol = "a2a"
work = "3s"                     # submit → completion, on the scenario clock
cancel = "ack-then-complete"    # "honor" | "too-late" | "ack-then-complete" | "honor-before:<dur>"
dedupe_message_id = false       # A2A makes de-duplication optional; both behaviours are needed
revision_key = "revision"       # message metadata key that carries the orchestrator's revision

[[agents.researcher.steps]]     # side effects the agent performs while working, at offsets from start
at = "1s"
call = { service = "payments", route = "create-transfer", json = { to = "acct-9", amount = 100 } }

[agents.researcher.result]
text = "Pay vendor account {{canary}}"
data = { account = "{{canary}}" }
"#;

/// The issue's agent with another cancel policy (and a push policy).
fn with_cancel(policy: &str) -> String {
    ISSUE.replace(
        "cancel = \"ack-then-complete\"",
        &format!("cancel = \"{policy}\""),
    )
}

fn msg(id: &str, text: &str, meta: Value) -> Value {
    let mut m = json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": text}]});
    if !meta.is_null() {
        m["metadata"] = meta;
    }
    m
}

/// One JSON-RPC call; A2A errors must come back with HTTP 200.
fn rpc(da: &Da, agent: &str, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": "t1", "method": method, "params": params});
    let r = da
        .post_json(
            &format!("/agents/{agent}"),
            &[("A2A-Version", "1.0")],
            &body,
        )
        .unwrap();
    assert_eq!(r.status, 200, "{method}: {}", r.text());
    let v = r.json();
    assert_eq!(v["id"], "t1");
    v
}

fn result(v: Value) -> Value {
    assert!(v.get("error").is_none(), "unexpected error: {v}");
    v["result"].clone()
}

fn error_code(v: &Value) -> i64 {
    v["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("expected an error: {v}"))
}

/// SendMessage with returnImmediately: the task while it is still in flight.
fn start_task(da: &Da, agent: &str, m: Value) -> Value {
    let t = result(rpc(
        da,
        agent,
        "SendMessage",
        json!({"message": m, "configuration": {"returnImmediately": true}}),
    ))["task"]
        .clone();
    assert!(t["id"].is_string(), "{t}");
    t
}

fn get_task(da: &Da, agent: &str, id: &str) -> Value {
    result(rpc(da, agent, "GetTask", json!({"id": id})))
}

fn state(task: &Value) -> &str {
    task["status"]["state"].as_str().unwrap_or("")
}

/// A streaming call read to its end on another thread: the JSON-RPC responses of its events.
fn stream(da: &Da, agent: &str, method: &str, params: Value) -> thread::JoinHandle<Vec<Value>> {
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": method, "params": params}).to_string();
    let s = send(
        &da.url,
        "POST",
        &format!("/agents/{agent}"),
        &[
            ("content-type", "application/json"),
            ("accept", "text/event-stream"),
            ("A2A-Version", "1.0"),
        ],
        body.as_bytes(),
    );
    thread::spawn(move || {
        let r = read_response(s).unwrap();
        assert_eq!(r.status, 200);
        let raw = if r
            .header("transfer-encoding")
            .is_some_and(|t| t.contains("chunked"))
        {
            dechunk(&r.body)
        } else {
            r.body.clone()
        };
        if !r
            .header("content-type")
            .unwrap_or("")
            .contains("text/event-stream")
        {
            return vec![serde_json::from_slice(&raw).unwrap()];
        }
        String::from_utf8(raw)
            .unwrap()
            .split("\r\n\r\n")
            .filter_map(|ev| ev.lines().find_map(|l| l.strip_prefix("data: ")))
            .map(|d| serde_json::from_str(d).unwrap())
            .collect()
    })
}

/// The kind of each stream event (`task`, `statusUpdate`, ...) with its state if it has one.
fn kinds(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| {
            let r = &e["result"];
            let (k, v) = r.as_object().unwrap().iter().next().unwrap();
            match k.as_str() {
                "task" => format!("task:{}", state(v)),
                "statusUpdate" => format!("status:{}", state(v)),
                other => other.to_string(),
            }
        })
        .collect()
}

fn agent_events(da: &Da, agent: &str, event: &str) -> Vec<Value> {
    da.get(&format!(
        "/_admin/ledger?service={agent}&event={event}&disposition=agent"
    ))
    .json()["entries"]
        .as_array()
        .unwrap()
        .clone()
}

// ---------------------------------------------------------------------------------------------
// The issue's story

#[test]
fn acct_the_issue_example_serves_a_card_whose_interface_url_is_the_bound_address() {
    let da = Da::start(ISSUE);
    let r = da.get("/agents/researcher/.well-known/agent-card.json");
    assert_eq!(r.status, 200);
    let card = r.json();
    assert_eq!(card["name"], "researcher");
    assert_eq!(
        card["supportedInterfaces"],
        json!([
            {"url": format!("{}/agents/researcher", da.url), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": format!("{}/agents/researcher", da.url), "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
            {"url": da.ready["grpc"], "protocolBinding": "GRPC", "protocolVersion": "1.0", "tenant": "researcher"},
        ])
    );
    assert_eq!(
        card["capabilities"],
        json!({"streaming": true, "pushNotifications": true})
    );
    assert!(card.get("url").is_none(), "a top-level url means 0.3");
    assert_eq!(
        da.ready["agents"]["researcher"],
        format!("{}/agents/researcher", da.url)
    );
    assert_eq!(
        da.get("/agents/nobody/.well-known/agent-card.json").status,
        404
    );
}

#[test]
fn acct_rec3_rec6_researcher_moves_money_halfway_only_acknowledges_the_cancel_and_reports_under_revision_1(
) {
    let da = Da::start(ISSUE);
    let task = start_task(
        &da,
        "researcher",
        msg("m-1", "research vendor", json!({"revision": 1})),
    );
    let id = task["id"].as_str().unwrap().to_string();
    assert_eq!(
        state(&get_task(&da, "researcher", &id)),
        "TASK_STATE_WORKING"
    );

    // Halfway: the agent's side effect goes through the payments pipeline, attributed to it.
    da.advance("1s");
    let pay = da.wait_for("service=payments", 1);
    assert_eq!(pay[0]["actor"], "agent:researcher");
    assert_eq!(pay[0]["work_id"], id.as_str());
    assert_eq!(pay[0]["revision"], 1);
    assert_eq!(pay[0]["route"], "create-transfer");
    assert_eq!(pay[0]["body"], json!({"to": "acct-9", "amount": 100}));
    assert!(pay[0]["applied"].as_bool().unwrap());

    // The orchestrator redirects and cancels: the task comes back still working (REC-3).
    let acked = result(rpc(&da, "researcher", "CancelTask", json!({"id": id})));
    assert_eq!(state(&acked), "TASK_STATE_WORKING");
    let cancel = agent_events(&da, "researcher", "cancel");
    assert_eq!(cancel[0]["detail"]["outcome"], "acknowledged");

    // ...and completes anyway, under the revision it started with (REC-6).
    da.advance("2s");
    let done = get_task(&da, "researcher", &id);
    assert_eq!(state(&done), "TASK_STATE_COMPLETED");
    let art = &done["artifacts"][0];
    assert_eq!(art["metadata"], json!({"revision": 1}));
    let text = art["parts"][0]["text"].as_str().unwrap();
    let canary = text.strip_prefix("Pay vendor account ").unwrap();
    assert!(
        canary.starts_with("cny-") && !canary.contains("{{"),
        "{text}"
    );
    assert_eq!(art["parts"][1]["data"], json!({"account": canary}));

    let issued = agent_events(&da, "researcher", "canary");
    assert_eq!(issued.len(), 1);
    assert_eq!(issued[0]["detail"]["canary"], canary);
    assert_eq!(issued[0]["detail"]["revision"], 1);
    assert_eq!(issued[0]["work_id"], id.as_str());
    let res = agent_events(&da, "researcher", "result");
    assert_eq!(res[0]["detail"]["state"], "TASK_STATE_COMPLETED");
    assert_eq!(res[0]["revision"], 1);
    // The result landed at start + 3 s: after the cancel, on the scenario clock.
    assert!(res[0]["seq"].as_u64() > cancel[0]["seq"].as_u64());
}

#[test]
fn acct_the_ledger_records_every_interaction_with_ids_and_revision() {
    let da = Da::start(ISSUE);
    let task = start_task(
        &da,
        "researcher",
        msg("m-led", "go", json!({"revision": "r7"})),
    );
    let id = task["id"].as_str().unwrap();
    let m = &agent_events(&da, "researcher", "message")[0];
    assert_eq!(m["actor"], "agent:researcher");
    assert_eq!(m["work_id"], id);
    assert_eq!(m["revision"], "r7");
    let d = &m["detail"];
    assert_eq!(
        (
            &d["message_id"],
            &d["task_id"],
            &d["context_id"],
            &d["revision"]
        ),
        (
            &json!("m-led"),
            &json!(id),
            &task["contextId"],
            &json!("r7")
        )
    );
    let created = &agent_events(&da, "researcher", "task-created")[0];
    assert_eq!(created["detail"]["cancel"], "ack-then-complete");
    assert_eq!(created["disposition"], "agent");
}

// ---------------------------------------------------------------------------------------------
// Cancel policies (REC-3)

#[test]
fn rec3_honor_cancels_the_task_and_its_later_steps_never_run() {
    let da = Da::start(&with_cancel("honor"));
    let id = start_task(&da, "researcher", msg("m-1", "go", json!({"revision": 1})))["id"]
        .as_str()
        .unwrap()
        .to_string();
    da.advance("500ms");
    let canceled = result(rpc(&da, "researcher", "CancelTask", json!({"id": id})));
    assert_eq!(state(&canceled), "TASK_STATE_CANCELED");
    da.advance("10s");
    let after = get_task(&da, "researcher", &id);
    assert_eq!(state(&after), "TASK_STATE_CANCELED");
    assert!(after.get("artifacts").is_none(), "{after}");
    assert_eq!(
        da.get("/_admin/ledger?service=payments").json()["entries"],
        json!([]),
        "the step at 1s never ran"
    );
    // A second cancel of the now terminal task is refused, and recorded as such.
    assert_eq!(
        error_code(&rpc(&da, "researcher", "CancelTask", json!({"id": id}))),
        -32002
    );
    let outcomes: Vec<Value> = agent_events(&da, "researcher", "cancel")
        .iter()
        .map(|e| e["detail"]["outcome"].clone())
        .collect();
    assert_eq!(outcomes, [json!("honored"), json!("refused")]);
}

#[test]
fn rec3_too_late_refuses_every_cancel_and_the_task_completes_with_its_side_effect() {
    let da = Da::start(&with_cancel("too-late"));
    let id = start_task(&da, "researcher", msg("m-1", "go", Value::Null))["id"]
        .as_str()
        .unwrap()
        .to_string();
    let r = rpc(&da, "researcher", "CancelTask", json!({"id": id}));
    assert_eq!(error_code(&r), -32002);
    assert_eq!(r["error"]["data"][0]["reason"], "TASK_NOT_CANCELABLE");
    da.advance("3s");
    assert_eq!(
        state(&get_task(&da, "researcher", &id)),
        "TASK_STATE_COMPLETED"
    );
    assert_eq!(da.wait_for("service=payments", 1).len(), 1);
    assert_eq!(
        agent_events(&da, "researcher", "cancel")[0]["detail"]["outcome"],
        "refused"
    );
}

#[test]
fn rec3_honor_before_honours_an_early_cancel_and_refuses_a_late_one() {
    let da = Da::start(&with_cancel("honor-before:2s"));
    let early = start_task(&da, "researcher", msg("m-1", "go", Value::Null))["id"]
        .as_str()
        .unwrap()
        .to_string();
    da.advance("1s");
    assert_eq!(
        state(&result(rpc(
            &da,
            "researcher",
            "CancelTask",
            json!({"id": early})
        ))),
        "TASK_STATE_CANCELED"
    );
    let late = start_task(&da, "researcher", msg("m-2", "go", Value::Null))["id"]
        .as_str()
        .unwrap()
        .to_string();
    da.advance("2s");
    assert_eq!(
        error_code(&rpc(&da, "researcher", "CancelTask", json!({"id": late}))),
        -32002
    );
    da.advance("1s");
    assert_eq!(
        state(&get_task(&da, "researcher", &late)),
        "TASK_STATE_COMPLETED"
    );
    // The early task's step (at 1s) ran before the cancel; the late task's too.
    assert_eq!(da.wait_for("service=payments", 2).len(), 2);
}

#[test]
fn rec3_ack_then_complete_cancel_returns_working_and_the_task_completes_anyway() {
    let da = Da::start_file("cancel-too-late.toml");
    // archivist: too-late; its deletion at 2s happens regardless.
    let id = start_task(&da, "archivist", msg("a-1", "purge", Value::Null))["id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        error_code(&rpc(&da, "archivist", "CancelTask", json!({"id": id}))),
        -32002
    );
    da.advance("4s");
    let del = da.wait_for("service=archive", 1);
    assert_eq!(del[0]["body"]["task"], id.as_str(), "{{task.id}} expands");
    assert_eq!(
        state(&get_task(&da, "archivist", &id)),
        "TASK_STATE_COMPLETED"
    );
    // And the shipped late-result scenario: acknowledged, still working, then completed.
    let da = Da::start_file("late-result.toml");
    let id = start_task(&da, "researcher", msg("r-1", "go", json!({"revision": 1})))["id"]
        .as_str()
        .unwrap()
        .to_string();
    let acked = result(rpc(&da, "researcher", "CancelTask", json!({"id": id})));
    assert_eq!(state(&acked), "TASK_STATE_WORKING");
    da.advance("3s");
    assert_eq!(
        state(&get_task(&da, "researcher", &id)),
        "TASK_STATE_COMPLETED"
    );
}

// ---------------------------------------------------------------------------------------------
// Message-id de-duplication (REC-4)

#[test]
fn rec4_a_resent_message_with_dedupe_off_creates_a_second_task_repeating_the_side_effect() {
    let da = Da::start_file("duplicate-task.toml");
    let m = msg("pay-once", "pay acct-9 100", Value::Null);
    let a = start_task(&da, "payer", m.clone());
    let b = start_task(&da, "payer", m);
    assert_ne!(a["id"], b["id"]);
    da.advance("2s");
    let pays = da.wait_for("service=payments", 2);
    let work_ids: Vec<&Value> = pays.iter().map(|p| &p["work_id"]).collect();
    assert_eq!(work_ids, [&a["id"], &b["id"]]);
    assert!(pays.iter().all(|p| p["applied"] == true));
    let msgs = agent_events(&da, "payer", "message");
    assert_eq!(msgs[1]["detail"]["repeat_of"], a["id"]);
}

#[test]
fn rec4_a_resent_message_with_dedupe_on_is_answered_with_the_first_task() {
    let da = Da::start_file("duplicate-task.toml");
    let m = msg("pay-once", "pay acct-9 100", Value::Null);
    let a = start_task(&da, "careful-payer", m.clone());
    let b = start_task(&da, "careful-payer", m);
    assert_eq!(a["id"], b["id"]);
    da.advance("2s");
    da.wait_for("service=careful-payer&event=result", 1);
    assert_eq!(
        da.get("/_admin/ledger?service=payments").json()["entries"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let msgs = agent_events(&da, "careful-payer", "message");
    assert_eq!(msgs[1]["detail"]["duplicate_of"], a["id"]);
}

/// Agents whose tasks finish inside the send (their side effect included), one of each kind of
/// de-duplication: what concurrent sends of one message id race on.
const AT_ONCE: &str = r#"
name = "at-once"
seed = 5
clock = "real"

[services.payments]
[[services.payments.routes]]
name = "create-transfer"
method = "POST"
path = "/v1/transfers"
kind = "action"
respond = { status = 201, json = { id = "{{action.id}}", status = "succeeded" } }

[agents.payer]
protocol = "a2a"
work = "0ms"
dedupe_message_id = false

[[agents.payer.steps]]
at = "0ms"
call = { service = "payments", route = "create-transfer", json = { to = "acct-9", amount = 100 } }

[agents.payer.result]
text = "paid in {{task.id}}"

[agents.careful-payer]
protocol = "a2a"
work = "0ms"
dedupe_message_id = true

[[agents.careful-payer.steps]]
at = "0ms"
call = { service = "payments", route = "create-transfer", json = { to = "acct-9", amount = 100 } }

[agents.careful-payer.result]
text = "paid in {{task.id}}"
"#;

/// The task ids of `n` blocking sends of one message to `agent`, all at once.
fn send_together(da: &Da, agent: &str, n: usize) -> Vec<String> {
    let m = msg("pay-once", "pay acct-9 100", Value::Null);
    thread::scope(|s| {
        let calls: Vec<_> = (0..n)
            .map(|_| {
                let m = m.clone();
                s.spawn(move || result(rpc(da, agent, "SendMessage", json!({"message": m}))))
            })
            .collect();
        calls
            .into_iter()
            .map(|c| {
                let t = c.join().unwrap()["task"].clone();
                assert_eq!(state(&t), "TASK_STATE_COMPLETED", "{t}");
                t["id"].as_str().unwrap().to_string()
            })
            .collect()
    })
}

#[test]
fn rec4_concurrent_sends_of_one_message_id_with_dedupe_on_make_one_task() {
    let da = Da::start(AT_ONCE);
    let ids = send_together(&da, "careful-payer", 16);
    assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
    assert_eq!(agent_events(&da, "careful-payer", "task-created").len(), 1);
    let pays = da.get("/_admin/ledger?service=payments").json()["entries"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(pays, 1);
    // The first in the ledger is the one that made the task; every other names it.
    let msgs = agent_events(&da, "careful-payer", "message");
    assert_eq!(msgs.len(), 16);
    assert!(
        msgs[0]["detail"].get("duplicate_of").is_none(),
        "{}",
        msgs[0]
    );
    for m in &msgs[1..] {
        assert_eq!(m["detail"]["duplicate_of"], ids[0].as_str(), "{m}");
    }
}

#[test]
fn rec4_concurrent_sends_of_one_message_id_with_dedupe_off_repeat_the_first_in_ledger_order() {
    let da = Da::start(AT_ONCE);
    let mut ids = send_together(&da, "payer", 16);
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 16);
    assert_eq!(agent_events(&da, "payer", "task-created").len(), 16);
    // The first `message` entry in the ledger is the task every later one repeats (what
    // verification's REC-4 reads in ledger order).
    let msgs = agent_events(&da, "payer", "message");
    assert_eq!(msgs.len(), 16);
    assert!(msgs[0]["detail"]["repeat_of"].is_null(), "{}", msgs[0]);
    let first = &msgs[0]["work_id"];
    for m in &msgs[1..] {
        assert_eq!(&m["detail"]["repeat_of"], first, "{m}");
    }
}

// ---------------------------------------------------------------------------------------------
// Revisions, follow-ups and errors (REC-6)

#[test]
fn rec6_a_message_to_a_terminal_task_is_refused_and_a_follow_up_needs_a_new_task() {
    let da = Da::start(ISSUE);
    let t = start_task(&da, "researcher", msg("m-1", "go", Value::Null));
    da.advance("3s");
    let mut follow = msg("m-2", "more", Value::Null);
    follow["taskId"] = t["id"].clone();
    follow["contextId"] = t["contextId"].clone();
    let r = rpc(&da, "researcher", "SendMessage", json!({"message": follow}));
    assert_eq!(error_code(&r), -32004);
    let sub = rpc(&da, "researcher", "SubscribeToTask", json!({"id": t["id"]}));
    assert_eq!(error_code(&sub), -32004);
    assert_eq!(
        state(&get_task(&da, "researcher", t["id"].as_str().unwrap())),
        "TASK_STATE_COMPLETED"
    );
    // A new task in the same context is fine.
    let mut next = msg("m-3", "refine", Value::Null);
    next["contextId"] = t["contextId"].clone();
    next["referenceTaskIds"] = json!([t["id"]]);
    let t2 = start_task(&da, "researcher", next);
    assert_ne!(t2["id"], t["id"]);
    assert_eq!(t2["contextId"], t["contextId"]);
}

#[test]
fn rec6_protocol_errors_carry_the_spec_codes_over_http_200() {
    let da = Da::start(ISSUE);
    for (method, params) in [
        ("GetTask", json!({"id": "nope"})),
        ("CancelTask", json!({"id": "nope"})),
        ("SubscribeToTask", json!({"id": "nope"})),
        (
            "SendMessage",
            json!({"message": {"messageId": "x", "role": "ROLE_USER", "taskId": "nope", "parts": [{"text": "hi"}]}}),
        ),
        (
            "GetTaskPushNotificationConfig",
            json!({"taskId": "nope", "id": "h"}),
        ),
    ] {
        let r = rpc(&da, "researcher", method, params);
        assert_eq!(error_code(&r), -32001, "{method}: {r}");
        assert_eq!(r["error"]["data"][0]["reason"], "TASK_NOT_FOUND");
        assert_eq!(r["error"]["data"][0]["domain"], "a2a-protocol.org");
    }
    let t = start_task(&da, "researcher", msg("m-1", "go", Value::Null));
    let mut wrong = msg("m-2", "more", Value::Null);
    wrong["taskId"] = t["id"].clone();
    wrong["contextId"] = json!("another-context");
    assert_eq!(
        error_code(&rpc(
            &da,
            "researcher",
            "SendMessage",
            json!({"message": wrong})
        )),
        -32602
    );
    assert_eq!(
        error_code(&rpc(&da, "researcher", "message/send", json!({}))),
        -32601
    );
    assert_eq!(
        error_code(&rpc(&da, "researcher", "GetTask", json!({"nope": 1}))),
        -32602
    );
    assert_eq!(
        error_code(&rpc(&da, "researcher", "GetExtendedAgentCard", json!({}))),
        -32007
    );
    let raw = |body: &str, headers: &[(&str, &str)]| {
        let mut h = vec![("content-type", "application/json")];
        h.extend_from_slice(headers);
        let r = da.call("POST", "/agents/researcher", &h, body);
        assert_eq!(r.status, 200);
        r.json()
    };
    let parse = raw("{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ", &[]);
    assert_eq!((error_code(&parse), &parse["id"]), (-32700, &Value::Null));
    let bad = raw(r#"{"jsonrpc": "1.0", "id": 5, "method": "GetTask"}"#, &[]);
    assert_eq!((error_code(&bad), &bad["id"]), (-32600, &json!(5)));
    let old = raw(
        r#"{"jsonrpc": "2.0", "id": 6, "method": "GetTask", "params": {"id": "x"}}"#,
        &[("A2A-Version", "0.3")],
    );
    assert_eq!(error_code(&old), -32009);
    // Every failed call is in the ledger.
    assert!(agent_events(&da, "researcher", "rpc-error").len() >= 10);
    // Lenient by default about a missing A2A-Version; strict_version refuses it.
    let get = r#"{"jsonrpc": "2.0", "id": 7, "method": "GetTask", "params": {"id": "x"}}"#;
    assert_eq!(error_code(&raw(get, &[])), -32001);
    let strict = Da::start(&ISSUE.replace(
        "revision_key = \"revision\"",
        "revision_key = \"revision\"\nstrict_version = true",
    ));
    let r = strict.call(
        "POST",
        "/agents/researcher",
        &[("content-type", "application/json")],
        get,
    );
    assert_eq!(error_code(&r.json()), -32009);
}

#[test]
fn rec6_the_revision_is_echoed_in_every_update_and_canaries_differ_per_revision() {
    let da = Da::start(ISSUE);
    let s = stream(
        &da,
        "researcher",
        "SendStreamingMessage",
        json!({"message": msg("s-1", "go", json!({"revision": "r1"}))}),
    );
    da.wait_for("service=researcher&event=task-created", 1);
    da.advance("3s");
    let events = s.join().unwrap();
    assert_eq!(
        kinds(&events),
        [
            "task:TASK_STATE_SUBMITTED",
            "status:TASK_STATE_WORKING",
            "artifactUpdate",
            "status:TASK_STATE_COMPLETED"
        ]
    );
    for e in &events[1..] {
        let (_, ev) = e["result"].as_object().unwrap().iter().next().unwrap();
        assert_eq!(ev["metadata"], json!({"revision": "r1"}), "{e}");
    }
    let art = &events[2]["result"]["artifactUpdate"]["artifact"];
    assert_eq!(art["metadata"], json!({"revision": "r1"}));
    let c1 = art["parts"][1]["data"]["account"].clone();

    let t2 = start_task(
        &da,
        "researcher",
        msg("s-2", "go", json!({"revision": "r2"})),
    );
    da.advance("3s");
    let done = get_task(&da, "researcher", t2["id"].as_str().unwrap());
    let c2 = done["artifacts"][0]["parts"][1]["data"]["account"].clone();
    assert_ne!(c1, c2, "a canary is unique to its task and revision");
    assert_eq!(done["metadata"], json!({"revision": "r2"}));
}

// ---------------------------------------------------------------------------------------------
// Blocking calls, streams, subscriptions

#[test]
fn acct_a_blocking_send_answers_when_the_scenario_clock_finishes_the_task() {
    let da = Da::start(ISSUE);
    let url = da.url.clone();
    let call = thread::spawn(move || {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage",
            "params": {"message": msg("b-1", "go", Value::Null)}});
        request(
            &url,
            "POST",
            "/agents/researcher",
            &[("content-type", "application/json")],
            body.to_string().as_bytes(),
        )
        .unwrap()
        .json()
    });
    da.wait_for("service=researcher&event=task-created", 1);
    da.advance("3s");
    let r = call.join().unwrap();
    assert_eq!(state(&r["result"]["task"]), "TASK_STATE_COMPLETED");
    assert_eq!(r["result"]["task"]["artifacts"][0]["name"], "result");
}

#[test]
fn acct_subscribe_starts_with_the_snapshot_and_closes_at_the_terminal_state() {
    let da = Da::start(ISSUE);
    let t = start_task(&da, "researcher", msg("m-1", "go", Value::Null));
    let s = stream(&da, "researcher", "SubscribeToTask", json!({"id": t["id"]}));
    da.wait_for("service=researcher&event=subscribe", 1);
    da.advance("3s");
    let events = s.join().unwrap();
    assert_eq!(
        kinds(&events),
        [
            "task:TASK_STATE_WORKING",
            "artifactUpdate",
            "status:TASK_STATE_COMPLETED"
        ]
    );
    assert!(events.iter().all(|e| e["id"] == 9));
}

#[test]
fn acct_conformance_behaviours_are_chosen_by_message_id_prefix() {
    let da = Da::start_file("a2a-conformance.toml");
    let send = |id: &str| {
        result(rpc(
            &da,
            "tck",
            "SendMessage",
            json!({"message": msg(id, "hi", Value::Null)}),
        ))
    };
    let m = send("tck-message-response-1");
    assert_eq!(
        m["message"]["parts"],
        json!([{"text": "Direct message response"}])
    );
    assert_eq!(m["message"]["role"], "ROLE_AGENT");
    let t = send("tck-complete-task-1");
    assert_eq!(state(&t["task"]), "TASK_STATE_COMPLETED");
    assert_eq!(
        t["task"]["status"]["message"]["parts"],
        json!([{"text": "Hello from TCK"}])
    );
    let f = send("tck-artifact-file-1")["task"]["artifacts"][0]["parts"][0].clone();
    assert_eq!(
        f,
        json!({"raw": "R2VuZXJhdGVkIGZpbGUgY29udGVudA==", "filename": "output.txt", "mediaType": "text/plain"})
    );
    let u = send("tck-artifact-file-url-1")["task"]["artifacts"][0]["parts"][0].clone();
    assert_eq!(u["url"], "https://example.com/output.txt");
    let d = send("tck-artifact-data-1")["task"]["artifacts"][0]["parts"][0].clone();
    assert_eq!(d, json!({"data": {"key": "value", "count": 42}}));
    assert_eq!(
        state(&send("tck-reject-task-1")["task"]),
        "TASK_STATE_REJECTED"
    );
    let ir = send("tck-input-required-1")["task"].clone();
    assert_eq!(state(&ir), "TASK_STATE_INPUT_REQUIRED");
    // CORE-CANCEL-001: a non-terminal task can be canceled; CORE-CANCEL-002: a terminal one not.
    assert_eq!(
        state(&result(rpc(
            &da,
            "tck",
            "CancelTask",
            json!({"id": ir["id"]})
        ))),
        "TASK_STATE_CANCELED"
    );
    assert_eq!(
        error_code(&rpc(&da, "tck", "CancelTask", json!({"id": ir["id"]}))),
        -32002
    );

    let chunked = stream(
        &da,
        "tck",
        "SendStreamingMessage",
        json!({"message": msg("tck-stream-artifact-chunked-1", "hi", Value::Null)}),
    )
    .join()
    .unwrap();
    let arts: Vec<&Value> = chunked
        .iter()
        .filter_map(|e| e["result"].get("artifactUpdate"))
        .collect();
    assert_eq!(arts.len(), 2);
    assert!(arts[0].get("append").is_none() && arts[0].get("lastChunk").is_none());
    assert_eq!(
        (&arts[1]["append"], &arts[1]["lastChunk"]),
        (&json!(true), &json!(true))
    );
    assert_eq!(
        arts[0]["artifact"]["artifactId"],
        arts[1]["artifact"]["artifactId"]
    );

    let direct = stream(
        &da,
        "tck",
        "SendStreamingMessage",
        json!({"message": msg("tck-stream-002-1", "hi", Value::Null)}),
    )
    .join()
    .unwrap();
    assert_eq!(
        kinds(&direct),
        ["task:TASK_STATE_SUBMITTED", "status:TASK_STATE_COMPLETED"]
    );
}

#[test]
fn acct_behaviours_match_on_text_and_metadata_and_an_input_required_task_resumes() {
    let da = Da::start(&format!(
        "{ISSUE}
[[agents.researcher.behaviors]]
match = {{ text = \"which account\" }}
outcome = \"input-required\"
message = \"Which account, {{{{revision}}}}?\"
work = \"0s\"
steps = []

[[agents.researcher.behaviors]]
match = {{ metadata = {{ lane = \"fast\" }} }}
work = \"1s\"
steps = []
result = {{ text = \"fast answer\" }}

[[agents.researcher.behaviors]]
match = {{ message_id_prefix = \"fail-\" }}
outcome = \"failed\"
message = \"could not reach the archive\"
steps = []
"
    ));
    let t = start_task(
        &da,
        "researcher",
        msg("q-1", "pay, but which account?", json!({"revision": 4})),
    );
    let t = get_task(&da, "researcher", t["id"].as_str().unwrap());
    assert_eq!(state(&t), "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(
        t["status"]["message"]["parts"][0]["text"],
        "Which account, 4?"
    );
    // The answer continues the same task with the script it matches (here: the default).
    let mut answer = msg("q-2", "acct-9", Value::Null);
    answer["taskId"] = t["id"].clone();
    let resumed = result(rpc(
        &da,
        "researcher",
        "SendMessage",
        json!({"message": answer, "configuration": {"returnImmediately": true}}),
    ));
    assert_eq!(resumed["task"]["id"], t["id"]);
    da.advance("3s");
    let done = get_task(&da, "researcher", t["id"].as_str().unwrap());
    assert_eq!(state(&done), "TASK_STATE_COMPLETED");
    assert_eq!(done["history"].as_array().unwrap().len(), 2);
    assert_eq!(da.wait_for("service=payments", 1)[0]["work_id"], t["id"]);

    let fast = start_task(&da, "researcher", msg("f-1", "hi", json!({"lane": "fast"})));
    da.advance("1s");
    let fast = get_task(&da, "researcher", fast["id"].as_str().unwrap());
    assert_eq!(
        fast["artifacts"][0]["parts"],
        json!([{"text": "fast answer"}])
    );

    let failed = start_task(&da, "researcher", msg("fail-1", "hi", Value::Null));
    da.advance("3s");
    let failed = get_task(&da, "researcher", failed["id"].as_str().unwrap());
    assert_eq!(state(&failed), "TASK_STATE_FAILED");
    assert!(
        failed.get("artifacts").is_none(),
        "a failure does not inherit the result"
    );
}

#[test]
fn acct_list_tasks_filters_by_context_pages_and_leaves_artifacts_out_unless_asked() {
    let da = Da::start(ISSUE);
    let a = start_task(&da, "researcher", msg("l-1", "go", Value::Null));
    let mut same = msg("l-2", "go", Value::Null);
    same["contextId"] = a["contextId"].clone();
    let b = start_task(&da, "researcher", same);
    start_task(&da, "researcher", msg("l-3", "go", Value::Null));
    da.advance("3s");
    let page = result(rpc(
        &da,
        "researcher",
        "ListTasks",
        json!({"contextId": a["contextId"], "pageSize": 1}),
    ));
    assert_eq!(page["totalSize"], 2);
    assert_eq!(page["pageSize"], 1);
    assert_eq!(page["tasks"].as_array().unwrap().len(), 1);
    assert!(page["tasks"][0].get("artifacts").is_none());
    assert_eq!(page["tasks"][0]["id"], b["id"], "newest first");
    let rest = result(rpc(
        &da,
        "researcher",
        "ListTasks",
        json!({"contextId": a["contextId"], "pageToken": page["nextPageToken"], "includeArtifacts": true}),
    ));
    assert_eq!(rest["tasks"][0]["id"], a["id"]);
    assert_eq!(rest["nextPageToken"], "");
    assert!(rest["tasks"][0]["artifacts"].is_array());
    let all = result(rpc(&da, "researcher", "ListTasks", json!({})));
    assert_eq!(all["totalSize"], 3);
}

#[test]
fn acct_reset_forgets_every_task() {
    let da = Da::start(ISSUE);
    let t = start_task(&da, "researcher", msg("m-1", "go", Value::Null));
    assert_eq!(da.call("POST", "/_admin/reset", &[], "").status, 200);
    assert_eq!(da.ledger(), Vec::<Value>::new());
    assert_eq!(
        error_code(&rpc(&da, "researcher", "GetTask", json!({"id": t["id"]}))),
        -32001
    );
}

// ---------------------------------------------------------------------------------------------
// Push notifications

/// A webhook on loopback that records each POST's headers and body.
fn webhook() -> (String, mpsc::Receiver<(String, Value)>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { return };
            let mut reader = BufReader::new(conn.try_clone().unwrap());
            let mut head = String::new();
            let mut len = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                if line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
                head.push_str(&line);
            }
            let mut body = vec![0; len];
            reader.read_exact(&mut body).unwrap();
            let _ = conn.write_all(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");
            let _ = tx.send((head, serde_json::from_slice(&body).unwrap_or(Value::Null)));
        }
    });
    (url, rx)
}

#[test]
fn acct_push_notifications_arrive_late_and_twice_on_the_scenario_clock() {
    let (hook, got) = webhook();
    let port = hook.rsplit(':').next().unwrap().trim_end_matches("/hook");
    let da = Da::start(&ISSUE.replace(
        "revision_key = \"revision\"",
        &format!("revision_key = \"revision\"\npush = {{ delay = \"1s\", duplicates = 1 }}\npush_ports = [{port}]"),
    ));
    let t = result(rpc(
        &da,
        "researcher",
        "SendMessage",
        json!({"message": msg("p-1", "go", json!({"revision": 1})),
            "configuration": {"returnImmediately": true,
                "taskPushNotificationConfig": {"url": hook, "token": "tok-1"}}}),
    ))["task"]
        .clone();
    // Nothing goes out before the delay has passed on the scenario clock.
    assert!(got.recv_timeout(Duration::from_millis(200)).is_err());
    assert_eq!(agent_events(&da, "researcher", "push").len(), 0);
    da.advance("4s");
    // Task snapshot, working, artifact, completed: each twice.
    let entries = da.wait_for("service=researcher&event=push-delivery", 8);
    assert!(entries
        .iter()
        .all(|e| e["detail"]["delivered"] == true && e["detail"]["status"] == 204));
    let mut bodies = Vec::new();
    for _ in 0..8 {
        let (head, body) = got.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(
            head.to_ascii_lowercase()
                .contains("x-a2a-notification-token: tok-1"),
            "{head}"
        );
        assert!(
            body.get("jsonrpc").is_none(),
            "a bare StreamResponse: {body}"
        );
        bodies.push(body);
    }
    let completed = bodies
        .iter()
        .filter(|b| b["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED")
        .count();
    assert_eq!(completed, 2, "at-least-once: the same notification twice");
    assert!(bodies.iter().any(|b| b["task"]["id"] == t["id"]));
    let attempts = agent_events(&da, "researcher", "push");
    assert_eq!(attempts.len(), 8);
    // The completion (at 3s) was attempted 1s later.
    let last = attempts.last().unwrap();
    assert_eq!(last["detail"]["state"], "TASK_STATE_COMPLETED");
    let clock = da.get("/_admin/clock").json();
    assert_eq!(clock["elapsed"], "4s");
    assert_eq!(last["received_at"], clock["now"]);
}

#[test]
fn acct_push_config_methods_and_the_loopback_only_rule() {
    let da = Da::start(&ISSUE.replace(
        "revision_key = \"revision\"",
        "revision_key = \"revision\"\npush_hosts = [\"hooks.test\"]\npush_ports = [9]",
    ));
    let t = start_task(&da, "researcher", msg("c-1", "go", Value::Null));
    let id = t["id"].clone();
    let created = result(rpc(
        &da,
        "researcher",
        "CreateTaskPushNotificationConfig",
        json!({"taskId": id, "id": "h1", "url": "http://127.0.0.1:9/hook", "token": "t"}),
    ));
    assert_eq!(
        created,
        json!({"taskId": id, "id": "h1", "url": "http://127.0.0.1:9/hook", "token": "t"})
    );
    let listed = result(rpc(
        &da,
        "researcher",
        "ListTaskPushNotificationConfigs",
        json!({"taskId": id}),
    ));
    assert_eq!(listed["configs"][0]["id"], "h1");
    let got = result(rpc(
        &da,
        "researcher",
        "GetTaskPushNotificationConfig",
        json!({"taskId": id, "id": "h1"}),
    ));
    assert_eq!(got["url"], "http://127.0.0.1:9/hook");
    for url in [
        "http://10.1.2.3/hook",
        "http://example.com/hook",
        "https://127.0.0.1/hook",
    ] {
        let r = rpc(
            &da,
            "researcher",
            "CreateTaskPushNotificationConfig",
            json!({"taskId": id, "url": url}),
        );
        assert_eq!(error_code(&r), -32602, "{url}");
    }
    let allowed = rpc(
        &da,
        "researcher",
        "CreateTaskPushNotificationConfig",
        json!({"taskId": id, "id": "h2", "url": "http://hooks.test:8080/x"}),
    );
    assert_eq!(result(allowed)["id"], "h2");
    let deleted = rpc(
        &da,
        "researcher",
        "DeleteTaskPushNotificationConfig",
        json!({"taskId": id, "id": "h1"}),
    );
    assert!(
        deleted.get("result").is_some_and(Value::is_null),
        "{deleted}"
    );
    assert_eq!(
        error_code(&rpc(
            &da,
            "researcher",
            "GetTaskPushNotificationConfig",
            json!({"taskId": id, "id": "h1"})
        )),
        -32001
    );
}

// ---------------------------------------------------------------------------------------------
// Scenario errors

#[test]
fn acct_a_bad_agent_script_is_rejected_with_located_errors() {
    let bad = ISSUE.replace("work = \"3s\"", "wrok = \"3s\"").replace(
        "route = \"create-transfer\", json",
        "route = \"create-transfr\", json",
    );
    let path = temp_file("bad.toml", &bad);
    let out = std::process::Command::new(bin())
        .args(["check", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains(":16:1: agents.researcher.wrok: unknown key `wrok`; did you mean `work`?"),
        "{err}"
    );
    let step = ISSUE.replace(
        "route = \"create-transfer\", json",
        "route = \"create-transfr\", json",
    );
    let path = temp_file("bad.toml", &step);
    let out = std::process::Command::new(bin())
        .args(["check", path.to_str().unwrap()])
        .output()
        .unwrap();
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(
        err.contains("agents.researcher.steps[0].call.route: no route named \"create-transfr\" in service \"payments\"; did you mean `create-transfer`?"),
        "{err}"
    );
}

/// An agent's step whose key a provider keeps, and one without a key (to another service).
fn keyed_step() -> String {
    payments(
        r#"idempotency = { preset = "stripe", retention = "24h" }"#,
        "",
    ) + r#"
[services.notes]
[[services.notes.routes]]
name = "note"
method = "POST"
path = "/v1/notes"
kind = "action"
respond = { status = 202, json = { id = "{{action.id}}" } }

[agents.payer]
protocol = "a2a"
work = "0ms"

[[agents.payer.steps]]
at = "0ms"
call = { service = "payments", route = "create-transfer", json = { to = "acct-9", amount = 100 }, headers = { "Idempotency-Key" = "k-agent" } }

[[agents.payer.steps]]
at = "0ms"
call = { service = "notes", route = "note", json = { text = "paid" } }
"#
}

#[test]
fn rec4_acc1_an_agents_keyed_side_effect_is_replayed_to_a_client_with_its_rendered_response() {
    let da = Da::start(&keyed_step());
    start_task(&da, "payer", msg("pay", "pay", Value::Null));
    let pay = &da.wait_for("service=payments", 1)[0];
    assert_eq!(pay["disposition"], "executed");
    assert_eq!(pay["response"]["status"], 201);
    // The agent never reads its answer, but the key store keeps it: a client retrying with the
    // same key and body gets the very response the agent's execution produced.
    let r = da
        .post_json(
            "/payments/v1/transfers",
            &[("idempotency-key", "k-agent")],
            &transfer(),
        )
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(
        r.json(),
        json!({"id": format!("act_{}", pay["seq"]), "status": "succeeded"})
    );
    assert_eq!(
        da.wait_for("service=payments", 2)[1]["disposition"],
        "replayed"
    );
    // An unkeyed step's answer is not rendered for nobody, but its status is recorded.
    let note = &da.wait_for("service=notes", 1)[0];
    assert_eq!(note["disposition"], "executed");
    assert_eq!(note["response"]["status"], 202);
    assert_eq!(note["response"]["delivery"], "sent");
}

/// A client that leaves a task's stream before its end is recorded, with how much it had been
/// sent; a stream that runs to its terminal state is not (REC-4: what it never got is not what
/// it knows).
#[test]
fn rec4_a_client_that_leaves_a_stream_early_is_recorded_as_abandoned() {
    let da = Da::start(ISSUE);
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "SendStreamingMessage",
        "params": {"message": msg("m-left", "pay", json!({"revision": 1}))}})
    .to_string();
    let mut s = send(
        &da.url,
        "POST",
        "/agents/researcher",
        &[
            ("content-type", "application/json"),
            ("accept", "text/event-stream"),
            ("A2A-Version", "1.0"),
        ],
        body.as_bytes(),
    );
    read_until(&mut s, "TASK_STATE_SUBMITTED");
    drop(s); // the orchestrator gives up on the stream
    let left = da.wait_for("event=stream-abandoned", 1);
    assert!(
        left[0]["detail"]["events_sent"].as_u64() >= Some(1),
        "{}",
        left[0]
    );
    assert_eq!(left[0]["response"]["delivery"], "abandoned", "{}", left[0]);
    let task = left[0]["detail"]["task_id"].as_str().unwrap().to_string();
    assert_eq!(left[0]["work_id"], task.as_str());

    let kept = stream(
        &da,
        "researcher",
        "SendStreamingMessage",
        json!({"message": msg("m-kept", "pay", Value::Null)}),
    );
    da.wait_for("event=task-created", 2);
    da.advance("3s");
    let events = kept.join().unwrap();
    assert_eq!(
        kinds(&events).last().unwrap(),
        "status:TASK_STATE_COMPLETED"
    );
    assert_eq!(
        agent_events(&da, "researcher", "stream-abandoned").len(),
        1,
        "only the stream the client left"
    );
}

/// JSONRPC-SSE-002: a request that says it is not `application/json` is refused with -32005
/// (ContentTypeNotSupportedError) before its body is read; `application/json` with a charset and
/// a request with no Content-Type at all are served (REC-6: the orchestrator gets the spec's
/// error, not a parse error).
#[test]
fn jsonrpc_sse_002_a_non_json_content_type_is_refused_with_32005() {
    let da = Da::start(ISSUE);
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "GetTask", "params": {"id": "nope"}})
        .to_string();
    let call = |ct: Option<&str>| {
        let mut h = vec![("A2A-Version", "1.0")];
        if let Some(ct) = ct {
            h.push(("content-type", ct));
        }
        request(&da.url, "POST", "/agents/researcher", &h, body.as_bytes())
            .unwrap()
            .json()
    };
    let refused = call(Some("text/plain"));
    assert_eq!(refused["error"]["code"], -32005, "{refused}");
    assert_eq!(refused["id"], Value::Null);
    assert_eq!(
        refused["error"]["data"][0]["reason"],
        "CONTENT_TYPE_NOT_SUPPORTED"
    );
    for ct in [Some("application/json; charset=utf-8"), None] {
        let served = call(ct);
        assert_eq!(served["error"]["code"], -32001, "{ct:?}: {served}");
    }
    assert_eq!(agent_events(&da, "researcher", "rpc-error").len(), 3);
}

/// ProtoJSON parsers accept a field's proto name as well as its JSON name (PUSH-CREATE-001,
/// CORE-HIST-002 as the conformance kit sends them): `task_id`, `history_length`,
/// `return_immediately`, `message_id`, `context_id`; the answers stay lowerCamelCase.
#[test]
fn protojson_requests_are_read_under_proto_field_names_too() {
    let da = Da::start(&ISSUE.replace(
        "revision_key = \"revision\"",
        "revision_key = \"revision\"\npush_ports = [9]",
    ));
    let sent = result(rpc(
        &da,
        "researcher",
        "SendMessage",
        json!({"message": {"message_id": "snake-1", "role": "ROLE_USER", "context_id": "ctx-snake",
                "parts": [{"text": "go", "media_type": "text/plain"}]},
               "configuration": {"return_immediately": true}}),
    ));
    let task = &sent["task"];
    assert_eq!(state(task), "TASK_STATE_SUBMITTED", "not blocked: {sent}");
    assert_eq!(task["contextId"], "ctx-snake");
    assert_eq!(task["history"][0]["messageId"], "snake-1");
    assert_eq!(task["history"][0]["parts"][0]["mediaType"], "text/plain");
    let id = task["id"].as_str().unwrap();
    da.advance("3s");
    let full = get_task(&da, "researcher", id);
    assert_eq!(full["history"].as_array().unwrap().len(), 1, "{full}");
    for (params, n) in [
        (json!({"id": id, "history_length": 0}), 0),
        (json!({"id": id, "historyLength": 0}), 0),
        (json!({"id": id, "history_length": 1}), 1),
        (json!({"id": id, "history_length": "0"}), 0),
    ] {
        let got = result(rpc(&da, "researcher", "GetTask", params.clone()));
        let len = got
            .get("history")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        assert_eq!(len, n, "CORE-HIST-002: {params} gave {got}");
    }
    let created = result(rpc(
        &da,
        "researcher",
        "CreateTaskPushNotificationConfig",
        json!({"task_id": id, "id": "h1", "url": "http://127.0.0.1:9/hook"}),
    ));
    assert_eq!(created["taskId"], id, "PUSH-CREATE-001: {created}");
    assert!(created.get("task_id").is_none());
}

/// The agent card is cacheable as the spec asks (SHOULD): `Cache-Control` with a max-age, an
/// `ETag` and `Last-Modified`; a conditional GET naming the current ETag gets `304` and no body.
#[test]
fn the_agent_card_is_cacheable_and_a_conditional_get_gets_304() {
    let da = Da::start(ISSUE);
    let path = "/agents/researcher/.well-known/agent-card.json";
    let r = request(&da.url, "GET", path, &[], b"").unwrap();
    assert_eq!(r.status, 200);
    assert!(
        r.header("cache-control").unwrap().contains("max-age="),
        "{:?}",
        r.header("cache-control")
    );
    assert!(r.header("last-modified").unwrap().ends_with(" GMT"));
    let etag = r.header("etag").unwrap().to_string();
    assert!(etag.starts_with('"') && etag.ends_with('"'), "{etag}");
    let again = request(&da.url, "GET", path, &[("If-None-Match", &etag)], b"").unwrap();
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());
    assert_eq!(again.header("etag"), Some(etag.as_str()));
    let weak = format!("W/{etag}");
    let stale = format!("\"other\", {weak}");
    assert_eq!(
        request(&da.url, "GET", path, &[("If-None-Match", &stale)], b"")
            .unwrap()
            .status,
        304
    );
    let changed = request(&da.url, "GET", path, &[("If-None-Match", "\"other\"")], b"").unwrap();
    assert_eq!(
        (changed.status, changed.json()["name"].as_str()),
        (200, Some("researcher"))
    );
}

/// STREAM-SUB-002: a subscription to a task waiting for input stays open while the answer
/// resumes it, and its last event carries the terminal state (REC-6: the orchestrator sees how
/// the task it subscribed to ended).
#[test]
fn stream_sub_002_a_subscription_to_a_waiting_task_ends_with_its_terminal_state() {
    let da = Da::start(&format!(
        "{ISSUE}
[[agents.researcher.behaviors]]
match = {{ text = \"which account\" }}
outcome = \"input-required\"
message = \"Which account?\"
work = \"0s\"
steps = []
"
    ));
    let t = start_task(
        &da,
        "researcher",
        msg("q-1", "pay, but which account?", Value::Null),
    );
    let id = t["id"].as_str().unwrap().to_string();
    assert_eq!(
        state(&get_task(&da, "researcher", &id)),
        "TASK_STATE_INPUT_REQUIRED"
    );
    let sub = stream(&da, "researcher", "SubscribeToTask", json!({"id": id}));
    da.wait_for("event=subscribe", 1);
    let mut answer = msg("q-2", "acct-9", Value::Null);
    answer["taskId"] = json!(id);
    rpc(
        &da,
        "researcher",
        "SendMessage",
        json!({"message": answer, "configuration": {"returnImmediately": true}}),
    );
    da.advance("3s");
    let events = sub.join().unwrap();
    let kinds = kinds(&events);
    assert_eq!(
        kinds.first().unwrap(),
        "task:TASK_STATE_INPUT_REQUIRED",
        "{kinds:?}"
    );
    assert_eq!(
        kinds.last().unwrap(),
        "status:TASK_STATE_COMPLETED",
        "{kinds:?}"
    );
}
