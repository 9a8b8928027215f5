//! The orchestrator's own account of what happened (`POST /_admin/claims`, `--claims FILE`):
//! which actions succeeded, failed or are unknown, which tasks ended how, which results it
//! adopted. The rules of `outcomes` and `agents` hold it against the ledger.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The orchestrator's own account of what happened (`POST /_admin/claims`, `--claims FILE`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claims {
    #[serde(default)]
    pub actions: Vec<ActionClaim>,
    #[serde(default)]
    pub tasks: Vec<TaskClaim>,
    /// Ids of tasks whose results the orchestrator adopted.
    #[serde(default)]
    pub adopted: Vec<String>,
}

/// A claim about an action, naming it by exactly one of `key`, `intent` or `work_id`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionClaim {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_id: Option<String>,
    pub claim: ActionOutcome,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ActionOutcome {
    Succeeded,
    Failed,
    /// The orchestrator believes its cancel stopped the action (an MCP `notifications/cancelled`,
    /// a closed stream, a cancel route): true only if it never took effect (REC-3).
    Cancelled,
    Unknown,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskClaim {
    pub task_id: String,
    pub claim: TaskOutcome,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskOutcome {
    Completed,
    Cancelled,
    StopRequested,
    Unknown,
}

/// Why a claims document was rejected.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0}")]
pub struct ClaimsError(pub String);

impl Claims {
    /// Parse and validate a claims document, with the JSON path of the first problem.
    pub fn parse(json: &[u8]) -> Result<Claims, ClaimsError> {
        let mut de = serde_json::Deserializer::from_slice(json);
        let claims: Claims = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let path = e.path().to_string();
            let at = match path.as_str() {
                "." | "" => String::new(),
                _ => format!("{path}: "),
            };
            // serde_json appends " at line L column C"; keep it, it helps in files.
            ClaimsError(format!("invalid claims: {at}{}", e.into_inner()))
        })?;
        for (i, a) in claims.actions.iter().enumerate() {
            let named = [a.key.is_some(), a.intent.is_some(), a.work_id.is_some()];
            if named.iter().filter(|b| **b).count() != 1 {
                return Err(ClaimsError(format!(
                    "invalid claims: actions[{i}]: name the action by exactly one of `key`, `intent` or `work_id`"
                )));
            }
        }
        Ok(claims)
    }

    pub(super) fn merge(&mut self, other: Claims) {
        self.actions.extend(other.actions);
        self.tasks.extend(other.tasks);
        self.adopted.extend(other.adopted);
    }
}
