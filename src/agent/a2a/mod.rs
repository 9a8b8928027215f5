//! Fake A2A 1.0 subagents: the HTTP surface of `[agents.NAME]` with `protocol = "a2a"`.
//!
//! An agent serves its card at `/agents/NAME/.well-known/agent-card.json` (its one JSON-RPC
//! interface `url` is the agent's real address, [`Ctx::url`]) and the JSON-RPC 2.0 binding at
//! `POST /agents/NAME`. This module parses the call ([`wire`]), checks the `A2A-Version`,
//! dispatches the eleven 1.0 methods and frames the answer: one JSON body (errors included,
//! always HTTP 200) or an SSE stream ([`stream`]). What the calls *do* lives in [`task`] (the
//! task table and the scripted lifecycle on the scenario clock) and [`push`] (webhook configs
//! and deliveries). Every call that fails is also a ledger entry (`rpc-error`).

mod detail;
pub mod push;
pub mod stream;
pub mod task;
pub mod wire;

use std::borrow::Cow;
use std::sync::Arc;

use serde_json::{json, Value};
use tokio::sync::broadcast;

use self::task::Sent;
use self::wire::{
    CancelTaskRequest, GetTaskRequest, ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse, ListTasksRequest, Method, RpcError, RpcRequest,
    RpcResponse, SendMessageRequest, SendMessageResponse, StreamResponse, SubscribeToTaskRequest,
    TaskPushNotificationConfig, TaskPushNotificationConfigRef,
};
use super::{AgentRequest, Ctx, Reply};
use crate::scenario::a2a::A2aAgent;
use crate::service::Response;
use crate::world::World;

/// Rebuild a world's A2A tasks from its ledger after a restart (see [`task::restore`]): tasks
/// that had stopped come back as they were, those still in flight are failed and recorded as
/// `task-interrupted`. Returns how many tasks were restored.
pub fn restore(world: &Arc<World>) -> usize {
    task::restore(world)
}

/// Serve one HTTP request to an A2A agent.
pub async fn handle(ctx: Ctx<'_>, spec: &A2aAgent, req: AgentRequest) -> Reply {
    let path = req.path.trim_end_matches('/');
    match (req.method.as_str(), path) {
        ("GET", wire::AGENT_CARD_PATH) => Reply::Full(Response::json_of(
            200,
            &wire::agent_card(ctx.name, &spec.description, &ctx.url()),
        )),
        ("POST", "") => rpc(&ctx, spec, &req).await,
        (m, "") | (m, wire::AGENT_CARD_PATH) => Reply::Full(Response::json(
            405,
            &json!({
                "error": format!("{m} is not served here: GET {}{} for the agent card, POST {} for JSON-RPC", ctx.url(), wire::AGENT_CARD_PATH, ctx.url()),
                "status": 405,
            }),
        )),
        (m, p) => Reply::Full(Response::json(
            404,
            &json!({
                "error": format!("agent \"{}\" serves no {m} {p}: GET {}{} for the agent card, POST {} for JSON-RPC", ctx.name, ctx.url(), wire::AGENT_CARD_PATH, ctx.url()),
                "status": 404,
            }),
        )),
    }
}

fn json_reply(resp: &RpcResponse) -> Reply {
    Reply::Full(Response::json(200, &resp.to_value()))
}

fn ok(call: &RpcRequest, result: impl serde::Serialize) -> Result<Reply, RpcError> {
    Ok(json_reply(&RpcResponse::success(call.id.clone(), result)))
}

/// [`ok`] for results whose types write their keys in sorted order ([`wire::Task`],
/// [`SendMessageResponse`]): the same bytes, serialised straight into the body.
fn ok_sorted(call: &RpcRequest, result: &impl serde::Serialize) -> Result<Reply, RpcError> {
    Ok(json_body(wire::success_body(&call.id, result)))
}

