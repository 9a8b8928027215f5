//! Fake MCP tool servers: `[mcp.NAME]` served at `/mcp/NAME` over Streamable HTTP, both eras on
//! the one endpoint (`era`), JSON-RPC in `rpc`.
//!
//! MCP is one more caller of the action pipeline: a `tools/call` becomes the request the tool's
//! route expects (`call`) and goes through [`crate::service::admit`] like an HTTP client's, so
//! the route's idempotency, fates and ledger apply unchanged; the entry also carries the MCP facts
//! (`detail.mcp`). The pipeline's delivery [`Plan`] comes back with the MCP answer and the server
//! carries it out on the socket as it does for a service (drop, reset, delay on the scenario
//! clock). Everything else (handshake, lists, refusals) is answered here; refusals, sessions and
//! cancellations are entries of the server's own (`service: "mcp/NAME"`, `actor: "mcp:NAME"`),
//! never actions.

use hyper::body::Bytes;
use hyper::HeaderMap;
use serde_json::{json, Value};

use crate::ledger::ActionState;
use crate::ledger::Record;
use crate::scenario::mcp::{CancelMode, McpServer, Responses, Resume, MODERN};
use crate::service::{Plan, Response};
use crate::world::World;

mod call;
mod era;
mod mrtr;
mod restore;
mod rpc;
mod session;
mod task;
mod task_result;
mod task_rpc;

pub use restore::restore;
pub use task_result::Later;

use era::{Era, SESSION_HEADER};
use rpc::{Id, Incoming, McpError};
use session::Sessions;

/// An HTTP request to an MCP server, already read off the wire.
#[derive(Debug, Default)]
pub struct McpRequest {
    pub method: hyper::Method,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// The body was longer than the scenario's `max_body_bytes` (`body` holds its start).
    pub too_large: bool,
}

/// The answer and how it is delivered: a `tools/call` carries its action's plan and seq; every
/// other answer goes out now.
#[derive(Debug)]
pub struct Reply {
    pub response: Response,
    pub plan: Plan,
    pub seq: u64,
    /// The answer is an event stream: a dropped one is cut off after its headers, a delayed
    /// one sends its headers at once.
    pub stream: bool,
    /// Events the stream carries before the answer (or the cut): a `notifications/progress`
    /// for a call that asked for progress.
    pub lead: Option<Vec<u8>>,
    /// A modern call: a client that closes its stream before the answer cancels it
    /// ([`stream_closed`]).
    pub close_cancels: bool,
    /// The call's `_meta.progressToken`, when it streams: a delayed answer is preceded by
    /// progress as scenario time passes ([`progress_event`]).
    pub progress: Option<Value>,
    /// The stream leads with a priming event (legacy, resumable): a dropped one ends cleanly
    /// after it, as a server polling by SEP-1699 closes it, and the client resumes with `GET`.
    pub primed: bool,
    /// An answer made later (a legacy `tasks/result` held until its task ends, asking the
    /// task's question on the way): the server runs it ([`Later::run`]).
    pub later: Option<Later>,
}

/// A `notifications/progress` event: `done` of `total` milliseconds of the call's wait.
pub fn progress_event(token: &Value, done: u64, total: u64) -> Vec<u8> {
    let note = json!({"jsonrpc": "2.0", "method": "notifications/progress",
        "params": {"progressToken": token, "progress": done, "total": total,
            "message": "waiting"}});
    event(&note)
}

impl Reply {
    fn now(response: Response) -> Reply {
        Reply {
            response,
            plan: Plan::Now,
            seq: 0,
            stream: false,
            lead: None,
            close_cancels: false,
            progress: None,
            primed: false,
            later: None,
        }
    }
}

/// A modern client closed the stream of call `seq` before its answer came: 2026-07-28's way to
/// cancel. Under `honor` an effect still pending is stopped (one applied is too late); under
/// `ignore` it stands. Recorded as a `cancelled` entry either way.
pub fn stream_closed(world: &World, name: &str, seq: u64) {
    let scenario = world.scenario.clone();
    let Some(server) = scenario.mcp_server(name) else {
        return;
    };
    let outcome = cancel_outcome(world, server.cancel, Some(seq));
    let detail = json!({
        "via": "stream-close", "target": seq,
        "policy": server.cancel, "outcome": outcome,
    });
    log(world, server, "cancelled", detail);
}

