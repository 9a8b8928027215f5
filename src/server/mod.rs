//! The HTTP server: accepts connections, routes `/_admin/*` to [`crate::admin`] and
//! `/<service>/*` to [`crate::service`], and carries out each response's delivery plan on the
//! socket — including the ones a normal server never does on purpose: close without answering,
//! reset, or hold the connection open.
//!
//! A drop or reset goes through [`Conn`] (see there): not one byte of the placeholder response
//! hyper is handed reaches the client. [`serve`] runs on a listener the caller bound until the
//! caller's shutdown future resolves; [`Server`] is the in-process handle for Rust tests.

mod body;
mod conn;
pub mod grpc;
mod handle;

pub use handle::{Server, StartError};

use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use hyper::body::{Body, Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use body::{streamed, to_hyper, ChannelBody, CutBody, HttpBody, ReadyBody};
use conn::{Conn, ConnCtl, DROP, RESET};

use crate::admin::{self, AdminRequest};
use crate::agent::{self, AgentRequest, Reply};
use crate::journal::Line;
use crate::service::{self, Plan, Request, Response};
use crate::world::{Host, World};

/// What a running server shares with its connections.
pub struct App {
    pub host: Host,
    pub base_url: String,
    /// How long pending (delayed) responses may still be sent after shutdown begins.
    pub drain: Duration,
    /// Bearer token required on `/_admin/*` (health excepted), if set.
    pub admin_token: Option<String>,
    /// How long a client may take to send a request's head, and how long a kept-alive
    /// connection may wait for its next request (wall clock: an operational bound). A request
    /// being handled (a hung fate, a delayed response) is not subject to it.
    pub header_read_timeout: Duration,
    /// Connections open at once; beyond it new ones wait in the listen queue.
    pub max_connections: usize,
    /// The gRPC listener's `host:port`, when one serves the A2A agents (see [`grpc`]).
    pub grpc: Option<String>,
}

impl App {
    pub fn new(host: Host, base_url: String) -> App {
        App {
            host,
            base_url,
            drain: Duration::from_secs(5),
            admin_token: None,
            header_read_timeout: Duration::from_secs(30),
            max_connections: 4096,
            grpc: None,
        }
    }

    /// The ready JSON of `world` on this server (with its gRPC listener).
    pub fn ready(&self, world: &World) -> admin::Ready {
        admin::Ready {
            grpc: self.grpc.clone(),
            ..admin::Ready::of(world, &self.base_url)
        }
    }

    /// Whether a request carries the admin token (true when none is required). The SHA-256
    /// digests are compared, with `subtle`'s constant-time equality: equal-length digests make
    /// the time independent of both the content and the length of what was sent.
    fn authenticated(&self, headers: &hyper::HeaderMap) -> bool {
        use sha2::{Digest, Sha256};
        use subtle::ConstantTimeEq;
        let Some(token) = &self.admin_token else {
            return true;
        };
        let given = headers
            .get(hyper::header::AUTHORIZATION)
            .and_then(|v| bearer(v.as_bytes()))
            .unwrap_or(b"");
        Sha256::digest(given)
            .ct_eq(&Sha256::digest(token.as_bytes()))
            .into()
    }
}

/// The credentials of a `Bearer` authorization (the scheme's name is case-insensitive).
fn bearer(value: &[u8]) -> Option<&[u8]> {
    let (scheme, rest) = value.split_at_checked(7)?;
    scheme.eq_ignore_ascii_case(b"bearer ").then_some(rest)
}

static SESSION_HEADER: hyper::header::HeaderName =
    hyper::header::HeaderName::from_static("x-doubleagent-session");

/// A `/_s/NAME/...` URL picks session NAME as the header does, so code under test needs only a
/// base URL: the prefix's session (if any) and the path below it.
fn strip_session(path: &str) -> (Option<&str>, &str) {
    let Some(rest) = path.strip_prefix("/_s/") else {
        return (None, path);
    };
    let (session, below) = first_segment(rest, "/");
    (Some(session), below)
}

/// `s` split before its first `/` (`or` as the rest when it has none).
fn first_segment<'a>(s: &'a str, or: &'a str) -> (&'a str, &'a str) {
    s.find('/').map_or((s, or), |i| s.split_at(i))
}

