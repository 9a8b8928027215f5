//! AG-UI threads across a restart with `--journal`: killed with SIGKILL and started again on the
//! same journal, a stateful agent still knows each thread's open interrupts (with their
//! `expiresAt`), where the run paused, the calls it proposed and the state it left, so a
//! continuation after the restart is judged exactly as without it. A run still streaming at the
//! crash ends as if its client had gone away (`run-finished`, `cause: "restart"`).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use serde_json::{json, Value};

fn shipped(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(name)
}

fn fresh_journal() -> PathBuf {
    temp_file("placeholder", "").with_file_name("journal.jsonl")
}

/// `doubleagent serve SCENARIO --journal JOURNAL --listen 127.0.0.1:0`.
fn serve(scenario: &Path, journal: &Path) -> Da {
    Da::start_args(&[
        scenario.to_str().unwrap(),
        "--journal",
        journal.to_str().unwrap(),
    ])
}

fn kill9(da: Da) {
    Command::new("kill")
        .args(["-KILL", &da.child.id().to_string()])
        .status()
        .unwrap();
    drop(da);
}

/// One answer of an agent: a stream of events, or a refusal with a JSON body.
struct Run {
    status: u16,
    events: Vec<Value>,
    body: Value,
}

impl Run {
    fn of_type(&self, t: &str) -> Vec<&Value> {
        self.events.iter().filter(|e| e["type"] == t).collect()
    }

    fn types(&self) -> Vec<&str> {
        self.events
            .iter()
            .map(|e| e["type"].as_str().unwrap_or("?"))
            .collect()
    }

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

    fn warned(&self, rule: &str) -> bool {
        self.of_type("CUSTOM")
            .iter()
            .any(|e| e["name"] == "doubleagent.warning" && e["value"]["rule"] == rule)
    }

    fn warnings(&self) -> Vec<&Value> {
        self.of_type("CUSTOM")
            .into_iter()
            .filter(|e| e["name"] == "doubleagent.warning")
            .map(|e| &e["value"])
            .collect()
    }
}

fn to_run(r: Resp) -> Run {
    let chunked = r
        .header("transfer-encoding")
        .is_some_and(|t| t.contains("chunked"));
    let raw = if chunked {
        dechunk(&r.body)
    } else {
        r.body.clone()
    };
    let text = String::from_utf8(raw).unwrap();
    if r.header("content-type")
        .is_some_and(|c| c.starts_with("text/event-stream"))
    {
        let events = text
            .split("\n\n")
            .filter(|f| !f.is_empty())
            .map(|f| serde_json::from_str(f.strip_prefix("data: ").unwrap()).unwrap())
            .collect();
        Run {
            status: r.status,
            events,
            body: Value::Null,
        }
    } else {
        Run {
            status: r.status,
            events: Vec::new(),
            body: serde_json::from_str(&text).unwrap_or(Value::String(text)),
        }
    }
}

/// A consumer of one thread that keeps messages and state the way `@ag-ui/client` does, so it
/// can go on after the server it talks to was restarted.
struct Thread {
    agent: String,
    thread: String,
    messages: Vec<Value>,
    state: Value,
    runs: usize,
}

impl Thread {
    fn new(agent: &str, thread: &str) -> Thread {
        Thread {
            agent: agent.to_string(),
            thread: thread.to_string(),
            messages: vec![json!({"id": "u1", "role": "user", "content": "Pay acct-9 100"})],
            state: json!({}),
            runs: 0,
        }
    }

