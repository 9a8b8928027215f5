//! Fake A2A 1.0 subagents: the HTTP surface of `[agents.NAME]` with `protocol = "a2a"`.
//!
//! An agent serves its card at `/agents/NAME/.well-known/agent-card.json` ([`card`]; its one
//! JSON-RPC interface `url` is the agent's real address, [`Ctx::url`]) and the JSON-RPC 2.0
//! binding at `POST /agents/NAME`. This module reads the call (`rpc`), checks the
//! `A2A-Version`, dispatches the eleven 1.0 methods and frames the answer: one JSON body (errors
//! included, always HTTP 200) or an SSE stream ([`stream`]). The wire vocabulary is [`types`],
//! [`params`] and [`errors`]; what the calls *do* lives in [`task`] (the task table and the scripted
//! lifecycle on the scenario clock) and [`push`] (webhook configs and deliveries). Every call
//! that fails is also a ledger entry (`rpc-error`).

pub mod card;
pub mod detail;
pub mod errors;
pub mod params;
mod push;
mod rest;
pub mod rpc;
mod stream;
mod task;
pub mod types;

use std::borrow::Cow;

use serde_json::{json, Value};
use tokio::sync::broadcast;

use self::errors::{ErrorKind, RpcError};
use self::params::{
    CancelTaskRequest, GetTaskRequest, ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse, ListTasksRequest, SendMessageRequest,
    SubscribeToTaskRequest, TaskPushNotificationConfig, TaskPushNotificationConfigRef,
};
use self::rpc::{Method, RpcId, RpcRequest};
use self::task::Sent;
use self::types::{SendMessageResponse, SendMessageResponseOf, StreamResponse, Task};
use super::{AgentRequest, Ctx, Reply};
use crate::scenario::a2a::A2aAgent;
use crate::service::Response;

pub use self::task::restore;

pub async fn handle(ctx: Ctx<'_>, spec: &A2aAgent, req: AgentRequest) -> Reply {
    let path = req.path.trim_end_matches('/');
    let card_path = card::AGENT_CARD_PATH;
    if req.too_large {
        return too_large(
            &ctx,
            if path.is_empty() {
                RpcId::Null
            } else {
                RpcId::Rest
            },
        );
    }
    match (req.method.as_str(), path) {
        // HEAD as GET: hyper leaves the body out.
        ("GET" | "HEAD", card::AGENT_CARD_PATH) => Reply::Full(card::serve(
            &card::agent_card(ctx.name, &spec.description, card_interfaces(&ctx, spec)),
            ctx.world.clock.epoch_ms(),
            req.headers.get(hyper::header::IF_NONE_MATCH),
        )),
        ("POST", "") => rpc(&ctx, spec, &req, None).await,
        (m, p) => match rest::call_of(&req) {
            Some(read) => bare_call(&ctx, spec, &req, (RpcId::Rest, ""), read).await,
            None if p.is_empty() || p == card_path => Reply::Full(Response::json(
                405,
                &json!({
                    "error": format!("{m} is not served here: GET {}{card_path} for the agent card, POST {} for JSON-RPC", ctx.url(), ctx.url()),
                    "status": 405,
                }),
            )),
            // In the HTTP+JSON binding's error shape: a client of that binding reads it.
            None => {
                let allow = rest::methods_at(p).join(", ");
                let (status, name) = if allow.is_empty() {
                    (404, "NOT_FOUND")
                } else {
                    (405, "UNIMPLEMENTED")
                };
                let message = format!("agent \"{}\" serves no {m} {p}: GET {}{card_path} for the agent card, POST {} for JSON-RPC, {}/message:send and the other HTTP+JSON paths", ctx.name, ctx.url(), ctx.url(), ctx.url());
                let body = json!({"error": {"code": status, "status": name, "message": message, "details": []}});
                let mut r = Response::json(status, &body);
                if status == 405 {
                    r.headers.push(("allow".into(), allow.into()));
                }
                Reply::Full(r)
            }
        },
    }
}

