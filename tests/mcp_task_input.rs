//! A 2025-11-25 task that asks for input (issue 28): at its question's time it reads
//! `input_required`; its `tasks/result` stream carries an `elicitation/create` request tied to
//! the task (`related-task`); the client's JSON-RPC response, POSTed back, is the answer. Accepted,
//! the call is admitted then, works the rest of its time on the manual clock, and the same stream
//! ends with the call's result (one effect: no ACC-1); declined, cancelled or answered with an
//! error, the task ends `cancelled` and nothing runs. Against the real binary, over raw
//! Streamable HTTP.

mod common;

use std::net::TcpStream;

use common::*;
use serde_json::{json, Value};

/// A tool whose task works 3 s, asking "Send it?" 1 s in; `extra` goes into its `task` table.
fn scenario(extra: &str) -> String {
    let base = LOST_RESPONSE.replace(
        "fates = [\"drop-after-apply\", \"respond\"]",
        "fates = [\"respond\"]",
    );
    format!(
        "{base}\n[mcp.payments]\n[[mcp.payments.tools]]\nname = \"confirm\"\ninput_schema = {{ type = \"object\" }}\ncall = {{ service = \"payments\", route = \"create-transfer\" }}\ntask = {{ duration = \"3s\", input = {{ after = \"1s\", message = \"Send it?\", schema = {{ type = \"object\", properties = {{ ok = {{ type = \"boolean\" }} }} }} }}{extra} }}\n"
    )
}

const ACCEPT: (&str, &str) = ("accept", "application/json, text/event-stream");

fn session(da: &Da) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "t", "version": "1"}}});
    let r = da.post_json("/mcp/payments", &[ACCEPT], &init).unwrap();
    r.header("mcp-session-id").unwrap().to_string()
}

