//! The A2A 1.0 data model in its ProtoJSON form: tasks, messages, parts, artifacts and stream
//! events (the methods' params and results are [`super::params`]).
//!
//! What this encodes, and why it matters to a real client (source of truth:
//! the A2A 1.0 specification, checked against the a2a-sdk 1.3.0 client and server):
//!
//! * **ProtoJSON.** Fields are camelCase, enums are their proto names (`TASK_STATE_COMPLETED`,
//!   `ROLE_AGENT`). The Python client silently turns a lowercase `"completed"` into
//!   `TASK_STATE_UNSPECIFIED`, so a wrong spelling is a silent bug, not an error.
//! * **Absent means omitted.** Optional fields are skipped when unset, never sent as `null`;
//!   protobuf's JSON parser treats `null` differently per field kind, and omission is what the
//!   reference server emits.
//! * **Oneofs are single-key objects.** `Part` carries exactly one of `text | raw | url | data`
//!   beside its other fields (no `kind` discriminator, that was 0.3). `StreamResponse` and the
//!   `SendMessage` result wrap their payload: `{"task": …}`, `{"statusUpdate": …}`. A bare Task as
//!   the SendMessage result makes the client fail with "Response has neither task nor message".
//! * **Tolerant input.** Unknown incoming fields are ignored (0.3 clients still send `kind`), and
//!   unknown enum names decode to `*_UNSPECIFIED`, as the reference server does.
//!
//! The types that go out declare their fields in the order of their JSON names, so the derived
//! serialisation writes every object's keys sorted, the text the answers have always had.

use std::fmt;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde::de::{self, Deserializer, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

// Hand-written serde: ProtoJSON readers accept an enum as its name or its number and map unknown
// names to the zero value (the reference server parses with ignore_unknown_fields, which does
// exactly that). Deriving would reject both.

macro_rules! proto_enum {
    ($(#[$doc:meta])* $name:ident { $($variant:ident = $num:literal => $wire:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub enum $name {
            #[default]
            $($variant),+
        }

        impl $name {
            pub fn as_str(self) -> &'static str {
                match self { $($name::$variant => $wire),+ }
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl Visitor<'_> for V {
                    type Value = $name;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str(concat!(stringify!($name), " name or number"))
                    }
                    // Unknown names and numbers read as the `*_UNSPECIFIED` value.
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$name, E> {
                        Ok(match v { $($wire => $name::$variant,)+ _ => $name::default() })
                    }
                    fn visit_i64<E: de::Error>(self, v: i64) -> Result<$name, E> {
                        Ok(match v { $($num => $name::$variant,)+ _ => $name::default() })
                    }
                    fn visit_u64<E: de::Error>(self, v: u64) -> Result<$name, E> {
                        // Beyond any enum number: unknown, so the zero value.
                        i64::try_from(v).map_or(Ok($name::default()), |v| self.visit_i64(v))
                    }
                }
                d.deserialize_any(V)
            }
        }
    };
}

proto_enum!(
    /// Task lifecycle state, spelled as in the proto (PROTO `enum TaskState`).
    TaskState {
        Unspecified = 0 => "TASK_STATE_UNSPECIFIED",
        Submitted = 1 => "TASK_STATE_SUBMITTED",
        Working = 2 => "TASK_STATE_WORKING",
        Completed = 3 => "TASK_STATE_COMPLETED",
        Failed = 4 => "TASK_STATE_FAILED",
        Canceled = 5 => "TASK_STATE_CANCELED",
        InputRequired = 6 => "TASK_STATE_INPUT_REQUIRED",
        Rejected = 7 => "TASK_STATE_REJECTED",
        AuthRequired = 8 => "TASK_STATE_AUTH_REQUIRED",
    }
);

impl TaskState {
    /// No further transitions, no restart: messages get -32004, cancels get -32002.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Failed | TaskState::Canceled | TaskState::Rejected
        )
    }

    /// Paused for the client; a blocking SendMessage returns here, and streams close here.
    pub fn is_interrupted(self) -> bool {
        matches!(self, TaskState::InputRequired | TaskState::AuthRequired)
    }

    /// Where a blocking SendMessage stops waiting and an SSE stream ends.
    pub fn ends_stream(self) -> bool {
        self.is_terminal() || self.is_interrupted()
    }
}

