//! The verifier over MCP tool calls, against the real binary: a call the orchestrator claims it
//! cancelled, though the ledger says it took effect, is a REC-3 finding; the same claim for a
//! call that never took effect is not; and a call refused before execution (a header mismatch,
//! -32020) re-sent correctly is one action, not two (no ACC-1). Rule IDs from
//! shared/spec/rules.md are in the test names.

mod common;

use common::*;
use serde_json::{json, Value};

const SCENARIO: &str = r#"
name = "mcp-verify"
clock = "manual"

[services.payments]
idempotency = { preset = "stripe", retention = "24h" }

[[services.payments.routes]]
name = "create-transfer"
method = "POST"
path = "/v1/transfers"
kind = "action"
intent = ["/to", "/amount"]
respond = { status = 201, json = { id = "{{action.id}}", status = "succeeded" } }

[[services.payments.routes]]
name = "refused-transfer"
method = "POST"
path = "/v1/refused"
kind = "action"
intent = ["/to", "/amount"]
fates = ["error-before-apply:503"]

[mcp.payments]
versions = ["2026-07-28"]

[[mcp.payments.tools]]
name = "create_transfer"
input_schema = { type = "object", required = ["to", "amount"], properties = { to = { type = "string" }, amount = { type = "integer" }, idempotency_key = { type = "string" } } }
call = { service = "payments", route = "create-transfer" }
key = "/idempotency_key"

[[mcp.payments.tools]]
name = "refused_transfer"
input_schema = { type = "object", required = ["to", "amount"], properties = { to = { type = "string" }, amount = { type = "integer" }, idempotency_key = { type = "string" } } }
call = { service = "payments", route = "refused-transfer" }
key = "/idempotency_key"
"#;

const VERSION: &str = "2026-07-28";

/// A 2026-07-28 `tools/call` (no session: the version in `_meta` and the headers), with
/// `name_header` as its `Mcp-Name`.
fn call_tool(da: &Da, id: u64, tool: &str, name_header: &str, args: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": tool, "arguments": args,
        "_meta": {"io.modelcontextprotocol/protocolVersion": VERSION,
                  "io.modelcontextprotocol/clientCapabilities": {}}}});
    let r = da
        .post_json(
            "/mcp/payments",
            &[
                ("accept", "application/json, text/event-stream"),
                ("mcp-protocol-version", VERSION),
                ("mcp-method", "tools/call"),
                ("mcp-name", name_header),
            ],
            &body,
        )
        .unwrap();
    r.json()
}

fn findings(da: &Da, rule: &str) -> Vec<Value> {
    da.get("/_admin/verify").json()["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == rule)
        .cloned()
        .collect()
}

fn claim(da: &Da, claims: Value) {
    let r = da.post_json("/_admin/claims", &[], &claims).unwrap();
    assert!(r.status < 300, "{}", r.text());
}

#[test]
fn rec_3_a_tool_call_claimed_cancelled_that_took_effect_is_found() {
    let da = Da::start(SCENARIO);
    let args = json!({"to": "acct-9", "amount": 100, "idempotency_key": "k-1"});
    let r = call_tool(&da, 1, "create_transfer", "create_transfer", args);
    assert_eq!(r["result"]["isError"], false, "{r}");
    claim(
        &da,
        json!({"actions": [{"key": "k-1", "claim": "cancelled"}]}),
    );
    let found = findings(&da, "REC-3");
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0]["summary"]
            .as_str()
            .unwrap()
            .contains("claimed cancelled but it took effect"),
        "{found:?}"
    );
    assert!(findings(&da, "ACC-3").is_empty());
}

#[test]
fn rec_3_a_cancelled_claim_for_a_call_that_never_took_effect_is_no_finding() {
    let da = Da::start(SCENARIO);
    let args = json!({"to": "acct-9", "amount": 100, "idempotency_key": "k-2"});
    let r = call_tool(&da, 1, "refused_transfer", "refused_transfer", args);
    assert_eq!(r["result"]["isError"], true, "{r}");
    claim(
        &da,
        json!({"actions": [{"key": "k-2", "claim": "cancelled"}]}),
    );
    assert!(findings(&da, "REC-3").is_empty());
    assert!(findings(&da, "ACC-3").is_empty());
}

