//! A2A 1.0 wire format: the JSON that crosses the socket between an orchestrator's A2A client and
//! doubleagent's fake subagents, over the JSON-RPC 2.0 binding.
//!
//! The source of truth is `shared/reference/a2a-1.0.md` (checked against the a2a-sdk 1.3.0 client
//! and server on loopback). What this module encodes, and why it matters to a real client:
//!
//! * **ProtoJSON.** Fields are camelCase, enums are their proto names (`TASK_STATE_COMPLETED`,
//!   `ROLE_AGENT`). The Python client silently turns a lowercase `"completed"` into
//!   `TASK_STATE_UNSPECIFIED`, so a wrong spelling is a silent bug, not an error.
//! * **Absent means omitted.** Optional fields are skipped when unset, never sent as `null`;
//!   protobuf's JSON parser treats `null` differently per field kind, and omission is what the
//!   reference server emits.
//! * **Oneofs are single-key objects.** `Part` carries exactly one of `text | raw | url | data`
//!   beside its other fields (no `kind` discriminator, that was 0.3). `StreamResponse` and the
//!   `SendMessage` result wrap their payload: `{"task": …}`, `{"statusUpdate": …}`. A bare Task as
//!   the SendMessage result makes the client fail with "Response has neither task nor message".
//! * **Tolerant input.** Unknown incoming fields are ignored (0.3 clients still send `kind`), and
//!   unknown enum names decode to `*_UNSPECIFIED`, as the reference server does.
//! * **Errors.** A2A errors are JSON-RPC errors sent with HTTP 200, carrying a
//!   `google.rpc.ErrorInfo` in `data`; the client maps `code` to a typed exception.
//! * **Streaming.** Each SSE event is one complete JSON-RPC response echoing the request id
//!   ([`sse_frame`]); push notifications POST the bare `StreamResponse` ([`push_body`]).
//!
//! Nothing here does I/O or knows about scenarios: it is the vocabulary the A2A agent server
//! speaks, so that behaviour code can stay in terms of typed values.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

/// Protocol version put in agent cards; the client negotiates on `Major.Minor` only.
pub const PROTOCOL_VERSION: &str = "1.0";
/// Header every 1.0 client sends on each call (and on the card GET). The spec reads a missing
/// header as 0.3; the reference server then answers -32009.
pub const VERSION_HEADER: &str = "A2A-Version";
/// [`VERSION_HEADER`] as a parsed name, for look-ups: a `&str` name (mixed case) is parsed again
/// on every `HeaderMap::get`.
pub static VERSION_HEADER_NAME: hyper::header::HeaderName =
    hyper::header::HeaderName::from_static("a2a-version");
/// Relative to the agent's base URL (`/agents/NAME` in doubleagent).
pub const AGENT_CARD_PATH: &str = "/.well-known/agent-card.json";
/// The only binding doubleagent serves; the client matches it literally.
pub const PROTOCOL_BINDING_JSONRPC: &str = "JSONRPC";
/// Push requests carry the config's token here (verified against the a2a-sdk sender).
pub const NOTIFICATION_TOKEN_HEADER: &str = "X-A2A-Notification-Token";
/// The client only checks that the response content type contains `text/event-stream`; a JSON
/// body (e.g. an upfront error) is read as one plain JSON-RPC response instead.
pub const SSE_CONTENT_TYPE: &str = "text/event-stream";
/// A comment line: sse-starlette sends one every 15 s; clients skip it, proxies see traffic.
pub const SSE_PING: &str = ": ping\r\n\r\n";
pub const ERROR_INFO_TYPE: &str = "type.googleapis.com/google.rpc.ErrorInfo";
pub const ERROR_DOMAIN: &str = "a2a-protocol.org";

/// Whether an `A2A-Version` value (the header, or the query parameter of that name the spec also
/// allows) is one this server speaks: any `1.x`, as the reference server accepts. Missing or empty
/// means 0.3 (SPEC §3.6), so it is *not* supported; whether to refuse it (-32009) or be lenient is
/// the caller's policy, since hand-written curl calls rarely send the header.
pub fn version_supported(value: Option<&str>) -> bool {
    // What nearly every call sends, without the parse.
    if value == Some(PROTOCOL_VERSION) {
        return true;
    }
    let Some(v) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return false;
    };
    let mut parts = v.split('.');
    let major = parts.next().and_then(|m| m.parse::<u64>().ok());
    let rest_ok = parts.all(|p| p.parse::<u64>().is_ok());
    major == Some(1) && rest_ok
}

// Serializing these types cannot fail (string-keyed maps, no custom errors), but the results
// reach the network, so a failure degrades to `null` instead of panicking.

// ---------------------------------------------------------------------------------------------
// Methods

/// The 1.0 JSON-RPC method names. The 0.3 names (`message/send`, `tasks/get`, …) are not
/// accepted: a 1.0-only server answers them with -32601, which is what real clients expect of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    SendMessage,
    SendStreamingMessage,
    GetTask,
    ListTasks,
    CancelTask,
    SubscribeToTask,
    CreateTaskPushNotificationConfig,
    GetTaskPushNotificationConfig,
    ListTaskPushNotificationConfigs,
    DeleteTaskPushNotificationConfig,
    GetExtendedAgentCard,
}

impl Method {
    pub const ALL: [Method; 11] = [
        Method::SendMessage,
        Method::SendStreamingMessage,
        Method::GetTask,
        Method::ListTasks,
        Method::CancelTask,
        Method::SubscribeToTask,
        Method::CreateTaskPushNotificationConfig,
        Method::GetTaskPushNotificationConfig,
        Method::ListTaskPushNotificationConfigs,
        Method::DeleteTaskPushNotificationConfig,
        Method::GetExtendedAgentCard,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Method::SendMessage => "SendMessage",
            Method::SendStreamingMessage => "SendStreamingMessage",
            Method::GetTask => "GetTask",
            Method::ListTasks => "ListTasks",
            Method::CancelTask => "CancelTask",
            Method::SubscribeToTask => "SubscribeToTask",
            Method::CreateTaskPushNotificationConfig => "CreateTaskPushNotificationConfig",
            Method::GetTaskPushNotificationConfig => "GetTaskPushNotificationConfig",
            Method::ListTaskPushNotificationConfigs => "ListTaskPushNotificationConfigs",
            Method::DeleteTaskPushNotificationConfig => "DeleteTaskPushNotificationConfig",
            Method::GetExtendedAgentCard => "GetExtendedAgentCard",
        }
    }

    pub fn from_name(name: &str) -> Option<Method> {
        Method::ALL.into_iter().find(|m| m.as_str() == name)
    }

    /// These answer with an SSE stream instead of one JSON body.
    pub fn is_streaming(self) -> bool {
        matches!(self, Method::SendStreamingMessage | Method::SubscribeToTask)
    }
}

impl fmt::Display for Method {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

// ---------------------------------------------------------------------------------------------
// JSON-RPC 2.0 envelopes

/// A request id. JSON-RPC allows string, number or null, and the response must echo it verbatim
/// (the Python client sends UUID strings, the TCK and curl users send numbers).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RpcId {
    Number(serde_json::Number),
    String(String),
    #[default]
    Null,
}

impl From<&str> for RpcId {
    fn from(s: &str) -> Self {
        RpcId::String(s.to_owned())
    }
}

impl From<i64> for RpcId {
    fn from(n: i64) -> Self {
        RpcId::Number(n.into())
    }
}

/// An incoming call, as far as the envelope goes; `params` stays raw until the method is known.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcRequest {
    /// Always "2.0" once checked, and the method one of the eleven names for the usual call:
    /// static text, not copied per call.
    pub jsonrpc: Cow<'static, str>,
    // A missing id (a notification) is answered like a null id: A2A has no notifications, and
    // replying beats leaving the client waiting.
    #[serde(default)]
    pub id: RpcId,
    pub method: Cow<'static, str>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
}

impl RpcRequest {
    pub fn new(id: impl Into<RpcId>, method: Method, params: impl Serialize) -> RpcRequest {
        RpcRequest {
            jsonrpc: "2.0".into(),
            id: id.into(),
            method: Cow::Borrowed(method.as_str()),
            params: Some(serde_json::to_value(params).unwrap_or(Value::Null)),
        }
    }

    /// Decodes `params` for the method; a shape mismatch is the caller's error, -32602.
    pub fn params<T: DeserializeOwned>(&self) -> Result<T, RpcError> {
        // Decoded from the borrowed tree: no copy of the params is made just to be consumed.
        let empty = Value::Object(Map::new());
        T::deserialize(self.params.as_ref().unwrap_or(&empty)).map_err(|e| {
            RpcError::invalid_params(format!("invalid params for {}: {e}", self.method))
                .with_metadata("parseError", e.to_string())
        })
    }
}

/// Validates an HTTP body as a single JSON-RPC 2.0 request, in the order the reference server
/// checks: JSON (-32700), envelope (-32600). The method name is checked by the caller with
/// [`Method::from_name`] (-32601) because only it knows which methods an endpoint serves.
/// On failure it returns the complete error response to send, with the id when one was readable.
pub fn parse_request(body: &[u8]) -> Result<RpcRequest, RpcResponse> {
    let doc: Value = serde_json::from_slice(body)
        .map_err(|e| RpcResponse::error(RpcId::Null, RpcError::parse_error(e.to_string())))?;
    let mut obj = match doc {
        Value::Object(obj) => obj,
        Value::Array(_) => {
            return Err(RpcResponse::error(
                RpcId::Null,
                RpcError::invalid_request("Batch requests are not supported"),
            ))
        }
        _ => {
            return Err(RpcResponse::error(
                RpcId::Null,
                RpcError::invalid_request("Invalid request: expected a JSON object"),
            ))
        }
    };
    // An unusable id (bool, object, array) cannot be echoed, so the error goes out with null.
    // Fields are moved out of the parsed object, not copied.
    let id = match obj.remove("id") {
        None | Some(Value::Null) => RpcId::Null,
        Some(Value::String(s)) => RpcId::String(s),
        Some(Value::Number(n)) => RpcId::Number(n),
        Some(_) => {
            return Err(RpcResponse::error(
                RpcId::Null,
                RpcError::invalid_request("Invalid request: id must be a string, integer, or null"),
            ))
        }
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(RpcResponse::error(
            id,
            RpcError::invalid_request("Invalid request: 'jsonrpc' must be exactly '2.0'"),
        ));
    }
    let method = match obj.remove("method") {
        Some(Value::String(m)) if !m.is_empty() => m,
        _ => {
            return Err(RpcResponse::error(
                id,
                RpcError::invalid_request("Method is required"),
            ))
        }
    };
    let params = match obj.remove("params") {
        None | Some(Value::Null) => None,
        Some(p @ Value::Object(_)) => Some(p),
        // A2A params are always objects; positional params can't name a proto field.
        Some(_) => {
            return Err(RpcResponse::error(
                id,
                RpcError::invalid_params("params must be a JSON object"),
            ))
        }
    };
    Ok(RpcRequest {
        jsonrpc: "2.0".into(),
        id,
        method: method.into(),
        params,
    })
}