/// A 200 JSON answer from its bytes.
fn json_body(body: Vec<u8>) -> Reply {
    Reply::Full(Response {
        status: 200,
        headers: vec![("content-type".into(), "application/json".into())],
        body,
    })
}

/// The `A2A-Version` of a call: the header, else the query parameter the spec also allows
/// (borrowed: checked on every call, copied by none).
fn version(req: &AgentRequest) -> Option<Cow<'_, str>> {
    if let Some(v) = req.headers.get(&wire::VERSION_HEADER_NAME) {
        return Some(String::from_utf8_lossy(v.as_bytes()));
    }
    req.query.as_deref().and_then(|q| {
        q.split('&').find_map(|pair| {
            let (k, v) = pair.split_once('=')?;
            k.eq_ignore_ascii_case(wire::VERSION_HEADER)
                .then_some(Cow::Borrowed(v))
        })
    })
}

/// How far a call got without waiting.
enum Step {
    Done(Reply),
    /// A blocking SendMessage whose task has not stopped yet.
    Wait(RpcRequest, Wait),
}

async fn rpc(ctx: &Ctx<'_>, spec: &A2aAgent, req: &AgentRequest) -> Reply {
    // Everything up to a blocking call's wait is synchronous: this future holds no more than
    // what the wait needs (itself boxed: it is rare), so that it stays small for hyper to move.
    match rpc_now(ctx, spec, req) {
        Step::Done(reply) => reply,
        Step::Wait(call, w) => match Box::pin(answer_when_stopped(ctx, &call, w)).await {
            Ok(reply) => reply,
            Err(e) => error_reply(ctx, &call, e),
        },
    }
}

/// A failed call's answer, recorded.
fn error_reply(ctx: &Ctx<'_>, call: &RpcRequest, e: RpcError) -> Reply {
    task::log_error(&ctx.world, ctx.name, &call.method, &e);
    json_reply(&RpcResponse::error(call.id.clone(), e))
}

fn rpc_now(ctx: &Ctx<'_>, spec: &A2aAgent, req: &AgentRequest) -> Step {
    // The common call (SendMessage) is decoded in one pass; everything else, and anything odd
    // about it, takes the general route, which also words the errors.
    let (call, sent) = match wire::parse_send(&req.body) {
        Some((call, params)) => (call, Some(params)),
        None => match wire::parse_request(&req.body) {
            Ok(call) => (call, None),
            Err(resp) => {
                if let wire::RpcOutcome::Error(e) = &resp.outcome {
                    task::log_error(&ctx.world, ctx.name, "", e);
                }
                return Step::Done(json_reply(&resp));
            }
        },
    };
    let answered = match method(spec, req, &call) {
        Err(e) => Err(e),
        Ok(m @ (Method::SendMessage | Method::SendStreamingMessage)) => {
            match send(ctx, spec, &call, sent, m == Method::SendStreamingMessage) {
                Ok(Sending::Done(reply)) => Ok(reply),
                Ok(Sending::Wait(w)) => return Step::Wait(call, w),
                Err(e) => Err(e),
            }
        }
        Ok(m) => dispatch(ctx, spec, &call, m),
    };
    Step::Done(match answered {
        Ok(reply) => reply,
        Err(e) => error_reply(ctx, &call, e),
    })
}

/// The call's method, once its version is accepted.
fn method(spec: &A2aAgent, req: &AgentRequest, call: &RpcRequest) -> Result<Method, RpcError> {
    // Lenient by default: a missing header (0.3 per the spec) is accepted, because hand-written
    // calls rarely send it; `strict_version` refuses it as a 1.0-only server would.
    match version(req) {
        Some(v) if !wire::version_supported(Some(&v)) => {
            return Err(RpcError::version_not_supported(&v))
        }
        None if spec.strict_version => return Err(RpcError::version_not_supported("")),
        _ => {}
    }
    Method::from_name(&call.method).ok_or_else(|| RpcError::method_not_found(&call.method))
}

