//! Which era a request speaks, and the checks each era makes before a method runs.
//!
//! Legacy (≤ 2025-11-25): a session opened by `initialize`, named by `Mcp-Session-Id` on every
//! later request; an `MCP-Protocol-Version` header, when sent, must be one served. Modern
//! (2026-07-28): no session; every request's `params._meta` names the protocol version and the
//! client's capabilities, and the `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers
//! must repeat the body (400 with -32020 otherwise). Both are served on one endpoint: a request
//! with a session id is legacy, one with modern `_meta` (or none at all, on a server that serves
//! the modern era) modern.

use base64::Engine;
use hyper::HeaderMap;
use serde_json::Value;

use super::rpc::McpError;
use super::session::Sessions;
use crate::scenario::mcp::{HeaderPolicy, McpServer, MODERN};
use crate::service::header_text;
use crate::world::World;

pub(crate) const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";
const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// The era a request was admitted under.
#[derive(Clone, Debug)]
pub(crate) enum Era {
    Legacy {
        session: String,
        version: &'static str,
    },
    Modern,
}

impl Era {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Era::Legacy { .. } => "legacy",
            Era::Modern => "modern",
        }
    }

    pub(crate) fn version(&self) -> &'static str {
        match self {
            Era::Legacy { version, .. } => version,
            Era::Modern => MODERN,
        }
    }

    pub(crate) fn session(&self) -> Option<&str> {
        match self {
            Era::Legacy { session, .. } => Some(session),
            Era::Modern => None,
        }
    }
}

/// The client capabilities of `needed` that a modern request's `_meta` does not declare, as a
/// `ClientCapabilities` object (capabilities are declared per request in 2026-07-28).
pub(crate) fn undeclared(params: &Value, needed: &[String]) -> Option<Value> {
    let declared = params.get("_meta").and_then(|m| m.get(META_CAPABILITIES));
    let missing: serde_json::Map<String, Value> = needed
        .iter()
        .filter(|c| declared.and_then(|d| d.get(c.as_str())).is_none())
        .map(|c| (c.clone(), Value::Object(Default::default())))
        .collect();
    (!missing.is_empty()).then_some(Value::Object(missing))
}

/// Whether a modern request's `_meta` declares client extension `ext` (extensions are
/// negotiated per request in 2026-07-28).
pub(crate) fn declares(params: &Value, ext: &str) -> bool {
    params
        .get("_meta")
        .and_then(|m| m.get(META_CAPABILITIES))
        .and_then(|c| c.get("extensions"))
        .and_then(|e| e.get(ext))
        .is_some()
}

fn header<'h>(headers: &'h HeaderMap, name: &str) -> Option<std::borrow::Cow<'h, str>> {
    headers.get(name).map(header_text)
}

/// The era of a request other than `initialize`, checked as that era requires.
pub(crate) fn admit(
    world: &World,
    server: &McpServer,
    headers: &HeaderMap,
    method: &str,
    params: &Value,
) -> Result<(Era, Vec<McpError>), McpError> {
    let meta = params.get("_meta");
    let session = header(headers, SESSION_HEADER);
    let modern_marked = meta.and_then(|m| m.get(META_VERSION)).is_some()
        || method == "server/discover"
        || header(headers, VERSION_HEADER).as_deref() == Some(MODERN);
    let modern = server.serves(MODERN) && (modern_marked || session.is_none());
    if modern {
        return check_modern(server, headers, method, params)
            .map(|let_pass| (Era::Modern, let_pass));
    }
    let Some(id) = session else {
        let e = "no Mcp-Session-Id: send `initialize` first and echo the session id it returns";
        return Err(McpError::NoSession(e.into()));
    };
    let Some(version) = world.extension::<Sessions>().version(&server.name, &id) else {
        return Err(McpError::UnknownSession(id.into_owned()));
    };
    if let Some(v) = header(headers, VERSION_HEADER) {
        if !server.legacy_versions().any(|l| l == v) {
            let e = format!(
                "MCP-Protocol-Version {v} is not served here (this session speaks {version}); serve: {}",
                server.versions.join(", ")
            );
            return Err(McpError::InvalidRequest(e));
        }
    }
    let era = Era::Legacy {
        session: id.into_owned(),
        version,
    };
    Ok((era, Vec::new()))
}

