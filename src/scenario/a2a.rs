//! The scenario model of an A2A agent (`[agents.NAME]` with `protocol = "a2a"`): its raw TOML
//! shape, validation against the scenario's services, and the compiled [`A2aAgent`].
//!
//! An agent is a default [`Script`] (its top-level keys) plus per-message [`Behavior`]s, each a
//! matcher and a script whose missing keys come from the agent's. A script is what one task
//! does on the scenario clock at offsets from its start (status updates, side-effect calls,
//! artifacts, the final state); `agent::a2a::task` turns it into a timeline.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::de::{self, Deserializer};
use serde::Deserialize;
use serde_json::Value;

use super::{did_you_mean, sub_table, Dur, Issues, RouteKind, Service};
use crate::clock::parse_duration;

mod script;
use script::compile_script;

/// The loopback ports an agent may push to: a test's receiver listens on one, and doubleagent's
/// own listener is never among them whatever the scenario says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushPorts {
    Listed(Vec<u16>),
    /// `push_ports = "any"`: a conformance kit's receiver takes whatever port it is given.
    Any,
}

impl PushPorts {
    pub fn allows(&self, port: u16) -> bool {
        match self {
            PushPorts::Listed(ports) => ports.contains(&port),
            PushPorts::Any => true,
        }
    }
}

/// `push_ports` as written: a list of ports or the word `"any"`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawPushPorts {
    Listed(Vec<u16>),
    Word(String),
}

/// One of A2A's standard bindings; its name is the agent card's `protocolBinding`, and every
/// entry a call writes says which one it came over (one engine serves them all).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, Deserialize)]
pub enum Binding {
    #[serde(rename = "JSONRPC")]
    JsonRpc,
    #[serde(rename = "HTTP+JSON")]
    HttpJson,
    #[serde(rename = "GRPC")]
    Grpc,
}

impl Binding {
    /// Every binding, in the order the agent card lists them (JSON-RPC first: clients take the
    /// first interface they speak, and most speak it).
    pub const ALL: [Binding; 3] = [Binding::JsonRpc, Binding::HttpJson, Binding::Grpc];

    pub fn as_str(self) -> &'static str {
        match self {
            Binding::JsonRpc => "JSONRPC",
            Binding::HttpJson => "HTTP+JSON",
            Binding::Grpc => "GRPC",
        }
    }
}

/// A validated A2A agent script.
#[derive(Clone, Debug)]
pub struct A2aAgent {
    pub description: String,
    /// Replay the first answer for a repeated `messageId` instead of starting a new task. A2A
    /// makes this optional (REC-4), so both behaviours must be available.
    pub dedupe_message_id: bool,
    /// The message metadata key that carries the orchestrator's revision (REC-6); shared with
    /// every task the agent keeps.
    pub revision_key: Arc<str>,
    pub push: PushPolicy,
    /// Hosts push notifications may go to besides loopback.
    pub push_hosts: Vec<String>,
    /// Loopback ports push targets may use (a test's own receiver); none by default.
    pub push_ports: PushPorts,
    /// Refuse calls without an `A2A-Version: 1.x` header (-32009), as a strict 1.0 server does.
    pub strict_version: bool,
    /// The bindings the agent serves and its card lists (`bindings = [...]`); empty means all.
    pub bindings: Vec<Binding>,
    /// Used when no behaviour matches. An `Arc` keeps `AgentSpec`'s variants of similar size, and
    /// a running task holds it without a copy.
    pub script: Arc<Script>,
    pub behaviors: Vec<Behavior>,
    /// The stream buffer of each of the agent's tasks: room for what two of its scripts can emit
    /// plus slack, a power of two up to [`STREAM_BUFFER`] (a broadcast channel allocates its
    /// whole buffer up front, ~380 bytes a slot).
    pub stream_capacity: usize,
}

/// Events a task's streams buffer before a slow reader is cut off, at most.
pub const STREAM_BUFFER: usize = 1024;

/// [`A2aAgent::stream_capacity`] for these scripts.
fn stream_capacity<'a>(scripts: impl Iterator<Item = &'a Script>) -> usize {
    let events = |s: &Script| s.updates.len() + s.steps.len() + s.artifacts.len() + 2;
    let most = scripts.map(events).max().unwrap_or(2);
    (2 * most + 16).next_power_of_two().clamp(32, STREAM_BUFFER)
}

impl A2aAgent {
    pub fn serves(&self, binding: Binding) -> bool {
        self.bindings.is_empty() || self.bindings.contains(&binding)
    }