/// The agent's interfaces as its card lists them. Over gRPC the tenant names the agent, behind
/// `_s/SESSION/` in a named session, since a gRPC channel has no path to carry either.
fn card_interfaces(ctx: &Ctx<'_>, spec: &A2aAgent) -> Vec<card::AgentInterface> {
    let tenant = match &ctx.world.session {
        Some(s) => format!("_s/{s}/{}", ctx.name),
        None => ctx.name.to_string(),
    };
    card::interfaces(&spec.bindings, &ctx.url(), ctx.grpc.map(|a| (a, tenant)))
}

fn json_body(status: u16, body: Vec<u8>) -> Reply {
    let headers = vec![("content-type".into(), "application/json".into())];
    Reply::Full(Response {
        status,
        headers,
        body,
    })
}

fn ok(call: &RpcRequest<'_>, result: &impl serde::Serialize) -> Result<Step, RpcError> {
    let body = rpc::success_body(&call.id, result);
    Ok(Step::Done(json_body(200, body)))
}

/// The `A2A-Version` of a call: the header, else the query parameter the spec also allows.
fn version(req: &AgentRequest) -> Option<Cow<'_, str>> {
    if let Some(v) = req.headers.get(&rpc::VERSION_HEADER_NAME) {
        return Some(String::from_utf8_lossy(v.as_bytes()));
    }
    req.query.as_deref().and_then(|q| {
        q.split('&').find_map(|pair| {
            let (k, v) = pair.split_once('=')?;
            k.eq_ignore_ascii_case(rpc::VERSION_HEADER)
                .then_some(Cow::Borrowed(v))
        })
    })
}

/// How far a call got without waiting.
enum Step {
    Done(Reply),
    /// A blocking SendMessage whose task has not stopped yet: see [`answer_when_stopped`].
    Wait(Wait),
}

/// A call over the gRPC binding (see `agent::a2a_grpc_call`): its method's name and its request
/// as ProtoJSON, served like every other call. `req` carries the call's metadata as headers.
pub(crate) async fn grpc_call(
    ctx: &Ctx<'_>,
    spec: &A2aAgent,
    req: &AgentRequest,
    method: &str,
    params: String,
) -> Reply {
    if req.too_large {
        return too_large(ctx, RpcId::Grpc);
    }
    let read = Method::from_name(method)
        .map(|m| (m, params))
        .ok_or_else(|| RpcError::method_not_found(method));
    bare_call(ctx, spec, req, (RpcId::Grpc, method), read).await
}

/// A call that is not JSON-RPC (`id` says which binding it came over), once read as its method
/// and its params' JSON text; `name` is the method's name for an error's entry. Its content type
/// is checked before what was read (the gRPC adapter passes none).
async fn bare_call(
    ctx: &Ctx<'_>,
    spec: &A2aAgent,
    req: &AgentRequest,
    (id, name): (RpcId, &str),
    read: Result<(Method, String), RpcError>,
) -> Reply {
    let read = unsupported_content_type(req).map_or(read, Err);
    let params = read.and_then(|(m, text)| {
        let raw = serde_json::value::RawValue::from_string(text);
        raw.map(|raw| (m, raw))
            .map_err(|e| RpcError::internal(e.to_string()))
    });
    match params {
        Ok((m, raw)) => rpc(ctx, spec, req, Some(RpcRequest::bare(id, m, &raw))).await,
        Err(e) => error_reply(ctx, &id, (name, None), e),
    }
}

async fn rpc(
    ctx: &Ctx<'_>,
    spec: &A2aAgent,
    req: &AgentRequest,
    bare: Option<RpcRequest<'_>>,
) -> Reply {
    // Everything up to a blocking call's wait is synchronous: this future holds no more than
    // what the wait needs (itself boxed: it is rare), so that it stays small for hyper to move.
    match rpc_now(ctx, spec, req, bare) {
        Step::Done(reply) => reply,
        Step::Wait(w) => Box::pin(answer_when_stopped(ctx, w)).await,
    }
}

