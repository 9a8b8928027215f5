//! The error bodies doubleagent itself produces on a fake service (a fate's error status, an
//! unmatched request, a lookup or cancel that finds nothing, a key conflict, mismatch or missing
//! key, a body too large) in the shape of the route's provider, so an official SDK raises its
//! own error type (stripe-python picks its exception from the status and `error.type`; a plain
//! string crashes it). Facts a test may read (`status`, `id`, `state`, `closest`, `services`)
//! ride along as top-level members in every shape.

use serde_json::{json, Map, Value};

use super::Response;
use crate::idempotency::ErrorShape;
use crate::scenario::ErrorStyle;
use crate::template;

/// What went wrong, and the status it is answered with.
#[derive(Clone, Debug, PartialEq)]
pub struct Failure {
    pub status: u16,
    pub kind: Kind,
    pub message: String,
    /// Facts beside the error (`id`, `state`, `closest`...), kept in every shape.
    pub extra: Map<String, Value>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A fate's `error-before-apply:S` / `error-after-apply:S`.
    Fate,
    /// No route (or no service) matches.
    Unmatched,
    /// A lookup or cancel names no action.
    NotFound,
    /// A lookup route scripted as unavailable.
    Unavailable,
    /// A cancel after the action applied.
    TooLate,
    /// The same key while its first request is in flight.
    Conflict,
    /// The same key with another payload.
    Mismatch,
    /// A required key is missing.
    MissingKey,
    /// The body is over the scenario's cap.
    TooLarge,
    /// The body never arrived whole.
    Incomplete,
    /// The body is not valid in the encoding it declares.
    Malformed,
}

impl Failure {
    pub fn new(status: u16, kind: Kind, message: impl Into<String>) -> Failure {
        Failure {
            status,
            kind,
            message: message.into(),
            extra: Map::new(),
        }
    }

    /// A fact beside the error.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Failure {
        self.extra.insert(key.to_string(), value.into());
        self
    }

    /// The response in the route's style; `seq` makes a provider's request id (stable for a run).
    pub fn respond(self, style: &ErrorStyle, seq: u64) -> Response {
        if let Some(t) = &style.template {
            // A fact this kind lacks is `null`: the template's names were checked at load.
            return Response::json(self.status, &template::json(t, &template::OrNull(&self)));
        }
        let status = self.status;
        let (mut body, content_type) = match style.shape {
            ErrorShape::Generic => (json!({"error": self.message, "status": status}), JSON),
            ErrorShape::Problem => (
                json!({
                    "type": "about:blank",
                    "title": reason(status),
                    "status": status,
                    "detail": self.message,
                    // An extension member: the generic shape's field, for readers of either.
                    "error": self.message,
                }),
                "application/problem+json",
            ),
            ErrorShape::Stripe => {
                let (kind, code) = stripe(status, self.kind);
                let mut e = json!({"type": kind, "message": self.message});
                if let Some(code) = code {
                    e["code"] = code.into();
                }
                (json!({ "error": e }), JSON)
            }
            ErrorShape::Adyen => (
                json!({
                    "status": status,
                    "errorCode": adyen_code(self.kind),
                    "message": self.message,
                    "errorType": match status {
                        401 | 403 => "security",
                        500.. => "internal",
                        _ => "validation",
                    },
                }),
                JSON,
            ),
            ErrorShape::Paypal => (
                json!({
                    "name": paypal_name(status, self.kind),
                    "message": self.message,
                    "debug_id": format!("da{seq:012x}"),
                    "details": [],
                }),
                JSON,
            ),
            ErrorShape::Checkout => (
                json!({
                    "request_id": format!("da_{seq}"),
                    "error_type": checkout_type(status, self.kind),
                    "error_codes": [checkout_code(self.kind)],
                }),
                JSON,
            ),
        };
        if let Value::Object(o) = &mut body {
            for (k, v) in self.extra {
                o.entry(k).or_insert(v);
            }
            // The generic shape's `status`, for readers of doubleagent's own errors; an SDK
            // reads only its provider's members.
            o.entry("status").or_insert(status.into());
        }
        let mut r = Response::json(status, &body);
        r.headers[0].1 = content_type.into();
        r
    }
}