fn post(da: &Da, sid: &str, body: &Value) -> Resp {
    let h = [
        ACCEPT,
        ("mcp-session-id", sid),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    da.post_json("/mcp/payments", &h, body).unwrap()
}

fn rpc(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn status(da: &Da, sid: &str, task_id: &str) -> Value {
    let got = post(da, sid, &rpc(50, "tasks/get", json!({"taskId": task_id}))).json();
    got["result"].clone()
}

/// `tasks/result` (id 9) on a connection of its own, left open to be read as events arrive.
fn open_result(da: &Da, sid: &str, task_id: &str) -> TcpStream {
    let body = rpc(9, "tasks/result", json!({"taskId": task_id})).to_string();
    let req = format!(
        "POST /mcp/payments HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-session-id: {sid}\r\nmcp-protocol-version: 2025-11-25\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    send_raw(&da.url, req.as_bytes())
}

/// The next SSE event whose data contains `marker`, read whole off the stream, as JSON.
fn next_event(stream: &mut TcpStream, marker: &str) -> Value {
    let mut seen = read_until(stream, marker);
    let end = |s: &[u8]| {
        let text = String::from_utf8_lossy(s);
        text[text.find(marker).unwrap_or(0)..].contains("\n\n")
    };
    while !end(&seen) {
        seen.extend(read_until(stream, "\n"));
    }
    let text = String::from_utf8_lossy(&seen);
    let line = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .find(|d| d.contains(marker))
        .unwrap_or_else(|| panic!("no event with {marker} in {text}"));
    serde_json::from_str(line).unwrap()
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
        .filter(|e| e["detail"]["event"] == event || e["event"] == event)
        .collect()
}

/// A task created and its question due: the session and the task id.
fn asked(da: &Da) -> (String, String) {
    let sid = session(da);
    let params =
        json!({"name": "confirm", "arguments": {"to": "acct-9", "amount": 100}, "task": {}});
    let created = post(da, &sid, &rpc(1, "tools/call", params)).json();
    let task_id = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap_or_else(|| panic!("{created}"))
        .to_string();
    assert_eq!(status(da, &sid, &task_id)["status"], "working");
    da.advance("1s");
    (sid, task_id)
}

/// The question off a fresh `tasks/result` stream.
fn question(da: &Da, sid: &str, task_id: &str) -> (TcpStream, Value) {
    let mut stream = open_result(da, sid, task_id);
    let ask = next_event(&mut stream, "elicitation/create");
    (stream, ask)
}

fn answer(ask: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": ask["id"], "result": result})
}

#[test]
fn tasks_get_reads_input_required_while_a_legacy_question_waits_and_nothing_runs() {
    let da = Da::start(&scenario(""));
    let (sid, task_id) = asked(&da);
    let now = status(&da, &sid, &task_id);
    assert_eq!(now["status"], "input_required", "{now}");
    assert_eq!(now["taskId"], task_id.as_str());
    // Unanswered, the task waits: its work does not go on past the question.
    da.advance("10s");
    assert_eq!(status(&da, &sid, &task_id)["status"], "input_required");
    let listed = post(&da, &sid, &rpc(6, "tasks/list", json!({}))).json();
    assert_eq!(listed["result"]["tasks"][0]["status"], "input_required");
    assert!(transfers(&da).is_empty(), "nothing runs before the answer");
}

#[test]
fn acc1_acct_an_accepted_legacy_question_runs_the_call_once_and_its_result_ends_the_stream() {
    let da = Da::start(&scenario(""));
    let (sid, task_id) = asked(&da);
    let (mut stream, ask) = question(&da, &sid, &task_id);
    assert_eq!(ask["params"]["mode"], "form", "{ask}");
    assert_eq!(ask["params"]["message"], "Send it?", "{ask}");
    assert_eq!(
        ask["params"]["requestedSchema"]["properties"]["ok"]["type"],
        "boolean"
    );
    assert_eq!(
        ask["params"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        task_id.as_str()
    );
    assert!(transfers(&da).is_empty(), "nothing runs before the answer");

    let reply = answer(&ask, json!({"action": "accept", "content": {"ok": true}}));
    assert_eq!(post(&da, &sid, &reply).status, 202);
    // Admitted once accepted, its effect due when the rest of the work (2 s) ends (ACC-T).
    let t = transfers(&da);
    assert_eq!(t.len(), 1, "{t:?}");
    assert_eq!(t[0]["applied"], false, "{t:?}");
    assert_eq!(t[0]["detail"]["mcp"]["task_id"], task_id.as_str());
    assert_eq!(t[0]["detail"]["mcp"]["jsonrpc_id"], 1, "the call's own id");
    let update = events(&da, "task-update");
    assert_eq!(update.len(), 1, "{update:?}");
    assert_eq!(
        update[0]["detail"]["responses"]["input"]["action"],
        "accept"
    );
    assert_eq!(status(&da, &sid, &task_id)["status"], "working");

    da.advance("2s");
    let result = next_event(&mut stream, "\"id\":9");
    assert_eq!(result["result"]["isError"], false, "{result}");
    assert_eq!(
        result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        task_id.as_str()
    );
    assert_eq!(status(&da, &sid, &task_id)["status"], "completed");
    let t = transfers(&da);
    assert_eq!(t.len(), 1, "one action: {t:?}");
    assert_eq!(t[0]["applied"], true);
    let verdict = da.get("/_admin/verify").json();
    let findings = verdict["findings"].as_array().unwrap();
    assert!(!findings.iter().any(|f| f["rule"] == "ACC-1"), "{verdict}");
}

#[test]
fn a_client_that_closes_the_stream_after_answering_gets_the_result_from_a_later_tasks_result() {
    let da = Da::start(&scenario(""));
    let (sid, task_id) = asked(&da);
    let (stream, ask) = question(&da, &sid, &task_id);
    let reply = answer(&ask, json!({"action": "accept", "content": {"ok": true}}));
    assert_eq!(post(&da, &sid, &reply).status, 202);
    // The spec's own flow: the client closes the result stream and resumes polling.
    drop(stream);
    da.advance("2s");
    assert_eq!(status(&da, &sid, &task_id)["status"], "completed");
    let r = post(
        &da,
        &sid,
        &rpc(11, "tasks/result", json!({"taskId": task_id})),
    )
    .json();
    assert_eq!(r["result"]["isError"], false, "{r}");
    assert_eq!(transfers(&da).len(), 1);
}

#[test]
fn a_declined_cancelled_or_failed_legacy_question_cancels_the_task_and_nothing_runs() {
    let replies = [
        ("decline", json!({"result": {"action": "decline"}})),
        ("cancel", json!({"result": {"action": "cancel"}})),
        (
            "error",
            json!({"error": {"code": -32601, "message": "Method not found"}}),
        ),
    ];
    for (case, reply) in replies {
        let da = Da::start(&scenario(""));
        let (sid, task_id) = asked(&da);
        let (mut stream, ask) = question(&da, &sid, &task_id);
        let mut body = json!({"jsonrpc": "2.0", "id": ask["id"]});
        for (k, v) in reply.as_object().unwrap() {
            body[k] = v.clone();
        }
        assert_eq!(post(&da, &sid, &body).status, 202, "{case}");
        let end = next_event(&mut stream, "was cancelled");
        assert_eq!(end["id"], 9, "{case}: {end}");
        assert_eq!(end["error"]["code"], -32602, "{case}: {end}");
        assert_eq!(status(&da, &sid, &task_id)["status"], "cancelled", "{case}");
        assert_eq!(events(&da, "task-update").len(), 1, "{case}");
        da.advance("5s");
        assert!(transfers(&da).is_empty(), "{case}: nothing admitted");
        let r = post(
            &da,
            &sid,
            &rpc(12, "tasks/result", json!({"taskId": task_id})),
        )
        .json();
        assert_eq!(r["error"]["code"], -32602, "{case}: {r}");
    }
}

#[test]
fn rec3_a_legacy_task_cancelled_while_its_question_waits_ends_its_result_stream() {
    let da = Da::start(&scenario(""));
    let (sid, task_id) = asked(&da);
    let (mut stream, _ask) = question(&da, &sid, &task_id);
    let cancel = post(
        &da,
        &sid,
        &rpc(7, "tasks/cancel", json!({"taskId": task_id})),
    )
    .json();
    assert_eq!(cancel["result"]["status"], "cancelled", "{cancel}");
    let end = next_event(&mut stream, "was cancelled");
    assert_eq!(end["id"], 9, "{end}");
    assert_eq!(status(&da, &sid, &task_id)["status"], "cancelled");
    da.advance("5s");
    assert!(transfers(&da).is_empty());
}

#[test]
fn a_legacy_task_result_stream_asks_when_the_question_falls_due_and_ends_when_the_task_expires() {
    let da = Da::start(&scenario(", ttl = \"4s\""));
    let sid = session(&da);
    let params =
        json!({"name": "confirm", "arguments": {"to": "acct-9", "amount": 100}, "task": {}});
    let created = post(&da, &sid, &rpc(1, "tools/call", params)).json();
    let task_id = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap()
        .to_string();
    // Asked before the question is due, the stream waits for it on the scenario clock.
    let mut stream = open_result(&da, &sid, &task_id);
    da.advance("1s");
    let ask = next_event(&mut stream, "elicitation/create");
    assert_eq!(ask["params"]["message"], "Send it?");
    da.advance("3s");
    let end = next_event(&mut stream, "expired");
    assert_eq!(end["id"], 9, "{end}");
    assert_eq!(end["error"]["code"], -32602, "{end}");
    assert!(transfers(&da).is_empty());
}

#[test]
fn a_legacy_task_question_needs_a_client_that_takes_an_event_stream() {
    let da = Da::start(&scenario(""));
    let (sid, task_id) = asked(&da);
    let h = [
        ("accept", "application/json"),
        ("mcp-session-id", sid.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let body = rpc(4, "tasks/result", json!({"taskId": task_id}));
    let r = da.post_json("/mcp/payments", &h, &body).unwrap();
    assert_eq!(r.status, 400, "{}", r.text());
    let r = r.json();
    assert_eq!(r["id"], 4, "{r}");
    assert_eq!(r["error"]["code"], -32600, "{r}");
    let message = r["error"]["message"].as_str().unwrap();
    assert!(message.contains("text/event-stream"), "{message}");
    assert!(message.contains("needs input"), "{message}");
    // Refused, not read: no `task-result` entry counts it as learning the outcome.
    assert!(events(&da, "task-result").is_empty());
    assert_eq!(events(&da, "rpc-error").len(), 1);
    assert_eq!(status(&da, &sid, &task_id)["status"], "input_required");
}

#[test]
fn a_response_that_answers_no_waiting_question_is_accepted_and_ignored() {
    let da = Da::start(&scenario(""));
    let sid = session(&da);
    let params =
        json!({"name": "confirm", "arguments": {"to": "acct-9", "amount": 100}, "task": {}});
    let created = post(&da, &sid, &rpc(1, "tools/call", params)).json();
    let task_id = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap()
        .to_string();
    let accept = json!({"action": "accept", "content": {"ok": true}});
    let to = |id: Value| json!({"jsonrpc": "2.0", "id": id, "result": accept});
    let question_id = json!(format!("{task_id}/input"));
    // Before the question is due, the right id answers nothing.
    assert_eq!(post(&da, &sid, &to(question_id.clone())).status, 202);
    da.advance("1s");
    let other = session(&da);
    let strays = [
        (sid.as_str(), to(json!(3))),
        (sid.as_str(), to(json!("no-such-task/input"))),
        (sid.as_str(), to(json!("something-else"))),
        // Another session's response does not answer this session's task.
        (other.as_str(), to(question_id.clone())),
    ];
    for (s, body) in &strays {
        assert_eq!(post(&da, s, body).status, 202, "{body}");
    }
    assert!(events(&da, "task-update").is_empty());
    assert!(transfers(&da).is_empty());
    assert_eq!(status(&da, &sid, &task_id)["status"], "input_required");

    // The one answer counts; a second one finds nothing waiting.
    assert_eq!(post(&da, &sid, &to(question_id.clone())).status, 202);
    assert_eq!(post(&da, &sid, &to(question_id)).status, 202);
    assert_eq!(events(&da, "task-update").len(), 1);
    assert_eq!(transfers(&da).len(), 1);
}

#[test]
fn a_result_fate_holds_or_loses_the_legacy_question_with_the_answer() {
    let da = Da::start(&scenario(
        ", fates = { result = [\"drop-after-apply\", \"delay:2s\"] }",
    ));
    let (sid, task_id) = asked(&da);
    // Lost: the connection closes before any byte, and no question went out.
    let body = rpc(8, "tasks/result", json!({"taskId": task_id})).to_string();
    let lost = raw_request(
        &da.url,
        format!(
            "POST /mcp/payments HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\nmcp-session-id: {sid}\r\nmcp-protocol-version: 2025-11-25\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
        .as_bytes(),
    );
    assert!(lost.is_err() || lost.unwrap().body.is_empty());
    let entries = events(&da, "task-result");
    assert_eq!(entries[0]["detail"]["answered"], false, "{entries:?}");
    // Delayed: the stream's events are held 2 s of scenario time.
    let mut stream = open_result(&da, &sid, &task_id);
    let headers = read_until(&mut stream, "\r\n\r\n");
    let headers = String::from_utf8_lossy(&headers);
    assert!(headers.contains("text/event-stream"), "{headers}");
    assert!(!headers.contains("elicitation"), "held: {headers}");
    // Nothing follows the headers before the clock moves (a bounded check that nothing came,
    // not a wait for something to come).
    stream
        .set_read_timeout(Some(std::time::Duration::from_millis(300)))
        .unwrap();
    let mut buf = [0u8; 256];
    let early = std::io::Read::read(&mut stream, &mut buf);
    assert!(
        early.is_err(),
        "{:?}",
        early.map(|n| String::from_utf8_lossy(&buf[..n]).into_owned())
    );
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    da.advance("2s");
    let ask = next_event(&mut stream, "elicitation/create");
    assert_eq!(ask["params"]["message"], "Send it?");
    assert_eq!(status(&da, &sid, &task_id)["status"], "input_required");
}
