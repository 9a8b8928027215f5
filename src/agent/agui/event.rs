//! Every event of AG-UI 1.0 (all 31 types, discriminated by `type`, SCREAMING_SNAKE), the
//! interrupts and token usage a run's end carries, and constructors for the events doubleagent
//! emits. Member order on the wire is the derived `Serialize`'s: `type`, the variant's fields in
//! declaration order (absent options left out), then the common base (`timestamp`, ...).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::input::RunAgentInput;
use super::interrupt::Interrupt;
use super::message::{Content, Message};
use super::wire::{non_null, wire};

/// The protocol version a producer declares on `RUN_STARTED.protocolVersion` (its own
/// version, never an echo of the input's).
pub const PROTOCOL_VERSION: &str = "1.0";

wire! {
    /// Token counts for one provider and model. A resumed run reports only its own calls
    /// (RES-7).
    #[derive(Default, Eq)]
    pub struct TokenUsage {
        provider?: String,
        model?: String,
        input_tokens?: u64,
        output_tokens?: u64,
        total_tokens?: u64,
        reasoning_tokens?: u64,
        cached_input_tokens?: u64,
        cache_write_input_tokens?: u64,
    }
}

wire! {
    /// Fields every event carries, plus unknown members (empty unless a scenario deliberately
    /// emits unknown fields).
    #[derive(Default)]
    pub struct EventBase {
        /// Milliseconds since the epoch, in practice.
        timestamp?: i64,
        raw_event?: Value,
        metadata?: Metadata,
        #[serde(flatten)] extra: Map<String, Value>,
    }
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

/// Declares every event: its struct (a [`wire!`] struct with `Default` and the common
/// [`EventBase`] flattened last) and its variant of [`Event`] with its wire `type`, and the
/// accessors every variant shares.
macro_rules! events {
    ($($(#[$m:meta])* $variant:ident = $name:literal { $($body:tt)* })*) => {
        $(wire! {
            $(#[$m])*
            #[derive(Default)]
            pub struct $variant {
                $($body)*
                #[serde(flatten)]
                base: EventBase,
            }
        })*

        /// Any AG-UI 1.0 event (all 31 types), discriminated by `type`.
        #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
        #[serde(tag = "type", rename_all = "SCREAMING_SNAKE_CASE")]
        pub enum Event {
            $($variant($variant),)*
        }

        impl Event {
            /// The wire `type`, e.g. `"RUN_FINISHED"` (for the ledger's list of emitted types).
            pub fn type_name(&self) -> &'static str {
                match self {
                    $(Event::$variant(_) => $name,)*
                }
            }

            pub fn base_mut(&mut self) -> &mut EventBase {
                match self {
                    $(Event::$variant(e) => &mut e.base,)*
                }
            }
        }
    };
}

events! {
    TextMessageStart = "TEXT_MESSAGE_START" {
        subagent_run_id?: String,
        message_id: String,
        role?: TextMessageRole,
        name?: String,
    }
    TextMessageContent = "TEXT_MESSAGE_CONTENT" {
        subagent_run_id?: String,
        message_id: String,
        delta: String,
    }
    TextMessageEnd = "TEXT_MESSAGE_END" {
        subagent_run_id?: String,
        message_id: String,
    }
    /// Shorthand for start + content + end.
    TextMessageChunk = "TEXT_MESSAGE_CHUNK" {
        subagent_run_id?: String,
        message_id?: String,
        role?: TextMessageRole,
        delta?: String,
        name?: String,
    }
    ToolCallStart = "TOOL_CALL_START" {
        subagent_run_id?: String,
        tool_call_id: String,
        tool_call_name: String,
        parent_message_id?: String,
    }
    /// Appends a fragment of a tool call's JSON arguments.
    ToolCallArgs = "TOOL_CALL_ARGS" {
        subagent_run_id?: String,
        tool_call_id: String,
        delta: String,
    }
    ToolCallEnd = "TOOL_CALL_END" {
        subagent_run_id?: String,
        tool_call_id: String,
    }
    /// Shorthand for a tool call's start + args + end.
    ToolCallChunk = "TOOL_CALL_CHUNK" {
        subagent_run_id?: String,
        tool_call_id?: String,
        tool_call_name?: String,
        parent_message_id?: String,
        delta?: String,
    }
    /// What a tool returned; mints a tool message with its own `messageId`.
    ToolCallResult = "TOOL_CALL_RESULT" {
        subagent_run_id?: String,
        message_id: String,
        tool_call_id: String,
        content: Content,
        role?: ToolRole,
    }
    /// Replaces the agent state wholesale (any JSON value, `null` included).
    StateSnapshot = "STATE_SNAPSHOT" {
        subagent_run_id?: String,
        snapshot: Value,
    }
    /// Changes the agent state by an RFC 6902 patch.
    StateDelta = "STATE_DELTA" {
        subagent_run_id?: String,
        delta: Vec<JsonPatchOp>,
    }
    /// The complete set of messages the producer owns (conversation-wide: no attribution).
    MessagesSnapshot = "MESSAGES_SNAPSHOT" {
        messages: Vec<Message>,
    }
    /// Structured progress that is not conversation content.
    ActivitySnapshot = "ACTIVITY_SNAPSHOT" {
        subagent_run_id?: String,
        message_id: String,
        activity_type: String,
        content: Map<String, Value>,
        replace?: bool,
    }
    /// Patches an activity message's content.
    ActivityDelta = "ACTIVITY_DELTA" {
        subagent_run_id?: String,
        message_id: String,
        activity_type: String,
        patch: Vec<JsonPatchOp>,
    }
    /// A provider-native event passed through.
    Raw = "RAW" {
        subagent_run_id?: String,
        event: Value,
        source?: String,
    }
    /// The application's own events. doubleagent uses it for warnings (PROD-2).
    Custom = "CUSTOM" {
        subagent_run_id?: String,
        name: String,
        value: Value,
    }
    /// Opens a run. `protocolVersion` is the producer's own declaration.
    RunStarted = "RUN_STARTED" {
        thread_id: String,
        run_id: String,
        protocol_version?: String,
        parent_run_id?: String,
        input?: Box<RunAgentInput>,
    }
    /// Closes a run that did not fail.
    RunFinished = "RUN_FINISHED" {
        thread_id: String,
        run_id: String,
        result?: Value,
        outcome?: RunOutcome,
        usage?: Vec<TokenUsage>,
    }
    /// Ends a run that failed (or, late, reports a failure after it closed: INT-6).
    RunError = "RUN_ERROR" {
        message: String,
        code?: String,
        usage?: Vec<TokenUsage>,
    }
    StepStarted = "STEP_STARTED" {
        subagent_run_id?: String,
        step_name: String,
    }
    StepFinished = "STEP_FINISHED" {
        subagent_run_id?: String,
        step_name: String,
    }
    ReasoningStart = "REASONING_START" {
        subagent_run_id?: String,
        message_id: String,
    }
    ReasoningMessageStart = "REASONING_MESSAGE_START" {
        subagent_run_id?: String,
        message_id: String,
        role: ReasoningRole,
    }
    ReasoningMessageContent = "REASONING_MESSAGE_CONTENT" {
        subagent_run_id?: String,
        message_id: String,
        delta: String,
    }
    ReasoningMessageEnd = "REASONING_MESSAGE_END" {
        subagent_run_id?: String,
        message_id: String,
    }
    ReasoningMessageChunk = "REASONING_MESSAGE_CHUNK" {
        subagent_run_id?: String,
        message_id?: String,
        delta?: String,
    }
    ReasoningEnd = "REASONING_END" {
        subagent_run_id?: String,
        message_id: String,
    }
    /// An opaque encrypted reasoning artefact.
    ReasoningEncryptedValue = "REASONING_ENCRYPTED_VALUE" {
        subagent_run_id?: String,
        subtype: EncryptedValueSubtype,
        entity_id: String,
        encrypted_value: String,
    }
    /// A subagent invocation has begun (here `subagentRunId` identifies it).
    SubagentStarted = "SUBAGENT_STARTED" {
        subagent_run_id: String,
        name: String,
        description?: String,
        parent_subagent_run_id?: String,
        parent_tool_call_id?: String,
        parent_message_id?: String,
    }
    /// Ends a subagent's segment: completed or suspended awaiting input.
    SubagentFinished = "SUBAGENT_FINISHED" {
        subagent_run_id: String,
        result?: Value,
        outcome?: SubagentOutcome,
    }
    /// A subagent invocation failed; the run may continue.
    SubagentError = "SUBAGENT_ERROR" {
        subagent_run_id: String,
        message: String,
        code?: String,
    }
}

impl Event {
    /// Sets `timestamp` (ms since the epoch, from the scenario clock).
    pub fn at(mut self, timestamp_ms: i64) -> Self {
        self.base_mut().timestamp = Some(timestamp_ms);
        self
    }

    // --- constructors for the events doubleagent emits ---------------------------------

    /// `RUN_STARTED` declaring this producer's `protocolVersion: "1.0"`.
    pub fn run_started(input: &RunAgentInput) -> Self {
        Event::RunStarted(RunStarted {
            thread_id: input.thread_id.clone(),
            run_id: input.run_id.clone(),
            protocol_version: Some(PROTOCOL_VERSION.to_string()),
            parent_run_id: input.parent_run_id.clone(),
            ..Default::default()
        })
    }

    /// `RUN_FINISHED` with an explicit outcome (`None` = absent = success); the run's usage
    /// is added when it is sent.
    pub fn run_finished(thread_id: &str, run_id: &str, outcome: Option<RunOutcome>) -> Self {
        Event::RunFinished(RunFinished {
            thread_id: thread_id.to_string(),
            run_id: run_id.to_string(),
            outcome,
            ..Default::default()
        })
    }

    /// `RUN_FINISHED{outcome:{type:"success"}}`, naming unanswered frontend tool calls when
    /// there are any (INT-2).
    pub fn run_success(thread_id: &str, run_id: &str, pending: Vec<String>) -> Self {
        let pending_tool_call_ids = (!pending.is_empty()).then_some(pending);
        let outcome = RunOutcome::Success {
            pending_tool_call_ids,
        };
        Self::run_finished(thread_id, run_id, Some(outcome))
    }

    /// `RUN_FINISHED{outcome:{type:"interrupt",interrupts}}` (INT-1).
    pub fn run_interrupted(thread_id: &str, run_id: &str, interrupts: Vec<Interrupt>) -> Self {
        Self::run_finished(
            thread_id,
            run_id,
            Some(RunOutcome::Interrupt { interrupts }),
        )
    }

    /// `RUN_FINISHED{outcome:{type:"cancelled"}}` (INT-2).
    pub fn run_cancelled(thread_id: &str, run_id: &str) -> Self {
        Self::run_finished(thread_id, run_id, Some(RunOutcome::Cancelled))
    }

    pub fn run_error(message: impl Into<String>, code: Option<&str>) -> Self {
        Event::RunError(RunError {
            message: message.into(),
            code: code.map(str::to_string),
            ..Default::default()
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
            message_id: message_id.to_string(),
            tool_call_id: tool_call_id.to_string(),
            content: Content::Text(content.into()),
            role: Some(ToolRole::Tool),
            ..Default::default()
        })
    }

    pub fn state_snapshot(snapshot: Value) -> Self {
        Event::StateSnapshot(StateSnapshot {
            snapshot,
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
    let mut value = serde_json::json!({"rule": rule, "message": message});
    if !details.is_null() {
        value["details"] = details;
    }
    Event::custom(WARNING_EVENT_NAME, value)
}