proto_enum!(
    /// Message author (PROTO `enum Role`).
    Role {
        Unspecified = 0 => "ROLE_UNSPECIFIED",
        User = 1 => "ROLE_USER",
        Agent = 2 => "ROLE_AGENT",
    }
);

/// `google.protobuf.Struct` on the wire: any JSON object.
pub type Metadata = Map<String, Value>;

/// The content oneof of a [`Part`]. Serialized flattened, so a part is `{"text": "…"}`,
/// `{"data": {…}, "mediaType": "…"}` and so on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PartContent {
    Text(String),
    /// Proto `bytes`: standard base64 text on the wire, with padding. Kept encoded, so
    /// a scenario's bytes round-trip exactly and nothing here needs a base64 decoder.
    Raw(String),
    /// A file by reference.
    Url(String),
    /// Any JSON value (`google.protobuf.Value`).
    Data(Value),
}

/// One piece of a message or artifact. No `kind` field in 1.0; an incoming 0.3 `kind` is ignored.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(from = "WirePart")]
pub struct Part {
    pub content: PartContent,
    /// Metadata, file name and media type, boxed and absent when all three are: nearly every
    /// part is plain text, and tasks keep their parts for the world's life.
    extras: Option<Box<PartExtras>>,
}

/// The rarely given fields of a [`Part`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PartExtras {
    pub metadata: Option<Metadata>,
    pub filename: Option<String>,
    pub media_type: Option<String>,
}

/// A [`Part`] as `serde` reads it (the same fields, inline).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WirePart {
    #[serde(flatten)]
    content: PartContent,
    #[serde(default)]
    metadata: Option<Metadata>,
    #[serde(default)]
    filename: Option<String>,
    #[serde(default, alias = "media_type")]
    media_type: Option<String>,
}

/// Written with its members in the order of their JSON names: `data` before the extras, `raw`,
/// `text` and `url` after them.
impl Serialize for Part {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(None)?;
        if let PartContent::Data(d) = &self.content {
            m.serialize_entry("data", d)?;
        }
        if let Some(filename) = self.filename() {
            m.serialize_entry("filename", filename)?;
        }
        if let Some(media_type) = self.media_type() {
            m.serialize_entry("mediaType", media_type)?;
        }
        if let Some(metadata) = self.metadata() {
            m.serialize_entry("metadata", metadata)?;
        }
        match &self.content {
            PartContent::Raw(r) => m.serialize_entry("raw", r)?,
            PartContent::Text(t) => m.serialize_entry("text", t)?,
            PartContent::Url(u) => m.serialize_entry("url", u)?,
            PartContent::Data(_) => {}
        }
        m.end()
    }
}

impl From<WirePart> for Part {
    fn from(w: WirePart) -> Part {
        Part::with(w.content).extras(|e| {
            (e.metadata, e.filename, e.media_type) = (w.metadata, w.filename, w.media_type)
        })
    }
}

impl Part {
    fn with(content: PartContent) -> Part {
        Part {
            content,
            extras: None,
        }
    }

    pub fn metadata(&self) -> Option<&Metadata> {
        self.extras.as_ref().and_then(|e| e.metadata.as_ref())
    }

    pub fn filename(&self) -> Option<&String> {
        self.extras.as_ref().and_then(|e| e.filename.as_ref())
    }

    pub fn media_type(&self) -> Option<&String> {
        self.extras.as_ref().and_then(|e| e.media_type.as_ref())
    }

    /// Only its content: no metadata, file name or media type.
    pub fn is_bare(&self) -> bool {
        self.extras.is_none()
    }

    /// Changes the extras; with nothing left in them they are none, so that equal parts compare
    /// equal (and a bare part allocates nothing).
    pub fn extras(mut self, f: impl FnOnce(&mut PartExtras)) -> Part {
        let mut extras = self.extras.take().map_or_else(PartExtras::default, |e| *e);
        f(&mut extras);
        self.extras = (extras != PartExtras::default()).then(|| Box::new(extras));
        self
    }

    pub fn text(text: impl Into<String>) -> Part {
        Part::with(PartContent::Text(text.into()))
    }

    pub fn data(data: Value) -> Part {
        Part::with(PartContent::Data(data))
    }

    pub fn url(url: impl Into<String>) -> Part {
        Part::with(PartContent::Url(url.into()))
    }

    /// From bytes; encodes them.
    pub fn raw(bytes: &[u8]) -> Part {
        Part::with(PartContent::Raw(STANDARD.encode(bytes)))
    }