/// A body over the scenario's `max_body_bytes`: refused unread, with 413 whatever the binding
/// (as the fake services answer it), recorded.
fn too_large(ctx: &Ctx<'_>, id: RpcId) -> Reply {
    let max = ctx.world.scenario.max_body_bytes;
    let e = RpcError::invalid_request(format!(
        "request body too large: the scenario's max_body_bytes is {max}"
    ));
    detail::log_error(&ctx.world, ctx.name, ("", None), &e);
    json_body(413, rpc::error_body(&id, &e))
}

/// A failed call's answer, recorded.
fn error_reply(ctx: &Ctx<'_>, id: &RpcId, named: (&str, Option<&str>), e: RpcError) -> Reply {
    detail::log_error(&ctx.world, ctx.name, named, &e);
    // JSON-RPC errors travel with HTTP 200; the HTTP+JSON binding's with their own status.
    let status = if id.bare() {
        rest::status_of(e.code).0
    } else {
        200
    };
    json_body(status, rpc::error_body(id, &e))
}

fn rpc_now(
    ctx: &Ctx<'_>,
    spec: &A2aAgent,
    req: &AgentRequest,
    bare: Option<RpcRequest<'_>>,
) -> Step {
    let parsed = match (bare, unsupported_content_type(req)) {
        (Some(call), _) => Ok(call),
        (None, Some(e)) => Err((RpcId::Null, e)),
        (None, None) => rpc::parse_request(&req.body),
    };
    let call = match parsed {
        Ok(call) => call,
        Err((id, e)) => return Step::Done(error_reply(ctx, &id, ("", None), e)),
    };
    let answered = method(spec, req, &call).and_then(|m| dispatch(ctx, spec, &call, m));
    answered.unwrap_or_else(|e| {
        let task = task_named(&call);
        let named = (call.method.as_ref(), task.as_deref());
        Step::Done(error_reply(ctx, &call.id, named, e))
    })
}

/// The task a call names, if any: its refusal's entry carries it as work id.
fn task_named(call: &RpcRequest<'_>) -> Option<String> {
    let params: Value = call.params().ok()?;
    let id = match Method::from_name(&call.method)? {
        Method::SendMessage | Method::SendStreamingMessage => params.pointer("/message/taskId"),
        Method::GetTask | Method::CancelTask | Method::SubscribeToTask => params.get("id"),
        Method::ListTasks | Method::GetExtendedAgentCard => None,
        _ => params.get("taskId"),
    };
    id?.as_str().filter(|t| !t.is_empty()).map(str::to_string)
}

/// JSON-RPC requests are `application/json` (parameters such as `charset` aside); a request
/// that says it is something else is refused before its body is read (JSONRPC-SSE-002). One
/// that says nothing is read as JSON: hand-written calls often omit it.
fn unsupported_content_type(req: &AgentRequest) -> Option<RpcError> {
    let given = req.headers.get(hyper::header::CONTENT_TYPE)?;
    let text = String::from_utf8_lossy(given.as_bytes());
    let media = text.split(';').next().unwrap_or("").trim();
    // `application/a2a+json` is what the HTTP+JSON binding SHOULD send.
    let json = ["application/json", "application/a2a+json"];
    (!json.iter().any(|j| media.eq_ignore_ascii_case(j)))
        .then(|| RpcError::content_type_not_supported(&text))
}

/// The call's method, once its version is accepted.
fn method(spec: &A2aAgent, req: &AgentRequest, call: &RpcRequest<'_>) -> Result<Method, RpcError> {
    // Lenient by default: a missing header (0.3 per the spec) is accepted, because hand-written
    // calls rarely send it; `strict_version` refuses it as a 1.0-only server would.
    match version(req) {
        Some(v) if !rpc::version_supported(Some(&v)) => {
            return Err(RpcError::version_not_supported(&v))
        }
        None if spec.strict_version => return Err(RpcError::version_not_supported("")),
        _ => {}
    }
    if !spec.serves(call.binding()) {
        return Err(RpcError::unsupported_operation(format!(
            "this agent does not serve the {} binding (the scenario's `bindings` leaves it out): its agent card lists the ones it does",
            call.binding().as_str()
        )));
    }
    Method::from_name(&call.method).ok_or_else(|| RpcError::method_not_found(&call.method))
}

