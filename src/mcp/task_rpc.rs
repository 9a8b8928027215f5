//! The task methods, over [`super::task`]: a tasked `tools/call` (create), `tasks/get`,
//! `tasks/cancel`, and by era `tasks/result`/`tasks/list` (2025-11-25) or `tasks/update`
//! (2026-07-28). Each is recorded as an entry of the server's own (`task-created`, `task-get`,
//! `task-cancel`, …) naming the action it concerns (`target`): a poll is the orchestrator
//! learning the outcome, which the verifier counts as reconciliation.

use std::time::Duration;

use serde_json::{json, Value};

use super::call::{self, answer_of};
use super::era::{declares, Era};
use super::rpc::{self, Id, McpError};
use super::task::{Answer, Lookup, Status, Task, Tasks, EXTENSION};
use super::{answer, complete, log, task_result, Reply};
use crate::fate::Fate;
use crate::ledger::ActionState;
use crate::scenario::mcp::{CancelMode, McpServer, TaskSpec, Tool};
use crate::service::{self, Plan, Request};
use crate::world::World;

/// The call a task answers, or a task method: its era, JSON-RPC id, params, whether it is
/// streamed, and (a task method) its fate.
pub(super) struct Call<'c> {
    pub(super) era: &'c Era,
    pub(super) id: &'c Id,
    pub(super) params: &'c Value,
    pub(super) sse: bool,
    /// The client takes an event stream (a legacy task's question needs one).
    pub(super) streamable: bool,
    pub(super) fate: Fate,
}

impl<'c> Call<'c> {
    /// A call as it came, before any fate.
    pub(super) fn new(
        era: &'c Era,
        id: &'c Id,
        params: &'c Value,
        sse: bool,
        headers: &hyper::HeaderMap,
    ) -> Call<'c> {
        Call {
            era,
            id,
            params,
            sse,
            streamable: super::accepts(headers, "text/event-stream"),
            fate: Fate::Respond,
        }
    }

    /// A task method's entry; one whose answer does not reach the client says so
    /// (`answered: false`), for the verifier does not count it as learning anything.
    fn log(&self, world: &World, server: &McpServer, event: &str, mut detail: Value) {
        if self.fate != Fate::Respond {
            detail["fate"] = self.fate.to_string().into();
        }
        if !answers(self.fate) {
            detail["answered"] = false.into();
        }
        log(world, server, event, detail);
    }

    /// The HTTP answer `body` (a JSON-RPC message) as this method's fate delivers it.
    fn deliver(&self, body: Value, now: Duration) -> Reply {
        let mut reply = Reply::now(answer(200, body, self.sse));
        match self.fate {
            Fate::Delay(d) => (reply.plan, reply.stream) = (Plan::At(now + d), self.sse),
            Fate::DropAfterApply | Fate::DropBeforeApply => reply.plan = Plan::Drop,
            Fate::ResetAfterApply => reply.plan = Plan::Reset,
            Fate::HangAfterApply => reply.plan = Plan::Hang,
            Fate::ErrorAfterApply(status) | Fate::ErrorBeforeApply(status) => {
                reply = Reply::now(failure(self.id, status));
            }
            _ => {}
        }
        reply
    }
}

/// -32021 for a modern request that does not declare the tasks extension.
fn needs_extension(message: String) -> McpError {
    McpError::MissingCapability(message, json!({"extensions": {EXTENSION: {}}}))
}

/// Whether a task method under `fate` answers the client with what it did.
fn answers(fate: Fate) -> bool {
    matches!(
        fate,
        Fate::Respond | Fate::Delay(_) | Fate::RespondWithoutApply
    )
}

/// The answer of a server failing with HTTP `status`: a JSON-RPC internal error saying so.
fn failure(id: &Id, status: u16) -> service::Response {
    let error = json!({"code": -32603, "message": format!("Internal error (HTTP {status})"),
        "data": {"status": status}});
    service::Response::json(status, &json!({"jsonrpc": "2.0", "id": id, "error": error}))
}

/// The fate of this asking of `method` of `task`, counted per task and method.
fn fate_of(world: &World, task: &Task, method: &str) -> Fate {
    let Some((slot, schedule)) = task.spec.fates.of(method) else {
        return Fate::Respond;
    };
    let mut ordinal = 0;
    world.extension::<Tasks>().update(&task.id, |t| {
        ordinal = t.asked[slot];
        t.asked[slot] += 1;
    });
    let stream = format!("mcp/{}/{}/{method}", task.server, task.id);
    schedule.pick(world.seed, &stream, ordinal)
}