/// The session of a request to a service or agent: its URL prefix's or its
/// `X-Doubleagent-Session` header's, which must agree when both are given.
fn pick_session<'a>(
    prefix: Option<&'a str>,
    headers: &'a hyper::HeaderMap,
) -> Result<Option<&'a str>, Response> {
    let header =
        service::header_value(headers, &SESSION_HEADER).map(|v| v.to_str().unwrap_or("\u{fffd}"));
    match (prefix, header) {
        (Some(p), Some(h)) if !crate::world::same_session(Some(p), Some(h)) => Err(
            Response::own_error(400, format_args!("the URL's /_s/{p}/ prefix and the X-Doubleagent-Session header ({h}) name different sessions: send one, or the same in both")),
        ),
        (p, h) => Ok(p.or(h)),
    }
}

/// Serve connections from `listener` until `shutdown` resolves, then stop accepting, release hung
/// connections, let delayed responses finish for up to `app.drain`, and return.
pub async fn serve(listener: TcpListener, app: Arc<App>, shutdown: impl Future<Output = ()>) {
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    tokio::pin!(shutdown);
    // Idle sessions are dropped on the wall clock: session lifetime is operations, not the
    // simulated world.
    let sweeper = {
        let app = app.clone();
        let every = (app.host.limits().session_ttl / 4)
            .clamp(Duration::from_millis(10), Duration::from_secs(60));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tick.tick().await;
                let gone = app.host.sweep();
                if gone > 0 {
                    tracing::info!(sessions = gone, "dropped idle sessions");
                }
            }
        })
    };
    let slots = Arc::new(tokio::sync::Semaphore::new(app.max_connections.max(1)));
    loop {
        // A slot first: at the cap, new connections wait in the kernel's queue instead of
        // each taking a descriptor.
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => slot,
            _ = &mut shutdown => break,
        };
        let Ok(slot) = slot else { break };
        tokio::select! {
            accepted = listener.accept() => {
                let stream = match accepted {
                    Ok((s, _)) => s,
                    Err(e) => {
                        // Out of file descriptors and the like: back off instead of spinning.
                        tracing::warn!(error = %e, "accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                };
                // Only latency rides on it; a socket that refuses it still serves.
                let _ = stream.set_nodelay(true);
                let ctl = Arc::new(ConnCtl::default());
                let io = TokioIo::new(Conn { stream, ctl: ctl.clone() });
                let header_timeout = app.header_read_timeout;
                let app = app.clone();
                let svc = service_fn(move |req| {
                    let (app, ctl) = (app.clone(), ctl.clone());
                    let held = ctl.hold();
                    crate::journal::scope(async move {
                        let response = journaled(handle(&app, &ctl, req).await);
                        drop(held);
                        Ok::<_, Infallible>(response)
                    })
                });
                let conn = http1::Builder::new()
                    .keep_alive(true)
                    .timer(hyper_util::rt::TokioTimer::new())
                    .header_read_timeout(header_timeout)
                    .serve_connection(io, svc);
                let fut = graceful.watch(conn);
                tokio::spawn(async move {
                    if let Err(e) = fut.await {
                        tracing::trace!(error = %e, "connection ended");
                    }
                    drop(slot);
                });
            }
            _ = &mut shutdown => break,
        }
    }
    drop(listener);
    sweeper.abort();
    app.host.stop();
    if tokio::time::timeout(app.drain, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(drain = ?app.drain, "drain timeout: closing connections with responses still pending");
    }
    app.host.close_all();
}

/// A request's answer, unless the journal failed to take a line its handling wrote: then 503,
/// so nothing is acknowledged that a restart would not find (the ledger in memory records the
/// 503). Called inside [`crate::journal::scope`].
fn journaled(response: hyper::Response<HttpBody>) -> hyper::Response<HttpBody> {
    if !crate::journal::write_failed() {
        return response;
    }
    to_hyper(Response::own_error(503, "the journal could not write this request's entry (is the disk full?); it was not acknowledged, retry later"))
}

async fn handle(
    app: &App,
    ctl: &ConnCtl,
    req: hyper::Request<Incoming>,
) -> hyper::Response<HttpBody> {
    // Split once: the path is borrowed from the URI while the body is read and the headers move
    // on, so a request's strings are copied only into what it keeps.
    let (parts, body) = req.into_parts();
    let (prefix, path) = strip_session(parts.uri.path());
    if let Some(rest) = path.strip_prefix("/_admin") {
        if rest.is_empty() || rest.starts_with('/') {
            // Boxed, as the agents' below: their futures are large, and kept inline they would
            // make every fake-service request's future as large (it is moved per request).
            return Box::pin(admin_request(app, ctl, &parts, rest, prefix, body)).await;
        }
    }
    let world = match world_of(app, prefix, &parts.headers, path) {
        Ok(w) => w,
        Err(r) => return to_hyper(r),
    };
    if path == "/" {
        if !matches!(parts.method, hyper::Method::GET | hyper::Method::HEAD) {
            let mut r = Response::own_error(
                405,
                format_args!(
                    "the root (the ready JSON) does not take {}; it takes GET",
                    parts.method
                ),
            );
            r.headers.push(("allow".into(), "GET, HEAD".into()));
            return to_hyper(r);
        }
        return to_hyper(Response::json_of(200, &app.ready(&world)));
    }
    if let Some(rest) = path.strip_prefix("/agents/") {
        let head = (&parts.method, parts.uri.query(), parts.headers);
        return Box::pin(agent_request(app, ctl, world, head, rest, body)).await;
    }
    if let Some(name) = path.strip_prefix("/mcp/") {
        let head = (parts.method, parts.headers);
        return Box::pin(mcp_request(app, ctl, world, head, name, body)).await;
    }
    let (svc, rest) = first_segment(path.trim_start_matches('/'), "/");
    // A client that went away mid-body still gets its request recorded (but not executed).
    let read = read_incoming(body, world.scenario.max_body_bytes, ctl).await;
    let incomplete = read.is_err();
    let (body, too_large) = read.unwrap_or_default();
    let sreq = Request {
        service: svc.into(),
        method: parts.method.as_str().into(),
        path: rest.into(),
        headers: parts.headers,
        body,
        too_large,
        incomplete,
        ..Request::default()
    };
    let out = service::admit(&world, sreq);
    match out.plan {
        Plan::Now => to_hyper(out.response),
        // Boxed for the same reason as the agents' futures: only these wait.
        plan => Box::pin(deliver(app, &world, ctl, plan, out.seq, out.response)).await,
    }
}

/// `/_admin/...`: the token checked (health stays open for probes, and creates no session
/// without it), the body read (capped), then the admin API.
async fn admin_request(
    app: &App,
    ctl: &ConnCtl,
    parts: &hyper::http::request::Parts,
    rest: &str,
    prefix: Option<&str>,
    body: Incoming,
) -> hyper::Response<HttpBody> {
    let authenticated = app.authenticated(&parts.headers);
    if !authenticated && rest != "/health" {
        let mut r = Response::own_error(401, "the admin API needs the admin token: send `Authorization: Bearer <token>` (the token given by --admin-token or DOUBLEAGENT_ADMIN_TOKEN)");
        r.headers.push(("www-authenticate".into(), "Bearer".into()));
        return to_hyper(r);
    }
    let body = match read_incoming(body, 16 << 20, ctl).await {
        Ok((b, false)) => b,
        _ => return to_hyper(Response::own_error(413, "admin request body too large")),
    };
    let areq = AdminRequest {
        method: parts.method.as_str(),
        path: rest,
        query: parts.uri.query(),
        body: &body,
        authenticated,
        session: prefix,
    };
    let urls = (app.base_url.as_str(), app.grpc.as_deref());
    if rest != "/ledger/wait" {
        return to_hyper(admin::handle(&app.host, urls, areq).await);
    }
    // A long-poll is released as the server stops, not held for the whole drain.
    tokio::select! {
        r = admin::handle(&app.host, urls, areq) => to_hyper(r),
        _ = app.host.stopping() => to_hyper(Response::own_error(503, "the server is stopping: this ledger/wait ended before its entries arrived")),
    }
}

/// The world a fake-service or agent request belongs to, by its `/_s/NAME` prefix or header.
/// The root only describes a session: it creates none.
fn world_of(
    app: &App,
    prefix: Option<&str>,
    headers: &hyper::HeaderMap,
    path: &str,
) -> Result<Arc<World>, Response> {
    let session = pick_session(prefix, headers)?;
    let world = if path == "/" {
        app.host.view_of(session)
    } else {
        app.host.world_for(session)
    };
    // As the admin API answers a bad or surplus session: 400 or 429.
    world.map_err(|e| admin::AdminError::from(e).to_response())
}

/// `/agents/NAME/...`: the body read (capped), then the agent; its answer whole or streamed.
async fn agent_request(
    app: &App,
    ctl: &ConnCtl,
    world: Arc<World>,
    (method, query, headers): (&hyper::Method, Option<&str>, hyper::HeaderMap),
    rest: &str,
    body: Incoming,
) -> hyper::Response<HttpBody> {
    let (name, sub) = first_segment(rest, "");
    // A body over the cap is the agent's to refuse, in its protocol's shape and recorded.
    let cap = world.scenario.max_body_bytes;
    let (body, too_large) = read_incoming(body, cap, ctl).await.unwrap_or_default();
    let areq = AgentRequest {
        method: method.clone(),
        path: sub.to_string(),
        query: query.map(str::to_string),
        headers,
        body,
        too_large,
    };
    match agent::handle(world, (&app.base_url, app.grpc.as_deref()), name, areq).await {
        Reply::Full(r) => to_hyper(r),
        Reply::Stream {
            status,
            headers,
            body,
        } => streamed(status, headers, HttpBody::Channel(ChannelBody(body))),
        Reply::Ready {
            status,
            headers,
            body,
        } => streamed(status, headers, HttpBody::Ready(ReadyBody(Some(body)))),
    }
}

/// `/mcp/NAME`: the body read (capped), then the MCP server; its answer delivered by the plan
/// a tool call's action was given, exactly as a service's answer is.
async fn mcp_request(
    app: &App,
    ctl: &ConnCtl,
    world: Arc<World>,
    (method, headers): (hyper::Method, hyper::HeaderMap),
    name: &str,
    body: Incoming,
) -> hyper::Response<HttpBody> {
    // A body over the cap is the MCP server's to refuse, in JSON-RPC's shape and recorded.
    let cap = world.scenario.max_body_bytes;
    let (body, too_large) = read_incoming(body, cap, ctl).await.unwrap_or_default();
    let req = crate::mcp::McpRequest {
        method,
        headers,
        body,
        too_large,
    };
    let mut reply = crate::mcp::handle(&world, name, req);
    if let Some(later) = reply.later.take() {
        let (tx, mut rx) = tokio::sync::mpsc::channel(4);
        if !later.streams() {
            // One JSON answer, sent whole once made, as a held answer is; the connection
            // dropped if the world closed first.
            later.run(&world, &tx).await;
            drop(tx);
            let mut r = reply.response;
            let plan = match rx.recv().await {
                Some(body) => {
                    r.body = body.to_vec();
                    Plan::Now
                }
                None => Plan::Drop,
            };
            return deliver(app, &world, ctl, plan, 0, r).await;
        }
        // Its events come as the task goes on; a client that stops reading ends it.
        tokio::spawn(async move {
            tokio::select! {
                _ = later.run(&world, &tx) => {}
                _ = tx.closed() => {}
            }
        });
        let r = reply.response;
        return streamed(r.status, r.headers, HttpBody::Channel(ChannelBody(rx)));
    }
    let (mut r, lead) = (reply.response, reply.lead);
    match (reply.stream, reply.plan) {
        // An event stream's headers (and lead events) go out at once: a drop cuts the stream
        // there, a delay holds it open.
        (true, Plan::Drop) => {
            let cut = CutBody::after(lead.map(Bytes::from), reply.primed);
            streamed(r.status, r.headers, HttpBody::Cut(cut))
        }
        (true, Plan::At(t)) => {
            let (tx, rx) = tokio::sync::mpsc::channel(2);
            if let Some(l) = lead {
                // The channel is new and has room for two.
                let _ = tx.try_send(l.into());
            }
            let (seq, body) = (reply.seq, r.body);
            let cancels = reply.close_cancels.then(|| name.to_string());
            let progress = reply.progress;
            // Read now: the spawned task may first run after the clock has moved on.
            let start = world.clock.now();
            tokio::spawn(async move {
                tokio::select! {
                    // A closed world ends the stream without its answer.
                    due = mcp_wait(&world, (start, t), progress.as_ref(), &tx) => {
                        // Journaled before it is sent (see `Line::Delivered`); unsent if that fails.
                        let sent = due
                            && world.note(|session| Line::Delivered { session, seq })
                            && tx.send(body.into()).await.is_ok();
                        if due && !sent {
                            world.abandon(seq);
                        }
                    }
                    // The client closed the stream first: it never sees the answer (for a
                    // modern client, the spec's way to cancel).
                    _ = tx.closed() => {
                        world.abandon(seq);
                        if let Some(name) = cancels {
                            crate::mcp::stream_closed(&world, &name, seq);
                        }
                    }
                }
            });
            streamed(r.status, r.headers, HttpBody::Channel(ChannelBody(rx)))
        }
        (_, plan) => {
            if let Some(mut l) = lead {
                l.append(&mut r.body);
                r.body = l;
            }
            deliver(app, &world, ctl, plan, reply.seq, r).await
        }
    }
}

/// Wait on the scenario clock from `start` until `t` (false: the world closed first); a call
/// that asked for progress hears it every second of scenario time meanwhile.
async fn mcp_wait(
    world: &World,
    (start, t): (std::time::Duration, std::time::Duration),
    progress: Option<&serde_json::Value>,
    tx: &tokio::sync::mpsc::Sender<Bytes>,
) -> bool {
    let Some(token) = progress else {
        return world.clock.wait_until(t).await;
    };
    let total = t.saturating_sub(start).as_millis() as u64;
    let step = std::time::Duration::from_secs(1);
    let mut next = start + step;
    while next < t {
        if !world.clock.wait_until(next).await {
            return false;
        }
        let done = (next - start).as_millis() as u64;
        // A client gone away is found by the caller's `closed()` arm.
        let _ = tx
            .send(crate::mcp::progress_event(token, done, total).into())
            .await;
        next += step;
    }
    world.clock.wait_until(t).await
}

/// Marks a delayed response abandoned when its future is dropped before the response is handed
/// to hyper (which drops a request's future when its client closes the connection); forgotten
/// once the wait is over.
struct Abandon<'a>(&'a World, u64);

