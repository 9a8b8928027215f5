//! The JSON-RPC 2.0 binding of A2A 1.0: the version header, the eleven method names, reading a
//! call's envelope (its params stay raw until the method is known) and writing the answer.
//!
//! A call is checked in the order the reference server checks it: JSON (-32700), envelope
//! (-32600), then the caller checks the method (-32601) and decodes the params (-32602). Every
//! answer, errors included, is one JSON-RPC response with HTTP 200.

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeOwned, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use super::errors::RpcError;

/// Protocol version put in agent cards; the client negotiates on `Major.Minor` only.
pub const PROTOCOL_VERSION: &str = "1.0";
/// Header every 1.0 client sends on each call (and on the card GET). The spec reads a missing
/// header as 0.3; the reference server then answers -32009.
pub const VERSION_HEADER: &str = "A2A-Version";
/// [`VERSION_HEADER`] as a parsed name, for look-ups.
pub static VERSION_HEADER_NAME: hyper::header::HeaderName =
    hyper::header::HeaderName::from_static("a2a-version");

/// Whether an `A2A-Version` value (the header, or the query parameter of that name the spec also
/// allows) is one this server speaks: any `1.x`, as the reference server accepts. Missing or empty
/// means 0.3 (SPEC §3.6), so it is *not* supported; whether to refuse it (-32009) or be lenient is
/// the caller's policy, since hand-written curl calls rarely send the header.
pub fn version_supported(value: Option<&str>) -> bool {
    let Some(v) = value.map(str::trim).filter(|v| !v.is_empty()) else {
        return false;
    };
    let mut parts = v.split('.');
    let major = parts.next().and_then(|m| m.parse::<u64>().ok());
    let rest_ok = parts.all(|p| p.parse::<u64>().is_ok());
    major == Some(1) && rest_ok
}

/// The 1.0 JSON-RPC method names, each its variant's name. The 0.3 names (`message/send`,
/// `tasks/get`, …) are not accepted: a 1.0-only server answers them with -32601, which is what
/// real clients expect of it.
macro_rules! methods {
    ($($m:ident),+ $(,)?) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Method { $($m),+ }

        impl Method {
            pub const ALL: [Method; 11] = [$(Method::$m),+];

            pub fn as_str(self) -> &'static str {
                match self { $(Method::$m => stringify!($m)),+ }
            }

            pub fn from_name(name: &str) -> Option<Method> {
                Method::ALL.into_iter().find(|m| m.as_str() == name)
            }
        }
    };
}

methods!(
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
);

/// A request id. JSON-RPC allows string, number or null, and the response must echo it verbatim
/// (the Python client sends UUID strings, the TCK and curl users send numbers).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RpcId {
    Number(serde_json::Number),
    String(String),
    #[default]
    Null,
    /// Not a JSON-RPC call at all: one over the HTTP+JSON binding, answered without the
    /// envelope (see `rest`). Never read from a body: `null` is [`RpcId::Null`].
    Rest,
    /// One over the gRPC binding: answered like [`RpcId::Rest`], which `grpc` turns into
    /// protobuf messages and statuses.
    Grpc,
}

impl RpcId {
    /// Whether answers to this call go without the JSON-RPC envelope.
    pub fn bare(&self) -> bool {
        matches!(self, RpcId::Rest | RpcId::Grpc)
    }
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

pub use crate::scenario::a2a::Binding;

/// An incoming call, as far as the envelope goes; `params` stays raw (borrowed from the body)
/// until the method is known.
#[derive(Debug, Clone)]
pub struct RpcRequest<'a> {
    // A missing id (a notification) is answered like a null id: A2A has no notifications, and
    // replying beats leaving the client waiting.
    pub id: RpcId,
    pub method: Cow<'a, str>,
    params: Option<&'a RawValue>,
}

impl<'a> RpcRequest<'a> {
    /// A call that is not JSON-RPC (`id` is [`RpcId::Rest`] or [`RpcId::Grpc`]).
    pub fn bare(id: RpcId, method: Method, params: &'a RawValue) -> RpcRequest<'a> {
        RpcRequest {
            id,
            method: Cow::Borrowed(method.as_str()),
            params: Some(params),
        }
    }

    pub fn binding(&self) -> Binding {
        match self.id {
            RpcId::Rest => Binding::HttpJson,
            RpcId::Grpc => Binding::Grpc,
            _ => Binding::JsonRpc,
        }
    }

    /// Decodes `params` for the method; a shape mismatch is the caller's error, -32602.
    pub fn params<T: DeserializeOwned>(&self) -> Result<T, RpcError> {
        let text = self.params.map_or("{}", RawValue::get);
        serde_json::from_str(text).map_err(|e| {
            let e = without_position(&e);
            RpcError::invalid_params(format!("invalid params for {}: {e}", self.method))
                .with_metadata("parseError", e)
        })
    }
}

/// A decoding error's text without serde_json's " at line L column C": the params' position is
/// within the params, not the body, so it would only mislead.
fn without_position(e: &serde_json::Error) -> String {
    let text = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    text.strip_suffix(&suffix)
        .map(str::to_string)
        .unwrap_or(text)
}

/// A member name (or string value) as the body spells it: borrowed unless it has escapes.
#[derive(Deserialize)]
struct Name<'a>(#[serde(borrow)] Cow<'a, str>);