/// Every method but the two sends ([`send`]).
fn dispatch(
    ctx: &Ctx<'_>,
    spec: &A2aAgent,
    call: &RpcRequest,
    method: Method,
) -> Result<Reply, RpcError> {
    match method {
        Method::SendMessage | Method::SendStreamingMessage => {
            Err(RpcError::internal("a send is not dispatched here"))
        }
        Method::GetTask => {
            let p: GetTaskRequest = call.params()?;
            task::log_read(ctx, "get-task", Some(&p.id), json!({"task_id": p.id}));
            ok_sorted(call, &task::get(ctx, &p.id, p.history_length)?)
        }
        Method::ListTasks => {
            let p: ListTasksRequest = call.params()?;
            let page = task::list(ctx, &p)?;
            task::log_read(
                ctx,
                "list-tasks",
                None,
                json!({"context_id": p.context_id, "returned": page.tasks.len(), "total": page.total_size}),
            );
            ok(call, page)
        }
        Method::CancelTask => {
            let p: CancelTaskRequest = call.params()?;
            ok(call, task::cancel(ctx, &p.id)?)
        }
        Method::SubscribeToTask => {
            let p: SubscribeToTaskRequest = call.params()?;
            let (snapshot, events) = task::subscribe(ctx, &p.id)?;
            Ok(stream::open(
                ctx.world.clone(),
                call.id.clone(),
                vec![StreamResponse::Task(snapshot)],
                Some(events),
            ))
        }
        Method::CreateTaskPushNotificationConfig => {
            let p: TaskPushNotificationConfig = call.params()?;
            let Some(task_id) = p.task_id.clone().filter(|t| !t.is_empty()) else {
                return Err(RpcError::invalid_params("taskId is required"));
            };
            let cfg = push::check(spec, p)?;
            ok(call, task::add_push(ctx, spec, &task_id, cfg)?)
        }
        Method::GetTaskPushNotificationConfig => {
            let p: TaskPushNotificationConfigRef = call.params()?;
            let cfg = task::with_push(ctx, &p.task_id, |targets, _| {
                targets
                    .iter()
                    .find(|t| t.config.id.as_deref() == Some(p.id.as_str()))
                    .map(|t| t.config.clone())
                    .ok_or_else(|| unknown_config(&p.task_id, &p.id))
            })?;
            ok(call, cfg)
        }
        Method::ListTaskPushNotificationConfigs => {
            let p: ListTaskPushNotificationConfigsRequest = call.params()?;
            let configs = task::with_push(ctx, &p.task_id, |targets, _| {
                Ok(targets.iter().map(|t| t.config.clone()).collect())
            })?;
            ok(
                call,
                ListTaskPushNotificationConfigsResponse {
                    configs,
                    next_page_token: String::new(),
                },
            )
        }
        Method::DeleteTaskPushNotificationConfig => {
            let p: TaskPushNotificationConfigRef = call.params()?;
            task::with_push(ctx, &p.task_id, |targets, _| {
                if push::remove(&ctx.world, targets, &p.id) {
                    Ok(())
                } else {
                    Err(unknown_config(&p.task_id, &p.id))
                }
            })?;
            ok(call, Value::Null)
        }
        Method::GetExtendedAgentCard => Err(RpcError::extended_agent_card_not_configured()),
    }
}

/// An unknown config id is -32001, as the reference server answers.
fn unknown_config(task_id: &str, id: &str) -> RpcError {
    RpcError::new(
        wire::ErrorKind::TaskNotFound,
        format!("Push notification config {id} not found for task {task_id}"),
    )
}

/// SendMessage (blocking or `returnImmediately`) and SendStreamingMessage; `sent` are the
/// params when [`wire::parse_send`] already decoded them.
/// How far [`send`] got without waiting.
enum Sending {
    Done(Reply),
    /// A blocking call whose task has not stopped yet: see [`answer_when_stopped`].
    Wait(Wait),
}

struct Wait {
    task_id: String,
    events: broadcast::Receiver<StreamResponse>,
    history_length: Option<i32>,
}