    /// The first behaviour matching the message (with its index), else the agent's own script.
    pub fn script_for(
        &self,
        text: &str,
        message_id: &str,
        metadata: Option<&serde_json::Map<String, Value>>,
    ) -> (Option<usize>, &Arc<Script>) {
        self.behaviors
            .iter()
            .enumerate()
            .find(|(_, b)| b.matcher.matches(text, message_id, metadata))
            .map(|(i, b)| (Some(i), &b.script))
            .unwrap_or((None, &self.script))
    }
}

/// How push notifications are delivered: `delay` on the scenario clock, and `duplicates` extra
/// copies of each (at-least-once delivery sends some notifications twice).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PushPolicy {
    pub delay: Duration,
    pub duplicates: u32,
}

/// One part a behaviour plays, chosen per incoming message.
#[derive(Clone, Debug)]
pub struct Behavior {
    pub matcher: MessageMatch,
    pub script: Arc<Script>,
}

/// All given conditions must hold; an empty matcher matches every message.
#[derive(Clone, Debug, Default)]
pub struct MessageMatch {
    /// Substring of the message's text parts (joined by newlines).
    pub text: Option<String>,
    pub message_id_prefix: Option<String>,
    /// Metadata keys with the values they must have (strings also match their text form).
    pub metadata: BTreeMap<String, Value>,
}

impl MessageMatch {
    pub fn matches(
        &self,
        text: &str,
        message_id: &str,
        metadata: Option<&serde_json::Map<String, Value>>,
    ) -> bool {
        self.text.as_ref().is_none_or(|t| text.contains(t.as_str()))
            && self
                .message_id_prefix
                .as_ref()
                .is_none_or(|p| message_id.starts_with(p.as_str()))
            && self.metadata.iter().all(|(k, want)| {
                metadata
                    .and_then(|m| m.get(k))
                    .is_some_and(|got| got == want || scalar_text(got) == scalar_text(want))
            })
    }
}

fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// What a task does, on the scenario clock, from the moment it starts.
#[derive(Clone, Debug)]
pub struct Script {
    /// Start → final state.
    pub work: Duration,
    pub cancel: CancelPolicy,
    pub outcome: Outcome,
    pub reply: ReplyKind,
    /// Text of the agent message attached to the final status (or of the direct reply).
    pub message: Option<String>,
    /// Status updates before the final state (default: `working` at once).
    pub updates: Vec<StatusStep>,
    pub steps: Vec<CallStep>,
    pub artifacts: Vec<ArtifactSpec>,
}

impl Default for Script {
    fn default() -> Script {
        Script {
            work: Duration::ZERO,
            cancel: CancelPolicy::Honor,
            outcome: Outcome::Completed,
            reply: ReplyKind::Task,
            message: None,
            updates: vec![StatusStep {
                at: Duration::ZERO,
                state: UpdateState::Working,
                message: None,
            }],
            steps: Vec::new(),
            artifacts: Vec::new(),
        }
    }
}

/// What CancelTask does to a task that is still running.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum CancelPolicy {
    /// working → canceled; later steps never run.
    #[default]
    Honor,
    /// Always -32002 TaskNotCancelable; the task carries on.
    TooLate,
    /// The call returns the task still working; it completes, performs its remaining steps and
    /// delivers its result anyway.
    AckThenComplete,
    /// Honoured within this long of the task's start, refused (-32002) afterwards.
    HonorBefore(Duration),
}

impl CancelPolicy {
    /// The policy as written in a scenario (static text but for `honor-before`'s duration).
    pub fn name(self) -> std::borrow::Cow<'static, str> {
        match self {
            CancelPolicy::Honor => "honor".into(),
            CancelPolicy::TooLate => "too-late".into(),
            CancelPolicy::AckThenComplete => "ack-then-complete".into(),
            CancelPolicy::HonorBefore(d) => {
                format!("honor-before:{}", crate::clock::format_duration(d)).into()
            }
        }
    }
}

impl<'de> Deserialize<'de> for CancelPolicy {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<CancelPolicy, D::Error> {
        let s = String::deserialize(d)?;
        match s.as_str() {
            "honor" => return Ok(CancelPolicy::Honor),
            "too-late" => return Ok(CancelPolicy::TooLate),
            "ack-then-complete" => return Ok(CancelPolicy::AckThenComplete),
            _ => {}
        }
        if let Some(dur) = s.strip_prefix("honor-before:") {
            return parse_duration(dur)
                .map(CancelPolicy::HonorBefore)
                .map_err(|e| de::Error::custom(format!("honor-before: {e}")));
        }
        let words = ["honor", "too-late", "ack-then-complete", "honor-before"];
        let hint = did_you_mean(s.split(':').next().unwrap_or_default(), words.into_iter());
        Err(de::Error::custom(format!(
            "unknown cancel policy \"{s}\"{hint}; expected one of: {}:<dur>",
            words.join(", ")
        )))
    }
}

