//! Rebuilding a world's task table from its ledger after a restart (`--journal`).
//!
//! Each A2A agent entry is replayed the way it was produced: `message` (history,
//! de-duplication), `task-created`, `task-resumed`, `status`, `artifact`, `result`, `canary`,
//! `push-config` and `task-interrupted`. Timestamps are the entries' own times, so a task comes
//! back as GetTask showed it: same state, status message, artifacts, history, revision echo and
//! canary.
//!
//! A task that had stopped (terminal, or interrupted: input-required, auth-required) behaves as
//! before: a message to a terminal one gets -32004, to an interrupted one resumes it. A task
//! still in flight cannot honestly be continued (its runner's place in the script, pending side
//! effects and open streams died with the process): it is failed (`TASK_STATE_FAILED`, with an
//! agent message saying doubleagent restarted), recorded as `task-interrupted`, and its push
//! targets are told.
//!
//! Not restored: streams (their clients must resubscribe), push deliveries not yet attempted at
//! the crash, the credentials of push configs (never written to the ledger), and tasks whose
//! entries `--max-entries` evicted.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{json, Map, Value};

use super::render::canary;
use super::run::merge_artifact;
use super::table::{Seen, Table};
use super::{lock_entry, revision_meta, tasks, Entry};
use crate::agent::a2a::params::{AuthenticationInfo, TaskPushNotificationConfig};
use crate::agent::a2a::push;
use crate::agent::a2a::types::{Artifact, Message, Part, Role, Task, TaskState, TaskStatus};
use crate::ledger::{Disposition, Record};
use crate::revision::Revision;
use crate::scenario::a2a::{A2aAgent, CancelPolicy, STREAM_BUFFER};
use crate::scenario::AgentSpec;
use crate::sync::unpoisoned;
use crate::world::World;

/// Rebuild the A2A tasks of `world` from its ledger and fail those that were in flight. Meant
/// for a world just restored from the journal; a world whose table is already in use is left
/// alone. Returns how many tasks were restored.
pub fn restore(world: &Arc<World>) -> usize {
    let agents: HashMap<&str, &A2aAgent> = world
        .scenario
        .agents
        .iter()
        .filter_map(|a| match &a.spec {
            AgentSpec::A2a(spec) => Some((&*a.name, spec)),
            _ => None,
        })
        .collect();
    if agents.is_empty() {
        return 0;
    }
    let records: Vec<Record> = world
        .lock()
        .ledger
        .iter()
        .filter(|r| r.disposition == Disposition::Agent && agents.contains_key(&*r.service))
        .collect();
    let mut table = unpoisoned(tasks(world).lock());
    if table.next_id > 0 || !table.tasks.is_empty() || !table.seen.is_empty() {
        return 0;
    }
    let mut rb = Rebuild {
        world,
        table: &mut table,
        created_by: HashMap::new(),
        configs: HashMap::new(),
    };
    for r in &records {
        if let (Some(spec), Some(event)) = (agents.get(&*r.service), r.event.as_deref()) {
            rb.apply(spec, event, r);
        }
    }
    let configs = std::mem::take(&mut rb.configs);
    order_as_handed_out(&mut table);
    for id in table.ids_in_order() {
        let Some(cell) = table.entry(&id) else {
            continue;
        };
        let mut e = lock_entry(&cell);
        let state = e.task.status.state;
        let live = !state.is_terminal();
        if let (Some(spec), Some(cfgs)) = (agents.get(&*e.agent), configs.get(&id)) {
            let owner = Arc::new(e.push_owner());
            let target = |c: &TaskPushNotificationConfig| {
                push::target(world, spec.push, owner.clone(), c.clone(), live)
            };
            e.push = cfgs.iter().map(target).collect();
        }
        if live && !state.is_interrupted() {
            interrupt(world, &mut e);
        }
    }
    let n = table.tasks.len();
    if n > 0 {
        tracing::info!(
            session = world.session.as_deref().unwrap_or("default"),
            tasks = n,
            "restored A2A tasks from the journal"
        );
    }
    n
}

/// Fail a task that was in flight when the server stopped, and record why.
fn interrupt(world: &Arc<World>, e: &mut Entry) {
    let now = world.clock.now();
    let was = e.task.status.state;
    let text = format!(
        "doubleagent restarted and interrupted this task: it was {} when the server stopped, and the rest of its script will not run",
        was.as_str()
    );
    let status = TaskStatus {
        state: TaskState::Failed,
        message: Some(e.agent_message(format!("{}-interrupted", e.task.id), text.clone())),
        timestamp: Some(world.clock.rfc3339(now)),
    };
    e.set_status(world, status);
    e.log_at(
        world,
        now,
        "task-interrupted",
        json!({
            "task_id": e.task.id,
            "state": TaskState::Failed.as_str(),
            "was": was.as_str(),
            "reason": "restart",
            "message": text,
        }),
    );
}

