//! The JSON-RPC 2.0 envelope as MCP uses it over Streamable HTTP: one message per POST (batches
//! only in 2025-03-26, which introduced them; 2025-06-18 removed them), request ids that are strings or integers (never null), and the
//! errors this server answers with, each carrying the HTTP status it travels with.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// A request id: echoed verbatim in the answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub(crate) enum Id {
    Number(serde_json::Number),
    String(String),
}

/// One message read off a POST: a request (id and method), a notification (method, no id), or
/// a response the client sent back (result or error, no method).
#[derive(Debug, Deserialize)]
pub(crate) struct Message {
    pub(crate) jsonrpc: Option<String>,
    /// `Some(Value::Null)` when `"id": null` was sent: MCP forbids it.
    #[serde(default, deserialize_with = "present")]
    pub(crate) id: Option<Value>,
    pub(crate) method: Option<String>,
    pub(crate) params: Option<Value>,
    pub(crate) result: Option<Value>,
    pub(crate) error: Option<Value>,
}

/// A present member as `Some`, even when it is `null`.
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// What a POST's body is, once its envelope is checked.
#[derive(Debug)]
pub(crate) enum Incoming {
    Request {
        id: Id,
        method: String,
        params: Value,
    },
    Notification {
        method: String,
        params: Value,
    },
    /// A response to a request of ours (a legacy task's question): accepted, as the spec says.
    Response {
        id: Option<Id>,
        /// Its result, or its error.
        reply: Result<Value, Value>,
    },
}

/// Read a body as one JSON-RPC message: not JSON is -32700, not a single well-formed message
/// -32600 (with the id, when one could be read, to answer with).
pub(crate) fn parse(body: &[u8]) -> Result<Incoming, (Option<Id>, McpError)> {
    let v: Value =
        serde_json::from_slice(body).map_err(|e| (None, McpError::Parse(without_position(&e))))?;
    if v.is_array() {
        let e = "batches are not supported: send one JSON-RPC message per POST (only a 2025-03-26 session may batch)";
        return Err((None, McpError::InvalidRequest(e.into())));
    }
    parse_value(v)
}

/// One message of a batch (or a whole body), already JSON.
pub(crate) fn parse_value(v: Value) -> Result<Incoming, (Option<Id>, McpError)> {
    let m: Message = serde_json::from_value(v).map_err(|e| {
        let e = format!("not a JSON-RPC message: {e}");
        (None, McpError::InvalidRequest(e))
    })?;
    let id = match m.id {
        None => None,
        Some(Value::String(s)) => Some(Id::String(s)),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Some(Id::Number(n)),
        Some(other) => {
            let sent = match &other {
                Value::Null => "null (MCP forbids it)".to_string(),
                Value::Object(_) => "an object".into(),
                Value::Array(_) => "an array".into(),
                v => v.to_string(),
            };
            let e = format!("the request id must be a string or an integer, not {sent}");
            return Err((None, McpError::InvalidRequest(e)));
        }
    };
    if m.jsonrpc.as_deref() != Some("2.0") {
        let e = "`jsonrpc` must be \"2.0\"".to_string();
        return Err((id, McpError::InvalidRequest(e)));
    }
    let params = m.params.unwrap_or(Value::Null);
    if !(params.is_null() || params.is_object()) {
        let e = "`params` must be an object".to_string();
        return Err((id, McpError::InvalidRequest(e)));
    }
    match (id, m.method, m.error, m.result) {
        (Some(id), Some(method), ..) => Ok(Incoming::Request { id, method, params }),
        (None, Some(method), ..) => Ok(Incoming::Notification { method, params }),
        (id, None, Some(e), _) => Ok(Incoming::Response { id, reply: Err(e) }),
        (id, None, None, Some(r)) => Ok(Incoming::Response { id, reply: Ok(r) }),
        (id, None, None, None) => Err((id, McpError::InvalidRequest("missing `method`".into()))),
    }
}

/// serde_json's message without " at line L column C": for a one-line body it only adds noise.
fn without_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    text.strip_suffix(&suffix).unwrap_or(&text).to_string()
}