    pub fn as_text(&self) -> Option<&str> {
        match &self.content {
            PartContent::Text(t) => Some(t),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    #[serde(skip_serializing_if = "Option::is_none", alias = "context_id")]
    pub context_id: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    #[serde(alias = "message_id")]
    pub message_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    pub parts: Vec<Part>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        alias = "reference_task_ids"
    )]
    pub reference_task_ids: Vec<String>,
    pub role: Role,
    #[serde(skip_serializing_if = "Option::is_none", alias = "task_id")]
    pub task_id: Option<String>,
}

impl Message {
    pub fn agent(message_id: impl Into<String>, parts: Vec<Part>) -> Message {
        Message {
            message_id: message_id.into(),
            role: Role::Agent,
            parts,
            ..Message::default()
        }
    }

    /// All text parts joined by newlines: what behaviour matching on "text" looks at.
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .filter_map(Part::as_text)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    /// Boxed: most statuses have none, and a task keeps its status for the world's life.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<Box<Message>>,
    pub state: TaskState,
    /// ISO-8601 UTC with `Z` (SPEC §5.6.1); protobuf's Timestamp parser rejects other shapes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

impl TaskStatus {
    pub fn new(state: TaskState, timestamp: impl Into<String>) -> TaskStatus {
        TaskStatus {
            state,
            message: None,
            timestamp: Some(timestamp.into()),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    #[serde(alias = "artifact_id")]
    pub artifact_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    // Optional in the proto, but every task the server makes has one, and clients key on it.
    #[serde(default, alias = "context_id")]
    pub context_id: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Message>,
    pub id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    pub status: TaskStatus,
}

impl Task {
    /// The `historyLength` rule the reference server applies: keep the last N messages; 0 means
    /// none; absent means all.
    pub fn with_history_length(mut self, history_length: Option<i32>) -> Task {
        if let Some(n) = history_length {
            let keep = usize::try_from(n.max(0)).unwrap_or(0);
            let drop = self.history.len().saturating_sub(keep);
            self.history.drain(..drop);
        }
        self
    }

    /// Adds a message to the history, naming this task and its context.
    pub fn push_history(&mut self, mut m: Message) {
        m.task_id = Some(self.id.clone());
        m.context_id = Some(self.context_id.clone());
        self.history.push(m);
    }

    /// ListTasks leaves artifacts out unless `includeArtifacts` is true.
    pub fn without_artifacts(mut self) -> Task {
        self.artifacts.clear();
        self
    }
}

/// No `final` flag in 1.0: the server closes the stream after a terminal or interrupted state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    #[serde(alias = "context_id")]
    pub context_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    pub status: TaskStatus,
    #[serde(alias = "task_id")]
    pub task_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    /// This chunk extends an artifact with the same id sent earlier.
    #[serde(default, skip_serializing_if = "is_false")]
    pub append: bool,
    pub artifact: Artifact,
    #[serde(alias = "context_id")]
    pub context_id: String,
    #[serde(default, skip_serializing_if = "is_false", alias = "last_chunk")]
    pub last_chunk: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Metadata>,
    #[serde(alias = "task_id")]
    pub task_id: String,
}

/// One event of a stream (and the body of a push notification): a single-key object naming the
/// oneof member, `{"task": …}`, `{"message": …}`, `{"statusUpdate": …}`, `{"artifactUpdate": …}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum StreamResponse {
    Task(Task),
    Message(Message),
    StatusUpdate(TaskStatusUpdateEvent),
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

impl StreamResponse {
    /// Whether a stream must close after this event: a direct Message, or a terminal or
    /// interrupted state.
    pub fn ends_stream(&self) -> bool {
        match self {
            StreamResponse::Message(_) => true,
            StreamResponse::Task(t) => t.status.state.ends_stream(),
            StreamResponse::StatusUpdate(u) => u.status.state.ends_stream(),
            StreamResponse::ArtifactUpdate(_) => false,
        }
    }
}

/// The result of SendMessage: wrapped like a StreamResponse, never a bare Task.
pub type SendMessageResponse = SendMessageResponseOf<Task>;

/// [`SendMessageResponse`] with the task held as `T`: a blocking call's answer is written from
/// the task table's own (a `Cow`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SendMessageResponseOf<T> {
    Task(T),
    Message(Message),
}

pub fn is_false(b: &bool) -> bool {
    !*b
}