struct Rebuild<'a> {
    world: &'a World,
    table: &'a mut Table,
    /// The message that created each task, until its `task-created` entry.
    created_by: HashMap<String, (Message, String)>,
    /// Each task's push configs, in registration order.
    configs: HashMap<String, Vec<TaskPushNotificationConfig>>,
}

// The details read here are the ones `detail` wrote (the journal's own lines, not network
// data): a key missing or of another shape reads as absent, as when it was written.
fn get<T: serde::de::DeserializeOwned>(d: &Value, k: &str) -> Option<T> {
    d.get(k).and_then(|v| T::deserialize(v).ok())
}

fn str_of<'v>(d: &'v Value, k: &str) -> Option<&'v str> {
    d.get(k).and_then(Value::as_str)
}

/// Numbers the restored tasks in the order their ids were handed out: `task-N` by N, then any
/// other id in the order it came back. The ledger's order is not that one: two tasks created at
/// once take their numbers under the table's lock, but the later one's `task-created` entry may
/// go into the ledger first. ListTasks breaks ties between equal status times by this order, so
/// that it lists the same tasks in the same order after a restart as before.
fn order_as_handed_out(table: &mut Table) {
    let mut ids: Vec<(Option<u64>, u64, String)> = table
        .tasks
        .iter()
        .map(|(id, s)| (number(id), s.created, id.clone()))
        .collect();
    ids.sort_unstable_by_key(|&(n, created, _)| (n.is_none(), n, created));
    for (i, (_, _, id)) in ids.into_iter().enumerate() {
        if let Some(slot) = table.tasks.get_mut(&id) {
            slot.created = i as u64;
        }
    }
}

/// The number in an id the table handed out (`task-7`, `msg-7`).
fn number(id: &str) -> Option<u64> {
    id.strip_prefix("task-")
        .or_else(|| id.strip_prefix("msg-"))
        .and_then(|n| n.parse().ok())
}

/// The message a `message` entry records (see `message_extras`).
fn message_of(d: &Value) -> Message {
    let text = str_of(d, "text").unwrap_or_default();
    Message {
        message_id: get(d, "message_id").unwrap_or_default(),
        role: get(d, "role").unwrap_or(Role::User),
        parts: get(d, "parts").unwrap_or_else(|| vec![Part::text(text)]),
        metadata: get::<Map<String, Value>>(d, "metadata"),
        extensions: get(d, "extensions").unwrap_or_default(),
        reference_task_ids: get(d, "reference_task_ids").unwrap_or_default(),
        ..Message::default()
    }
}