/// Whether a `tools/call` runs as a task (`Some`, with the TTL the client asked for): legacy,
/// when it asks (`params.task`); modern, when the tool runs tasks and this request declares the
/// extension (the server decides). A task asked of a tool that runs none, or a task-only tool
/// called without one, is refused before anything runs.
pub(super) fn asked(
    tool: &Tool,
    era: &Era,
    params: &Value,
) -> Result<Option<Option<Duration>>, McpError> {
    let required = tool.task.as_ref().is_some_and(|t| t.required);
    if let Era::Modern = era {
        let declared = declares(params, EXTENSION);
        return match (&tool.task, declared) {
            (Some(_), true) => Ok(Some(None)),
            _ if required => Err(needs_extension(format!(
                "tool {} runs only as a task: declare the {EXTENSION} extension",
                tool.name
            ))),
            _ => Ok(None),
        };
    }
    match (params.get("task"), &tool.task) {
        (None | Some(Value::Null), _) if required => Err(McpError::TaskSupport(format!(
            "Task augmentation required: tool {} runs only as a task",
            tool.name
        ))),
        (None | Some(Value::Null), _) => Ok(None),
        (Some(_), None) => Err(McpError::TaskSupport(format!(
            "tool {} does not support task-augmented calls",
            tool.name
        ))),
        (Some(t), Some(_)) => {
            let ttl = t
                .get("ttl")
                .and_then(Value::as_u64)
                .map(Duration::from_millis);
            Ok(Some(ttl))
        }
    }
}

/// A tasked call: the task created and its creation answered at once, its work (and effect)
/// running on the scenario clock. The call's fate decides how the creation answer travels (a
/// drop loses the task id after the task exists); a fate that refuses before anything applies
/// refuses the call as it would a plain one, and no task is created.
pub(super) fn create(
    world: &World,
    (server, tool, spec): (&McpServer, &Tool, &TaskSpec),
    c: Call<'_>,
    mut req: Request<'_>,
    requested_ttl: Option<Duration>,
) -> Reply {
    let tasks = world.extension::<Tasks>();
    let modern = matches!(c.era, Era::Modern);
    let id = tasks.next_id(world, &server.name);
    if let Some(via) = req.via.as_mut() {
        via.facts["task_id"] = id.clone().into();
    }
    let now = world.clock.now();
    let who = (&server.name, tool.name.as_str());
    let mut task = Task::new(id, who, (modern, c.era.session()), spec, requested_ttl, now);
    if task.waiting() {
        let detail = json!({"task_id": task.id, "tool": tool.name, "id": c.id, "target": null,
            "asks_input": true, "revision": req_revision(world, &req),
            "session": task.session, "ttl_ms": ttl_ms(&task)});
        log(world, server, "task-created", detail);
        task.prepared = Some(req.into_owned());
        let msg = created(world, server, &c, &task);
        tasks.insert(task);
        return Reply::now(answer(200, msg, c.sse));
    }
    req.defer = Some(task.remaining());
    let revision = req_revision(world, &req);
    let out = call::admit(world, c.era, c.id, req);
    let answer = answer_of(world, (server, tool), c.era, &out);
    let started = matches!(answer, Answer::Result(_)) && took_up(world, out.seq);
    // Refused before anything applied: a plain answer, unless the tool runs only as a task,
    // which then ends at once in the refusal: `completed` with a tool error, `failed` with a
    // protocol error (a key the route's policy refused).
    if !started && !spec.required {
        let msg = call::message(c.id, c.era, server, answer);
        return call::deliver(world, server, (c.era, c.params, c.sse), &out, msg);
    }
    task.action = Some(out.seq);
    task.done_at = Some(if started { now + task.remaining() } else { now });
    // What a restart rebuilds the task from (`super::restore`).
    let detail = json!({"task_id": task.id, "tool": tool.name, "id": c.id, "target": out.seq,
        "done_at_ms": task.done_at.map(|d| d.as_millis() as u64), "revision": revision,
        "session": task.session, "ttl_ms": ttl_ms(&task), "answer": answer.to_json()});
    task.answer = Some(answer);
    log(world, server, "task-created", detail);
    let msg = created(world, server, &c, &task);
    tasks.insert(task);
    call::deliver(world, server, (c.era, c.params, c.sse), &out, msg)
}

