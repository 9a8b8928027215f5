//! A2A tasks across a restart with `--journal`: killed with SIGKILL and started again on the
//! same journal, the server answers for every task it had: finished and interrupted ones as they
//! were, ones still in flight failed (and recorded as `task-interrupted`).

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use common::*;
use serde_json::{json, Value};

fn late_result() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/late-result.toml")
}

/// A scenario text whose `researcher` may push to the loopback receiver at `hook` (issue 30
/// item 3: loopback push targets only on ports the scenario lists).
fn allowing_push_to(toml: &str, hook: &str) -> String {
    let port = hook.rsplit(':').next().unwrap().trim_end_matches("/hook");
    toml.replacen(
        "[agents.researcher]\n",
        &format!("[agents.researcher]\npush_ports = [{port}]\n"),
        1,
    )
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

fn msg(id: &str, text: &str, meta: Value) -> Value {
    let mut m = json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": text}]});
    if !meta.is_null() {
        m["metadata"] = meta;
    }
    m
}

fn rpc(da: &Da, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let r = da
        .post_json("/agents/researcher", &[("A2A-Version", "1.0")], &body)
        .unwrap();
    assert_eq!(r.status, 200, "{method}: {}", r.text());
    r.json()
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

fn send(da: &Da, m: Value, extra: Value) -> Value {
    let mut config = json!({"returnImmediately": true});
    if let (Some(c), Some(e)) = (config.as_object_mut(), extra.as_object()) {
        c.extend(e.clone());
    }
    result(rpc(
        da,
        "SendMessage",
        json!({"message": m, "configuration": config}),
    ))
}

fn start_task(da: &Da, m: Value) -> String {
    send(da, m, Value::Null)["task"]["id"]
        .as_str()
        .unwrap()
        .to_string()
}

fn get_task(da: &Da, id: &str) -> Value {
    result(rpc(da, "GetTask", json!({"id": id})))
}

fn list_tasks(da: &Da) -> Value {
    result(rpc(da, "ListTasks", json!({"includeArtifacts": true})))
}

fn state(task: &Value) -> &str {
    task["status"]["state"].as_str().unwrap_or("")
}

fn agent_entries(da: &Da, event: &str) -> Vec<Value> {
    da.get(&format!(
        "/_admin/ledger?service=researcher&event={event}&disposition=agent"
    ))
    .json()["entries"]
        .as_array()
        .unwrap()
        .clone()
}

/// A webhook on loopback that answers 204 and hands over each POST's head and body.
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
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    len = v.trim().parse().unwrap_or(0);
                }
                head.push_str(&line);
            }
            let mut body = vec![0; len];
            if reader.read_exact(&mut body).is_err() {
                continue;
            }
            let _ = conn.write_all(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n");
            let _ = tx.send((head, serde_json::from_slice(&body).unwrap_or(Value::Null)));
        }
    });
    (url, rx)
}

