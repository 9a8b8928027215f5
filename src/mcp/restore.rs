//! Rebuilding a world's MCP state from its ledger after a restart (`--journal`): legacy
//! sessions and their calls, and tasks.
//!
//! A session comes back from its `initialize` entry (closed again by `session-closed` or
//! `session-expired`), with the calls it made (their actions' `detail.mcp`), so its client goes
//! on with the same `Mcp-Session-Id` and can cancel what it called. A task comes back from its
//! `task-created` entry (which keeps its session, TTL and answer) and the `task-cancel` entries
//! naming it; its effect is its action's, which the ledger already holds, so it lands (or was
//! cancelled) as before and `tasks/get` reads the same status. A task waiting for its
//! question's answer, or whose answer had been taken, cannot honestly be continued (the call it
//! held, or the answer it made, died with the process): it is failed, recorded as
//! `task-interrupted`. Not restored: streams kept for a `Last-Event-ID` resumption (their
//! bodies were never journaled: a resumption after a restart gets 404, recorded).

use std::time::Duration;

use serde_json::{json, Value};

use super::session::Sessions;
use super::task::{Answer, Task, Tasks};
use super::{log, task_rpc};
use crate::ledger::Record;
use crate::world::World;

/// Rebuild the MCP sessions and tasks of `world` from its ledger, for a world just restored
/// from the journal. Returns how many tasks were restored.
pub fn restore(world: &World) -> usize {
    if world.scenario.mcp.is_empty() {
        return 0;
    }
    let records: Vec<Record> = world.lock().ledger.iter().collect();
    let sessions = world.extension::<Sessions>();
    let tasks = world.extension::<Tasks>();
    let mut restored: Vec<Task> = Vec::new();
    for r in &records {
        let d = r.detail.as_ref().map(|d| d.value()).unwrap_or_default();
        let text = |k: &str| d.get(k).and_then(Value::as_str).map(str::to_string);
        if let Some(mcp) = d.get("mcp") {
            // An action a legacy session's call became.
            if let (Some(s), Some(id)) = (mcp["session"].as_str(), mcp.get("jsonrpc_id")) {
                sessions.note_call(s, id.to_string(), r.seq);
            }
            continue;
        }
        let Some(server) = r.service.strip_prefix("mcp/") else {
            continue;
        };
        let Some(server) = world.scenario.mcp_server(server) else {
            continue;
        };
        match r.event.as_deref().unwrap_or_default() {
            "initialize" => {
                let version = text("protocol_version").unwrap_or_default();
                let version = server.legacy_versions().find(|v| *v == version);
                if let (Some(id), Some(version)) = (text("session"), version) {
                    sessions.reopen(&server.name, &id, version);
                }
            }
            "session-closed" | "session-expired" => {
                sessions.close(&server.name, &text("session").unwrap_or_default());
            }
            "task-created" => {
                tasks.count_made();
                let spec = text("tool").and_then(|t| server.tool(&t)?.task.clone());
                let (Some(id), Some(spec)) = (text("task_id"), spec) else {
                    continue;
                };
                let ms = |k: &str| d.get(k).and_then(Value::as_u64).map(Duration::from_millis);
                let session = text("session");
                let mut task = Task::new(
                    id,
                    (&server.name, &text("tool").unwrap_or_default()),
                    (session.is_none(), session.as_deref()),
                    &spec,
                    None,
                    r.received_at,
                );
                task.ttl = ms("ttl_ms");
                task.action = d.get("target").and_then(Value::as_u64);
                task.done_at = ms("done_at_ms");
                task.answer = match (d["answer"].get("result"), d["answer"].get("error")) {
                    (Some(v), _) => Some(Answer::Result(v.clone())),
                    (_, Some(e)) => Some(Answer::Error(e.clone())),
                    _ => None,
                };
                restored.push(task);
            }
            event => {
                let Some(method) = event.strip_prefix("task-") else {
                    continue;
                };
                let id = text("task_id").unwrap_or_default();
                let Some(task) = restored.iter_mut().rev().find(|t| t.id == id) else {
                    continue;
                };
                if let Some((slot, _)) = task.spec.fates.of(&format!("tasks/{method}")) {
                    task.asked[slot] += 1;
                }
                let outcome = text("outcome");
                let marks = match outcome.as_deref() {
                    Some("cancelled") => true,
                    Some("lied" | "already-terminal") | None => false,
                    Some(_) => !task.modern,
                };
                if method == "cancel" && marks {
                    task.cancelled_at = Some(r.received_at);
                }
                if method == "interrupted" {
                    // An earlier restart failed it.
                    fail(task, d.get("target").and_then(Value::as_u64), r.received_at);
                }
            }
        }
    }
    let n = restored.len();
    for mut task in restored {
        let now = world.clock.now();
        let status = task_rpc::status_now(world, &task);
        if task.answer.is_none() && !status.terminal() {
            interrupt(world, &mut task, &records, now);
        }
        tasks.insert(task);
    }
    if n > 0 {
        tracing::info!(tasks = n, "restored MCP tasks from the journal");
    }
    n
}

/// Fail a task that waited for (or had taken) its question's answer when the server stopped.
fn interrupt(world: &World, task: &mut Task, records: &[Record], now: Duration) {
    // The action an accepted answer admitted, if one was: its effect stands.
    let target = records.iter().rev().find_map(|r| {
        let d = r.detail.as_ref()?.value();
        (d["mcp"]["task_id"].as_str() == Some(&task.id)).then_some(r.seq)
    });
    fail(task, target, now);
    let Some(server) = world.scenario.mcp_server(&task.server) else {
        return;
    };
    let detail = json!({"task_id": task.id, "target": target, "status": "failed",
        "reason": "restart", "message": INTERRUPTED});
    log(world, server, "task-interrupted", detail);
}

const INTERRUPTED: &str = "doubleagent restarted while this task waited for (or had just taken) the answer to its question; its work does not go on";

/// Task `task` failed at `at` by a restart.
fn fail(task: &mut Task, target: Option<u64>, at: Duration) {
    task.action = target;
    task.answered = Some((at, true));
    task.done_at = Some(at);
    task.answer = Some(Answer::Error(
        json!({"code": -32603, "message": INTERRUPTED}),
    ));
}