fn dispatch(
    ctx: &Ctx<'_>,
    spec: &A2aAgent,
    call: &RpcRequest<'_>,
    method: Method,
) -> Result<Step, RpcError> {
    match method {
        Method::SendMessage => send(ctx, spec, call, false),
        Method::SendStreamingMessage => send(ctx, spec, call, true),
        Method::GetTask => {
            let p: GetTaskRequest = call.params()?;
            ok(call, &task::get(ctx, &p.id, p.history_length)?)
        }
        Method::ListTasks => {
            let p: ListTasksRequest = call.params()?;
            let page = task::list(ctx, &p)?;
            let detail = json!({"context_id": p.context_id, "returned": page.tasks.len(),
                "total": page.total_size});
            detail::log(&ctx.world, ctx.name, "list-tasks", None, None, detail);
            ok(call, &page)
        }
        Method::CancelTask => {
            let p: CancelTaskRequest = call.params()?;
            ok(call, &task::cancel(ctx, &p.id, call.binding())?)
        }
        Method::SubscribeToTask => {
            let p: SubscribeToTaskRequest = call.params()?;
            let (snapshot, events) = task::subscribe(ctx, &p.id)?;
            let first = StreamResponse::Task(snapshot);
            let id = call.id.clone();
            Ok(Step::Done(stream::open(ctx, id, first, Some(events), true)))
        }
        Method::CreateTaskPushNotificationConfig => {
            let p: TaskPushNotificationConfig = call.params()?;
            let Some(task_id) = p.task_id.clone().filter(|t| !t.is_empty()) else {
                return Err(RpcError::invalid_params("taskId is required"));
            };
            let cfg = push::check(spec, p, (ctx.base_url, ctx.grpc))?;
            ok(call, &task::add_push(ctx, spec, &task_id, cfg)?)
        }
        Method::GetTaskPushNotificationConfig => {
            let p: TaskPushNotificationConfigRef = call.params()?;
            let cfg = task::with_push(ctx, &p.task_id, |targets| {
                let found = targets.iter().find(|t| t.config.id.as_ref() == Some(&p.id));
                found.map(|t| t.config.clone())
            })?;
            ok(call, &cfg.ok_or_else(|| unknown_config(&p.task_id, &p.id))?)
        }
        Method::ListTaskPushNotificationConfigs => {
            let p: ListTaskPushNotificationConfigsRequest = call.params()?;
            let configs = task::with_push(ctx, &p.task_id, |targets| {
                targets.iter().map(|t| t.config.clone()).collect()
            })?;
            ok(call, &configs_page(configs, &p)?)
        }
        Method::DeleteTaskPushNotificationConfig => {
            let p: TaskPushNotificationConfigRef = call.params()?;
            // Idempotent (SPEC §3.1.10): deleting a config already gone has the same effect,
            // so it succeeds; only an unknown task is an error.
            task::with_push(ctx, &p.task_id, |t| push::remove(&ctx.world, t, &p.id))?;
            ok(call, &Value::Null)
        }
        Method::GetExtendedAgentCard => Err(RpcError::extended_agent_card_not_configured()),
    }
}

/// An unknown config id is -32001, as the reference server answers.
fn unknown_config(task_id: &str, id: &str) -> RpcError {
    let message = format!("Push notification config {id} not found for task {task_id}");
    RpcError::new(ErrorKind::TaskNotFound, message)
}

/// One page of a task's push configs: `pageSize` of them (all when unset) from the offset the
/// page token gives (a task has few, and they change rarely).
fn configs_page(
    mut configs: Vec<TaskPushNotificationConfig>,
    p: &ListTaskPushNotificationConfigsRequest,
) -> Result<ListTaskPushNotificationConfigsResponse, RpcError> {
    let size = match p.page_size {
        Some(n) if n < 0 => return Err(RpcError::invalid_params("pageSize must be positive")),
        None | Some(0) => usize::MAX,
        Some(n) => n as usize,
    };
    let from: usize = match p.page_token.as_deref().filter(|t| !t.is_empty()) {
        None => 0,
        Some(t) => t
            .parse()
            .map_err(|_| RpcError::invalid_params(format!("invalid pageToken \"{t}\"")))?,
    };
    let total = configs.len();
    let end = from.saturating_add(size).min(total);
    let configs = configs.drain(from.min(end)..end).collect();
    let next_page_token = if end < total {
        end.to_string()
    } else {
        String::new()
    };
    Ok(ListTaskPushNotificationConfigsResponse {
        configs,
        next_page_token,
    })
}