    fn input(&mut self, resume: &[Value]) -> Value {
        self.runs += 1;
        let mut body = json!({
            "threadId": self.thread,
            "runId": format!("{}-r{}", self.thread, self.runs),
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

    fn run(&mut self, da: &Da, resume: &[Value]) -> Run {
        let body = self.input(resume);
        self.send(da, &body)
    }

    fn send(&mut self, da: &Da, body: &Value) -> Run {
        let r = to_run(
            da.post_json(
                &format!("/agents/{}", self.agent),
                &[("accept", "text/event-stream")],
                body,
            )
            .expect("a response"),
        );
        self.apply(&r);
        r
    }

    /// Fold a run's events into the thread.
    fn apply(&mut self, r: &Run) {
        for e in &r.events {
            match e["type"].as_str().unwrap_or("") {
                "TEXT_MESSAGE_START" => self
                    .messages
                    .push(json!({"id": e["messageId"], "role": "assistant", "content": ""})),
                "TEXT_MESSAGE_CONTENT" => {
                    if let Some(m) = self.messages.iter_mut().find(|m| m["id"] == e["messageId"]) {
                        let c = format!(
                            "{}{}",
                            m["content"].as_str().unwrap_or(""),
                            e["delta"].as_str().unwrap_or("")
                        );
                        m["content"] = json!(c);
                    }
                }
                "TOOL_CALL_START" => {
                    let call = json!({"id": e["toolCallId"], "type": "function",
                        "function": {"name": e["toolCallName"], "arguments": ""}});
                    match self
                        .messages
                        .iter_mut()
                        .find(|m| m["id"] == e["parentMessageId"])
                    {
                        Some(m) => {
                            if m["toolCalls"].is_null() {
                                m["toolCalls"] = json!([]);
                            }
                            m["toolCalls"].as_array_mut().unwrap().push(call);
                        }
                        None => self.messages.push(json!({"id": e["parentMessageId"],
                            "role": "assistant", "toolCalls": [call]})),
                    }
                }
                "TOOL_CALL_ARGS" => {
                    for m in self.messages.iter_mut() {
                        if let Some(calls) = m.get_mut("toolCalls").and_then(Value::as_array_mut) {
                            for c in calls.iter_mut().filter(|c| c["id"] == e["toolCallId"]) {
                                let a = format!(
                                    "{}{}",
                                    c["function"]["arguments"].as_str().unwrap_or(""),
                                    e["delta"].as_str().unwrap_or("")
                                );
                                c["function"]["arguments"] = json!(a);
                            }
                        }
                    }
                }
                "TOOL_CALL_RESULT" => self.messages.push(json!({
                    "id": e["messageId"], "role": "tool", "toolCallId": e["toolCallId"],
                    "content": e["content"],
                })),
                "STATE_SNAPSHOT" => self.state = e["snapshot"].clone(),
                _ => {}
            }
        }
    }
}

fn approve() -> Value {
    json!({"interruptId": "approve-transfer", "status": "resolved", "payload": {"approved": true}})
}

fn transfers(da: &Da) -> Vec<Value> {
    da.get("/_admin/ledger?service=payments").json()["entries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["disposition"] == "executed")
        .cloned()
        .collect()
}

fn events_of(da: &Da, agent: &str, event: &str) -> Vec<Value> {
    da.get(&format!(
        "/_admin/ledger?service={agent}&event={event}&disposition=agent"
    ))
    .json()["entries"]
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn res1_an_approval_paused_before_a_sigkill_is_answered_after_the_restart_and_the_transfer_runs_once(
) {
    let journal = fresh_journal();
    let scenario = shipped("agui-approval.toml");
    let da = serve(&scenario, &journal);
    let mut t = Thread::new("approver", "t1");
    let r1 = t.run(&da, &[]);
    assert_eq!(r1.outcome(), "interrupt");
    let asked = r1.interrupts();
    assert_eq!(asked[0]["id"], "approve-transfer");
    assert_eq!(asked[0]["toolCallId"], "call-0-0-t1-r1");
    assert!(
        transfers(&da).is_empty(),
        "PH-3: nothing ran before the answer"
    );
    kill9(da);

    let da = serve(&scenario, &journal);
    assert!(transfers(&da).is_empty());
    let r2 = t.run(&da, &[approve()]);
    assert_eq!(r2.outcome(), "success", "{:?}", r2.types());
    assert!(
        r2.warnings().is_empty(),
        "answers recognized, state and calls carried (RES-6): {:?}",
        r2.warnings()
    );
    let results = r2.of_type("TOOL_CALL_RESULT");
    assert_eq!(results.len(), 1);
    assert_eq!(results[0]["toolCallId"], "call-0-0-t1-r1");
    let started = events_of(&da, "approver", "run-started");
    assert_eq!(started.last().unwrap()["detail"]["continues"], "t1-r1");
    assert_eq!(
        started.last().unwrap()["detail"]["verdicts"][0]["verdict"],
        "answered"
    );
    let moved = transfers(&da);
    assert_eq!(moved.len(), 1, "{moved:?}");
    assert_eq!(moved[0]["actor"], "agent:approver");
    assert_eq!(moved[0]["work_id"], "call-0-0-t1-r1");
    assert_eq!(moved[0]["body"]["approval"], json!({"approved": true}));

    // The answered pause is closed, after a second restart too: the same answer again answers
    // nothing (ERR-1) and moves no money.
    kill9(da);
    let da = serve(&scenario, &journal);
    let r3 = t.run(&da, &[approve()]);
    assert!(r3.warned("ERR-1"), "{:?}", r3.warnings());
    assert_eq!(transfers(&da).len(), 1, "exactly once");
}

#[test]
fn res4_prod3_an_uncovered_continuation_after_a_restart_is_still_refused_per_policy() {
    // reinterrupt: the same interrupt (same expiresAt, same call) comes back with a warning.
    let journal = fresh_journal();
    let scenario = shipped("agui-approval.toml");
    let da = serve(&scenario, &journal);
    let mut t = Thread::new("approver", "t1");
    let asked = t.run(&da, &[]).interrupts();
    kill9(da);
    let da = serve(&scenario, &journal);
    let body = json!({"threadId": "t1", "runId": "t1-r2", "parentRunId": "t1-r1",
        "messages": [{"id": "u2", "role": "user", "content": "go on"}]});
    let r = t.send(&da, &body);
    assert_eq!(r.outcome(), "interrupt", "{:?}", r.types());
    assert!(r.warned("RES-4"), "{:?}", r.warnings());
    assert!(
        r.warned("RES-6"),
        "the proposed call was dropped: {:?}",
        r.warnings()
    );
    assert_eq!(
        r.interrupts(),
        asked,
        "the interrupt the thread paused on, as it was"
    );
    assert!(r.of_type("TOOL_CALL_RESULT").is_empty());
    assert!(
        transfers(&da).is_empty(),
        "never on the strength of a missing entry"
    );
    drop(da);

    // reject (HTTP 409) and run-error (RUN_ERROR first): agents of the interop scenario.
    let journal = fresh_journal();
    let scenario = shipped("agui-interop.toml");
    let da = serve(&scenario, &journal);
    let mut strict = Thread::new("strict", "s1");
    assert_eq!(strict.run(&da, &[]).outcome(), "interrupt");
    let mut expiring = Thread::new("expiring", "e1");
    assert_eq!(expiring.run(&da, &[]).outcome(), "interrupt");
    kill9(da);
    let da = serve(&scenario, &journal);
    let unknown = json!({"interruptId": "no-such", "status": "resolved", "payload": {}});
    let r = strict.run(&da, std::slice::from_ref(&unknown));
    assert_eq!(r.types()[0], "RUN_ERROR", "{:?}", r.types());
    assert_eq!(r.events[0]["code"], "resume_incomplete");
    let r = expiring.run(&da, &[unknown]);
    assert_eq!(r.status, 409, "{}", r.body);
    assert_eq!(r.body["code"], "resume_incomplete");
    assert!(transfers(&da).is_empty());
    // Still open after the refusals: answering it now is judged against the checkpoint.
    let r = strict.run(&da, &[approve()]);
    assert_eq!(r.outcome(), "success", "{:?}", r.types());
    assert_eq!(transfers(&da).len(), 1);
}

#[test]
fn res5_an_interrupt_stays_expired_on_the_scenario_clock_across_a_restart() {
    let journal = fresh_journal();
    let scenario = shipped("agui-approval.toml");
    let da = serve(&scenario, &journal);
    let mut t = Thread::new("approver", "t1");
    let asked = t.run(&da, &[]).interrupts();
    da.advance("6m");
    kill9(da);
    // Restarted at 6m on the scenario clock; 5 more make 11m, past the 10m expiry.
    let da = serve(&scenario, &journal);
    da.advance("5m");
    let r = t.run(&da, &[approve()]);
    assert_eq!(r.outcome(), "interrupt", "{:?}", r.types());
    assert!(r.warned("RES-5"), "{:?}", r.warnings());
    assert_eq!(r.interrupts(), asked, "same interrupt, same expiresAt");
    let started = events_of(&da, "approver", "run-started");
    assert_eq!(
        started.last().unwrap()["detail"]["verdicts"][0]["verdict"],
        "answers-expired"
    );
    assert!(transfers(&da).is_empty());
    // A discard of the expired interrupt is still accepted, and moves nothing.
    let discard = json!({"interruptId": "approve-transfer", "status": "cancelled"});
    let r = t.run(&da, &[discard]);
    assert_eq!(r.outcome(), "success", "{:?}", r.types());
    assert!(transfers(&da).is_empty());
}

#[test]
fn acc1_a_continuation_streaming_at_the_crash_ends_with_the_restart_and_its_retry_never_repeats_the_transfer(
) {
    // The approver with a slow second turn: the continuation makes the transfer, then waits.
    let text = std::fs::read_to_string(shipped("agui-approval.toml"))
        .unwrap()
        .replacen("text = \"Done.\"", "text = \"Done.\"\ndelay = \"5s\"", 1);
    let scenario = temp_file("slow-approval.toml", &text);
    let journal = fresh_journal();
    let da = serve(&scenario, &journal);
    let mut t = Thread::new("approver", "t1");
    assert_eq!(t.run(&da, &[]).outcome(), "interrupt");
    let body = t.input(&[approve()]);
    let mut s = open_stream(&da, &body);
    read_until(&mut s, "TOOL_CALL_RESULT");
    assert_eq!(transfers(&da).len(), 1, "the transfer ran before the crash");
    kill9(da);
    drop(s);

    let da = serve(&scenario, &journal);
    let fin = events_of(&da, "approver", "run-finished");
    let last = fin.last().unwrap();
    assert_eq!(last["work_id"], "t1-r2");
    assert_eq!(last["detail"]["outcome"], "cancelled");
    assert_eq!(last["detail"]["cause"], "restart");
    assert_eq!(last["detail"]["restored_checkpoint"], "t1-r1");
    // The client never heard the end and retries the same answer: still a continuation, the
    // transfer's result is sent again, not made again.
    let retry = t.input(&[approve()]);
    let url = da.url.clone();
    let h = std::thread::spawn(move || {
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
    let r = h.join().unwrap();
    assert_eq!(r.outcome(), "success", "{:?}", r.types());
    assert!(r.warnings().is_empty(), "{:?}", r.warnings());
    let results = r.of_type("TOOL_CALL_RESULT");
    assert_eq!(results.len(), 1);
    let content: Value = serde_json::from_str(results[0]["content"].as_str().unwrap()).unwrap();
    assert_eq!(
        content["status"], "succeeded",
        "the result it had: {content}"
    );
    assert_eq!(transfers(&da).len(), 1, "exactly once");

    // A second restart finds that run already ended: no new entry for it.
    kill9(da);
    let da = serve(&scenario, &journal);
    let restarts = events_of(&da, "approver", "run-finished")
        .into_iter()
        .filter(|e| e["detail"]["cause"] == "restart")
        .count();
    assert_eq!(restarts, 1);
}

#[test]
fn acc1_a_transfer_whose_response_was_pending_at_the_crash_is_never_made_again() {
    // The payments service answers 5 s (scenario clock) after applying: the continuation is
    // waiting for that answer, its call already in the payments ledger, when the server dies.
    let text = std::fs::read_to_string(shipped("agui-approval.toml"))
        .unwrap()
        .replacen(
            "intent = [\"/to\", \"/amount\"]",
            "intent = [\"/to\", \"/amount\"]\nfates = [\"delay:5s\"]",
            1,
        );
    let scenario = temp_file("delayed-payments.toml", &text);
    let journal = fresh_journal();
    let da = serve(&scenario, &journal);
    let mut t = Thread::new("approver", "t1");
    assert_eq!(t.run(&da, &[]).outcome(), "interrupt");
    let body = t.input(&[approve()]);
    let s = open_stream(&da, &body);
    da.wait_for("service=payments", 1);
    kill9(da);
    drop(s);

    let da = serve(&scenario, &journal);
    let fin = events_of(&da, "approver", "run-finished");
    assert_eq!(fin.last().unwrap()["detail"]["cause"], "restart");
    let r = t.run(&da, &[approve()]);
    assert_eq!(r.outcome(), "success", "{:?}", r.types());
    let results = r.of_type("TOOL_CALL_RESULT");
    assert_eq!(results.len(), 1);
    let content: Value = serde_json::from_str(results[0]["content"].as_str().unwrap()).unwrap();
    assert_eq!(
        content["delivery"], "unknown",
        "the result was lost: {content}"
    );
    let payments = da.get("/_admin/ledger?service=payments").json()["entries"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(payments, 1, "the agent never called payments again");
}

#[test]
fn res6_state_and_answers_of_a_piecemeal_batch_carry_across_a_restart() {
    // The approver leaves a state and needs two sign-offs for the one transfer.
    let text = std::fs::read_to_string(shipped("agui-approval.toml"))
        .unwrap()
        .replacen(
            "text = \"I will move 100 to acct-9.\"",
            "text = \"I will move 100 to acct-9.\"\nstate = { step = \"awaiting-approval\" }",
            1,
        )
        .replacen(
            "# --- stateless-approver",
            "[[agents.approver.interrupts]]\nphase = \"beforeTools\"\nkey = \"second-signature\"\n\
             tool_call = \"transfer_funds\"\napprove_if = \"/signed\"\n\n# --- stateless-approver",
            1,
        );
    let scenario = temp_file("two-signatures.toml", &text);
    let journal = fresh_journal();
    let da = serve(&scenario, &journal);
    let mut t = Thread::new("approver", "t1");
    let r1 = t.run(&da, &[]);
    assert_eq!(r1.interrupts().len(), 2);
    assert_eq!(t.state, json!({"step": "awaiting-approval"}));
    let r2 = t.run(&da, &[approve()]);
    let ids: Vec<Value> = r2.interrupts().iter().map(|i| i["id"].clone()).collect();
    assert_eq!(ids, [json!("second-signature")]);
    let mut dropper = Thread::new("approver", "t2");
    dropper.run(&da, &[]);
    kill9(da);

    let da = serve(&scenario, &journal);
    // The first sign-off, given before the restart, still holds.
    let sign = json!({"interruptId": "second-signature", "status": "resolved", "payload": {"signed": true}});
    let r3 = t.run(&da, std::slice::from_ref(&sign));
    assert_eq!(r3.outcome(), "success", "{:?}", r3.types());
    assert!(r3.warnings().is_empty(), "{:?}", r3.warnings());
    let moved = transfers(&da);
    assert_eq!(moved.len(), 1);
    assert_eq!(moved[0]["body"]["approval"], json!({"approved": true}));
    // The state the interrupted run left is still what a continuation is held to.
    dropper.state = json!({});
    let both = [approve(), sign];
    let r4 = dropper.run(&da, &both);
    assert!(
        r4.warnings()
            .iter()
            .any(|w| w["rule"] == "RES-6" && w["message"].as_str().unwrap().contains("state")),
        "{:?}",
        r4.warnings()
    );
    assert_eq!(r4.outcome(), "success");
    assert_eq!(transfers(&da).len(), 2);
}

#[test]
fn rec4_a_run_streaming_at_the_crash_is_recorded_as_abandoned_not_sent_after_the_restart() {
    // A slow first turn: the run has sent RUN_STARTED and waits when the server is killed.
    let text = std::fs::read_to_string(shipped("agui-approval.toml"))
        .unwrap()
        .replacen(
            "text = \"I will move 100 to acct-9.\"",
            "text = \"I will move 100 to acct-9.\"\ndelay = \"5s\"",
            1,
        );
    let scenario = temp_file("slow-start.toml", &text);
    let journal = fresh_journal();
    let da = serve(&scenario, &journal);
    let body = Thread::new("approver", "t1").input(&[]);
    let mut s = open_stream(&da, &body);
    read_until(&mut s, "RUN_STARTED");
    kill9(da);
    drop(s);

    let da = serve(&scenario, &journal);
    let fin = events_of(&da, "approver", "run-finished");
    assert_eq!(fin.len(), 1);
    assert_eq!(fin[0]["detail"]["cause"], "restart");
    // The client never got RUN_FINISHED: the entry says so, as for a client that went away.
    assert_eq!(fin[0]["response"]["delivery"], "abandoned", "{}", fin[0]);
    // And it stays so across a second restart.
    kill9(da);
    let da = serve(&scenario, &journal);
    let fin = events_of(&da, "approver", "run-finished");
    assert_eq!(fin.len(), 1);
    assert_eq!(fin[0]["response"]["delivery"], "abandoned");
}

#[test]
fn acc1_a_retried_continuation_after_a_restart_never_runs_the_call_again() {
    let journal = fresh_journal();
    let scenario = shipped("agui-approval.toml");
    let da = serve(&scenario, &journal);
    let mut t = Thread::new("approver", "t1");
    assert_eq!(t.run(&da, &[]).outcome(), "interrupt");
    // The continuation succeeds, but its client never hears it (its messages keep the call
    // without a result).
    let lost = t.input(&[approve()]);
    let heard = to_run(da.post_json("/agents/approver", &[], &lost).unwrap());
    assert_eq!(heard.outcome(), "success");
    kill9(da);

    let da = serve(&scenario, &journal);
    let r = to_run(
        da.post_json("/agents/approver", &[], &t.input(&[approve()]))
            .unwrap(),
    );
    assert_eq!(r.outcome(), "success", "not asked again: {:?}", r.types());
    let results = r.of_type("TOOL_CALL_RESULT");
    assert_eq!(results.len(), 1);
    assert_eq!(
        results[0]["content"],
        heard.of_type("TOOL_CALL_RESULT")[0]["content"]
    );
    assert_eq!(transfers(&da).len(), 1, "exactly once");
}

#[test]
fn int4_a_run_id_reused_on_another_thread_after_a_restart_still_gets_its_own_tool_calls() {
    let journal = fresh_journal();
    let scenario = shipped("agui-approval.toml");
    let da = serve(&scenario, &journal);
    let user = json!({"id": "u1", "role": "user", "content": "Pay acct-9 100"});
    let first = |da: &Da, thread: &str| {
        let input = json!({"threadId": thread, "runId": "r1", "messages": [user]});
        let r = to_run(da.post_json("/agents/approver", &[], &input).unwrap());
        r.interrupts()[0]["toolCallId"].clone()
    };
    assert_eq!(first(&da, "tA"), "call-0-0-r1");
    kill9(da);
    let da = serve(&scenario, &journal);
    assert_eq!(first(&da, "tB"), "call-0-0-r1@tB");
}

/// A run sent to the approver with its event stream left open (to cut it mid-run).
fn open_stream(da: &Da, body: &Value) -> std::net::TcpStream {
    let headers = [
        ("content-type", "application/json"),
        ("accept", "text/event-stream"),
    ];
    let path = "/agents/approver";
    send(&da.url, "POST", path, &headers, body.to_string().as_bytes())
}
