//! Tasks: a `tools/call` answered with a task instead of its result, in both shapes: the
//! 2025-11-25 core tasks (`params.task`, `tasks/get`/`result`/`list`/`cancel`) and the 2026-07-28
//! `io.modelcontextprotocol/tasks` extension (the server decides, `resultType: "task"`,
//! `tasks/get`/`update`/`cancel`).
//!
//! A task's status is never stored: it is read off the scenario clock and the ledger whenever
//! asked. The call is admitted when the task is created (or, for a task that asks for input
//! first, when the answer comes) with its effect deferred to the end of the task's work, so the
//! ledger holds the effect exactly when it lands; an honoured `tasks/cancel` stops it there, an
//! ignored one lets it land. Tasks are a world extension like sessions, not journaled: after a
//! restart they are rebuilt from their entries (`super::restore`).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::ledger::ActionState;
use crate::scenario::mcp::{TaskInput, TaskSpec};
use crate::service::Request;
use crate::sync::unpoisoned;
use crate::world::World;

/// The extension's identifier, in capabilities and `-32021`'s data.
pub(crate) const EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// A task's status on the wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Status {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::InputRequired => "input_required",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }

    pub(crate) fn terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Cancelled)
    }
}

/// What the call answered, once admitted: a `CallToolResult`, or a JSON-RPC error object.
#[derive(Clone, Debug)]
pub(crate) enum Answer {
    Result(Value),
    Error(Value),
}

impl Answer {
    /// As the `task-created` entry keeps it, for a restart.
    pub(crate) fn to_json(&self) -> Value {
        match self {
            Answer::Result(r) => json!({"result": r}),
            Answer::Error(e) => json!({"error": e}),
        }
    }
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Task {
    pub(crate) id: String,
    pub(crate) server: Arc<str>,
    pub(crate) tool: String,
    pub(crate) modern: bool,
    pub(crate) session: Option<String>,
    pub(crate) created_at: Duration,
    /// The TTL reported (and kept to): the scenario's, else the client's request.
    pub(crate) ttl: Option<Duration>,
    pub(crate) spec: TaskSpec,
    /// The action the call became, once admitted.
    pub(crate) action: Option<u64>,
    pub(crate) answer: Option<Answer>,
    /// When the work ends (the effect's time), once admitted.
    pub(crate) done_at: Option<Duration>,
    /// When its question (if it has one) was answered: accepted (the work goes on) or not (the
    /// task ends cancelled).
    pub(crate) answered: Option<(Duration, bool)>,
    /// When a cancel ended the task (honoured, or acknowledged in the legacy era, where a
    /// cancelled task stays cancelled whatever the work does).
    pub(crate) cancelled_at: Option<Duration>,
    /// The call, kept until the task's input is answered and it is admitted.
    pub(crate) prepared: Option<Request<'static>>,
    /// How many times each task method was asked of it (the ordinal of its next fate), in
    /// the order of [`crate::scenario::mcp::TaskFates::of`].
    pub(crate) asked: [u64; 4],
}

impl Task {
    /// A new task of a call made at `now`.
    pub(crate) fn new(
        id: String,
        (server, tool): (&Arc<str>, &str),
        (modern, session): (bool, Option<&str>),
        spec: &TaskSpec,
        requested_ttl: Option<Duration>,
        now: Duration,
    ) -> Task {
        Task {
            id,
            server: server.clone(),
            tool: tool.to_string(),
            modern,
            session: session.map(str::to_string),
            created_at: now,
            ttl: spec.ttl.or(requested_ttl),
            spec: spec.clone(),
            ..Task::default()
        }
    }

    /// Whether the task's question is still unanswered: it is admitted only once the answer
    /// accepts.
    pub(crate) fn waiting(&self) -> bool {
        self.spec.input.is_some() && self.answered.is_none()
    }

    /// How long the work runs from its admission: all of it, or what follows the question.
    pub(crate) fn remaining(&self) -> Duration {
        let asks_after = self.spec.input.as_ref().map_or(Duration::ZERO, |i| i.after);
        self.spec.duration.saturating_sub(asks_after)
    }