impl Rebuild<'_> {
    fn bump(&mut self, id: &str) {
        if let Some(n) = number(id) {
            self.table.next_id = self.table.next_id.max(n);
        }
    }

    fn task(&self, r: &Record) -> Option<MutexGuard<'_, Entry>> {
        let id = r.work_id.as_deref()?;
        self.table
            .tasks
            .get(id)
            .map(|s| lock_entry(&s.entry))
            .filter(|e| *e.agent == *r.service)
    }

    fn apply(&mut self, spec: &A2aAgent, event: &str, r: &Record) {
        let Some(d) = r.detail.as_ref().map(|d| d.value()) else {
            return;
        };
        let d = &d;
        let ts = self.world.clock.rfc3339(r.received_at);
        match event {
            "message" => self.message(r, d),
            "task-created" => self.created(spec, r, d, ts),
            "task-resumed" => {
                if let Some(mut e) = self.task(r) {
                    e.start = r.received_at;
                    if let Some(c) = get::<CancelPolicy>(d, "cancel") {
                        e.cancel = c;
                    }
                    e.generation += 1;
                    e.task.status = TaskStatus::new(TaskState::Submitted, ts);
                }
            }
            "artifact" => {
                if let Some(mut e) = self.task(r) {
                    let artifact = Artifact {
                        artifact_id: get(d, "artifact_id").unwrap_or_default(),
                        name: get(d, "name"),
                        description: get(d, "description"),
                        parts: get(d, "parts").unwrap_or_default(),
                        metadata: e.meta(),
                        ..Artifact::default()
                    };
                    let append = get(d, "append") == Some(true);
                    merge_artifact(&mut e.task.artifacts, artifact, append);
                }
            }
            "result" if str_of(d, "reply") == Some("message") => self.reply(spec, r, d),
            "status" | "result" | "task-interrupted" => {
                if let Some(mut e) = self.task(r) {
                    let state = get(d, "state").unwrap_or(TaskState::Unspecified);
                    let message = str_of(d, "message").map(|t| {
                        let id = match event {
                            "status" => get(d, "message_id").unwrap_or_default(),
                            "result" => format!("{}-final", e.task.id),
                            _ => format!("{}-interrupted", e.task.id),
                        };
                        e.agent_message(id, t.to_string())
                    });
                    e.task.status = TaskStatus {
                        state,
                        message,
                        timestamp: Some(ts),
                    };
                }
            }
            "canary" => {
                if let (Some(mut e), Some(c)) = (self.task(r), str_of(d, "canary")) {
                    // The token the task was given, as computed (a token of another shape,
                    // which doubleagent never issues, leaves that one).
                    if c.len() == "cny-".len() + 16 {
                        e.canary = c.to_string();
                    }
                    e.canary_issued = true;
                }
            }
            "push-config" => {
                let Some(task_id) = r.work_id.clone() else {
                    return;
                };
                let id = get(d, "config_id");
                let list = self.configs.entry(task_id.clone()).or_default();
                list.retain(|c| c.id != id);
                if str_of(d, "action") == Some("create") {
                    list.push(TaskPushNotificationConfig {
                        tenant: None,
                        id,
                        task_id: Some(task_id),
                        url: get(d, "url").unwrap_or_default(),
                        token: get(d, "token"),
                        authentication: str_of(d, "auth_scheme").map(|s| AuthenticationInfo {
                            scheme: s.to_string(),
                            credentials: None,
                        }),
                    });
                }
            }
            _ => {}
        }
    }

    /// A message the agent took in: a task's first, a follow-up (history), or a duplicate.
    fn message(&mut self, r: &Record, d: &Value) {
        if d.get("duplicate_of").is_some_and(|v| !v.is_null()) {
            return;
        }
        let Some(task_id) = r.work_id.clone() else {
            return;
        };
        self.bump(&task_id);
        let m = message_of(d);
        let text = get(d, "text").unwrap_or_default();
        if get(d, "follow_up") != Some(true) {
            self.created_by.insert(task_id, (m, text));
            return;
        }
        let message_id = m.message_id.clone();
        {
            let Some(mut e) = self.task(r) else { return };
            e.task.push_history(m);
            if get(d, "resumes") == Some(true) {
                e.text = text;
            }
        }
        self.table
            .note_seen(&r.service, &message_id, false, || Seen::Task(task_id));
    }

    fn created(&mut self, spec: &A2aAgent, r: &Record, d: &Value, ts: String) {
        let Some(task_id) = str_of(d, "task_id").or(r.work_id.as_deref()) else {
            return;
        };
        let task_id = task_id.to_string();
        self.bump(&task_id);
        let context_id: String = get(d, "context_id").unwrap_or_default();
        let revision = d
            .get("revision")
            .filter(|v| !v.is_null())
            .cloned()
            .or_else(|| r.revision.as_ref().map(Revision::to_value));
        let mut first_message = None;
        let (history, text) = match self.created_by.remove(&task_id) {
            Some((mut m, text)) => {
                first_message = Some(m.message_id.clone());
                m.task_id = Some(task_id.clone());
                m.context_id = Some(context_id.clone());
                (vec![m], text)
            }
            None => (Vec::new(), String::new()),
        };
        let task = Task {
            id: task_id.clone(),
            context_id,
            status: TaskStatus::new(TaskState::Submitted, ts),
            history,
            metadata: revision_meta(&spec.revision_key, revision.as_ref()),
            ..Task::default()
        };
        let entry = Entry {
            agent: self.table.agent(&r.service),
            task,
            canary: canary(self.world, &task_id, revision.as_ref()),
            revision,
            revision_key: spec.revision_key.clone(),
            start: r.received_at,
            cancel: get(d, "cancel").unwrap_or(spec.script.cancel),
            text,
            capacity: STREAM_BUFFER,
            ..Entry::default()
        };
        self.table.insert(&task_id, Arc::new(Mutex::new(entry)));
        if let Some(m) = first_message {
            self.table
                .note_seen(&r.service, &m, false, || Seen::Task(task_id));
        }
    }

    /// A direct Message reply: what a repeated message id gets back.
    fn reply(&mut self, spec: &A2aAgent, r: &Record, d: &Value) {
        let Some(reply_id) = str_of(d, "message_id") else {
            return;
        };
        self.bump(reply_id);
        let Some(in_reply_to) = str_of(d, "in_reply_to") else {
            return;
        };
        let mut reply = Message::agent(reply_id, get(d, "parts").unwrap_or_default());
        reply.context_id = get(d, "context_id");
        let revision = r.revision.as_ref().map(Revision::to_value);
        reply.metadata = revision_meta(&spec.revision_key, revision.as_ref());
        self.table.note_seen(&r.service, in_reply_to, true, || {
            Seen::Message(Box::new(reply))
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_handed_out_are_counted_and_plain_messages_come_back_from_their_text() {
        assert_eq!(number("task-12"), Some(12));
        assert_eq!(number("msg-3"), Some(3));
        assert_eq!(number("ctx-3"), None);
        let m = message_of(&json!({"message_id": "m1", "text": "go"}));
        assert_eq!(m.role, Role::User);
        assert_eq!(m.parts, [Part::text("go")]);
        assert!(m.metadata.is_none());
        let rich = message_of(&json!({"message_id": "m2", "text": "a",
            "parts": [{"text": "a"}, {"data": {"k": 1}}], "metadata": {"revision": 2},
            "reference_task_ids": ["task-1"]}));
        assert_eq!(rich.parts.len(), 2);
        assert_eq!(rich.metadata.unwrap()["revision"], 2);
        assert_eq!(rich.reference_task_ids, ["task-1"]);
    }
}
