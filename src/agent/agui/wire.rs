//! AG-UI 1.0 wire types: the request body (`RunAgentInput`), messages, interrupts, resume
//! entries and every event of the protocol, as they travel over HTTP + SSE.
//!
//! Source of truth: `@ag-ui/core@1.0.0` `src/generated/schemas.ts` (zod, generated from the
//! published 1.0 JSON Schema), digested in `shared/reference/ag-ui-1.0.md`.
//!
//! Conventions, all taken from that schema:
//! - field names are camelCase, event `type`s are SCREAMING_SNAKE;
//! - an optional field is **left out, never `null`**: every `Option` here is skipped when
//!   `None`, and on input a `null` in an optional slot is rejected the way zod rejects it
//!   (the one exception is `RunAgentInput.state`, where the schema maps `null` to absent);
//! - every object is a zod `looseObject`: members this module does not know are kept in an
//!   `extra` map instead of failing the parse. A producer strips them with a warning
//!   ([`RunAgentInput::unknown_members`], [`RunAgentInput::strip_unknown`]); on output
//!   `extra` is empty unless a scenario deliberately adds unknown fields.
//!
//! Pure data plus framing: it depends on `serde`, `serde_json` and `thiserror` only. The engine
//! ([`super`]) builds events from these types; [`super::resume`] judges [`ResumeEntry`]s.

use std::sync::Arc;

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// The protocol version a producer declares on `RUN_STARTED.protocolVersion` (its own
/// version, never an echo of the input's).
pub const PROTOCOL_VERSION: &str = "1.0";

/// [`PROTOCOL_VERSION`] as a JSON string.
const PROTOCOL_VERSION_JSON: &str = "\"1.0\"";

/// The media type of the SSE binding.
pub const EVENT_STREAM_CONTENT_TYPE: &str = "text/event-stream";

/// `metadata` on events, messages, tools, interrupts and resume entries: an object open by
/// key (a `null` *under* a key is data), never `null` as a whole.
pub type Metadata = Map<String, Value>;

// ---------------------------------------------------------------------------------------
// serde helpers
// ---------------------------------------------------------------------------------------

/// `Option<T>` whose wire form may be absent but never `null` (zod `.optional()` and
/// `z.any().refine(v => v !== null).optional()`).
fn non_null<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    let value = Value::deserialize(deserializer)?;
    if value.is_null() {
        return Err(D::Error::custom(
            "an optional member must be left out, not null",
        ));
    }
    serde_json::from_value(value)
        .map(Some)
        .map_err(D::Error::custom)
}

/// `RunAgentInput.state`: `null` reads as absent (the schema's `.nullable().transform()`).
fn null_as_absent<'de, D>(deserializer: D) -> Result<Option<Value>, D::Error>
where
    D: Deserializer<'de>,
{
    let value = Value::deserialize(deserializer)?;
    Ok(if value.is_null() { None } else { Some(value) })
}

/// A JSON object (`z.custom(v => typeof v === "object" && v !== null && !Array.isArray(v))`).
fn object_non_null<'de, D>(deserializer: D) -> Result<Option<Map<String, Value>>, D::Error>
where
    D: Deserializer<'de>,
{
    match Value::deserialize(deserializer)? {
        Value::Object(map) => Ok(Some(map)),
        Value::Null => Err(D::Error::custom(
            "an optional member must be left out, not null",
        )),
        _ => Err(D::Error::custom("expected a JSON object")),
    }
}

/// [`object_non_null`], shared.
fn shared_object_non_null<'de, D>(
    deserializer: D,
) -> Result<Option<Arc<Map<String, Value>>>, D::Error>
where
    D: Deserializer<'de>,
{
    object_non_null(deserializer).map(|m| m.map(Arc::new))
}

/// A shared JSON object, written as the object (skipped when absent).
fn shared_object<S>(
    value: &Option<Arc<Map<String, Value>>>,
    serializer: S,
) -> Result<S::Ok, S::Error>
where
    S: serde::Serializer,
{
    match value {
        Some(m) => m.serialize(serializer),
        None => serializer.serialize_none(),
    }
}

/// Required JSON object.
fn object_required<'de, D>(deserializer: D) -> Result<Map<String, Value>, D::Error>
where
    D: Deserializer<'de>,
{
    match Value::deserialize(deserializer)? {
        Value::Object(map) => Ok(map),
        _ => Err(D::Error::custom("expected a JSON object")),
    }
}

// ---------------------------------------------------------------------------------------
// RunAgentInput and its parts
// ---------------------------------------------------------------------------------------

/// The request body of `POST /agents/NAME`. Only `threadId`, `runId` and `messages` are
/// required; absent `tools`/`context` mean empty, absent `state` means `{}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunAgentInput {
    pub thread_id: String,
    pub run_id: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "non_null"
    )]
    pub protocol_version: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "non_null"
    )]
    pub parent_run_id: Option<String>,
    /// Any JSON value except a whole `null` (which reads as absent).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "null_as_absent"
    )]
    pub state: Option<Value>,
    pub messages: Vec<Message>,
    #[serde(default)]
    pub tools: Vec<Tool>,
    #[serde(default)]
    pub context: Vec<Context>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "non_null"
    )]
    pub forwarded_props: Option<Value>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "non_null"
    )]
    pub resume: Option<Vec<ResumeEntry>>,
    /// Members the schema does not describe (TanStack sends `data`, for one).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Why a request body was refused before any stream (HTTP 4xx, no `RUN_STARTED`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct InputError {
    pub message: String,
}

/// What the producer should do about the input's `protocolVersion`
/// (`docs/spec/1.0/basic/versioning.mdx`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionVerdict {
    /// Absent (TanStack never sends it) or a 1.0 declaration.
    Accept,
    /// A newer 1.x, or a value outside the `MAJOR.MINOR` grammar: serve it and warn.
    AcceptWithWarning(String),
    /// Another major version: the producer MAY reject, and only before `RUN_STARTED`.
    UnknownMajor(String),
}

impl RunAgentInput {
    /// A minimal input (what `HttpAgent` sends on a first run, minus its defaults).
    pub fn new(thread_id: impl Into<String>, run_id: impl Into<String>) -> Self {
        RunAgentInput {
            thread_id: thread_id.into(),
            run_id: run_id.into(),
            protocol_version: None,
            parent_run_id: None,
            state: None,
            messages: Vec::new(),
            tools: Vec::new(),
            context: Vec::new(),
            forwarded_props: None,
            resume: None,
            extra: Map::new(),
        }
    }

    /// Parses a request body. Malformed JSON or a malformed *known* member is an error
    /// (answer it with an HTTP 4xx and no stream); unknown members are kept in the `extra`
    /// maps, see [`Self::unknown_members`].
    pub fn parse(body: &[u8]) -> Result<Self, InputError> {
        serde_json::from_slice(body).map_err(|e| InputError {
            message: format!("invalid RunAgentInput: {e}"),
        })
    }

    /// [`Self::parse`] for a body already parsed into `json` by [`parse_json`], which found
    /// no object repeating a member name: the same input as from the bytes (member order
    /// does not matter to these types), without reading them again. `None` if it does not
    /// deserialize: [`Self::parse`] then says why, in its own words (with line and column).
    pub fn from_parsed(json: &Value) -> Option<Self> {
        Self::deserialize(json).ok()
    }

    /// The state the run starts from: the input's, or `{}` when absent.
    pub fn state_or_default(&self) -> Value {
        self.state
            .clone()
            .unwrap_or_else(|| Value::Object(Map::new()))
    }

    /// The resume entries, empty when the member is absent.
    pub fn resume_entries(&self) -> &[ResumeEntry] {
        self.resume.as_deref().unwrap_or(&[])
    }

    /// A continuation is a new run that answers an interrupted one. `@ag-ui/client@1.0.0`
    /// never sends `parentRunId` (its `RunAgentParameters` has no such field), TanStack
    /// always does; so a non-empty `resume` alone also marks a continuation.
    pub fn is_continuation(&self) -> bool {
        self.parent_run_id.is_some() || !self.resume_entries().is_empty()
    }

    /// Judges the declared `protocolVersion`.
    pub fn version_verdict(&self) -> VersionVerdict {
        let Some(declared) = self.protocol_version.as_deref() else {
            return VersionVerdict::Accept;
        };
        if declared == PROTOCOL_VERSION {
            return VersionVerdict::Accept;
        }
        let parsed = declared
            .split_once('.')
            .filter(|(a, b)| {
                !a.is_empty()
                    && !b.is_empty()
                    && a.bytes().all(|c| c.is_ascii_digit())
                    && b.bytes().all(|c| c.is_ascii_digit())
            })
            .and_then(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?)));
        match parsed {
            Some((1, _)) => VersionVerdict::AcceptWithWarning(format!(
                "input declares protocol {declared}; this producer speaks {PROTOCOL_VERSION}"
            )),
            Some((major, _)) => VersionVerdict::UnknownMajor(format!(
                "input declares protocol {declared} (major {major}); this producer speaks {PROTOCOL_VERSION}"
            )),
            None => VersionVerdict::AcceptWithWarning(format!(
                "input declares protocol version '{declared}', which is not MAJOR.MINOR"
            )),
        }
    }

    /// Paths of every member the schema does not describe, e.g. `data`,
    /// `messages[3].name`, `resume[0].note`. The spec says: strip with a warning.
    pub fn unknown_members(&self) -> Vec<String> {
        let mut out = Vec::new();
        push_keys(&mut out, "", &self.extra);
        for (i, m) in self.messages.iter().enumerate() {
            // Paths are only written for members that are there (the common case: none).
            if !m.extra().is_empty() {
                push_keys(&mut out, &format!("messages[{i}]."), m.extra());
            }
            if let Message::Assistant(a) = m {
                for (j, tc) in a.tool_calls.iter().flatten().enumerate() {
                    if !tc.extra.is_empty() {
                        push_keys(
                            &mut out,
                            &format!("messages[{i}].toolCalls[{j}]."),
                            &tc.extra,
                        );
                    }
                    if !tc.function.extra.is_empty() {
                        push_keys(
                            &mut out,
                            &format!("messages[{i}].toolCalls[{j}].function."),
                            &tc.function.extra,
                        );
                    }
                }
            }
        }
        for (i, t) in self.tools.iter().enumerate() {
            if !t.extra.is_empty() {
                push_keys(&mut out, &format!("tools[{i}]."), &t.extra);
            }
        }
        for (i, c) in self.context.iter().enumerate() {
            if !c.extra.is_empty() {
                push_keys(&mut out, &format!("context[{i}]."), &c.extra);
            }
        }
        for (i, r) in self.resume_entries().iter().enumerate() {
            if !r.extra.is_empty() {
                push_keys(&mut out, &format!("resume[{i}]."), &r.extra);
            }
        }
        out
    }

    /// Removes every unknown member (after [`Self::unknown_members`] has been reported).
    pub fn strip_unknown(&mut self) {
        self.extra.clear();
        for m in &mut self.messages {
            m.extra_mut().clear();
            if let Message::Assistant(a) = m {
                for tc in a.tool_calls.iter_mut().flatten() {
                    tc.extra.clear();
                    tc.function.extra.clear();
                }
            }
        }
        for t in &mut self.tools {
            t.extra.clear();
        }
        for c in &mut self.context {
            c.extra.clear();
        }
        for r in self.resume.iter_mut().flatten() {
            r.extra.clear();
        }
    }
}

/// `serde_json::from_slice::<Value>(body)`, also telling whether an object in it repeats a
/// member name: a `Value` keeps the last, where a typed parse of a known member rejects the
/// body, so only a document without repeats may be read into a type through its `Value`
/// ([`RunAgentInput::from_parsed`]).
pub fn parse_json(body: &[u8]) -> serde_json::Result<(Value, bool)> {
    let repeats = std::cell::Cell::new(false);
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = serde::de::DeserializeSeed::deserialize(ValueNotingRepeats(&repeats), &mut de)?;
    de.end()?;
    Ok((value, repeats.get()))
}

/// serde_json's own `Value` visitor, plus the repeat check.
struct ValueNotingRepeats<'a>(&'a std::cell::Cell<bool>);

impl<'de> serde::de::DeserializeSeed<'de> for ValueNotingRepeats<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for ValueNotingRepeats<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any valid JSON value")
    }
    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }
    fn visit_f64<E>(self, n: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_owned()))
    }
    fn visit_string<E>(self, s: String) -> Result<Value, E> {
        Ok(Value::String(s))
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        serde::de::DeserializeSeed::deserialize(self, d)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(ValueNotingRepeats(self.0))? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(k) = map.next_key::<String>()? {
            let v = map.next_value_seed(ValueNotingRepeats(self.0))?;
            if out.insert(k, v).is_some() {
                self.0.set(true);
            }
        }
        Ok(Value::Object(out))
    }
}

fn push_keys(out: &mut Vec<String>, prefix: &str, extra: &Map<String, Value>) {
    for k in extra.keys() {
        out.push(format!("{prefix}{k}"));
    }
}

