//! The agent card served at `/agents/NAME/.well-known/agent-card.json`: what a 1.0 client reads
//! to find the agent's interfaces (JSON-RPC and HTTP+JSON at one URL) and its capabilities. Written in field order (no
//! test or client reads its keys' order).

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
pub(crate) fn serve(
    card: &AgentCard,
    started_ms: u64,
    if_none_match: Option<&HeaderValue>,
) -> Response {
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
pub(crate) const AGENT_CARD_PATH: &str = "/.well-known/agent-card.json";

/// The fields the 1.0 client needs. In 1.0 there is no top-level `url`: a legacy `url`,
/// `preferredTransport` or `protocolVersion` makes the Python client build a 0.3 interface and
/// switch to `message/send`, so they must never appear.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AgentCard {
    pub(crate) name: String,
    pub(crate) description: String,
    /// The client takes the first interface whose binding it speaks (preferring
    /// `protocolVersion` 1.0) and sends every call to its `url`, so this carries the real
    /// bound host:port.
    pub(crate) supported_interfaces: Vec<AgentInterface>,
    pub(crate) version: String,
    pub(crate) capabilities: AgentCapabilities,
    pub(crate) default_input_modes: Vec<String>,
    pub(crate) default_output_modes: Vec<String>,
    pub(crate) skills: Vec<AgentSkill>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AgentInterface {
    pub(crate) url: String,
    pub(crate) protocol_binding: String,
    pub(crate) protocol_version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) tenant: Option<String>,
}

/// Undeclared capabilities are skipped by the conformance kit and refused by clients
/// (`subscribe` raises without `streaming`), so declare exactly what is served.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AgentCapabilities {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) streaming: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) push_notifications: Option<bool>,
}

/// Skills and their tags are required fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct AgentSkill {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) tags: Vec<String>,
}

/// The interfaces of an agent serving `bindings` (all when empty): JSON-RPC and HTTP+JSON at its
/// `url` (e.g. `http://127.0.0.1:PORT/agents/NAME`); gRPC at the gRPC listener's `host:port`,
/// with the agent (and its session) named by the interface's `tenant`. gRPC is listed only when
/// a listener serves it.
pub(crate) fn interfaces(
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

/// The card for a scripted agent reached at `interfaces`: streaming and push on, one skill
/// named after the agent (skills and their tags are required fields).
pub(crate) fn agent_card(
    name: &str,
    description: &str,
    interfaces: Vec<AgentInterface>,
) -> AgentCard {
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn agent_card_has_the_fields_the_client_requires() {
        // The card the reference server emitted (reference §2).
        let reference = json!({"name":"fake","description":"d","supportedInterfaces":[{"url":"http://127.0.0.1:8765/",
            "protocolBinding":"JSONRPC","protocolVersion":"1.0"}],"version":"0.1.0","capabilities":{"streaming":true},
            "defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],
            "skills":[{"id":"echo","name":"Echo","description":"echo","tags":["t"]}]});
        let card: AgentCard = serde_json::from_value(reference.clone()).unwrap();
        assert_eq!(serde_json::to_value(card).unwrap(), reference);

        let url = "http://127.0.0.1:7070/agents/researcher";
        let all = interfaces(&[], url, Some(("127.0.0.1:7071", "researcher".into())));
        let card = serde_json::to_value(agent_card("researcher", "does research", all)).unwrap();
        assert_eq!(
            card["supportedInterfaces"][2],
            json!({"url": "127.0.0.1:7071", "protocolBinding": "GRPC", "protocolVersion": "1.0",
                "tenant": "researcher"})
        );
        let two = interfaces(&[], url, None);
        let card = serde_json::to_value(agent_card("researcher", "does research", two)).unwrap();
        for field in [
            "name",
            "description",
            "supportedInterfaces",
            "version",
            "capabilities",
            "defaultInputModes",
            "defaultOutputModes",
            "skills",
        ] {
            assert!(card.get(field).is_some(), "{field}");
        }
        for legacy in [
            "url",
            "preferredTransport",
            "protocolVersion",
            "additionalInterfaces",
        ] {
            assert!(
                card.get(legacy).is_none(),
                "{legacy} would switch the client to 0.3"
            );
        }
        assert_eq!(
            card["supportedInterfaces"],
            json!([{"url": "http://127.0.0.1:7070/agents/researcher",
            "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": "http://127.0.0.1:7070/agents/researcher",
            "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"}])
        );
        assert_eq!(
            card["capabilities"],
            json!({"streaming": true, "pushNotifications": true})
        );
        assert!(!card["skills"][0]["tags"].as_array().unwrap().is_empty());
        assert!(!serde_json::to_string(&card).unwrap().contains("null"));
    }

    #[test]
    fn a_card_lists_only_the_bindings_the_agent_serves() {
        let only = interfaces(
            &[Binding::HttpJson],
            "http://h/agents/a",
            Some(("h:1", "a".into())),
        );
        assert_eq!(only.len(), 1);
        assert_eq!(only[0].protocol_binding, "HTTP+JSON");
    }
}
