//! Rules about the orchestrator's dealings with agents: a message id resent to an agent that
//! does not de-duplicate (REC-4), a message to a task already finished (REC-6), and tasks
//! claimed cancelled or completed against what the agent reported (REC-3, ACC-3); an MCP
//! task's claim against its action's effect.

use serde_json::Value;

use super::claims::{Claims, TaskClaim, TaskOutcome};
use super::index::Index;
use super::report::Finding;
use super::rows::{str_field, Row};
use crate::hash::FastMap as HashMap;
use crate::ledger::Disposition;

/// REC-4: a message resent with the same messageId to an agent that does not de-duplicate:
/// it started a second task. A message id alone does not de-duplicate.
pub(super) fn rec4_resent_messages(ix: &Index, out: &mut Vec<Finding>) {
    let mut first: HashMap<(&str, &str), u64> = HashMap::default();
    for e in ix.rows() {
        let Some(d) = e.agent_event("message") else {
            continue;
        };
        let Some(id) = str_field(d, "message_id") else {
            continue;
        };
        if d.get("repeat_of").is_some_and(|r| !r.is_null()) {
            let earlier = first.get(&(&*e.service, id)).copied();
            out.push(Finding {
                rule: "REC-4".into(),
                summary: format!(
                    "message {id} was sent to agent {} again; the agent does not de-duplicate message ids, so it started the work a second time",
                    e.service
                ),
                entries: earlier.into_iter().chain([e.seq]).collect(),
                hint: "a message id alone does not de-duplicate in A2A: after a timeout, find the existing task (GetTask/ListTasks) instead of resending".into(),
            });
        }
        first.entry((&*e.service, id)).or_insert(e.seq);
    }
}

/// REC-6: a message sent to a task that had already reached a terminal state.
pub(super) fn rec6_messages_to_terminal_tasks(ix: &Index, out: &mut Vec<Finding>) {
    for e in ix.rows() {
        let Some(d) = e.agent_event("rpc-error") else {
            continue;
        };
        // A message sent to it; subscribing to a finished task is a read (also -32004). An
        // entry that names no method (a hand-made ledger) is taken as a message.
        let sent = matches!(
            str_field(d, "method"),
            None | Some("SendMessage" | "SendStreamingMessage")
        );
        if d.get("code").and_then(Value::as_i64) != Some(-32004) || !sent {
            continue;
        }
        let message = str_field(d, "message").unwrap_or("");
        let Some(task) = message
            .strip_prefix("Task ")
            .and_then(|m| m.split(" is in terminal state").next())
        else {
            continue;
        };
        if !message.contains("terminal state") {
            continue;
        }
        out.push(Finding {
            rule: "REC-6".into(),
            summary: format!("a message was sent to task {task} of agent {}, which had already finished ({message})", e.service),
            entries: vec![e.seq],
            hint: "a task in a terminal state cannot be restarted: send follow-up work as a new task (referencing the old one)".into(),
        });
    }
}