/// `{name, description, parameters?, metadata?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    pub name: String,
    pub description: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "non_null"
    )]
    pub parameters: Option<Value>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "object_non_null"
    )]
    pub metadata: Option<Metadata>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `{description, value}`: ambient information for the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Context {
    pub description: String,
    pub value: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
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
    pub fn resolved(interrupt_id: impl Into<String>, payload: Option<Value>) -> Self {
        ResumeEntry {
            interrupt_id: interrupt_id.into(),
            status: ResumeStatus::Resolved,
            payload,
            metadata: None,
            extra: Map::new(),
        }
    }

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

/// Token counts for one provider and model. A resumed run reports only its own calls (RES-7).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "non_null"
    )]
    pub provider: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "non_null"
    )]
    pub model: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "non_null"
    )]
    pub input_tokens: Option<u64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "non_null"
    )]
    pub output_tokens: Option<u64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "non_null"
    )]
    pub total_tokens: Option<u64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "non_null"
    )]
    pub reasoning_tokens: Option<u64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "non_null"
    )]
    pub cached_input_tokens: Option<u64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "non_null"
    )]
    pub cache_write_input_tokens: Option<u64>,
}

impl TokenUsage {
    /// `serde_json::to_value(self)`, built directly (every run's ledger entry carries one).
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        let mut put = |k: &str, v: Option<Value>| {
            if let Some(v) = v {
                m.insert(k.to_string(), v);
            }
        };
        put("provider", self.provider.as_deref().map(Value::from));
        put("model", self.model.as_deref().map(Value::from));
        put("inputTokens", self.input_tokens.map(Value::from));
        put("outputTokens", self.output_tokens.map(Value::from));
        put("totalTokens", self.total_tokens.map(Value::from));
        put("reasoningTokens", self.reasoning_tokens.map(Value::from));
        put(
            "cachedInputTokens",
            self.cached_input_tokens.map(Value::from),
        );
        put(
            "cacheWriteInputTokens",
            self.cache_write_input_tokens.map(Value::from),
        );
        Value::Object(m)
    }
}

// ---------------------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------------------

/// Any message of a conversation, discriminated by `role`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Message {
    Developer(TextMessage),
    System(TextMessage),
    Assistant(AssistantMessage),
    User(UserMessage),
    Tool(ToolMessage),
    Activity(ActivityMessage),
    Reasoning(ReasoningMessage),
}

impl Message {
    pub fn id(&self) -> &str {
        match self {
            Message::Developer(m) | Message::System(m) => &m.id,
            Message::Assistant(m) => &m.id,
            Message::User(m) => &m.id,
            Message::Tool(m) => &m.id,
            Message::Activity(m) => &m.id,
            Message::Reasoning(m) => &m.id,
        }
    }

    pub fn extra(&self) -> &Map<String, Value> {
        match self {
            Message::Developer(m) | Message::System(m) => &m.extra,
            Message::Assistant(m) => &m.extra,
            Message::User(m) => &m.extra,
            Message::Tool(m) => &m.extra,
            Message::Activity(m) => &m.extra,
            Message::Reasoning(m) => &m.extra,
        }
    }

    pub fn extra_mut(&mut self) -> &mut Map<String, Value> {
        match self {
            Message::Developer(m) | Message::System(m) => &mut m.extra,
            Message::Assistant(m) => &mut m.extra,
            Message::User(m) => &mut m.extra,
            Message::Tool(m) => &mut m.extra,
            Message::Activity(m) => &mut m.extra,
            Message::Reasoning(m) => &mut m.extra,
        }
    }

    pub fn user(id: impl Into<String>, content: impl Into<String>) -> Self {
        Message::User(UserMessage {
            id: id.into(),
            content: Content::Text(content.into()),
            name: None,
            encrypted_value: None,
            subagent_run_id: None,
            metadata: None,
            extra: Map::new(),
        })
    }
}

/// Developer and system messages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TextMessage {
    pub id: String,
    pub content: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "non_null"
    )]
    pub name: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "non_null"
    )]
    pub encrypted_value: Option<String>,
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

/// A message from the agent; `content` is optional because a turn may be tool calls only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AssistantMessage {
    pub id: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "non_null"
    )]
    pub content: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "non_null"
    )]
    pub tool_calls: Option<Vec<ToolCall>>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "non_null"
    )]
    pub name: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "non_null"
    )]
    pub encrypted_value: Option<String>,
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

/// A message from the person using the application.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserMessage {
    pub id: String,
    pub content: Content,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "non_null"
    )]
    pub name: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "non_null"
    )]
    pub encrypted_value: Option<String>,
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

/// What a tool returned, as a conversation message. Carries no `name` (TanStack sends one
/// anyway: it lands in `extra`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolMessage {
    pub id: String,
    pub content: Content,
    pub tool_call_id: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "non_null"
    )]
    pub error: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "non_null"
    )]
    pub encrypted_value: Option<String>,
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

/// Structured progress materialised as a message (the client never sends these back).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ActivityMessage {
    pub id: String,
    pub activity_type: String,
    #[serde(deserialize_with = "object_required")]
    pub content: Map<String, Value>,
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

/// A span of reasoning materialised as a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReasoningMessage {
    pub id: String,
    pub content: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "non_null"
    )]
    pub encrypted_value: Option<String>,
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

/// A user or tool message body: a string or a list of parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Parts(Vec<ContentPart>),
}

impl Content {
    /// The text of the body (parts' texts concatenated).
    pub fn text(&self) -> String {
        match self {
            Content::Text(s) => s.clone(),
            Content::Parts(parts) => parts
                .iter()
                .filter_map(|p| match p {
                    ContentPart::Text { text, .. } => Some(text.as_str()),
                    _ => None,
                })
                .collect(),
        }
    }
}

/// One part of a message body, discriminated by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum ContentPart {
    Text {
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "non_null"
        )]
        id: Option<String>,
        text: String,
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "non_null"
        )]
        metadata: Option<Value>,
    },
    Image(MediaPart),
    Audio(MediaPart),
    Video(MediaPart),
    Document(MediaPart),
}

/// The body of an image/audio/video/document part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MediaPart {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "non_null"
    )]
    pub id: Option<String>,
    pub source: PartSource,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "non_null"
    )]
    pub metadata: Option<Value>,
}

/// Where a media part's bytes come from.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum PartSource {
    Data {
        value: String,
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    Url {
        value: String,
        #[serde(
            rename = "mimeType",
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "non_null"
        )]
        mime_type: Option<String>,
    },
    File {
        value: String,
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "non_null"
        )]
        provider: Option<String>,
        #[serde(
            rename = "mimeType",
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "non_null"
        )]
        mime_type: Option<String>,
    },
}

/// A call an assistant message made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCall {
    pub id: String,
    /// Always `"function"`.
    #[serde(rename = "type")]
    pub kind: FunctionKind,
    pub function: FunctionCall,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "non_null"
    )]
    pub encrypted_value: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "object_non_null"
    )]
    pub metadata: Option<Metadata>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ToolCall {
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: &Value) -> Self {
        ToolCall {
            id: id.into(),
            kind: FunctionKind::Function,
            function: FunctionCall {
                name: name.into(),
                arguments: arguments.to_string(),
                extra: Map::new(),
            },
            encrypted_value: None,
            metadata: None,
            extra: Map::new(),
        }
    }
}

/// The literal `"function"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FunctionKind {
    #[default]
    Function,
}

/// Name and JSON-encoded arguments of a tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    pub name: String,
    pub arguments: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

// ---------------------------------------------------------------------------------------
// Events
// ---------------------------------------------------------------------------------------

/// Fields every event carries, plus unknown members (empty unless a scenario deliberately
/// emits unknown fields).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventBase {
    /// Milliseconds since the epoch, in practice.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "non_null"
    )]
    pub timestamp: Option<i64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "non_null"
    )]
    pub raw_event: Option<Value>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "object_non_null"
    )]
    pub metadata: Option<Metadata>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Declares an event struct: camelCase fields, then `#[serde(flatten)] base`.
macro_rules! event_struct {
    ($(#[$m:meta])* $name:ident { $($body:tt)* }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
        #[serde(rename_all = "camelCase")]
        pub struct $name {
            $($body)*
            #[serde(flatten)]
            pub base: EventBase,
        }
    };
}

/// Roles a streamed text message may take (no `tool`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TextMessageRole {
    Developer,
    System,
    Assistant,
    User,
}

/// The literal `"tool"` (`TOOL_CALL_RESULT.role`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolRole {
    #[default]
    Tool,
}

/// The literal `"reasoning"` (`REASONING_MESSAGE_START.role`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReasoningRole {
    #[default]
    Reasoning,
}

/// `REASONING_ENCRYPTED_VALUE.subtype`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EncryptedValueSubtype {
    ToolCall,
    #[default]
    Message,
}

/// One RFC 6902 operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
pub enum JsonPatchOp {
    Add { path: String, value: Value },
    Remove { path: String },
    Replace { path: String, value: Value },
    Move { from: String, path: String },
    Copy { from: String, path: String },
    Test { path: String, value: Value },
}

/// Why a run ended (`RUN_FINISHED.outcome`). Absent means success.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum RunOutcome {
    /// Completed; may name frontend tool calls left for the application (INT-2).
    Success {
        #[serde(
            rename = "pendingToolCallIds",
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "non_null"
        )]
        pending_tool_call_ids: Option<Vec<String>>,
    },
    /// Paused for outside input; the schema demands at least one interrupt (INT-1).
    Interrupt { interrupts: Vec<Interrupt> },
    /// Stopped on request, not failed; asks for nothing (INT-2).
    Cancelled,
}

/// Why a subagent's segment of a run ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum SubagentOutcome {
    Success,
    Suspended {
        #[serde(
            rename = "interruptIds",
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "non_null"
        )]
        interrupt_ids: Option<Vec<String>>,
    },
}