/// What a cancellation of action `target` came to under `mode`.
fn cancel_outcome(world: &World, mode: CancelMode, target: Option<u64>) -> &'static str {
    match (mode, target) {
        (_, None) => "unknown",
        (CancelMode::Ignore, Some(_)) => "ignored",
        (CancelMode::Honor, Some(seq)) => match crate::service::cancel_pending(world, seq) {
            Some(ActionState::Pending | ActionState::Cancelled) => "cancelled",
            Some(ActionState::Applied) => "too-late",
            None => "unknown",
        },
    }
}

/// Serve one request to MCP server `name`. Synchronous: a tool call is admitted at once; only
/// its delivery may wait, and the server does that.
pub fn handle(world: &World, name: &str, req: McpRequest) -> Reply {
    let scenario = world.scenario.clone();
    let Some(server) = scenario.mcp_server(name) else {
        let names: Vec<&str> = scenario.mcp.iter().map(|s| &*s.name).collect();
        let hint = crate::scenario::did_you_mean(name, names.iter().copied());
        let error = format!("no MCP server named \"{name}\"{hint}");
        return Reply::now(Response::json(
            404,
            &json!({"error": error, "status": 404, "mcp": names}),
        ));
    };
    if let Err(e) = origin_allowed(server, &req.headers) {
        return refuse(world, server, None, None, e, false);
    }
    if req.too_large {
        let e = McpError::TooLarge(scenario.max_body_bytes);
        return refuse(world, server, None, None, e, false);
    }
    // Only the legacy era has sessions to end and streams to resume; a modern-only server
    // takes POST alone (2026-07-28: GET and DELETE get 405, `Last-Event-ID` is ignored).
    let legacy = server.legacy_versions().next().is_some();
    match req.method {
        hyper::Method::POST => post(world, server, &req),
        hyper::Method::DELETE if legacy => Reply::now(delete(world, server, &req.headers)),
        hyper::Method::GET if legacy && req.headers.contains_key("last-event-id") => {
            resume(world, server, &req.headers)
        }
        _ => {
            let (allow, text) = if legacy {
                ("POST, DELETE", "this MCP endpoint takes POST (and DELETE to end a session); it offers no GET stream")
            } else {
                ("POST", "this MCP endpoint (2026-07-28 only) takes POST alone: no sessions, no GET stream")
            };
            let mut r = Response::own_error(405, text);
            r.headers.push(("allow".into(), allow.into()));
            Reply::now(r)
        }
    }
}

/// A request a browser sent (it carries `Origin`) is served only from a loopback origin or one
/// the scenario lists: the transport spec's defence against DNS rebinding. Clients outside
/// browsers send no `Origin`.
fn origin_allowed(server: &McpServer, headers: &HeaderMap) -> Result<(), McpError> {
    let Some(given) = headers.get(hyper::header::ORIGIN) else {
        return Ok(());
    };
    let text = String::from_utf8_lossy(given.as_bytes()).to_ascii_lowercase();
    let origin = text.trim_end_matches('/');
    let host = origin.parse::<hyper::Uri>().ok().and_then(|u| {
        u.scheme()?;
        u.host().map(str::to_string)
    });
    let loopback = host.as_deref().is_some_and(|h| {
        matches!(h, "localhost" | "[::1]" | "::1")
            || h.parse::<std::net::Ipv4Addr>()
                .is_ok_and(|ip| ip.is_loopback())
    });
    if loopback || server.origins.iter().any(|o| o == origin) {
        return Ok(());
    }
    Err(McpError::Forbidden(format!(
        "Origin {text} is not allowed (loopback origins are; list others in the server's `origins`)"
    )))
}

fn post(world: &World, server: &McpServer, req: &McpRequest) -> Reply {
    if let Err(e) = media_fits(&req.headers) {
        return refuse(world, server, None, None, e, false);
    }
    if let Some(reply) = batch(world, server, req) {
        return reply;
    }
    let sse = wants_sse(server, &req.headers);
    one(world, server, &req.headers, rpc::parse(&req.body), sse)
}