/// A member the envelope wants as text: its string, or anything else, for the check to refuse.
#[derive(Deserialize)]
#[serde(untagged)]
enum Text<'a> {
    Str(#[serde(borrow)] Cow<'a, str>),
    Other(IgnoredAny),
}

/// The envelope's members, `id` and `params` left raw; a repeated one is its last value, as
/// for any JSON object read here, and any other member is skipped.
#[derive(Default)]
struct Members<'a> {
    id: Option<&'a RawValue>,
    jsonrpc: Option<Text<'a>>,
    method: Option<Text<'a>>,
    params: Option<&'a RawValue>,
}

impl<'de> Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Object;
        impl<'de> Visitor<'de> for Object {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON-RPC request object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'de>, A::Error> {
                let mut m = Members::default();
                while let Some(Name(key)) = map.next_key()? {
                    match &*key {
                        "id" => m.id = Some(map.next_value()?),
                        "jsonrpc" => m.jsonrpc = Some(map.next_value()?),
                        "method" => m.method = Some(map.next_value()?),
                        "params" => m.params = Some(map.next_value()?),
                        _ => _ = map.next_value::<IgnoredAny>()?,
                    }
                }
                Ok(m)
            }
        }
        d.deserialize_map(Object)
    }
}

/// Validates an HTTP body as a single JSON-RPC 2.0 request, in the order the reference server
/// checks: JSON (-32700), envelope (-32600). The method name is checked by the caller with
/// [`Method::from_name`] (-32601) because only it knows which methods an endpoint serves.
/// On failure it returns the error with the id to answer it with, when one was readable.
pub fn parse_request(body: &[u8]) -> Result<RpcRequest<'_>, (RpcId, RpcError)> {
    let fail = |id, e| Err((id, e));
    // Read as text, checked once, so that the raw members are not checked again one by one.
    // Only when that fails is the body looked at again, to say why.
    let read = std::str::from_utf8(body)
        .map_err(|_| ())
        .and_then(|text| serde_json::from_str::<Members<'_>>(text).map_err(|_| ()));
    let members = match read {
        Ok(members) => members,
        Err(()) => {
            let error = match serde_json::from_slice::<&RawValue>(body) {
                Err(e) => RpcError::parse_error(e.to_string()),
                Ok(doc) if doc.get().starts_with('[') => {
                    RpcError::invalid_request("Batch requests are not supported")
                }
                Ok(_) => RpcError::invalid_request("Invalid request: expected a JSON object"),
            };
            return fail(RpcId::Null, error);
        }
    };
    // The id was read as JSON already; read again as a value to tell its kind.
    // An unusable id (bool, object, array) cannot be echoed, so the error goes out with null.
    let id = match members.id.map(|v| serde_json::from_str::<Value>(v.get())) {
        None | Some(Ok(Value::Null)) => RpcId::Null,
        Some(Ok(Value::String(s))) => RpcId::String(s),
        Some(Ok(Value::Number(n))) => RpcId::Number(n),
        Some(_) => {
            let e =
                RpcError::invalid_request("Invalid request: id must be a string, integer, or null");
            return fail(RpcId::Null, e);
        }
    };
    if !matches!(members.jsonrpc, Some(Text::Str(v)) if v == "2.0") {
        let e = RpcError::invalid_request("Invalid request: 'jsonrpc' must be exactly '2.0'");
        return fail(id, e);
    }
    let method = match members.method {
        Some(Text::Str(m)) if !m.is_empty() => m,
        _ => return fail(id, RpcError::invalid_request("Method is required")),
    };
    let params = match members.params {
        None => None,
        Some(p) if p.get() == "null" => None,
        Some(p) if p.get().starts_with('{') => Some(p),
        // A2A params are always objects; positional params can't name a proto field.
        Some(_) => return fail(id, RpcError::invalid_params("params must be a JSON object")),
    };
    Ok(RpcRequest { id, method, params })
}

/// A response (a result or an error), keys in sorted order as the answers have always had them.
#[derive(Serialize)]
struct Envelope<'a, T> {
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a RpcError>,
    id: &'a RpcId,
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<T>,
}

/// Writes the answer to the call `id` into `out`: in the JSON-RPC envelope, or bare for the
/// other bindings.
pub fn write<T: Serialize>(out: &mut Vec<u8>, id: &RpcId, answer: Result<&T, &RpcError>) {
    // Into a Vec, of values that always serialise: it cannot fail.
    let _ = match (id.bare(), answer) {
        (true, Ok(result)) => serde_json::to_writer(out, result),
        (true, Err(e)) => serde_json::to_writer(out, &super::rest::ErrorBody::of(e)),
        (false, answer) => {
            let (error, result) = (answer.err(), answer.ok());
            let envelope = Envelope {
                error,
                id,
                jsonrpc: "2.0",
                result,
            };
            serde_json::to_writer(out, &envelope)
        }
    };
}

pub fn success_body(id: &RpcId, result: &impl Serialize) -> Vec<u8> {
    let mut out = Vec::with_capacity(512);
    write(&mut out, id, Ok(result));
    out
}

pub fn error_body(id: &RpcId, error: &RpcError) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    write::<()>(&mut out, id, Err(error));
    out
}
