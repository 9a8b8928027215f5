//! The agent card served at `/agents/NAME/.well-known/agent-card.json`: what a 1.0 client reads
//! to find the agent's interfaces (JSON-RPC and HTTP+JSON at one URL) and its capabilities.

use hyper::header::HeaderValue;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::rpc::{Binding, PROTOCOL_VERSION};
use crate::service::Response;

/// How long a client may keep the card without asking again. It changes only with the scenario.
const CARD_MAX_AGE: &str = "public, max-age=300";

/// The card as a cacheable answer: `Cache-Control` with a max-age, an `ETag` (the body's hash)
/// and `Last-Modified` (when the world started: nothing else changes it); `304` with no body
/// when the client's `If-None-Match` names this card already (the spec's SHOULD for cards).
pub fn serve(card: &AgentCard, started_ms: u64, if_none_match: Option<&HeaderValue>) -> Response {
    let mut r = Response::json_of(200, card);
    let hash = Sha256::digest(&r.body);
    let etag = format!("\"{}\"", hex::encode(&hash[..12]));
    let matched = if_none_match
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(',')
                .map(|t| t.trim().trim_start_matches("W/"))
                .any(|t| t == "*" || t == etag)
        });
    if matched {
        // Not modified: no body, and so no content type.
        (r.status, r.headers, r.body) = (304, Vec::new(), Vec::new());
    }
    let modified = jiff::Timestamp::from_millisecond(started_ms as i64)
        .ok()
        .and_then(|t| {
            jiff::fmt::rfc2822::DateTimePrinter::new()
                .timestamp_to_rfc9110_string(&t)
                .ok()
        });
    r.headers
        .push(("cache-control".into(), CARD_MAX_AGE.into()));
    r.headers.push(("etag".into(), etag.into()));
    if let Some(m) = modified {
        r.headers.push(("last-modified".into(), m.into()));
    }
    r
}

/// Relative to the agent's base URL (`/agents/NAME` in doubleagent).
pub const AGENT_CARD_PATH: &str = "/.well-known/agent-card.json";

/// The fields the 1.0 client needs. In 1.0 there is no top-level `url`: a legacy `url`,
/// `preferredTransport` or `protocolVersion` makes the Python client build a 0.3 interface and
/// switch to `message/send`, so they must never appear.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    pub name: String,
    pub description: String,
    /// The client takes the first interface whose binding it speaks (preferring
    /// `protocolVersion` 1.0) and sends every call to its `url`, so this carries the real
    /// bound host:port.
    pub supported_interfaces: Vec<AgentInterface>,
    pub version: String,
    pub capabilities: AgentCapabilities,
    pub default_input_modes: Vec<String>,
    pub default_output_modes: Vec<String>,
    pub skills: Vec<AgentSkill>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    pub url: String,
    pub protocol_binding: String,
    pub protocol_version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
}

/// Undeclared capabilities are skipped by the conformance kit and refused by clients
/// (`subscribe` raises without `streaming`), so declare exactly what is served.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub push_notifications: Option<bool>,
}

/// Skills and their tags are required fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentSkill {
    pub id: String,
    pub name: String,
    pub description: String,
    pub tags: Vec<String>,
}

/// The interfaces of an agent serving `bindings` (all when empty): JSON-RPC and HTTP+JSON at its
/// `url` (e.g. `http://127.0.0.1:PORT/agents/NAME`); gRPC at the gRPC listener's `host:port`,
/// with the agent (and its session) named by the interface's `tenant`. gRPC is listed only when
/// a listener serves it.
pub fn interfaces(
    bindings: &[Binding],
    url: &str,
    grpc: Option<(&str, String)>,
) -> Vec<AgentInterface> {
    Binding::ALL
        .into_iter()
        .filter(|b| bindings.is_empty() || bindings.contains(b))
        .filter_map(|b| {
            let (url, tenant) = match (b, &grpc) {
                (Binding::Grpc, Some((addr, tenant))) => (addr.to_string(), Some(tenant.clone())),
                (Binding::Grpc, None) => return None,
                _ => (url.to_string(), None),
            };
            Some(AgentInterface {
                url,
                protocol_binding: b.as_str().into(),
                protocol_version: PROTOCOL_VERSION.into(),
                tenant,
            })
        })
        .collect()
}

/// The card of a scripted agent: streaming and push on, one skill named after the agent.
pub fn agent_card(name: &str, description: &str, interfaces: Vec<AgentInterface>) -> AgentCard {
    let modes = vec!["text/plain".to_owned(), "application/json".to_owned()];
    AgentCard {
        name: name.into(),
        description: description.into(),
        supported_interfaces: interfaces,
        // The agent's own version, not the protocol's: the fake's build is the honest answer.
        version: env!("CARGO_PKG_VERSION").into(),
        capabilities: AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(true),
        },
        default_input_modes: modes.clone(),
        default_output_modes: modes,
        skills: vec![AgentSkill {
            id: name.into(),
            name: name.into(),
            description: description.into(),
            tags: vec!["doubleagent".into()],
        }],
    }
}