event_struct!(
    /// Opens a streamed text message.
    TextMessageStart {
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub subagent_run_id: Option<String>,
        pub message_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub role: Option<TextMessageRole>,
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub name: Option<String>,
    }
);
event_struct!(
    /// Appends a fragment to a streamed text message.
    TextMessageContent {
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub subagent_run_id: Option<String>,
        pub message_id: String,
        pub delta: String,
    }
);
event_struct!(
    /// Closes a streamed text message.
    TextMessageEnd {
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub subagent_run_id: Option<String>,
        pub message_id: String,
    }
);
event_struct!(
    /// Shorthand for start + content + end.
    TextMessageChunk {
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub subagent_run_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub message_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub role: Option<TextMessageRole>,
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub delta: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub name: Option<String>,
    }
);
event_struct!(
    /// Opens a tool call.
    ToolCallStart {
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub subagent_run_id: Option<String>,
        pub tool_call_id: String,
        pub tool_call_name: String,
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub parent_message_id: Option<String>,
    }
);
event_struct!(
    /// Appends a fragment of a tool call's JSON arguments.
    ToolCallArgs {
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub subagent_run_id: Option<String>,
        pub tool_call_id: String,
        pub delta: String,
    }
);
event_struct!(
    /// Closes a tool call (its arguments are complete).
    ToolCallEnd {
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub subagent_run_id: Option<String>,
        pub tool_call_id: String,
    }
);
event_struct!(
    /// Shorthand for a tool call's start + args + end.
    ToolCallChunk {
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub subagent_run_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub tool_call_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub tool_call_name: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub parent_message_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub delta: Option<String>,
    }
);
/// What a tool returned; mints a tool message with its own `messageId`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolCallResult {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "non_null"
    )]
    pub subagent_run_id: Option<String>,
    pub message_id: String,
    pub tool_call_id: String,
    pub content: Content,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "non_null"
    )]
    pub role: Option<ToolRole>,
    #[serde(flatten)]
    pub base: EventBase,
}
event_struct!(
    /// Replaces the agent state wholesale (any JSON value, `null` included).
    StateSnapshot {
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub subagent_run_id: Option<String>,
        pub snapshot: Value,
    }
);
event_struct!(
    /// Changes the agent state by an RFC 6902 patch.
    StateDelta {
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub subagent_run_id: Option<String>,
        pub delta: Vec<JsonPatchOp>,
    }
);
event_struct!(
    /// The complete set of messages the producer owns (conversation-wide: no attribution).
    MessagesSnapshot {
        pub messages: Vec<Message>,
    }
);
event_struct!(
    /// Structured progress that is not conversation content.
    ActivitySnapshot {
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub subagent_run_id: Option<String>,
        pub message_id: String,
        pub activity_type: String,
        pub content: Map<String, Value>,
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub replace: Option<bool>,
    }
);
event_struct!(
    /// Patches an activity message's content.
    ActivityDelta {
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub subagent_run_id: Option<String>,
        pub message_id: String,
        pub activity_type: String,
        pub patch: Vec<JsonPatchOp>,
    }
);
event_struct!(
    /// A provider-native event passed through.
    Raw {
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub subagent_run_id: Option<String>,
        pub event: Value,
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub source: Option<String>,
    }
);
event_struct!(
    /// The application's own events. doubleagent uses it for warnings (PROD-2).
    Custom {
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub subagent_run_id: Option<String>,
        pub name: String,
        pub value: Value,
    }
);
event_struct!(
    /// Opens a run. `protocolVersion` is the producer's own declaration.
    RunStarted {
        pub thread_id: String,
        pub run_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub protocol_version: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub parent_run_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub input: Option<Box<RunAgentInput>>,
    }
);
event_struct!(
    /// Closes a run that did not fail.
    RunFinished {
        pub thread_id: String,
        pub run_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub result: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub outcome: Option<RunOutcome>,
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub usage: Option<Vec<TokenUsage>>,
    }
);
event_struct!(
    /// Ends a run that failed (or, late, reports a failure after it closed: INT-6).
    RunError {
        pub message: String,
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub code: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub usage: Option<Vec<TokenUsage>>,
    }
);
event_struct!(
    /// Opens a named step.
    StepStarted {
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub subagent_run_id: Option<String>,
        pub step_name: String,
    }
);
event_struct!(
    /// Closes a named step.
    StepFinished {
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub subagent_run_id: Option<String>,
        pub step_name: String,
    }
);
event_struct!(
    /// Opens a span of reasoning.
    ReasoningStart {
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub subagent_run_id: Option<String>,
        pub message_id: String,
    }
);
event_struct!(
    /// Opens a streamed reasoning message.
    ReasoningMessageStart {
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub subagent_run_id: Option<String>,
        pub message_id: String,
        pub role: ReasoningRole,
    }
);
event_struct!(
    /// Appends to a streamed reasoning message.
    ReasoningMessageContent {
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub subagent_run_id: Option<String>,
        pub message_id: String,
        pub delta: String,
    }
);
event_struct!(
    /// Closes a streamed reasoning message.
    ReasoningMessageEnd {
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub subagent_run_id: Option<String>,
        pub message_id: String,
    }
);
event_struct!(
    /// Shorthand for a reasoning message.
    ReasoningMessageChunk {
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub subagent_run_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub message_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub delta: Option<String>,
    }
);
event_struct!(
    /// Closes a span of reasoning.
    ReasoningEnd {
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub subagent_run_id: Option<String>,
        pub message_id: String,
    }
);
event_struct!(
    /// An opaque encrypted reasoning artefact.
    ReasoningEncryptedValue {
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub subagent_run_id: Option<String>,
        pub subtype: EncryptedValueSubtype,
        pub entity_id: String,
        pub encrypted_value: String,
    }
);
event_struct!(
    /// A subagent invocation has begun (here `subagentRunId` identifies it).
    SubagentStarted {
        pub subagent_run_id: String,
        pub name: String,
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub description: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub parent_subagent_run_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub parent_tool_call_id: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub parent_message_id: Option<String>,
    }
);
event_struct!(
    /// Ends a subagent's segment: completed or suspended awaiting input.
    SubagentFinished {
        pub subagent_run_id: String,
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub result: Option<Value>,
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub outcome: Option<SubagentOutcome>,
    }
);
event_struct!(
    /// A subagent invocation failed; the run may continue.
    SubagentError {
        pub subagent_run_id: String,
        pub message: String,
        #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "non_null")]
        pub code: Option<String>,
    }
);

/// Any AG-UI 1.0 event (all 31 types), discriminated by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Event {
    TextMessageStart(TextMessageStart),
    TextMessageContent(TextMessageContent),
    TextMessageEnd(TextMessageEnd),
    TextMessageChunk(TextMessageChunk),
    ToolCallStart(ToolCallStart),
    ToolCallArgs(ToolCallArgs),
    ToolCallEnd(ToolCallEnd),
    ToolCallChunk(ToolCallChunk),
    ToolCallResult(ToolCallResult),
    StateSnapshot(StateSnapshot),
    StateDelta(StateDelta),
    MessagesSnapshot(MessagesSnapshot),
    ActivitySnapshot(ActivitySnapshot),
    ActivityDelta(ActivityDelta),
    Raw(Raw),
    Custom(Custom),
    RunStarted(RunStarted),
    RunFinished(RunFinished),
    RunError(RunError),
    StepStarted(StepStarted),
    StepFinished(StepFinished),
    ReasoningStart(ReasoningStart),
    ReasoningMessageStart(ReasoningMessageStart),
    ReasoningMessageContent(ReasoningMessageContent),
    ReasoningMessageEnd(ReasoningMessageEnd),
    ReasoningMessageChunk(ReasoningMessageChunk),
    ReasoningEnd(ReasoningEnd),
    ReasoningEncryptedValue(ReasoningEncryptedValue),
    SubagentStarted(SubagentStarted),
    SubagentFinished(SubagentFinished),
    SubagentError(SubagentError),
}

impl Event {
    /// The wire `type`, e.g. `"RUN_FINISHED"` (for the ledger's list of emitted types).
    pub fn type_name(&self) -> &'static str {
        match self {
            Event::TextMessageStart(_) => "TEXT_MESSAGE_START",
            Event::TextMessageContent(_) => "TEXT_MESSAGE_CONTENT",
            Event::TextMessageEnd(_) => "TEXT_MESSAGE_END",
            Event::TextMessageChunk(_) => "TEXT_MESSAGE_CHUNK",
            Event::ToolCallStart(_) => "TOOL_CALL_START",
            Event::ToolCallArgs(_) => "TOOL_CALL_ARGS",
            Event::ToolCallEnd(_) => "TOOL_CALL_END",
            Event::ToolCallChunk(_) => "TOOL_CALL_CHUNK",
            Event::ToolCallResult(_) => "TOOL_CALL_RESULT",
            Event::StateSnapshot(_) => "STATE_SNAPSHOT",
            Event::StateDelta(_) => "STATE_DELTA",
            Event::MessagesSnapshot(_) => "MESSAGES_SNAPSHOT",
            Event::ActivitySnapshot(_) => "ACTIVITY_SNAPSHOT",
            Event::ActivityDelta(_) => "ACTIVITY_DELTA",
            Event::Raw(_) => "RAW",
            Event::Custom(_) => "CUSTOM",
            Event::RunStarted(_) => "RUN_STARTED",
            Event::RunFinished(_) => "RUN_FINISHED",
            Event::RunError(_) => "RUN_ERROR",
            Event::StepStarted(_) => "STEP_STARTED",
            Event::StepFinished(_) => "STEP_FINISHED",
            Event::ReasoningStart(_) => "REASONING_START",
            Event::ReasoningMessageStart(_) => "REASONING_MESSAGE_START",
            Event::ReasoningMessageContent(_) => "REASONING_MESSAGE_CONTENT",
            Event::ReasoningMessageEnd(_) => "REASONING_MESSAGE_END",
            Event::ReasoningMessageChunk(_) => "REASONING_MESSAGE_CHUNK",
            Event::ReasoningEnd(_) => "REASONING_END",
            Event::ReasoningEncryptedValue(_) => "REASONING_ENCRYPTED_VALUE",
            Event::SubagentStarted(_) => "SUBAGENT_STARTED",
            Event::SubagentFinished(_) => "SUBAGENT_FINISHED",
            Event::SubagentError(_) => "SUBAGENT_ERROR",
        }
    }

    /// The common fields (timestamp, rawEvent, metadata, unknown members).
    pub fn base(&self) -> &EventBase {
        match self {
            Event::TextMessageStart(e) => &e.base,
            Event::TextMessageContent(e) => &e.base,
            Event::TextMessageEnd(e) => &e.base,
            Event::TextMessageChunk(e) => &e.base,
            Event::ToolCallStart(e) => &e.base,
            Event::ToolCallArgs(e) => &e.base,
            Event::ToolCallEnd(e) => &e.base,
            Event::ToolCallChunk(e) => &e.base,
            Event::ToolCallResult(e) => &e.base,
            Event::StateSnapshot(e) => &e.base,
            Event::StateDelta(e) => &e.base,
            Event::MessagesSnapshot(e) => &e.base,
            Event::ActivitySnapshot(e) => &e.base,
            Event::ActivityDelta(e) => &e.base,
            Event::Raw(e) => &e.base,
            Event::Custom(e) => &e.base,
            Event::RunStarted(e) => &e.base,
            Event::RunFinished(e) => &e.base,
            Event::RunError(e) => &e.base,
            Event::StepStarted(e) => &e.base,
            Event::StepFinished(e) => &e.base,
            Event::ReasoningStart(e) => &e.base,
            Event::ReasoningMessageStart(e) => &e.base,
            Event::ReasoningMessageContent(e) => &e.base,
            Event::ReasoningMessageEnd(e) => &e.base,
            Event::ReasoningMessageChunk(e) => &e.base,
            Event::ReasoningEnd(e) => &e.base,
            Event::ReasoningEncryptedValue(e) => &e.base,
            Event::SubagentStarted(e) => &e.base,
            Event::SubagentFinished(e) => &e.base,
            Event::SubagentError(e) => &e.base,
        }
    }

    /// The common fields, to change.
    pub fn base_mut(&mut self) -> &mut EventBase {
        match self {
            Event::TextMessageStart(e) => &mut e.base,
            Event::TextMessageContent(e) => &mut e.base,
            Event::TextMessageEnd(e) => &mut e.base,
            Event::TextMessageChunk(e) => &mut e.base,
            Event::ToolCallStart(e) => &mut e.base,
            Event::ToolCallArgs(e) => &mut e.base,
            Event::ToolCallEnd(e) => &mut e.base,
            Event::ToolCallChunk(e) => &mut e.base,
            Event::ToolCallResult(e) => &mut e.base,
            Event::StateSnapshot(e) => &mut e.base,
            Event::StateDelta(e) => &mut e.base,
            Event::MessagesSnapshot(e) => &mut e.base,
            Event::ActivitySnapshot(e) => &mut e.base,
            Event::ActivityDelta(e) => &mut e.base,
            Event::Raw(e) => &mut e.base,
            Event::Custom(e) => &mut e.base,
            Event::RunStarted(e) => &mut e.base,
            Event::RunFinished(e) => &mut e.base,
            Event::RunError(e) => &mut e.base,
            Event::StepStarted(e) => &mut e.base,
            Event::StepFinished(e) => &mut e.base,
            Event::ReasoningStart(e) => &mut e.base,
            Event::ReasoningMessageStart(e) => &mut e.base,
            Event::ReasoningMessageContent(e) => &mut e.base,
            Event::ReasoningMessageEnd(e) => &mut e.base,
            Event::ReasoningMessageChunk(e) => &mut e.base,
            Event::ReasoningEnd(e) => &mut e.base,
            Event::ReasoningEncryptedValue(e) => &mut e.base,
            Event::SubagentStarted(e) => &mut e.base,
            Event::SubagentFinished(e) => &mut e.base,
            Event::SubagentError(e) => &mut e.base,
        }
    }

    /// Sets `timestamp` (ms since the epoch, from the scenario clock).
    pub fn at(mut self, timestamp_ms: i64) -> Self {
        self.base_mut().timestamp = Some(timestamp_ms);
        self
    }

    /// Whether this event ends a run (`RUN_FINISHED` or `RUN_ERROR`).
    pub fn is_terminal(&self) -> bool {
        matches!(self, Event::RunFinished(_) | Event::RunError(_))
    }

    // --- constructors for the events doubleagent emits ---------------------------------

    /// `RUN_STARTED` declaring this producer's `protocolVersion: "1.0"`.
    pub fn run_started(input: &RunAgentInput) -> Self {
        Event::RunStarted(RunStarted {
            thread_id: input.thread_id.clone(),
            run_id: input.run_id.clone(),
            protocol_version: Some(PROTOCOL_VERSION.to_string()),
            parent_run_id: input.parent_run_id.clone(),
            input: None,
            base: EventBase::default(),
        })
    }

    /// `RUN_FINISHED` with an explicit outcome (`None` = absent = success).
    pub fn run_finished(
        thread_id: &str,
        run_id: &str,
        outcome: Option<RunOutcome>,
        usage: Option<Vec<TokenUsage>>,
    ) -> Self {
        Event::RunFinished(RunFinished {
            thread_id: thread_id.to_string(),
            run_id: run_id.to_string(),
            result: None,
            outcome,
            usage,
            base: EventBase::default(),
        })
    }

    /// `RUN_FINISHED{outcome:{type:"success"}}`, naming unanswered frontend tool calls when
    /// there are any (INT-2).
    pub fn run_success(thread_id: &str, run_id: &str, pending_tool_call_ids: Vec<String>) -> Self {
        let pending = if pending_tool_call_ids.is_empty() {
            None
        } else {
            Some(pending_tool_call_ids)
        };
        Self::run_finished(
            thread_id,
            run_id,
            Some(RunOutcome::Success {
                pending_tool_call_ids: pending,
            }),
            None,
        )
    }

    /// `RUN_FINISHED{outcome:{type:"interrupt",interrupts}}` (INT-1).
    pub fn run_interrupted(thread_id: &str, run_id: &str, interrupts: Vec<Interrupt>) -> Self {
        Self::run_finished(
            thread_id,
            run_id,
            Some(RunOutcome::Interrupt { interrupts }),
            None,
        )
    }

    /// `RUN_FINISHED{outcome:{type:"cancelled"}}` (INT-2).
    pub fn run_cancelled(thread_id: &str, run_id: &str) -> Self {
        Self::run_finished(thread_id, run_id, Some(RunOutcome::Cancelled), None)
    }

    pub fn run_error(message: impl Into<String>, code: Option<&str>) -> Self {
        Event::RunError(RunError {
            message: message.into(),
            code: code.map(str::to_string),
            usage: None,
            base: EventBase::default(),
        })
    }

    pub fn text_start(message_id: &str) -> Self {
        Event::TextMessageStart(TextMessageStart {
            message_id: message_id.to_string(),
            role: Some(TextMessageRole::Assistant),
            ..Default::default()
        })
    }

    pub fn text_content(message_id: &str, delta: impl Into<String>) -> Self {
        Event::TextMessageContent(TextMessageContent {
            message_id: message_id.to_string(),
            delta: delta.into(),
            ..Default::default()
        })
    }

    pub fn text_end(message_id: &str) -> Self {
        Event::TextMessageEnd(TextMessageEnd {
            message_id: message_id.to_string(),
            ..Default::default()
        })
    }

    pub fn tool_call_start(
        tool_call_id: &str,
        name: &str,
        parent_message_id: Option<&str>,
    ) -> Self {
        Event::ToolCallStart(ToolCallStart {
            tool_call_id: tool_call_id.to_string(),
            tool_call_name: name.to_string(),
            parent_message_id: parent_message_id.map(str::to_string),
            ..Default::default()
        })
    }

    pub fn tool_call_args(tool_call_id: &str, delta: impl Into<String>) -> Self {
        Event::ToolCallArgs(ToolCallArgs {
            tool_call_id: tool_call_id.to_string(),
            delta: delta.into(),
            ..Default::default()
        })
    }

    pub fn tool_call_end(tool_call_id: &str) -> Self {
        Event::ToolCallEnd(ToolCallEnd {
            tool_call_id: tool_call_id.to_string(),
            ..Default::default()
        })
    }

    pub fn tool_call_result(
        message_id: &str,
        tool_call_id: &str,
        content: impl Into<String>,
    ) -> Self {
        Event::ToolCallResult(ToolCallResult {
            subagent_run_id: None,
            message_id: message_id.to_string(),
            tool_call_id: tool_call_id.to_string(),
            content: Content::Text(content.into()),
            role: Some(ToolRole::Tool),
            base: EventBase::default(),
        })
    }

    pub fn state_snapshot(snapshot: Value) -> Self {
        Event::StateSnapshot(StateSnapshot {
            snapshot,
            ..Default::default()
        })
    }

    pub fn messages_snapshot(messages: Vec<Message>) -> Self {
        Event::MessagesSnapshot(MessagesSnapshot {
            messages,
            ..Default::default()
        })
    }

    pub fn step_started(step_name: &str) -> Self {
        Event::StepStarted(StepStarted {
            step_name: step_name.to_string(),
            ..Default::default()
        })
    }

    pub fn step_finished(step_name: &str) -> Self {
        Event::StepFinished(StepFinished {
            step_name: step_name.to_string(),
            ..Default::default()
        })
    }

    pub fn custom(name: &str, value: Value) -> Self {
        Event::Custom(Custom {
            name: name.to_string(),
            value,
            ..Default::default()
        })
    }
}

