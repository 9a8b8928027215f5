//! The admin API under `/_admin/`: how a test harness reads the ledger, waits for entries, moves
//! the clock, resets the world and swaps the scenario. JSON in and out; every error is
//! `{"error": "...", "status": N}` with the status its [`AdminError`] variant carries.
//!
//! Admin requests are not part of the simulated world, so they are not recorded in the ledger.
//! The harness-level `ledger/wait` timeout is wall-clock time on purpose: it bounds how long a
//! test waits, not anything the world does, and must fire even on a manual clock.
//! Sits above `world`; the HTTP `server` calls [`handle`].

use std::time::Duration;

use serde_json::{json, Value};

use crate::clock::{format_duration, parse_duration, ClockError};
use crate::ledger::{Disposition, Filter, Record};
use crate::revision::Revision;
use crate::scenario::Scenario;
use crate::service::Response;
use crate::verify::{self, Claims};
use crate::world::{Host, SessionError, World};

mod metrics;

/// The OpenAPI 3 description of this API, served at `GET /_admin/openapi.json`.
pub const OPENAPI: &str = include_str!("openapi.json");

/// An admin request, already read off the wire.
pub struct AdminRequest<'a> {
    pub method: &'a str,
    /// Path below `/_admin`, e.g. `/ledger`.
    pub path: &'a str,
    pub query: Option<&'a str>,
    pub body: &'a [u8],
    /// The request carried the admin token (or none is required): it may create a session.
    pub authenticated: bool,
    /// The session named by a `/_s/NAME` URL prefix, if any (as `?session=NAME`).
    pub session: Option<&'a str>,
}

#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("no admin endpoint {method} /_admin{path}; see GET /_admin/openapi.json")]
    NotFound { method: String, path: String },
    #[error(
        "/_admin{path} does not take {method}; it takes {allow} (see GET /_admin/openapi.json)"
    )]
    MethodNotAllowed {
        method: String,
        path: String,
        allow: String,
    },
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    TooManySessions(String),
}

impl AdminError {
    pub fn status(&self) -> u16 {
        match self {
            AdminError::NotFound { .. } => 404,
            AdminError::MethodNotAllowed { .. } => 405,
            AdminError::BadRequest(_) => 400,
            AdminError::Conflict(_) => 409,
            AdminError::TooManySessions(_) => 429,
        }
    }

    pub fn to_response(&self) -> Response {
        let mut r = Response::own_error(self.status(), self);
        if let AdminError::MethodNotAllowed { allow, .. } = self {
            r.headers.push(("allow".into(), allow.clone().into()));
        }
        r
    }
}

impl From<SessionError> for AdminError {
    fn from(e: SessionError) -> Self {
        match e {
            SessionError::BadName(_) => AdminError::BadRequest(e.to_string()),
            SessionError::TooMany(_) => AdminError::TooManySessions(e.to_string()),
        }
    }
}

impl From<ClockError> for AdminError {
    fn from(e: ClockError) -> Self {
        match e {
            ClockError::NotManual => AdminError::Conflict(e.to_string()),
            ClockError::TooFar => AdminError::BadRequest(format!("by: {e}")),
        }
    }
}

/// Serve one admin request.
/// `urls` are the server's base URL and its gRPC listener's address, if it has one.
pub async fn handle(host: &Host, urls: (&str, Option<&str>), req: AdminRequest<'_>) -> Response {
    let routed = route(host, urls, &req).await;
    routed.unwrap_or_else(|e| e.to_response())
}

