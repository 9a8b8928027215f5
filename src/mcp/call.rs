//! `tools/call` as an action: the arguments checked against the tool's input schema, then made
//! into the request the tool's route expects (the arguments as its JSON body, path parameters
//! and the idempotency key read from them by pointer, the key handed over in the header the
//! route's policy reads) and admitted by [`service::admit`], as an HTTP client's would be. The
//! route's answer becomes a `CallToolResult` (`isError` for an error status: a lie when the
//! effect happened); a key the policy refused becomes a JSON-RPC error; the delivery plan
//! (drop, reset, delay) is handed back for the server to carry out.

use hyper::header::{HeaderValue, CONTENT_TYPE};
use hyper::HeaderMap;
use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};
use serde_json::{json, Value};

use super::era::Era;
use super::rpc::{self, Id, McpError};
use super::task::Answer;
use super::{answer, complete, log, task_rpc, Reply};
use crate::ledger::{Delivery, Disposition};
use crate::scenario::mcp::{KeySource, McpServer, Resume, Tool};
use crate::service::{self, Plan, Request, Via};
use crate::world::World;

/// Run a `tools/call`. Errors before admission (unknown tool, malformed params) are protocol
/// errors, recorded by the caller; arguments the schema refuses are a tool error, recorded here.
pub(super) fn call(
    world: &World,
    server: &McpServer,
    (era, incoming): (&Era, &HeaderMap),
    id: &Id,
    params: &Value,
    sse: bool,
) -> Result<Reply, McpError> {
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        return Err(McpError::InvalidParams(
            "tools/call needs params.name (a string)".into(),
        ));
    };
    let Some(tool) = server.tool(name) else {
        return Err(McpError::InvalidParams(format!("Unknown tool: {name}")));
    };
    // A request id must not repeat one still awaiting its answer (a cancel could not tell
    // them apart).
    if let Some(seq) = era.session().and_then(|s| {
        let text = serde_json::to_string(id).unwrap_or_default();
        let sessions = world.extension::<super::session::Sessions>();
        sessions.call_of(&server.name, s, &text)
    }) {
        if in_flight(world, seq) {
            return Err(McpError::InvalidRequest(format!(
                "request id {} is still in flight in this session (action {seq}): use a new id",
                serde_json::to_string(id).unwrap_or_default()
            )));
        }
    }
    // A server must not rely on capabilities the client did not declare (SEP-2575).
    if let (Era::Modern, Some(missing)) = (era, super::era::undeclared(params, &tool.requires)) {
        let names: Vec<&String> = missing
            .as_object()
            .into_iter()
            .flat_map(|m| m.keys())
            .collect();
        let e = format!("tool {name} needs the client's {names:?}: declare them in _meta");
        return Err(McpError::MissingCapability(e, missing));
    }
    let args = match params.get("arguments") {
        None | Some(Value::Null) => json!({}),
        Some(a @ Value::Object(_)) => a.clone(),
        Some(_) => {
            let e = "tools/call params.arguments must be an object";
            return Err(McpError::InvalidParams(e.into()));
        }
    };
    let (path, key, mut headers) = match build(tool, params, &args) {
        Ok(b) => b,
        Err(problems) => {
            // SEP-1303: invalid arguments are the tool's error, which a model can correct.
            let text = format!("invalid arguments for {name}: {}", problems.join("; "));
            let detail = json!({"tool": name, "id": id, "problems": problems});
            log(world, server, "invalid-arguments", detail);
            let result = json!({"content": [{"type": "text", "text": text}], "isError": true});
            let msg = rpc::result(id, complete(result, era, server));
            return Ok(Reply::now(answer(200, msg, sse)));
        }
    };
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    // The work id and revision an orchestrator sends reach the action as they would over HTTP
    // (REC-2's admission check reads them).
    if let Some(svc) = world.scenario.service(&tool.service) {
        for h in [&svc.work_id_header, &svc.revision_header] {
            if let Some(v) = incoming.get(h) {
                headers.insert(h.clone(), v.clone());
            }
        }
    }
    let facts = json!({
        "server": &*server.name, "tool": name, "jsonrpc_id": id, "era": era.name(),
        "protocol_version": era.version(), "session": era.session(),
        "response": if sse { "sse" } else { "json" },
        "key": key, "key_source": key.as_ref().and(tool.key.as_ref()),
    });
    let req = Request {
        service: tool.service.as_str().into(),
        method: tool.method.as_str().into(),
        path: path.into(),
        headers,
        // A `Value` always serialises.
        body: serde_json::to_vec(&args).unwrap_or_default().into(),
        via: Some(Via {
            protocol: "mcp",
            facts,
        }),
        ..Request::default()
    };
    // Whether it runs as a task is settled before anything runs: a refusal is no action.
    if let (Some(ttl), Some(spec)) = (task_rpc::asked(tool, era, params)?, &tool.task) {
        let call = task_rpc::Call::new(era, id, params, sse, incoming);
        return Ok(task_rpc::create(
            world,
            (server, tool, spec),
            call,
            req,
            ttl,
        ));
    }
    if let (Era::Modern, Some(input)) = (era, &tool.input) {
        if let Some(r) =
            super::mrtr::round(world, (server, tool, input), (era, id, params, sse), &args)?
        {
            return Ok(r);
        }
    }
    let out = admit(world, era, id, req);
    if expires_now(world, server, era, &out) {
        let e = McpError::UnknownSession(era.session().unwrap_or_default().to_string());
        return Ok(Reply::now(e.response(Some(id))));
    }
    let message = message(id, era, server, answer_of(world, (server, tool), era, &out));
    Ok(deliver(world, server, (era, params, sse), &out, message))
}