/// The `CUSTOM` event name doubleagent uses for producer-side warnings (unrecognized resume
/// entries, stripped input members, a newer protocol minor...).
pub const WARNING_EVENT_NAME: &str = "doubleagent.warning";

/// A `CUSTOM` warning: `{"name":"doubleagent.warning","value":{"rule":..,"message":..,...}}`.
pub fn warning_event(rule: &str, message: &str, details: Value) -> Event {
    let mut value = Map::new();
    value.insert("rule".into(), Value::String(rule.into()));
    value.insert("message".into(), Value::String(message.into()));
    if !details.is_null() {
        value.insert("details".into(), details);
    }
    Event::custom(WARNING_EVENT_NAME, Value::Object(value))
}

// ---------------------------------------------------------------------------------------
// SSE framing
// ---------------------------------------------------------------------------------------

/// One SSE frame: `data: <json>\n\n`, LF only. The JSON has no raw newline (serde_json
/// escapes them), so a frame is exactly one `data:` line.
pub fn sse_frame(event: &Event) -> String {
    let mut out = Vec::new();
    write_sse_frame(&mut out, event);
    // Only JSON text and ASCII framing were written.
    String::from_utf8(out).unwrap_or_default()
}

/// [`sse_frame`] appended to `out`. The events a run emits on every turn are written field
/// by field (`write_common`); any other event goes through serde. Both give the same bytes
/// (the `common_events_are_written_as_serde_writes_them` test holds them to it).
pub fn write_sse_frame(out: &mut Vec<u8>, event: &Event) {
    out.extend_from_slice(b"data: ");
    if !write_common(out, event) {
        // Events hold only strings, integers and JSON values: serializing them into a Vec
        // cannot fail.
        let _ = serde_json::to_writer(&mut *out, event);
    }
    out.extend_from_slice(b"\n\n");
}

/// The JSON of the events every run emits (run start and end, text messages, tool calls),
/// written without serde's per-field machinery: member names are literals, and a string
/// with nothing to escape is copied as is. Member order and omissions are the derived
/// `Serialize`'s: the variant's fields in declaration order (absent options left out), then
/// the base's. False, with nothing written, for anything else (other types, or a base with
/// `rawEvent`, `metadata` or unknown members).
fn write_common(out: &mut Vec<u8>, event: &Event) -> bool {
    let base = event.base();
    if base.raw_event.is_some() || base.metadata.is_some() || !base.extra.is_empty() {
        return false;
    }
    let mut w = JsonObject::open(out, event.type_name());
    match event {
        Event::RunStarted(e) if e.input.is_none() => {
            w.str("threadId", &e.thread_id);
            w.str("runId", &e.run_id);
            w.opt_str("protocolVersion", e.protocol_version.as_deref());
            w.opt_str("parentRunId", e.parent_run_id.as_deref());
        }
        Event::RunFinished(e) => {
            w.str("threadId", &e.thread_id);
            w.str("runId", &e.run_id);
            w.opt_json("result", e.result.as_ref());
            if let Some(o) = &e.outcome {
                w.key("outcome");
                write_outcome(w.out, o);
            }
            if let Some(u) = &e.usage {
                w.key("usage");
                write_usage(w.out, u);
            }
        }
        Event::RunError(e) => {
            w.str("message", &e.message);
            w.opt_str("code", e.code.as_deref());
            if let Some(u) = &e.usage {
                w.key("usage");
                write_usage(w.out, u);
            }
        }
        Event::TextMessageStart(e) => {
            w.opt_str("subagentRunId", e.subagent_run_id.as_deref());
            w.str("messageId", &e.message_id);
            w.opt_json("role", e.role.as_ref());
            w.opt_str("name", e.name.as_deref());
        }
        Event::TextMessageContent(e) => {
            w.opt_str("subagentRunId", e.subagent_run_id.as_deref());
            w.str("messageId", &e.message_id);
            w.str("delta", &e.delta);
        }
        Event::TextMessageEnd(e) => {
            w.opt_str("subagentRunId", e.subagent_run_id.as_deref());
            w.str("messageId", &e.message_id);
        }
        Event::ToolCallStart(e) => {
            w.opt_str("subagentRunId", e.subagent_run_id.as_deref());
            w.str("toolCallId", &e.tool_call_id);
            w.str("toolCallName", &e.tool_call_name);
            w.opt_str("parentMessageId", e.parent_message_id.as_deref());
        }
        Event::ToolCallArgs(e) => {
            w.opt_str("subagentRunId", e.subagent_run_id.as_deref());
            w.str("toolCallId", &e.tool_call_id);
            w.str("delta", &e.delta);
        }
        Event::ToolCallEnd(e) => {
            w.opt_str("subagentRunId", e.subagent_run_id.as_deref());
            w.str("toolCallId", &e.tool_call_id);
        }
        Event::ToolCallResult(e) => {
            w.opt_str("subagentRunId", e.subagent_run_id.as_deref());
            w.str("messageId", &e.message_id);
            w.str("toolCallId", &e.tool_call_id);
            w.json("content", &e.content);
            w.opt_json("role", e.role.as_ref());
        }
        _ => {
            w.abandon();
            return false;
        }
    }
    if let Some(t) = base.timestamp {
        w.json("timestamp", &t);
    }
    w.close();
    true
}

/// The events a run emits on every turn, borrowing their strings: [`write_frame`] writes one
/// straight into the stream, where building the owned [`Event`] would copy every id once more
/// only to drop it after writing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Frame<'a> {
    /// [`Event::run_started`].
    RunStarted {
        thread_id: &'a str,
        run_id: &'a str,
        parent_run_id: Option<&'a str>,
    },
    /// [`Event::text_start`].
    TextStart { message_id: &'a str },
    /// [`Event::text_content`].
    TextContent { message_id: &'a str, delta: &'a str },
    /// [`Event::text_end`].
    TextEnd { message_id: &'a str },
    /// [`Event::tool_call_start`].
    ToolCallStart {
        tool_call_id: &'a str,
        name: &'a str,
        parent_message_id: Option<&'a str>,
    },
    /// [`Event::tool_call_args`].
    ToolCallArgs {
        tool_call_id: &'a str,
        delta: &'a str,
    },
    /// [`Event::tool_call_end`].
    ToolCallEnd { tool_call_id: &'a str },
    /// [`Event::run_interrupted`], with its `usage` set.
    RunInterrupted {
        thread_id: &'a str,
        run_id: &'a str,
        interrupts: &'a [Interrupt],
        usage: Option<&'a [TokenUsage]>,
    },
}

impl Frame<'_> {
    pub fn type_name(&self) -> &'static str {
        match self {
            Frame::RunStarted { .. } => "RUN_STARTED",
            Frame::TextStart { .. } => "TEXT_MESSAGE_START",
            Frame::TextContent { .. } => "TEXT_MESSAGE_CONTENT",
            Frame::TextEnd { .. } => "TEXT_MESSAGE_END",
            Frame::ToolCallStart { .. } => "TOOL_CALL_START",
            Frame::ToolCallArgs { .. } => "TOOL_CALL_ARGS",
            Frame::ToolCallEnd { .. } => "TOOL_CALL_END",
            Frame::RunInterrupted { .. } => "RUN_FINISHED",
        }
    }

    /// The same event, owned (as its constructor builds it).
    pub fn to_event(&self) -> Event {
        match *self {
            Frame::RunStarted {
                thread_id,
                run_id,
                parent_run_id,
            } => Event::RunStarted(RunStarted {
                thread_id: thread_id.to_string(),
                run_id: run_id.to_string(),
                protocol_version: Some(PROTOCOL_VERSION.to_string()),
                parent_run_id: parent_run_id.map(str::to_string),
                input: None,
                base: EventBase::default(),
            }),
            Frame::TextStart { message_id } => Event::text_start(message_id),
            Frame::TextContent { message_id, delta } => Event::text_content(message_id, delta),
            Frame::TextEnd { message_id } => Event::text_end(message_id),
            Frame::ToolCallStart {
                tool_call_id,
                name,
                parent_message_id,
            } => Event::tool_call_start(tool_call_id, name, parent_message_id),
            Frame::ToolCallArgs {
                tool_call_id,
                delta,
            } => Event::tool_call_args(tool_call_id, delta),
            Frame::ToolCallEnd { tool_call_id } => Event::tool_call_end(tool_call_id),
            Frame::RunInterrupted {
                thread_id,
                run_id,
                interrupts,
                usage,
            } => {
                let mut e = Event::run_interrupted(thread_id, run_id, interrupts.to_vec());
                if let Event::RunFinished(rf) = &mut e {
                    rf.usage = usage.map(<[TokenUsage]>::to_vec);
                }
                e
            }
        }
    }
}

