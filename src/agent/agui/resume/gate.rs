//! What the answers of a resume list allow: an action gated by an interrupt runs, is skipped,
//! or stays blocked.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The recorded answer to one interrupt; in a checkpoint's ledger form
/// `{"status": "resolved", "payload"?}` or `{"status": "cancelled"}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "lowercase")]
pub enum Answer {
    Resolved {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        payload: Option<Value>,
    },
    #[serde(rename = "cancelled")]
    Discarded,
}

/// What an answer (or its absence) allows the action it gates: a discard skips it, a resolved
/// answer runs it if `approve_if` (a JSON pointer into the payload, e.g. `/approved`) is `true`
/// or absent, no answer blocks it (PROD-3).
pub fn gate_for(answer: Option<&Answer>, approve_if: Option<&str>) -> Gate {
    match answer {
        None => Gate::Blocked,
        Some(Answer::Discarded) => Gate::Skip(SkipReason::Discarded),
        Some(Answer::Resolved { payload }) => {
            let approved = approve_if.is_none_or(|pointer| {
                payload
                    .as_ref()
                    .and_then(|p| p.pointer(pointer))
                    .is_some_and(|v| v == &Value::Bool(true))
            });
            if approved {
                Gate::Run {
                    payload: payload.clone(),
                }
            } else {
                Gate::Skip(SkipReason::NotApproved)
            }
        }
    }
}

/// Whether a gated action may run.
#[derive(Debug, Clone, PartialEq)]
pub enum Gate {
    /// Resolved (and approved, when an `approve_if` pointer is given): perform the action;
    /// `payload` reaches the tool call.
    Run { payload: Option<Value> },
    /// Answered, but the action must not happen.
    Skip(SkipReason),
    /// No usable answer (uncovered, expired, conflicting, or never asked): never performed
    /// (PROD-3).
    Blocked,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// `status: "cancelled"`.
    Discarded,
    /// Resolved, but the `approve_if` pointer in the payload is not `true`.
    NotApproved,
}