/// A blocking call's answer once its task stops (terminal or interrupted).
async fn answer_when_stopped(ctx: &Ctx<'_>, call: &RpcRequest, w: Wait) -> Result<Reply, RpcError> {
    wait_until_stopped(&ctx.world, &w.task_id, w.events).await?;
    let task = task::snapshot(&ctx.world, &w.task_id)
        .ok_or_else(|| RpcError::internal("the task disappeared"))?;
    Ok(json_body(
        wire::TaskResult {
            task: &task,
            history_length: w.history_length,
        }
        .body(&call.id),
    ))
}

fn send(
    ctx: &Ctx<'_>,
    spec: &A2aAgent,
    call: &RpcRequest,
    sent: Option<SendMessageRequest>,
    streaming: bool,
) -> Result<Sending, RpcError> {
    let p: SendMessageRequest = match sent {
        Some(p) => p,
        None => call.params()?,
    };
    let history_length = p.history_length();
    // Blocking: answer once the task is terminal or interrupted. The steps due at once run
    // first, so a task that finishes at once is answered without waiting.
    let answer = |task: &wire::Task| {
        wire::TaskResult {
            task,
            history_length,
        }
        .body(&call.id)
    };
    // What the answer needs from the task as `task::send` leaves it: a stream, its snapshot and
    // every later event; a non-blocking call, the snapshot; a blocking one, the answer made
    // once the due part of the script has run, under the same hold of the task's lock.
    let want = if streaming {
        task::Want::Stream
    } else if p.return_immediately() {
        task::Want::Snapshot
    } else {
        task::Want::Answer(&answer)
    };
    // Given away: a new task keeps the message in its history.
    let reply = match task::send(ctx, spec, &call.method, p, want)? {
        Sent::Message(m) => {
            if streaming {
                stream::open(
                    ctx.world.clone(),
                    call.id.clone(),
                    vec![StreamResponse::Message(m)],
                    None,
                )
            } else {
                ok_sorted(call, &SendMessageResponse::Message(m))?
            }
        }
        Sent::Looked(Ok(body)) => json_body(body),
        Sent::Looked(Err((task_id, events))) => {
            return Ok(Sending::Wait(Wait {
                task_id,
                events,
                history_length,
            }))
        }
        Sent::Task {
            id,
            snapshot,
            events,
            run,
        } => {
            if run {
                task::start(&ctx.world, &id);
            }
            if streaming {
                stream::open(
                    ctx.world.clone(),
                    call.id.clone(),
                    vec![StreamResponse::Task(*snapshot)],
                    events,
                )
            } else {
                ok_sorted(
                    call,
                    &SendMessageResponse::Task(snapshot.with_history_length(history_length)),
                )?
            }
        }
    };
    Ok(Sending::Done(reply))
}

async fn wait_until_stopped(
    world: &World,
    task_id: &str,
    mut events: broadcast::Receiver<StreamResponse>,
) -> Result<(), RpcError> {
    loop {
        tokio::select! {
            r = events.recv() => match r {
                Ok(ev) if ev.ends_stream() => return Ok(()),
                Ok(_) => {}
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    if task::snapshot(world, task_id).is_none_or(|t| t.status.state.ends_stream()) {
                        return Ok(());
                    }
                }
                Err(broadcast::error::RecvError::Closed) => return Ok(()),
            },
            _ = world.clock.closed() => {
                return Err(RpcError::internal("the world was reset while the task was running"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn future_size<'a, Fut>(_: fn(Ctx<'a>, &'a A2aAgent, AgentRequest) -> Fut) -> usize {
        std::mem::size_of::<Fut>()
    }

    /// The server boxes an agent's future and hyper's task moves it: when the calls' params and
    /// the blocking wait were held across awaits it was 3.7 KB, copied on every call.
    #[test]
    fn a_call_future_stays_small() {
        let size = future_size(handle);
        assert!(size <= 1024, "a2a::handle's future is {size} bytes");
    }
}
