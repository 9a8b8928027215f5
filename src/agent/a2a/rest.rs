//! The HTTP+JSON binding (SPEC §11): its REST paths read as the JSON-RPC calls they name, so
//! every call runs through the one engine; only the framing differs. A success is the result
//! itself, an error a `google.rpc.Status`-shaped `{"error": {code, status, message, details}}`
//! with the HTTP status of SPEC §5.4, and a stream's events are bare `StreamResponse`s.

use serde::Serialize;
use serde_json::{Map, Value};

use super::errors::{ErrorInfo, RpcError};
use super::rpc::Method;
use crate::agent::AgentRequest;

/// The call a REST request names: its method and its params as a JSON object; `None` for a
/// path that is not one of the binding's. The path may sit under a `/{tenant}` prefix (SPEC
/// §11): the call's tenant then.
pub(super) fn call_of(req: &AgentRequest) -> Option<Result<(Method, String), RpcError>> {
    let path = req.path.trim_end_matches('/');
    let method = req.method.as_str();
    let (m, with_body, mut params) = route(method, path).or_else(|| {
        let (tenant, _) = path.strip_prefix('/')?.split_once('/')?;
        let (m, with_body, mut params) = route(method, &path[tenant.len() + 1..])?;
        params.insert("tenant".into(), Value::from(tenant));
        Some((m, with_body, params))
    })?;
    if with_body && !req.body.is_empty() {
        let body = match serde_json::from_slice::<Value>(&req.body) {
            Ok(Value::Object(body)) => body,
            Ok(_) => {
                return Some(Err(RpcError::invalid_params(
                    "the body must be a JSON object",
                )))
            }
            // With the ErrorInfo the reference server gives this binding's parse errors.
            Err(e) => {
                let info = RpcError::invalid_request("").data;
                let e = RpcError::parse_error(e.to_string());
                return Some(Err(RpcError { data: info, ..e }));
            }
        };
        for (k, v) in body {
            params.entry(k).or_insert(v);
        }
    }
    let query = req.query.as_deref().unwrap_or("").as_bytes();
    let decoded = crate::service::form::decode(crate::service::form::Encoding::Form, query);
    if let Some(Value::Object(q)) = decoded {
        for (k, v) in q {
            // Query values are text; ProtoJSON reads numbers from text too, booleans it does not.
            let v = match v.as_str() {
                Some("true") => Value::Bool(true),
                Some("false") => Value::Bool(false),
                _ => v,
            };
            if k != "A2A-Version" {
                params.entry(k).or_insert(v);
            }
        }
    }
    Some(Ok((m, Value::Object(params).to_string())))
}

/// The methods the binding serves at `path` (none: it is not one of the binding's paths).
pub(super) fn methods_at(path: &str) -> Vec<&'static str> {
    let methods = [("GET", hyper::Method::GET), ("POST", hyper::Method::POST)];
    let methods = methods
        .into_iter()
        .chain([("DELETE", hyper::Method::DELETE)]);
    let served = methods.filter(|(_, m)| {
        let req = AgentRequest {
            method: m.clone(),
            path: path.to_string(),
            ..AgentRequest::default()
        };
        call_of(&req).is_some()
    });
    served.map(|(name, _)| name).collect()
}

/// The method a path names, whether it takes a body, and the params its path holds.
fn route(method: &str, path: &str) -> Option<(Method, bool, Map<String, Value>)> {
    let mut params = Map::new();
    let (m, with_body) = match (method, path) {
        ("POST", "/message:send") => (Method::SendMessage, true),
        ("POST", "/message:stream") => (Method::SendStreamingMessage, true),
        ("GET", "/tasks") => (Method::ListTasks, false),
        ("GET", "/extendedAgentCard") => (Method::GetExtendedAgentCard, false),
        (_, p) => {
            let rest = p.strip_prefix("/tasks/")?;
            let (task, tail) = match rest.find(['/', ':']) {
                Some(i) => (&rest[..i], &rest[i..]),
                None => (rest, ""),
            };
            if task.is_empty() {
                return None;
            }
            let configs = tail.strip_prefix("/pushNotificationConfigs");
            let (m, with_body, id_key) = match (method, tail, configs) {
                ("GET", "", _) => (Method::GetTask, false, "id"),
                ("POST", ":cancel", _) => (Method::CancelTask, true, "id"),
                ("POST" | "GET", ":subscribe", _) => (Method::SubscribeToTask, false, "id"),
                ("POST", _, Some("")) => (Method::CreateTaskPushNotificationConfig, true, "taskId"),
                ("GET", _, Some("")) => (Method::ListTaskPushNotificationConfigs, false, "taskId"),
                (_, _, Some(c)) if c.len() > 1 && c.starts_with('/') => {
                    params.insert("id".into(), Value::from(&c[1..]));
                    match method {
                        "GET" => (Method::GetTaskPushNotificationConfig, false, "taskId"),
                        "DELETE" => (Method::DeleteTaskPushNotificationConfig, false, "taskId"),
                        _ => return None,
                    }
                }
                _ => return None,
            };
            params.insert(id_key.into(), Value::from(task));
            (m, with_body)
        }
    };
    Some((m, with_body, params))
}

/// SPEC §5.4 (A2A v1.0.0, the release the conformance kit checks): an A2A error's HTTP status
/// and `google.rpc` status name on this binding. (Later revisions of the spec send 400 for more
/// of them; clients tell errors apart by the ErrorInfo `reason`, which is always there.)
pub(super) fn status_of(code: i64) -> (u16, &'static str) {
    match code {
        -32001 => (404, "NOT_FOUND"),
        -32002 => (409, "FAILED_PRECONDITION"),
        -32003 | -32004 | -32009 => (400, "UNIMPLEMENTED"),
        -32005 => (415, "INVALID_ARGUMENT"),
        -32006 => (502, "INTERNAL"),
        -32007 | -32008 => (400, "FAILED_PRECONDITION"),
        -32601 => (404, "NOT_FOUND"),
        -32603 => (500, "INTERNAL"),
        _ => (400, "INVALID_ARGUMENT"),
    }
}

#[derive(Serialize)]
struct Status<'a> {
    code: u16,
    status: &'static str,
    message: &'a str,
    details: &'a [ErrorInfo],
}

/// The error as this binding sends it.
#[derive(Serialize)]
pub(super) struct ErrorBody<'a> {
    error: Status<'a>,
}

impl<'a> ErrorBody<'a> {
    pub(super) fn of(e: &'a RpcError) -> ErrorBody<'a> {
        let (code, status) = status_of(e.code);
        let (message, details) = (&e.message, &e.data);
        ErrorBody {
            error: Status {
                code,
                status,
                message,
                details,
            },
        }
    }
}