async fn route(
    host: &Host,
    (base_url, grpc): (&str, Option<&str>),
    req: &AdminRequest<'_>,
) -> Result<Response, AdminError> {
    let mut params = parse_query(req.query.unwrap_or(""))?;
    // `?session=NAME` picks the session's world; it is not a filter.
    let session = params
        .iter()
        .position(|(k, _)| k == "session")
        .map(|i| params.remove(i).1);
    let session = match (req.session, session.as_deref()) {
        (Some(p), Some(q)) if !crate::world::same_session(Some(p), Some(q)) => {
            return Err(AdminError::BadRequest(format!(
                "the URL's /_s/{p}/ prefix and ?session={q} name different sessions: give one, or the same in both"
            )))
        }
        (p, q) => p.or(q),
    };
    if (req.method, req.path) == ("GET", "/metrics") {
        return Ok(ok(
            "text/plain; version=0.0.4",
            metrics::render(host).into_bytes(),
        ));
    }
    if (req.method, req.path) == ("GET", "/sessions") {
        return Ok(Response::json(
            200,
            &json!({"sessions": host.session_names(), "max": host.limits().max_sessions}),
        ));
    }
    // Reads look at a session without creating it; what changes a world (or waits on one)
    // creates it on first use, and only an authenticated request gets that far.
    let reads = matches!(
        req.path,
        "/health"
            | "/ledger"
            | "/ledger.jsonl"
            | "/clock"
            | "/verify"
            | "/verify.txt"
            | "/report"
            | "/openapi.json"
    ) && req.method == "GET";
    // Nor does dropping one: a session never used is not made only to be ended.
    let drops = (req.method, req.path) == ("POST", "/reset")
        && params.iter().any(|(k, v)| k == "drop" && v == "true");
    let world = if reads || drops || !req.authenticated {
        host.view_of(session)?
    } else {
        host.world_for(session)?
    };
    match (req.method, req.path) {
        ("GET", "/health") => Ok(health(host, &world)),
        ("GET", "/ledger") => {
            let filter = filter_from(&params, &[])?;
            Ok(Response::json_of(
                200,
                &Entries {
                    entries: world.entries(&filter),
                },
            ))
        }
        ("GET", "/ledger.jsonl") => ledger_jsonl(&world, &filter_from(&params, &[])?),
        ("GET", "/ledger/wait") => wait(&world, &params).await,
        ("POST", "/reset") => {
            let mut drop = false;
            for (_, v) in params.iter().filter(|(k, _)| k == "drop") {
                // Only `true` and `false` parse as a bool.
                drop = v.parse().map_err(|_| {
                    AdminError::BadRequest(format!("drop: expected true or false, found \"{v}\""))
                })?;
            }
            reset(host, session, drop)
        }
        ("GET", "/clock") => Ok(Response::json(200, &clock_view(&world))),
        ("POST", "/clock/advance") => advance(&world, req.body).await,
        ("POST", "/scenario") => replace_scenario(host, session, (base_url, grpc), req.body).await,
        ("POST", "/revision") => declare_revision(&world, req.body),
        ("POST", "/claims") => declare_claims(&world, req.body),
        ("GET", "/verify") => Ok(Response::json_of(200, &verdict(host, &world).1)),
        // The verdict as `doubleagent verify` prints it, for harnesses' failure messages.
        ("GET", "/verify.txt") => {
            let (entries, report) = verdict(host, &world);
            Ok(ok(
                "text/plain; charset=utf-8",
                report.human(&entries).into_bytes(),
            ))
        }
        ("GET", "/report") => Ok(report(&world)),
        ("GET", "/openapi.json") => Ok(ok("application/json", OPENAPI.as_bytes().to_vec())),
        (m, p) => Err(match allowed(p) {
            Some(allow) => AdminError::MethodNotAllowed {
                method: m.into(),
                path: p.into(),
                allow,
            },
            None => AdminError::NotFound {
                method: m.into(),
                path: p.into(),
            },
        }),
    }
}

/// A 200 answer of `content_type`.
fn ok(content_type: &'static str, body: Vec<u8>) -> Response {
    Response {
        status: 200,
        headers: vec![("content-type".into(), content_type.into())],
        body,
    }
}

/// The methods an admin path takes, from the OpenAPI document (the one list of endpoints), or
/// `None` for a path there is not.
fn allowed(path: &str) -> Option<String> {
    static PATHS: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    let doc = PATHS.get_or_init(|| serde_json::from_str(OPENAPI).unwrap_or(Value::Null));
    let ops = doc
        .get("paths")?
        .get(format!("/_admin{path}"))?
        .as_object()?;
    let methods: Vec<String> = ops
        .keys()
        .filter(|m| ["get", "post", "put", "delete", "patch"].contains(&m.as_str()))
        .map(|m| m.to_uppercase())
        .collect();
    (!methods.is_empty()).then(|| methods.join(", "))
}