/// Whether action `seq`'s answer is still to be sent (held, or hung).
fn in_flight(world: &World, seq: u64) -> bool {
    let now = world.clock.now();
    let st = world.lock();
    st.ledger
        .get(seq)
        .is_some_and(|r| match r.response.delivery {
            Delivery::Pending | Delivery::Hung => true,
            Delivery::Sent => r.response.at.is_some_and(|at| at > now),
            _ => false,
        })
}

/// Whether this call is the one after which its legacy session expires (`expire_session`):
/// the session ends, and the call's answer never reaches the client (recorded `abandoned`,
/// with a `session-expired` entry naming it), though its effect stands.
fn expires_now(world: &World, server: &McpServer, era: &Era, out: &service::Outcome) -> bool {
    let (Some(n), Era::Legacy { session, .. }) = (server.expire_session, era) else {
        return false;
    };
    let sessions = world.extension::<super::session::Sessions>();
    if sessions.calls_made(session) != n {
        return false;
    }
    sessions.close(&server.name, session);
    world.abandon(out.seq);
    let detail = json!({"session": session, "target": out.seq, "after_calls": n});
    log(world, server, "session-expired", detail);
    true
}

/// Admit a call's request; a legacy session remembers it for `notifications/cancelled`.
pub(super) fn admit(world: &World, era: &Era, id: &Id, req: Request<'_>) -> service::Outcome {
    let out = service::admit(world, req);
    if let Some(session) = era.session() {
        let request_id = serde_json::to_string(id).unwrap_or_default();
        let sessions = world.extension::<super::session::Sessions>();
        sessions.note_call(session, request_id, out.seq);
    }
    out
}

/// What an admitted call answers: its result, or a JSON-RPC error for a key the route's policy
/// refused.
pub(super) fn answer_of(
    world: &World,
    (server, tool): (&McpServer, &Tool),
    era: &Era,
    out: &service::Outcome,
) -> Answer {
    match key_refusal(out.disposition, out.response.status) {
        Some(e) => Answer::Error(e.body(None)["error"].take()),
        None => {
            let result = result_of(&out.response, matches!(era, Era::Modern));
            check_output(world, server, tool, out.seq, &result);
            Answer::Result(result)
        }
    }
}