/// A batch (a JSON array) in a 2025-03-26 session, the one version that has them: each message
/// served in turn, the answers to its requests in one JSON array (202 when it held none). The
/// batch's HTTP answer goes as the first call whose delivery is not immediate says (a drop
/// loses them all). `initialize` (as 2025-03-26 says) and `tasks/result` (whose answer may
/// wait on its task) cannot be batched.
fn batch(world: &World, server: &McpServer, req: &McpRequest) -> Option<Reply> {
    let first = req.body.iter().find(|b| !b.is_ascii_whitespace());
    let session = req
        .headers
        .get(SESSION_HEADER)
        .map(crate::service::header_text)?;
    let version = world
        .extension::<Sessions>()
        .version(&server.name, &session);
    if first != Some(&b'[') || version != Some("2025-03-26") {
        return None;
    }
    let Ok(Value::Array(items)) = serde_json::from_slice::<Value>(&req.body) else {
        return None;
    };
    if items.is_empty() {
        let e = McpError::InvalidRequest("an empty batch".into());
        return Some(refuse(world, server, None, None, e, false));
    }
    let (mut answers, mut plan, mut seq) = (Vec::new(), Plan::Now, 0);
    for item in items {
        let parsed = rpc::parse_value(item);
        let r = match &parsed {
            Ok(Incoming::Request { id, method, .. })
                if method == "tasks/result" || method == "initialize" =>
            {
                let e = McpError::InvalidRequest(format!("{method} cannot be batched"));
                refuse(world, server, Some(method), Some(id), e, false)
            }
            _ => one(world, server, &req.headers, parsed, false),
        };
        if plan == Plan::Now {
            (plan, seq) = (r.plan, r.seq);
        }
        if let Ok(v) = serde_json::from_slice::<Value>(&r.response.body) {
            answers.push(v);
        }
    }
    let mut reply = Reply::now(if answers.is_empty() {
        empty(202)
    } else {
        Response::json(200, &Value::Array(answers))
    });
    (reply.plan, reply.seq) = (plan, seq);
    Some(reply)
}

/// One JSON-RPC message, as read (or refused).
fn one(
    world: &World,
    server: &McpServer,
    headers: &HeaderMap,
    parsed: Result<Incoming, (Option<Id>, McpError)>,
    sse: bool,
) -> Reply {
    let incoming = match parsed {
        Ok(m) => m,
        Err((id, e)) => return refuse(world, server, None, id.as_ref(), e, sse),
    };
    match incoming {
        Incoming::Response { id, reply } => {
            // The answer to a legacy task's question; any other response is accepted and
            // ignored.
            if let Some(id) = id {
                task_result::answered(world, server, headers, &id, reply.as_ref());
            }
            Reply::now(empty(202))
        }
        Incoming::Notification { method, params } => {
            if method == "notifications/cancelled" {
                cancelled(world, server, headers, &params);
            }
            Reply::now(empty(202))
        }
        Incoming::Request { id, method, params } => {
            match request(world, server, headers, &id, &method, &params, sse) {
                Ok(reply) => reply,
                Err(e) => refuse(world, server, Some(&method), Some(&id), e, sse),
            }
        }
    }
}

/// A request, by method, in the era it was admitted under.
fn request(
    world: &World,
    server: &McpServer,
    headers: &HeaderMap,
    id: &Id,
    method: &str,
    params: &Value,
    sse: bool,
) -> Result<Reply, McpError> {
    if method == "initialize" && !(server.serves(MODERN) && era::modern_initialize(params)) {
        return initialize(world, server, id, params, sse);
    }
    let (era, let_pass) = era::admit(world, server, headers, method, params)?;
    for e in let_pass {
        let detail =
            json!({"method": method, "id": id, "code": e.code(), "message": e.to_string()});
        log(world, server, "header-violation", detail);
    }
    let modern = matches!(era, Era::Modern);
    let ok = |result: Value| {
        Reply::now(answer(
            200,
            rpc::result(id, complete(result, &era, server)),
            sse,
        ))
    };
    match method {
        "ping" if !modern => Ok(ok(json!({}))),
        "tools/list" => Ok(ok(tools_list(server, modern))),
        "server/discover" if modern => Ok(ok(discover(server))),
        "tools/call" => call::call(world, server, (&era, headers), id, params, sse),
        _ => {
            let c = task_rpc::Call::new(&era, id, params, sse, headers);
            if let Some(r) = task_rpc::method(world, server, c, method) {
                return r;
            }
            Err(McpError::MethodNotFound {
                method: method.to_string(),
                modern,
            })
        }
    }
}

