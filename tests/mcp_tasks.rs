//! MCP tasks (issue 28, item 5), over raw Streamable HTTP against the real binary: a tool call
//! answered with a task in both shapes (2025-11-25 core tasks, the 2026-07-28 extension), its
//! status, TTL and poll interval on the scenario clock, its effect landing in the ledger when
//! the work ends, cancels honoured or acknowledged and completed anyway, a task that asks for
//! input, and a creation answer dropped after the task exists. Rule IDs in the test names.

mod common;

use common::*;
use serde_json::{json, Value};

/// Payments with every transfer answered (`FATES` swapped per test), and an MCP server whose
/// tools run as tasks: `book` (2 s, cancel ignored), `book_honor` (cancel honoured), `confirm`
/// (asks for input after 1 s), `only_task` (task required), `quick` (no task).
fn scenario(fates: &str) -> String {
    let base = LOST_RESPONSE.replace(
        "fates = [\"drop-after-apply\", \"respond\"]",
        &format!("fates = {fates}"),
    );
    let schema = r#"input_schema = { type = "object", required = ["to", "amount"], properties = { to = { type = "string" }, amount = { type = "integer" } } }
call = { service = "payments", route = "create-transfer" }"#;
    format!(
        r#"{base}
[mcp.payments]
cancel = "ignore"

[[mcp.payments.tools]]
name = "book"
{schema}
task = {{ duration = "2s", poll_interval = "250ms" }}

[[mcp.payments.tools]]
name = "book_honor"
{schema}
task = {{ duration = "2s", cancel = "honor", ttl = "10s" }}

[[mcp.payments.tools]]
name = "confirm"
{schema}
task = {{ duration = "3s", input = {{ after = "1s", message = "Send it?", schema = {{ type = "object", properties = {{ ok = {{ type = "boolean" }} }} }} }} }}

[[mcp.payments.tools]]
name = "only_task"
{schema}
task = {{ support = "required" }}

[[mcp.payments.tools]]
name = "quick"
{schema}
"#
    )
}

const ACCEPT: (&str, &str) = ("accept", "application/json, text/event-stream");