const JSON: &str = "application/json";

/// An `error` template's placeholders: `{{error.status}}`, `{{error.message}}`,
/// `{{error.kind}}`, and `{{error.NAME}}` for the facts this failure has (`id`, `state`...).
impl template::Vars for Failure {
    fn var(&self, name: &str) -> Option<Value> {
        Some(match name.strip_prefix("error.")? {
            "status" => self.status.into(),
            "message" => self.message.as_str().into(),
            "kind" => self.kind.as_str().into(),
            fact => self.extra.get(fact)?.clone(),
        })
    }
}

impl Kind {
    /// Its name in an `error` template.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Fate => "fate",
            Kind::Unmatched => "unmatched",
            Kind::NotFound => "not-found",
            Kind::Unavailable => "unavailable",
            Kind::TooLate => "too-late",
            Kind::Conflict => "conflict",
            Kind::Mismatch => "mismatch",
            Kind::MissingKey => "missing-key",
            Kind::TooLarge => "too-large",
            Kind::Incomplete => "incomplete",
            Kind::Malformed => "malformed",
        }
    }
}

/// Stripe's `error.type` and `error.code` for a failure.
fn stripe(status: u16, kind: Kind) -> (&'static str, Option<&'static str>) {
    match (kind, status) {
        (Kind::Mismatch, _) => ("idempotency_error", None),
        (Kind::Conflict, _) => ("invalid_request_error", Some("idempotency_key_in_use")),
        (Kind::NotFound | Kind::Unmatched, _) => {
            ("invalid_request_error", Some("resource_missing"))
        }
        (Kind::MissingKey, _) => ("invalid_request_error", Some("parameter_missing")),
        (_, 402) => ("card_error", Some("card_declined")),
        (_, 429) => ("invalid_request_error", Some("rate_limit")),
        (_, 500..) => ("api_error", None),
        _ => ("invalid_request_error", None),
    }
}

fn adyen_code(kind: Kind) -> &'static str {
    match kind {
        Kind::NotFound | Kind::Unmatched => "000",
        Kind::Mismatch | Kind::Conflict => "704",
        Kind::MissingKey => "702",
        _ => "901",
    }
}

fn paypal_name(status: u16, kind: Kind) -> &'static str {
    match (kind, status) {
        (Kind::Mismatch, _) => "DUPLICATE_REQUEST_ID",
        (_, 401) => "AUTHENTICATION_FAILURE",
        (_, 403) => "NOT_AUTHORIZED",
        (_, 404) => "RESOURCE_NOT_FOUND",
        (_, 409) => "RESOURCE_CONFLICT",
        (_, 422) => "UNPROCESSABLE_ENTITY",
        (_, 429) => "RATE_LIMIT_REACHED",
        (_, 500..) => "INTERNAL_SERVER_ERROR",
        _ => "INVALID_REQUEST",
    }
}

fn checkout_type(status: u16, kind: Kind) -> &'static str {
    match (kind, status) {
        (Kind::NotFound | Kind::Unmatched, _) => "resource_not_found",
        (Kind::Conflict | Kind::Mismatch, _) => "request_conflict",
        (_, 429) => "too_many_requests",
        (_, 500..) => "server_error",
        _ => "request_invalid",
    }
}

fn checkout_code(kind: Kind) -> &'static str {
    match kind {
        Kind::Fate => "processing_error",
        Kind::Unmatched | Kind::NotFound => "not_found",
        Kind::Unavailable => "service_unavailable",
        Kind::TooLate => "action_already_applied",
        Kind::Conflict => "idempotency_key_in_use",
        Kind::Mismatch => "idempotency_key_mismatch",
        Kind::MissingKey => "idempotency_key_required",
        Kind::TooLarge => "request_too_large",
        Kind::Incomplete => "request_incomplete",
        Kind::Malformed => "request_malformed",
    }
}

/// The reason phrase of a status, for problem+json's `title`.
fn reason(status: u16) -> &'static str {
    hyper::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("Error")
}