/// A modern result names its type and the server (legacy results are as they were).
fn complete(mut result: Value, era: &Era, server: &McpServer) -> Value {
    if let (Era::Modern, Some(obj)) = (era, result.as_object_mut()) {
        obj.insert("resultType".into(), "complete".into());
        let meta = obj.entry("_meta").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            meta.insert(
                "io.modelcontextprotocol/serverInfo".into(),
                server_info(server),
            );
        }
    }
    result
}

/// The tools capability; `idempotency` (SEP-3182, a closed proposal) when a tool takes its key
/// from `params`; tasks when a tool runs them (legacy: the core capability, modern: the
/// extension).
fn capabilities(server: &McpServer, modern: bool) -> Value {
    let mut tools = json!({"listChanged": false});
    if server.keys_in_params() {
        tools["idempotency"] = json!({});
    }
    let mut caps = json!({"tools": tools});
    if server.tools.iter().any(|t| t.task.is_some()) {
        if modern {
            caps["extensions"] = json!({task::EXTENSION: {}});
        } else {
            caps["tasks"] = json!({"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}});
        }
    }
    caps
}

fn server_info(server: &McpServer) -> Value {
    json!({"name": &*server.name, "version": env!("CARGO_PKG_VERSION")})
}

/// Legacy handshake: the client's version if served, else the newest legacy one served; a new
/// session, recorded.
fn initialize(
    world: &World,
    server: &McpServer,
    id: &Id,
    params: &Value,
    sse: bool,
) -> Result<Reply, McpError> {
    let Some(requested) = params.get("protocolVersion").and_then(Value::as_str) else {
        let e = "initialize needs params.protocolVersion (a string)";
        return Err(McpError::InvalidParams(e.into()));
    };
    let asked = server.legacy_versions().find(|v| *v == requested);
    let Some(version) = asked.or_else(|| server.legacy_versions().max()) else {
        return Err(McpError::UnsupportedVersion {
            requested: requested.to_string(),
            supported: server.versions.clone(),
            modern: false,
        });
    };
    let session = world.extension::<Sessions>().open(&server.name, version);
    let detail = json!({
        "session": session, "protocol_version": version, "requested": requested,
        "client_info": params.get("clientInfo"), "id": id,
    });
    log(world, server, "initialize", detail);
    let result = json!({
        "protocolVersion": version,
        "capabilities": capabilities(server, false),
        "serverInfo": server_info(server),
    });
    let mut r = answer(200, rpc::result(id, result), sse);
    r.headers.push((SESSION_HEADER.into(), session.into()));
    Ok(Reply::now(r))
}

fn tools_list(server: &McpServer, modern: bool) -> Value {
    let tools: Vec<Value> = server
        .tools
        .iter()
        .map(|t| {
            let mut v = json!({"name": t.name, "inputSchema": t.input_schema});
            let optional = [
                ("title", t.title.clone().map(Value::from)),
                ("description", t.description.clone().map(Value::from)),
                (
                    "outputSchema",
                    t.output_schema.as_ref().map(|s| s.json().clone()),
                ),
                ("annotations", t.annotations.clone().map(Value::Object)),
            ];
            for (k, x) in optional {
                if let Some(x) = x {
                    v[k] = x;
                }
            }
            // The legacy era lists which tools take `params.task`; in the modern one the
            // server decides per call.
            if let (Some(spec), false) = (&t.task, modern) {
                let support = if spec.required {
                    "required"
                } else {
                    "optional"
                };
                v["execution"] = json!({"taskSupport": support});
            }
            v
        })
        .collect();
    let mut list = json!({"tools": tools});
    if modern {
        // Never cached by the client: a test may swap the scenario between calls.
        list["ttlMs"] = 0.into();
        list["cacheScope"] = "private".into();
    }
    list
}

/// Served only in the modern era, so to a server that serves it.
fn discover(server: &McpServer) -> Value {
    json!({
        "supportedVersions": [MODERN],
        "capabilities": capabilities(server, true),
        "ttlMs": 0,
        "cacheScope": "private",
    })
}

/// `DELETE` with a session id: the session ends (recorded); an unknown one is 404.
fn delete(world: &World, server: &McpServer, headers: &HeaderMap) -> Response {
    let Some(id) = headers.get(SESSION_HEADER).map(crate::service::header_text) else {
        let e = McpError::NoSession("DELETE needs the Mcp-Session-Id of the session to end".into());
        return e.response(None);
    };
    if !world.extension::<Sessions>().close(&server.name, &id) {
        let e = McpError::UnknownSession(id.into_owned());
        return e.response(None);
    }
    log(world, server, "session-closed", json!({"session": id}));
    empty(200)
}

/// `GET` with `Last-Event-ID` (legacy): the cut or delayed stream it names resumed, as
/// `resume` says: its answer replayed (a delayed one when it falls due, on the scenario clock),
/// or 404 (the event store "lost"). Recorded either way.
fn resume(world: &World, server: &McpServer, headers: &HeaderMap) -> Reply {
    // Read before the resumption is recorded: whoever sees the entry may move the clock.
    let now = world.clock.now();
    let Some(id) = headers.get(SESSION_HEADER).map(crate::service::header_text) else {
        let e = McpError::NoSession("a resumption names its session (Mcp-Session-Id)".into());
        return Reply::now(e.response(None));
    };
    let last = headers
        .get("last-event-id")
        .map(crate::service::header_text)
        .unwrap_or_default();
    // Event ids are `SEQ-N`: the stream is the action's (one of this session's calls), N its
    // place: 0 the priming event, 1 the answer, after which nothing follows.
    let (seq, n) = last.split_once('-').unwrap_or((&last, ""));
    let sessions = world.extension::<Sessions>();
    let target = seq
        .parse::<u64>()
        .ok()
        .filter(|seq| sessions.made(&server.name, &id, *seq));
    let after_answer = n.parse::<u64>().is_ok_and(|n| n >= 1);
    let kept = match (server.resume, target) {
        (Resume::Replay, Some(seq)) if !after_answer => sessions.stream_of(&server.name, &id, seq),
        _ => None,
    };
    let outcome = match (&kept, server.resume) {
        (Some(_), _) => "replayed",
        (None, _) if after_answer && target.is_some() => "nothing-after",
        (None, Resume::Lost) => "lost",
        (None, _) => "unknown",
    };
    let detail =
        json!({"session": id, "last_event_id": last, "target": target, "outcome": outcome});
    log(world, server, "resumed", detail);
    if outcome == "nothing-after" {
        // The stream ended with the answer the client names: an empty one says so.
        let mut r = answer(200, Value::Null, true);
        r.body.clear();
        return Reply::now(r);
    }
    let (Some((due, body)), Some(seq)) = (kept, target) else {
        return Reply::now(Response::own_error(
            404,
            format_args!("no stream to resume after event {last}"),
        ));
    };
    let mut response = answer(200, Value::Null, true);
    response.body = body;
    let mut reply = Reply::now(response);
    if due > now {
        (reply.plan, reply.seq, reply.stream) = (Plan::At(due), seq, true);
    }
    reply
}

/// `notifications/cancelled`: the call it names (by its session and request id), what the
/// server's policy did with it, recorded. `ignore`: the call stands. `honor`: an effect still
/// pending (an `apply-later` fate) is stopped; one already applied is too late.
fn cancelled(world: &World, server: &McpServer, headers: &HeaderMap, params: &Value) {
    let request_id = params.get("requestId");
    let session = headers.get(SESSION_HEADER).map(crate::service::header_text);
    let target = match (&session, request_id) {
        (Some(s), Some(r)) => {
            let text = serde_json::to_string(r).unwrap_or_default();
            world
                .extension::<Sessions>()
                .call_of(&server.name, s, &text)
        }
        _ => None,
    };
    let outcome = cancel_outcome(world, server.cancel, target);
    let detail = json!({
        "request_id": request_id, "reason": params.get("reason"), "session": session,
        "policy": server.cancel, "target": target,
        "outcome": outcome,
    });
    log(world, server, "cancelled", detail);
}

/// A protocol error: answered, and recorded as a refusal (nothing was executed).
fn refuse(
    world: &World,
    server: &McpServer,
    method: Option<&str>,
    id: Option<&Id>,
    e: McpError,
    sse: bool,
) -> Reply {
    let detail = json!({
        "method": method, "id": id, "code": e.code(), "message": e.to_string(),
        "http_status": e.http_status(),
    });
    log(world, server, "rpc-error", detail);
    // An error on another status than 200 is plain JSON: an HTTP-level refusal, not a stream.
    Reply::now(answer(
        e.http_status(),
        e.body(id),
        sse && e.http_status() == 200,
    ))
}

/// Append an entry of the server's own.
fn log(world: &World, server: &McpServer, event: &str, detail: Value) -> u64 {
    // Timed when appended.
    let mut rec = Record::agent_event(
        &format!("mcp/{}", server.name),
        event,
        std::time::Duration::ZERO,
        detail,
    );
    rec.actor = Some(format!("mcp:{}", server.name));
    world.append_now(rec)
}

fn empty(status: u16) -> Response {
    Response {
        status,
        headers: Vec::new(),
        body: Vec::new(),
    }
}

/// Whether the answer goes as an event stream: when the server's `responses` say so and the
/// client accepts one, or when the client does not take JSON.
fn wants_sse(server: &McpServer, headers: &HeaderMap) -> bool {
    let json = || accepts(headers, "application/json");
    accepts(headers, "text/event-stream") && (server.responses == Responses::Sse || !json())
}

/// A POST's `Accept`, if sent, must take JSON or an event stream (the answer is one of them),
/// and its `Content-Type`, if sent, must be JSON; an absent header is let be.
fn media_fits(headers: &HeaderMap) -> Result<(), McpError> {
    use crate::service::form::media_types;
    let text = |name| headers.get(name).map(crate::service::header_text);
    if let Some(accept) = text(hyper::header::ACCEPT) {
        let takes = [
            "application/json",
            "text/event-stream",
            "application/*",
            "text/*",
            "*/*",
        ];
        if !media_types(&accept).any(|m| takes.iter().any(|t| m.eq_ignore_ascii_case(t))) {
            return Err(McpError::Media(406, format!("Not Acceptable: the answer is application/json or text/event-stream, and Accept is {}", accept.to_ascii_lowercase())));
        }
    }
    if let Some(declared) = text(hyper::header::CONTENT_TYPE) {
        let first = media_types(&declared).next();
        if !first.is_some_and(|m| m.eq_ignore_ascii_case("application/json")) {
            return Err(McpError::Media(
                415,
                format!(
                    "Unsupported Media Type: the body is JSON-RPC (application/json), not {}",
                    declared.to_ascii_lowercase()
                ),
            ));
        }
    }
    Ok(())
}

/// Whether the client's `Accept` takes `media`.
fn accepts(headers: &HeaderMap, media: &str) -> bool {
    let mut values = headers.get_all(hyper::header::ACCEPT).iter();
    values.any(|v| crate::service::header_text(v).contains(media))
}

/// One SSE `message` event carrying a JSON-RPC message.
fn event(message: &Value) -> Vec<u8> {
    let mut body = b"event: message\ndata: ".to_vec();
    // A `Value` always serialises.
    let _ = serde_json::to_writer(&mut body, message);
    body.extend_from_slice(b"\n\n");
    body
}

/// A JSON-RPC message as the HTTP answer: JSON, or one SSE `message` event.
fn answer(status: u16, message: Value, sse: bool) -> Response {
    if !sse {
        return Response::json(status, &message);
    }
    let body = event(&message);
    Response {
        status,
        headers: vec![
            ("content-type".into(), "text/event-stream".into()),
            ("cache-control".into(), "no-cache".into()),
            ("x-accel-buffering".into(), "no".into()),
        ],
        body,
    }
}
