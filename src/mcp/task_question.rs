//! A 2025-11-25 task's question. A task that needs input reads `input_required`; the client
//! then calls `tasks/result`, whose event stream carries the server's `elicitation/create`
//! request (with `_meta["io.modelcontextprotocol/related-task"]`); the client POSTs its JSON-RPC
//! response, which is the answer. Accepted, the call is admitted then and works the rest of its
//! time on the scenario clock, and the same stream ends with the call's result; declined,
//! cancelled or answered with an error, the task ends `cancelled` and nothing runs. The answer
//! is taken as a modern `tasks/update`'s is ([`task_rpc::take_answer`]), and recorded as the
//! same `task-update` entry.
//!
//! The stream watches the task (the task table's [`Tasks::changed`] and the scenario clock), so
//! it ends as the task does: a `tasks/cancel`, an expiry or a closed world end it too.

use std::time::Duration;

use hyper::body::Bytes;
use hyper::HeaderMap;
use serde_json::{json, Value};
use tokio::sync::mpsc::Sender;

use super::era::{Era, SESSION_HEADER};
use super::rpc::{Id, McpError};
use super::session::Sessions;
use super::task::{Status, Task, Tasks, INPUT_KEY};
use super::task_rpc::{result_message, status_now, take_answer};
use super::{answer, event, log, Reply};
use crate::clock::Clock;
use crate::scenario::mcp::McpServer;
use crate::world::World;

/// What follows a task id in its question's JSON-RPC id: the client's response names it.
const QUESTION_SUFFIX: &str = "/input";

/// A legacy `tasks/result` stream for a task that asks (or will ask) a question, run by the
/// server once the headers are out ([`Later::run`]).
#[derive(Debug)]
pub struct Later {
    server: String,
    task_id: String,
    /// The `tasks/result` request's id: the stream's last event answers it.
    id: Id,
    /// A `delay` fate: nothing goes out before this scenario time.
    hold: Option<Duration>,
}

/// The `tasks/result` answer for a task still waiting for its answer: an event stream whose
/// events come later.
pub(super) fn stream(server: &McpServer, task: &Task, id: &Id, hold: Option<Duration>) -> Reply {
    let mut response = answer(200, Value::Null, true);
    response.body.clear();
    let mut reply = Reply::now(response);
    reply.stream = true;
    reply.later = Some(Later {
        server: server.name.to_string(),
        task_id: task.id.clone(),
        id: id.clone(),
        hold,
    });
    reply
}

impl Later {
    /// Carry the stream to its end: the question when it is due, then (once answered) the
    /// call's result when the work ends, or the error `tasks/result` gives for a task cancelled
    /// or expired meanwhile. Returns early if the world closes or the client stops reading.
    pub async fn run(self, world: &World, tx: &Sender<Bytes>) {
        if let Some(t) = self.hold {
            if !world.clock.wait_until(t).await {
                return;
            }
        }
        let tasks = world.extension::<Tasks>();
        let mut asked = false;
        loop {
            // Registered before the task is read, so no change slips between the two.
            let changed = tasks.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let now = world.clock.now();
            let task = match tasks.get(&self.server, &self.task_id, now) {
                Ok(t) => t,
                Err(l) => {
                    let e = McpError::InvalidParams(l.message(&self.task_id));
                    let _ = tx.send(event(&e.body(Some(&self.id))).into()).await;
                    return;
                }
            };
            let status = status_now(world, &task);
            if status.terminal() {
                let msg = result_message(&task, status, &self.id)
                    .unwrap_or_else(|e| e.body(Some(&self.id)));
                let _ = tx.send(event(&msg).into()).await;
                return;
            }
            if let (Status::InputRequired, false, Some(q)) = (status, asked, question(&task)) {
                if tx.send(event(&q).into()).await.is_err() {
                    return;
                }
                asked = true;
            }
            // What the task waits for next on the clock: its question's time, the end of its
            // work, its expiry; anything else (the answer, a cancel) is a change.
            let next = if task.waiting() {
                task.asked_at()
            } else {
                task.done_at
            };
            let due = [next, task.expires_at()]
                .into_iter()
                .flatten()
                .filter(|t| *t > now)
                .min();
            tokio::select! {
                _ = changed => {}
                open = until(&world.clock, due) => if !open { return },
            }
        }
    }
}

/// Wait on the scenario clock until `due` (or, with none, until the world closes); `false` if
/// the world closed first.
async fn until(clock: &Clock, due: Option<Duration>) -> bool {
    match due {
        Some(t) => clock.wait_until(t).await,
        None => {
            clock.closed().await;
            false
        }
    }
}

/// The task's question as the server's `elicitation/create` request, tied to the task as the
/// spec requires (`related-task`); its id names the task.
fn question(task: &Task) -> Option<Value> {
    let mut params = task.question()?;
    params["_meta"] = json!({"io.modelcontextprotocol/related-task": {"taskId": task.id}});
    let id = format!("{}{QUESTION_SUFFIX}", task.id);
    Some(json!({"jsonrpc": "2.0", "id": id, "method": "elicitation/create", "params": params}))
}

/// A client's JSON-RPC response (its result, or its error): the answer to a question of a
/// task of its session that is waiting for one, else ignored (a response is accepted with 202
/// either way, as the transport says). An error answers as a decline does.
pub(super) fn answered(
    world: &World,
    server: &McpServer,
    headers: &HeaderMap,
    id: &Id,
    reply: Result<&Value, &Value>,
) {
    let Id::String(qid) = id else {
        return;
    };
    let Some(task_id) = qid.strip_suffix(QUESTION_SUFFIX) else {
        return;
    };
    let Some(session) = headers.get(SESSION_HEADER).map(crate::service::header_text) else {
        return;
    };
    let Some(open) = world.extension::<Sessions>().get(&server.name, &session) else {
        return;
    };
    let now = world.clock.now();
    let Ok(task) = world.extension::<Tasks>().get(&server.name, task_id, now) else {
        return;
    };
    let ours = !task.modern && task.session.as_deref() == Some(&*session);
    if !ours || !task.waiting() || status_now(world, &task) != Status::InputRequired {
        return;
    }
    let accepted = reply
        .ok()
        .and_then(|r| r.get("action"))
        .and_then(Value::as_str)
        == Some("accept");
    let response = match reply {
        Ok(r) => r.clone(),
        Err(e) => json!({"error": e}),
    };
    let detail = json!({"task_id": task.id, "status": Status::InputRequired.name(),
        "responses": {INPUT_KEY: response}});
    log(world, server, "task-update", detail);
    let era = Era::Legacy {
        session: session.into_owned(),
        version: open.version,
    };
    take_answer(world, server, &era, &task, accepted);
}