/// An answer as the JSON-RPC message that carries it.
pub(super) fn message(id: &Id, era: &Era, server: &McpServer, answer: Answer) -> Value {
    match answer {
        Answer::Result(r) => rpc::result(id, complete(r, era, server)),
        Answer::Error(e) => json!({"jsonrpc": "2.0", "id": id, "error": e}),
    }
}

/// The HTTP answer to an admitted call, delivered as its plan says; streamed ones lead with
/// progress and (legacy, resumable) a priming event.
pub(super) fn deliver(
    world: &World,
    server: &McpServer,
    (era, params, sse): (&Era, &Value, bool),
    out: &service::Outcome,
    message: Value,
) -> Reply {
    let mut response = answer(200, message, sse);
    // A streamed call that asked for progress gets some at once: the call has started. A client
    // that resets its timeout on progress then waits on.
    let token = params.get("_meta").and_then(|m| m.get("progressToken"));
    let token = token.filter(|_| sse);
    let mut lead = token.map(|token| {
        let note = json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": token, "progress": 0, "message": "started"}});
        super::event(&note)
    });
    let primed = matches!(era, Era::Legacy { .. }) && sse && server.resume != Resume::None;
    if let (Era::Legacy { session, .. }, true) = (era, primed) {
        resumable(
            world,
            server,
            (session, out.seq, out.plan),
            &mut response,
            &mut lead,
        );
    }
    Reply {
        response,
        plan: out.plan,
        seq: out.seq,
        stream: sse,
        lead,
        close_cancels: matches!(era, Era::Modern),
        progress: token.cloned(),
        primed,
        later: None,
    }
}

/// A legacy stream a client may resume: a priming event with an id (and a short `retry`, so a
/// client reconnects soon) before anything else, the answer with the next id; under `replay`
/// a cut stream's answer is kept for a `GET` with `Last-Event-ID` (a delayed one's is not: a
/// resumption must not hand it out before its time).
fn resumable(
    world: &World,
    server: &McpServer,
    (session, seq, plan): (&str, u64, Plan),
    response: &mut service::Response,
    lead: &mut Option<Vec<u8>>,
) {
    let mut answer = format!("id: {seq}-1\n").into_bytes();
    answer.append(&mut response.body);
    let mut first = format!("id: {seq}-0\nretry: 100\ndata: \n\n").into_bytes();
    if let Some(mut l) = lead.take() {
        first.append(&mut l);
    }
    *lead = Some(first);
    // A cut stream's answer, and a delayed one's (its client may leave while it waits), is kept
    // for a resumption, due when the answer would have been sent.
    let due = match plan {
        Plan::Drop => Some(world.clock.now()),
        Plan::At(t) => Some(t),
        _ => None,
    };
    if let (Some(due), Resume::Replay) = (due, server.resume) {
        let sessions = world.extension::<super::session::Sessions>();
        sessions.keep_stream(session, seq, due, answer.clone());
    }
    response.body = answer;
}

/// A value read for a key or a path segment, as text.
fn text_of(v: Option<&Value>, at: &str) -> Result<Option<String>, String> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(_) => Err(format!("{at}: expected a string or a number")),
    }
}

/// The call's idempotency key, read where the tool says (`Ok(None)`: none given).
fn key_of(tool: &Tool, params: &Value, args: &Value) -> Result<Option<String>, String> {
    let (v, at) = match &tool.key {
        None => return Ok(None),
        Some(KeySource::Argument(p)) => (args.pointer(p), p.clone()),
        Some(KeySource::Meta(n)) => (
            params.get("_meta").and_then(|m| m.get(n)),
            format!("params._meta[\"{n}\"]"),
        ),
        Some(KeySource::Params(n)) => (params.get(n), format!("params.{n}")),
    };
    match text_of(v, &at)? {
        Some(k) if k.bytes().any(|b| b.is_ascii_control()) => Err(format!(
            "{at}: an idempotency key is visible text, without control characters"
        )),
        k => Ok(k),
    }
}