/// The state a task ends in (or pauses in, for the interrupted ones).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Outcome {
    Completed,
    Failed,
    Rejected,
    InputRequired,
    AuthRequired,
}

/// Whether the agent answers with a Task or a direct Message (no task at all).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReplyKind {
    Task,
    Message,
}

/// States a script may pass through before its outcome; the ones that end a stream are
/// outcomes, not updates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UpdateState {
    Submitted,
    Working,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStatusStep {
    at: Option<Dur>,
    state: UpdateState,
    message: Option<String>,
}

/// A status update at an offset.
#[derive(Clone, Debug, PartialEq)]
pub struct StatusStep {
    pub at: Duration,
    pub state: UpdateState,
    pub message: Option<String>,
}

/// A side-effect call the agent makes at an offset, through the service pipeline.
#[derive(Clone, Debug)]
pub struct CallStep {
    pub at: Duration,
    pub service: String,
    pub route: String,
    pub method: String,
    /// Service-relative path (the route's, or the step's own for a route with parameters).
    pub path: String,
    pub headers: Vec<(String, String)>,
    /// JSON body; strings may hold placeholders (`{{task.id}}`, `{{canary}}`, ...).
    pub json: Option<Value>,
    /// `json` serialised once, when none of its strings holds a placeholder.
    pub fixed_json: Option<hyper::body::Bytes>,
    pub body: Option<String>,
}

/// Whether any string in `v` holds `{{` (the only way a template placeholder starts).
fn has_placeholder(v: &Value) -> bool {
    match v {
        Value::String(s) => s.contains("{{"),
        Value::Array(a) => a.iter().any(has_placeholder),
        Value::Object(o) => o.values().any(has_placeholder),
        _ => false,
    }
}

/// An artifact (or one chunk of one) emitted at an offset (default: when the work ends).
#[derive(Clone, Debug, PartialEq)]
pub struct ArtifactSpec {
    pub at: Option<Duration>,
    pub id: String,
    pub name: Option<String>,
    pub description: Option<String>,
    pub parts: Vec<PartSpec>,
    /// This chunk extends an earlier artifact with the same id.
    pub append: bool,
    pub last_chunk: bool,
}