/// The session's ledger and its verdict (counted in the metrics).
fn verdict(host: &Host, world: &World) -> (Vec<crate::ledger::Entry>, verify::Report) {
    let entries = world.entries(&Filter::default());
    let report = verify::verify(&entries, None);
    host.record_findings(report.findings.iter().map(|f| f.rule.as_str()));
    (entries, report)
}

fn health(host: &Host, world: &World) -> Response {
    let (entries, evicted) = {
        let state = world.lock();
        (state.ledger.len(), state.ledger.evicted())
    };
    let journal = host.journal_status();
    let failing = journal.as_ref().is_some_and(|j| j.failing);
    Response::json(
        if failing { 503 } else { 200 },
        &json!({
            "status": if failing { "journal-failing" } else { "ok" },
            "journal": journal,
            "scenario": world.scenario.name,
            "clock": world.clock.kind(),
            "now": world.clock.rfc3339(world.clock.now()),
            "entries": entries,
            "evicted": evicted,
            "max_entries": host.limits().max_entries,
            "seed": world.seed,
            "session": world.session.as_deref().unwrap_or("default"),
            "sessions": host.session_names().len(),
        }),
    )
}

/// The ledger as JSON lines, one entry a line (the verifier's file format).
fn ledger_jsonl(world: &World, filter: &Filter) -> Result<Response, AdminError> {
    let mut body = Vec::new();
    for e in world.entries(filter) {
        serde_json::to_writer(&mut body, &e).map_err(|e| AdminError::BadRequest(e.to_string()))?;
        body.push(b'\n');
    }
    Ok(ok("application/x-ndjson", body))
}

/// A fresh world for the session (or, with `drop=true`, the named session gone).
fn reset(host: &Host, session: Option<&str>, drop: bool) -> Result<Response, AdminError> {
    if let (true, Some(name)) = (drop, session) {
        let existed = host.drop_session(name);
        return Ok(Response::json(
            200,
            &json!({"status": "dropped", "session": name, "existed": existed}),
        ));
    }
    let w = host.reset(session)?;
    Ok(Response::json(
        200,
        &json!({"status": "reset", "scenario": w.scenario.name}),
    ))
}

async fn advance(world: &World, body: &[u8]) -> Result<Response, AdminError> {
    let body: Value = serde_json::from_slice(body)
        .map_err(|e| AdminError::BadRequest(format!("the body is not valid JSON: {e}")))?;
    let by = body.get("by").and_then(Value::as_str).ok_or_else(|| {
        AdminError::BadRequest("expected a JSON body like {\"by\": \"25h\"}".into())
    })?;
    let by = parse_duration(by).map_err(|e| AdminError::BadRequest(format!("by: {e}")))?;
    let now = world.clock.advance(by).await?;
    world.note(|session| crate::journal::Line::Clock { session, now });
    Ok(Response::json(200, &clock_view(world)))
}

async fn replace_scenario(
    host: &Host,
    session: Option<&str>,
    (base_url, grpc): (&str, Option<&str>),
    body: &[u8],
) -> Result<Response, AdminError> {
    let text = std::str::from_utf8(body)
        .map_err(|_| AdminError::BadRequest("the scenario must be UTF-8 TOML text".into()))?;
    if text.trim().is_empty() {
        // Valid TOML, but almost certainly a mistake: it would leave a world with nothing in it.
        return Err(AdminError::BadRequest(
            "the request body is empty: send the scenario's TOML text; nothing changed".into(),
        ));
    }
    // Validation is CPU work that grows with the scenario: off the threads serving requests.
    let text = text.to_string();
    let scenario =
        tokio::task::spawn_blocking(move || Scenario::from_toml(&text, "<request body>"))
            .await
            .map_err(|e| {
                AdminError::BadRequest(format!("the scenario could not be validated: {e}"))
            })?
            .map_err(|e| AdminError::BadRequest(e.to_string()))?;
    // The gRPC listener is opened at start only. Without one, an agent serving every binding
    // (the default) is served over the other two, its card saying so; one that names GRPC in its
    // bindings would not be served as asked.
    if grpc.is_none() && scenario.names_grpc() {
        return Err(AdminError::BadRequest("an A2A agent of this scenario names the GRPC binding, but this server has no gRPC listener: its startup scenario served no gRPC. Start the server with --grpc-listen HOST:PORT, or leave GRPC out of the agent's bindings; nothing changed".into()));
    }
    let w = host.replace(session, scenario.into())?;
    let ready = Ready {
        grpc: grpc.map(str::to_string),
        ..Ready::of(&w, base_url)
    };
    Ok(Response::json_of(200, &ready))
}