    /// When the task asks its question (if it has one): both eras ask, a legacy task on its
    /// `tasks/result` stream, a modern one in `tasks/get`.
    pub(crate) fn asked_at(&self) -> Option<Duration> {
        Some(self.created_at + self.spec.input.as_ref()?.after)
    }

    /// When the task expires (its TTL after creation), if it does.
    pub(crate) fn expires_at(&self) -> Option<Duration> {
        self.ttl.map(|t| self.created_at + t)
    }

    pub(crate) fn expired(&self, now: Duration) -> bool {
        self.expires_at().is_some_and(|t| now >= t)
    }

    /// The status at `now`, given the state of its action in the ledger.
    pub(crate) fn status(&self, now: Duration, action: Option<ActionState>) -> Status {
        if self.cancelled_at.is_some_and(|c| c <= now) || action == Some(ActionState::Cancelled) {
            return Status::Cancelled;
        }
        if self.waiting() {
            return match self.asked_at() {
                Some(t) if now >= t => Status::InputRequired,
                _ => Status::Working,
            };
        }
        if self.answered.is_some_and(|(_, accepted)| !accepted) {
            return Status::Cancelled;
        }
        match (self.done_at, &self.answer) {
            (Some(t), Some(answer)) if now >= t => match answer {
                Answer::Error(_) => Status::Failed,
                // An error result fails a legacy task; the extension completes it with the
                // result, `isError` and all.
                Answer::Result(r) if !self.modern && r["isError"] == true => Status::Failed,
                Answer::Result(_) => Status::Completed,
            },
            _ => Status::Working,
        }
    }

    /// When the current status began.
    fn since(&self, status: Status) -> Duration {
        let input_at = self.answered.map(|(at, _)| at);
        match status {
            Status::Cancelled => self.cancelled_at.or(input_at),
            Status::InputRequired => self.asked_at(),
            Status::Completed | Status::Failed => self.done_at,
            Status::Working => input_at,
        }
        .unwrap_or(self.created_at)
    }

    /// The task as the era's wire shows it (flat in both; the extension renames the TTL and
    /// poll interval with `Ms`).
    pub(crate) fn wire(&self, world: &World, status: Status) -> Value {
        let ms = |d: Duration| d.as_millis() as u64;
        let clock = &world.clock;
        let mut t = json!({
            "taskId": self.id,
            "status": status.name(),
            "createdAt": clock.rfc3339(self.created_at),
            "lastUpdatedAt": clock.rfc3339(self.since(status)),
        });
        let (ttl, poll) = if self.modern {
            ("ttlMs", "pollIntervalMs")
        } else {
            ("ttl", "pollInterval")
        };
        t[ttl] = self.ttl.map(ms).into();
        t[poll] = ms(self.spec.poll_interval).into();
        if status == Status::InputRequired {
            t["statusMessage"] = "waiting for input".into();
        }
        t
    }

    /// The extension's `tasks/get` body: the task and, by status, its result, its error or its
    /// question.
    pub(crate) fn detailed(&self, world: &World, status: Status) -> Value {
        let mut t = self.wire(world, status);
        match (status, &self.answer, &self.spec.input) {
            (Status::Completed, Some(Answer::Result(r)), _) => t["result"] = r.clone(),
            (Status::Failed, Some(Answer::Error(e)), _) => t["error"] = e.clone(),
            (Status::InputRequired, _, Some(input)) => t["inputRequests"] = input_requests(input),
            _ => {}
        }
        t
    }