/// A successful answer.
pub(crate) fn result(id: &Id, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// Every protocol error this server answers with: a JSON-RPC error, and the HTTP status it goes
/// with (Streamable HTTP puts some on 400/404; most ride on 200).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum McpError {
    #[error("Parse error: {0}")]
    Parse(String),
    #[error("Invalid Request: {0}")]
    InvalidRequest(String),
    /// A POST whose `Accept` takes neither JSON nor an event stream (406), or whose
    /// `Content-Type` is not JSON (415): -32600.
    #[error("Invalid Request: {1}")]
    Media(u16, String),
    /// A body over the scenario's `max_body_bytes` (that many): -32600 on 413.
    #[error("Invalid Request: the request body is over {0} bytes (the scenario's max_body_bytes)")]
    TooLarge(usize),
    /// Unknown method; `modern` puts it on 404, as 2026-07-28 says (its body tells it apart
    /// from an unknown endpoint).
    #[error("Method not found: {method}")]
    MethodNotFound { method: String, modern: bool },
    #[error("{0}")]
    InvalidParams(String),
    /// A legacy request without a session, or before `initialize`.
    #[error("Bad Request: {0}")]
    NoSession(String),
    /// A session this server does not know (ended, or never opened): the client must
    /// re-initialize.
    #[error("Session not found: {0}")]
    UnknownSession(String),
    /// A version this server does not serve: asked by an initialize (-32602), or by a modern
    /// request (-32022, on 400).
    #[error("Unsupported protocol version: {requested}")]
    UnsupportedVersion {
        requested: String,
        supported: Vec<&'static str>,
        modern: bool,
    },
    /// -32020: an `MCP-Protocol-Version`/`Mcp-Method`/`Mcp-Name` header missing or unlike the
    /// body.
    #[error("Header mismatch: {0}")]
    HeaderMismatch(String),
    /// A browser origin this server does not allow (DNS rebinding protection, 403).
    #[error("Forbidden: {0}")]
    Forbidden(String),
    /// A modern request without its required `_meta` fields.
    #[error("Missing required _meta: {0}")]
    MissingMeta(String),
    /// An idempotency key the route's policy refused (in flight, reused with other arguments,
    /// or required and absent), in SEP-3182's shape (`error.data.type`; a closed proposal).
    #[error("{message}")]
    Key {
        kind: &'static str,
        message: String,
        status: u16,
    },
    /// -32601 on a legacy `tools/call`: a task asked of a tool that runs none, or none asked of
    /// one that needs it.
    #[error("{0}")]
    TaskSupport(String),
    /// -32021: a modern request needs client capabilities its `_meta` does not declare (the
    /// tasks extension, or what a tool `requires`); the second part is `requiredCapabilities`.
    #[error("Missing required client capability: {0}")]
    MissingCapability(String, Value),
}

impl McpError {
    /// The JSON-RPC code and the HTTP status it travels with.
    fn code_and_status(&self) -> (i64, u16) {
        use McpError::*;
        match self {
            Parse(_) => (-32700, 400),
            InvalidRequest(_) | NoSession(_) => (-32600, 400),
            UnknownSession(_) => (-32600, 404),
            TooLarge(_) => (-32600, 413),
            Media(status, _) => (-32600, *status),
            MethodNotFound { modern: true, .. } => (-32601, 404),
            MethodNotFound { modern: false, .. } | TaskSupport(_) => (-32601, 200),
            InvalidParams(_) | UnsupportedVersion { modern: false, .. } | Key { .. } => {
                (-32602, 200)
            }
            MissingMeta(_) => (-32602, 400),
            HeaderMismatch(_) => (-32020, 400),
            UnsupportedVersion { modern: true, .. } => (-32022, 400),
            MissingCapability(..) => (-32021, 400),
            Forbidden(_) => (-32000, 403),
        }
    }

    pub(crate) fn code(&self) -> i64 {
        self.code_and_status().0
    }

    pub(crate) fn http_status(&self) -> u16 {
        self.code_and_status().1
    }

    fn data(&self) -> Option<Value> {
        match self {
            McpError::UnsupportedVersion {
                requested,
                supported,
                ..
            } => Some(json!({"supported": supported, "requested": requested})),
            McpError::Key { kind, status, .. } => Some(json!({"type": kind, "status": status})),
            McpError::MissingCapability(_, required) => {
                Some(json!({"requiredCapabilities": required}))
            }
            _ => None,
        }
    }

    /// The whole error response (`id` null when none could be read).
    pub(crate) fn body(&self, id: Option<&Id>) -> Value {
        let mut error = json!({"code": self.code(), "message": self.to_string()});
        if let Some(d) = self.data() {
            error["data"] = d;
        }
        json!({"jsonrpc": "2.0", "id": id, "error": error})
    }
    /// The error as a plain JSON HTTP answer.
    pub(crate) fn response(&self, id: Option<&Id>) -> crate::service::Response {
        crate::service::Response::json(self.http_status(), &self.body(id))
    }
}
