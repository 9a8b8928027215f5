//! A legacy (2025-11-25) `tasks/result` asked before its task ends, and the task's question.
//!
//! `tasks/result` blocks until the task is terminal. A task that needs input asks through it:
//! its event stream carries the server's `elicitation/create` request (tied to the task by
//! `related-task`), and the client's POSTed JSON-RPC response is the answer ([`answered`]),
//! taken as a modern `tasks/update`'s is ([`task_rpc::take_answer`]).
//!
//! The held answer ([`Later`]) watches the task ([`Tasks::changed`], the scenario clock) and is
//! made when the task ends, from the task as it is then; an event stream if the client takes
//! one, else the JSON answer whole once known.

use std::time::Duration;

use hyper::body::Bytes;
use hyper::HeaderMap;
use serde_json::{json, Value};
use tokio::sync::mpsc::Sender;

use super::era::{Era, SESSION_HEADER};
use super::rpc::{Id, McpError};
use super::session::Sessions;
use super::task::{Status, Task, Tasks};
use super::task_rpc::{result_message, status_now, take_answer};
use super::{answer, event, log, Reply};
use crate::clock::Clock;
use crate::scenario::mcp::McpServer;
use crate::world::World;

/// What follows a task id in its question's JSON-RPC id: the client's response names it.
const QUESTION_SUFFIX: &str = "/input";

/// A legacy `tasks/result` held until its task ends, run by the server ([`Later::run`]): as an
/// event stream once its headers are out, or (JSON) before the answer goes out whole.
#[derive(Debug)]
pub struct Later {
    server: String,
    task_id: String,
    /// The `tasks/result` request's id: the last message answers it.
    id: Id,
    /// A `delay` fate: nothing goes out before this scenario time.
    hold: Option<Duration>,
    /// An event stream (which can carry the question), or one JSON answer.
    sse: bool,
}

/// The `tasks/result` answer for a task not yet ended: made when it ends, as an event stream
/// (`sse`) or JSON.
pub(super) fn held(
    server: &McpServer,
    task: &Task,
    id: &Id,
    (hold, sse): (Option<Duration>, bool),
) -> Reply {
    let mut response = answer(200, Value::Null, sse);
    response.body.clear();
    let mut reply = Reply::now(response);
    reply.stream = sse;
    reply.later = Some(Later {
        server: server.name.to_string(),
        task_id: task.id.clone(),
        id: id.clone(),
        hold,
        sse,
    });
    reply
}

impl Later {
    /// Whether the answer is an event stream (else one JSON body, sent once [`Later::run`] ends).
    pub fn streams(&self) -> bool {
        self.sse
    }

    /// A message as this answer carries it: an SSE event, or the JSON itself.
    fn frame(&self, message: &Value) -> Bytes {
        if self.sse {
            event(message).into()
        } else {
            // A `Value` always serialises.
            serde_json::to_vec(message).unwrap_or_default().into()
        }
    }

    /// Carry the answer to its end: the question when it is due (streams only), then (once
    /// answered) the call's result when the work ends, or the error `tasks/result` gives for a
    /// task cancelled or expired meanwhile. Returns early if the world closes or the client
    /// stops reading.
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
                    // A client gone by now misses it, as any stream's reader would.
                    let _ = tx.send(self.frame(&e.body(Some(&self.id)))).await;
                    return;
                }
            };
            let status = status_now(world, &task);
            if status.terminal() {
                let msg = result_message(&task, status, &self.id)
                    .unwrap_or_else(|e| e.body(Some(&self.id)));
                // A client gone by now misses it, as any stream's reader would.
                let _ = tx.send(self.frame(&msg)).await;
                return;
            }
            // A JSON answer cannot carry it: such a client was refused while the task waited.
            let ask = status == Status::InputRequired && self.sse && !asked;
            if let (true, Some(q)) = (ask, question(&task)) {
                if tx.send(self.frame(&q)).await.is_err() {
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
    let Some(version) = world
        .extension::<Sessions>()
        .version(&server.name, &session)
    else {
        return;
    };
    let now = world.clock.now();
    let Ok(task) = world.extension::<Tasks>().get(&server.name, task_id, now) else {
        return;
    };
    let ours = !task.modern && task.session.as_deref() == Some(&*session);
    let asking = ours && task.waiting() && status_now(world, &task) == Status::InputRequired;
    let (true, Some(input)) = (asking, &task.spec.input) else {
        return;
    };
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
        "responses": {&input.key: response}});
    log(world, server, "task-update", detail);
    let era = Era::Legacy {
        session: session.into_owned(),
        version,
    };
    take_answer(world, server, &era, &task, accepted);
}