#[test]
fn acc_1_a_re_send_after_a_header_mismatch_refusal_is_one_action() {
    let da = Da::start(SCENARIO);
    let args = json!({"to": "acct-9", "amount": 100});
    // The first attempt names the wrong tool in Mcp-Name: refused before execution (-32020),
    // as the Python client provokes when its tool list is stale; it re-sends, correctly.
    let refused = call_tool(&da, 1, "create_transfer", "get_transfer", args.clone());
    assert_eq!(refused["error"]["code"], -32020, "{refused}");
    let ok = call_tool(&da, 2, "create_transfer", "create_transfer", args);
    assert_eq!(ok["result"]["isError"], false, "{ok}");
    let actions = da.get("/_admin/ledger?service=payments").json()["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| !e["route"].is_null())
        .count();
    assert_eq!(actions, 1);
    assert!(findings(&da, "ACC-1").is_empty());
    assert!(findings(&da, "REC-4").is_empty());
}

#[test]
fn rec_3_without_claims_a_cancellation_notice_is_named_as_not_judged() {
    let da = Da::start(&SCENARIO.replace(
        r#"versions = ["2026-07-28"]"#,
        r#"versions = ["2025-11-25"]"#,
    ));
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    let accept = ("accept", "application/json, text/event-stream");
    let r = da.post_json("/mcp/payments", &[accept], &init).unwrap();
    let session = r.header("mcp-session-id").expect("a session").to_string();
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 7, "reason": "user pressed stop"}});
    let headers = [
        accept,
        ("mcp-session-id", &session),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let r = da.post_json("/mcp/payments", &headers, &cancel).unwrap();
    assert_eq!(r.status, 202, "{}", r.text());
    let verdict = da.get("/_admin/verify").json();
    let notes = verdict["notes"].to_string();
    assert!(notes.contains("REC-3"), "{verdict}");
    assert_eq!(verdict["state"], "incomplete", "{verdict}");
}

#[test]
fn acc_3_a_success_that_never_took_effect_is_found_when_claimed_succeeded() {
    // `respond-without-apply`: the tool answers the route's success, yet nothing was applied;
    // an orchestrator that reports the transfer as done is contradicted by the ledger.
    let da = Da::start(&SCENARIO.replace(
        r#"fates = ["error-before-apply:503"]"#,
        r#"fates = ["respond-without-apply"]
respond = { status = 201, json = { id = "{{action.id}}", status = "succeeded" } }"#,
    ));
    let args = json!({"to": "acct-9", "amount": 100, "idempotency_key": "k-3"});
    let r = call_tool(&da, 1, "refused_transfer", "refused_transfer", args);
    assert_eq!(r["result"]["isError"], false, "{r}");
    assert_eq!(
        r["result"]["structuredContent"]["status"], "succeeded",
        "{r}"
    );
    let entries = da.get("/_admin/ledger?service=payments").json()["entries"].clone();
    assert_eq!(entries[0]["applied"], false, "{entries}");
    assert_eq!(entries[0]["fate"], "respond-without-apply", "{entries}");
    claim(
        &da,
        json!({"actions": [{"key": "k-3", "claim": "succeeded"}]}),
    );
    let found = findings(&da, "ACC-3");
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0]["summary"]
            .as_str()
            .unwrap()
            .contains("never took effect"),
        "{found:?}"
    );
}

/// The scenario with a `book` tool whose calls run as 2 s tasks.
fn with_tasks() -> String {
    with_tasks_that("")
}

/// [`with_tasks`] with more settings of the tasks (`cancel = "honor", `).
fn with_tasks_that(settings: &str) -> String {
    format!(
        "{SCENARIO}\n[[mcp.payments.tools]]\nname = \"book\"\ninput_schema = {{ type = \"object\" }}\ncall = {{ service = \"payments\", route = \"create-transfer\" }}\ntask = {{ {settings}duration = \"2s\" }}\n"
    )
}

/// A 2026-07-28 request that declares the tasks extension, with `headers` added.
fn task_request(da: &Da, id: u64, method: &str, params: Value, headers: &[(&str, &str)]) -> Value {
    let mut params = params;
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": VERSION,
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}});
    let name = params["name"].as_str().unwrap_or("").to_string();
    let mut h = vec![
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", VERSION),
        ("mcp-method", method),
        ("mcp-name", name.as_str()),
    ];
    h.extend_from_slice(headers);
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    da.post_json("/mcp/payments", &h, &body).unwrap().json()
}