/// A modern request's `_meta` and headers, `server/discover` included (the conformance kit
/// holds it to the same rules): the fields `_meta` must carry (-32602), then the headers
/// against the body (-32020), then the version (-32022), all 400. A lenient server lets header
/// mismatches pass and returns them (to be recorded); a strict one refuses them.
fn check_modern(
    server: &McpServer,
    headers: &HeaderMap,
    method: &str,
    params: &Value,
) -> Result<Vec<McpError>, McpError> {
    let meta = params.get("_meta");
    let Some(version) = meta.and_then(|m| m.get(META_VERSION)) else {
        return Err(McpError::MissingMeta(format!(
            "params._meta[\"{META_VERSION}\"] names the protocol version of every request"
        )));
    };
    if meta.and_then(|m| m.get(META_CAPABILITIES)).is_none() {
        return Err(McpError::MissingMeta(format!(
            "params._meta[\"{META_CAPABILITIES}\"] is required on every request"
        )));
    }
    let version = version.as_str().unwrap_or_default();
    // The name-shaped field a router reads (SEP-2243). SEP-2663 adds the task methods' task
    // id; there a missing (or empty) header is let pass in either mode, since the official
    // Python client (mcp 2.3.0) sends none, but recorded; only one naming another task is
    // refused.
    let named = headers.get("mcp-name").is_some_and(|v| !v.is_empty());
    let task_method = matches!(method, "tasks/get" | "tasks/update" | "tasks/cancel");
    let name = match method {
        "tools/call" => params.get("name"),
        _ if task_method && named => params.get("taskId"),
        _ => None,
    };
    let mut let_pass = Vec::new();
    if let (true, false, Some(id)) = (task_method, named, params.get("taskId")) {
        let e = format!("the Mcp-Name header is missing; for {method} it names the task ({id}), let pass as clients omit it");
        let_pass.push(McpError::HeaderMismatch(e));
    }
    let checks = [
        ("MCP-Protocol-Version", Some(version)),
        ("Mcp-Method", Some(method)),
        ("Mcp-Name", name.and_then(Value::as_str)),
    ];
    for (header, body) in checks {
        match same_header(headers, header, body) {
            Err(e) if server.headers == HeaderPolicy::Lenient => let_pass.push(e),
            r => r?,
        }
    }
    if version != MODERN || !server.serves(MODERN) {
        return Err(McpError::UnsupportedVersion {
            requested: version.to_string(),
            supported: vec![MODERN],
            modern: true,
        });
    }
    Ok(let_pass)
}

/// An `initialize` sent by a 2026-07-28 client (modern `_meta`, no `protocolVersion`): the
/// method is gone from that era, so it is answered as an unknown one (404, -32601).
pub(crate) fn modern_initialize(params: &Value) -> bool {
    params.get("protocolVersion").is_none()
        && params
            .get("_meta")
            .and_then(|m| m.get(META_VERSION))
            .is_some()
}

/// The header must be present and equal `body` (decoded first when sent as `=?base64?…?=`).
fn same_header(headers: &HeaderMap, name: &str, body: Option<&str>) -> Result<(), McpError> {
    let Some(body) = body else {
        return Ok(());
    };
    let Some(sent) = headers.get(name) else {
        return Err(McpError::HeaderMismatch(format!(
            "the {name} header is required and must be \"{body}\""
        )));
    };
    let sent = decoded(&header_text(sent));
    if sent != body {
        return Err(McpError::HeaderMismatch(format!(
            "the {name} header is \"{sent}\" but the body says \"{body}\""
        )));
    }
    Ok(())
}

/// A header value as text: `=?base64?…?=` carries text that is not plain visible ASCII.
fn decoded(v: &str) -> String {
    let inner = v
        .strip_prefix("=?base64?")
        .and_then(|r| r.strip_suffix("?="));
    let text = inner.and_then(|b| {
        let bytes = base64::engine::general_purpose::STANDARD.decode(b).ok()?;
        String::from_utf8(bytes).ok()
    });
    text.unwrap_or_else(|| v.to_string())
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_header_values_are_decoded() {
        assert_eq!(super::decoded("=?base64?w6lsYW4=?="), "élan");
        assert_eq!(super::decoded("plain"), "plain");
        assert_eq!(super::decoded("=?base64?!!?="), "=?base64?!!?=");
    }
}