/// One part; text fields may hold placeholders.
#[derive(Clone, Debug, PartialEq)]
pub struct PartSpec {
    pub content: PartContent,
    pub filename: Option<String>,
    pub media_type: Option<String>,
    pub metadata: Option<Value>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum PartContent {
    Text(String),
    /// The file's bytes, written as UTF-8 text (base64-encoded on the wire).
    Raw(String),
    Url(String),
    Data(Value),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAgent {
    #[allow(dead_code)]
    protocol: String,
    description: Option<String>,
    dedupe_message_id: Option<bool>,
    revision_key: Option<String>,
    push: Option<RawPush>,
    push_hosts: Option<Vec<String>>,
    push_ports: Option<RawPushPorts>,
    strict_version: Option<bool>,
    bindings: Option<Vec<Binding>>,
    #[serde(default)]
    behaviors: Vec<RawBehavior>,
    // The script keys, shared with behaviours.
    work: Option<Dur>,
    cancel: Option<CancelPolicy>,
    outcome: Option<Outcome>,
    reply: Option<ReplyKind>,
    message: Option<String>,
    updates: Option<Vec<RawStatusStep>>,
    steps: Option<Vec<RawStep>>,
    result: Option<RawResult>,
    artifacts: Option<Vec<RawArtifact>>,
}

/// A behaviour's table: its `match` and its script keys, all optional. The agent's own script
/// keys are read into one too, without a `match`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBehavior {
    #[serde(rename = "match")]
    matcher: Option<RawMatch>,
    work: Option<Dur>,
    cancel: Option<CancelPolicy>,
    outcome: Option<Outcome>,
    reply: Option<ReplyKind>,
    message: Option<String>,
    updates: Option<Vec<RawStatusStep>>,
    steps: Option<Vec<RawStep>>,
    result: Option<RawResult>,
    artifacts: Option<Vec<RawArtifact>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPush {
    delay: Option<Dur>,
    duplicates: Option<u32>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawMatch {
    text: Option<String>,
    message_id_prefix: Option<String>,
    #[serde(default)]
    metadata: BTreeMap<String, Value>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    at: Option<Dur>,
    call: RawCall,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCall {
    service: String,
    route: String,
    path: Option<String>,
    json: Option<Value>,
    body: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

/// Shorthand for one artifact named `result` with parts in the order text, raw, url, data.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawResult {
    name: Option<String>,
    text: Option<String>,
    raw: Option<String>,
    url: Option<String>,
    data: Option<Value>,
    filename: Option<String>,
    media_type: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawArtifact {
    id: Option<String>,
    name: Option<String>,
    description: Option<String>,
    at: Option<Dur>,
    #[serde(default)]
    append: bool,
    #[serde(default)]
    last_chunk: bool,
    parts: Vec<RawPart>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPart {
    text: Option<String>,
    raw: Option<String>,
    url: Option<String>,
    data: Option<Value>,
    filename: Option<String>,
    media_type: Option<String>,
    metadata: Option<Value>,
}

pub(crate) fn compile(
    table: &toml::Table,
    path: &str,
    services: &[Service],
    issues: &mut Issues,
) -> Option<A2aAgent> {
    let raw: RawAgent = sub_table(table, path, issues)?;
    let start = issues.len();
    let revision_key = raw.revision_key.unwrap_or_else(|| "revision".into());
    if revision_key.is_empty() {
        issues.add(
            format!("{path}.revision_key"),
            "the revision key must not be empty",
        );
    }
    for (i, h) in raw.push_hosts.iter().flatten().enumerate() {
        if h.is_empty() || h.contains(['/', ':', ' ']) {
            issues.add(
                format!("{path}.push_hosts[{i}]"),
                format!("\"{h}\" is not a host name (write just the host, like \"hooks.test\")"),
            );
        }
    }
    if let Some(RawPushPorts::Word(w)) = &raw.push_ports {
        if w != "any" {
            let m = format!("expected a list of ports or \"any\", found \"{w}\"");
            issues.add(format!("{path}.push_ports"), m);
        }
    }
    if raw.bindings.as_ref().is_some_and(Vec::is_empty) {
        issues.add(
            format!("{path}.bindings"),
            "an agent must serve at least one binding: list some of \"JSONRPC\", \"HTTP+JSON\", \"GRPC\" (or leave the key out for all three)",
        );
    }
    let base = RawBehavior {
        matcher: None,
        work: raw.work,
        cancel: raw.cancel,
        outcome: raw.outcome,
        reply: raw.reply,
        message: raw.message,
        updates: raw.updates,
        steps: raw.steps,
        result: raw.result,
        artifacts: raw.artifacts,
    };
    let script = compile_script(&base, &Script::default(), path, services, issues);
    let mut behaviors = Vec::new();
    for (i, b) in raw.behaviors.into_iter().enumerate() {
        let bpath = format!("{path}.behaviors[{i}]");
        let parent = script.as_ref();
        let Some(own) = parent.and_then(|p| compile_script(&b, p, &bpath, services, issues)) else {
            continue;
        };
        let m = b.matcher.unwrap_or_default();
        let matcher = MessageMatch {
            text: m.text,
            message_id_prefix: m.message_id_prefix,
            metadata: m.metadata,
        };
        let script = Arc::new(own);
        behaviors.push(Behavior { matcher, script });
    }
    let script = script?;
    if issues.len() > start {
        return None;
    }
    Some(A2aAgent {
        description: raw
            .description
            .unwrap_or_else(|| "A scripted A2A agent served by doubleagent".into()),
        dedupe_message_id: raw.dedupe_message_id.unwrap_or(false),
        revision_key: revision_key.into(),
        push: raw.push.map_or_else(PushPolicy::default, |p| PushPolicy {
            delay: p.delay.map(|d| d.0).unwrap_or_default(),
            duplicates: p.duplicates.unwrap_or(0),
        }),
        push_hosts: raw.push_hosts.unwrap_or_default(),
        push_ports: match raw.push_ports {
            None => PushPorts::Listed(Vec::new()),
            Some(RawPushPorts::Listed(ports)) => PushPorts::Listed(ports),
            Some(RawPushPorts::Word(_)) => PushPorts::Any,
        },
        strict_version: raw.strict_version.unwrap_or(false),
        bindings: raw.bindings.unwrap_or_default(),
        stream_capacity: stream_capacity(
            behaviors
                .iter()
                .map(|b| &*b.script)
                .chain(std::iter::once(&script)),
        ),
        script: Arc::new(script),
        behaviors,
    })
}