#[test]
fn rec_4_a_tool_called_again_while_its_task_id_was_held_is_found_and_a_poll_clears_it() {
    let da = Da::start(&with_tasks());
    let args = json!({"to": "acct-9", "amount": 100});
    let call = |id| {
        task_request(
            &da,
            id,
            "tools/call",
            json!({"name": "book", "arguments": args}),
            &[],
        )
    };
    let task = call(1);
    assert_eq!(task["result"]["resultType"], "task", "{task}");
    call(2);
    let found = findings(&da, "REC-4");
    assert_eq!(found.len(), 1, "{found:?}");
    let summary = found[0]["summary"].as_str().unwrap();
    assert!(summary.contains("while holding task"), "{summary}");

    // A client that polls its task first is judged to have learnt the outcome.
    let da = Da::start(&with_tasks());
    let task = call_on(&da, 1);
    let id = task["result"]["taskId"].clone();
    for n in 2..4 {
        // Retried polls are legitimate: a poll is a read.
        let got = task_request(&da, n, "tasks/get", json!({"taskId": id}), &[]);
        assert_eq!(got["result"]["status"], "working", "{got}");
    }
    call_on(&da, 4);
    assert!(findings(&da, "REC-4").is_empty());
}

#[test]
fn rec_4_a_tool_called_again_after_answering_its_tasks_question_without_a_poll_is_found() {
    // A task that asks first is admitted only once its question is answered: the action it
    // then starts is still the task's, and calling the tool again without a poll is REC-4.
    let confirm = "[[mcp.payments.tools]]\nname = \"confirm\"\ninput_schema = { type = \"object\" }\ncall = { service = \"payments\", route = \"create-transfer\" }\ntask = { duration = \"3s\", input = { after = \"1s\", message = \"Send it?\" } }\n";
    let da = Da::start(&format!("{SCENARIO}\n{confirm}"));
    let args = json!({"to": "acct-9", "amount": 100});
    let answered_call = |id: u64| {
        let p = json!({"name": "confirm", "arguments": args});
        let task = task_request(&da, id, "tools/call", p, &[]);
        let task_id = task["result"]["taskId"].clone();
        assert!(task_id.is_string(), "{task}");
        da.advance("1s");
        let asked = task_request(&da, id + 1, "tasks/get", json!({"taskId": task_id}), &[]);
        assert_eq!(asked["result"]["status"], "input_required", "{asked}");
        let answer = json!({"taskId": task_id, "inputResponses": {"input": {"action": "accept", "content": {}}}});
        task_request(&da, id + 2, "tasks/update", answer, &[]);
    };
    answered_call(1);
    assert!(findings(&da, "REC-4").is_empty());
    answered_call(4);
    let found = findings(&da, "REC-4");
    assert_eq!(found.len(), 1, "{found:?}");
    let summary = found[0]["summary"].as_str().unwrap();
    assert!(summary.contains("while holding task"), "{summary}");
}

fn call_on(da: &Da, id: u64) -> Value {
    let args = json!({"to": "acct-9", "amount": 100});
    task_request(
        da,
        id,
        "tools/call",
        json!({"name": "book", "arguments": args}),
        &[],
    )
}

#[test]
fn acc_2_a_task_result_adopted_after_its_revision_was_superseded_is_found() {
    let da = Da::start(&with_tasks());
    let args = json!({"to": "acct-9", "amount": 100});
    let rev1 = [("x-revision", "1")];
    let task = task_request(
        &da,
        1,
        "tools/call",
        json!({"name": "book", "arguments": args}),
        &rev1,
    );
    let id = task["result"]["taskId"].as_str().unwrap().to_string();
    // The user redirects: the next action carries revision 2.
    let other = json!({"to": "acct-10", "amount": 5});
    let rev2 = [("x-revision", "2")];
    task_request(
        &da,
        2,
        "tools/call",
        json!({"name": "create_transfer", "arguments": other}),
        &rev2,
    );
    da.advance("2s");
    let done = task_request(&da, 3, "tasks/get", json!({"taskId": id}), &[]);
    assert_eq!(done["result"]["status"], "completed", "{done}");
    let verdict = da.get("/_admin/verify").json();
    assert!(
        verdict["notes"].to_string().contains("ACC-2"),
        "without claims, the superseded task is named as not judged: {verdict}"
    );
    claim(&da, json!({"adopted": [id]}));
    let found = findings(&da, "ACC-2");
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0]["summary"].as_str().unwrap().contains(&id),
        "{found:?}"
    );
}

