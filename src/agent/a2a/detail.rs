//! The A2A agents' ledger entries: each is an agent entry (`Record::agent_event`) with the task
//! as `work_id`, the task's revision, and a `detail` object. The details whose keys depend on
//! what happened are derived structs here; the fixed ones are `json!` at their call sites.
//! [`super::task::restore`] reads these same keys back to rebuild the task table.

use std::time::Duration;

use serde::{Serialize, Serializer};
use serde_json::{json, Value};

use super::errors::RpcError;
use super::rpc::Binding;
use super::types::{Artifact, Message, Metadata, Part, Role};
use crate::ledger::Record;
use crate::revision::Revision;
use crate::scenario::a2a::Outcome;
use crate::world::World;

/// Append an agent entry at scenario time `at` with the task as work id and its revision. A
/// status change is logged at the instant its timestamp names, so the task rebuilt from the
/// ledger after a restart carries the very same timestamp.
pub fn log_at(
    world: &World,
    at: Duration,
    agent: &str,
    event: &str,
    task: Option<&str>,
    revision: Option<&Value>,
    detail: impl Serialize,
) -> u64 {
    let rec = entry(agent, event, at, task, revision, detail);
    world.lock().ledger.append(rec)
}

/// [`log_at`] now (the time is read when the entry is appended).
pub fn log(
    world: &World,
    agent: &str,
    event: &str,
    task: Option<&str>,
    revision: Option<&Value>,
    detail: impl Serialize,
) -> u64 {
    world.append_now(entry(agent, event, Duration::ZERO, task, revision, detail))
}

fn entry(
    agent: &str,
    event: &str,
    at: Duration,
    task: Option<&str>,
    revision: Option<&Value>,
    detail: impl Serialize,
) -> Record {
    let mut rec = Record::agent_event(agent, event, at, detail);
    rec.work_id = task.map(str::to_string);
    rec.revision = revision.and_then(Revision::of);
    rec
}

/// Record a protocol error an orchestrator got (malformed call, unknown method...), with the
/// task the call named as its work id.
pub fn log_error(world: &World, agent: &str, (method, task): (&str, Option<&str>), err: &RpcError) {
    let detail = json!({"method": method, "code": err.code, "message": err.message});
    log(world, agent, "rpc-error", task, None, detail);
}

/// How a message was taken, for its `message` entry.
#[derive(Clone, Copy)]
pub enum Taken<'a> {
    /// A repeated messageId, de-duplicated: what the first one produced.
    Duplicate { of: &'a str },
    /// A follow-up naming its task.
    FollowUp {
        resumes: bool,
        repeat_of: Option<&'a str>,
    },
    /// A new task or a direct reply.
    New {
        behavior: Option<usize>,
        repeat_of: Option<&'a str>,
    },
}

/// The detail of a `message` entry: the call, the message's ids, revision and text, how it was
/// taken, and what a plain one-text-part user message lacks to give the message back exactly
/// (it goes into the task's history, which survives a restart), so the usual entry stays small.
#[derive(Serialize)]
pub struct MessageDetail<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    behavior: Option<Option<usize>>,
    binding: Binding,
    context_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    duplicate_of: Option<&'a str>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    extensions: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    follow_up: Option<bool>,
    message_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<&'a Metadata>,
    method: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    parts: Option<&'a [Part]>,
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    reference_task_ids: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    repeat_of: Option<Option<&'a str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    resumes: Option<bool>,
    revision: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    role: Option<Role>,
    task_id: Option<&'a str>,
    text: &'a str,
}

/// What every `message` entry of one call shares.
pub struct MessageCall<'a> {
    pub method: &'a str,
    pub binding: Binding,
    pub msg: &'a Message,
    pub text: &'a str,
    pub revision: Option<&'a Value>,
}

impl<'a> MessageCall<'a> {
    /// The detail of the message taken as `taken`, leading to `task_id` in `context_id`.
    pub fn detail(
        &self,
        task_id: Option<&'a str>,
        context_id: Option<&'a str>,
        taken: Taken<'a>,
    ) -> MessageDetail<'a> {
        let msg = self.msg;
        let one_plain_text =
            matches!(&msg.parts[..], [p] if p.as_text() == Some(self.text) && p.is_bare());
        let (behavior, repeat_of, duplicate_of, follow_up, resumes) = match taken {
            Taken::New {
                behavior,
                repeat_of,
            } => (Some(behavior), Some(repeat_of), None, None, None),
            Taken::FollowUp { resumes, repeat_of } => {
                (None, Some(repeat_of), None, Some(true), Some(resumes))
            }
            Taken::Duplicate { of } => (None, None, Some(of), None, None),
        };
        MessageDetail {
            behavior,
            binding: self.binding,
            context_id,
            duplicate_of,
            extensions: &msg.extensions,
            follow_up,
            message_id: &msg.message_id,
            metadata: msg.metadata.as_ref(),
            method: self.method,
            parts: (!one_plain_text).then_some(&msg.parts[..]),
            reference_task_ids: &msg.reference_task_ids,
            repeat_of,
            resumes,
            revision: self.revision,
            role: (msg.role != Role::User).then_some(msg.role),
            task_id,
            text: self.text,
        }
    }
}

/// A scripted status change (`status`); a status message's text and id when it has one.
#[derive(Serialize)]
pub struct StatusDetail<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_id: Option<&'a str>,
    pub state: &'a str,
}

/// An artifact event (`artifact`): the rendered parts (and name, description) rebuild the
/// artifact after a restart.
#[derive(Serialize)]
pub struct ArtifactDetail<'a> {
    pub append: bool,
    pub artifact_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<&'a str>,
    pub last_chunk: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<&'a str>,
    pub parts: &'a [Part],
}

/// A new task (`task-created`): how its script was chosen and runs.
#[derive(Serialize)]
pub struct CreatedDetail<'a> {
    pub behavior: Option<usize>,
    pub cancel: &'a str,
    pub context_id: &'a str,
    pub revision: Option<&'a Value>,
    pub task_id: &'a str,
    pub work: String,
}

/// A task's canary, the first time it was handed out (`canary`).
#[derive(Serialize)]
pub struct CanaryDetail<'a> {
    pub canary: &'a str,
    pub revision: Option<&'a Value>,
    pub task_id: &'a str,
}

/// A task's final state (`result`).
#[derive(Serialize)]
pub struct ResultDetail<'a> {
    pub artifacts: ArtifactIds<'a>,
    pub canary: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<&'a str>,
    pub outcome: Outcome,
    pub state: &'a str,
    pub task_id: &'a str,
}

/// The ids of a task's artifacts, written as a list of them.
pub struct ArtifactIds<'a>(pub &'a [Artifact]);

impl Serialize for ArtifactIds<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|a| &a.artifact_id))
    }
}