impl Drop for Abandon<'_> {
    fn drop(&mut self) {
        self.0.abandon(self.1);
    }
}

async fn deliver(
    app: &App,
    world: &World,
    ctl: &ConnCtl,
    plan: Plan,
    seq: u64,
    response: Response,
) -> hyper::Response<HttpBody> {
    let sabotage = |how| {
        ctl.sabotage(how);
        hyper::Response::new(HttpBody::full(Bytes::new()))
    };
    match plan {
        Plan::Now => to_hyper(response),
        // The response is already recorded: no need to hold the clock while it goes out. If
        // hyper drops this future first, the client closed its connection: abandoned.
        Plan::At(t) => {
            let guard = Abandon(world, seq);
            let due = world.clock.wait_until(t).await;
            // Journaled before it is sent, as every answer is (see `Line::Delivered`); if that
            // fails, it is not sent: abandoned, as a restart would find it.
            if due && world.note(|session| Line::Delivered { session, seq }) {
                std::mem::forget(guard);
                return to_hyper(response);
            }
            // A world reset or replaced takes its entry with it; a server stopping (the drain
            // timeout) leaves it unsent: abandoned.
            if !due && !app.host.is_stopping() {
                std::mem::forget(guard);
            }
            sabotage(DROP)
        }
        Plan::Drop => sabotage(DROP),
        Plan::Reset => sabotage(RESET),
        // Held until the world closes or the server stops; a client that gives up first leaves
        // its entry abandoned (when it went away is worth knowing).
        Plan::Hang => {
            let guard = Abandon(world, seq);
            tokio::select! {
                _ = world.clock.closed() => {}
                _ = app.host.stopping() => {}
            }
            std::mem::forget(guard);
            sabotage(DROP)
        }
    }
}