fn rpc(id: Value, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn post(da: &Da, headers: &[(&str, &str)], body: &Value) -> std::io::Result<Resp> {
    let mut h = vec![ACCEPT];
    h.extend_from_slice(headers);
    da.post_json("/mcp/payments", &h, body)
}

/// A legacy session's id, after `initialize` (whose capabilities are returned too).
fn session(da: &Da) -> (String, Value) {
    let init = rpc(
        json!(0),
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
    );
    let r = post(da, &[], &init).unwrap();
    let sid = r.header("mcp-session-id").unwrap().to_string();
    (sid, r.json()["result"]["capabilities"].clone())
}

fn legacy(da: &Da, sid: &str, id: i64, method: &str, params: Value) -> std::io::Result<Resp> {
    let h = [
        ("mcp-session-id", sid),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    post(da, &h, &rpc(json!(id), method, params))
}

/// A modern request; `tasks` declares the extension in its `_meta`.
fn modern(da: &Da, id: &str, method: &str, mut params: Value, tasks: bool) -> Resp {
    let caps = if tasks {
        json!({"extensions": {"io.modelcontextprotocol/tasks": {}}})
    } else {
        json!({})
    };
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps,
        "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}});
    let name = params["name"].as_str().unwrap_or("").to_string();
    let mut h = vec![
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", method),
    ];
    if method == "tools/call" {
        h.push(("mcp-name", &name));
    }
    post(da, &h, &rpc(json!(id), method, params)).unwrap()
}

fn args() -> Value {
    json!({"to": "acct_1", "amount": 500})
}

/// The transfers in the ledger, each with its effect's `state` added (applied, cancelled or
/// pending, as of now).
fn transfers(da: &Da) -> Vec<Value> {
    da.ledger()
        .into_iter()
        .filter(|e| e["route"] == "create-transfer")
        .map(|mut e| {
            e["state"] = if e["applied"] == true {
                "applied".into()
            } else if !e["cancelled_at"].is_null() {
                "cancelled".into()
            } else {
                "pending".into()
            };
            e
        })
        .collect()
}

fn events(da: &Da, event: &str) -> Vec<Value> {
    da.ledger()
        .into_iter()
        .filter(|e| e["service"] == "mcp/payments" && e["event"] == event)
        .collect()
}

#[test]
fn acct_a_legacy_task_works_on_the_scenario_clock_and_its_effect_lands_when_it_completes() {
    let da = Da::start(&scenario("[\"respond\"]"));
    let (sid, caps) = session(&da);
    assert_eq!(caps["tasks"]["requests"]["tools"]["call"], json!({}));
    let list = legacy(&da, &sid, 1, "tools/list", json!({}))
        .unwrap()
        .json();
    let tools = list["result"]["tools"].as_array().unwrap();
    assert_eq!(tools[0]["execution"]["taskSupport"], "optional");
    assert_eq!(tools[3]["execution"]["taskSupport"], "required");
    assert!(tools[4].get("execution").is_none());

    let params = json!({"name": "book", "arguments": args(), "task": {"ttl": 60000}});
    let created = legacy(&da, &sid, 2, "tools/call", params).unwrap().json();
    let task = &created["result"]["task"];
    assert_eq!(task["status"], "working", "{created}");
    assert_eq!(
        task["ttl"], 60000,
        "the client's TTL is kept when the scenario sets none"
    );
    assert_eq!(task["pollInterval"], 250);
    let id = task["taskId"].as_str().unwrap().to_string();
    assert_eq!(id.len(), 32, "an unguessable id: {id}");

    // The action is in the ledger at once, its effect pending until the work ends.
    let t = transfers(&da);
    assert_eq!(t.len(), 1);
    assert_eq!(t[0]["detail"]["mcp"]["task_id"], id.as_str());
    assert_eq!(t[0]["state"], "pending", "{}", t[0]);
    let get = |n| {
        legacy(&da, &sid, n, "tasks/get", json!({"taskId": id}))
            .unwrap()
            .json()
    };
    assert_eq!(get(3)["result"]["status"], "working");
    da.advance("2s");
    let done = get(4);
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_ne!(done["result"]["lastUpdatedAt"], done["result"]["createdAt"]);
    assert_eq!(transfers(&da)[0]["state"], "applied");

    let r = legacy(&da, &sid, 5, "tasks/result", json!({"taskId": id}))
        .unwrap()
        .json();
    assert_eq!(
        r["result"]["structuredContent"]["status"], "succeeded",
        "{r}"
    );
    assert_eq!(
        r["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        id.as_str()
    );
    let polls = events(&da, "task-get");
    assert_eq!(polls.len(), 2);
    assert_eq!(
        polls[1]["detail"]["target"], t[0]["seq"],
        "a poll names the action it reads"
    );
    let listed = legacy(&da, &sid, 6, "tasks/list", json!({}))
        .unwrap()
        .json();
    assert_eq!(listed["result"]["tasks"][0]["taskId"], id.as_str());
}

#[test]
fn acct_a_legacy_tasks_result_asked_early_waits_for_the_clock() {
    let da = Da::start(&scenario("[\"respond\"]"));
    let (sid, _) = session(&da);
    let params = json!({"name": "book", "arguments": args(), "task": {}});
    let created = legacy(&da, &sid, 1, "tools/call", params).unwrap().json();
    let id = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap()
        .to_string();
    let body = rpc(json!(2), "tasks/result", json!({"taskId": id})).to_string();
    let h = [
        ("content-type", "application/json"),
        ACCEPT,
        ("mcp-session-id", sid.as_str()),
    ];
    let pending = send(&da.url, "POST", "/mcp/payments", &h, body.as_bytes());
    let asked = da.wait_for("event=task-result", 1);
    assert_eq!(asked[0]["detail"]["status"], "working");
    da.advance("2s");
    let r = read_response(pending).unwrap().json();
    assert_eq!(r["result"]["isError"], false, "{r}");
}

#[test]
fn rec3_a_held_legacy_tasks_result_ends_as_the_task_does_when_a_cancel_stops_its_work() {
    // JSON, and an event stream (a client that takes only `text/event-stream`).
    for accept in ["application/json, text/event-stream", "text/event-stream"] {
        let da = Da::start(&scenario("[\"respond\"]"));
        let (sid, _) = session(&da);
        let params = json!({"name": "book_honor", "arguments": args(), "task": {}});
        let created = legacy(&da, &sid, 1, "tools/call", params).unwrap().json();
        let id = created["result"]["task"]["taskId"]
            .as_str()
            .unwrap()
            .to_string();
        let body = rpc(json!(2), "tasks/result", json!({"taskId": id})).to_string();
        let h = [
            ("content-type", "application/json"),
            ("accept", accept),
            ("mcp-session-id", sid.as_str()),
        ];
        let pending = send(&da.url, "POST", "/mcp/payments", &h, body.as_bytes());
        da.wait_for("event=task-result", 1);
        let cancel = legacy(&da, &sid, 3, "tasks/cancel", json!({"taskId": id}));
        assert_eq!(cancel.unwrap().json()["result"]["status"], "cancelled");
        da.advance("2s");
        // The held answer is made when the task ends: the cancel's error, not a success the
        // stopped work never had.
        let r = read_response(pending).unwrap();
        let text = String::from_utf8_lossy(&dechunk_if(&r)).into_owned();
        assert!(text.contains("was cancelled"), "{accept}: {text}");
        assert!(!text.contains("succeeded"), "{accept}: {text}");
        assert_eq!(transfers(&da)[0]["state"], "cancelled", "{accept}");
    }
}

/// A response's body, undone from chunked transfer encoding when it was sent so.
fn dechunk_if(r: &Resp) -> Vec<u8> {
    match r.header("transfer-encoding") {
        Some(te) if te.contains("chunked") => dechunk(&r.body),
        _ => r.body.clone(),
    }
}

#[test]
fn acct_a_modern_task_is_created_only_for_a_client_that_declares_the_extension() {
    let da = Da::start(&scenario("[\"respond\"]"));
    let discover = modern(&da, "d", "server/discover", json!({}), false).json();
    assert_eq!(
        discover["result"]["capabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
        json!({})
    );
    let call = |id, tool, tasks| {
        modern(
            &da,
            id,
            "tools/call",
            json!({"name": tool, "arguments": args()}),
            tasks,
        )
    };
    let plain = call("a", "book", false).json();
    assert_eq!(plain["result"]["resultType"], "complete", "{plain}");
    let refused = call("b", "only_task", false);
    assert_eq!(refused.status, 400);
    let e = refused.json();
    assert_eq!(e["error"]["code"], -32021, "{e}");
    assert_eq!(
        e["error"]["data"]["requiredCapabilities"]["extensions"]["io.modelcontextprotocol/tasks"],
        json!({})
    );
    let task = call("c", "book", true).json();
    assert_eq!(task["result"]["resultType"], "task", "{task}");
    assert_eq!(task["result"]["status"], "working");
    assert_eq!(task["result"]["pollIntervalMs"], 250);
    assert!(task["result"]["ttlMs"].is_null());
    let id = task["result"]["taskId"].as_str().unwrap();
    // Two actions: the plain call and the task's (the refusal is none).
    assert_eq!(transfers(&da).len(), 2);
    let get = |tasks| modern(&da, "g", "tasks/get", json!({"taskId": id}), tasks);
    assert_eq!(get(false).json()["error"]["code"], -32021);
    da.advance("2s");
    let done = get(true).json();
    assert_eq!(done["result"]["resultType"], "complete");
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["result"]["structuredContent"]["status"],
        "succeeded"
    );
    let unknown = modern(&da, "u", "tasks/get", json!({"taskId": "nope"}), true).json();
    assert_eq!(unknown["error"]["code"], -32602);
}

#[test]
fn rec3_a_task_cancel_honoured_stops_the_effect_and_one_ignored_still_lands() {
    let da = Da::start(&scenario("[\"respond\"]"));
    let call = |id, tool| {
        let p = json!({"name": tool, "arguments": args()});
        let r = modern(&da, id, "tools/call", p, true).json();
        r["result"]["taskId"].as_str().unwrap().to_string()
    };
    let honored = call("h", "book_honor");
    let ignored = call("i", "book");
    for id in [&honored, &ignored] {
        let ack = modern(&da, "c", "tasks/cancel", json!({"taskId": id}), true).json();
        assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    }
    da.advance("2s");
    let status = |id: &str| {
        modern(&da, "g", "tasks/get", json!({"taskId": id}), true).json()["result"]["status"]
            .clone()
    };
    assert_eq!(status(&honored), "cancelled");
    assert_eq!(
        status(&ignored),
        "completed",
        "acknowledged, then completed anyway"
    );
    let states: Vec<Value> = transfers(&da).iter().map(|t| t["state"].clone()).collect();
    assert_eq!(states, ["cancelled", "applied"]);
    let cancels = events(&da, "task-cancel");
    assert_eq!(cancels[0]["detail"]["outcome"], "cancelled");
    assert_eq!(cancels[1]["detail"]["outcome"], "ignored");
    // Cancelling a terminal task is acknowledged (the extension errs for unknown ids only) and
    // changes nothing.
    let late = modern(&da, "c", "tasks/cancel", json!({"taskId": ignored}), true).json();
    assert_eq!(late["result"]["resultType"], "complete", "{late}");
    assert!(late.get("error").is_none(), "{late}");
    assert_eq!(status(&ignored), "completed");
    assert_eq!(
        events(&da, "task-cancel")[2]["detail"]["outcome"],
        "already-terminal"
    );
}

#[test]
fn rec3_a_legacy_cancel_ignored_reads_cancelled_though_the_effect_lands() {
    let da = Da::start(&scenario("[\"respond\"]"));
    let (sid, _) = session(&da);
    let params = json!({"name": "book", "arguments": args(), "task": {}});
    let created = legacy(&da, &sid, 1, "tools/call", params).unwrap().json();
    let id = created["result"]["task"]["taskId"]
        .as_str()
        .unwrap()
        .to_string();
    let ack = legacy(&da, &sid, 2, "tasks/cancel", json!({"taskId": id}))
        .unwrap()
        .json();
    assert_eq!(ack["result"]["status"], "cancelled", "{ack}");
    da.advance("2s");
    let got = legacy(&da, &sid, 3, "tasks/get", json!({"taskId": id}))
        .unwrap()
        .json();
    assert_eq!(got["result"]["status"], "cancelled");
    assert_eq!(
        transfers(&da)[0]["state"],
        "applied",
        "the lie: it ran all the same"
    );
}

#[test]
fn acct_a_task_asks_for_input_and_runs_only_once_it_is_accepted() {
    let da = Da::start(&scenario("[\"respond\"]"));
    let call = |id| {
        let p = json!({"name": "confirm", "arguments": args()});
        let r = modern(&da, id, "tools/call", p, true).json();
        r["result"]["taskId"].as_str().unwrap().to_string()
    };
    let yes = call("y");
    let no = call("n");
    let get = |id: &str| modern(&da, "g", "tasks/get", json!({"taskId": id}), true).json();
    assert_eq!(get(&yes)["result"]["status"], "working");
    da.advance("1s");
    let asking = get(&yes);
    assert_eq!(asking["result"]["status"], "input_required", "{asking}");
    let ask = &asking["result"]["inputRequests"]["input"];
    assert_eq!(ask["method"], "elicitation/create");
    assert_eq!(ask["params"]["message"], "Send it?");
    assert!(transfers(&da).is_empty(), "nothing runs before the answer");
    let answer = |id: &str, action: &str| {
        let p = json!({"taskId": id, "inputResponses": {"input": {"action": action, "content": {"ok": true}}}});
        modern(&da, "u", "tasks/update", p, true).json()
    };
    assert_eq!(answer(&yes, "accept")["result"]["resultType"], "complete");
    answer(&no, "decline");
    assert_eq!(get(&no)["result"]["status"], "cancelled");
    let t = transfers(&da);
    assert_eq!(t.len(), 1);
    assert_eq!(t[0]["state"], "pending");
    da.advance("2s");
    assert_eq!(get(&yes)["result"]["status"], "completed");
    assert_eq!(transfers(&da)[0]["state"], "applied");
}

#[test]
fn rec4_a_dropped_task_creation_leaves_a_task_a_legacy_client_can_list() {
    let da = Da::start(&scenario("[\"drop-after-apply\", \"respond\"]"));
    let (sid, _) = session(&da);
    let params = json!({"name": "book", "arguments": args(), "task": {}});
    assert!(
        legacy(&da, &sid, 1, "tools/call", params).is_err(),
        "the answer is lost"
    );
    let created = events(&da, "task-created");
    assert_eq!(created.len(), 1);
    let t = transfers(&da);
    assert_eq!(t[0]["response"]["delivery"], "dropped");
    let listed = legacy(&da, &sid, 2, "tasks/list", json!({}))
        .unwrap()
        .json();
    assert_eq!(
        listed["result"]["tasks"][0]["taskId"],
        created[0]["detail"]["task_id"]
    );
}

#[test]
fn a_task_expires_after_its_ttl_and_a_refused_fate_creates_none() {
    let da = Da::start(&scenario("[\"error-before-apply:503\", \"respond\"]"));
    let call = |id| {
        let p = json!({"name": "book_honor", "arguments": args()});
        modern(&da, id, "tools/call", p, true).json()
    };
    let refused = call("a");
    assert_eq!(refused["result"]["isError"], true, "{refused}");
    assert!(events(&da, "task-created").is_empty());
    let task = call("b");
    assert_eq!(task["result"]["ttlMs"], 10000);
    let id = task["result"]["taskId"].as_str().unwrap();
    da.advance("11s");
    let gone = modern(&da, "g", "tasks/get", json!({"taskId": id}), true).json();
    assert_eq!(gone["error"]["code"], -32602);
    assert!(
        gone["error"]["message"]
            .as_str()
            .unwrap()
            .contains("expired"),
        "{gone}"
    );
    // Expiry forgets the task, not the work: the effect landed.
    assert_eq!(transfers(&da)[1]["state"], "applied");
}

#[test]
fn a_task_asked_of_a_tool_without_tasks_or_missing_for_a_task_only_tool_is_refused() {
    let da = Da::start(&scenario("[\"respond\"]"));
    let (sid, _) = session(&da);
    let with = json!({"name": "quick", "arguments": args(), "task": {}});
    let r = legacy(&da, &sid, 1, "tools/call", with).unwrap().json();
    assert_eq!(r["error"]["code"], -32601, "{r}");
    let without = json!({"name": "only_task", "arguments": args()});
    let r = legacy(&da, &sid, 2, "tools/call", without).unwrap().json();
    assert_eq!(r["error"]["code"], -32601, "{r}");
    assert!(transfers(&da).is_empty());
    assert_eq!(events(&da, "rpc-error").len(), 2);
}

#[test]
fn a_bad_task_table_is_rejected_with_its_location() {
    let bad = scenario("[\"respond\"]").replace(
        "task = { duration = \"2s\", poll_interval = \"250ms\" }",
        "task = { duration = \"2s\", input = { after = \"5s\", message = \"m\" }, polling = 1 }",
    );
    let bad = bad.replace("[mcp.payments]\n", "[mcp.payments]\nexpire_session = 0\n");
    let path = temp_file("bad-task.toml", &bad);
    let out = std::process::Command::new(bin())
        .args(["check", path.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("mcp.payments.tools[0].task.polling: unknown"),
        "{err}"
    );
}

#[test]
fn acc2_rec3_the_shipped_task_finishes_after_the_redirection_and_adopting_it_is_found() {
    let da = Da::start_file("mcp-task-after-redirect.toml");
    let caps = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    let request = |id: &str, method: &str, mut params: Value, extra: &[(&str, &str)]| {
        params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": caps});
        let name = params["name"].as_str().unwrap_or("").to_string();
        let mut h = vec![
            ACCEPT,
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", method),
            ("mcp-name", name.as_str()),
        ];
        h.extend_from_slice(extra);
        let body = rpc(json!(id), method, params);
        da.post_json("/mcp/travel", &h, &body).unwrap().json()
    };
    let booking =
        json!({"name": "book_flight", "arguments": {"flight": "LH400", "passenger": "ada"}});
    let task = request("1", "tools/call", booking, &[("x-revision", "1")]);
    let id = task["result"]["taskId"].as_str().unwrap().to_string();
    da.advance("10s");
    let r = da.post_json("/_admin/revision", &[], &json!({"revision": 2}));
    assert!(r.unwrap().status < 300);
    let ack = request("2", "tasks/cancel", json!({"taskId": id}), &[]);
    assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
    da.advance("20s");
    let done = request("3", "tasks/get", json!({"taskId": id}), &[]);
    assert_eq!(done["result"]["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["result"]["structuredContent"]["status"],
        "confirmed"
    );
    let booked = da.get("/_admin/ledger?route=create-booking").json()["entries"].clone();
    assert_eq!(booked[0]["applied"], true, "{booked}");
    let claims = json!({"adopted": [id], "actions": [{"intent": {"/flight": "LH400", "/passenger": "ada"}, "claim": "cancelled"}]});
    let r = da.post_json("/_admin/claims", &[], &claims).unwrap();
    assert!(r.status < 300, "{}", r.text());
    let findings = da.get("/_admin/verify").json()["findings"].clone();
    let rules: Vec<&str> = findings
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["rule"].as_str())
        .collect();
    assert!(rules.contains(&"ACC-2"), "{findings}");
    assert!(rules.contains(&"REC-3"), "{findings}");
}

#[test]
fn rec3_a_modern_client_closing_its_stream_cancels_the_call_under_honor_and_not_under_ignore() {
    for (policy, outcome, state) in [
        ("honor", "cancelled", "cancelled"),
        ("ignore", "ignored", "pending"),
    ] {
        let toml = scenario("[\"delay:10s\"]").replace(
            "[mcp.payments]\ncancel = \"ignore\"",
            &format!("[mcp.payments]\ncancel = \"{policy}\"\nresponses = \"sse\""),
        );
        let da = Da::start(&toml);
        let params = json!({"name": "book", "arguments": args(), "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}}});
        let body = rpc(json!("s"), "tools/call", params).to_string();
        let h = [
            ("content-type", "application/json"),
            ACCEPT,
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
            ("mcp-name", "book"),
        ];
        // The task's creation answer is held 10 s; its 2 s of work have not begun to land.
        let mut s = send(&da.url, "POST", "/mcp/payments", &h, body.as_bytes());
        read_until(&mut s, "\r\n\r\n");
        drop(s);
        let c = da.wait_for("event=cancelled", 1);
        assert_eq!(c[0]["detail"]["via"], "stream-close", "{policy}: {}", c[0]);
        assert_eq!(c[0]["detail"]["outcome"], outcome, "{policy}");
        assert_eq!(transfers(&da)[0]["state"], state, "{policy}");
    }
}