/// The common call, SendMessage or SendStreamingMessage, decoded from the body in one pass
/// with its params: no JSON tree is built first. `None` for anything else, and for anything
/// about the envelope the general route ([`parse_request`], then [`RpcRequest::params`]) would
/// look at twice (a bad version or id, params that are not an object, a duplicate key, params
/// that do not decode...): that route then gives the call, or the error, exactly as always.
/// The request returned carries no `params`; they are the second value.
pub fn parse_send(body: &[u8]) -> Option<(RpcRequest, SendMessageRequest)> {
    if let Some(plain) = plain::parse_send(body) {
        return Some(plain);
    }
    /// Params that must be a JSON object (a struct would also accept an array).
    struct ObjectParams(SendMessageRequest);
    impl<'de> Deserialize<'de> for ObjectParams {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ObjectParams, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = ObjectParams;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("a JSON object")
                }
                fn visit_map<A: de::MapAccess<'de>>(
                    self,
                    map: A,
                ) -> Result<ObjectParams, A::Error> {
                    SendMessageRequest::deserialize(de::value::MapAccessDeserializer::new(map))
                        .map(ObjectParams)
                }
            }
            d.deserialize_map(V)
        }
    }
    #[derive(Deserialize)]
    struct Envelope<'a> {
        // Borrowed: a version written with escapes fails here and takes the general route.
        jsonrpc: Option<&'a str>,
        #[serde(default)]
        id: Option<Value>,
        method: Option<String>,
        params: Option<ObjectParams>,
    }
    let env: Envelope = serde_json::from_slice(body).ok()?;
    if env.jsonrpc != Some("2.0") {
        return None;
    }
    let method = match Method::from_name(&env.method?) {
        Some(m @ (Method::SendMessage | Method::SendStreamingMessage)) => m,
        _ => return None,
    };
    let id = match env.id {
        None | Some(Value::Null) => RpcId::Null,
        Some(Value::String(s)) => RpcId::String(s),
        Some(Value::Number(n)) => RpcId::Number(n),
        Some(_) => return None,
    };
    let params = env.params?.0;
    Some((
        RpcRequest {
            jsonrpc: "2.0".into(),
            id,
            method: Cow::Borrowed(method.as_str()),
            params: None,
        },
        params,
    ))
}

pub(super) mod json;

/// [`parse_send`] of the usual SendMessage, read by a small scanner without serde: a message of
/// plain text parts (`{"text": "…"}`), a string or integer id, an empty `configuration`, strings
/// without escapes. Anything else (another key, an escape, a duplicate, a number that is not a
/// plain integer...) is `None`, and the serde route decodes the body as always; what is taken is
/// exactly what that route gives (a test compares them). serde spent most of a round trip's
/// parsing buffering each part's keys for its flattened content.
mod plain {
    use super::SendMessageRequest;
    use super::{Message, Method, Part, Role, RpcId, RpcRequest, SendMessageConfiguration};
    use crate::template::escape_at;

    struct Scan<'a> {
        /// The body, checked to be UTF-8 once: strings are slices of it (between quotes, which
        /// are always character boundaries).
        text: &'a str,
        b: &'a [u8],
        i: usize,
    }

    impl<'a> Scan<'a> {
        /// The next byte after whitespace, not consumed.
        fn peek(&mut self) -> Option<u8> {
            while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
                self.i += 1;
            }
            self.b.get(self.i).copied()
        }

        fn eat(&mut self, c: u8) -> Option<()> {
            (self.peek()? == c).then(|| self.i += 1)
        }

        /// A string without escapes or control characters.
        fn str(&mut self) -> Option<&'a str> {
            self.eat(b'"')?;
            let start = self.i;
            let end = start + escape_at(&self.b[start..])?;
            if self.b[end] != b'"' {
                return None;
            }
            self.i = end + 1;
            self.text.get(start..end)
        }

        /// An object, each member's value read by `member` (which fails on keys it does not
        /// take, and on a key seen before).
        fn object(
            &mut self,
            mut member: impl FnMut(&mut Self, &'a str) -> Option<()>,
        ) -> Option<()> {
            self.eat(b'{')?;
            if self.peek()? == b'}' {
                self.i += 1;
                return Some(());
            }
            loop {
                let key = self.str()?;
                self.eat(b':')?;
                member(self, key)?;
                match self.peek()? {
                    b',' => self.i += 1,
                    b'}' => {
                        self.i += 1;
                        return Some(());
                    }
                    _ => return None,
                }
            }
        }

        /// A string id, a non-negative integer id (as serde_json reads it: no sign, no leading
        /// zero, no fraction or exponent, within u64), or null.
        fn id(&mut self) -> Option<RpcId> {
            match self.peek()? {
                b'"' => Some(RpcId::String(self.str()?.to_string())),
                b'n' => {
                    let null = self.b.get(self.i..self.i + 4)? == b"null";
                    null.then(|| {
                        self.i += 4;
                        RpcId::Null
                    })
                }
                b'0'..=b'9' => {
                    let start = self.i;
                    while self.b.get(self.i).is_some_and(u8::is_ascii_digit) {
                        self.i += 1;
                    }
                    let digits = &self.b[start..self.i];
                    if (digits.len() > 1 && digits[0] == b'0')
                        || matches!(self.b.get(self.i), Some(b'.' | b'e' | b'E'))
                    {
                        return None;
                    }
                    let n: u64 = std::str::from_utf8(digits).ok()?.parse().ok()?;
                    Some(RpcId::Number(n.into()))
                }
                _ => None,
            }
        }

        /// A part that is only text (and possibly a 0.3 `kind`, ignored as serde ignores it).
        fn part(&mut self) -> Option<Part> {
            let (mut text, mut kind) = (None, false);
            self.object(|s, key| {
                match key {
                    "text" if text.is_none() => text = Some(s.str()?),
                    "kind" if !kind => {
                        kind = true;
                        s.str()?;
                    }
                    _ => return None,
                }
                Some(())
            })?;
            Some(Part::text(text?))
        }

        fn parts(&mut self) -> Option<Vec<Part>> {
            self.eat(b'[')?;
            let mut parts = Vec::with_capacity(1);
            if self.peek()? == b']' {
                self.i += 1;
                return Some(parts);
            }
            loop {
                parts.push(self.part()?);
                match self.peek()? {
                    b',' => self.i += 1,
                    b']' => {
                        self.i += 1;
                        return Some(parts);
                    }
                    _ => return None,
                }
            }
        }

        fn message(&mut self) -> Option<Message> {
            let (mut id, mut role, mut parts) = (None, None, None);
            let (mut context_id, mut task_id, mut kind) = (None, None, false);
            self.object(|s, key| {
                match key {
                    "messageId" if id.is_none() => id = Some(s.str()?),
                    "role" if role.is_none() => role = Some(Role::from_wire_name(s.str()?)),
                    "parts" if parts.is_none() => parts = Some(s.parts()?),
                    "contextId" if context_id.is_none() => context_id = Some(s.str()?),
                    "taskId" if task_id.is_none() => task_id = Some(s.str()?),
                    "kind" if !kind => {
                        kind = true;
                        s.str()?;
                    }
                    _ => return None,
                }
                Some(())
            })?;
            Some(Message {
                message_id: id?.to_string(),
                context_id: context_id.map(str::to_string),
                task_id: task_id.map(str::to_string),
                role: role?,
                parts: parts?,
                metadata: None,
                extensions: Vec::new(),
                reference_task_ids: Vec::new(),
            })
        }

        fn params(&mut self) -> Option<SendMessageRequest> {
            let (mut message, mut configuration) = (None, None);
            self.object(|s, key| {
                match key {
                    "message" if message.is_none() => message = Some(s.message()?),
                    // Only an empty one: its fields have serde defaults.
                    "configuration" if configuration.is_none() => {
                        s.object(|_, _| None)?;
                        configuration = Some(SendMessageConfiguration::default());
                    }
                    _ => return None,
                }
                Some(())
            })?;
            Some(SendMessageRequest {
                tenant: None,
                message: message?,
                configuration,
                metadata: None,
            })
        }
    }

    pub(super) fn parse_send(body: &[u8]) -> Option<(RpcRequest, SendMessageRequest)> {
        let text = std::str::from_utf8(body).ok()?;
        let mut s = Scan {
            text,
            b: body,
            i: 0,
        };
        let (mut version, mut id, mut method, mut params) = (None, None, None, None);
        s.object(|s, key| {
            match key {
                "jsonrpc" if version.is_none() => version = Some(s.str()?),
                "id" if id.is_none() => id = Some(s.id()?),
                "method" if method.is_none() => {
                    method = match Method::from_name(s.str()?) {
                        Some(m @ (Method::SendMessage | Method::SendStreamingMessage)) => Some(m),
                        _ => return None,
                    };
                }
                "params" if params.is_none() => params = Some(s.params()?),
                _ => return None,
            }
            Some(())
        })?;
        if s.peek().is_some() || version != Some("2.0") {
            return None;
        }
        let call = RpcRequest {
            jsonrpc: "2.0".into(),
            id: id.unwrap_or(RpcId::Null),
            method: std::borrow::Cow::Borrowed(method?.as_str()),
            params: None,
        };
        Some((call, params?))
    }
}

/// A response: exactly one of `result` / `error`. The outcome is an enum rather than two options
/// because a success may legitimately carry `"result": null` (DeleteTaskPushNotificationConfig),
/// which must still be sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcResponse {
    pub jsonrpc: String,
    #[serde(flatten)]
    pub outcome: RpcOutcome,
    #[serde(default)]
    pub id: RpcId,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RpcOutcome {
    Result(Value),
    Error(RpcError),
}

impl RpcResponse {
    pub fn success(id: RpcId, result: impl Serialize) -> RpcResponse {
        RpcResponse {
            jsonrpc: "2.0".into(),
            outcome: RpcOutcome::Result(serde_json::to_value(result).unwrap_or(Value::Null)),
            id,
        }
    }

    pub fn error(id: RpcId, error: RpcError) -> RpcResponse {
        RpcResponse {
            jsonrpc: "2.0".into(),
            outcome: RpcOutcome::Error(error),
            id,
        }
    }

    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// The bytes of a successful response, written straight from `result` with no JSON tree in
/// between. The same text as serialising [`RpcResponse::success`]'s tree: its keys in sorted
/// order (`id`, `jsonrpc`, `result`), and the result types on the hot path ([`Task`],
/// [`Message`] and what they hold) serialise their fields in sorted order too.
pub fn success_body(id: &RpcId, result: &impl Serialize) -> Vec<u8> {
    let mut out = Vec::with_capacity(512);
    out.extend_from_slice(b"{\"id\":");
    let written = serde_json::to_writer(&mut out, id).and_then(|()| {
        out.extend_from_slice(b",\"jsonrpc\":\"2.0\",\"result\":");
        serde_json::to_writer(&mut out, result)
    });
    if written.is_err() {
        // Only a failing `Serialize` impl gets here; answer as the tree route would.
        return serde_json::to_vec(&RpcResponse::success(id.clone(), result).to_value())
            .unwrap_or_default();
    }
    out.push(b'}');
    out
}

// ---------------------------------------------------------------------------------------------
// Errors

/// Every error the A2A JSON-RPC binding defines, with its code and ErrorInfo reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    TaskNotFound,
    TaskNotCancelable,
    PushNotificationNotSupported,
    UnsupportedOperation,
    ContentTypeNotSupported,
    InvalidAgentResponse,
    ExtendedAgentCardNotConfigured,
    ExtensionSupportRequired,
    VersionNotSupported,
    ParseError,
    InvalidRequest,
    MethodNotFound,
    InvalidParams,
    Internal,
}

impl ErrorKind {
    pub const ALL: [ErrorKind; 14] = [
        ErrorKind::TaskNotFound,
        ErrorKind::TaskNotCancelable,
        ErrorKind::PushNotificationNotSupported,
        ErrorKind::UnsupportedOperation,
        ErrorKind::ContentTypeNotSupported,
        ErrorKind::InvalidAgentResponse,
        ErrorKind::ExtendedAgentCardNotConfigured,
        ErrorKind::ExtensionSupportRequired,
        ErrorKind::VersionNotSupported,
        ErrorKind::ParseError,
        ErrorKind::InvalidRequest,
        ErrorKind::MethodNotFound,
        ErrorKind::InvalidParams,
        ErrorKind::Internal,
    ];

    pub fn code(self) -> i64 {
        match self {
            ErrorKind::TaskNotFound => -32001,
            ErrorKind::TaskNotCancelable => -32002,
            ErrorKind::PushNotificationNotSupported => -32003,
            ErrorKind::UnsupportedOperation => -32004,
            ErrorKind::ContentTypeNotSupported => -32005,
            ErrorKind::InvalidAgentResponse => -32006,
            ErrorKind::ExtendedAgentCardNotConfigured => -32007,
            ErrorKind::ExtensionSupportRequired => -32008,
            ErrorKind::VersionNotSupported => -32009,
            ErrorKind::ParseError => -32700,
            ErrorKind::InvalidRequest => -32600,
            ErrorKind::MethodNotFound => -32601,
            ErrorKind::InvalidParams => -32602,
            ErrorKind::Internal => -32603,
        }
    }

