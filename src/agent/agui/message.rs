//! The messages of an AG-UI conversation (`Message`, discriminated by `role`), their content
//! parts and the tool calls an assistant message carries, as the 1.0 schema has them (see
//! [`super::input`] for the conventions).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::input::{non_null, object_non_null, object_required, Metadata};

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
    #[cfg(test)]
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

    #[cfg(test)]
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