/// What a path segment cannot hold as it is (the URL standard's path-segment set).
const SEGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'/')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'`')
    .add(b'{')
    .add(b'}');

/// The route's path and the key from the call, with the key in the route's key header; or
/// every problem the arguments have.
fn build(
    tool: &Tool,
    params: &Value,
    args: &Value,
) -> Result<(String, Option<String>, HeaderMap), Vec<String>> {
    let mut problems = tool.input_schema.problems(args);
    let mut headers = HeaderMap::new();
    let key = key_of(tool, params, args).unwrap_or_else(|e| {
        problems.push(e);
        None
    });
    // Control characters were refused above: anything else is a valid header value.
    if let Some(v) = key.as_deref().and_then(|k| HeaderValue::from_str(k).ok()) {
        headers.insert(tool.key_header.clone(), v);
    }
    let path = tool.path.fill(|param| {
        let pointer = &tool.path_params.iter().find(|(p, _)| p == param)?.1;
        let problem = match text_of(args.pointer(pointer), pointer) {
            // Encoded as a client would put it in a URL; the route decodes it back.
            Ok(Some(v)) if !v.is_empty() => {
                return Some(utf8_percent_encode(&v, SEGMENT).to_string())
            }
            Ok(Some(_)) => format!("{pointer}: must not be empty (it is a path segment)"),
            Ok(None) => format!("{pointer}: required (it is the route's {{{param}}})"),
            Err(e) => e,
        };
        problems.push(problem);
        None
    });
    match path {
        Some(p) if problems.is_empty() => Ok((p, key, headers)),
        _ => Err(problems),
    }
}

/// A successful result whose structured content does not fit the tool's output schema is sent
/// as it is (a scenario may lie on purpose), but noted: clients that validate it (Python's
/// does) fail the call, and whoever reads the ledger should know why.
fn check_output(world: &World, server: &McpServer, tool: &Tool, seq: u64, result: &Value) {
    let (Some(schema), Some(content)) = (&tool.output_schema, result.get("structuredContent"))
    else {
        return;
    };
    let problems = schema.problems(content);
    if !problems.is_empty() {
        let detail = json!({"tool": tool.name, "action": seq, "problems": problems});
        log(world, server, "output-mismatch", detail);
    }
}

/// A key decision that refused the call before it ran: a JSON-RPC error in SEP-3182's shape
/// (a closed proposal, the only one there is), with the route's HTTP status as data.
pub(super) fn key_refusal(d: Disposition, status: u16) -> Option<McpError> {
    let (kind, message) = match d {
        Disposition::Conflict => (
            "idempotency_key_in_progress",
            "a call with this idempotency key is still in progress; retry later",
        ),
        Disposition::Mismatch => (
            "idempotency_key_conflict",
            "this idempotency key was used with other arguments",
        ),
        Disposition::MissingKey => (
            "idempotency_key_missing",
            "this tool requires an idempotency key",
        ),
        _ => return None,
    };
    Some(McpError::Key {
        kind,
        message: message.into(),
        status,
    })
}

/// The route's HTTP answer as a `CallToolResult`: its body as text, and (when it succeeded) as
/// structured content; an error status sets `isError`. Legacy structured content must be an
/// object; modern may be any JSON.
fn result_of(r: &service::Response, modern: bool) -> Value {
    let text = String::from_utf8_lossy(&r.body);
    let is_error = r.status >= 400;
    let mut result = json!({"content": [{"type": "text", "text": text}], "isError": is_error});
    let parsed: Option<Value> = serde_json::from_slice(&r.body).ok();
    if let Some(v) = parsed.filter(|v| !is_error && (modern || v.is_object())) {
        result["structuredContent"] = v;
    }
    result
}
