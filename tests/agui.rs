//! Fake AG-UI 1.0 agents, end to end against the real binary: one test (at least) per rule of
//! sections A (INT-*, RES-*, PROD-*, ERR-1) and C (PH-1..PH-7) of `shared/spec/rules.md`, each
//! named after its rule, plus TanStack habits, bad input, tool fates and deliberate violations.
//!
//! A small client here plays the consumer the way `@ag-ui/client`'s `HttpAgent` does: it keeps
//! the thread's messages and state from the events it receives and sends them back with every
//! run (the official client itself is driven by `interop/agui`).

mod common;

use std::io::Read;

use common::*;
use serde_json::{json, Value};

// ---------------------------------------------------------------------------------------------
// Scenarios

/// The core issue's payments API, plus a notifications service for two-tool scripts.
const SERVICES: &str = r#"
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
name = "get-transfer"
method = "GET"
path = "/v1/transfers/{id}"
kind = "lookup"

[services.notifications]

[[services.notifications.routes]]
name = "send"
method = "POST"
path = "/v1/messages"
kind = "action"
respond = { status = 202, json = { id = "{{action.id}}", status = "queued" } }
"#;

/// Issue 7's example, verbatim.
const APPROVER: &str = r#"
[agents.approver]
protocol = "ag-ui"
resume = "stateful"                # or "stateless"
uncovered = "reinterrupt"          # or "reject" | "run-error"

[[agents.approver.tools]]
name = "transfer_funds"
service = "payments"
route = "create-transfer"

[[agents.approver.iterations]]     # scripted model turns, in order
text = "I will move 100 to acct-9."
tool_calls = [{ tool = "transfer_funds", args = { to = "acct-9", amount = 100 } }]

[[agents.approver.iterations]]
text = "Done."

[[agents.approver.interrupts]]
phase = "beforeTools"
iteration = 0
key = "approve-transfer"
reason = "approval-required"
message = "Approve transferring 100 to acct-9?"
tool_call = "transfer_funds"       # sets toolCallId to that pending call; a discard means it never runs
approve_if = "/approved"           # a resolved answer runs the call only if this pointer in its payload is true
response_schema = { type = "object", properties = { approved = { type = "boolean" } } }
expires_in = "10m"
on_continuation = "skip"           # or "repeat"
"#;

/// A manual-clock world with the services and the given agents.
fn world(agents: &str) -> String {
    format!("name = \"agui-test\"\nseed = 7\nclock = \"manual\"\n{SERVICES}\n{agents}")
}

/// The issue's approver renamed and with `from` → `to` replacements applied.
fn approver(name: &str, edits: &[(&str, &str)]) -> String {
    let mut s = APPROVER.replace("agents.approver", &format!("agents.{name}"));
    for (from, to) in edits {
        assert!(s.contains(from), "{from} not in the approver");
        s = s.replace(from, to);
    }
    s
}

fn approve() -> Value {
    json!({"approved": true})
}

fn resolved(id: &str, payload: Value) -> Value {
    json!({"interruptId": id, "status": "resolved", "payload": payload})
}

fn cancelled(id: &str) -> Value {
    json!({"interruptId": id, "status": "cancelled"})
}

// ---------------------------------------------------------------------------------------------
// A consumer

/// One answer of an agent: a stream of events, or a rejection with a JSON body.
struct Run {
    status: u16,
    content_type: String,
    events: Vec<Value>,
    body: Value,
}

impl Run {
    fn types(&self) -> Vec<&str> {
        self.events
            .iter()
            .map(|e| e["type"].as_str().unwrap_or("?"))
            .collect()
    }

    fn of_type(&self, t: &str) -> Vec<&Value> {
        self.events.iter().filter(|e| e["type"] == t).collect()
    }

    /// The one RUN_FINISHED of the run.
    fn finished(&self) -> &Value {
        let f = self.of_type("RUN_FINISHED");
        assert_eq!(f.len(), 1, "one RUN_FINISHED in {:?}", self.types());
        f[0]
    }

    fn outcome(&self) -> &str {
        self.finished()["outcome"]["type"].as_str().unwrap_or("?")
    }

