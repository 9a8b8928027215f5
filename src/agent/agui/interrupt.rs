//! Interrupts (what a run needs from outside before it can continue, carried by
//! `RUN_FINISHED{outcome: interrupt}`) and the resume entries that answer them on the next run.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::wire::{shared_object, wire};

wire! {
    /// Something a run needs from outside before it can continue.
    #[derive(Default)]
    pub struct Interrupt {
        /// Unique within its run (INT-3); resume entries answer by it.
        id: String,
        /// Open string (INT-4), e.g. `"approval-required"`.
        reason: String,
        message?: String,
        /// The tool call awaiting approval.
        tool_call_id?: String,
        /// Opaque JSON Schema of the expected answer; must be an object. Shared: a scripted
        /// interrupt raised on every run carries its script's schema, not a copy.
        #[serde(default, skip_serializing_if = "Option::is_none", with = "shared_object")]
        response_schema: Option<Arc<Map<String, Value>>>,
        /// Unconstrained string; ISO 8601 by convention (judged by `resume::is_expired`).
        expires_at?: String,
        /// INT-5: set when the interrupt was raised inside a subagent.
        subagent_run_id?: String,
        metadata?: Metadata,
        #[serde(flatten)] extra: Map<String, Value>,
    }
}

impl Interrupt {
    pub fn new(id: impl Into<String>, reason: impl Into<String>) -> Self {
        Interrupt {
            id: id.into(),
            reason: reason.into(),
            ..Interrupt::default()
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

wire! {
    /// An answer to one interrupt, carried by the continuing run's `input.resume`.
    pub struct ResumeEntry {
        interrupt_id: String,
        status: ResumeStatus,
        /// The answer: any JSON value except a whole `null`.
        payload?: Value,
        /// Envelope information, not part of the answer (TanStack puts
        /// `tanstack:interruptContinuation` here).
        metadata?: Metadata,
        #[serde(flatten)] extra: Map<String, Value>,
    }
}