    /// The params of the task's question, if it has one: the request a legacy `tasks/result`
    /// stream carries.
    pub(crate) fn question(&self) -> Option<Value> {
        self.spec.input.as_ref().map(form)
    }
}

/// The params of the `elicitation/create` request that asks `input` (a form).
fn form(input: &TaskInput) -> Value {
    json!({"mode": "form", "message": input.message, "requestedSchema": input.schema})
}

/// `inputRequests` asking `input` (a modern task's `tasks/get`, a call's round): the
/// `elicitation/create` request under its key.
pub(crate) fn input_requests(input: &TaskInput) -> Value {
    json!({&input.key: {"method": "elicitation/create", "params": form(input)}})
}

/// The tasks of a world, by id; `changed` wakes whoever waits on a task (a legacy
/// `tasks/result` stream waiting for the answer to its question) whenever one is updated.
#[derive(Default)]
pub(crate) struct Tasks {
    table: Mutex<Table>,
    pub(crate) changed: tokio::sync::Notify,
}

#[derive(Default)]
struct Table {
    made: u64,
    tasks: HashMap<String, Task>,
    /// Ids in creation order, for forgetting the oldest past [`TASKS_KEPT`].
    order: VecDeque<String>,
}

/// Tasks a world remembers: a long-running sidecar must not grow without bound, and a client
/// polls its recent tasks, not ten thousand ago (an evicted one reads "not found").
const TASKS_KEPT: usize = 10_000;

impl Tasks {
    /// A fresh task id: drawn from the scenario's seed (the same run gives the same ids) and
    /// unguessable without it, as the extension asks.
    pub(crate) fn next_id(&self, world: &World, server: &str) -> String {
        let n = {
            let mut t = unpoisoned(self.table.lock());
            t.made += 1;
            t.made
        };
        seeded_token(world, &format!("{server}/{n}"))
    }

    /// Count a task made before a restart, so that new ids do not repeat its.
    pub(crate) fn count_made(&self) {
        unpoisoned(self.table.lock()).made += 1;
    }

    pub(crate) fn insert(&self, task: Task) {
        let mut t = unpoisoned(self.table.lock());
        while t.order.len() >= TASKS_KEPT {
            if let Some(old) = t.order.pop_front() {
                t.tasks.remove(&old);
            }
        }
        t.order.push_back(task.id.clone());
        t.tasks.insert(task.id.clone(), task);
    }

    /// A copy of task `id` of `server`, unless it is unknown or (at `now`) expired.
    pub(crate) fn get(&self, server: &str, id: &str, now: Duration) -> Result<Task, Lookup> {
        let mut t = unpoisoned(self.table.lock());
        match t.tasks.get(id) {
            Some(task) if &*task.server == server && task.expired(now) => {
                t.tasks.remove(id);
                Err(Lookup::Expired)
            }
            Some(task) if &*task.server == server => Ok(task.clone()),
            _ => Err(Lookup::Unknown),
        }
    }

    /// Change task `id` in place, if it is there (the lock released before waiters wake).
    pub(crate) fn update(&self, id: &str, f: impl FnOnce(&mut Task)) {
        if let Some(task) = unpoisoned(self.table.lock()).tasks.get_mut(id) {
            f(task);
        }
        self.changed.notify_waiters();
    }

    /// The live legacy tasks of `server`, whichever session made them (as `tasks/get` reaches
    /// any), oldest first.
    pub(crate) fn legacy_of(&self, server: &str, now: Duration) -> Vec<Task> {
        let t = unpoisoned(self.table.lock());
        let mut out: Vec<Task> = t
            .tasks
            .values()
            .filter(|x| &*x.server == server && !x.modern)
            .filter(|x| !x.expired(now))
            .cloned()
            .collect();
        out.sort_by_key(|x| x.created_at);
        out
    }
}

/// 32 hex digits derived from the scenario's seed and `text`: the same run gives the same
/// token, and without the seed it cannot be guessed (task ids, MRTR request states).
pub(crate) fn seeded_token(world: &World, text: &str) -> String {
    let digest = Sha256::digest(format!("{}/{text}", world.seed));
    hex::encode(&digest[..16])
}

/// Why a task id found no task (in the ledger `unknown`, `expired`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Lookup {
    Unknown,
    Expired,
}

impl Lookup {
    pub(crate) fn message(self, id: &str) -> String {
        match self {
            Lookup::Unknown => format!("Failed to retrieve task: Task not found ({id})"),
            Lookup::Expired => format!("Failed to retrieve task: Task has expired ({id})"),
        }
    }
}