/// Read a body, keeping at most `cap` bytes; the flag says it was longer. Once it is read, an
/// end of input reaches hyper again (see [`ConnCtl`]): the request is in hand.
async fn read_incoming(
    body: Incoming,
    cap: usize,
    ctl: &ConnCtl,
) -> Result<(Bytes, bool), hyper::Error> {
    let read = read_capped(BodyOf { body, ctl }, cap).await;
    ctl.release();
    read
}

/// A request body whose reader tells the connection when it waits (see [`ConnCtl::body_pending`]).
struct BodyOf<'a> {
    body: Incoming,
    ctl: &'a ConnCtl,
}

impl BodyOf<'_> {
    async fn frame(&mut self) -> Option<Result<hyper::body::Frame<Bytes>, hyper::Error>> {
        std::future::poll_fn(|cx| {
            let polled = std::pin::Pin::new(&mut self.body).poll_frame(cx);
            if polled.is_pending() {
                self.ctl.body_pending(cx.waker());
            }
            polled
        })
        .await
    }
}

/// A body that arrives in one piece (nearly every one) is kept as hyper read it, without a copy.
async fn read_capped(mut body: BodyOf<'_>, cap: usize) -> Result<(Bytes, bool), hyper::Error> {
    // The length hyper read from Content-Length (none for a chunked body).
    let declared = body.body.size_hint().exact();
    if declared.is_some_and(|n| n > cap as u64) {
        // Keep a prefix for the ledger without reading an unbounded body.
        let mut out = Vec::with_capacity(cap.min(4096));
        while let Some(frame) = body.frame().await {
            if let Ok(data) = frame?.into_data() {
                out.extend_from_slice(&data[..data.len().min(cap.saturating_sub(out.len()))]);
            }
            if out.len() >= cap.min(4096) {
                break;
            }
        }
        return Ok((out.into(), true));
    }
    let mut first = Bytes::new();
    let mut more: Vec<u8> = Vec::new();
    // A body of known length ends with its last byte: not polled again only to hear so.
    while !body.body.is_end_stream() {
        let Some(frame) = body.frame().await else {
            break;
        };
        let Ok(data) = frame?.into_data() else {
            continue;
        };
        let held = first.len() + more.len();
        if held + data.len() > cap {
            let mut out = Vec::with_capacity(cap);
            out.extend_from_slice(&first);
            out.extend_from_slice(&more);
            out.extend_from_slice(&data[..cap - held]);
            return Ok((out.into(), true));
        }
        if held == 0 {
            first = data;
        } else {
            if more.is_empty() {
                more.reserve(declared.map_or(0, |n| n as usize).max(held + data.len()));
                more.extend_from_slice(&first);
                first = Bytes::new();
            }
            more.extend_from_slice(&data);
        }
    }
    Ok((if more.is_empty() { first } else { more.into() }, false))
}

/// Bind a listener with a deep accept queue. A burst of concurrent retries is exactly what a
/// test double for idempotency receives; the OS default backlog (128) overflows under it and
/// the kernel then resets some of those connections.
pub async fn bind(addr: &str) -> io::Result<TcpListener> {
    let mut last = None;
    for a in tokio::net::lookup_host(addr).await? {
        let socket = if a.is_ipv4() {
            tokio::net::TcpSocket::new_v4()?
        } else {
            tokio::net::TcpSocket::new_v6()?
        };
        #[cfg(unix)]
        socket.set_reuseaddr(true)?; // as std's TcpListener::bind does
        match socket.bind(a) {
            Ok(()) => return socket.listen(1024),
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "could not resolve to any address",
        )
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn future_size<'a, Fut>(_: fn(&'a App, &'a ConnCtl, hyper::Request<Incoming>) -> Fut) -> usize {
        std::mem::size_of::<Fut>()
    }

    /// hyper moves each request's future into place: one that embedded the agents' and admin's
    /// futures (3.5 KB) cost every fake-service request a large copy. Those paths are boxed.
    #[test]
    fn a_request_future_stays_small() {
        let size = future_size(handle);
        assert!(size <= 1024, "handle's future is {size} bytes");
    }
}
