//! Interrupts (what a run needs from outside before it can continue, carried by
//! `RUN_FINISHED{outcome: interrupt}`) and the resume entries that answer them on the next run.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::input::{non_null, object_non_null, shared_object, shared_object_non_null, Metadata};

/// Something a run needs from outside before it can continue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Interrupt {
    /// Unique within its run (INT-3); resume entries answer by it.
    pub id: String,
    /// Open string (INT-4), e.g. `"approval-required"`.
    pub reason: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "non_null"
    )]
    pub message: Option<String>,
    /// The tool call awaiting approval.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "non_null"
    )]
    pub tool_call_id: Option<String>,
    /// Opaque JSON Schema of the expected answer; must be an object. Shared: a scripted
    /// interrupt raised on every run carries its script's schema, not a copy.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        serialize_with = "shared_object",
        deserialize_with = "shared_object_non_null"
    )]
    pub response_schema: Option<Arc<Map<String, Value>>>,
    /// Unconstrained string; ISO 8601 by convention (see `resume::parse_timestamp`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "non_null"
    )]
    pub expires_at: Option<String>,
    /// INT-5: set when the interrupt was raised inside a subagent.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "non_null"
    )]
    pub subagent_run_id: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "object_non_null"
    )]
    pub metadata: Option<Metadata>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Interrupt {
    pub fn new(id: impl Into<String>, reason: impl Into<String>) -> Self {
        Interrupt {
            id: id.into(),
            reason: reason.into(),
            message: None,
            tool_call_id: None,
            response_schema: None,
            expires_at: None,
            subagent_run_id: None,
            metadata: None,
            extra: Map::new(),
        }
    }
}

/// `status` of a [`ResumeEntry`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResumeStatus {
    /// The interrupt was answered; `payload` is the answer.
    Resolved,
    /// The interrupt was explicitly discarded.
    Cancelled,
}

/// An answer to one interrupt, carried by the continuing run's `input.resume`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResumeEntry {
    pub interrupt_id: String,
    pub status: ResumeStatus,
    /// The answer: any JSON value except a whole `null`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "non_null"
    )]
    pub payload: Option<Value>,
    /// Envelope information, not part of the answer (TanStack puts
    /// `tanstack:interruptContinuation` here).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "object_non_null"
    )]
    pub metadata: Option<Metadata>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ResumeEntry {
    #[cfg(test)]
    pub fn resolved(interrupt_id: impl Into<String>, payload: Option<Value>) -> Self {
        ResumeEntry {
            interrupt_id: interrupt_id.into(),
            status: ResumeStatus::Resolved,
            payload,
            metadata: None,
            extra: Map::new(),
        }
    }

    #[cfg(test)]
    pub fn cancelled(interrupt_id: impl Into<String>) -> Self {
        ResumeEntry {
            interrupt_id: interrupt_id.into(),
            status: ResumeStatus::Cancelled,
            payload: None,
            metadata: None,
            extra: Map::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int4_response_schema_must_be_an_object() {
        assert!(serde_json::from_str::<Interrupt>(
            r#"{"id":"a","reason":"x","responseSchema":[1]}"#
        )
        .is_err());
        assert!(serde_json::from_str::<Interrupt>(
            r#"{"id":"a","reason":"x","responseSchema":null}"#
        )
        .is_err());
        assert!(serde_json::from_str::<Interrupt>(
            r#"{"id":"a","reason":"x","responseSchema":{}}"#
        )
        .is_ok());
    }
}