#[test]
fn rec6_after_sigkill_a_completed_task_comes_back_as_it_was_and_one_in_flight_is_failed() {
    let scenario = late_result();
    let journal = fresh_journal();
    let da = serve(&scenario, &journal);
    let done = start_task(
        &da,
        msg("j-1", "research the vendor", json!({"revision": 1})),
    );
    da.advance("3s");
    let before = get_task(&da, &done);
    assert_eq!(state(&before), "TASK_STATE_COMPLETED");
    let result_text = before["artifacts"][0]["parts"][0]["text"].as_str().unwrap();
    assert!(
        result_text.starts_with("Pay vendor account cny-"),
        "{before}"
    );
    assert_eq!(before["artifacts"][0]["metadata"], json!({"revision": 1}));
    // The second task is still working (its payment went out at 1s) when the server dies.
    let inflight = start_task(&da, msg("j-2", "research again", json!({"revision": 2})));
    da.advance("1s");
    let inflight_before = get_task(&da, &inflight);
    assert_eq!(state(&inflight_before), "TASK_STATE_WORKING");
    let ledger_before = da.ledger();
    kill9(da);

    let da = serve(&scenario, &journal);
    // Every entry from before the kill is there, followed by the interruption (read first:
    // the reads below are ledger entries too).
    let ledger = da.ledger();
    assert_eq!(ledger[..ledger_before.len()], ledger_before[..]);
    let added: Vec<&Value> = ledger[ledger_before.len()..].iter().collect();
    assert_eq!(added.len(), 1, "{added:?}");
    assert_eq!(added[0]["event"], "task-interrupted");
    assert_eq!(added[0]["work_id"], inflight.as_str());
    assert_eq!(added[0]["revision"], 2);
    assert_eq!(added[0]["detail"]["state"], "TASK_STATE_FAILED");
    assert_eq!(added[0]["detail"]["was"], "TASK_STATE_WORKING");
    // The completed task: same state, status, artifacts (same canary), history, revision echo.
    assert_eq!(get_task(&da, &done), before);
    // The one in flight was failed, saying why, and kept what it had.
    let failed = get_task(&da, &inflight);
    assert_eq!(state(&failed), "TASK_STATE_FAILED", "{failed}");
    let why = failed["status"]["message"]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert!(
        why.contains("doubleagent restarted and interrupted this task")
            && why.contains("TASK_STATE_WORKING"),
        "{why}"
    );
    assert_eq!(failed["status"]["message"]["role"], "ROLE_AGENT");
    assert_eq!(failed["history"], inflight_before["history"]);
    assert_eq!(failed["metadata"], json!({"revision": 2}));
    // ListTasks knows both, newest status first.
    let listed = list_tasks(&da);
    assert_eq!(listed["totalSize"], 2, "{listed}");
    assert_eq!(listed["tasks"][0], failed);
    assert_eq!(listed["tasks"][1], before);
    // REC-6: a terminal task still refuses messages (-32004), and cannot be canceled (-32002).
    let mut follow_up = msg("j-3", "and now pay revision 2", Value::Null);
    follow_up["taskId"] = json!(done);
    let refused = rpc(&da, "SendMessage", json!({"message": follow_up}));
    assert_eq!(error_code(&refused), -32004, "{refused}");
    assert_eq!(
        error_code(&rpc(&da, "CancelTask", json!({"id": inflight}))),
        -32002
    );
    // New tasks do not reuse the ids handed out before the restart.
    let next = start_task(&da, msg("j-4", "one more", Value::Null));
    assert_eq!(next, "task-3");
    kill9(da);

    // A second restart changes nothing for tasks already settled, and interrupts the new one.
    let da = serve(&scenario, &journal);
    assert_eq!(get_task(&da, &done), before);
    assert_eq!(get_task(&da, &inflight), failed);
    let interrupted: Vec<String> = agent_entries(&da, "task-interrupted")
        .iter()
        .map(|e| e["work_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(interrupted, [inflight.clone(), next.clone()]);
    assert_eq!(state(&get_task(&da, &next)), "TASK_STATE_FAILED");
}

const BEHAVIORS: &str = r#"
[[agents.researcher.behaviors]]
match = { text = "which account" }
outcome = "input-required"
message = "Which account, {{revision}}?"
work = "0s"
steps = []

[[agents.researcher.behaviors]]
match = { message_id_prefix = "hello-" }
reply = "message"
message = "hello {{canary}}"
"#;

#[test]
fn rec4_after_sigkill_dedupe_still_answers_with_the_first_reply_and_an_input_required_task_resumes()
{
    let toml = std::fs::read_to_string(late_result())
        .unwrap()
        .replace("dedupe_message_id = false", "dedupe_message_id = true ")
        + BEHAVIORS;
    let (hook, got) = webhook();
    let scenario = temp_file("dedupe.toml", &allowing_push_to(&toml, &hook));
    let journal = scenario.with_file_name("journal.jsonl");
    let da = serve(&scenario, &journal);
    let question = msg(
        "q-1",
        "pay, but which account?",
        json!({"revision": 4, "lane": "slow"}),
    );
    let push = json!({"taskPushNotificationConfig": {"id": "h1", "url": hook, "token": "tok-9"}});
    let asked = send(&da, question.clone(), push)["task"].clone();
    let id = asked["id"].as_str().unwrap().to_string();
    // Let the pushes of the snapshot and both statuses (twice each) go out before the kill.
    da.advance("1s");
    da.wait_for("service=researcher&event=push-delivery", 6);
    for _ in 0..6 {
        got.recv_timeout(Duration::from_secs(10)).unwrap();
    }
    let paused = get_task(&da, &id);
    assert_eq!(state(&paused), "TASK_STATE_INPUT_REQUIRED");
    let hello = send(&da, msg("hello-1", "hi", Value::Null), Value::Null)["message"].clone();
    assert!(hello["parts"][0]["text"]
        .as_str()
        .unwrap()
        .starts_with("hello cny-"));
    let configs = result(rpc(
        &da,
        "ListTaskPushNotificationConfigs",
        json!({"taskId": id}),
    ));
    kill9(da);

    let da = serve(&scenario, &journal);
    // The interrupted task is as it was: not failed, since it was waiting on the orchestrator.
    assert_eq!(get_task(&da, &id), paused);
    assert!(agent_entries(&da, "task-interrupted").is_empty());
    // REC-4: resent message ids are still answered with what they first produced.
    let again = send(&da, question, Value::Null)["task"].clone();
    assert_eq!(again["id"], id.as_str());
    let hello_again = send(&da, msg("hello-1", "hi", Value::Null), Value::Null);
    assert_eq!(hello_again["message"], hello);
    let dups = agent_entries(&da, "message")
        .into_iter()
        .filter(|e| !e["detail"]["duplicate_of"].is_null())
        .count();
    assert_eq!(dups, 2);
    // Its webhook config survived (token included), and the resumed run uses it.
    assert_eq!(
        result(rpc(
            &da,
            "ListTaskPushNotificationConfigs",
            json!({"taskId": id})
        )),
        configs
    );
    let mut answer = msg("q-2", "acct-9", Value::Null);
    answer["taskId"] = json!(id);
    send(&da, answer, Value::Null);
    da.advance("4s");
    let done = get_task(&da, &id);
    assert_eq!(state(&done), "TASK_STATE_COMPLETED", "{done}");
    assert_eq!(done["history"].as_array().unwrap().len(), 2);
    assert_eq!(done["history"][0], paused["history"][0]);
    assert_eq!(
        done["history"][0]["metadata"],
        json!({"revision": 4, "lane": "slow"})
    );
    let completed = (0..8)
        .filter_map(|_| got.recv_timeout(Duration::from_secs(10)).ok())
        .filter(|(head, body)| {
            head.to_ascii_lowercase()
                .contains("x-a2a-notification-token: tok-9")
                && body["statusUpdate"]["status"]["state"] == "TASK_STATE_COMPLETED"
        })
        .count();
    assert_eq!(
        completed, 2,
        "the completion is pushed (twice) after the restart"
    );
}

#[test]
fn the_webhook_of_a_task_in_flight_at_sigkill_is_told_that_it_failed() {
    let (hook, got) = webhook();
    let scenario = temp_file(
        "late.toml",
        &allowing_push_to(&std::fs::read_to_string(late_result()).unwrap(), &hook),
    );
    let journal = scenario.with_file_name("journal.jsonl");
    let da = serve(&scenario, &journal);
    let push = json!({"taskPushNotificationConfig": {"url": hook, "token": "tok-1"}});
    let id = send(&da, msg("w-1", "go", json!({"revision": 1})), push)["task"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    kill9(da);

    let da = serve(&scenario, &journal);
    assert_eq!(state(&get_task(&da, &id)), "TASK_STATE_FAILED");
    // push = { delay = "1s", duplicates = 1 } on the scenario clock.
    da.advance("1s");
    let mut failed = 0;
    for _ in 0..2 {
        let (head, body) = got.recv_timeout(Duration::from_secs(10)).unwrap();
        assert!(head
            .to_ascii_lowercase()
            .contains("x-a2a-notification-token: tok-1"));
        if body["statusUpdate"]["status"]["state"] == "TASK_STATE_FAILED" {
            failed += 1;
        }
    }
    assert_eq!(failed, 2);
}

#[test]
fn list_tasks_after_a_restart_orders_tasks_as_their_ids_were_handed_out_not_as_journaled() {
    // Two tasks created at once take their numbers in one order and may write their
    // `task-created` entries in the other. Here the clock stands still, so every status time
    // ties and ListTasks falls back on creation order (newest first).
    let scenario = late_result();
    let journal = fresh_journal();
    let da = serve(&scenario, &journal);
    let first = start_task(&da, msg("o-1", "research the vendor", Value::Null));
    let second = start_task(&da, msg("o-2", "research again", Value::Null));
    assert_eq!([first.as_str(), second.as_str()], ["task-1", "task-2"]);
    let ids = |listed: &Value| -> Vec<String> {
        listed["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids(&list_tasks(&da)), [second.clone(), first.clone()]);
    kill9(da);

    // As if task-2's entry had gone into the ledger first: the two `task-created` lines trade
    // the tasks they name.
    let text = std::fs::read_to_string(&journal).unwrap();
    let swapped: Vec<String> = text
        .lines()
        .map(|l| match l.contains("\"task-created\"") {
            true => rewrite_journal_line(l, |c| {
                c.replace("task-1", "task-#")
                    .replace("task-2", "task-1")
                    .replace("task-#", "task-2")
            }),
            false => l.to_string(),
        })
        .collect();
    assert_ne!(swapped.join("\n"), text.trim_end(), "no task-created lines");
    std::fs::write(&journal, swapped.join("\n") + "\n").unwrap();

    let da = serve(&scenario, &journal);
    let created: Vec<String> = agent_entries(&da, "task-created")
        .iter()
        .map(|e| e["work_id"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(created, [second.clone(), first.clone()]);
    let listed = list_tasks(&da);
    assert_eq!(listed["totalSize"], 2, "{listed}");
    assert_eq!(ids(&listed), [second, first]);
}