fn ttl_ms(task: &Task) -> Option<u64> {
    task.ttl.map(|t| t.as_millis() as u64)
}

/// The revision the call was made under (the service's revision header, as the action reads
/// it), for the verifier's ACC-2: a task's result adopted after its revision was superseded.
fn req_revision(world: &World, req: &Request<'_>) -> Value {
    let header = world
        .scenario
        .service(&req.service)
        .and_then(|s| req.headers.get(&s.revision_header));
    header.map_or(Value::Null, |v| {
        crate::revision::Revision::parse(&crate::service::header_text(v)).to_value()
    })
}

/// Whether admission took the call up: it applies (now or at the task's end), or it replays
/// an earlier call of the same key.
fn took_up(world: &World, seq: u64) -> bool {
    let st = world.lock();
    st.ledger
        .get(seq)
        .is_some_and(|r| r.applies_at.is_some() || r.replay_of.is_some())
}

/// The creation answer: legacy `{task}`, modern the flat task with `resultType: "task"`.
fn created(world: &World, server: &McpServer, c: &Call<'_>, task: &Task) -> Value {
    let wire = task.wire(world, Status::Working);
    let result = match c.era {
        Era::Modern => {
            let mut r = complete(wire, c.era, server);
            r["resultType"] = "task".into();
            r
        }
        Era::Legacy { .. } => json!({"task": wire}),
    };
    rpc::result(c.id, result)
}

/// A task method, if `method` is one this era has.
pub(super) fn method(
    world: &World,
    server: &McpServer,
    c: Call<'_>,
    method: &str,
) -> Option<Result<Reply, McpError>> {
    let modern = matches!(c.era, Era::Modern);
    let known = match method {
        "tasks/get" | "tasks/cancel" => true,
        "tasks/result" | "tasks/list" => !modern,
        "tasks/update" => modern,
        _ => false,
    };
    if !known {
        return None;
    }
    if modern && !declares(c.params, EXTENSION) {
        return Some(Err(needs_extension(format!(
            "{method} belongs to the {EXTENSION} extension: declare it in this request's _meta"
        ))));
    }
    if method == "tasks/list" {
        return Some(Ok(list(world, server, &c)));
    }
    let Some(task_id) = c.params.get("taskId").and_then(Value::as_str) else {
        let e = format!("{method} needs params.taskId (a string)");
        return Some(Err(McpError::InvalidParams(e)));
    };
    let now = world.clock.now();
    let unknown = |l: Lookup| Some(Err(McpError::InvalidParams(l.message(task_id))));
    let task = match world.extension::<Tasks>().get(&server.name, task_id, now) {
        Ok(t) if t.modern == modern => t,
        Ok(_) => return unknown(Lookup::Unknown),
        Err(l) => {
            let detail = json!({"task_id": task_id, "method": method, "outcome": l});
            log(world, server, "task-unknown", detail);
            return unknown(l);
        }
    };
    let c = Call {
        fate: fate_of(world, &task, method),
        ..c
    };
    if matches!(c.fate, Fate::DropBeforeApply | Fate::ErrorBeforeApply(_)) {
        // Lost or refused on the way in: the task is not read or changed.
        let detail = json!({"task_id": task.id, "target": task.action});
        let event = format!("task-{}", method.trim_start_matches("tasks/"));
        c.log(world, server, &event, detail);
        return Some(Ok(c.deliver(Value::Null, now)));
    }
    Some(match method {
        "tasks/get" => Ok(get(world, server, &c, &task)),
        "tasks/cancel" => cancel(world, server, &c, task),
        "tasks/result" => result(world, server, &c, &task),
        _ => update(world, server, &c, task),
    })
}

/// The task's status now, reading its action's state in the ledger.
pub(super) fn status_now(world: &World, task: &Task) -> Status {
    let now = world.clock.now();
    let state = task.action.and_then(|seq| {
        let st = world.lock();
        st.ledger.get(seq).and_then(|r| r.state_at(now))
    });
    task.status(now, state)
}