/// The bytes [`write_sse_frame`] writes for `frame.to_event().at(timestamp_ms)` (the
/// `borrowed_frames_are_their_events` test holds them to it).
pub fn write_frame(out: &mut Vec<u8>, frame: &Frame<'_>, timestamp_ms: i64) {
    // Each event's fixed text (its type and the member names between its values) goes out as
    // one literal: members in `Serialize`'s order, as `JsonObject` would write them one by one.
    match *frame {
        Frame::RunStarted {
            thread_id,
            run_id,
            parent_run_id,
        } => {
            out.extend_from_slice(b"data: {\"type\":\"RUN_STARTED\",\"threadId\":");
            write_json_str(out, thread_id);
            out.extend_from_slice(b",\"runId\":");
            write_json_str(out, run_id);
            out.extend_from_slice(b",\"protocolVersion\":");
            out.extend_from_slice(PROTOCOL_VERSION_JSON.as_bytes());
            if let Some(p) = parent_run_id {
                out.extend_from_slice(b",\"parentRunId\":");
                write_json_str(out, p);
            }
        }
        Frame::TextStart { message_id } => {
            out.extend_from_slice(b"data: {\"type\":\"TEXT_MESSAGE_START\",\"messageId\":");
            write_json_str(out, message_id);
            out.extend_from_slice(b",\"role\":\"assistant\"");
        }
        Frame::TextContent { message_id, delta } => {
            out.extend_from_slice(b"data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":");
            write_json_str(out, message_id);
            out.extend_from_slice(b",\"delta\":");
            write_json_str(out, delta);
        }
        Frame::TextEnd { message_id } => {
            out.extend_from_slice(b"data: {\"type\":\"TEXT_MESSAGE_END\",\"messageId\":");
            write_json_str(out, message_id);
        }
        Frame::ToolCallStart {
            tool_call_id,
            name,
            parent_message_id,
        } => {
            out.extend_from_slice(b"data: {\"type\":\"TOOL_CALL_START\",\"toolCallId\":");
            write_json_str(out, tool_call_id);
            out.extend_from_slice(b",\"toolCallName\":");
            write_json_str(out, name);
            if let Some(p) = parent_message_id {
                out.extend_from_slice(b",\"parentMessageId\":");
                write_json_str(out, p);
            }
        }
        Frame::ToolCallArgs {
            tool_call_id,
            delta,
        } => {
            out.extend_from_slice(b"data: {\"type\":\"TOOL_CALL_ARGS\",\"toolCallId\":");
            write_json_str(out, tool_call_id);
            out.extend_from_slice(b",\"delta\":");
            write_json_str(out, delta);
        }
        Frame::ToolCallEnd { tool_call_id } => {
            out.extend_from_slice(b"data: {\"type\":\"TOOL_CALL_END\",\"toolCallId\":");
            write_json_str(out, tool_call_id);
        }
        Frame::RunInterrupted {
            thread_id,
            run_id,
            interrupts,
            usage,
        } => {
            // As `write_common` writes the owned event: no `result`, the outcome, the usage.
            out.extend_from_slice(b"data: {\"type\":\"RUN_FINISHED\",\"threadId\":");
            write_json_str(out, thread_id);
            out.extend_from_slice(b",\"runId\":");
            write_json_str(out, run_id);
            out.extend_from_slice(b",\"outcome\":");
            write_interrupt_outcome(out, interrupts);
            if let Some(u) = usage {
                out.extend_from_slice(b",\"usage\":");
                write_usage(out, u);
            }
        }
    }
    out.extend_from_slice(b",\"timestamp\":");
    if timestamp_ms < 0 {
        out.push(b'-');
    }
    super::detail::write_u64(out, timestamp_ms.unsigned_abs());
    out.extend_from_slice(b"}\n\n");
}

/// `RunOutcome` as serde writes it (see [`write_common`]).
fn write_outcome(out: &mut Vec<u8>, outcome: &RunOutcome) {
    match outcome {
        RunOutcome::Success {
            pending_tool_call_ids,
        } => {
            let mut w = JsonObject::open(out, "success");
            w.opt_json("pendingToolCallIds", pending_tool_call_ids.as_ref());
            w.close();
        }
        RunOutcome::Interrupt { interrupts } => write_interrupt_outcome(out, interrupts),
        RunOutcome::Cancelled => JsonObject::open(out, "cancelled").close(),
    }
}

/// `RunOutcome::Interrupt` as serde writes it.
fn write_interrupt_outcome(out: &mut Vec<u8>, interrupts: &[Interrupt]) {
    let mut w = JsonObject::open(out, "interrupt");
    w.key("interrupts");
    w.out.push(b'[');
    for (n, i) in interrupts.iter().enumerate() {
        if n > 0 {
            w.out.push(b',');
        }
        write_interrupt(w.out, i);
    }
    w.out.push(b']');
    w.close();
}

/// An `Interrupt` as serde writes it; one with `metadata` or unknown members through serde.
fn write_interrupt(out: &mut Vec<u8>, i: &Interrupt) {
    if i.metadata.is_some() || !i.extra.is_empty() {
        let _ = serde_json::to_writer(&mut *out, i);
        return;
    }
    let mut w = JsonObject::begin(out);
    w.str("id", &i.id);
    w.str("reason", &i.reason);
    w.opt_str("message", i.message.as_deref());
    w.opt_str("toolCallId", i.tool_call_id.as_deref());
    if let Some(schema) = &i.response_schema {
        w.key("responseSchema");
        write_schema(w.out, schema);
    }
    w.opt_str("expiresAt", i.expires_at.as_deref());
    w.opt_str("subagentRunId", i.subagent_run_id.as_deref());
    w.close();
}

/// A shared response schema as serde writes it. A scripted interrupt carries its script's
/// schema (the same `Arc`) on every run: its text is kept per thread for the last one written.
/// The kept `Arc` holds the map alive and unchanged (it is shared, so never mutated in place),
/// so the same pointer is the same map.
fn write_schema(out: &mut Vec<u8>, schema: &Arc<Map<String, Value>>) {
    /// A schema and its text.
    type Kept = Option<(Arc<Map<String, Value>>, Vec<u8>)>;
    thread_local! {
        static LAST: std::cell::RefCell<Kept> = const { std::cell::RefCell::new(None) };
    }
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        match &*last {
            Some((kept, text)) if Arc::ptr_eq(kept, schema) => out.extend_from_slice(text),
            _ => {
                let start = out.len();
                let _ = serde_json::to_writer(&mut *out, &**schema);
                *last = Some((schema.clone(), out[start..].to_vec()));
            }
        }
    });
}

/// A `usage` list as serde writes it.
fn write_usage(out: &mut Vec<u8>, usage: &[TokenUsage]) {
    out.push(b'[');
    for (n, u) in usage.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        let mut w = JsonObject::begin(out);
        w.opt_str("provider", u.provider.as_deref());
        w.opt_str("model", u.model.as_deref());
        w.opt_u64("inputTokens", u.input_tokens);
        w.opt_u64("outputTokens", u.output_tokens);
        w.opt_u64("totalTokens", u.total_tokens);
        w.opt_u64("reasoningTokens", u.reasoning_tokens);
        w.opt_u64("cachedInputTokens", u.cached_input_tokens);
        w.opt_u64("cacheWriteInputTokens", u.cache_write_input_tokens);
        w.close();
    }
    out.push(b']');
}

/// A JSON object being appended to a buffer.
struct JsonObject<'a> {
    out: &'a mut Vec<u8>,
    /// Where the object starts (to take it back).
    start: usize,
    /// No member written yet.
    empty: bool,
}

impl<'a> JsonObject<'a> {
    fn begin(out: &'a mut Vec<u8>) -> Self {
        let start = out.len();
        out.push(b'{');
        JsonObject {
            out,
            start,
            empty: true,
        }
    }

    /// An object whose first member is `"type"`: one of the protocol's literal names (plain
    /// ASCII, nothing to escape), written as it is.
    fn open(out: &'a mut Vec<u8>, type_name: &'static str) -> Self {
        debug_assert!(type_name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_'));
        let start = out.len();
        out.extend_from_slice(b"{\"type\":\"");
        out.extend_from_slice(type_name.as_bytes());
        out.push(b'"');
        JsonObject {
            out,
            start,
            empty: false,
        }
    }

    /// `"name":`, after a comma unless first (member names here are plain ASCII literals:
    /// nothing to escape).
    fn key(&mut self, name: &str) {
        if !std::mem::take(&mut self.empty) {
            self.out.push(b',');
        }
        self.out.push(b'"');
        self.out.extend_from_slice(name.as_bytes());
        self.out.extend_from_slice(b"\":");
    }

    fn str(&mut self, name: &str, value: &str) {
        self.key(name);
        write_json_str(self.out, value);
    }

    fn opt_str(&mut self, name: &str, value: Option<&str>) {
        if let Some(v) = value {
            self.str(name, v);
        }
    }

    fn opt_u64(&mut self, name: &str, value: Option<u64>) {
        if let Some(v) = value {
            self.key(name);
            super::detail::write_u64(self.out, v);
        }
    }

    fn json<T: Serialize + ?Sized>(&mut self, name: &str, value: &T) {
        self.key(name);
        let _ = serde_json::to_writer(&mut *self.out, value);
    }

    fn opt_json<T: Serialize + ?Sized>(&mut self, name: &str, value: Option<&T>) {
        if let Some(v) = value {
            self.json(name, v);
        }
    }

    fn close(self) {
        self.out.push(b'}');
    }

    fn abandon(self) {
        self.out.truncate(self.start);
    }
}

/// A JSON string as serde_json writes it (shared with the fake services' templates).
pub(crate) use crate::template::write_json_str;

/// A keep-alive comment frame, which consumers ignore.
pub const SSE_KEEP_ALIVE: &str = ": keep-alive\n\n";

/// Splits an SSE body into the JSON payloads of its `data:` lines, the way
/// `@ag-ui/client`'s `parseSSEStream` does (frames split on `\n\n`, multi-line data joined
/// with `\n`, one optional space after the colon, other fields ignored). For tests.
pub fn sse_payloads(body: &str) -> Vec<String> {
    body.split("\n\n")
        .filter_map(|frame| {
            let lines: Vec<&str> = frame
                .split('\n')
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|l| l.strip_prefix(' ').unwrap_or(l))
                .collect();
            (!lines.is_empty()).then(|| lines.join("\n"))
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// HTTP request habits
// ---------------------------------------------------------------------------------------

/// Whether an `Accept` header lets the producer answer `text/event-stream`. `HttpAgent`
/// sends `text/event-stream`; TanStack's `fetchServerSentEvents` sends `*/*`; a missing
/// header accepts anything.
pub fn accepts_event_stream(accept: Option<&str>) -> bool {
    let Some(accept) = accept else { return true };
    // What clients send, settled without splitting.
    if accept == EVENT_STREAM_CONTENT_TYPE {
        return true;
    }
    if accept.trim().is_empty() {
        return true;
    }
    accept.split(',').any(|range| {
        let media = range.split(';').next().unwrap_or("").trim();
        media == "*/*"
            || media.eq_ignore_ascii_case("text/*")
            || media.eq_ignore_ascii_case(EVENT_STREAM_CONTENT_TYPE)
    })
}

// ---------------------------------------------------------------------------------------
// TanStack AI specifics
// ---------------------------------------------------------------------------------------

/// What `@tanstack/ai-client@0.33.2`'s headless `ChatClient` needs to answer an interrupt.
///
/// A plain AG-UI interrupt reaches that client as `kind:"unbound", canResolve:false`
/// (display-only). It becomes answerable (`kind:"generic", canResolve:true`) when it
/// carries `metadata["tanstack:interruptBinding"]` with (read from
/// `@tanstack/ai/src/interrupt-resume.ts` `readInterruptBinding` and
/// `@tanstack/ai-client/src/interrupt-manager.ts`):
/// - `v: 1`, `kind: "generic"`, `interruptId` equal to the interrupt's `id`;
/// - `interruptedRunId` equal to the runId of the *request* the client sent (it tracks its
///   own request run id, not RUN_FINISHED's), `generation` a non-negative integer, the same
///   on every interrupt of the batch (otherwise the client assumes 0);
/// - when the interrupt has a `responseSchema`: `responseSchemaHash` equal to
///   `"sha256:" + hex(sha256(canonical JSON of responseSchema))`, else the item is not
///   resumable;
/// - when present, `expiresAt` must parse with JS `Date.parse`, else the binding is ignored.
///
/// The client never checks expiry itself and, for a mixed batch, sends a `resume` that
/// omits the unbound interrupts: the producer-side rules have to catch that.
pub mod tanstack {
    use super::{Interrupt, Map, Value};

    pub const INTERRUPT_BINDING_KEY: &str = "tanstack:interruptBinding";
    pub const INTERRUPT_PAYLOAD_KEY: &str = "tanstack:interruptPayload";
    /// Where TanStack puts the original first-party request on `ResumeEntry.metadata`.
    pub const INTERRUPT_CONTINUATION_KEY: &str = "tanstack:interruptContinuation";
    pub const BINDING_VERSION: u64 = 1;

    /// The raw generic binding for `interrupt` raised by the run `interrupted_run_id`.
    pub fn generic_binding(
        interrupt: &Interrupt,
        interrupted_run_id: &str,
        generation: u64,
    ) -> Value {
        let mut b = Map::new();
        b.insert("v".into(), Value::from(BINDING_VERSION));
        b.insert("kind".into(), Value::from("generic"));
        b.insert("interruptId".into(), Value::from(interrupt.id.clone()));
        if let Some(schema) = &interrupt.response_schema {
            b.insert(
                "responseSchemaHash".into(),
                Value::from(response_schema_hash(schema)),
            );
        }
        if let Some(expires_at) = &interrupt.expires_at {
            b.insert("expiresAt".into(), Value::from(expires_at.clone()));
        }
        b.insert("interruptedRunId".into(), Value::from(interrupted_run_id));
        b.insert("generation".into(), Value::from(generation));
        Value::Object(b)
    }

    /// Returns `interrupt` with its binding added under `metadata`, keeping other keys.
    pub fn bind_generic(
        mut interrupt: Interrupt,
        interrupted_run_id: &str,
        generation: u64,
    ) -> Interrupt {
        let binding = generic_binding(&interrupt, interrupted_run_id, generation);
        interrupt
            .metadata
            .get_or_insert_with(Map::new)
            .insert(INTERRUPT_BINDING_KEY.into(), binding);
        interrupt
    }

    /// The binding object on an interrupt, if any.
    pub fn binding(interrupt: &Interrupt) -> Option<&Map<String, Value>> {
        interrupt
            .metadata
            .as_ref()?
            .get(INTERRUPT_BINDING_KEY)?
            .as_object()
    }

    /// `"sha256:<hex>"` of the canonical JSON of a response schema.
    pub fn response_schema_hash(schema: &Map<String, Value>) -> String {
        let canonical = canonical_json(&Value::Object(schema.clone()));
        format!("sha256:{}", sha256_hex(canonical.as_bytes()))
    }

    /// TanStack's `canonicalInterruptJson`: keys sorted (UTF-16 code-unit order), no
    /// whitespace, strings and numbers as `JSON.stringify` writes them.
    pub fn canonical_json(value: &Value) -> String {
        let mut out = String::new();
        write_canonical(value, &mut out);
        out
    }

    fn write_canonical(value: &Value, out: &mut String) {
        match value {
            Value::Null => out.push_str("null"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Number(n) => out.push_str(&js_number(n)),
            Value::String(s) => out.push_str(&serde_json::to_string(s).unwrap_or_default()),
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write_canonical(item, out);
                }
                out.push(']');
            }
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
                out.push('{');
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&serde_json::to_string(k).unwrap_or_default());
                    out.push(':');
                    write_canonical(&map[k], out);
                }
                out.push('}');
            }
        }
    }

    /// `JSON.stringify(number)`.
    fn js_number(n: &serde_json::Number) -> String {
        if n.is_i64() || n.is_u64() {
            return n.to_string();
        }
        let f = n.as_f64().unwrap_or(0.0);
        if f == 0.0 {
            return "0".into();
        }
        let abs = f.abs();
        if (1e-6..1e21).contains(&abs) {
            // Rust's Display is the shortest round-trip decimal without exponent, as JS.
            return format!("{f}");
        }
        let e = format!("{f:e}"); // e.g. "1.5e21", "1e-7"
        match e.split_once('e') {
            Some((mantissa, exp)) if !exp.starts_with('-') => format!("{mantissa}e+{exp}"),
            _ => e,
        }
    }

    /// SHA-256 (FIPS 180-4), lowercase hex.
    pub fn sha256_hex(data: &[u8]) -> String {
        const K: [u32; 64] = [
            0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
            0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
            0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
            0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
            0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
            0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
            0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
            0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
            0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
            0xc67178f2,
        ];
        let mut h: [u32; 8] = [
            0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab,
            0x5be0cd19,
        ];
        let mut msg = data.to_vec();
        let bit_len = (data.len() as u64).wrapping_mul(8);
        msg.push(0x80);
        while msg.len() % 64 != 56 {
            msg.push(0);
        }
        msg.extend_from_slice(&bit_len.to_be_bytes());
        let mut w = [0u32; 64];
        for chunk in msg.chunks_exact(64) {
            for (i, word) in chunk.chunks_exact(4).enumerate() {
                w[i] = u32::from_be_bytes([word[0], word[1], word[2], word[3]]);
            }
            for i in 16..64 {
                let s0 = w[i - 15].rotate_right(7) ^ w[i - 15].rotate_right(18) ^ (w[i - 15] >> 3);
                let s1 = w[i - 2].rotate_right(17) ^ w[i - 2].rotate_right(19) ^ (w[i - 2] >> 10);
                w[i] = w[i - 16]
                    .wrapping_add(s0)
                    .wrapping_add(w[i - 7])
                    .wrapping_add(s1);
            }
            let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut hh] = h;
            for i in 0..64 {
                let s1 = e.rotate_right(6) ^ e.rotate_right(11) ^ e.rotate_right(25);
                let ch = (e & f) ^ (!e & g);
                let t1 = hh
                    .wrapping_add(s1)
                    .wrapping_add(ch)
                    .wrapping_add(K[i])
                    .wrapping_add(w[i]);
                let s0 = a.rotate_right(2) ^ a.rotate_right(13) ^ a.rotate_right(22);
                let maj = (a & b) ^ (a & c) ^ (b & c);
                let t2 = s0.wrapping_add(maj);
                hh = g;
                g = f;
                f = e;
                e = d.wrapping_add(t1);
                d = c;
                c = b;
                b = a;
                a = t1.wrapping_add(t2);
            }
            for (slot, v) in h.iter_mut().zip([a, b, c, d, e, f, g, hh]) {
                *slot = slot.wrapping_add(v);
            }
        }
        h.iter().map(|x| format!("{x:08x}")).collect()
    }
}