    pub fn from_code(code: i64) -> Option<ErrorKind> {
        ErrorKind::ALL.into_iter().find(|k| k.code() == code)
    }

    /// The `google.rpc.ErrorInfo` reason. A parse error has none: the reference server sends it
    /// without `data`, since there is no request to attribute it to.
    pub fn reason(self) -> Option<&'static str> {
        Some(match self {
            ErrorKind::TaskNotFound => "TASK_NOT_FOUND",
            ErrorKind::TaskNotCancelable => "TASK_NOT_CANCELABLE",
            ErrorKind::PushNotificationNotSupported => "PUSH_NOTIFICATION_NOT_SUPPORTED",
            ErrorKind::UnsupportedOperation => "UNSUPPORTED_OPERATION",
            ErrorKind::ContentTypeNotSupported => "CONTENT_TYPE_NOT_SUPPORTED",
            ErrorKind::InvalidAgentResponse => "INVALID_AGENT_RESPONSE",
            ErrorKind::ExtendedAgentCardNotConfigured => "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
            ErrorKind::ExtensionSupportRequired => "EXTENSION_SUPPORT_REQUIRED",
            ErrorKind::VersionNotSupported => "VERSION_NOT_SUPPORTED",
            ErrorKind::InvalidRequest => "INVALID_REQUEST",
            ErrorKind::MethodNotFound => "METHOD_NOT_FOUND",
            ErrorKind::InvalidParams => "INVALID_PARAMS",
            ErrorKind::Internal => "INTERNAL_ERROR",
            ErrorKind::ParseError => return None,
        })
    }

    /// The reference server's default messages, so logs read the same against either server.
    pub fn default_message(self) -> &'static str {
        match self {
            ErrorKind::TaskNotFound => "Task not found",
            ErrorKind::TaskNotCancelable => "Task cannot be canceled",
            ErrorKind::PushNotificationNotSupported => "Push Notification is not supported",
            ErrorKind::UnsupportedOperation => "This operation is not supported",
            ErrorKind::ContentTypeNotSupported => "Incompatible content types",
            ErrorKind::InvalidAgentResponse => "Invalid agent response",
            ErrorKind::ExtendedAgentCardNotConfigured => {
                "Authenticated Extended Card is not configured"
            }
            ErrorKind::ExtensionSupportRequired => "Extension support required",
            ErrorKind::VersionNotSupported => "Version not supported",
            ErrorKind::ParseError => "Parse error",
            ErrorKind::InvalidRequest => "Invalid Request",
            ErrorKind::MethodNotFound => "Method not found",
            ErrorKind::InvalidParams => "Invalid params",
            ErrorKind::Internal => "Internal error",
        }
    }
}

/// `google.rpc.ErrorInfo` as A2A puts it in `error.data[]`. The Python client reads only
/// `metadata` (exposed as the exception's `.data`); the rest is for conformance and humans.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorInfo {
    #[serde(rename = "@type")]
    pub type_url: String,
    pub reason: String,
    pub domain: String,
    // Always present, `{}` when empty, like the reference server. String values only: that is
    // ErrorInfo's proto type (map<string, string>).
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
}

/// The JSON-RPC `error` member.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    /// An error of `kind` with its ErrorInfo (if the kind has a reason) and empty metadata.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> RpcError {
        let data = kind.reason().map(|reason| {
            serde_json::to_value([ErrorInfo {
                type_url: ERROR_INFO_TYPE.into(),
                reason: reason.into(),
                domain: ERROR_DOMAIN.into(),
                metadata: BTreeMap::new(),
            }])
            .unwrap_or(Value::Null)
        });
        RpcError {
            code: kind.code(),
            message: message.into(),
            data,
        }
    }

    pub fn kind(&self) -> Option<ErrorKind> {
        ErrorKind::from_code(self.code)
    }

    /// Adds a key to the first ErrorInfo's metadata (what reaches the client's `error.data`).
    pub fn with_metadata(mut self, key: impl Into<String>, value: impl Into<String>) -> RpcError {
        if let Some(Value::Array(items)) = &mut self.data {
            if let Some(Value::Object(info)) = items.first_mut() {
                let meta = info
                    .entry("metadata")
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(meta) = meta {
                    meta.insert(key.into(), Value::String(value.into()));
                }
            }
        }
        self
    }

    /// The first ErrorInfo in `data`, if any.
    pub fn error_info(&self) -> Option<ErrorInfo> {
        match &self.data {
            Some(Value::Array(items)) => items.iter().find_map(|d| {
                let info: ErrorInfo = serde_json::from_value(d.clone()).ok()?;
                (info.type_url == ERROR_INFO_TYPE).then_some(info)
            }),
            _ => None,
        }
    }

    /// -32001: GetTask / CancelTask / SubscribeToTask on an unknown id, or a message naming one.
    pub fn task_not_found(task_id: &str) -> RpcError {
        RpcError::new(ErrorKind::TaskNotFound, format!("Task {task_id} not found"))
    }

    /// -32002: the cancel was refused (terminal task, or a `too-late` policy).
    pub fn task_not_cancelable(task_id: &str, state: TaskState) -> RpcError {
        RpcError::new(
            ErrorKind::TaskNotCancelable,
            format!(
                "Task {task_id} cannot be canceled in state {}",
                state.as_str()
            ),
        )
    }

    /// -32003: push config methods on an agent whose card says it has no push.
    pub fn push_notification_not_supported() -> RpcError {
        RpcError::new(
            ErrorKind::PushNotificationNotSupported,
            ErrorKind::PushNotificationNotSupported.default_message(),
        )
    }

    /// -32004 in general (e.g. streaming on an agent without the capability).
    pub fn unsupported_operation(message: impl Into<String>) -> RpcError {
        RpcError::new(ErrorKind::UnsupportedOperation, message)
    }

    /// -32004 for a message to, or a subscription on, a terminal task: terminal tasks never
    /// restart (REC-6). Message text as the reference server words it.
    pub fn task_in_terminal_state(task_id: &str, state: TaskState) -> RpcError {
        RpcError::unsupported_operation(format!(
            "Task {task_id} is in terminal state: {}",
            state.as_str()
        ))
    }

    /// -32005: none of the accepted output modes can be produced.
    pub fn content_type_not_supported(message: impl Into<String>) -> RpcError {
        RpcError::new(ErrorKind::ContentTypeNotSupported, message)
    }

    /// -32006: the agent itself misbehaved (kept for scripted faults).
    pub fn invalid_agent_response(message: impl Into<String>) -> RpcError {
        RpcError::new(ErrorKind::InvalidAgentResponse, message)
    }

    /// -32007: GetExtendedAgentCard when no extended card exists.
    pub fn extended_agent_card_not_configured() -> RpcError {
        RpcError::new(
            ErrorKind::ExtendedAgentCardNotConfigured,
            ErrorKind::ExtendedAgentCardNotConfigured.default_message(),
        )
    }

    /// -32008: the agent requires an extension the client did not activate.
    pub fn extension_support_required(uri: &str) -> RpcError {
        RpcError::new(
            ErrorKind::ExtensionSupportRequired,
            format!("Extension {uri} is required"),
        )
    }

    /// -32009: an `A2A-Version` other than 1.x (strict mode only; missing means 0.3).
    pub fn version_not_supported(version: &str) -> RpcError {
        RpcError::new(
            ErrorKind::VersionNotSupported,
            format!("A2A version '{version}' is not supported by this agent; expected 1.x"),
        )
    }

    /// -32700: the body is not JSON.
    pub fn parse_error(detail: impl Into<String>) -> RpcError {
        RpcError::new(ErrorKind::ParseError, detail)
    }

    /// -32600: JSON, but not a JSON-RPC 2.0 request object.
    pub fn invalid_request(message: impl Into<String>) -> RpcError {
        RpcError::new(ErrorKind::InvalidRequest, message)
    }

    /// -32601: unknown method, including every 0.3 name.
    pub fn method_not_found(method: &str) -> RpcError {
        RpcError::new(
            ErrorKind::MethodNotFound,
            format!("Method not found: {method}"),
        )
    }

    /// -32602: params that don't fit the method.
    pub fn invalid_params(message: impl Into<String>) -> RpcError {
        RpcError::new(ErrorKind::InvalidParams, message)
    }

    /// -32602 for a message whose contextId differs from its task's (SPEC §3.4.3 MUST reject).
    pub fn context_mismatch(context_id: &str, task_context_id: &str, task_id: &str) -> RpcError {
        RpcError::invalid_params(format!(
            "Context {context_id} does not match context {task_context_id} of task {task_id}"
        ))
    }

    /// -32603.
    pub fn internal(message: impl Into<String>) -> RpcError {
        RpcError::new(ErrorKind::Internal, message)
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.code, self.message)
    }
}

impl std::error::Error for RpcError {}

// ---------------------------------------------------------------------------------------------
// Enums
//
// Hand-written serde: ProtoJSON readers accept an enum as its name or its number and map unknown
// names to the zero value (the reference server parses with ignore_unknown_fields, which does
// exactly that). Deriving would reject both.

macro_rules! proto_enum {
    ($(#[$doc:meta])* $name:ident { $($variant:ident = $num:literal => $wire:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub enum $name {
            #[default]
            $($variant),+
        }

        impl $name {
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $wire),+ }
            }

            pub fn number(self) -> i64 {
                match self { $($name::$variant => $num),+ }
            }

            /// Unknown names and numbers read as the `*_UNSPECIFIED` value.
            pub fn from_wire_name(s: &str) -> $name {
                match s { $($wire => $name::$variant,)+ _ => $name::default() }
            }

            pub fn from_number(n: i64) -> $name {
                match n { $($num => $name::$variant,)+ _ => $name::default() }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl Visitor<'_> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str(concat!(stringify!($name), " name or number"))
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$name, E> {
                        Ok($name::from_wire_name(v))
                    }
                    fn visit_i64<E: de::Error>(self, v: i64) -> Result<$name, E> {
                        Ok($name::from_number(v))
                    }
                    fn visit_u64<E: de::Error>(self, v: u64) -> Result<$name, E> {
                        Ok(i64::try_from(v).map($name::from_number).unwrap_or_default())
                    }
                }
                d.deserialize_any(V)
            }
        }
    };
}

proto_enum!(
    /// Task lifecycle state, spelled as in the proto (PROTO `enum TaskState`).
    TaskState {
        Unspecified = 0 => "TASK_STATE_UNSPECIFIED",
        Submitted = 1 => "TASK_STATE_SUBMITTED",
        Working = 2 => "TASK_STATE_WORKING",
        Completed = 3 => "TASK_STATE_COMPLETED",
        Failed = 4 => "TASK_STATE_FAILED",
        Canceled = 5 => "TASK_STATE_CANCELED",
        InputRequired = 6 => "TASK_STATE_INPUT_REQUIRED",
        Rejected = 7 => "TASK_STATE_REJECTED",
        AuthRequired = 8 => "TASK_STATE_AUTH_REQUIRED",
    }
);

impl TaskState {
    /// No further transitions, no restart: messages get -32004, cancels get -32002.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Failed | TaskState::Canceled | TaskState::Rejected
        )
    }

    /// Paused for the client; a blocking SendMessage returns here, and streams close here.
    pub fn is_interrupted(self) -> bool {
        matches!(self, TaskState::InputRequired | TaskState::AuthRequired)
    }

    /// Where a blocking SendMessage stops waiting and an SSE stream ends.
    pub fn ends_stream(self) -> bool {
        self.is_terminal() || self.is_interrupted()
    }
}

proto_enum!(
    /// Message author (PROTO `enum Role`).
    Role {
        Unspecified = 0 => "ROLE_UNSPECIFIED",
        User = 1 => "ROLE_USER",
        Agent = 2 => "ROLE_AGENT",
    }
);