/// A task method's result, as its fate delivers it.
fn ok(world: &World, c: &Call<'_>, server: &McpServer, result: Value) -> Reply {
    let body = rpc::result(c.id, complete(result, c.era, server));
    c.deliver(body, world.clock.now())
}

/// `tasks/get`: legacy the flat task, modern the detailed one (with its result, error or
/// question).
fn get(world: &World, server: &McpServer, c: &Call<'_>, task: &Task) -> Reply {
    let status = status_now(world, task);
    let detail = json!({"task_id": task.id, "target": task.action, "status": status.name()});
    c.log(world, server, "task-get", detail);
    let body = match c.era {
        Era::Modern => task.detailed(world, status),
        Era::Legacy { .. } => task.wire(world, status),
    };
    ok(world, c, server, body)
}

/// `tasks/cancel` on a task not yet terminal. `honor`: its effect is stopped if it has not
/// landed (a task still waiting for input never runs). `ignore`: acknowledged, and the work
/// goes on to its effect; a legacy task then reads `cancelled` (the spec says it stays so)
/// though its effect lands, a modern one completes (the extension allows it).
fn cancel(world: &World, server: &McpServer, c: &Call<'_>, task: Task) -> Result<Reply, McpError> {
    let status = status_now(world, &task);
    if status.terminal() {
        // 2025-11-25 refuses it; the 2026-07-28 extension acknowledges it (cancel is
        // idempotent there, -32602 is for unknown ids only) and nothing changes.
        if let Era::Legacy { .. } = c.era {
            return Err(McpError::InvalidParams(format!(
                "Cannot cancel task: already in terminal status '{}'",
                status.name()
            )));
        }
        let detail = json!({"task_id": task.id, "target": task.action, "outcome": "already-terminal", "status_before": status.name()});
        c.log(world, server, "task-cancel", detail);
        return Ok(ok(world, c, server, json!({})));
    }
    let now = world.clock.now();
    let outcome = match (task.spec.cancel, task.action) {
        _ if c.fate == Fate::RespondWithoutApply => "lied",
        (CancelMode::Honor, Some(seq)) => match service::cancel_pending(world, seq) {
            Some(ActionState::Applied) => "too-late",
            _ => "cancelled",
        },
        (CancelMode::Honor, None) => "cancelled",
        (CancelMode::Ignore, _) => "ignored",
    };
    let marks = outcome == "cancelled" || (!task.modern && outcome != "lied");
    let tasks = world.extension::<Tasks>();
    if marks {
        tasks.update(&task.id, |t| t.cancelled_at = Some(now));
    }
    let detail = json!({"task_id": task.id, "target": task.action, "policy": task.spec.cancel, "outcome": outcome, "status_before": status.name()});
    c.log(world, server, "task-cancel", detail);
    let body = match c.era {
        Era::Modern => json!({}),
        Era::Legacy { .. } => {
            let mut t = task;
            t.cancelled_at = Some(now);
            t.wire(world, Status::Cancelled)
        }
    };
    Ok(ok(world, c, server, body))
}

/// Legacy `tasks/result`: the call's own answer once the task is terminal, with the task it
/// belongs to in `_meta`; asked earlier, it is held (on the scenario clock) and made from the
/// task as it is when it ends ([`task_result`]). A task still waiting for its question's answer
/// asks it on this answer's event stream, so a client that takes no event stream is refused.
fn result(world: &World, server: &McpServer, c: &Call<'_>, task: &Task) -> Result<Reply, McpError> {
    let status = status_now(world, task);
    let asks = task.waiting() && !status.terminal();
    if asks && answers(c.fate) && !c.streamable {
        return Err(McpError::InvalidRequest(format!(
            "task {} needs input: its question comes as a request on the tasks/result event stream, so send Accept: application/json, text/event-stream",
            task.id
        )));
    }
    let detail = json!({"task_id": task.id, "target": task.action, "status": status.name()});
    c.log(world, server, "task-result", detail);
    let now = world.clock.now();
    if !status.terminal() {
        if !answers(c.fate) {
            // Lost, reset, hung or failed: no answer (nor question) is made.
            return Ok(c.deliver(Value::Null, now));
        }
        let hold = match c.fate {
            Fate::Delay(d) => Some(now + d),
            _ => None,
        };
        return Ok(task_result::held(server, task, c.id, (hold, c.sse || asks)));
    }
    let msg = result_message(task, status, c.id)?;
    Ok(c.deliver(msg, now))
}