/// The orchestrator's own account, kept as a ledger entry for the verifier.
fn declare_claims(world: &World, body: &[u8]) -> Result<Response, AdminError> {
    let claims = Claims::parse(body).map_err(|e| AdminError::BadRequest(e.to_string()))?;
    let detail =
        serde_json::to_value(&claims).map_err(|e| AdminError::BadRequest(e.to_string()))?;
    let rec = Record::declaration("claims", world.clock.now(), detail);
    let seq = world.lock().ledger.append(rec);
    Ok(Response::json(
        200,
        &json!({
            "seq": seq,
            "actions": claims.actions.len(),
            "tasks": claims.tasks.len(),
            "adopted": claims.adopted.len(),
        }),
    ))
}

fn report(world: &World) -> Response {
    let entries = world.entries(&Filter::default());
    let report = verify::verify(&entries, None);
    let title = format!(
        "{} ({})",
        world.scenario.name,
        world.session.as_deref().unwrap_or("default session")
    );
    let page = crate::report::render(&title, &entries, &report);
    ok("text/html; charset=utf-8", page.into_bytes())
}

/// `{"entries": [...]}` with each entry's fields in their documented order.
#[derive(serde::Serialize)]
struct Entries {
    entries: Vec<crate::ledger::Entry>,
}

/// The ready line: event, url, scenario, services — in that order on the wire.
#[derive(serde::Serialize)]
pub struct Ready {
    pub event: &'static str,
    pub url: String,
    pub scenario: String,
    pub services: serde_json::Map<String, Value>,
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    pub agents: serde_json::Map<String, Value>,
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    pub mcp: serde_json::Map<String, Value>,
    /// The gRPC listener's `host:port`, when one serves the A2A agents.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grpc: Option<String>,
}

impl Ready {
    /// The ready JSON of `world` on a server at `base_url`; a named session's URLs carry its
    /// `/_s/NAME` prefix.
    pub fn of(world: &World, base_url: &str) -> Ready {
        let url = world.url(base_url);
        let urls = |under: &str, names: Vec<&str>| -> serde_json::Map<String, Value> {
            let at = |n: &str| Value::from(format!("{url}{under}/{n}"));
            names.into_iter().map(|n| (n.to_string(), at(n))).collect()
        };
        let sc = &world.scenario;
        Ready {
            event: "ready",
            services: urls("", sc.services.iter().map(|s| &*s.name).collect()),
            agents: urls("/agents", sc.agents.iter().map(|a| &*a.name).collect()),
            mcp: urls("/mcp", sc.mcp.iter().map(|m| &*m.name).collect()),
            scenario: sc.name.clone(),
            grpc: None,
            url,
        }
    }