struct Wait {
    id: rpc::RpcId,
    task_id: String,
    events: broadcast::Receiver<StreamResponse>,
    history_length: Option<i32>,
}

/// A blocking call's answer once its task stops (terminal or interrupted).
async fn answer_when_stopped(ctx: &Ctx<'_>, mut w: Wait) -> Reply {
    let world = &ctx.world;
    let stopped = loop {
        tokio::select! {
            r = w.events.recv() => match r {
                Ok(ev) if ev.ends_stream() => break Ok(()),
                Ok(_) => {}
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    if task::snapshot(world, &w.task_id).is_none_or(|t| t.status.state.ends_stream()) {
                        break Ok(());
                    }
                }
                Err(broadcast::error::RecvError::Closed) => break Ok(()),
            },
            _ = world.clock.closed() => break Err(stream::world_closed(world)),
        }
    };
    let task = stopped.and_then(|()| {
        task::snapshot(&ctx.world, &w.task_id)
            .ok_or_else(|| RpcError::internal("the task disappeared"))
    });
    match task {
        Ok(task) => json_body(200, stopped_answer(&w.id, &task, w.history_length)),
        Err(e) => error_reply(
            ctx,
            &w.id,
            (Method::SendMessage.as_str(), Some(&w.task_id)),
            e,
        ),
    }
}

/// A blocking SendMessage's answer: the task as it stopped, its history cut to `history_length`
/// (only then is the task copied).
fn stopped_answer(id: &RpcId, task: &Task, history_length: Option<i32>) -> Vec<u8> {
    let task = match history_length {
        Some(_) => Cow::Owned(task.clone().with_history_length(history_length)),
        None => Cow::Borrowed(task),
    };
    rpc::success_body(id, &SendMessageResponseOf::Task(task))
}

/// SendMessage (blocking, or `returnImmediately`) and SendStreamingMessage.
fn send(
    ctx: &Ctx<'_>,
    spec: &A2aAgent,
    call: &RpcRequest<'_>,
    streaming: bool,
) -> Result<Step, RpcError> {
    let p: SendMessageRequest = call.params()?;
    let history_length = p.history_length();
    // What the answer needs from the task as `task::send` leaves it: a stream, its snapshot and
    // every later event; a non-blocking call, the snapshot; a blocking one, the task once the
    // due part of the script has run, if it has stopped by then.
    let want = if streaming {
        task::Want::Stream
    } else if p.return_immediately() {
        task::Want::Snapshot
    } else {
        task::Want::Blocking {
            id: &call.id,
            history_length,
        }
    };
    let (first, events) = match task::send(ctx, spec, (&call.method, call.binding()), p, want)? {
        Sent::Running(task_id, events) => {
            let id = call.id.clone();
            return Ok(Step::Wait(Wait {
                id,
                task_id,
                events,
                history_length,
            }));
        }
        Sent::Answered(body) => return Ok(Step::Done(json_body(200, body))),
        Sent::Message(m) if !streaming => return ok(call, &SendMessageResponse::Message(m)),
        Sent::Message(m) => (StreamResponse::Message(m), None),
        Sent::Task { snapshot, events } if streaming => (StreamResponse::Task(*snapshot), events),
        Sent::Task { snapshot, .. } => {
            let result = SendMessageResponse::Task(snapshot.with_history_length(history_length));
            return ok(call, &result);
        }
    };
    Ok(Step::Done(stream::open(
        ctx,
        call.id.clone(),
        first,
        events,
        false,
    )))
}