/// REC-3: a task claimed `cancelled` whose cancel was refused or only acknowledged, or that
/// completed anyway; and (ACC-3) a task claimed `completed` that never completed.
pub(super) fn rec3_cancel_claims(ix: &Index, claims: &Claims, out: &mut Vec<Finding>) {
    // The MCP tasks' actions, found once for all the claims about them.
    let mut started = None;
    for t in &claims.tasks {
        let id = t.task_id.as_str();
        let about: Vec<&Row> = ix
            .rows()
            .filter(|e| e.disposition == Disposition::Agent && e.task_of() == Some(id))
            .collect();
        if about.iter().any(|e| e.service.starts_with("mcp/")) {
            let started = started.get_or_insert_with(|| super::effects::tasks_started(ix));
            mcp_task_claim(ix, t, (&about, started), out);
            continue;
        }
        let cancels: Vec<&Row> = about
            .iter()
            .copied()
            .filter(|e| e.agent_event("cancel").is_some())
            .collect();
        // A task's end: its last terminal state (a result, a cancel's status, a failure by a
        // doubleagent restart), else the last state it reported (an interrupt, working).
        let events = ["result", "task-interrupted", "status"];
        let terminal = |s: &&str| {
            matches!(
                *s,
                "TASK_STATE_COMPLETED"
                    | "TASK_STATE_CANCELED"
                    | "TASK_STATE_FAILED"
                    | "TASK_STATE_REJECTED"
            )
        };
        let states = about.iter().rev().filter_map(|e| {
            let d = events.iter().find_map(|ev| e.agent_event(ev))?;
            str_field(d, "state")
        });
        let last_state = states
            .clone()
            .find(terminal)
            .or_else(|| states.clone().next());
        let ended = last_state.unwrap_or("in no final state");
        match t.claim {
            TaskOutcome::Cancelled => {
                let honored = cancels
                    .iter()
                    .any(|e| e.detail_str("outcome") == Some("honored"));
                if honored && last_state == Some("TASK_STATE_CANCELED") {
                    continue;
                }
                let why = match cancels.last() {
                    None => "no cancel was ever requested".to_string(),
                    Some(c) => format!(
                        "the cancel was {} and the task ended {ended}",
                        c.detail_str("outcome").unwrap_or("?")
                    ),
                };
                let mut seqs: Vec<u64> = cancels.iter().map(|e| e.seq).collect();
                let result = about
                    .iter()
                    .rev()
                    .find(|e| e.agent_event("result").is_some());
                seqs.extend(result.map(|r| r.seq));
                out.push(Finding {
                    rule: "REC-3".into(),
                    summary: format!("task {id} was claimed cancelled, but {why}"),
                    entries: seqs,
                    hint: "record \"stop requested\" until the task is observed in a cancelled state; a cancel can be refused, and an acknowledged one may still complete".into(),
                });
            }
            TaskOutcome::Completed if last_state != Some("TASK_STATE_COMPLETED") => {
                out.push(Finding {
                    rule: "ACC-3".into(),
                    summary: format!("task {id} was claimed completed, but it ended {ended}"),
                    entries: about.iter().map(|e| e.seq).take(8).collect(),
                    hint: "report the task state the agent actually reported (GetTask); unknown if it cannot be observed".into(),
                });
            }
            _ => {}
        }
    }
}

/// REC-3 and ACC-3 for an MCP task, whose truth is its action's effect: claimed cancelled, it
/// must have been cancelled in time (honoured, the effect never landed); claimed completed, its
/// effect must have landed.
fn mcp_task_claim(
    ix: &Index,
    t: &TaskClaim,
    (about, started): (&[&Row], &HashMap<u64, &str>),
    out: &mut Vec<Finding>,
) {
    let id = t.task_id.as_str();
    let action = started
        .iter()
        .find(|(_, task)| **task == id)
        .map(|(s, _)| *s);
    let action = action.and_then(|seq| ix.rows().find(|r| r.seq == seq));
    let took_effect = action.is_some_and(|a| a.applied);
    let effect = match took_effect {
        true => "its action took effect",
        false => "its action never took effect",
    };
    let cancels: Vec<&Row> = about
        .iter()
        .copied()
        .filter(|e| e.agent_event("task-cancel").is_some())
        .collect();
    let entries = cancels.iter().map(|e| e.seq).chain(action.map(|a| a.seq));
    let in_time = cancels
        .iter()
        .any(|c| c.detail_str("outcome") == Some("cancelled"));
    match t.claim {
        TaskOutcome::Cancelled if took_effect || !in_time => {
            let why = match cancels.last() {
                None => "no cancel was ever requested".to_string(),
                Some(c) => format!("the cancel was {}", c.detail_str("outcome").unwrap_or("?")),
            };
            out.push(Finding {
                rule: "REC-3".into(),
                summary: format!("task {id} was claimed cancelled, but {why} and {effect}"),
                entries: entries.collect(),
                hint: "record \"stop requested\" until tasks/get shows the task cancelled; a cancel can be ignored or come too late".into(),
            });
        }
        TaskOutcome::Completed if !took_effect => out.push(Finding {
            rule: "ACC-3".into(),
            summary: format!("task {id} was claimed completed, but {effect}"),
            entries: entries.collect(),
            hint: "report the status tasks/get shows (completed only once it does); unknown if it cannot be observed".into(),
        }),
        _ => {}
    }
}