// ---------------------------------------------------------------------------------------------
// Data model

/// `google.protobuf.Struct` on the wire: any JSON object.
pub type Metadata = Map<String, Value>;

/// The content oneof of a [`Part`]. Serialized flattened, so a part is `{"text": "…"}`,
/// `{"data": {…}, "mediaType": "…"}` and so on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PartContent {
    Text(String),
    /// Proto `bytes`: standard base64 text on the wire (see [`base64_encode`]). Kept encoded, so
    /// a scenario's bytes round-trip exactly and nothing here needs a base64 decoder.
    Raw(String),
    /// A file by reference.
    Url(String),
    /// Any JSON value (`google.protobuf.Value`).
    Data(Value),
}

/// One piece of a message or artifact. No `kind` field in 1.0; an incoming 0.3 `kind` is ignored.
// Serialize: by hand below, keys in sorted order (see `success_body`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(from = "WirePart")]
pub struct Part {
    pub content: PartContent,
    /// Metadata, file name and media type, boxed and absent when all three are: nearly every
    /// part is plain text, and tasks keep their messages' and artifacts' parts for the world's
    /// life (inline, the three made a part 112 bytes instead of 40).
    extras: Option<Box<PartExtras>>,
}

/// The rarely given fields of a [`Part`].
#[derive(Debug, Clone, PartialEq, Default)]
struct PartExtras {
    metadata: Option<Metadata>,
    filename: Option<String>,
    media_type: Option<String>,
}

/// A [`Part`] as `serde` reads it (the same fields, inline).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WirePart {
    #[serde(flatten)]
    content: PartContent,
    #[serde(default)]
    metadata: Option<Metadata>,
    #[serde(default)]
    filename: Option<String>,
    #[serde(default)]
    media_type: Option<String>,
}

impl From<WirePart> for Part {
    fn from(w: WirePart) -> Part {
        Part::with(w.content)
            .set_metadata(w.metadata)
            .set_filename(w.filename)
            .set_media_type(w.media_type)
    }
}

impl Part {
    fn with(content: PartContent) -> Part {
        Part {
            content,
            extras: None,
        }
    }

    pub fn metadata(&self) -> Option<&Metadata> {
        self.extras.as_ref().and_then(|e| e.metadata.as_ref())
    }

    pub fn filename(&self) -> Option<&String> {
        self.extras.as_ref().and_then(|e| e.filename.as_ref())
    }

    pub fn media_type(&self) -> Option<&String> {
        self.extras.as_ref().and_then(|e| e.media_type.as_ref())
    }

    /// Only its content: no metadata, file name or media type.
    pub fn is_bare(&self) -> bool {
        self.extras.is_none()
    }

    /// The extras, made when one of them is given (an absent one leaves them as they are).
    fn extras_for(&mut self, given: bool) -> Option<&mut PartExtras> {
        if given {
            Some(self.extras.get_or_insert_with(Box::default))
        } else {
            self.extras.as_deref_mut()
        }
    }

    /// Sets (or clears) the metadata.
    pub fn set_metadata(mut self, metadata: Option<Metadata>) -> Part {
        if let Some(e) = self.extras_for(metadata.is_some()) {
            e.metadata = metadata;
        }
        self.drop_empty_extras()
    }

    /// Sets (or clears) the file name.
    pub fn set_filename(mut self, filename: Option<String>) -> Part {
        if let Some(e) = self.extras_for(filename.is_some()) {
            e.filename = filename;
        }
        self.drop_empty_extras()
    }

    /// Sets (or clears) the media type.
    pub fn set_media_type(mut self, media_type: Option<String>) -> Part {
        if let Some(e) = self.extras_for(media_type.is_some()) {
            e.media_type = media_type;
        }
        self.drop_empty_extras()
    }

    /// Extras with nothing in them are none, so that equal parts compare equal.
    fn drop_empty_extras(mut self) -> Part {
        if self
            .extras
            .as_deref()
            .is_some_and(|e| *e == PartExtras::default())
        {
            self.extras = None;
        }
        self
    }

    pub fn text(text: impl Into<String>) -> Part {
        Part::with(PartContent::Text(text.into()))
    }

    pub fn data(data: Value) -> Part {
        Part::with(PartContent::Data(data))
    }

    pub fn url(url: impl Into<String>) -> Part {
        Part::with(PartContent::Url(url.into()))
    }

    /// From bytes; encodes them.
    pub fn raw(bytes: &[u8]) -> Part {
        Part::with(PartContent::Raw(base64_encode(bytes)))
    }

    /// From text that is already base64 (as a scenario may give it).
    pub fn raw_base64(b64: impl Into<String>) -> Part {
        Part::with(PartContent::Raw(b64.into()))
    }

    pub fn with_media_type(self, media_type: impl Into<String>) -> Part {
        self.set_media_type(Some(media_type.into()))
    }

    pub fn with_filename(self, filename: impl Into<String>) -> Part {
        self.set_filename(Some(filename.into()))
    }

    pub fn with_metadata(self, metadata: Metadata) -> Part {
        self.set_metadata(Some(metadata))
    }

    pub fn as_text(&self) -> Option<&str> {
        match &self.content {
            PartContent::Text(t) => Some(t),
            _ => None,
        }
    }
}

// Serialize: by hand below, keys in sorted order (see `success_body`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub message_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    pub role: Role,
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reference_task_ids: Vec<String>,
}

impl Message {
    pub fn agent(message_id: impl Into<String>, parts: Vec<Part>) -> Message {
        Message {
            message_id: message_id.into(),
            context_id: None,
            task_id: None,
            role: Role::Agent,
            parts,
            metadata: None,
            extensions: Vec::new(),
            reference_task_ids: Vec::new(),
        }
    }

    /// All text parts joined by newlines: what behaviour matching on "text" looks at.
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .filter_map(Part::as_text)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// A metadata value as a string: the revision key may carry a string or a number.
    pub fn metadata_str(&self, key: &str) -> Option<String> {
        match self.metadata.as_ref()?.get(key)? {
            Value::String(s) => Some(s.clone()),
            Value::Null => None,
            other => Some(other.to_string()),
        }
    }
}

// Serialize: by hand below, keys in sorted order (see `success_body`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    pub state: TaskState,
    /// Boxed: most statuses have none, and a task keeps its status for the world's life (a
    /// message inline made every kept task ~180 bytes larger).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Box<Message>>,
    /// ISO-8601 UTC with `Z` (SPEC §5.6.1); protobuf's Timestamp parser rejects other shapes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

impl TaskStatus {
    pub fn new(state: TaskState, timestamp: impl Into<String>) -> TaskStatus {
        TaskStatus {
            state,
            message: None,
            timestamp: Some(timestamp.into()),
        }
    }
}

// Serialize: by hand below, keys in sorted order (see `success_body`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    pub artifact_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub parts: Vec<Part>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
}

// Serialize: by hand below, keys in sorted order (see `success_body`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    pub id: String,
    // Optional in the proto, but every task the server makes has one, and clients key on it.
    #[serde(default)]
    pub context_id: String,
    pub status: TaskStatus,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Message>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

impl Task {
    /// The `historyLength` rule the reference server applies: keep the last N messages; 0 means
    /// none; absent means all.
    pub fn with_history_length(mut self, history_length: Option<i32>) -> Task {
        if let Some(n) = history_length {
            let keep = usize::try_from(n.max(0)).unwrap_or(0);
            let drop = self.history.len().saturating_sub(keep);
            self.history.drain(..drop);
        }
        self
    }

    /// ListTasks leaves artifacts out unless `includeArtifacts` is true.
    pub fn without_artifacts(mut self) -> Task {
        self.artifacts.clear();
        self
    }
}

/// No `final` flag in 1.0: the server closes the stream after a terminal or interrupted state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    pub task_id: String,
    pub context_id: String,
    pub status: TaskStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    pub task_id: String,
    pub context_id: String,
    pub artifact: Artifact,
    /// This chunk extends an artifact with the same id sent earlier.
    #[serde(default, skip_serializing_if = "is_false")]
    pub append: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub last_chunk: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

/// One event of a stream (and the body of a push notification): a single-key object naming the
/// oneof member, `{"task": …}`, `{"message": …}`, `{"statusUpdate": …}`, `{"artifactUpdate": …}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StreamResponse {
    Task(Task),
    Message(Message),
    StatusUpdate(TaskStatusUpdateEvent),
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

impl StreamResponse {
    pub fn task_id(&self) -> Option<&str> {
        match self {
            StreamResponse::Task(t) => Some(&t.id),
            StreamResponse::Message(m) => m.task_id.as_deref(),
            StreamResponse::StatusUpdate(u) => Some(&u.task_id),
            StreamResponse::ArtifactUpdate(u) => Some(&u.task_id),
        }
    }

    /// Whether a stream must close after this event: a direct Message, or a terminal or
    /// interrupted state.
    pub fn ends_stream(&self) -> bool {
        match self {
            StreamResponse::Message(_) => true,
            StreamResponse::Task(t) => t.status.state.ends_stream(),
            StreamResponse::StatusUpdate(u) => u.status.state.ends_stream(),
            StreamResponse::ArtifactUpdate(_) => false,
        }
    }
}

/// The result of SendMessage: wrapped like a StreamResponse, never a bare Task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SendMessageResponse {
    Task(Task),
    Message(Message),
}

// ---------------------------------------------------------------------------------------------
// Method params and results

/// Params of SendMessage and SendStreamingMessage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    pub message: Message,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendMessageConfiguration>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

impl SendMessageRequest {
    /// SendMessage blocks until a terminal or interrupted state unless this is true.
    pub fn return_immediately(&self) -> bool {
        self.configuration
            .as_ref()
            .is_some_and(|c| c.return_immediately)
    }

    pub fn history_length(&self) -> Option<i32> {
        self.configuration.as_ref().and_then(|c| c.history_length)
    }

    pub fn push_config(&self) -> Option<&TaskPushNotificationConfig> {
        self.configuration
            .as_ref()
            .and_then(|c| c.task_push_notification_config.as_ref())
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accepted_output_modes: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_push_notification_config: Option<TaskPushNotificationConfig>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "opt_int"
    )]
    pub history_length: Option<i32>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub return_immediately: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    pub id: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "opt_int"
    )]
    pub history_length: Option<i32>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskState>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "opt_int"
    )]
    pub page_size: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_token: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "opt_int"
    )]
    pub history_length: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_timestamp_after: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_artifacts: Option<bool>,
}

/// The reference server's page size when none is asked for, and its ceiling.
pub const LIST_TASKS_DEFAULT_PAGE_SIZE: i32 = 50;
pub const LIST_TASKS_MAX_PAGE_SIZE: i32 = 100;

/// Every field is always present (SPEC §3.1.4: `nextPageToken` MUST be, `""` on the last page).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResponse {
    pub tasks: Vec<Task>,
    #[serde(default)]
    pub next_page_token: String,
    #[serde(default)]
    pub page_size: i32,
    #[serde(default)]
    pub total_size: i32,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelTaskRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    pub id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeToTaskRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    pub id: String,
}

/// A webhook registration. It is both the params and the result of
/// CreateTaskPushNotificationConfig (no wrapper object), and the element of list results. The
/// reference server fills `taskId` and defaults a missing `id` to the task id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    pub url: String,
    /// Echoed back in the [`NOTIFICATION_TOKEN_HEADER`] of every delivery.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<AuthenticationInfo>,
}

impl TaskPushNotificationConfig {
    /// What the server stores and returns: bound to its task, with an id.
    pub fn normalized(mut self, task_id: &str) -> TaskPushNotificationConfig {
        self.task_id = Some(task_id.to_owned());
        if self.id.as_deref().is_none_or(str::is_empty) {
            self.id = Some(task_id.to_owned());
        }
        self
    }