// ---------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn to_json(e: &Event) -> String {
        serde_json::to_string(e).unwrap()
    }

    fn interrupt_example() -> Interrupt {
        let mut i = Interrupt::new("int-1", "tool_approval");
        i.message = Some("Approve?".into());
        i.tool_call_id = Some("tc-1".into());
        i.response_schema = Some(Arc::new(
            json!({"type": "object"}).as_object().unwrap().clone(),
        ));
        i.expires_at = Some("2026-12-01T00:00:00Z".into());
        i
    }

    // The four verified encoder lines of the reference, byte for byte.
    #[test]
    fn strings_are_written_as_serde_json_writes_them() {
        // Every ASCII byte and a few others, at every place in an eight-byte word and the tail,
        // in strings of every length up to three words.
        let mut cases = vec![String::new(), "é".repeat(9), "a\u{7f}b".into()];
        for c in (0u8..0x80).map(char::from).chain(['é', '\u{2028}']) {
            for len in 0..24 {
                for at in 0..=len {
                    let mut s = "x".repeat(at);
                    s.push(c);
                    s.push_str(&"y".repeat(len - at));
                    cases.push(s);
                }
            }
        }
        for s in cases {
            let mut out = Vec::new();
            write_json_str(&mut out, &s);
            assert_eq!(out, serde_json::to_vec(&s).unwrap(), "{s:?}");
        }
    }

    #[test]
    fn int1_reference_interrupt_frame_is_byte_exact() {
        let e = Event::run_finished(
            "t1",
            "r1",
            Some(RunOutcome::Interrupt {
                interrupts: vec![interrupt_example()],
            }),
            Some(vec![TokenUsage {
                provider: Some("fake".into()),
                model: Some("fake-1".into()),
                input_tokens: Some(3),
                output_tokens: Some(2),
                total_tokens: Some(5),
                ..Default::default()
            }]),
        );
        assert_eq!(
            sse_frame(&e),
            "data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t1\",\"runId\":\"r1\",\"outcome\":{\"type\":\"interrupt\",\"interrupts\":[{\"id\":\"int-1\",\"reason\":\"tool_approval\",\"message\":\"Approve?\",\"toolCallId\":\"tc-1\",\"responseSchema\":{\"type\":\"object\"},\"expiresAt\":\"2026-12-01T00:00:00Z\"}]},\"usage\":[{\"provider\":\"fake\",\"model\":\"fake-1\",\"inputTokens\":3,\"outputTokens\":2,\"totalTokens\":5}]}\n\n"
        );
    }

    #[test]
    fn int2_reference_cancelled_and_pending_tool_frames_are_byte_exact() {
        assert_eq!(
            sse_frame(&Event::run_cancelled("t", "r")),
            "data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\",\"outcome\":{\"type\":\"cancelled\"}}\n\n"
        );
        assert_eq!(
            sse_frame(&Event::run_success("t", "r", vec!["tc-9".into()])),
            "data: {\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\",\"outcome\":{\"type\":\"success\",\"pendingToolCallIds\":[\"tc-9\"]}}\n\n"
        );
        // No pending calls: the member is left out, not [] and not null.
        assert_eq!(
            to_json(&Event::run_success("t", "r", vec![])),
            "{\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\",\"outcome\":{\"type\":\"success\"}}"
        );
    }

    #[test]
    fn common_events_are_written_as_serde_writes_them() {
        let tricky = "quote \" back \\ slash / nl \n tab \t nul \u{0} del \u{7f} é 😀 \u{1f}";
        let mut events = vec![
            Event::run_started(&RunAgentInput::new("t", "r")),
            Event::run_started(&RunAgentInput::new(tricky, tricky)),
            Event::text_start("m"),
            Event::text_content("m", tricky),
            Event::text_content("m", ""),
            Event::text_end(tricky),
            Event::tool_call_start("tc", "transfer", Some("m")),
            Event::tool_call_start("tc", tricky, None),
            Event::tool_call_args("tc", r#"{"to":"acct-9","amount":100}"#),
            Event::tool_call_end("tc"),
            Event::tool_call_result("res", "tc", tricky),
            Event::run_success("t", "r", vec![]),
            Event::run_success("t", "r", vec!["a".into(), tricky.into()]),
            Event::run_cancelled("t", "r"),
            Event::run_interrupted(
                "t",
                "r",
                vec![interrupt_example(), Interrupt::new("b", "x")],
            ),
            Event::run_interrupted("t", "r", vec![]),
            Event::run_interrupted("t", "r", {
                let mut sub = Interrupt::new(tricky, tricky);
                sub.subagent_run_id = Some("sa".into());
                let mut meta = interrupt_example();
                meta.metadata = Some(Map::from_iter([("k".to_string(), json!(1))]));
                let mut extra = Interrupt::new("e", "x");
                extra.extra.insert("zz".into(), json!([true]));
                vec![sub, meta, extra, interrupt_example()]
            }),
            Event::run_finished("t", "r", None, None),
            Event::run_error(tricky, None),
            Event::run_error("boom", Some("c")),
            Event::custom(
                "doubleagent.warning",
                json!({"rule": "X", "message": tricky}),
            ),
            Event::state_snapshot(json!({"k": [1, 2.5, null, "s"]})),
            Event::step_started("s"),
        ];
        let mut started = RunStarted {
            thread_id: "t".into(),
            run_id: "r".into(),
            parent_run_id: Some("p".into()),
            input: Some(Box::new(RunAgentInput::new("t", "r"))),
            ..Default::default()
        };
        events.push(Event::RunStarted(started.clone()));
        started.input = None;
        events.push(Event::RunStarted(started));
        events.push(Event::RunFinished(RunFinished {
            thread_id: "t".into(),
            run_id: "r".into(),
            result: Some(json!({"ok": true, "n": [1]})),
            outcome: Some(RunOutcome::Success {
                pending_tool_call_ids: None,
            }),
            usage: Some(vec![
                TokenUsage {
                    provider: Some("p".into()),
                    total_tokens: Some(7),
                    ..Default::default()
                },
                TokenUsage {
                    provider: Some(tricky.into()),
                    model: Some("m".into()),
                    input_tokens: Some(1),
                    output_tokens: Some(2),
                    total_tokens: Some(3),
                    reasoning_tokens: Some(4),
                    cached_input_tokens: Some(5),
                    cache_write_input_tokens: Some(u64::MAX),
                },
                TokenUsage::default(),
            ]),
            base: EventBase::default(),
        }));
        events.push(Event::RunError(RunError {
            message: "m".into(),
            code: None,
            usage: Some(vec![TokenUsage::default()]),
            base: EventBase::default(),
        }));
        events.push(Event::TextMessageStart(TextMessageStart {
            subagent_run_id: Some("sa".into()),
            message_id: "m".into(),
            role: None,
            name: Some(tricky.into()),
            base: EventBase::default(),
        }));
        events.push(Event::TextMessageContent(TextMessageContent {
            subagent_run_id: Some("sa".into()),
            message_id: "m".into(),
            delta: "d".into(),
            base: EventBase::default(),
        }));
        events.push(Event::TextMessageEnd(TextMessageEnd {
            subagent_run_id: Some("sa".into()),
            message_id: "m".into(),
            base: EventBase::default(),
        }));
        events.push(Event::ToolCallStart(ToolCallStart {
            subagent_run_id: Some("sa".into()),
            tool_call_id: "tc".into(),
            tool_call_name: "n".into(),
            parent_message_id: None,
            base: EventBase::default(),
        }));
        events.push(Event::ToolCallArgs(ToolCallArgs {
            subagent_run_id: Some("sa".into()),
            tool_call_id: "tc".into(),
            delta: "{}".into(),
            base: EventBase::default(),
        }));
        events.push(Event::ToolCallEnd(ToolCallEnd {
            subagent_run_id: Some("sa".into()),
            tool_call_id: "tc".into(),
            base: EventBase::default(),
        }));
        events.push(Event::ToolCallResult(ToolCallResult {
            subagent_run_id: Some("sa".into()),
            message_id: "m".into(),
            tool_call_id: "tc".into(),
            content: Content::Parts(vec![ContentPart::Text {
                id: None,
                text: tricky.into(),
                metadata: None,
            }]),
            role: None,
            base: EventBase::default(),
        }));
        // The base: a timestamp (every emitted event has one), and what sends an event to serde.
        let mut all = Vec::new();
        for e in events {
            all.push(e.clone().at(1_796_038_883_941));
            all.push(e.clone().at(-5));
            let mut m = e.clone().at(1);
            m.base_mut().metadata = Some(Map::from_iter([("k".to_string(), json!(tricky))]));
            all.push(m);
            let mut x = e.clone();
            x.base_mut().extra.insert("zz".into(), json!(true));
            all.push(x);
            let mut r = e.clone();
            r.base_mut().raw_event = Some(json!([1]));
            all.push(r);
            all.push(e);
        }
        for e in &all {
            let serde = format!("data: {}\n\n", serde_json::to_string(e).unwrap());
            assert_eq!(sse_frame(e), serde);
            let mut out = b"prefix".to_vec();
            write_sse_frame(&mut out, e);
            assert_eq!(out, [b"prefix".as_slice(), serde.as_bytes()].concat());
        }
    }

    #[test]
    fn token_usage_json_is_its_serde_value() {
        let all = TokenUsage {
            provider: Some("p".into()),
            model: Some("m".into()),
            input_tokens: Some(1),
            output_tokens: Some(2),
            total_tokens: Some(3),
            reasoning_tokens: Some(4),
            cached_input_tokens: Some(5),
            cache_write_input_tokens: Some(u64::MAX),
        };
        let some = TokenUsage {
            model: Some("m".into()),
            total_tokens: Some(0),
            ..Default::default()
        };
        for u in [all, some, TokenUsage::default()] {
            assert_eq!(u.to_json(), serde_json::to_value(&u).unwrap());
        }
    }

    #[test]
    fn borrowed_frames_are_their_events() {
        let tricky = "q \" b \\ nl \n é \u{1}";
        let mut plain = Interrupt::new("i-2", tricky);
        plain.tool_call_id = Some("tc".into());
        // Schemas shared and not, in turn (the last one's text is kept per thread).
        let mut other = interrupt_example();
        other.response_schema = Some(Arc::new(
            json!({"type": "string", "enum": ["a"]})
                .as_object()
                .unwrap()
                .clone(),
        ));
        let first = interrupt_example();
        let interrupts = [first.clone(), plain, other, first];
        let usage = [
            TokenUsage {
                provider: Some("p".into()),
                input_tokens: Some(3),
                ..TokenUsage::default()
            },
            TokenUsage::default(),
        ];
        let frames = [
            Frame::RunStarted {
                thread_id: "t",
                run_id: tricky,
                parent_run_id: None,
            },
            Frame::RunStarted {
                thread_id: "t",
                run_id: "r",
                parent_run_id: Some(tricky),
            },
            Frame::TextStart { message_id: tricky },
            Frame::TextContent {
                message_id: "m",
                delta: tricky,
            },
            Frame::TextEnd { message_id: "m" },
            Frame::ToolCallStart {
                tool_call_id: "tc",
                name: tricky,
                parent_message_id: Some("m"),
            },
            Frame::ToolCallStart {
                tool_call_id: "tc",
                name: "n",
                parent_message_id: None,
            },
            Frame::ToolCallArgs {
                tool_call_id: "tc",
                delta: r#"{"a":1}"#,
            },
            Frame::ToolCallEnd { tool_call_id: "tc" },
            Frame::RunInterrupted {
                thread_id: tricky,
                run_id: "r",
                interrupts: &interrupts,
                usage: Some(&usage),
            },
            Frame::RunInterrupted {
                thread_id: "t",
                run_id: tricky,
                interrupts: &[],
                usage: None,
            },
        ];
        // RUN_STARTED as the owned constructor builds it.
        let mut input = RunAgentInput::new("t", "r");
        input.parent_run_id = Some(tricky.into());
        assert_eq!(frames[1].to_event(), Event::run_started(&input));
        for f in &frames {
            let e = f.to_event();
            assert_eq!(e.type_name(), f.type_name());
            for ts in [0, -1, 1_796_038_883_941] {
                let mut out = b"x".to_vec();
                write_frame(&mut out, f, ts);
                assert_eq!(
                    out,
                    [b"x".as_slice(), sse_frame(&e.clone().at(ts)).as_bytes()].concat()
                );
            }
        }
    }

    #[test]
    fn err1_reference_run_error_frame_is_byte_exact() {
        assert_eq!(
            sse_frame(&Event::run_error("boom", Some("resume_incomplete"))),
            "data: {\"type\":\"RUN_ERROR\",\"message\":\"boom\",\"code\":\"resume_incomplete\"}\n\n"
        );
    }

    #[test]
    fn res1_reference_resume_input_parses_and_round_trips() {
        let body = r#"{"threadId":"t1","runId":"r2","parentRunId":"r1","messages":[],"resume":[{"interruptId":"int-1","status":"resolved","payload":{"approved":true}}]}"#;
        let input = RunAgentInput::parse(body.as_bytes()).unwrap();
        assert_eq!(input.parent_run_id.as_deref(), Some("r1"));
        assert!(input.is_continuation());
        let r = &input.resume_entries()[0];
        assert_eq!(r.interrupt_id, "int-1");
        assert_eq!(r.status, ResumeStatus::Resolved);
        assert_eq!(r.payload, Some(json!({"approved": true})));
        // tools/context default to [] and are written back as such.
        assert_eq!(
            serde_json::to_string(&input).unwrap(),
            r#"{"threadId":"t1","runId":"r2","parentRunId":"r1","messages":[],"tools":[],"context":[],"resume":[{"interruptId":"int-1","status":"resolved","payload":{"approved":true}}]}"#
        );
    }

    #[test]
    fn http_agent_first_request_body_parses() {
        // Verified body of @ag-ui/client 1.0.0's first request (reference §3).
        let body = r#"{"threadId":"t1","runId":"r1","protocolVersion":"1.0","state":{},"messages":[],"tools":[],"context":[],"forwardedProps":{}}"#;
        let input = RunAgentInput::parse(body.as_bytes()).unwrap();
        assert_eq!(input.version_verdict(), VersionVerdict::Accept);
        assert!(!input.is_continuation());
        assert!(input.unknown_members().is_empty());
        assert_eq!(input.state_or_default(), json!({}));
    }

    #[test]
    fn tanstack_request_habits_are_tolerated() {
        // Shape of @tanstack/ai-client 0.33.2 fetchServerSentEvents' body: no
        // protocolVersion, an extra `data`, a tool message with `name`, TanStack metadata.
        let body = json!({
            "threadId": "thread-1", "runId": "run-2", "parentRunId": "run-1",
            "resume": [{"interruptId": "approve-transfer", "status": "resolved", "payload": {"approved": true}}],
            "state": {},
            "messages": [
                {"id": "u1", "role": "user", "content": "pay", "metadata": {"tanstack": {"createdAt": "x"}}},
                {"id": "a1", "role": "assistant", "toolCalls": [{"id": "tc-1", "type": "function", "function": {"name": "transfer_funds", "arguments": "{}"}}]},
                {"id": "t1", "role": "tool", "name": "transfer_funds", "toolCallId": "tc-0", "content": "ok"}
            ],
            "tools": [], "context": [], "forwardedProps": {}, "data": {}
        });
        let mut input = RunAgentInput::parse(body.to_string().as_bytes()).unwrap();
        assert_eq!(input.version_verdict(), VersionVerdict::Accept);
        assert_eq!(input.unknown_members(), vec!["data", "messages[2].name"]);
        input.strip_unknown();
        assert!(input.unknown_members().is_empty());
        assert!(accepts_event_stream(Some("*/*")));
        assert!(accepts_event_stream(Some("text/event-stream")));
        assert!(accepts_event_stream(None));
        assert!(!accepts_event_stream(Some("application/json")));
    }

    #[test]
    fn malformed_known_members_are_rejected() {
        let bad = [
            r#"{"threadId":"t","runId":"r","messages":[],"resume":[{"interruptId":"i","status":"maybe"}]}"#,
            r#"{"threadId":"t","runId":"r"}"#,
            r#"{"runId":"r","messages":[]}"#,
            r#"{"threadId":"t","runId":"r","messages":[],"parentRunId":null}"#,
            r#"{"threadId":"t","runId":"r","messages":[],"forwardedProps":null}"#,
            r#"{"threadId":"t","runId":"r","messages":[],"resume":[{"interruptId":"i","status":"resolved","payload":null}]}"#,
            r#"{"threadId":"t","runId":"r","messages":[{"id":"m","role":"robot","content":"x"}]}"#,
            r#"{"threadId":"t","runId":"r","messages":[{"id":"m","role":"user"}]}"#,
            r#"not json"#,
        ];
        for b in bad {
            assert!(RunAgentInput::parse(b.as_bytes()).is_err(), "accepted: {b}");
        }
        // state: null reads as absent.
        let ok =
            RunAgentInput::parse(br#"{"threadId":"t","runId":"r","messages":[],"state":null}"#)
                .unwrap();
        assert_eq!(ok.state, None);
    }

    #[test]
    fn parse_json_is_from_slice_and_notes_repeated_members() {
        let docs = [
            r#"null"#,
            r#" {"b": 1, "a": [true, false, null, -0, 0, -7, 18446744073709551615, 18446744073709551616, 1.5, -1e-400, 2.50]} "#,
            r#"{"s": "é \" \\ \n \u00e9 \ud83d\ude00 / \u0000", "o": {}, "e": [], "n": {"m": {"k": [{}]}}}"#,
            r#"[1, "x", {"y": 2}]"#,
            r#""just a string""#,
        ];
        for d in docs {
            let (v, repeats) = parse_json(d.as_bytes()).unwrap();
            assert_eq!(v, serde_json::from_str::<Value>(d).unwrap(), "{d}");
            assert_eq!(
                v.to_string(),
                serde_json::from_str::<Value>(d).unwrap().to_string()
            );
            assert!(!repeats, "{d}");
        }
        for d in [
            r#"{"a": 1, "a": 2}"#,
            r#"{"x": [{"k": 1, "j": 0, "k": 1}]}"#,
            r#"{"threadId":"t","runId":"r","messages":[],"threadId":"u"}"#,
        ] {
            let (v, repeats) = parse_json(d.as_bytes()).unwrap();
            assert_eq!(v, serde_json::from_str::<Value>(d).unwrap(), "{d}");
            assert!(repeats, "{d}");
        }
        for d in [
            r#"{"a": 1"#,
            r#"{"a": 1} x"#,
            "",
            "[1,]",
            r#"{"a" 1}"#,
            "[1e400]",
        ] {
            let mine = parse_json(d.as_bytes()).unwrap_err().to_string();
            let theirs = serde_json::from_str::<Value>(d).unwrap_err().to_string();
            assert_eq!(mine, theirs, "{d}");
        }
    }

    #[test]
    fn an_input_read_from_its_json_is_the_input_read_from_its_bytes() {
        let bodies = [
            json!({"threadId": "t", "runId": "r", "messages": [{"id": "m-1", "role": "user", "content": "pay the vendor"}], "tools": [], "context": [], "state": {}}).to_string(),
            json!({
                "threadId": "thread-1", "runId": "run-2", "parentRunId": "run-1", "protocolVersion": "1.3",
                "resume": [{"interruptId": "approve-transfer", "status": "resolved", "payload": {"approved": true}, "note": 1},
                           {"interruptId": "x", "status": "cancelled", "metadata": {"k": null}}],
                "state": {"n": 1.5, "big": 18446744073709551615u64, "neg": -3},
                "messages": [
                    {"id": "u1", "role": "user", "content": [{"type": "text", "text": "hi"}], "metadata": {"tanstack": {"createdAt": "x"}}},
                    {"id": "a1", "role": "assistant", "content": "ok", "toolCalls": [{"id": "tc-1", "type": "function", "function": {"name": "transfer_funds", "arguments": "{}", "zz": 1}, "yy": 2}]},
                    {"id": "t1", "role": "tool", "name": "transfer_funds", "toolCallId": "tc-0", "content": "ok"},
                    {"id": "s1", "role": "system", "content": "sys"},
                    {"id": "d1", "role": "developer", "content": "dev"}
                ],
                "tools": [{"name": "t", "description": "d", "parameters": {"type": "object"}, "x": 1}],
                "context": [{"description": "d", "value": "v", "y": []}],
                "forwardedProps": {"a": [1, 2]}, "data": {}
            }).to_string(),
            r#"{"threadId":"t","runId":"r","messages":[],"state":null}"#.to_string(),
            r#"{"runId":"r","threadId":"t","messages":[]}"#.to_string(),
        ];
        for b in &bodies {
            let (json, repeats) = parse_json(b.as_bytes()).unwrap();
            assert!(!repeats);
            let from_bytes = RunAgentInput::parse(b.as_bytes()).unwrap();
            assert_eq!(
                RunAgentInput::from_parsed(&json),
                Some(from_bytes.clone()),
                "{b}"
            );
            assert_eq!(
                RunAgentInput::from_parsed(&json).unwrap().unknown_members(),
                from_bytes.unknown_members()
            );
        }
        // What the bytes reject, the JSON does not accept either (the caller then asks the
        // bytes why).
        let bad = [
            r#"{"threadId":"t","runId":"r","messages":[],"resume":[{"interruptId":"i","status":"maybe"}]}"#,
            r#"{"threadId":"t","runId":"r"}"#,
            r#"{"threadId":"t","runId":"r","messages":[],"parentRunId":null}"#,
            r#"{"threadId":"t","runId":"r","messages":[{"id":"m","role":"robot","content":"x"}]}"#,
            r#"{"threadId":5,"runId":"r","messages":[]}"#,
            r#"[]"#,
        ];
        for b in bad {
            assert!(RunAgentInput::parse(b.as_bytes()).is_err());
            let (json, _) = parse_json(b.as_bytes()).unwrap();
            assert_eq!(RunAgentInput::from_parsed(&json), None, "{b}");
        }
    }

    #[test]
    fn protocol_version_verdicts() {
        let mut i = RunAgentInput::new("t", "r");
        i.protocol_version = Some("1.3".into());
        assert!(matches!(
            i.version_verdict(),
            VersionVerdict::AcceptWithWarning(_)
        ));
        i.protocol_version = Some("2.0".into());
        assert!(matches!(
            i.version_verdict(),
            VersionVerdict::UnknownMajor(_)
        ));
        i.protocol_version = Some("1.0.0".into());
        assert!(matches!(
            i.version_verdict(),
            VersionVerdict::AcceptWithWarning(_)
        ));
    }

    #[test]
    fn every_message_role_round_trips() {
        let msgs = json!([
            {"id": "d", "role": "developer", "content": "dev"},
            {"id": "s", "role": "system", "content": "sys"},
            {"id": "a", "role": "assistant", "content": "hi", "toolCalls": [{"id": "tc", "type": "function", "function": {"name": "f", "arguments": "{\"x\":1}"}}]},
            {"id": "u", "role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image", "source": {"type": "url", "value": "http://127.0.0.1/x.png"}}]},
            {"id": "t", "role": "tool", "content": "42", "toolCallId": "tc", "error": "e"},
            {"id": "ac", "role": "activity", "activityType": "plan", "content": {"steps": []}},
            {"id": "r", "role": "reasoning", "content": "hmm", "encryptedValue": "zz"}
        ]);
        let parsed: Vec<Message> = serde_json::from_value(msgs.clone()).unwrap();
        assert_eq!(parsed.len(), 7);
        assert_eq!(serde_json::to_value(&parsed).unwrap(), msgs);
        assert_eq!(parsed[3].id(), "u");
    }

    #[test]
    fn every_event_type_round_trips_with_its_type_name() {
        let events = vec![
            Event::text_start("m1"),
            Event::text_content("m1", "hello"),
            Event::text_end("m1"),
            Event::TextMessageChunk(TextMessageChunk {
                delta: Some("x".into()),
                ..Default::default()
            }),
            Event::tool_call_start("tc1", "transfer_funds", Some("m1")),
            Event::tool_call_args("tc1", "{\"to\":\"acct-9\"}"),
            Event::tool_call_end("tc1"),
            Event::ToolCallChunk(ToolCallChunk {
                tool_call_id: Some("tc2".into()),
                ..Default::default()
            }),
            Event::tool_call_result("m2", "tc1", "{\"id\":\"act-1\"}"),
            Event::state_snapshot(json!({"balance": 5})),
            Event::StateDelta(StateDelta {
                delta: vec![JsonPatchOp::Replace {
                    path: "/balance".into(),
                    value: json!(4),
                }],
                ..Default::default()
            }),
            Event::messages_snapshot(vec![Message::user("u1", "hi")]),
            Event::ActivitySnapshot(ActivitySnapshot {
                message_id: "a".into(),
                activity_type: "plan".into(),
                ..Default::default()
            }),
            Event::ActivityDelta(ActivityDelta {
                message_id: "a".into(),
                activity_type: "plan".into(),
                patch: vec![JsonPatchOp::Remove { path: "/x".into() }],
                ..Default::default()
            }),
            Event::Raw(Raw {
                event: json!({"k": 1}),
                source: Some("fake".into()),
                ..Default::default()
            }),
            Event::custom("doubleagent.warning", json!({"rule": "PROD-2"})),
            Event::run_started(&RunAgentInput::new("t", "r")),
            Event::run_success("t", "r", vec![]),
            Event::run_error("boom", None),
            Event::step_started("beforeTools"),
            Event::step_finished("beforeTools"),
            Event::ReasoningStart(ReasoningStart {
                message_id: "rm".into(),
                ..Default::default()
            }),
            Event::ReasoningMessageStart(ReasoningMessageStart {
                message_id: "rm".into(),
                ..Default::default()
            }),
            Event::ReasoningMessageContent(ReasoningMessageContent {
                message_id: "rm".into(),
                delta: "d".into(),
                ..Default::default()
            }),
            Event::ReasoningMessageEnd(ReasoningMessageEnd {
                message_id: "rm".into(),
                ..Default::default()
            }),
            Event::ReasoningMessageChunk(ReasoningMessageChunk::default()),
            Event::ReasoningEnd(ReasoningEnd {
                message_id: "rm".into(),
                ..Default::default()
            }),
            Event::ReasoningEncryptedValue(ReasoningEncryptedValue {
                subtype: EncryptedValueSubtype::ToolCall,
                entity_id: "tc1".into(),
                encrypted_value: "e".into(),
                ..Default::default()
            }),
            Event::SubagentStarted(SubagentStarted {
                subagent_run_id: "sa1".into(),
                name: "helper".into(),
                ..Default::default()
            }),
            Event::SubagentFinished(SubagentFinished {
                subagent_run_id: "sa1".into(),
                outcome: Some(SubagentOutcome::Suspended {
                    interrupt_ids: Some(vec!["i1".into()]),
                }),
                ..Default::default()
            }),
            Event::SubagentError(SubagentError {
                subagent_run_id: "sa1".into(),
                message: "x".into(),
                ..Default::default()
            }),
        ];
        assert_eq!(events.len(), 31);
        let mut seen = std::collections::BTreeSet::new();
        for e in &events {
            let v = serde_json::to_value(e).unwrap();
            assert_eq!(v["type"], e.type_name(), "{v}");
            assert!(seen.insert(e.type_name()));
            assert!(!v.to_string().contains("null"), "null leaked: {v}");
            let back: Event = serde_json::from_value(v.clone()).unwrap();
            assert_eq!(&back, e, "{v}");
            // Frames are single data lines.
            let frame = sse_frame(e);
            assert!(frame.starts_with("data: ") && frame.ends_with("\n\n"));
            assert_eq!(frame.matches('\n').count(), 2);
        }
    }

    #[test]
    fn run_started_declares_its_own_protocol_version() {
        let mut input = RunAgentInput::new("t", "r2");
        input.protocol_version = Some("1.3".into());
        input.parent_run_id = Some("r1".into());
        assert_eq!(
            to_json(&Event::run_started(&input)),
            r#"{"type":"RUN_STARTED","threadId":"t","runId":"r2","protocolVersion":"1.0","parentRunId":"r1"}"#
        );
    }

    #[test]
    fn event_base_fields_and_unknown_members_serialize_after_the_body() {
        let mut e = Event::step_started("s").at(1_700_000_000_000);
        e.base_mut().extra.insert("bogus".into(), json!(1));
        assert_eq!(
            to_json(&e),
            r#"{"type":"STEP_STARTED","stepName":"s","timestamp":1700000000000,"bogus":1}"#
        );
        let back: Event = serde_json::from_str(&to_json(&e)).unwrap();
        assert_eq!(back, e);
    }

    #[test]
    fn state_snapshot_and_custom_value_may_be_null_but_not_absent() {
        assert_eq!(
            to_json(&Event::state_snapshot(Value::Null)),
            r#"{"type":"STATE_SNAPSHOT","snapshot":null}"#
        );
        assert!(serde_json::from_str::<Event>(r#"{"type":"STATE_SNAPSHOT"}"#).is_err());
        assert!(serde_json::from_str::<Event>(r#"{"type":"CUSTOM","name":"x"}"#).is_err());
        assert!(
            serde_json::from_str::<Event>(r#"{"type":"CUSTOM","name":"x","value":null}"#).is_ok()
        );
    }

    #[test]
    fn int1_interrupt_outcome_parses_and_empty_list_is_representable_for_violations() {
        let e: Event = serde_json::from_str(
            r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[{"id":"a","reason":"x","subagentRunId":"sa1"}]}}"#,
        )
        .unwrap();
        let Event::RunFinished(rf) = &e else { panic!() };
        let Some(RunOutcome::Interrupt { interrupts }) = &rf.outcome else {
            panic!()
        };
        assert_eq!(interrupts[0].subagent_run_id.as_deref(), Some("sa1")); // INT-5
                                                                           // violate = ["interrupt-outcome-without-interrupts"] needs the empty list on the wire.
        assert_eq!(
            to_json(&Event::run_interrupted("t", "r", vec![])),
            r#"{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"interrupt","interrupts":[]}}"#
        );
    }

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

    #[test]
    fn warning_event_shape() {
        // Compared as values: key order inside `value` depends on serde_json's
        // `preserve_order` feature, which some other crate in the tree may switch on.
        assert_eq!(
            serde_json::to_value(warning_event(
                "PROD-2",
                "unrecognized resume entry 'bogus'",
                json!({"interruptId": "bogus"})
            ))
            .unwrap(),
            json!({"type":"CUSTOM","name":"doubleagent.warning","value":{"rule":"PROD-2","message":"unrecognized resume entry 'bogus'","details":{"interruptId":"bogus"}}})
        );
    }

    #[test]
    fn sse_payloads_parse_like_the_client() {
        let body = format!(
            "{}{}: keep-alive\n\nevent: x\ndata: {{\"a\":\ndata: 1}}\n\n",
            sse_frame(&Event::step_started("a")),
            sse_frame(&Event::step_finished("a"))
        );
        let p = sse_payloads(&body);
        assert_eq!(p.len(), 3);
        assert_eq!(p[2], "{\"a\":\n1}");
    }

    #[test]
    fn sha256_known_vectors() {
        use tanstack::sha256_hex;
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            sha256_hex(b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
    }

    #[test]
    fn tanstack_canonical_json_matches_js() {
        use tanstack::canonical_json;
        let v: Value = serde_json::from_str(
            r#"{"b":1,"a":[true,null,"x\"y"],"B":{"z":1.5,"y":1.0,"x":1e21,"w":1e-7,"v":-0.0,"u":0.000001}}"#,
        )
        .unwrap();
        // Checked against @tanstack/ai 0.58.0 canonicalInterruptJson.
        assert_eq!(
            canonical_json(&v),
            r#"{"B":{"u":0.000001,"v":0,"w":1e-7,"x":1e+21,"y":1,"z":1.5},"a":[true,null,"x\"y"],"b":1}"#
        );
    }

    #[test]
    fn tanstack_binding_for_the_issue_example() {
        // Issue 7's approve-transfer interrupt. Hash checked against @tanstack/ai 0.58.0
        // digestInterruptJson(canonicalInterruptJson(schema)) under node.
        let mut i = Interrupt::new("approve-transfer", "approval-required");
        i.message = Some("Approve transferring 100 to acct-9?".into());
        i.tool_call_id = Some("tc-1".into());
        i.response_schema = Some(Arc::new(
            json!({"type": "object", "properties": {"approved": {"type": "boolean"}}})
                .as_object()
                .unwrap()
                .clone(),
        ));
        i.expires_at = Some("2026-01-01T00:10:00.000Z".into());
        let bound = tanstack::bind_generic(i, "run-1", 0);
        let b = tanstack::binding(&bound).unwrap();
        assert_eq!(b["v"], 1);
        assert_eq!(b["kind"], "generic");
        assert_eq!(b["interruptId"], "approve-transfer");
        assert_eq!(b["interruptedRunId"], "run-1");
        assert_eq!(b["generation"], 0);
        assert_eq!(b["expiresAt"], "2026-01-01T00:10:00.000Z");
        assert_eq!(
            b["responseSchemaHash"],
            "sha256:cf02c74d30b5aa436d45f581780e03fe2aef4b97d233bef3acdef4d9ca1176d1"
        );
        assert!(to_json(&Event::run_interrupted("t", "r", vec![bound]))
            .contains("\"tanstack:interruptBinding\""));
    }
}
