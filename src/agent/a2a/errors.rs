//! A2A errors: the codes the JSON-RPC binding defines, each with its `google.rpc.ErrorInfo`
//! reason, and the JSON-RPC `error` member they travel in (always with HTTP 200; the client maps
//! `code` to a typed exception).

use std::collections::BTreeMap;

use serde::Serialize;

use super::types::TaskState;

pub const ERROR_INFO_TYPE: &str = "type.googleapis.com/google.rpc.ErrorInfo";
pub const ERROR_DOMAIN: &str = "a2a-protocol.org";

/// The errors of the A2A JSON-RPC binding that this server answers with. (The binding also
/// defines -32003 push not supported, -32006 invalid agent response and -32008 extension
/// required; no scripted agent gives them.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    TaskNotFound,
    TaskNotCancelable,
    UnsupportedOperation,
    ExtendedAgentCardNotConfigured,
    VersionNotSupported,
    ContentTypeNotSupported,
    ParseError,
    InvalidRequest,
    MethodNotFound,
    InvalidParams,
    Internal,
}

impl ErrorKind {
    /// The code, and the `google.rpc.ErrorInfo` reason. A parse error has none: the reference
    /// server sends it without `data`, since there is no request to attribute it to.
    pub fn code_and_reason(self) -> (i64, Option<&'static str>) {
        let (code, reason) = match self {
            ErrorKind::TaskNotFound => (-32001, "TASK_NOT_FOUND"),
            ErrorKind::TaskNotCancelable => (-32002, "TASK_NOT_CANCELABLE"),
            ErrorKind::UnsupportedOperation => (-32004, "UNSUPPORTED_OPERATION"),
            ErrorKind::ExtendedAgentCardNotConfigured => {
                (-32007, "EXTENDED_AGENT_CARD_NOT_CONFIGURED")
            }
            ErrorKind::VersionNotSupported => (-32009, "VERSION_NOT_SUPPORTED"),
            ErrorKind::ContentTypeNotSupported => (-32005, "CONTENT_TYPE_NOT_SUPPORTED"),
            ErrorKind::ParseError => return (-32700, None),
            ErrorKind::InvalidRequest => (-32600, "INVALID_REQUEST"),
            ErrorKind::MethodNotFound => (-32601, "METHOD_NOT_FOUND"),
            ErrorKind::InvalidParams => (-32602, "INVALID_PARAMS"),
            ErrorKind::Internal => (-32603, "INTERNAL_ERROR"),
        };
        (code, Some(reason))
    }
}

/// `google.rpc.ErrorInfo` as A2A puts it in `error.data[]`. The Python client reads only
/// `metadata` (exposed as the exception's `.data`); the rest is for conformance and humans.
/// Fields in the order of their JSON names, as the answers have always had them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ErrorInfo {
    #[serde(rename = "@type")]
    pub type_url: &'static str,
    pub domain: &'static str,
    // Always present, `{}` when empty, like the reference server. String values only: that is
    // ErrorInfo's proto type (map<string, string>).
    pub metadata: BTreeMap<String, String>,
    pub reason: &'static str,
}

/// The JSON-RPC `error` member.
#[derive(Debug, Clone, PartialEq, Serialize, thiserror::Error)]
#[error("{code} {message}")]
pub struct RpcError {
    pub code: i64,
    /// One ErrorInfo, or none for a parse error (see [`ErrorKind::code_and_reason`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub data: Vec<ErrorInfo>,
    pub message: String,
}

impl RpcError {
    /// An error of `kind` with its ErrorInfo (if the kind has a reason) and empty metadata.
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> RpcError {
        let (code, reason) = kind.code_and_reason();
        let data = reason.map(|reason| ErrorInfo {
            type_url: ERROR_INFO_TYPE,
            domain: ERROR_DOMAIN,
            metadata: BTreeMap::new(),
            reason,
        });
        RpcError {
            code,
            data: data.into_iter().collect(),
            message: message.into(),
        }
    }

    /// Adds a key to the ErrorInfo's metadata (what reaches the client's `error.data`).
    pub fn with_metadata(mut self, key: &str, value: impl Into<String>) -> RpcError {
        if let Some(info) = self.data.first_mut() {
            info.metadata.insert(key.to_string(), value.into());
        }
        self
    }

    /// -32001: GetTask / CancelTask / SubscribeToTask on an unknown id, or a message naming one.
    pub fn task_not_found(task_id: &str) -> RpcError {
        RpcError::new(ErrorKind::TaskNotFound, format!("Task {task_id} not found"))
    }

    /// -32002: the cancel was refused (terminal task, or a `too-late` policy).
    pub fn task_not_cancelable(task_id: &str, state: TaskState) -> RpcError {
        let message = format!("Task {task_id} cannot be canceled in state {state}");
        RpcError::new(ErrorKind::TaskNotCancelable, message)
    }

    /// -32004 in general (e.g. streaming on an agent without the capability).
    pub fn unsupported_operation(message: impl Into<String>) -> RpcError {
        RpcError::new(ErrorKind::UnsupportedOperation, message)
    }

    /// -32004 for a message to, or a subscription on, a terminal task: terminal tasks never
    /// restart (REC-6). Message text as the reference server words it.
    pub fn task_in_terminal_state(task_id: &str, state: TaskState) -> RpcError {
        RpcError::unsupported_operation(format!("Task {task_id} is in terminal state: {state}"))
    }

    /// -32007: GetExtendedAgentCard when no extended card exists.
    pub fn extended_agent_card_not_configured() -> RpcError {
        // The reference server's message, so logs read the same against either server.
        let message = "Authenticated Extended Card is not configured";
        RpcError::new(ErrorKind::ExtendedAgentCardNotConfigured, message)
    }

    /// -32009: an `A2A-Version` other than 1.x (strict mode only; missing means 0.3).
    pub fn version_not_supported(version: &str) -> RpcError {
        let message =
            format!("A2A version '{version}' is not supported by this agent; expected 1.x");
        RpcError::new(ErrorKind::VersionNotSupported, message)
    }

    /// -32005: a request whose `Content-Type` is not `application/json` (checked before the
    /// body is read as JSON, as the binding requires).
    pub fn content_type_not_supported(given: &str) -> RpcError {
        let message = format!("Content-Type '{given}' is not supported; A2A requests are application/json or application/a2a+json");
        RpcError::new(ErrorKind::ContentTypeNotSupported, message)
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
    pub fn context_mismatch(context_id: &str, task_context: &str, task_id: &str) -> RpcError {
        let m =
            format!("Context {context_id} does not match context {task_context} of task {task_id}");
        RpcError::invalid_params(m)
    }

    /// -32603.
    pub fn internal(message: impl Into<String>) -> RpcError {
        RpcError::new(ErrorKind::Internal, message)
    }
}