    /// Headers a delivery carries, as the reference sender builds them: the token, and
    /// `Authorization: <scheme> <credentials>` when both are set.
    pub fn delivery_headers(&self) -> Vec<(&'static str, String)> {
        let mut headers = Vec::new();
        if let Some(token) = self.token.as_deref().filter(|t| !t.is_empty()) {
            headers.push((NOTIFICATION_TOKEN_HEADER, token.to_owned()));
        }
        if let Some(auth) = &self.authentication {
            if let Some(creds) = auth.credentials.as_deref().filter(|c| !c.is_empty()) {
                if !auth.scheme.is_empty() {
                    headers.push(("Authorization", format!("{} {creds}", auth.scheme)));
                }
            }
        }
        headers
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthenticationInfo {
    pub scheme: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<String>,
}

/// Params of GetTaskPushNotificationConfig and DeleteTaskPushNotificationConfig. (Delete answers
/// `"result": null`; an unknown config id on Get is -32001, as in the reference server.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfigRef {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    pub task_id: String,
    pub id: String,
}

pub type GetTaskPushNotificationConfigRequest = TaskPushNotificationConfigRef;
pub type DeleteTaskPushNotificationConfigRequest = TaskPushNotificationConfigRef;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    pub task_id: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "opt_int"
    )]
    pub page_size: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_token: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsResponse {
    #[serde(default)]
    pub configs: Vec<TaskPushNotificationConfig>,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub next_page_token: String,
}

// ---------------------------------------------------------------------------------------------
// Agent card

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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<AgentProvider>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub documentation_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icon_url: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    pub url: String,
    pub protocol_binding: String,
    pub protocol_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
}

/// Undeclared capabilities are skipped by the conformance kit and refused by clients
/// (`subscribe` raises without `streaming`), so declare exactly what is served.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_notifications: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extended_agent_card: Option<bool>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<Value>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSkill {
    pub id: String,
    pub name: String,
    pub description: String,
    pub tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub input_modes: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output_modes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentProvider {
    pub url: String,
    pub organization: String,
}

/// The card for a scripted agent whose JSON-RPC endpoint is `url` (e.g.
/// `http://127.0.0.1:PORT/agents/NAME`): one JSON-RPC 1.0 interface, streaming and push on,
/// one skill named after the agent (skills and their tags are required fields).
pub fn agent_card(name: &str, description: &str, url: &str) -> AgentCard {
    let modes = vec!["text/plain".to_owned(), "application/json".to_owned()];
    AgentCard {
        name: name.into(),
        description: description.into(),
        supported_interfaces: vec![AgentInterface {
            url: url.into(),
            protocol_binding: PROTOCOL_BINDING_JSONRPC.into(),
            protocol_version: PROTOCOL_VERSION.into(),
            tenant: None,
        }],
        // The agent's own version, not the protocol's: the fake's build is the honest answer.
        version: env!("CARGO_PKG_VERSION").into(),
        capabilities: AgentCapabilities {
            streaming: Some(true),
            push_notifications: Some(true),
            extended_agent_card: None,
            extensions: Vec::new(),
        },
        default_input_modes: modes.clone(),
        default_output_modes: modes,
        skills: vec![AgentSkill {
            id: name.into(),
            name: name.into(),
            description: description.into(),
            tags: vec!["doubleagent".into()],
            examples: Vec::new(),
            input_modes: Vec::new(),
            output_modes: Vec::new(),
        }],
        provider: None,
        documentation_url: None,
        icon_url: None,
    }
}

// ---------------------------------------------------------------------------------------------
// Streaming and push framing

/// One SSE event carrying `json` (a complete JSON-RPC response for a streaming call). CRLF line
/// endings as the reference server sends them; compact JSON never contains a raw newline, so a
/// single `data:` line always suffices.
pub fn sse_frame(json: &Value) -> String {
    format!("data: {json}\r\n\r\n")
}

/// An error in the middle of a stream: `event: error` so the client raises the mapped exception.
/// (An error before the first event is sent as a plain `application/json` response instead.)
pub fn sse_error_frame(json: &Value) -> String {
    format!("event: error\r\ndata: {json}\r\n\r\n")
}

/// A stream event as the JSON-RPC response to the streaming call with id `id`.
pub fn stream_event(id: &RpcId, event: &StreamResponse) -> Value {
    RpcResponse::success(id.clone(), event).to_value()
}

/// The body POSTed to a push webhook: the bare StreamResponse, no JSON-RPC envelope (what the
/// reference sender does, for the Task snapshot and every status and artifact update).
pub fn push_body(event: &StreamResponse) -> Value {
    serde_json::to_value(event).unwrap_or(Value::Null)
}

// ---------------------------------------------------------------------------------------------
// Serialisation in sorted key order

// The types a response carries write their keys in byte order, the order a `serde_json::Value`
// object (a sorted map) has: direct serialisation then gives the very text the answers had when
// they were built as trees first, without building the trees (`success_body`). The absent-means-
// omitted rules are the same as on the fields' `serde` attributes. Tested against the tree route.

impl Serialize for Part {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        if let PartContent::Data(d) = &self.content {
            m.serialize_entry("data", d)?;
        }
        if let Some(f) = self.filename() {
            m.serialize_entry("filename", f)?;
        }
        if let Some(t) = self.media_type() {
            m.serialize_entry("mediaType", t)?;
        }
        if let Some(md) = self.metadata() {
            m.serialize_entry("metadata", md)?;
        }
        match &self.content {
            PartContent::Raw(r) => m.serialize_entry("raw", r)?,
            PartContent::Text(t) => m.serialize_entry("text", t)?,
            PartContent::Url(u) => m.serialize_entry("url", u)?,
            PartContent::Data(_) => {}
        }
        m.end()
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        if let Some(c) = &self.context_id {
            m.serialize_entry("contextId", c)?;
        }
        if !self.extensions.is_empty() {
            m.serialize_entry("extensions", &self.extensions)?;
        }
        m.serialize_entry("messageId", &self.message_id)?;
        if let Some(md) = &self.metadata {
            m.serialize_entry("metadata", md)?;
        }
        m.serialize_entry("parts", &self.parts)?;
        if !self.reference_task_ids.is_empty() {
            m.serialize_entry("referenceTaskIds", &self.reference_task_ids)?;
        }
        m.serialize_entry("role", &self.role)?;
        if let Some(t) = &self.task_id {
            m.serialize_entry("taskId", t)?;
        }
        m.end()
    }
}

impl Serialize for TaskStatus {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        if let Some(msg) = &self.message {
            m.serialize_entry("message", msg)?;
        }
        m.serialize_entry("state", &self.state)?;
        if let Some(t) = &self.timestamp {
            m.serialize_entry("timestamp", t)?;
        }
        m.end()
    }
}

impl Serialize for Artifact {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("artifactId", &self.artifact_id)?;
        if let Some(d) = &self.description {
            m.serialize_entry("description", d)?;
        }
        if !self.extensions.is_empty() {
            m.serialize_entry("extensions", &self.extensions)?;
        }
        if let Some(md) = &self.metadata {
            m.serialize_entry("metadata", md)?;
        }
        if let Some(n) = &self.name {
            m.serialize_entry("name", n)?;
        }
        m.serialize_entry("parts", &self.parts)?;
        m.end()
    }
}

impl Serialize for Task {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        serialize_task(self, &self.history, s)
    }
}

/// A task with `history` in place of its own (a tail of it).
fn serialize_task<S: Serializer>(t: &Task, history: &[Message], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(None)?;
    if !t.artifacts.is_empty() {
        m.serialize_entry("artifacts", &t.artifacts)?;
    }
    m.serialize_entry("contextId", &t.context_id)?;
    if !history.is_empty() {
        m.serialize_entry("history", history)?;
    }
    m.serialize_entry("id", &t.id)?;
    if let Some(md) = &t.metadata {
        m.serialize_entry("metadata", md)?;
    }
    m.serialize_entry("status", &t.status)?;
    m.end()
}

/// The SendMessage result `{"task": …}` written from a borrowed task, its history cut to
/// `history_length` as [`Task::with_history_length`] cuts it: the same text as
/// `SendMessageResponse::Task(task.clone().with_history_length(history_length))`, without the
/// copy (a blocking call's answer is written while the task is locked).
pub struct TaskResult<'a> {
    pub task: &'a Task,
    pub history_length: Option<i32>,
}

impl TaskResult<'_> {
    fn history(&self) -> &[Message] {
        let all = &self.task.history;
        match self.history_length {
            None => &all[..],
            Some(n) => {
                let keep = usize::try_from(n.max(0)).unwrap_or(0);
                &all[all.len().saturating_sub(keep)..]
            }
        }
    }

    /// `success_body(id, self)`, the task written by hand ([`json`]): the same bytes.
    pub fn body(&self, id: &RpcId) -> Vec<u8> {
        let mut out = Vec::with_capacity(512);
        out.extend_from_slice(b"{\"id\":");
        let _ = serde_json::to_writer(&mut out, id);
        out.extend_from_slice(b",\"jsonrpc\":\"2.0\",\"result\":{\"task\":");
        json::task(&mut out, self.task, self.history());
        out.extend_from_slice(b"}}");
        out
    }
}

impl Serialize for TaskResult<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        struct Cut<'a>(&'a Task, &'a [Message]);
        impl Serialize for Cut<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                serialize_task(self.0, self.1, s)
            }
        }
        let mut m = s.serialize_map(Some(1))?;
        m.serialize_entry("task", &Cut(self.task, self.history()))?;
        m.end()
    }
}

// ---------------------------------------------------------------------------------------------
// Small helpers

