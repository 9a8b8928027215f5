//! The messages of an AG-UI conversation (`Message`, discriminated by `role`), their content
//! parts and the tool calls an assistant message carries, as the 1.0 schema has them (see
//! [`super::wire`] for the conventions).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::wire::{object_required, wire};

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
    /// The tool calls an assistant message carries (none for another role).
    pub fn tool_calls(&self) -> &[ToolCall] {
        match self {
            Message::Assistant(a) => a.tool_calls.as_deref().unwrap_or_default(),
            _ => &[],
        }
    }

    /// The tool call a tool message answers.
    pub fn answers(&self) -> Option<&str> {
        match self {
            Message::Tool(t) => Some(&t.tool_call_id),
            _ => None,
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
}

wire! {
    /// Developer and system messages.
    pub struct TextMessage {
        id: String,
        content: String,
        name?: String,
        encrypted_value?: String,
        subagent_run_id?: String,
        metadata?: Metadata,
        #[serde(flatten)] extra: Map<String, Value>,
    }
}

wire! {
    /// A message from the agent; `content` is optional because a turn may be tool calls only.
    pub struct AssistantMessage {
        id: String,
        content?: String,
        tool_calls?: Vec<ToolCall>,
        name?: String,
        encrypted_value?: String,
        subagent_run_id?: String,
        metadata?: Metadata,
        #[serde(flatten)] extra: Map<String, Value>,
    }
}

wire! {
    #[derive(Default)]
    pub struct UserMessage {
        id: String,
        content: Content,
        name?: String,
        encrypted_value?: String,
        subagent_run_id?: String,
        metadata?: Metadata,
        #[serde(flatten)] extra: Map<String, Value>,
    }
}

wire! {
    /// What a tool returned, as a conversation message. Carries no `name` (TanStack sends one
    /// anyway: it lands in `extra`).
    pub struct ToolMessage {
        id: String,
        content: Content,
        tool_call_id: String,
        error?: String,
        encrypted_value?: String,
        subagent_run_id?: String,
        metadata?: Metadata,
        #[serde(flatten)] extra: Map<String, Value>,
    }
}

wire! {
    /// Structured progress materialised as a message (the client never sends these back).
    pub struct ActivityMessage {
        id: String,
        activity_type: String,
        #[serde(deserialize_with = "object_required")]
        content: Map<String, Value>,
        subagent_run_id?: String,
        metadata?: Metadata,
        #[serde(flatten)] extra: Map<String, Value>,
    }
}

wire! {
    /// A span of reasoning materialised as a message.
    pub struct ReasoningMessage {
        id: String,
        content: String,
        encrypted_value?: String,
        subagent_run_id?: String,
        metadata?: Metadata,
        #[serde(flatten)] extra: Map<String, Value>,
    }
}

/// A user or tool message body: a string or a list of parts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Content {
    Text(String),
    Parts(Vec<ContentPart>),
}

impl Default for Content {
    /// Empty text (so that every event struct has a default).
    fn default() -> Self {
        Content::Text(String::new())
    }
}

/// One part of a message body, discriminated by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum ContentPart {
    Text(TextPart),
    Image(MediaPart),
    Audio(MediaPart),
    Video(MediaPart),
    Document(MediaPart),
}

wire! {
    pub struct TextPart {
        id?: String,
        text: String,
        metadata?: Value,
    }
}

wire! {
    /// The body of an image/audio/video/document part.
    pub struct MediaPart {
        id?: String,
        source: PartSource,
        metadata?: Value,
    }
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
    Url(UrlSource),
    File(FileSource),
}

wire! {
    pub struct UrlSource {
        value: String,
        mime_type?: String,
    }
}

wire! {
    /// A media part's bytes in a file a provider holds.
    pub struct FileSource {
        value: String,
        provider?: String,
        mime_type?: String,
    }
}

wire! {
    /// A call an assistant message made.
    pub struct ToolCall {
        id: String,
        /// Always `"function"`.
        #[serde(rename = "type")]
        kind: FunctionKind,
        function: FunctionCall,
        encrypted_value?: String,
        metadata?: Metadata,
        #[serde(flatten)] extra: Map<String, Value>,
    }
}

/// The literal `"function"`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FunctionKind {
    #[default]
    Function,
}

wire! {
    /// Name and JSON-encoded arguments of a tool call.
    pub struct FunctionCall {
        name: String,
        arguments: String,
        #[serde(flatten)] extra: Map<String, Value>,
    }
}
