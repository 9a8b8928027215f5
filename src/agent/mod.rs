//! Fake subagents: scripted agents served at `/agents/NAME`, speaking A2A 1.0 ([`a2a`]) or
//! AG-UI 1.0 ([`agui`]).
//!
//! An agent sits on the world like a fake service does: its per-world state is a world
//! extension (so reset and sessions cover it), its interactions are ledger entries
//! (`disposition: agent`, with an `event`), and its side effects go through the same action
//! pipeline as any client's, via [`crate::service::call`] with the agent as actor.
//! [`handle`] dispatches an HTTP request to the agent's protocol; a protocol answers with a
//! [`Reply`]: a whole response, or a stream of server-sent-event bytes.

use std::sync::Arc;

use hyper::body::Bytes;
use hyper::HeaderMap;
use serde_json::json;
use tokio::sync::mpsc;

use crate::scenario::AgentSpec;
use crate::service::Response;
use crate::world::World;

pub mod a2a;
pub mod agui;

/// An HTTP request to an agent, already read off the wire.
#[derive(Clone, Debug, Default)]
pub struct AgentRequest {
    pub method: hyper::Method,
    /// Path below `/agents/NAME` (`""` or starting with '/').
    pub path: String,
    pub query: Option<String>,
    pub headers: HeaderMap,
    pub body: hyper::body::Bytes,
    /// The body was over the scenario's `max_body_bytes` (`body` holds its start): the agent
    /// refuses it in its protocol's shape, recorded.
    pub too_large: bool,
}

pub enum Reply {
    Full(Response),
    /// A `text/event-stream` (or other streamed) body: each item is sent as it comes; the
    /// stream ends when the sender is dropped.
    Stream {
        status: u16,
        headers: Vec<crate::idempotency::Header>,
        body: mpsc::Receiver<Bytes>,
    },
    /// A [`Reply::Stream`] whose whole body was ready before the response started: sent the
    /// same way (no length, chunked), as one chunk, without a channel.
    Ready {
        status: u16,
        headers: Vec<crate::idempotency::Header>,
        body: Bytes,
    },
}

/// Everything an agent needs to answer one request, borrowed for the request.
pub struct Ctx<'a> {
    pub world: Arc<World>,
    /// The server's base URL (`http://127.0.0.1:PORT`), for agent cards.
    pub base_url: &'a str,
    /// The gRPC listener's `host:port`, if one serves A2A, for agent cards.
    pub grpc: Option<&'a str>,
    /// The scenario's name for the agent (what a task that outlives the call clones).
    pub name: &'a Arc<str>,
}

impl Ctx<'_> {
    /// This agent's own URL (`http://127.0.0.1:PORT/agents/NAME`, behind `/_s/SESSION` in a
    /// named session).
    pub fn url(&self) -> String {
        format!("{}/agents/{}", self.world.url(self.base_url), self.name)
    }
}

/// Rebuild the agents' per-world state of a world just restored from the journal (`World` keeps
/// only the ledger; each protocol derives its state from its own entries).
pub fn restore(world: &Arc<World>) {
    a2a::restore(world);
    agui::restore(world);
}

/// Serve one request to agent `name`.
pub async fn handle(
    world: Arc<World>,
    (base_url, grpc): (&str, Option<&str>),
    name: &str,
    req: AgentRequest,
) -> Reply {
    let scenario = world.scenario.clone();
    let Some(agent) = scenario.agent(name) else {
        let names: Vec<&str> = world.scenario.agents.iter().map(|a| &*a.name).collect();
        return Reply::Full(Response::json(
            404,
            &json!({
                "error": format!("no agent named \"{name}\"{}", crate::scenario::did_you_mean(name, names.iter().copied())),
                "status": 404,
                "agents": names,
            }),
        ));
    };
    let ctx = Ctx {
        world,
        base_url,
        grpc,
        name: &agent.name,
    };
    match &agent.spec {
        AgentSpec::A2a(spec) => a2a::handle(ctx, spec, req).await,
        AgentSpec::AgUi(spec) => agui::handle(ctx, spec, req).await,
    }
}

/// A call to A2A agent `name` over the gRPC binding: the method's name (`GetTask`, ...) and its
/// request as ProtoJSON; `headers` are the call's metadata. Answered as the HTTP+JSON binding
/// answers (a bare result, a `google.rpc.Status`-shaped error, a stream of bare events), which
/// the server's gRPC adapter turns into messages and statuses.
pub async fn a2a_grpc_call(
    world: Arc<World>,
    (base_url, grpc): (&str, Option<&str>),
    name: &str,
    (method, params): (&str, String),
    (headers, too_large): (HeaderMap, bool),
) -> Reply {
    let scenario = world.scenario.clone();
    let Some((name, AgentSpec::A2a(spec))) = scenario.agent(name).map(|a| (&a.name, &a.spec))
    else {
        let body = json!({"error": {"code": 404, "status": "NOT_FOUND",
            "message": format!("no A2A agent named \"{name}\""), "details": []}});
        return Reply::Full(Response::json(404, &body));
    };
    let ctx = Ctx {
        world,
        base_url,
        grpc,
        name,
    };
    let req = AgentRequest {
        method: hyper::Method::POST,
        headers,
        too_large,
        ..AgentRequest::default()
    };
    a2a::grpc_call(&ctx, spec, &req, method, params).await
}