/// The answer `tasks/result` gives for a task in `status` (its end, or what it will be).
pub(super) fn result_message(task: &Task, status: Status, id: &Id) -> Result<Value, McpError> {
    if status == Status::Cancelled {
        return Err(McpError::InvalidParams(format!(
            "Task {} was cancelled: it has no result",
            task.id
        )));
    }
    let related = json!({"taskId": task.id});
    match &task.answer {
        Some(Answer::Result(r)) => {
            let mut r = r.clone();
            r["_meta"] = json!({"io.modelcontextprotocol/related-task": related});
            Ok(rpc::result(id, r))
        }
        Some(Answer::Error(e)) => Ok(json!({"jsonrpc": "2.0", "id": id, "error": e})),
        None => Err(McpError::InvalidParams(format!(
            "Task {} has no result yet",
            task.id
        ))),
    }
}

/// The answer to a task's question taken (a modern `tasks/update`, a legacy client's response
/// on its `tasks/result` stream): accepted, the call is admitted now, under its own JSON-RPC id,
/// and works the rest of its time; declined or cancelled, the task ends cancelled and nothing
/// runs.
pub(super) fn take_answer(
    world: &World,
    server: &McpServer,
    era: &Era,
    task: &Task,
    accepted: bool,
) {
    let now = world.clock.now();
    let tasks = world.extension::<Tasks>();
    let mut prepared = None;
    tasks.update(&task.id, |t| {
        t.answered = Some((now, accepted));
        prepared = t.prepared.take();
    });
    let (true, Some(mut req), Some(tool)) = (accepted, prepared, server.tool(&task.tool)) else {
        return;
    };
    let call_id = req
        .via
        .as_ref()
        .and_then(|v| serde_json::from_value::<Id>(v.facts["jsonrpc_id"].clone()).ok())
        .unwrap_or_else(|| Id::String(task.id.clone()));
    let remaining = task.remaining();
    req.defer = Some(remaining);
    let out = call::admit(world, era, &call_id, req);
    let answer = answer_of(world, (server, tool), era, &out);
    let started = took_up(world, out.seq);
    tasks.update(&task.id, |t| {
        t.action = Some(out.seq);
        t.done_at = Some(if started { now + remaining } else { now });
        t.answer = Some(answer);
    });
}

/// Legacy `tasks/list`: the server's live legacy tasks, from any session (a client that
/// re-initialized finds the task whose creation answer it lost).
fn list(world: &World, server: &McpServer, c: &Call<'_>) -> Reply {
    let now = world.clock.now();
    let tasks = world.extension::<Tasks>().legacy_of(&server.name, now);
    let targets: Vec<Option<u64>> = tasks.iter().map(|t| t.action).collect();
    let wire: Vec<Value> = tasks
        .iter()
        .map(|t| t.wire(world, status_now(world, t)))
        .collect();
    let ids: Vec<&str> = tasks.iter().map(|t| t.id.as_str()).collect();
    let detail = json!({"task_ids": ids, "targets": targets});
    log(world, server, "task-list", detail);
    ok(world, c, server, json!({"tasks": wire}))
}

/// Modern `tasks/update`: the answer to the task's question ([`take_answer`]). Answers to keys
/// it did not ask, or asked already, are ignored, as the extension says.
fn update(world: &World, server: &McpServer, c: &Call<'_>, task: Task) -> Result<Reply, McpError> {
    let Some(responses) = c.params.get("inputResponses").and_then(Value::as_object) else {
        let e = "tasks/update needs params.inputResponses (an object)";
        return Err(McpError::InvalidParams(e.into()));
    };
    let status = status_now(world, &task);
    let response = task.spec.input.as_ref().and_then(|i| responses.get(&i.key));
    let detail = json!({"task_id": task.id, "status": status.name(), "responses": responses});
    c.log(world, server, "task-update", detail);
    let (Some(response), Status::InputRequired) = (response, status) else {
        return Ok(ok(world, c, server, json!({})));
    };
    let accepted = response.get("action").and_then(Value::as_str) == Some("accept");
    take_answer(world, server, c.era, &task, accepted);
    Ok(ok(world, c, server, json!({})))
}