    fn interrupts(&self) -> Vec<Value> {
        self.finished()["outcome"]["interrupts"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    fn interrupt_ids(&self) -> Vec<String> {
        self.interrupts()
            .iter()
            .map(|i| i["id"].as_str().unwrap_or("").to_string())
            .collect()
    }

    /// The values of doubleagent's CUSTOM warnings.
    fn warnings(&self) -> Vec<&Value> {
        self.of_type("CUSTOM")
            .into_iter()
            .filter(|e| e["name"] == "doubleagent.warning")
            .map(|e| &e["value"])
            .collect()
    }

    fn warned(&self, rule: &str) -> bool {
        self.warnings().iter().any(|w| w["rule"] == rule)
    }

    fn texts(&self) -> Vec<&str> {
        self.of_type("TEXT_MESSAGE_CONTENT")
            .iter()
            .map(|e| e["delta"].as_str().unwrap_or(""))
            .collect()
    }
}

/// The JSON payloads of an SSE body (`data: <json>\n\n` frames).
fn sse_events(text: &str) -> Vec<Value> {
    assert!(!text.contains('\r'), "LF line endings only");
    text.split("\n\n")
        .filter(|f| !f.is_empty())
        .map(|f| {
            let data = f
                .strip_prefix("data: ")
                .unwrap_or_else(|| panic!("not a data frame: {f}"));
            assert!(!data.contains('\n'), "one line per frame");
            serde_json::from_str(data).unwrap_or_else(|e| panic!("{e}: {data}"))
        })
        .collect()
}

fn to_run(r: Resp) -> Run {
    let content_type = r.header("content-type").unwrap_or("").to_string();
    let chunked = r
        .header("transfer-encoding")
        .is_some_and(|t| t.contains("chunked"));
    let raw = if chunked {
        dechunk(&r.body)
    } else {
        r.body.clone()
    };
    let text = String::from_utf8(raw).unwrap();
    if content_type.starts_with("text/event-stream") {
        Run {
            status: r.status,
            content_type,
            events: sse_events(&text),
            body: Value::Null,
        }
    } else {
        Run {
            status: r.status,
            content_type,
            events: Vec::new(),
            body: serde_json::from_str(&text).unwrap_or(Value::String(text)),
        }
    }
}

/// POST a RunAgentInput the way HttpAgent does.
fn post(da: &Da, agent: &str, body: &Value) -> Run {
    post_with(da, agent, &[("accept", "text/event-stream")], body)
}

fn post_with(da: &Da, agent: &str, headers: &[(&str, &str)], body: &Value) -> Run {
    to_run(
        da.post_json(&format!("/agents/{agent}"), headers, body)
            .expect("a response"),
    )
}

/// A consumer of one thread: keeps messages and state like `@ag-ui/client` does.
struct Client<'a> {
    da: &'a Da,
    agent: String,
    thread: String,
    messages: Vec<Value>,
    state: Value,
    runs: usize,
    last_run_id: Option<String>,
}

impl<'a> Client<'a> {
    fn new(da: &'a Da, agent: &str, thread: &str) -> Client<'a> {
        Client {
            da,
            agent: agent.to_string(),
            thread: thread.to_string(),
            messages: vec![
                json!({"id": "u1", "role": "user", "content": "Move 100 to acct-9, please."}),
            ],
            state: json!({}),
            runs: 0,
            last_run_id: None,
        }
    }

    /// The next run's input: a fresh runId, the thread's messages and state.
    fn input(&mut self, resume: &[Value]) -> Value {
        self.runs += 1;
        let mut body = json!({
            "threadId": self.thread,
            "runId": format!("{}-r{}", self.thread, self.runs),
            "protocolVersion": "1.0",
            "state": self.state,
            "messages": self.messages,
            "tools": [],
            "context": [],
            "forwardedProps": {},
        });
        if !resume.is_empty() {
            body["resume"] = json!(resume);
        }
        body
    }

    fn run(&mut self, resume: &[Value]) -> Run {
        let body = self.input(resume);
        self.send(&body)
    }

    fn send(&mut self, body: &Value) -> Run {
        let r = post(self.da, &self.agent, body);
        self.last_run_id = body["runId"].as_str().map(str::to_string);
        self.apply(&r);
        r
    }

    /// Fold a run's events into the thread, as the official client's default apply does.
    fn apply(&mut self, r: &Run) {
        for e in &r.events {
            match e["type"].as_str().unwrap_or("") {
                "TEXT_MESSAGE_START" => self.messages.push(
                    json!({"id": e["messageId"], "role": "assistant", "content": ""}),
                ),
                "TEXT_MESSAGE_CONTENT" => {
                    if let Some(m) = self.messages.iter_mut().find(|m| m["id"] == e["messageId"]) {
                        let c = format!("{}{}", m["content"].as_str().unwrap_or(""), e["delta"].as_str().unwrap_or(""));
                        m["content"] = json!(c);
                    }
                }
                "TOOL_CALL_START" => {
                    let call = json!({"id": e["toolCallId"], "type": "function", "function": {"name": e["toolCallName"], "arguments": ""}});
                    match self.messages.iter_mut().find(|m| m["id"] == e["parentMessageId"]) {
                        Some(m) => {
                            if m["toolCalls"].is_null() {
                                m["toolCalls"] = json!([]);
                            }
                            m["toolCalls"].as_array_mut().unwrap().push(call);
                        }
                        None => self.messages.push(json!({"id": e["parentMessageId"], "role": "assistant", "toolCalls": [call]})),
                    }
                }
                "TOOL_CALL_ARGS" => {
                    for m in self.messages.iter_mut() {
                        if let Some(calls) = m.get_mut("toolCalls").and_then(Value::as_array_mut) {
                            for c in calls.iter_mut().filter(|c| c["id"] == e["toolCallId"]) {
                                let a = format!("{}{}", c["function"]["arguments"].as_str().unwrap_or(""), e["delta"].as_str().unwrap_or(""));
                                c["function"]["arguments"] = json!(a);
                            }
                        }
                    }
                }
                "TOOL_CALL_RESULT" => self.messages.push(json!({
                    "id": e["messageId"], "role": "tool", "toolCallId": e["toolCallId"], "content": e["content"],
                })),
                "STATE_SNAPSHOT" => self.state = e["snapshot"].clone(),
                _ => {}
            }
        }
    }

    /// Answer frontend tool calls the way an application does: a tool message each.
    fn answer_tools(&mut self, ids: &[Value], content: &str) {
        for (n, id) in ids.iter().enumerate() {
            self.messages.push(json!({"id": format!("app-{}-{n}", self.runs), "role": "tool", "toolCallId": id, "content": content}));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Ledger helpers

fn applied(da: &Da, service: &str) -> Vec<Value> {
    da.ledger()
        .into_iter()
        .filter(|e| {
            e["service"] == service && e["disposition"] == "executed" && e["applied"] == true
        })
        .collect()
}

fn events_of(da: &Da, agent: &str, event: &str) -> Vec<Value> {
    da.ledger()
        .into_iter()
        .filter(|e| e["service"] == agent && e["event"] == event)
        .collect()
}

fn finished_outcomes(da: &Da, agent: &str) -> Vec<String> {
    events_of(da, agent, "run-finished")
        .iter()
        .map(|e| e["detail"]["outcome"].as_str().unwrap_or("").to_string())
        .collect()
}

// =============================================================================================
// A. Interrupts and resume

#[test]
fn int1_interrupted_run_ends_with_one_interrupt_outcome_carrying_its_interrupts() {
    let da = Da::start(&world(APPROVER));
    let mut c = Client::new(&da, "approver", "t1");
    let r = c.run(&[]);
    assert_eq!(r.status, 200);
    assert!(r.content_type.starts_with("text/event-stream"));
    assert_eq!(r.types().first(), Some(&"RUN_STARTED"));
    assert_eq!(r.types().last(), Some(&"RUN_FINISHED"));
    assert_eq!(r.outcome(), "interrupt");
    assert_eq!(r.interrupt_ids(), vec!["approve-transfer"]);
    assert_eq!(r.events[0]["protocolVersion"], "1.0");
    assert_eq!(r.events[0]["threadId"], "t1");
    assert_eq!(r.finished()["runId"], r.events[0]["runId"]);
    assert_eq!(finished_outcomes(&da, "approver"), vec!["interrupt"]);
}

#[test]
fn int1_an_empty_interrupt_outcome_happens_only_by_deliberate_violation_and_is_recorded() {
    let agents = format!(
        "{}\n{}",
        APPROVER,
        approver(
            "broken",
            &[(
                "resume = \"stateful\"",
                "violate = [\"interrupt-without-interrupts\"]"
            )]
        )
    );
    let da = Da::start(&world(&agents));
    assert!(events_of(&da, "approver", "violation").is_empty());
    let ok = Client::new(&da, "approver", "t1").run(&[]);
    assert_eq!(ok.interrupts().len(), 1, "off by default");
    let bad = Client::new(&da, "broken", "t2").run(&[]);
    assert_eq!(bad.outcome(), "interrupt");
    assert_eq!(bad.interrupts(), Vec::<Value>::new());
    let v = events_of(&da, "broken", "violation");
    assert_eq!(v.len(), 1);
    assert_eq!(v[0]["detail"]["violation"], "interrupt-without-interrupts");
    assert_eq!(v[0]["detail"]["rule"], "INT-1");
}

#[test]
fn int2_a_frontend_tool_pause_ends_success_naming_the_pending_calls() {
    let da = Da::start_file("agui-frontend-tool.toml");
    let mut c = Client::new(&da, "scheduler", "t1");
    let r = c.run(&[]);
    assert_eq!(r.outcome(), "success");
    let pending = r.finished()["outcome"]["pendingToolCallIds"]
        .as_array()
        .unwrap()
        .clone();
    let started: Vec<&Value> = r.of_type("TOOL_CALL_START");
    assert_eq!(started.len(), 1);
    assert_eq!(started[0]["toolCallName"], "pick_date");
    assert_eq!(pending, vec![started[0]["toolCallId"].clone()]);
    assert!(
        r.finished()["outcome"].get("interrupts").is_none(),
        "a frontend pause is not an interrupt"
    );
    assert!(
        r.of_type("TOOL_CALL_RESULT").is_empty(),
        "the application runs it"
    );

    // The answer comes back as a message in the next (ordinary) run.
    c.answer_tools(&pending, "{\"date\":\"2026-12-03\"}");
    let r2 = c.run(&[]);
    assert_eq!(r2.outcome(), "success");
    assert!(r2.finished()["outcome"].get("pendingToolCallIds").is_none());
    assert_eq!(r2.texts(), vec!["Booking it.", "You are booked."]);
    assert_eq!(applied(&da, "calendar").len(), 1);
}

#[test]
fn int2_a_scripted_stop_ends_cancelled_asking_for_nothing() {
    let da = Da::start_file("agui-misbehaving.toml");
    let mut c = Client::new(&da, "quitter", "t1");
    let r = c.run(&[]);
    assert_eq!(r.finished()["outcome"], json!({"type": "cancelled"}));
    assert!(r.finished().get("result").is_none());
    assert!(r.of_type("TOOL_CALL_RESULT").is_empty());
    assert!(
        applied(&da, "payments").is_empty(),
        "stopped at beforeTools: nothing ran"
    );
    let fin = events_of(&da, "quitter", "run-finished");
    assert_eq!(fin[0]["detail"]["outcome"], "cancelled");
    assert_eq!(fin[0]["detail"]["cause"], "scripted");
    // The next run is an ordinary run, not a resume.
    let r2 = c.run(&[]);
    assert!(!r2.warned("ERR-1") && !r2.warned("PROD-2"));
}

#[test]
fn int2_a_client_that_aborts_cancels_the_run_before_its_tool_runs() {
    let agents = r#"
[agents.slow]
protocol = "ag-ui"
tools = [{ name = "transfer_funds", service = "payments", route = "create-transfer" }]
iterations = [{ text = "Thinking it over.", delay = "5s", tool_calls = [{ tool = "transfer_funds", args = { to = "acct-9", amount = 100 } }] }]
"#;
    let da = Da::start(&world(agents));
    let body = json!({"threadId": "t1", "runId": "r1", "messages": []}).to_string();
    let mut s = send(
        &da.url,
        "POST",
        "/agents/slow",
        &[
            ("content-type", "application/json"),
            ("accept", "text/event-stream"),
        ],
        body.as_bytes(),
    );
    read_until(&mut s, "RUN_STARTED");
    // The user presses stop: the application aborts the request.
    s.shutdown(std::net::Shutdown::Both).unwrap();
    drop(s);
    let fin = da.wait_for("event=run-finished", 1);
    assert_eq!(fin[0]["detail"]["outcome"], "cancelled");
    assert_eq!(fin[0]["detail"]["cause"], "client-disconnected");
    assert_eq!(fin[0]["response"]["delivery"], "abandoned", "REC-4");
    da.advance("1m");
    assert!(
        applied(&da, "payments").is_empty(),
        "no tool call after the abort"
    );
    assert!(events_of(&da, "slow", "tool-call").is_empty());
}

#[test]
fn int2_an_aborted_continuation_leaves_its_interrupt_open_for_the_retry() {
    let agents = approver(
        "approver",
        &[("text = \"Done.\"", "text = \"Done.\"\ndelay = \"5s\"")],
    );
    let da = Da::start(&world(&agents));
    let mut c = Client::new(&da, "approver", "t1");
    c.run(&[]);
    let body = c.input(&[resolved("approve-transfer", approve())]);
    let mut s = send(
        &da.url,
        "POST",
        "/agents/approver",
        &[
            ("content-type", "application/json"),
            ("accept", "text/event-stream"),
        ],
        body.to_string().as_bytes(),
    );
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("TOOL_CALL_RESULT") {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "stream closed early");
        seen.extend_from_slice(&buf[..n]);
    }
    s.shutdown(std::net::Shutdown::Both).unwrap();
    drop(s);
    let fin = da.wait_for("event=run-finished", 2);
    assert_eq!(fin[1]["detail"]["cause"], "client-disconnected");
    assert_eq!(
        applied(&da, "payments").len(),
        1,
        "the transfer ran before the abort"
    );
    // The client never heard the end, so it still holds the interrupt and retries the answer:
    // still a continuation, the transfer is not made twice, its result is sent again.
    let url = da.url.clone();
    let retry = c.input(&[resolved("approve-transfer", approve())]);
    let t = std::thread::spawn(move || {
        to_run(
            request(
                &url,
                "POST",
                "/agents/approver",
                &[("content-type", "application/json")],
                retry.to_string().as_bytes(),
            )
            .unwrap(),
        )
    });
    da.wait_for("event=run-started", 3);
    da.advance("5s");
    let r = t.join().unwrap();
    assert_eq!(r.outcome(), "success");
    assert!(r.warnings().is_empty(), "{:?}", r.warnings());
    assert_eq!(r.of_type("TOOL_CALL_RESULT").len(), 1);
    assert_eq!(r.texts(), vec!["Done."]);
    assert_eq!(applied(&da, "payments").len(), 1);
}

#[test]
fn acc1_a_retried_continuation_after_its_success_never_runs_the_call_again() {
    // No Idempotency-Key on the tool: only the agent itself can keep the transfer single.
    let da = Da::start(&world(APPROVER));
    let mut c = Client::new(&da, "approver", "t1");
    let call_id = c.run(&[]).interrupts()[0]["toolCallId"].clone();
    // The client loses the stream of its continuation, so its messages still hold the call
    // without a result, and it sends the same answer again under new run ids.
    let lost = c.input(&[resolved("approve-transfer", approve())]);
    assert_eq!(post(&da, "approver", &lost).outcome(), "success");
    let first = applied(&da, "payments");
    assert_eq!(first.len(), 1);
    for _ in 0..2 {
        let r = post(
            &da,
            "approver",
            &c.input(&[resolved("approve-transfer", approve())]),
        );
        assert_eq!(r.outcome(), "success", "not asked again: {:?}", r.types());
        let result = r.of_type("TOOL_CALL_RESULT");
        assert_eq!(result.len(), 1, "the result it had is sent again");
        assert_eq!(result[0]["toolCallId"], call_id);
        let content: Value = serde_json::from_str(result[0]["content"].as_str().unwrap()).unwrap();
        assert_eq!(content["id"], first[0]["action_id"]);
        assert_eq!(r.texts(), vec!["Done."]);
    }
    assert_eq!(applied(&da, "payments").len(), 1, "exactly once");
    let ran = events_of(&da, "approver", "tool-call");
    assert_eq!(ran.len(), 1, "{ran:?}");
}

#[test]
fn acc1_concurrent_continuations_of_one_thread_run_the_call_at_most_once() {
    let da = Da::start(&world(APPROVER));
    let mut c = Client::new(&da, "approver", "t1");
    c.run(&[]);
    let bodies: Vec<Value> = (0..5)
        .map(|_| c.input(&[resolved("approve-transfer", approve())]))
        .collect();
    let runs: Vec<Run> = std::thread::scope(|s| {
        let handles: Vec<_> = (bodies.iter())
            .map(|b| s.spawn(|| post(&da, "approver", b)))
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    for r in &runs {
        assert_eq!(r.status, 200);
        assert!(r.of_type("RUN_FINISHED").len() == 1, "{:?}", r.types());
    }
    assert_eq!(
        applied(&da, "payments").len(),
        1,
        "a call id runs at most once per thread"
    );
    let gates: Vec<Value> = (events_of(&da, "approver", "tool-call").iter())
        .map(|e| e["detail"]["gate"].clone())
        .collect();
    assert_eq!(gates, vec![json!("run")]);
}

#[test]
fn int4_two_threads_reusing_run_ids_get_distinct_tool_calls_and_each_its_own_transfer() {
    // The walkthrough's fixed run ids, on two threads; the tool's Idempotency-Key is the call id.
    let da = Da::start_file("agui-approval.toml");
    let pay = |thread: &str| {
        let user = json!({"id": "u1", "role": "user", "content": "Pay acct-9 100"});
        let input = json!({"threadId": thread, "runId": "r1", "messages": [user]});
        let asked = post(&da, "approver", &input);
        let call = asked.of_type("TOOL_CALL_START")[0].clone();
        let proposed = json!({"id": call["parentMessageId"], "role": "assistant", "content": "",
            "toolCalls": [{"id": call["toolCallId"], "type": "function",
            "function": {"name": "transfer_funds", "arguments": "{}"}}]});
        let input = json!({"threadId": thread, "runId": "r2", "messages": [user, proposed],
            "resume": [resolved("approve-transfer", approve())]});
        let done = post(&da, "approver", &input);
        assert_eq!(done.outcome(), "success");
        let result = done.of_type("TOOL_CALL_RESULT")[0].clone();
        assert_eq!(result["toolCallId"], call["toolCallId"]);
        (call["toolCallId"].clone(), result["content"].clone())
    };
    let (a_call, a_result) = pay("tA");
    let (b_call, b_result) = pay("tB");
    // The first thread keeps the plain form the walkthrough shows.
    assert_eq!(a_call, "call-0-0-r1");
    assert_ne!(a_call, b_call, "one call per thread");
    assert_ne!(a_result, b_result, "tB heard its own transfer, not tA's");
    let executed: Vec<Value> = (da.ledger().into_iter())
        .filter(|e| e["service"] == "payments")
        .collect();
    assert_eq!(executed.len(), 2);
    for (e, call) in executed.iter().zip([&a_call, &b_call]) {
        assert_eq!(e["disposition"], "executed", "{e}");
        assert_eq!(e["work_id"], *call);
    }
}

#[test]
fn int2_success_while_interrupted_happens_only_by_deliberate_violation() {
    let da = Da::start_file("agui-misbehaving.toml");
    let r = Client::new(&da, "liar", "t1").run(&[]);
    let outcome = &r.finished()["outcome"];
    assert_eq!(outcome["type"], "success");
    assert_eq!(outcome["interrupts"][0]["id"], "approve-transfer");
    let v = events_of(&da, "liar", "violation");
    assert_eq!(v[0]["detail"]["violation"], "success-while-interrupted");
    assert!(
        applied(&da, "payments").is_empty(),
        "still never performs the gated call"
    );
}

#[test]
fn int3_interrupt_ids_are_unique_within_a_run_and_answers_go_by_id() {
    let da = Da::start(&world(PAIR));
    let mut c = Client::new(&da, "pair", "t1");
    let r = c.run(&[]);
    let ids = r.interrupt_ids();
    assert_eq!(ids, vec!["approve-transfer", "approve-notice"]);
    let calls: Vec<&Value> = r.of_type("TOOL_CALL_START");
    let its = r.interrupts();
    assert_eq!(its[0]["toolCallId"], calls[0]["toolCallId"]);
    assert_eq!(its[1]["toolCallId"], calls[1]["toolCallId"]);
    assert_ne!(its[0]["toolCallId"], its[1]["toolCallId"]);

    // Each entry answers its own interrupt: the transfer is approved, the notice discarded.
    let r2 = c.run(&[
        resolved("approve-transfer", approve()),
        cancelled("approve-notice"),
    ]);
    assert_eq!(r2.outcome(), "success");
    assert_eq!(applied(&da, "payments").len(), 1);
    assert!(applied(&da, "notifications").is_empty());
    let results = r2.of_type("TOOL_CALL_RESULT");
    assert_eq!(
        results.len(),
        2,
        "every backend call gets a result, run or not"
    );
    assert!(results[1]["content"]
        .as_str()
        .unwrap()
        .contains("discarded"));
}

#[test]
fn int3_duplicate_interrupt_ids_happen_only_by_deliberate_violation() {
    let da = Da::start_file("agui-misbehaving.toml");
    let r = Client::new(&da, "duplicator", "t1").run(&[]);
    assert_eq!(
        r.interrupt_ids(),
        vec!["approve-transfer", "approve-transfer"]
    );
    assert_eq!(
        events_of(&da, "duplicator", "violation")[0]["detail"]["rule"],
        "INT-3"
    );
}

#[test]
fn int4_reason_message_tool_call_id_and_response_schema_are_carried_as_scripted() {
    let schema_toml = "response_schema = { type = \"object\", properties = { approved = { type = \"boolean\" }, note = { type = \"string\", maxLength = 80 } }, required = [\"approved\"] }";
    let agents = approver(
        "approver",
        &[(
            "response_schema = { type = \"object\", properties = { approved = { type = \"boolean\" } } }",
            schema_toml,
        )],
    );
    let da = Da::start(&world(&agents));
    let now = da.get("/_admin/clock").json()["now"]
        .as_str()
        .unwrap()
        .to_string();
    let r = Client::new(&da, "approver", "t1").run(&[]);
    let it = &r.interrupts()[0];
    let call = r.of_type("TOOL_CALL_START")[0];
    assert_eq!(it["reason"], "approval-required");
    assert_eq!(it["message"], "Approve transferring 100 to acct-9?");
    assert_eq!(it["toolCallId"], call["toolCallId"]);
    assert_eq!(
        it["responseSchema"],
        json!({"type": "object", "properties": {"approved": {"type": "boolean"}, "note": {"type": "string", "maxLength": 80}}, "required": ["approved"]})
    );
    // expiresAt: ISO 8601 (as JS toISOString writes it), scenario now + 10m.
    let exp = it["expiresAt"].as_str().unwrap();
    assert_eq!(exp.len(), 24, "{exp}");
    let parse = doubleagent::clock::parse_rfc3339_ms;
    assert_eq!(parse(exp).unwrap() - parse(&now).unwrap(), 10 * 60_000);
    // Optional members are left out, never null.
    assert!(!r.finished().to_string().contains("null"));
    assert!(it.get("subagentRunId").is_none() && it.get("metadata").is_none());
}

#[test]
fn int5_an_interrupt_raised_in_a_subagent_carries_its_subagent_run_id() {
    let da = Da::start_file("agui-audit.toml");
    let r = Client::new(&da, "auditor", "t1").run(&[]);
    let its = r.interrupts();
    let note = its.iter().find(|i| i["id"] == "ledger-note").unwrap();
    assert_eq!(note["subagentRunId"], "bookkeeper-1");
    let review = its.iter().find(|i| i["id"] == "review-transfer").unwrap();
    assert!(review.get("subagentRunId").is_none());
}

#[test]
fn int6_a_late_run_error_may_follow_run_finished() {
    let agents = r#"
[agents.late]
protocol = "ag-ui"
late_error = { message = "audit write failed", code = "audit_write_failed", after = "2s" }
iterations = [{ text = "Done." }]
"#;
    let da = Da::start(&world(agents));
    let url = da.url.clone();
    let t = std::thread::spawn(move || {
        let body = json!({"threadId": "t1", "runId": "r1", "messages": []});
        to_run(
            request(
                &url,
                "POST",
                "/agents/late",
                &[
                    ("content-type", "application/json"),
                    ("accept", "text/event-stream"),
                ],
                body.to_string().as_bytes(),
            )
            .unwrap(),
        )
    });
    // The run has finished; the stream stays open until the late error (scenario clock).
    da.wait_for("event=run-finished", 1);
    assert!(events_of(&da, "late", "late-error").is_empty());
    da.advance("2s");
    let r = t.join().unwrap();
    assert_eq!(
        r.types(),
        vec![
            "RUN_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "RUN_FINISHED",
            "RUN_ERROR"
        ]
    );
    assert_eq!(r.events[5]["code"], "audit_write_failed");
    assert_eq!(events_of(&da, "late", "late-error").len(), 1);
}

#[test]
fn int6_an_interrupted_run_is_closed_and_continuing_takes_a_new_run() {
    let da = Da::start(&world(APPROVER));
    let mut c = Client::new(&da, "approver", "t1");
    let first = c.input(&[]);
    let r = c.send(&first);
    assert_eq!(r.outcome(), "interrupt");
    // Answering under the interrupted run's own runId: that run is closed.
    let mut again = first.clone();
    again["messages"] = json!(c.messages);
    again["resume"] = json!([resolved("approve-transfer", approve())]);
    let r2 = post(&da, "approver", &again);
    assert_eq!(r2.status, 409);
    assert_eq!(r2.body["code"], "run_closed");
    assert!(r2.events.is_empty());
    assert!(applied(&da, "payments").is_empty());
    // A new run continues it.
    let r3 = c.run(&[resolved("approve-transfer", approve())]);
    assert_eq!(r3.outcome(), "success");
    assert_eq!(applied(&da, "payments").len(), 1);
}

#[test]
fn res1_a_continuation_carries_answers_in_resume_and_the_approved_call_runs_once() {
    let da = Da::start(&world(APPROVER));
    let mut c = Client::new(&da, "approver", "t1");
    let r = c.run(&[]);
    let call_id = r.interrupts()[0]["toolCallId"].clone();
    let r2 = c.run(&[resolved("approve-transfer", approve())]);
    assert_eq!(r2.outcome(), "success");
    let result = r2.of_type("TOOL_CALL_RESULT");
    assert_eq!(result.len(), 1);
    assert_eq!(result[0]["toolCallId"], call_id);
    let content: Value = serde_json::from_str(result[0]["content"].as_str().unwrap()).unwrap();
    assert_eq!(content["status"], "succeeded");
    assert_eq!(r2.texts(), vec!["Done."]);
    let t = applied(&da, "payments");
    assert_eq!(t.len(), 1);
    assert_eq!(t[0]["body"], json!({"to": "acct-9", "amount": 100}));
    assert_eq!(t[0]["actor"], "agent:approver");
    assert_eq!(t[0]["work_id"], call_id);
    assert_eq!(content["id"], t[0]["action_id"]);
    // The run's input, resume entries included, is in the ledger.
    let started = events_of(&da, "approver", "run-started");
    assert_eq!(
        started[1]["body"]["resume"],
        json!([resolved("approve-transfer", approve())])
    );
    assert_eq!(
        started[1]["detail"]["verdicts"],
        json!([{"interrupt_id": "approve-transfer", "verdict": "answered"}])
    );
    let calls = events_of(&da, "approver", "tool-call");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["detail"]["gate"], "run");
    assert_eq!(calls[0]["detail"]["action_seq"], t[0]["seq"]);
}

#[test]
fn res2_entries_must_name_the_threads_latest_interrupted_run() {
    let agents = approver(
        "approver",
        &[(
            "[[agents.approver.iterations]]\ntext = \"Done.\"",
            "[[agents.approver.iterations]]\ntext = \"Done.\"\n\n[[agents.approver.interrupts]]\nphase = \"beforeModel\"\niteration = 1\nkey = \"confirm-next\"",
        )],
    );
    let da = Da::start(&world(&agents));
    let mut c = Client::new(&da, "approver", "t1");
    c.run(&[]);
    let run1 = c.last_run_id.clone().unwrap();
    let r2 = c.run(&[resolved("approve-transfer", approve())]);
    assert_eq!(
        r2.interrupt_ids(),
        vec!["confirm-next"],
        "a second interrupted run"
    );
    assert_eq!(applied(&da, "payments").len(), 1);

    // Answering the first run's interrupt again, naming the first run: stale.
    let mut body = c.input(&[resolved("approve-transfer", approve())]);
    body["parentRunId"] = json!(run1);
    let r3 = c.send(&body);
    assert!(r3.warned("RES-2"), "{:?}", r3.warnings());
    assert!(
        r3.warned("PROD-2"),
        "the stale entry names no interrupt of the latest run"
    );
    assert_eq!(r3.outcome(), "interrupt", "confirm-next is still open");
    assert_eq!(r3.interrupt_ids(), vec!["confirm-next"]);
    assert_eq!(applied(&da, "payments").len(), 1, "nothing ran twice");

    // Naming the latest run's interrupt moves on.
    let r4 = c.run(&[resolved("confirm-next", json!({}))]);
    assert_eq!(r4.outcome(), "success");
    assert_eq!(r4.texts(), vec!["Done."]);
}

#[test]
fn res3_a_discard_means_the_tool_is_not_run() {
    let da = Da::start(&world(APPROVER));
    let mut c = Client::new(&da, "approver", "t1");
    c.run(&[]);
    let r = c.run(&[cancelled("approve-transfer")]);
    assert_eq!(r.outcome(), "success");
    let res = r.of_type("TOOL_CALL_RESULT");
    assert_eq!(res.len(), 1, "the skipped call still gets a result");
    assert_eq!(
        res[0]["content"],
        json!({"status": "not-run", "reason": "discarded"}).to_string()
    );
    assert!(applied(&da, "payments").is_empty());
    assert_eq!(
        events_of(&da, "approver", "tool-call")[0]["detail"]["gate"],
        "discarded"
    );
}

#[test]
fn res3_the_payload_is_the_answer_and_metadata_only_envelope() {
    let da = Da::start(&world(APPROVER));
    let mut c = Client::new(&da, "approver", "t1");
    c.run(&[]);
    let entry = json!({"interruptId": "approve-transfer", "status": "resolved", "payload": {"approved": false}, "metadata": {"approved": true}});
    let r = c.run(&[entry]);
    assert_eq!(r.outcome(), "success");
    assert!(
        applied(&da, "payments").is_empty(),
        "approved:false in the payload"
    );
    assert_eq!(
        events_of(&da, "approver", "tool-call")[0]["detail"]["gate"],
        "not-approved"
    );
}

#[test]
fn res3_the_resolved_payload_reaches_the_tool_call() {
    let da = Da::start_file("agui-approval.toml");
    let mut c = Client::new(&da, "approver", "t1");
    c.run(&[]);
    let payload = json!({"approved": true, "by": "ann"});
    c.run(&[resolved("approve-transfer", payload.clone())]);
    let t = applied(&da, "payments");
    assert_eq!(t.len(), 1);
    // answer_at = "/approval"; the tool's Idempotency-Key header is its call id.
    assert_eq!(t[0]["body"]["approval"], payload);
    assert_eq!(t[0]["intent"], json!({"/to": "acct-9", "/amount": 100}));
    assert_eq!(t[0]["idempotency_key"], t[0]["work_id"]);
    assert_eq!(
        events_of(&da, "approver", "tool-call")[0]["detail"]["answer"],
        payload
    );
}

#[test]
fn res4_uncovered_interrupt_is_rejected() {
    let agents = approver(
        "approver",
        &[("uncovered = \"reinterrupt\"", "uncovered = \"reject\"")],
    );
    let da = Da::start(&world(&agents));
    let mut c = Client::new(&da, "approver", "t1");
    c.run(&[]);
    // A defective consumer: a new run on the thread with no entry for the open approval.
    let r = c.run(&[]);
    assert_eq!(r.status, 409, "rejected before any stream");
    assert!(r.content_type.starts_with("application/json"));
    assert!(r.events.is_empty());
    assert_eq!(r.body["code"], "resume_incomplete");
    assert!(r.body["error"]
        .as_str()
        .unwrap()
        .contains("approve-transfer"));
    // Omission is not discard: a resume that covers something else is no better.
    let r2 = c.run(&[resolved("bogus", json!(1))]);
    assert_eq!(r2.status, 409);
    assert!(applied(&da, "payments").is_empty());
    let rejected = events_of(&da, "approver", "run-rejected");
    assert_eq!(rejected.len(), 2);
    assert_eq!(rejected[0]["detail"]["code"], "resume_incomplete");
    assert_eq!(rejected[0]["response"]["status"], 409);
    // The interrupt is still open: covering it now works.
    let r3 = c.run(&[resolved("approve-transfer", approve())]);
    assert_eq!(r3.outcome(), "success");
    assert_eq!(applied(&da, "payments").len(), 1);
}

#[test]
fn res5_an_answer_to_an_expired_interrupt_is_treated_as_uncovered() {
    let da = Da::start_file("agui-expired.toml");
    let mut c = Client::new(&da, "strict-approver", "t1");
    let r = c.run(&[]);
    let exp = r.interrupts()[0]["expiresAt"].as_str().unwrap().to_string();
    da.advance("4m59s");
    // Still valid one second before; expired at expiresAt and after (now >= expiresAt).
    da.advance("1s");
    let now = da.get("/_admin/clock").json()["now"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(now, exp);
    let r2 = c.run(&[resolved("approve-transfer", approve())]);
    assert_eq!(r2.status, 409);
    assert_eq!(r2.body["code"], "interrupt_expired");
    assert!(applied(&da, "payments").is_empty());

    // The re-interrupting agent raises the still-open (expired) interrupt again instead.
    let mut p = Client::new(&da, "patient-approver", "t2");
    p.run(&[]);
    da.advance("6m");
    let r3 = p.run(&[resolved("approve-transfer", approve())]);
    assert_eq!(r3.outcome(), "interrupt");
    assert_eq!(r3.interrupt_ids(), vec!["approve-transfer"]);
    assert!(
        r3.warned("RES-5"),
        "says why it is back: {:?}",
        r3.warnings()
    );
    assert!(applied(&da, "payments").is_empty());
    let started = events_of(&da, "patient-approver", "run-started");
    assert_eq!(
        started[1]["detail"]["verdicts"][0]["verdict"],
        "answers-expired"
    );
}

#[test]
fn res5_an_expired_interrupt_can_still_be_discarded() {
    let da = Da::start_file("agui-expired.toml");
    let mut c = Client::new(&da, "strict-approver", "t1");
    c.run(&[]);
    da.advance("1h");
    let r = c.run(&[cancelled("approve-transfer")]);
    assert_eq!(r.status, 200);
    assert_eq!(r.outcome(), "success");
    assert_eq!(r.texts(), vec!["Done."]);
    assert!(applied(&da, "payments").is_empty());
}

#[test]
fn res6_thread_messages_and_state_carry_across_the_gap() {
    let agents = approver(
        "approver",
        &[("text = \"I will move 100 to acct-9.\"", "text = \"I will move 100 to acct-9.\"\nstate = { step = \"awaiting-approval\", amount = 100 }")],
    );
    let da = Da::start(&world(&agents));
    let mut c = Client::new(&da, "approver", "t1");
    let r = c.run(&[]);
    assert_eq!(
        r.of_type("STATE_SNAPSHOT")[0]["snapshot"],
        json!({"step": "awaiting-approval", "amount": 100})
    );
    assert_eq!(c.state["step"], "awaiting-approval");
    let r2 = c.run(&[resolved("approve-transfer", approve())]);
    assert!(
        r2.warnings().is_empty(),
        "a continuation that carries everything: {:?}",
        r2.warnings()
    );
    assert_eq!(r2.events[0]["threadId"], "t1");
    assert_eq!(applied(&da, "payments").len(), 1);

    // A consumer that drops the state, or the proposed call, is told so (the run proceeds).
    let mut d = Client::new(&da, "approver", "t2");
    d.run(&[]);
    d.state = json!({});
    let r3 = d.run(&[resolved("approve-transfer", approve())]);
    assert!(r3
        .warnings()
        .iter()
        .any(|w| w["rule"] == "RES-6" && w["message"].as_str().unwrap().contains("state")));
    let mut e = Client::new(&da, "approver", "t3");
    e.run(&[]);
    e.messages.truncate(1);
    let r4 = e.run(&[resolved("approve-transfer", approve())]);
    assert!(r4
        .warnings()
        .iter()
        .any(|w| w["rule"] == "RES-6" && w["message"].as_str().unwrap().contains("tool call")));
    assert_eq!(events_of(&da, "approver", "warning").len(), 2);

    // The same threadId matters: answering on another thread answers nothing (ERR-1).
    let mut f = Client::new(&da, "approver", "t4");
    f.run(&[]);
    f.thread = "t4-other".into();
    let r5 = f.run(&[resolved("approve-transfer", approve())]);
    assert!(r5.warned("ERR-1"));
    assert_eq!(
        r5.outcome(),
        "interrupt",
        "the open call it sees is asked about again"
    );
    assert_eq!(applied(&da, "payments").len(), 3);
}

#[test]
fn res7_usage_covers_only_the_runs_own_model_calls() {
    let da = Da::start_file("agui-audit.toml");
    let mut c = Client::new(&da, "auditor", "t1");
    let r = c.run(&[]);
    assert_eq!(
        r.finished()["usage"],
        json!([{"provider": "doubleagent", "model": "scripted", "inputTokens": 40, "outputTokens": 12, "totalTokens": 52}])
    );
    let r2 = c.run(&[
        resolved("review-transfer", json!({"acknowledged": true})),
        resolved("ledger-note", json!({"note": "ok"})),
    ]);
    assert_eq!(r2.outcome(), "success");
    assert_eq!(
        r2.finished()["usage"],
        json!([{"provider": "doubleagent", "model": "scripted", "inputTokens": 55, "outputTokens": 8, "totalTokens": 63}]),
        "iteration 1 only, nothing carried across the gap"
    );
    // The approver's continuation: its own model call only.
    let da = Da::start(&world(APPROVER));
    let mut a = Client::new(&da, "approver", "t1");
    a.run(&[]);
    let r3 = a.run(&[resolved("approve-transfer", approve())]);
    assert_eq!(
        r3.finished()["usage"][0]["inputTokens"],
        10,
        "the Done. turn only"
    );
}

#[test]
fn prod1_a_stateless_agent_takes_entries_as_the_answers_it_paused_for() {
    let da = Da::start_file("agui-approval.toml");
    let mut c = Client::new(&da, "stateless-approver", "t1");
    let r = c.run(&[]);
    assert_eq!(r.outcome(), "interrupt");
    let it = &r.interrupts()[0];
    assert_eq!(
        it["id"], "approve-transfer",
        "the scenario key: recomputable with no memory"
    );
    let r2 = c.run(&[resolved("approve-transfer", approve())]);
    assert_eq!(r2.outcome(), "success");
    assert_eq!(applied(&da, "payments").len(), 1);
    // It kept nothing: a new thread whose consumer forgot the earlier messages plays from the top.
    let mut d = Client::new(&da, "stateless-approver", "t2");
    d.run(&[]);
    d.messages.truncate(1);
    let r3 = d.run(&[]);
    assert_eq!(r3.status, 200);
    assert_eq!(r3.outcome(), "interrupt");
    assert_eq!(r3.texts(), vec!["I will move 100 to acct-9."]);
}

#[test]
fn prod2_an_unrecognized_entry_is_ignored_with_a_warning_and_the_run_proceeds() {
    let da = Da::start(&world(APPROVER));
    let mut c = Client::new(&da, "approver", "t1");
    c.run(&[]);
    let r = c.run(&[
        resolved("approve-transfer", approve()),
        resolved("bogus", approve()),
    ]);
    assert_eq!(r.outcome(), "success");
    let w: Vec<&Value> = r
        .warnings()
        .into_iter()
        .filter(|w| w["rule"] == "PROD-2")
        .collect();
    assert_eq!(w.len(), 1);
    assert_eq!(w[0]["details"]["interruptId"], "bogus");
    // Warnings come right after RUN_STARTED.
    assert_eq!(r.types()[1], "CUSTOM");
    assert_eq!(applied(&da, "payments").len(), 1);
    let lw = events_of(&da, "approver", "warning");
    assert_eq!(lw.len(), 1);
    assert_eq!(lw[0]["detail"]["rule"], "PROD-2");
}

#[test]
fn prod3_reinterrupt_never_succeeds_and_never_performs_the_gated_action() {
    let da = Da::start(&world(APPROVER));
    let mut c = Client::new(&da, "approver", "t1");
    let first = c.run(&[]);
    for _ in 0..2 {
        let r = c.run(&[]);
        assert_eq!(r.status, 200);
        assert_eq!(r.outcome(), "interrupt");
        assert_eq!(r.interrupts()[0]["id"], "approve-transfer");
        assert!(
            r.warned("RES-4"),
            "omission is not discard: {:?}",
            r.warnings()
        );
        assert_eq!(
            r.interrupts()[0]["expiresAt"],
            first.interrupts()[0]["expiresAt"],
            "the same open interrupt"
        );
        assert!(r.of_type("TOOL_CALL_RESULT").is_empty());
    }
    assert!(applied(&da, "payments").is_empty());
    assert_eq!(finished_outcomes(&da, "approver"), vec!["interrupt"; 3]);
}

#[test]
fn prod3_run_error_policy_opens_the_stream_with_run_error() {
    let agents = approver(
        "approver",
        &[("uncovered = \"reinterrupt\"", "uncovered = \"run-error\"")],
    );
    let da = Da::start(&world(&agents));
    let mut c = Client::new(&da, "approver", "t1");
    c.run(&[]);
    let r = c.run(&[]);
    assert_eq!(r.status, 200);
    assert_eq!(
        r.types(),
        vec!["RUN_ERROR"],
        "RUN_ERROR opens (and ends) the stream"
    );
    assert_eq!(r.events[0]["code"], "resume_incomplete");
    assert!(applied(&da, "payments").is_empty());
    assert_eq!(
        finished_outcomes(&da, "approver"),
        vec!["interrupt", "error"]
    );
    // The checkpoint is kept: an answer still works.
    let r2 = c.run(&[resolved("approve-transfer", approve())]);
    assert_eq!(r2.outcome(), "success");
    assert_eq!(applied(&da, "payments").len(), 1);
}

const PAIR: &str = r#"
[agents.pair]
protocol = "ag-ui"
tools = [
  { name = "transfer_funds", service = "payments", route = "create-transfer" },
  { name = "notify", service = "notifications", route = "send" },
]
iterations = [{ text = "Paying and telling.", tool_calls = [
  { tool = "transfer_funds", args = { to = "acct-9", amount = 100 } },
  { tool = "notify", args = { to = "acct-9", text = "paid" } },
] }, { text = "Done." }]
interrupts = [
  { phase = "beforeTools", key = "approve-transfer", tool_call = "transfer_funds", approve_if = "/approved" },
  { phase = "beforeTools", key = "approve-notice", tool_call = "notify" },
]
"#;

#[test]
fn prod3_reinterrupt_does_what_the_covered_entries_allow() {
    let stateless = PAIR.replace("agents.pair]", "agents.lone]").replace(
        "protocol = \"ag-ui\"",
        "protocol = \"ag-ui\"\nresume = \"stateless\"",
    );
    let da = Da::start(&world(&format!("{PAIR}\n{stateless}")));
    for (agent, thread) in [("pair", "t1"), ("lone", "t2")] {
        let before = (
            applied(&da, "payments").len(),
            applied(&da, "notifications").len(),
        );
        let mut c = Client::new(&da, agent, thread);
        c.run(&[]);
        let r = c.run(&[resolved("approve-notice", json!({}))]);
        assert_eq!(r.outcome(), "interrupt", "{agent}");
        assert_eq!(
            r.interrupt_ids(),
            vec!["approve-transfer"],
            "{agent}: only the still-open one"
        );
        assert_eq!(
            applied(&da, "notifications").len(),
            before.1 + 1,
            "{agent}: the covered call ran"
        );
        assert_eq!(
            applied(&da, "payments").len(),
            before.0,
            "{agent}: the uncovered one did not"
        );
        let r2 = c.run(&[resolved("approve-transfer", approve())]);
        assert_eq!(
            r2.outcome(),
            "success",
            "{agent}: the answered notice is not asked again"
        );
        assert_eq!(applied(&da, "payments").len(), before.0 + 1, "{agent}");
        assert_eq!(
            applied(&da, "notifications").len(),
            before.1 + 1,
            "{agent}: nothing ran twice"
        );
    }
}

#[test]
fn prod3_reinterrupt_keeps_answers_across_a_piecemeal_batch() {
    // One transfer needing two sign-offs, given in two continuations.
    let agents = r#"
[agents.double]
protocol = "ag-ui"
tools = [{ name = "transfer_funds", service = "payments", route = "create-transfer" }]
iterations = [{ text = "Moving 100 to acct-9.", tool_calls = [{ tool = "transfer_funds", args = { to = "acct-9", amount = 100 } }] }]
interrupts = [
  { phase = "beforeTools", key = "approve-transfer", tool_call = "transfer_funds", approve_if = "/approved" },
  { phase = "beforeTools", key = "second-signature", tool_call = "transfer_funds", approve_if = "/signed" },
]
"#;
    let da = Da::start(&world(agents));
    let mut c = Client::new(&da, "double", "t1");
    assert_eq!(
        c.run(&[]).interrupt_ids(),
        vec!["approve-transfer", "second-signature"]
    );
    let r = c.run(&[resolved("approve-transfer", approve())]);
    assert_eq!(r.interrupt_ids(), vec!["second-signature"]);
    assert!(
        r.of_type("TOOL_CALL_RESULT").is_empty(),
        "still waiting for the second sign-off"
    );
    assert!(applied(&da, "payments").is_empty());
    let r2 = c.run(&[resolved("second-signature", json!({"signed": true}))]);
    assert_eq!(r2.outcome(), "success", "the first answer still holds");
    assert_eq!(applied(&da, "payments").len(), 1);
}

#[test]
fn prod3_a_stateless_agent_sees_an_open_gated_call_in_the_messages() {
    let da = Da::start_file("agui-approval.toml");
    let mut c = Client::new(&da, "stateless-approver", "t1");
    c.run(&[]);
    // The messages hold the approval-gated call with neither a result nor an entry.
    let r = c.run(&[]);
    assert_eq!(r.status, 409);
    assert_eq!(r.body["code"], "resume_incomplete");
    assert!(applied(&da, "payments").is_empty());
}

#[test]
fn err1_resume_on_a_run_that_continues_nothing_answers_nothing() {
    let da = Da::start(&world(APPROVER));
    let mut c = Client::new(&da, "approver", "t1");
    let r = c.run(&[resolved("approve-transfer", approve())]);
    assert_eq!(r.status, 200);
    assert!(r.warned("ERR-1"), "{:?}", r.warnings());
    assert_eq!(
        r.outcome(),
        "interrupt",
        "plays from the top and asks for real"
    );
    assert!(applied(&da, "payments").is_empty());
    let started = events_of(&da, "approver", "run-started");
    assert_eq!(
        started[0]["detail"]["verdicts"][0]["verdict"],
        "unrecognized"
    );
}

#[test]
fn err1_a_success_outcome_never_carries_interrupts() {
    for file in [
        "agui-approval.toml",
        "agui-audit.toml",
        "agui-frontend-tool.toml",
    ] {
        let da = Da::start_file(file);
        for agent in da.ready["agents"].as_object().unwrap().keys() {
            let mut c = Client::new(&da, agent, "t1");
            let mut resume = Vec::new();
            for _ in 0..4 {
                let r = c.run(&resume);
                if r.status != 200 {
                    break;
                }
                let outcome = &r.finished()["outcome"];
                if outcome["type"] == "success" {
                    assert!(outcome.get("interrupts").is_none(), "{file} {agent}");
                    let pending = outcome["pendingToolCallIds"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default();
                    if pending.is_empty() {
                        break;
                    }
                    c.answer_tools(&pending, "{}");
                    resume.clear();
                } else {
                    resume = r
                        .interrupt_ids()
                        .iter()
                        .map(|id| resolved(id, approve()))
                        .collect();
                }
            }
        }
    }
}

// =============================================================================================
// C. Lifecycle boundaries

/// An agent that pauses at `phase` of iteration 0 (one tool call, then a second turn).
fn paused_at(phase: &str, extra: &str) -> String {
    format!(
        r#"
[agents.p]
protocol = "ag-ui"
tools = [{{ name = "transfer_funds", service = "payments", route = "create-transfer" }}]
iterations = [
  {{ text = "I will move 100 to acct-9.", tool_calls = [{{ tool = "transfer_funds", args = {{ to = "acct-9", amount = 100 }} }}] }},
  {{ text = "Done." }},
]
interrupts = [{{ phase = "{phase}", key = "pause" {extra} }}]
"#
    )
}

#[test]
fn ph1_a_before_model_pause_has_the_conversation_but_no_assistant_text() {
    let da = Da::start(&world(&paused_at("beforeModel", "")));
    let mut c = Client::new(&da, "p", "t1");
    let r = c.run(&[]);
    assert_eq!(r.types(), vec!["RUN_STARTED", "RUN_FINISHED"]);
    assert!(r.interrupts()[0].get("toolCallId").is_none());
    assert!(r.finished().get("usage").is_none(), "no model call yet");
    let r2 = c.run(&[resolved("pause", json!({}))]);
    assert_eq!(r2.texts(), vec!["I will move 100 to acct-9.", "Done."]);
    assert_eq!(applied(&da, "payments").len(), 1);
}

#[test]
fn ph2_an_after_model_pause_has_the_text_but_no_tool_calls_yet() {
    let da = Da::start(&world(&paused_at("afterModel", "")));
    let mut c = Client::new(&da, "p", "t1");
    let r = c.run(&[]);
    assert_eq!(r.texts(), vec!["I will move 100 to acct-9."]);
    assert!(
        r.of_type("TOOL_CALL_START").is_empty(),
        "proposed calls are not in the messages yet"
    );
    assert_eq!(r.outcome(), "interrupt");
    let r2 = c.run(&[resolved("pause", json!({}))]);
    assert!(
        r2.texts()
            .iter()
            .all(|t| *t != "I will move 100 to acct-9."),
        "the model is not called again"
    );
    assert_eq!(r2.of_type("TOOL_CALL_START").len(), 1);
    assert_eq!(r2.of_type("TOOL_CALL_RESULT").len(), 1);
    assert_eq!(applied(&da, "payments").len(), 1);
}

#[test]
fn ph3_a_before_tools_pause_has_the_proposed_calls_and_no_side_effect() {
    let da = Da::start(&world(APPROVER));
    let mut c = Client::new(&da, "approver", "t1");
    let r = c.run(&[]);
    assert_eq!(
        r.types(),
        vec![
            "RUN_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "TOOL_CALL_START",
            "TOOL_CALL_ARGS",
            "TOOL_CALL_END",
            "RUN_FINISHED"
        ]
    );
    let args: Value =
        serde_json::from_str(r.of_type("TOOL_CALL_ARGS")[0]["delta"].as_str().unwrap()).unwrap();
    assert_eq!(args, json!({"to": "acct-9", "amount": 100}));
    assert_eq!(
        r.of_type("TOOL_CALL_START")[0]["parentMessageId"],
        r.of_type("TEXT_MESSAGE_START")[0]["messageId"]
    );
    // No ledger entry of the payments service yet; the ledger holds the run only.
    assert!(da.ledger().iter().all(|e| e["service"] == "approver"));
    assert_eq!(
        events_of(&da, "approver", "run-finished")[0]["detail"]["paused_at"],
        json!({"iteration": 0, "phase": "beforeTools"})
    );
}

#[test]
fn ph4_an_after_tools_pause_comes_after_the_side_effect() {
    let da = Da::start_file("agui-audit.toml");
    let mut c = Client::new(&da, "auditor", "t1");
    let r = c.run(&[]);
    assert_eq!(r.outcome(), "interrupt");
    let result = r.of_type("TOOL_CALL_RESULT");
    assert_eq!(result.len(), 1, "the tool ran before the pause");
    let review = r
        .interrupts()
        .into_iter()
        .find(|i| i["id"] == "review-transfer")
        .unwrap();
    assert_eq!(review["toolCallId"], result[0]["toolCallId"]);
    let t = applied(&da, "payments");
    assert_eq!(t.len(), 1);
    let fin = events_of(&da, "auditor", "run-finished");
    assert!(
        t[0]["seq"].as_u64() < fin[0]["seq"].as_u64(),
        "the effect is in the ledger before the interrupt"
    );
    // No answer can undo it, and the continuation does not repeat it.
    c.run(&[cancelled("review-transfer"), cancelled("ledger-note")]);
    assert_eq!(applied(&da, "payments").len(), 1);
}

#[test]
fn ph5_interrupts_at_one_phase_form_one_batch_and_one_outcome() {
    let da = Da::start_file("agui-audit.toml");
    let r = Client::new(&da, "auditor", "t1").run(&[]);
    assert_eq!(r.of_type("RUN_FINISHED").len(), 1);
    assert_eq!(r.interrupt_ids(), vec!["review-transfer", "ledger-note"]);
    assert_eq!(r.types().last(), Some(&"RUN_FINISHED"));
    assert_eq!(events_of(&da, "auditor", "run-finished").len(), 1);
}

#[test]
fn ph6_a_continuation_runs_every_boundary_again_skip_passes_repeat_pauses_again() {
    let agents = format!(
        "{}\n{}",
        paused_at("afterModel", ", on_continuation = \"skip\""),
        paused_at("afterModel", ", on_continuation = \"repeat\"").replace("agents.p]", "agents.r]")
    );
    let da = Da::start(&world(&agents));
    // skip: the hook runs again on the continuation and does not fire (resume alone marks it:
    // @ag-ui/client never sends parentRunId).
    let mut c = Client::new(&da, "p", "t1");
    c.run(&[]);
    let r = c.run(&[resolved("pause", json!({}))]);
    assert_eq!(r.outcome(), "success");
    // repeat: raising the same request again pauses again, at the same boundary.
    let mut d = Client::new(&da, "r", "t2");
    d.run(&[]);
    for _ in 0..2 {
        let r = d.run(&[resolved("pause", json!({}))]);
        assert_eq!(r.outcome(), "interrupt");
        assert_eq!(r.interrupt_ids(), vec!["pause"]);
        assert!(
            r.of_type("TOOL_CALL_START").is_empty(),
            "still at afterModel"
        );
        assert!(r.texts().is_empty(), "the model is not called again");
    }
    // TanStack's way: parentRunId and resume together.
    let mut e = Client::new(&da, "p", "t3");
    e.run(&[]);
    let parent = e.last_run_id.clone().unwrap();
    let mut body = e.input(&[resolved("pause", json!({}))]);
    body["parentRunId"] = json!(parent);
    let r = e.send(&body);
    assert_eq!(r.events[0]["parentRunId"], json!(parent));
    assert_eq!(r.outcome(), "success");
    assert!(r.warnings().is_empty());
}

#[test]
fn ph7_an_answer_can_only_unpause_never_change_the_script() {
    let da = Da::start(&world(APPROVER));
    let mut c = Client::new(&da, "approver", "t1");
    c.run(&[]);
    let payload = json!({"approved": true, "amount": 999, "to": "acct-666", "text": "hijacked", "tool_calls": [], "uncovered": "reject"});
    let r = c.run(&[resolved("approve-transfer", payload)]);
    assert_eq!(r.texts(), vec!["Done."]);
    let t = applied(&da, "payments");
    assert_eq!(t[0]["body"], json!({"to": "acct-9", "amount": 100}));
    // The next thread plays the same script and is judged by the same policy.
    let mut d = Client::new(&da, "approver", "t2");
    d.run(&[]);
    assert_eq!(
        d.run(&[]).outcome(),
        "interrupt",
        "still uncovered = \"reinterrupt\""
    );
}

// =============================================================================================
// Clients, input, tools, violations

#[test]
fn tanstack_clients_get_answerable_interrupts_and_their_habits_are_tolerated() {
    let da = Da::start_file("agui-interop.toml");
    // fetchServerSentEvents' request: Accept */*, no protocolVersion, a `data` mirror, an
    // X-Run-Id header, TanStack metadata on messages.
    let body = json!({
        "threadId": "thread-1", "runId": "run-1", "state": {},
        "messages": [{"id": "m1", "role": "user", "content": "pay", "metadata": {"tanstack": {"createdAt": "2026-11-30T00:00:00.000Z"}}}],
        "tools": [], "context": [], "forwardedProps": {}, "data": {},
    });
    let r = post_with(
        &da,
        "tanstack-approver",
        &[("accept", "*/*"), ("x-run-id", "run-1")],
        &body,
    );
    assert_eq!(r.status, 200);
    assert!(r.warnings().is_empty(), "{:?}", r.warnings());
    let it = &r.interrupts()[0];
    let binding = &it["metadata"]["tanstack:interruptBinding"];
    assert_eq!(binding["v"], 1);
    assert_eq!(binding["kind"], "generic");
    assert_eq!(binding["interruptId"], "approve-transfer");
    assert_eq!(binding["interruptedRunId"], "run-1");
    assert_eq!(binding["generation"], 0);
    assert_eq!(binding["expiresAt"], it["expiresAt"]);
    // Checked against @tanstack/ai 0.58.0's own digest of the issue's response schema.
    assert_eq!(
        binding["responseSchemaHash"],
        "sha256:cf02c74d30b5aa436d45f581780e03fe2aef4b97d233bef3acdef4d9ca1176d1"
    );

    // The continuation: parentRunId, resume, a tool message with TanStack's `name`.
    let call = r.of_type("TOOL_CALL_START")[0]["toolCallId"].clone();
    let body2 = json!({
        "threadId": "thread-1", "runId": "run-2", "parentRunId": "run-1", "state": {},
        "resume": [{"interruptId": "approve-transfer", "payload": {"approved": true}, "status": "resolved"}],
        "messages": [
            {"id": "m1", "role": "user", "content": "pay"},
            {"id": "a1", "role": "assistant", "content": "I will move 100 to acct-9.", "toolCalls": [{"id": call, "type": "function", "function": {"name": "transfer_funds", "arguments": "{}"}}]},
            {"id": "x", "role": "tool", "name": "other", "toolCallId": "elsewhere", "content": "{}"},
        ],
        "tools": [], "context": [], "forwardedProps": {}, "data": {},
    });
    let r2 = post_with(&da, "tanstack-approver", &[("accept", "*/*")], &body2);
    assert_eq!(r2.outcome(), "success");
    assert!(r2.warnings().is_empty(), "{:?}", r2.warnings());
    assert_eq!(applied(&da, "payments").len(), 1);

    // A plain AG-UI agent strips the same members with a warning, and binds nothing.
    let r3 = post_with(
        &da,
        "approver",
        &[("accept", "*/*")],
        &json!({"threadId": "t9", "runId": "r9", "messages": [], "data": {}}),
    );
    assert!(r3
        .warnings()
        .iter()
        .any(|w| w["rule"] == "input" && w["details"]["stripped"] == json!(["data"])));
    assert!(r3.interrupts()[0].get("metadata").is_none());
}

#[test]
fn bad_run_agent_input_is_a_4xx_json_before_any_stream_and_recorded() {
    let da = Da::start(&world(APPROVER));
    /// method, path, extra headers, body, expected status and code.
    type Case<'a> = (
        &'a str,
        &'a str,
        Vec<(&'a str, &'a str)>,
        String,
        u16,
        &'a str,
    );
    let cases: Vec<Case> = vec![
        ("POST", "/agents/approver", vec![], "not json".into(), 400, "invalid_input"),
        ("POST", "/agents/approver", vec![], json!({"threadId": "t", "runId": "r"}).to_string(), 400, "invalid_input"),
        ("POST", "/agents/approver", vec![], json!({"threadId": "t", "runId": "r", "messages": [], "resume": [{"interruptId": "i", "status": "maybe"}]}).to_string(), 400, "invalid_input"),
        ("POST", "/agents/approver", vec![], json!({"threadId": "t", "runId": "r", "messages": [], "parentRunId": null}).to_string(), 400, "invalid_input"),
        ("POST", "/agents/approver", vec![], json!({"threadId": 7, "runId": "r", "messages": []}).to_string(), 400, "invalid_input"),
        ("POST", "/agents/approver", vec![], json!({"threadId": "t", "runId": "r", "messages": [], "protocolVersion": "2.0"}).to_string(), 400, "unsupported_protocol_version"),
        ("POST", "/agents/approver", vec![("accept", "application/json")], json!({"threadId": "t", "runId": "r", "messages": []}).to_string(), 406, "not_acceptable"),
        ("GET", "/agents/approver", vec![], String::new(), 405, "method_not_allowed"),
        ("POST", "/agents/approver/runs", vec![], json!({"threadId": "t", "runId": "r", "messages": []}).to_string(), 404, "not_found"),
        ("POST", "/agents/approver", vec![], "\u{0}\u{ff}\u{7f}{{{".into(), 400, "invalid_input"),
    ];
    for (method, path, headers, body, status, code) in &cases {
        let r = to_run(da.call(method, path, headers, body));
        assert_eq!(r.status, *status, "{method} {path} {body}");
        assert!(r.content_type.starts_with("application/json"));
        assert_eq!(r.body["code"], *code, "{body}");
        assert_eq!(r.body["status"], *status);
    }
    let rejected = events_of(&da, "approver", "run-rejected");
    assert_eq!(
        rejected.len(),
        cases.len(),
        "every refusal is in the ledger"
    );
    assert_eq!(rejected[0]["body"], "not json");
    // An unknown agent is a 404 naming the agents there are.
    let r = to_run(da.call("POST", "/agents/aprover", &[], "{}"));
    assert_eq!(r.status, 404);
    assert!(r.body["error"]
        .as_str()
        .unwrap()
        .contains("did you mean `approver`"));
    // The server is fine afterwards.
    assert_eq!(
        Client::new(&da, "approver", "t1").run(&[]).outcome(),
        "interrupt"
    );
}

#[test]
fn unknown_input_members_and_a_newer_minor_version_are_served_with_warnings() {
    let da = Da::start(&world(APPROVER));
    let body = json!({"threadId": "t", "runId": "r", "protocolVersion": "1.3", "messages": [{"id": "u", "role": "user", "content": "hi", "mood": "happy"}], "extra": 1});
    let r = post(&da, "approver", &body);
    assert_eq!(r.status, 200);
    assert!(r.warned("protocol-version"));
    let w = r
        .warnings()
        .into_iter()
        .find(|w| w["rule"] == "input")
        .unwrap();
    assert_eq!(
        w["details"]["stripped"],
        json!(["extra", "messages[0].mood"])
    );
    assert_eq!(
        r.events[0]["protocolVersion"], "1.0",
        "its own version, not an echo"
    );
}

#[test]
fn backend_tool_fates_become_tool_results() {
    let svc = r#"
[services.flaky]
[[services.flaky.routes]]
name = "act"
method = "POST"
path = "/v1/act"
kind = "action"
fates = ["drop-after-apply", "error-before-apply:503", "delay:3s"]
"#;
    let agents = r#"
[agents.worker]
protocol = "ag-ui"
tools = [{ name = "act", service = "flaky", route = "act" }]
iterations = [{ text = "Acting.", tool_calls = [{ tool = "act", args = { n = 1 } }] }]
"#;
    let da = Da::start(&format!("clock = \"manual\"\n{svc}\n{agents}"));
    let content = |r: &Run| -> Value {
        serde_json::from_str(
            r.of_type("TOOL_CALL_RESULT")[0]["content"]
                .as_str()
                .unwrap(),
        )
        .unwrap()
    };
    let r1 = Client::new(&da, "worker", "t1").run(&[]);
    assert_eq!(content(&r1)["delivery"], "dropped");
    assert_eq!(r1.outcome(), "success");
    let r2 = Client::new(&da, "worker", "t2").run(&[]);
    assert_eq!(content(&r2)["status"], 503);
    let entries = da.ledger();
    let acts: Vec<&Value> = entries.iter().filter(|e| e["service"] == "flaky").collect();
    assert_eq!(
        acts[0]["applied"], true,
        "applied although the agent got no answer"
    );
    assert_eq!(acts[1]["applied"], false);
    // A delayed response holds the run on the scenario clock.
    let url = da.url.clone();
    let t = std::thread::spawn(move || {
        let body = json!({"threadId": "t3", "runId": "r3", "messages": []});
        to_run(
            request(
                &url,
                "POST",
                "/agents/worker",
                &[("content-type", "application/json")],
                body.to_string().as_bytes(),
            )
            .unwrap(),
        )
    });
    da.wait_for("service=flaky", 3);
    da.advance("3s");
    let r3 = t.join().unwrap();
    assert_eq!(content(&r3)["status"], "succeeded");
}

#[test]
fn every_deliberate_violation_is_recorded_in_the_ledger() {
    let da = Da::start_file("agui-misbehaving.toml");
    let cases = [
        ("liar", "success-while-interrupted"),
        ("duplicator", "duplicate-interrupt-ids"),
        ("empty-handed", "interrupt-without-interrupts"),
        ("truncator", "missing-run-finished"),
        ("noisy", "unknown-fields"),
    ];
    for (agent, violation) in cases {
        let r = Client::new(&da, agent, "t1").run(&[]);
        assert_eq!(r.status, 200);
        let v = events_of(&da, agent, "violation");
        assert_eq!(v.len(), 1, "{agent}");
        assert_eq!(v[0]["detail"]["violation"], violation);
        match agent {
            "truncator" => assert!(
                r.of_type("RUN_FINISHED").is_empty()
                    && r.types().last() == Some(&"TEXT_MESSAGE_END")
            ),
            "noisy" => assert!(r
                .events
                .iter()
                .all(|e| e["doubleagentUnknownField"] == true)),
            _ => {}
        }
    }
    // The well-behaved agents of the same scenario record none.
    Client::new(&da, "late", "t1").run(&[]);
    assert!(events_of(&da, "late", "violation").is_empty());
}

#[test]
fn reset_forgets_open_interrupts() {
    let da = Da::start(&world(APPROVER));
    let mut c = Client::new(&da, "approver", "t1");
    c.run(&[]);
    assert_eq!(da.call("POST", "/_admin/reset", &[], "").status, 200);
    // The thread's checkpoint went with the world; the open call in the messages remains
    // visible (PROD-3), so a bare new run re-raises rather than succeeding.
    let r = c.run(&[]);
    assert_eq!(r.outcome(), "interrupt");
    let started = events_of(&da, "approver", "run-started");
    assert_eq!(started.len(), 1, "a fresh ledger");
    assert_eq!(
        started[0]["detail"]["uncovered"][0]["interrupt_id"],
        "approve-transfer"
    );
    // ...and an answer is honoured from the messages alone.
    let r2 = c.run(&[resolved("approve-transfer", approve())]);
    assert_eq!(r2.outcome(), "success");
    assert_eq!(applied(&da, "payments").len(), 1);
}