/// Standard base64 with padding, as ProtoJSON writes `bytes`.
pub fn base64_encode(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// ProtoJSON lets int32 arrive as a number or a decimal string; accept both.
fn opt_int<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i32>, D::Error> {
    match Option::<Value>::deserialize(d)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_i64()
            .and_then(|v| i32::try_from(v).ok())
            .map(Some)
            .ok_or_else(|| de::Error::custom(format!("not an int32: {n}"))),
        Some(Value::String(s)) => s
            .parse()
            .map(Some)
            .map_err(|_| de::Error::custom(format!("not an int32: {s:?}"))),
        Some(other) => Err(de::Error::custom(format!("not an int32: {other}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Decode `doc` as `T`, encode it again, and require the same JSON: proves field names,
    /// omission of absent fields and oneof wrapping match the captured wire text.
    fn round_trip<T: DeserializeOwned + Serialize>(doc: Value) -> T {
        let typed: T = serde_json::from_value(doc.clone()).expect("decodes");
        assert_eq!(serde_json::to_value(&typed).unwrap(), doc);
        typed
    }

    #[test]
    fn send_message_request_as_the_python_client_sends_it() {
        // Captured from a2a-sdk 1.3.0 (reference §2); the client always sends `configuration`.
        let req = json!({"method":"SendMessage","params":{"message":{"messageId":"2343","role":"ROLE_USER",
            "parts":[{"text":"hi"}]},"configuration":{}},"id":"602cb691","jsonrpc":"2.0"});
        let rpc = parse_request(req.to_string().as_bytes()).unwrap();
        assert_eq!(rpc.id, RpcId::from("602cb691"));
        assert_eq!(Method::from_name(&rpc.method), Some(Method::SendMessage));
        let params: SendMessageRequest = rpc.params().unwrap();
        assert_eq!(params.message.role, Role::User);
        assert_eq!(params.message.text(), "hi");
        assert!(!params.return_immediately());
        assert_eq!(serde_json::to_value(&rpc).unwrap(), req);
        round_trip::<SendMessageRequest>(req["params"].clone());
    }

    #[test]
    fn return_immediately_and_push_config_in_send() {
        let params = json!({"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"go"}],
            "metadata":{"revision":"1"}},"configuration":{"returnImmediately":true,"historyLength":2,
            "taskPushNotificationConfig":{"url":"http://127.0.0.1:9/hook","token":"tok"}}});
        let req: SendMessageRequest = round_trip(params);
        assert!(req.return_immediately());
        assert_eq!(req.history_length(), Some(2));
        assert_eq!(req.push_config().unwrap().token.as_deref(), Some("tok"));
        assert_eq!(req.message.metadata_str("revision").as_deref(), Some("1"));
    }

    #[test]
    fn error_response_matches_reference_capture() {
        let captured = json!({"error":{"code":-32002,"message":"Task cannot be canceled","data":[{
            "@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"TASK_NOT_CANCELABLE",
            "domain":"a2a-protocol.org","metadata":{}}]},"id":"1","jsonrpc":"2.0"});
        let resp: RpcResponse = round_trip(captured.clone());
        let built = RpcResponse::error(
            RpcId::from("1"),
            RpcError::new(ErrorKind::TaskNotCancelable, "Task cannot be canceled"),
        );
        assert_eq!(built, resp);
        assert_eq!(built.to_value(), captured);
    }

    #[test]
    fn every_error_kind_has_its_code_and_reason() {
        let cases = [
            (
                RpcError::task_not_found("t1"),
                -32001,
                Some("TASK_NOT_FOUND"),
            ),
            (
                RpcError::task_not_cancelable("t1", TaskState::Completed),
                -32002,
                Some("TASK_NOT_CANCELABLE"),
            ),
            (
                RpcError::push_notification_not_supported(),
                -32003,
                Some("PUSH_NOTIFICATION_NOT_SUPPORTED"),
            ),
            (
                RpcError::task_in_terminal_state("t1", TaskState::Completed),
                -32004,
                Some("UNSUPPORTED_OPERATION"),
            ),
            (
                RpcError::content_type_not_supported("x"),
                -32005,
                Some("CONTENT_TYPE_NOT_SUPPORTED"),
            ),
            (
                RpcError::invalid_agent_response("x"),
                -32006,
                Some("INVALID_AGENT_RESPONSE"),
            ),
            (
                RpcError::extended_agent_card_not_configured(),
                -32007,
                Some("EXTENDED_AGENT_CARD_NOT_CONFIGURED"),
            ),
            (
                RpcError::extension_support_required("urn:x"),
                -32008,
                Some("EXTENSION_SUPPORT_REQUIRED"),
            ),
            (
                RpcError::version_not_supported("0.3"),
                -32009,
                Some("VERSION_NOT_SUPPORTED"),
            ),
            (RpcError::parse_error("eof"), -32700, None),
            (
                RpcError::invalid_request("x"),
                -32600,
                Some("INVALID_REQUEST"),
            ),
            (
                RpcError::method_not_found("message/send"),
                -32601,
                Some("METHOD_NOT_FOUND"),
            ),
            (
                RpcError::context_mismatch("c2", "c1", "t1"),
                -32602,
                Some("INVALID_PARAMS"),
            ),
            (RpcError::internal("x"), -32603, Some("INTERNAL_ERROR")),
        ];
        for (err, code, reason) in cases {
            assert_eq!(err.code, code, "{err}");
            assert_eq!(err.kind().map(ErrorKind::code), Some(code));
            let info = err.error_info();
            assert_eq!(info.as_ref().map(|i| i.reason.as_str()), reason, "{err}");
            if let Some(info) = info {
                assert_eq!(info.domain, ERROR_DOMAIN);
                assert!(info.metadata.is_empty());
            } else {
                assert!(err.data.is_none(), "no reason, no data");
            }
        }
        assert_eq!(
            RpcError::task_in_terminal_state("t9", TaskState::Completed).message,
            "Task t9 is in terminal state: TASK_STATE_COMPLETED"
        );
    }

    #[test]
    fn error_metadata_lands_in_error_info() {
        let err = RpcError::invalid_params("bad").with_metadata("parseError", "missing field `id`");
        assert_eq!(
            err.data.unwrap()[0]["metadata"],
            json!({"parseError": "missing field `id`"})
        );
    }

    #[test]
    fn parse_request_classifies_envelope_errors_in_reference_order() {
        let code = |body: &str| parse_request(body.as_bytes()).unwrap_err();
        let r = code(r#"{"jsonrpc": "2.0", "id": 1, "method": "#);
        assert!(matches!(&r.outcome, RpcOutcome::Error(e) if e.code == -32700));
        assert_eq!(r.id, RpcId::Null);
        assert_eq!(
            r.to_value()["id"],
            Value::Null,
            "id is sent as null, not omitted"
        );

        let r = code(r#"[{"jsonrpc":"2.0","id":1,"method":"GetTask"}]"#);
        assert!(matches!(&r.outcome, RpcOutcome::Error(e) if e.code == -32600));

        let r = code(r#"{"jsonrpc":"1.0","id":"x","method":"GetTask"}"#);
        assert!(matches!(&r.outcome, RpcOutcome::Error(e) if e.code == -32600));
        assert_eq!(r.id, RpcId::from("x"));

        let r = code(r#"{"jsonrpc":"2.0","id":true,"method":"GetTask"}"#);
        assert!(matches!(&r.outcome, RpcOutcome::Error(e) if e.code == -32600));
        assert_eq!(r.id, RpcId::Null);

        let r = code(r#"{"jsonrpc":"2.0","id":3,"method":"GetTask","params":[1]}"#);
        assert!(matches!(&r.outcome, RpcOutcome::Error(e) if e.code == -32602));
        assert_eq!(r.id, RpcId::from(3));

        // Unknown methods pass the envelope check; the caller answers -32601.
        let ok = parse_request(br#"{"jsonrpc":"2.0","id":7,"method":"message/send","params":{}}"#)
            .unwrap();
        assert_eq!(Method::from_name(&ok.method), None);
        let resp = RpcResponse::error(ok.id, RpcError::method_not_found(&ok.method));
        assert_eq!(resp.to_value()["id"], json!(7));
        assert_eq!(resp.to_value()["error"]["code"], json!(-32601));
    }

    #[test]
    fn params_mismatch_is_invalid_params() {
        let rpc = parse_request(
            br#"{"jsonrpc":"2.0","id":"g","method":"GetTask","params":{"historyLength":2}}"#,
        )
        .unwrap();
        let err = rpc.params::<GetTaskRequest>().unwrap_err();
        assert_eq!(err.code, -32602);
        assert!(err
            .error_info()
            .unwrap()
            .metadata
            .contains_key("parseError"));
    }

    #[test]
    fn rpc_ids_round_trip_as_sent() {
        for id in [json!("abc"), json!(42), json!(null), json!(1.5)] {
            let doc = json!({"jsonrpc": "2.0", "result": {}, "id": id});
            let resp: RpcResponse = round_trip(doc);
            assert_eq!(serde_json::to_value(&resp.id).unwrap(), id);
        }
    }

    #[test]
    fn delete_result_null_is_still_a_result() {
        let doc = json!({"result": null, "id": "d1", "jsonrpc": "2.0"});
        let resp: RpcResponse = round_trip(doc.clone());
        assert_eq!(resp.outcome, RpcOutcome::Result(Value::Null));
        assert_eq!(RpcResponse::success(RpcId::from("d1"), ()).to_value(), doc);
    }

    #[test]
    fn stream_events_from_reference_sse_capture() {
        let submitted = json!({"result": {"task": {"id": "66e5", "contextId": "0546",
            "status": {"state": "TASK_STATE_SUBMITTED"}, "history": [{"messageId": "m1", "contextId": "0546",
            "taskId": "66e5", "role": "ROLE_USER", "parts": [{"text": "research vendor"}]}]}},
            "id": "s1", "jsonrpc": "2.0"});
        let artifact = json!({"result": {"artifactUpdate": {"taskId": "66e5", "contextId": "0546",
            "artifact": {"artifactId": "a1", "name": "answer", "parts": [{"text": "result text"}]}}},
            "id": "s1", "jsonrpc": "2.0"});
        let completed = json!({"result": {"statusUpdate": {"taskId": "66e5", "contextId": "0546",
            "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-11-30T08:20:56.819310Z"}}},
            "id": "s1", "jsonrpc": "2.0"});
        let mut ends = Vec::new();
        for doc in [&submitted, &artifact, &completed] {
            let resp: RpcResponse = round_trip(doc.clone());
            let RpcOutcome::Result(result) = resp.outcome else {
                panic!("result expected")
            };
            let ev: StreamResponse = round_trip(result);
            assert_eq!(ev.task_id(), Some("66e5"));
            assert_eq!(stream_event(&RpcId::from("s1"), &ev), *doc);
            ends.push(ev.ends_stream());
        }
        assert_eq!(ends, [false, false, true]);
    }

    #[test]
    fn sse_frames_are_single_data_lines_with_crlf() {
        let ev = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus::new(TaskState::Working, "2026-01-01T00:00:00.000Z"),
            metadata: None,
        });
        let v = stream_event(&RpcId::from(5), &ev);
        let frame = sse_frame(&v);
        assert!(frame.starts_with("data: {") && frame.ends_with("}\r\n\r\n"));
        assert_eq!(frame.matches('\n').count(), 2);
        let data = frame.strip_prefix("data: ").unwrap().trim_end();
        assert_eq!(serde_json::from_str::<Value>(data).unwrap(), v);
        assert_eq!(
            v,
            json!({"jsonrpc":"2.0","id":5,"result":{"statusUpdate":{"taskId":"t","contextId":"c",
                "status":{"state":"TASK_STATE_WORKING","timestamp":"2026-01-01T00:00:00.000Z"}}}})
        );

        // Newlines inside strings are escaped, so they can't split the data line.
        let text = json!({"result": {"message": "a\nb"}});
        assert_eq!(sse_frame(&text).matches('\n').count(), 2);

        let err = RpcResponse::error(RpcId::from(5), RpcError::internal("boom")).to_value();
        let frame = sse_error_frame(&err);
        assert!(frame.starts_with("event: error\r\ndata: {"));
        assert!(frame.ends_with("}\r\n\r\n"));
    }

    #[test]
    fn send_message_result_is_wrapped() {
        let task = Task {
            id: "t1".into(),
            context_id: "c1".into(),
            status: TaskStatus {
                state: TaskState::Completed,
                message: None,
                timestamp: None,
            },
            artifacts: vec![],
            history: vec![],
            metadata: None,
        };
        let v = serde_json::to_value(SendMessageResponse::Task(task)).unwrap();
        assert_eq!(
            v,
            json!({"task": {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED"}}})
        );
        let msg = Message::agent("m1", vec![Part::text("hello")]);
        let v = serde_json::to_value(SendMessageResponse::Message(msg)).unwrap();
        assert_eq!(
            v,
            json!({"message": {"messageId": "m1", "role": "ROLE_AGENT", "parts": [{"text": "hello"}]}})
        );
    }

    #[test]
    fn a_part_keeps_its_rare_fields_apart_and_only_when_given() {
        // Tasks keep their parts for the world's life: a plain one stays small.
        assert!(std::mem::size_of::<Part>() <= 48);
        let bare = Part::text("a");
        assert!(bare.is_bare());
        let named = Part::text("a").with_filename("f.txt");
        assert_eq!(named.filename().map(String::as_str), Some("f.txt"));
        assert!(named.media_type().is_none() && named.metadata().is_none());
        assert_eq!(named.clone().set_filename(None), bare);
        let empty_meta = Part::text("a").with_metadata(Map::new());
        assert_ne!(empty_meta, bare);
        assert_eq!(
            serde_json::to_value(&empty_meta).unwrap(),
            json!({"metadata": {}, "text": "a"})
        );
        let read: Part = serde_json::from_value(json!({"text": "a", "filename": null})).unwrap();
        assert!(read.is_bare());
    }

    #[test]
    fn parts_are_oneofs_without_kind() {
        let doc = json!([
            {"text": "hello", "mediaType": "text/plain"},
            {"raw": "aGk=", "filename": "hi.txt", "mediaType": "text/plain"},
            {"url": "https://example.invalid/report.pdf", "filename": "report.pdf", "mediaType": "application/pdf"},
            {"data": {"account": "acct-9", "amount": 100}, "metadata": {"revision": "2"}},
            {"data": [1, "two", null]}
        ]);
        let parts: Vec<Part> = round_trip(doc);
        assert_eq!(parts[1].content, PartContent::Raw(base64_encode(b"hi")));
        assert_eq!(
            serde_json::to_value(Part::raw(b"hi").with_filename("hi.txt")).unwrap(),
            json!({"raw": "aGk=", "filename": "hi.txt"})
        );
        // 0.3 clients still send `kind`; it is ignored, and never emitted.
        let old: Part = serde_json::from_value(json!({"kind": "text", "text": "hi"})).unwrap();
        assert_eq!(serde_json::to_value(old).unwrap(), json!({"text": "hi"}));
        // A part with no content is not a part.
        assert!(serde_json::from_value::<Part>(json!({"mediaType": "text/plain"})).is_err());
    }

    #[test]
    fn enums_use_proto_names_and_tolerate_unknowns() {
        let all = [
            (TaskState::Unspecified, "TASK_STATE_UNSPECIFIED"),
            (TaskState::Submitted, "TASK_STATE_SUBMITTED"),
            (TaskState::Working, "TASK_STATE_WORKING"),
            (TaskState::Completed, "TASK_STATE_COMPLETED"),
            (TaskState::Failed, "TASK_STATE_FAILED"),
            (TaskState::Canceled, "TASK_STATE_CANCELED"),
            (TaskState::InputRequired, "TASK_STATE_INPUT_REQUIRED"),
            (TaskState::Rejected, "TASK_STATE_REJECTED"),
            (TaskState::AuthRequired, "TASK_STATE_AUTH_REQUIRED"),
        ];
        for (state, name) in all {
            assert_eq!(serde_json::to_value(state).unwrap(), json!(name));
            assert_eq!(
                serde_json::from_value::<TaskState>(json!(name)).unwrap(),
                state
            );
            assert_eq!(
                serde_json::from_value::<TaskState>(json!(state.number())).unwrap(),
                state
            );
        }
        assert_eq!(
            serde_json::from_value::<TaskState>(json!("completed")).unwrap(),
            TaskState::Unspecified
        );
        assert_eq!(
            serde_json::from_value::<TaskState>(json!(99)).unwrap(),
            TaskState::Unspecified
        );
        assert_eq!(
            serde_json::to_value(Role::Agent).unwrap(),
            json!("ROLE_AGENT")
        );
        assert_eq!(
            serde_json::from_value::<Role>(json!("ROLE_USER")).unwrap(),
            Role::User
        );
        assert_eq!(
            serde_json::from_value::<Role>(json!("user")).unwrap(),
            Role::Unspecified
        );

        let terminal: Vec<_> = all
            .iter()
            .map(|(s, _)| *s)
            .filter(|s| s.is_terminal())
            .collect();
        assert_eq!(
            terminal,
            [
                TaskState::Completed,
                TaskState::Failed,
                TaskState::Canceled,
                TaskState::Rejected
            ]
        );
        assert!(TaskState::InputRequired.ends_stream() && !TaskState::Working.ends_stream());
    }

    #[test]
    fn task_with_everything_round_trips_and_optional_fields_are_omitted() {
        let doc = json!({"id": "t1", "contextId": "c1",
            "status": {"state": "TASK_STATE_INPUT_REQUIRED", "timestamp": "2026-11-30T08:20:56.819Z",
                "message": {"messageId": "m2", "role": "ROLE_AGENT", "parts": [{"text": "which account?"}],
                    "taskId": "t1", "contextId": "c1"}},
            "artifacts": [{"artifactId": "a1", "name": "result", "description": "d",
                "parts": [{"text": "Pay vendor account cny-1"}, {"data": {"account": "cny-1"}}],
                "metadata": {"revision": "1"}, "extensions": ["urn:x"]}],
            "history": [{"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "go"}],
                "referenceTaskIds": ["t0"], "extensions": ["urn:y"], "metadata": {"revision": "1"}}],
            "metadata": {"revision": "1"}});
        let task: Task = round_trip(doc);
        assert_eq!(task.clone().with_history_length(Some(0)).history.len(), 0);
        assert_eq!(task.clone().with_history_length(None).history.len(), 1);
        assert!(task.without_artifacts().artifacts.is_empty());

        let bare = Task {
            id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus {
                state: TaskState::Working,
                message: None,
                timestamp: None,
            },
            artifacts: vec![],
            history: vec![],
            metadata: None,
        };
        let s = serde_json::to_string(&bare).unwrap();
        assert!(!s.contains("null"), "{s}");
        // Keys in sorted order: the order the JSON-RPC answers have always had on the wire.
        assert_eq!(
            s,
            r#"{"contextId":"c","id":"t","status":{"state":"TASK_STATE_WORKING"}}"#
        );
    }

    #[test]
    fn artifact_chunks_carry_append_and_last_chunk_only_when_set() {
        let doc = json!({"taskId": "t", "contextId": "c", "append": true, "lastChunk": true,
            "artifact": {"artifactId": "a", "parts": [{"text": "tail"}]}, "metadata": {"revision": "1"}});
        let ev: TaskArtifactUpdateEvent = round_trip(doc);
        assert!(ev.append && ev.last_chunk);
        let first = TaskArtifactUpdateEvent {
            append: false,
            last_chunk: false,
            ..ev
        };
        let v = serde_json::to_value(first).unwrap();
        assert!(v.get("append").is_none() && v.get("lastChunk").is_none());
    }

    #[test]
    fn unknown_incoming_fields_are_ignored() {
        let req: SendMessageRequest = serde_json::from_value(json!({
            "message": {"kind": "message", "messageId": "m", "role": "ROLE_USER",
                "parts": [{"kind": "text", "text": "hi"}], "futureField": 1},
            "configuration": {"blocking": true, "somethingNew": {}}, "extra": []
        }))
        .unwrap();
        assert_eq!(req.message.text(), "hi");
        assert!(!req.return_immediately());
    }

    #[test]
    fn method_params_round_trip() {
        round_trip::<GetTaskRequest>(json!({"id": "t1", "historyLength": 10}));
        round_trip::<CancelTaskRequest>(json!({"id": "t1", "metadata": {"reason": "redirected"}}));
        round_trip::<SubscribeToTaskRequest>(json!({"id": "t1"}));
        let list: ListTasksRequest =
            round_trip(json!({"contextId": "c1", "status": "TASK_STATE_WORKING",
            "pageSize": 10, "pageToken": "p", "historyLength": 0,
            "statusTimestampAfter": "2026-01-01T00:00:00Z", "includeArtifacts": true}));
        assert_eq!(list.status, Some(TaskState::Working));
        assert_eq!(
            round_trip::<ListTasksRequest>(json!({})),
            ListTasksRequest::default()
        );
        // int32 as a string is valid ProtoJSON.
        let g: GetTaskRequest =
            serde_json::from_value(json!({"id": "t", "historyLength": "3"})).unwrap();
        assert_eq!(g.history_length, Some(3));
    }

    #[test]
    fn list_tasks_result_always_has_every_field() {
        let captured = json!({"tasks": [], "pageSize": 50, "totalSize": 1, "nextPageToken": ""});
        let page: ListTasksResponse = round_trip(captured);
        assert_eq!(page.next_page_token, "");
    }

    #[test]
    fn push_config_methods_round_trip() {
        // Params and result of CreateTaskPushNotificationConfig, captured from the reference server.
        let created: TaskPushNotificationConfig =
            round_trip(json!({"id": "hook-1", "taskId": "t1",
            "url": "http://127.0.0.1:41947/hook", "token": "tok-2"}));
        let get: GetTaskPushNotificationConfigRequest =
            round_trip(json!({"taskId": "t1", "id": "hook-1"}));
        assert_eq!(get.id, "hook-1");
        round_trip::<DeleteTaskPushNotificationConfigRequest>(
            json!({"taskId": "t1", "id": "hook-1"}),
        );
        round_trip::<ListTaskPushNotificationConfigsRequest>(
            json!({"taskId": "t1", "pageSize": 5}),
        );
        let listed: ListTaskPushNotificationConfigsResponse =
            round_trip(json!({"configs": [{"id": "hook-1",
            "taskId": "t1", "url": "http://127.0.0.1:41947/hook", "token": "tok-2"}]}));
        assert_eq!(listed.configs, [created]);

        let bare: TaskPushNotificationConfig =
            serde_json::from_value(json!({"url": "http://127.0.0.1:1/h",
            "authentication": {"scheme": "Bearer", "credentials": "s3"}, "token": "tk"}))
            .unwrap();
        let n = bare.normalized("t9");
        assert_eq!(
            (n.id.as_deref(), n.task_id.as_deref()),
            (Some("t9"), Some("t9"))
        );
        assert_eq!(
            n.delivery_headers(),
            [
                (NOTIFICATION_TOKEN_HEADER, "tk".to_owned()),
                ("Authorization", "Bearer s3".to_owned()),
            ]
        );
    }

    #[test]
    fn push_body_is_a_bare_stream_response() {
        let ev = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus::new(TaskState::Completed, "2026-11-30T09:02:59.676Z"),
            metadata: None,
        });
        assert_eq!(
            push_body(&ev),
            json!({"statusUpdate": {"taskId": "t", "contextId": "c",
            "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-11-30T09:02:59.676Z"}}})
        );
    }

    #[test]
    fn agent_card_has_the_fields_the_client_requires() {
        // The card the reference server emitted (reference §2).
        let reference = json!({"name":"fake","description":"d","supportedInterfaces":[{"url":"http://127.0.0.1:8765/",
            "protocolBinding":"JSONRPC","protocolVersion":"1.0"}],"version":"0.1.0","capabilities":{"streaming":true},
            "defaultInputModes":["text/plain"],"defaultOutputModes":["text/plain"],
            "skills":[{"id":"echo","name":"Echo","description":"echo","tags":["t"]}]});
        round_trip::<AgentCard>(reference);

        let card = serde_json::to_value(agent_card(
            "researcher",
            "does research",
            "http://127.0.0.1:7070/agents/researcher",
        ))
        .unwrap();
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
            "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}])
        );
        assert_eq!(
            card["capabilities"],
            json!({"streaming": true, "pushNotifications": true})
        );
        assert!(!card["skills"][0]["tags"].as_array().unwrap().is_empty());
        assert!(!serde_json::to_string(&card).unwrap().contains("null"));
    }

    #[test]
    fn methods_by_name() {
        for m in Method::ALL {
            assert_eq!(Method::from_name(m.as_str()), Some(m));
        }
        for old in [
            "message/send",
            "message/stream",
            "tasks/get",
            "tasks/cancel",
            "tasks/resubscribe",
            "sendMessage",
        ] {
            assert_eq!(Method::from_name(old), None, "{old}");
        }
        let streaming: Vec<_> = Method::ALL
            .into_iter()
            .filter(|m| m.is_streaming())
            .collect();
        assert_eq!(
            streaming,
            [Method::SendStreamingMessage, Method::SubscribeToTask]
        );
        let req = RpcRequest::new(
            1,
            Method::GetTask,
            GetTaskRequest {
                tenant: None,
                id: "t".into(),
                history_length: None,
            },
        );
        assert_eq!(
            serde_json::to_value(req).unwrap(),
            json!({"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "t"}})
        );
    }

    #[test]
    fn version_header_values() {
        assert!(VERSION_HEADER.eq_ignore_ascii_case(VERSION_HEADER_NAME.as_str()));
        for ok in ["1.0", "1.1", "1", "1.0.0", " 1.0 "] {
            assert!(version_supported(Some(ok)), "{ok}");
        }
        for bad in [
            None,
            Some(""),
            Some("0.3"),
            Some("0.3.0"),
            Some("2.0"),
            Some("1.x"),
            Some("v1"),
        ] {
            assert!(!version_supported(bad), "{bad:?}");
        }
    }

    #[test]
    fn base64_matches_rfc4648_vectors() {
        let vectors = [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ];
        for (plain, enc) in vectors {
            assert_eq!(base64_encode(plain.as_bytes()), enc);
        }
        assert_eq!(base64_encode(&[0xff, 0xfe, 0xfd]), "//79");
    }

    /// The one-pass decoding of SendMessage gives what the general route gives, and leaves
    /// everything it is unsure of to that route.
    #[test]
    fn parse_send_agrees_with_the_general_route() {
        let msg = r#"{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"go"}]}"#;
        let taken = [
            format!(r#"{{"jsonrpc":"2.0","id":"1","method":"SendMessage","params":{{"message":{msg},"configuration":{{}}}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":7,"method":"SendStreamingMessage","params":{{"message":{msg}}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","method":"SendMessage","params":{{"message":{msg}}},"extra":[1,{{"a":null}}]}}"#),
            format!(r#"{{"params":{{"configuration":{{"historyLength":"2","returnImmediately":true}},"message":{msg},"metadata":{{"k":1}}}},"id":null,"method":"SendMessage","jsonrpc":"2.0"}}"#),
            r#"{"jsonrpc":"2.0","id":"x","method":"SendMessage","params":{"message":{"messageId":"m","role":2,"parts":[{"data":{"b":[1,2]},"mediaType":"a/b"},{"url":"http://u"}],"metadata":{"revision":3},"kind":"message"}}}"#.to_string(),
        ];
        for body in &taken {
            let (call, p) = parse_send(body.as_bytes()).expect(body);
            let general = parse_request(body.as_bytes()).unwrap();
            assert_eq!((&call.id, &call.method), (&general.id, &general.method));
            assert_eq!(p, general.params::<SendMessageRequest>().unwrap(), "{body}");
        }
        let left = [
            format!(r#"{{"jsonrpc":"2.0","id":"1","method":"SendMessage","params":[{msg}]}}"#),
            format!(r#"{{"jsonrpc":"1.0","id":"1","method":"SendMessage","params":{{"message":{msg}}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":true,"method":"SendMessage","params":{{"message":{msg}}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":"1","method":"GetTask","params":{{"message":{msg}}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":"1","id":"2","method":"SendMessage","params":{{"message":{msg}}}}}"#),
            r#"{"jsonrpc":"2.0","id":"1","method":"SendMessage","params":{"message":{"role":"ROLE_USER"}}}"#.to_string(),
            r#"{"jsonrpc":"2.0","id":"1","method":"SendMessage","params":null}"#.to_string(),
            r#"{"jsonrpc":"2.0","id":"1","method":"SendMessage"}"#.to_string(),
            r#"[{"jsonrpc":"2.0","id":"1","method":"SendMessage"}]"#.to_string(),
            "{not json".to_string(),
        ];
        for body in &left {
            assert!(parse_send(body.as_bytes()).is_none(), "{body}");
        }
    }

    /// The scanner for the usual SendMessage takes only what it reads exactly as serde does,
    /// and leaves the rest to the serde route.
    #[test]
    fn the_plain_scanner_agrees_with_serde_or_declines() {
        let general = |body: &str| {
            let call = parse_request(body.as_bytes()).unwrap();
            let p: SendMessageRequest = call.params().unwrap();
            (call.id, call.method, p)
        };
        let msg = r#"{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"go"}]}"#;
        let taken = [
            format!(r#"{{"jsonrpc":"2.0","id":"r-1-2","method":"SendMessage","params":{{"message":{msg},"configuration":{{}}}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":7,"method":"SendStreamingMessage","params":{{"message":{msg}}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":0,"method":"SendMessage","params":{{"message":{msg}}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":18446744073709551615,"method":"SendMessage","params":{{"message":{msg}}}}}"#),
            format!(r#"{{"jsonrpc":"2.0","id":null,"method":"SendMessage","params":{{"message":{msg}}}}}"#),
            format!(r#"{{"params":{{"configuration":{{ }},"message":{msg}}},"method":"SendMessage","jsonrpc":"2.0"}}"#),
            " {\n\t\"jsonrpc\" : \"2.0\" ,\r\n \"id\":\"x\", \"method\":\"SendMessage\", \"params\": { \"message\" : { \"parts\" : [ { \"text\" : \"a\" } , {\"kind\":\"text\",\"text\":\"\"} ] , \"role\":\"agent\", \"messageId\":\"\"}}} ".to_string(),
            r#"{"jsonrpc":"2.0","id":"1","method":"SendMessage","params":{"message":{"kind":"message","messageId":"m","contextId":"c-1","taskId":"t-1","role":"ROLE_AGENT","parts":[]}}}"#.to_string(),
            r#"{"jsonrpc":"2.0","id":"h\u00e9","method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"h\u00e9llo \u2713 ok, \"quoted\" <- not"}]}}}"#.replace("\\u00e9", "\u{e9}").replace("\\u2713", "\u{2713}").replace("\\\"quoted\\\"", "'quoted'"),
        ];
        for body in &taken {
            let (call, p) = plain::parse_send(body.as_bytes()).expect(body);
            assert_eq!((call.id, call.method, p), general(body), "{body}");
        }
        let declined = [
            r#"{"jsonrpc":"2.0","id":"1","method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a\nb"}]}}}"#,
            r#"{"jsonrpc":"2.0","id":"1","method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"\u00e9"}]}}}"#,
            r#"{"jsonrpc":"2.0","id":"1","method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a"}]},"configuration":{"returnImmediately":true}}}"#,
            r#"{"jsonrpc":"2.0","id":"1","method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a"}],"metadata":{"r":1}}}}"#,
            r#"{"jsonrpc":"2.0","id":"1","method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a","mediaType":"text/plain"}]}}}"#,
            r#"{"jsonrpc":"2.0","id":"1","method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"data":{"a":1}}]}}}"#,
            r#"{"jsonrpc":"2.0","id":"1","method":"SendMessage","params":{"message":{"messageId":"m","role":1,"parts":[{"text":"a"}]}}}"#,
            r#"{"jsonrpc":"2.0","id":"1","method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a"}]},"metadata":{}}}"#,
            r#"{"jsonrpc":"2.0","id":"1","method":"SendMessage","params":{"tenant":"t","message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a"}]}}}"#,
            r#"{"jsonrpc":"2.0","id":"1","method":"SendMessage","params":{"message":{"messageId":"m","messageId":"n","role":"ROLE_USER","parts":[{"text":"a"}]}}}"#,
            r#"{"jsonrpc":"2.0","id":"1","method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a","text":"b"}]}}}"#,
            r#"{"jsonrpc":"2.0","id":"1","method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"a"}],"extra":1}}}"#,
            r#"{"jsonrpc":"2.0","id":"1","method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","contextId":null,"parts":[{"text":"a"}]}}}"#,
            r#"{"jsonrpc":"2.0","id":1.5,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[]}}}"#,
            r#"{"jsonrpc":"2.0","id":1e3,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[]}}}"#,
            r#"{"jsonrpc":"2.0","id":-1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[]}}}"#,
            r#"{"jsonrpc":"2.0","id":01,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[]}}}"#,
            r#"{"jsonrpc":"2.0","id":18446744073709551616,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[]}}}"#,
            r#"{"jsonrpc":"2.0","id":"1","method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[]}}} x"#,
            r#"{"jsonrpc":"2.0","id":"1","method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[],}}}"#,
            r#"{"jsonrpc":"2.0","id":"1","method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER"}}}"#,
            r#"{"jsonrpc":"2.0","id":"1","method":"SendMessage","extra":true,"params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[]}}}"#,
            r#"{"jsonrpc":"1.0","id":"1","method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[]}}}"#,
            r#"{"jsonrpc":"2.0","id":"1","method":"GetTask","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[]}}}"#,
            r#"{"jsonrpc":"2.0","id":true,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[]}}}"#,
            r#"{"jsonrpc":"2.0","id":"1","method":"SendMessage"}"#,
            "{\"jsonrpc\":\"2.0\",\"id\":\"1\",\"method\":\"SendMessage\",\"params\":{\"message\":{\"messageId\":\"m\u{1}\",\"role\":\"ROLE_USER\",\"parts\":[]}}}",
        ];
        for body in declined {
            assert!(plain::parse_send(body.as_bytes()).is_none(), "{body}");
        }
        assert!(plain::parse_send(b"{\"jsonrpc\":\"2.0\",\"id\":\"\xff\"}").is_none());
    }

    #[test]
    fn direct_serialisation_matches_the_tree_route() {
        fn same<T: Serialize>(v: &T) {
            let direct = serde_json::to_string(v).unwrap();
            let tree = serde_json::to_value(v).unwrap().to_string();
            assert_eq!(direct, tree);
        }
        let md = |k: &str| -> Metadata {
            let mut m = Map::new();
            m.insert(k.into(), json!({"z": 1, "a": [1.5, "x"]}));
            m.insert("Upper".into(), json!(null));
            m
        };
        let parts = vec![
            Part::text("hi \"there\"\n"),
            Part::data(json!({"b": 1, "a": {"d": 2, "c": 3}}))
                .with_filename("f.json")
                .with_media_type("application/json")
                .with_metadata(md("m")),
            Part::raw(b"bytes").with_media_type("application/octet-stream"),
            Part::url("http://x/y").with_filename("y"),
        ];
        let full = Message {
            message_id: "m-1".into(),
            context_id: Some("ctx-1".into()),
            task_id: Some("task-1".into()),
            role: Role::User,
            parts: parts.clone(),
            metadata: Some(md("revision")),
            extensions: vec!["urn:x".into()],
            reference_task_ids: vec!["task-0".into()],
        };
        let bare = Message::agent("m-2", vec![Part::text("ok")]);
        let artifact = Artifact {
            artifact_id: "a".into(),
            name: Some("n".into()),
            description: Some("d".into()),
            parts: parts.clone(),
            metadata: Some(md("k")),
            extensions: vec!["urn:e".into()],
        };
        let task = Task {
            id: "task-1".into(),
            context_id: "ctx-1".into(),
            status: TaskStatus {
                state: TaskState::Completed,
                message: Some(Box::new(full.clone())),
                timestamp: Some("2026-01-01T00:00:00.000Z".into()),
            },
            artifacts: vec![
                artifact.clone(),
                Artifact {
                    name: None,
                    description: None,
                    metadata: None,
                    extensions: vec![],
                    ..artifact.clone()
                },
            ],
            history: vec![full.clone(), bare.clone()],
            metadata: Some(md("revision")),
        };
        let plain = Task {
            id: "task-2".into(),
            context_id: String::new(),
            status: TaskStatus {
                state: TaskState::Working,
                message: None,
                timestamp: None,
            },
            artifacts: vec![],
            history: vec![],
            metadata: None,
        };
        for p in &parts {
            same(p);
        }
        same(&full);
        same(&bare);
        same(&artifact);
        same(&task);
        same(&plain);
        same(&SendMessageResponse::Task(task.clone()));
        same(&SendMessageResponse::Message(full.clone()));
        same(&StreamResponse::Task(plain.clone()));
        for n in [None, Some(-1), Some(0), Some(1), Some(2), Some(9)] {
            let cut = serde_json::to_string(&TaskResult {
                task: &task,
                history_length: n,
            });
            let copied = SendMessageResponse::Task(task.clone().with_history_length(n));
            assert_eq!(
                cut.unwrap(),
                serde_json::to_value(&copied).unwrap().to_string()
            );
            // The hand-written answer of a blocking SendMessage: the same bytes.
            for t in [&task, &plain] {
                for id in [RpcId::from("a\"b"), RpcId::from(7), RpcId::Null] {
                    let r = TaskResult {
                        task: t,
                        history_length: n,
                    };
                    assert_eq!(r.body(&id), success_body(&id, &r));
                }
            }
        }
        for id in [RpcId::from("abc"), RpcId::from(7), RpcId::Null] {
            for result in [
                serde_json::to_value(SendMessageResponse::Task(task.clone())).unwrap(),
                serde_json::to_value(SendMessageResponse::Message(bare.clone())).unwrap(),
                Value::Null,
            ] {
                let tree =
                    serde_json::to_vec(&RpcResponse::success(id.clone(), &result).to_value());
                assert_eq!(success_body(&id, &result), tree.unwrap());
            }
            let direct = success_body(&id, &SendMessageResponse::Task(task.clone()));
            let tree = RpcResponse::success(id.clone(), SendMessageResponse::Task(task.clone()));
            assert_eq!(direct, serde_json::to_vec(&tree.to_value()).unwrap());
        }
    }
}