    /// The one-line JSON text printed on stdout.
    pub fn line(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

fn clock_view(world: &World) -> Value {
    let now = world.clock.now();
    json!({
        "kind": world.clock.kind(),
        "now": world.clock.rfc3339(now),
        "elapsed": format_duration(now),
        "elapsed_ms": now.as_millis() as u64,
    })
}

/// The longest `ledger/wait` may park a connection.
const MAX_WAIT: Duration = Duration::from_secs(300);

async fn wait(world: &World, params: &[(String, String)]) -> Result<Response, AdminError> {
    let filter = filter_from(params, &["count", "timeout"])?;
    let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let count: usize = match get("count") {
        Some(c) => c.parse().map_err(|_| {
            AdminError::BadRequest(format!("count: expected a number, found \"{c}\""))
        })?,
        None => 1,
    };
    let timeout = match get("timeout") {
        Some(t) => {
            parse_duration(t).map_err(|e| AdminError::BadRequest(format!("timeout: {e}")))?
        }
        None => Duration::from_secs(10),
    };
    // Refused only when it would park: an already satisfied wait answers at once.
    if timeout > MAX_WAIT && world.count(&filter) < count {
        return Err(AdminError::BadRequest(format!(
            "timeout: at most {} (a longer wait holds a connection for nothing; wait again instead)",
            format_duration(MAX_WAIT)
        )));
    }
    let mut appended = world.lock().ledger.subscribe();
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        appended.borrow_and_update();
        let entries = world.entries(&filter);
        if entries.len() >= count {
            return Ok(Response::json_of(200, &Entries { entries }));
        }
        let changed = tokio::time::timeout_at(deadline, appended.changed()).await;
        // The world was replaced (its ledger dropped) or time ran out.
        if !matches!(changed, Ok(Ok(()))) {
            break;
        }
    }
    let entries = world.entries(&filter);
    Ok(Response::json(
        408,
        &json!({
            "error": format!("timed out after {} with {} of {count} matching entries", format_duration(timeout), entries.len()),
            "status": 408,
            "entries": entries,
        }),
    ))
}

/// `{"revision": 2, "work_id": "w-1"}`: record that a revision took over (for one work item, or
/// for all when `work_id` is absent).
fn declare_revision(world: &World, body: &[u8]) -> Result<Response, AdminError> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Decl {
        revision: Revision,
        work_id: Option<String>,
    }
    let expected = "expected a JSON body like {\"revision\": 2, \"work_id\": \"optional\"}";
    let d: Decl = serde_json::from_slice(body)
        .map_err(|e| AdminError::BadRequest(format!("{expected}: {e}")))?;
    // A declaration is the order itself: one that cannot be ordered would declare nothing.
    if d.revision.ordinal().is_none() {
        return Err(AdminError::BadRequest(format!(
            "{expected}: the revision must be a whole number (2, 2.0 or \"2\"), found {}",
            d.revision
        )));
    }
    let mut rec = Record::declaration(
        "revision",
        world.clock.now(),
        json!({"revision": d.revision, "work_id": d.work_id}),
    );
    rec.revision = Some(d.revision.clone());
    rec.work_id = d.work_id.clone();
    let seq = world.lock().ledger.append(rec);
    Ok(Response::json(
        200,
        &json!({"seq": seq, "revision": d.revision, "work_id": d.work_id}),
    ))
}

const FILTERS: &[&str] = &[
    "service",
    "route",
    "key",
    "work_id",
    "since",
    "disposition",
    "event",
    "actor",
];

fn filter_from(params: &[(String, String)], extra: &[&str]) -> Result<Filter, AdminError> {
    let mut f = Filter::default();
    for (k, v) in params {
        match k.as_str() {
            "service" => f.service = Some(v.clone()),
            "route" => f.route = Some(v.clone()),
            "key" => f.key = Some(v.clone()),
            "work_id" => f.work_id = Some(v.clone()),
            "event" => f.event = Some(v.clone()),
            "actor" => f.actor = Some(v.clone()),
            "since" => {
                f.since = Some(v.parse().map_err(|_| {
                    AdminError::BadRequest(format!("since: expected a ledger seq, found \"{v}\""))
                })?)
            }
            "disposition" => {
                f.disposition = Some(
                    serde_json::from_value::<Disposition>(Value::from(v.clone())).map_err(
                        |_| AdminError::BadRequest(format!("disposition: unknown value \"{v}\"")),
                    )?,
                )
            }
            k if extra.contains(&k) => {}
            k => {
                let known: Vec<&str> = FILTERS.iter().chain(extra).copied().collect();
                return Err(AdminError::BadRequest(format!(
                    "unknown query parameter \"{k}\"{}; known: {}",
                    crate::scenario::did_you_mean(k, known.iter().copied()),
                    known.join(", ")
                )));
            }
        }
    }
    Ok(f)
}

/// `a=1&b=x%20y` → pairs, percent- and plus-decoded.
fn parse_query(q: &str) -> Result<Vec<(String, String)>, AdminError> {
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            Ok((decode(k)?, decode(v)?))
        })
        .collect()
}

fn decode(s: &str) -> Result<String, AdminError> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = s
                    .get(i + 1..i + 3)
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                let b = hex.ok_or_else(|| {
                    AdminError::BadRequest(format!("bad percent-encoding in \"{s}\""))
                })?;
                out.push(b);
                i += 2;
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8(out)
        .map_err(|_| AdminError::BadRequest(format!("query value \"{s}\" is not UTF-8")))
}