#[test]
fn rec_4_acc_1_a_session_that_expires_after_the_effect_and_a_blind_re_call_in_a_new_one_are_found()
{
    let toml = SCENARIO.replace(
        r#"versions = ["2026-07-28"]"#,
        "versions = [\"2025-11-25\"]\nexpire_session = 1",
    );
    let da = Da::start(&toml);
    let accept = ("accept", "application/json, text/event-stream");
    let open = || {
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}});
        let r = da.post_json("/mcp/payments", &[accept], &init).unwrap();
        r.header("mcp-session-id").unwrap().to_string()
    };
    let call = |sid: &str| {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "create_transfer", "arguments": {"to": "acct-9", "amount": 100}}});
        let h = [accept, ("mcp-session-id", sid)];
        da.post_json("/mcp/payments", &h, &body).unwrap()
    };
    let first = open();
    let r = call(&first);
    assert_eq!(r.status, 404, "the session is gone: {}", r.text());
    assert_eq!(r.json()["error"]["code"], -32600);
    let entries = da.get("/_admin/ledger?route=create-transfer").json()["entries"].clone();
    assert_eq!(entries[0]["applied"], true, "the effect stands: {entries}");
    assert_eq!(entries[0]["response"]["delivery"], "abandoned");
    let expired = da.get("/_admin/ledger?event=session-expired").json()["entries"].clone();
    assert_eq!(
        expired[0]["detail"]["target"], entries[0]["seq"],
        "{expired}"
    );
    // What rmcp does: re-initialize and send the call again, blind.
    let second = open();
    assert_eq!(
        call(&second).status,
        404,
        "each session ends after its first call"
    );
    assert_eq!(findings(&da, "ACC-1").len(), 1);
    assert_eq!(findings(&da, "REC-4").len(), 1);
}

#[test]
fn rec_3_acc_3_claims_about_mcp_tasks_are_judged_by_their_cancel_and_their_effect() {
    // Two `book` tasks: the first cancelled in time (honoured, its effect never lands), the
    // second left to complete. True claims about both are no finding (REC-3, ACC-3)...
    let da = Da::start(&with_tasks_that("cancel = \"honor\", "));
    let first = call_on(&da, 1)["result"]["taskId"].clone();
    let second = call_on(&da, 2)["result"]["taskId"].clone();
    let cancelled = task_request(&da, 3, "tasks/cancel", json!({"taskId": first}), &[]);
    assert!(cancelled["error"].is_null(), "{cancelled}");
    da.advance("3s");
    let done = task_request(&da, 4, "tasks/get", json!({"taskId": second}), &[]);
    assert_eq!(done["result"]["status"], "completed", "{done}");
    claim(
        &da,
        json!({"tasks": [{"task_id": first, "claim": "cancelled"},
                         {"task_id": second, "claim": "completed"}]}),
    );
    assert!(
        findings(&da, "REC-3").is_empty(),
        "{:?}",
        findings(&da, "REC-3")
    );
    assert!(
        findings(&da, "ACC-3").is_empty(),
        "{:?}",
        findings(&da, "ACC-3")
    );

    // ...and the opposite claims are both found.
    let da2 = Da::start(&with_tasks_that("cancel = \"honor\", "));
    let first = call_on(&da2, 1)["result"]["taskId"].clone();
    let second = call_on(&da2, 2)["result"]["taskId"].clone();
    task_request(&da2, 3, "tasks/cancel", json!({"taskId": first}), &[]);
    da2.advance("3s");
    claim(
        &da2,
        json!({"tasks": [{"task_id": first, "claim": "completed"},
                         {"task_id": second, "claim": "cancelled"}]}),
    );
    let acc3 = findings(&da2, "ACC-3");
    assert_eq!(acc3.len(), 1, "{acc3:?}");
    assert!(
        acc3[0]["summary"]
            .as_str()
            .unwrap()
            .contains(first.as_str().unwrap()),
        "{acc3:?}"
    );
    let rec3 = findings(&da2, "REC-3");
    assert_eq!(rec3.len(), 1, "{rec3:?}");
    let summary = rec3[0]["summary"].as_str().unwrap();
    assert!(summary.contains(second.as_str().unwrap()), "{summary}");
    assert!(
        summary.contains("no cancel was ever requested"),
        "{summary}"
    );

    // A cancel the tool ignores does not stop the effect: claiming it cancelled is REC-3.
    let da3 = Da::start(&with_tasks_that("cancel = \"ignore\", "));
    let task = call_on(&da3, 1)["result"]["taskId"].clone();
    task_request(&da3, 2, "tasks/cancel", json!({"taskId": task}), &[]);
    da3.advance("3s");
    claim(
        &da3,
        json!({"tasks": [{"task_id": task, "claim": "cancelled"}]}),
    );
    let rec3 = findings(&da3, "REC-3");
    assert_eq!(rec3.len(), 1, "{rec3:?}");
    let summary = rec3[0]["summary"].as_str().unwrap();
    assert!(
        summary.contains("the cancel was ignored and its action took effect"),
        "{summary}"
    );
}
