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
use serde::{Deserialize, Serialize, Serializer};
use serde_json::{Map, Value};

// ---------------------------------------------------------------------------------------------
// Hand-written serde: ProtoJSON readers accept an enum as its name or its number and map unknown
// names to the zero value (the reference server parses with ignore_unknown_fields, which does
// exactly that). Deriving would reject both.

macro_rules! proto_enum {
    ($(#[$doc:meta])* $name:ident { $($variant:ident = $num:literal => $wire:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub(crate) enum $name {
            #[default]
            $($variant),+
        }

        impl $name {
            pub(crate) fn as_str(self) -> &'static str {
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
    pub(crate) fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Failed | TaskState::Canceled | TaskState::Rejected
        )
    }

    /// Paused for the client; a blocking SendMessage returns here, and streams close here.
    pub(crate) fn is_interrupted(self) -> bool {
        matches!(self, TaskState::InputRequired | TaskState::AuthRequired)
    }

    /// Where a blocking SendMessage stops waiting and an SSE stream ends.
    pub(crate) fn ends_stream(self) -> bool {
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

// ---------------------------------------------------------------------------------------------
// Data model

/// `google.protobuf.Struct` on the wire: any JSON object.
pub(crate) type Metadata = Map<String, Value>;

/// The content oneof of a [`Part`]. Serialized flattened, so a part is `{"text": "…"}`,
/// `{"data": {…}, "mediaType": "…"}` and so on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum PartContent {
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
pub(crate) struct Part {
    pub(crate) content: PartContent,
    /// Metadata, file name and media type, boxed and absent when all three are: nearly every
    /// part is plain text, and tasks keep their messages' and artifacts' parts for the world's
    /// life (inline, the three made a part 112 bytes instead of 40).
    extras: Option<Box<PartExtras>>,
}

/// The rarely given fields of a [`Part`].
#[derive(Debug, Clone, PartialEq, Default)]
pub(crate) struct PartExtras {
    pub(crate) metadata: Option<Metadata>,
    pub(crate) filename: Option<String>,
    pub(crate) media_type: Option<String>,
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

/// A [`Part`] as it is written: every member optional, in the order of their JSON names.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct PartOut<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    filename: Option<&'a String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    media_type: Option<&'a String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<&'a Metadata>,
    #[serde(skip_serializing_if = "Option::is_none")]
    raw: Option<&'a String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    text: Option<&'a String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    url: Option<&'a String>,
}

impl Serialize for Part {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (mut data, mut raw, mut text, mut url) = (None, None, None, None);
        match &self.content {
            PartContent::Data(d) => data = Some(d),
            PartContent::Raw(r) => raw = Some(r),
            PartContent::Text(t) => text = Some(t),
            PartContent::Url(u) => url = Some(u),
        }
        let (filename, media_type, metadata) =
            (self.filename(), self.media_type(), self.metadata());
        let out = PartOut {
            data,
            filename,
            media_type,
            metadata,
            raw,
            text,
            url,
        };
        out.serialize(s)
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

    pub(crate) fn metadata(&self) -> Option<&Metadata> {
        self.extras.as_ref().and_then(|e| e.metadata.as_ref())
    }

    pub(crate) fn filename(&self) -> Option<&String> {
        self.extras.as_ref().and_then(|e| e.filename.as_ref())
    }

    pub(crate) fn media_type(&self) -> Option<&String> {
        self.extras.as_ref().and_then(|e| e.media_type.as_ref())
    }

    /// Only its content: no metadata, file name or media type.
    pub(crate) fn is_bare(&self) -> bool {
        self.extras.is_none()
    }

    /// Changes the extras; with nothing left in them they are none, so that equal parts compare
    /// equal (and a bare part allocates nothing).
    pub(crate) fn extras(mut self, f: impl FnOnce(&mut PartExtras)) -> Part {
        let mut extras = self.extras.take().map_or_else(PartExtras::default, |e| *e);
        f(&mut extras);
        self.extras = (extras != PartExtras::default()).then(|| Box::new(extras));
        self
    }

    pub(crate) fn text(text: impl Into<String>) -> Part {
        Part::with(PartContent::Text(text.into()))
    }

    pub(crate) fn data(data: Value) -> Part {
        Part::with(PartContent::Data(data))
    }

    pub(crate) fn url(url: impl Into<String>) -> Part {
        Part::with(PartContent::Url(url.into()))
    }

    /// From bytes; encodes them.
    pub(crate) fn raw(bytes: &[u8]) -> Part {
        Part::with(PartContent::Raw(STANDARD.encode(bytes)))
    }

    pub(crate) fn as_text(&self) -> Option<&str> {
        match &self.content {
            PartContent::Text(t) => Some(t),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Message {
    #[serde(skip_serializing_if = "Option::is_none", alias = "context_id")]
    pub(crate) context_id: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) extensions: Vec<String>,
    #[serde(alias = "message_id")]
    pub(crate) message_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) metadata: Option<Metadata>,
    pub(crate) parts: Vec<Part>,
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        alias = "reference_task_ids"
    )]
    pub(crate) reference_task_ids: Vec<String>,
    pub(crate) role: Role,
    #[serde(skip_serializing_if = "Option::is_none", alias = "task_id")]
    pub(crate) task_id: Option<String>,
}

impl Message {
    pub(crate) fn agent(message_id: impl Into<String>, parts: Vec<Part>) -> Message {
        Message {
            message_id: message_id.into(),
            role: Role::Agent,
            parts,
            ..Message::default()
        }
    }

    /// All text parts joined by newlines: what behaviour matching on "text" looks at.
    pub(crate) fn text(&self) -> String {
        self.parts
            .iter()
            .filter_map(Part::as_text)
            .collect::<Vec<_>>()
            .join("\n")
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskStatus {
    /// Boxed: most statuses have none, and a task keeps its status for the world's life (a
    /// message inline made every kept task ~180 bytes larger).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) message: Option<Box<Message>>,
    pub(crate) state: TaskState,
    /// ISO-8601 UTC with `Z` (SPEC §5.6.1); protobuf's Timestamp parser rejects other shapes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) timestamp: Option<String>,
}

impl TaskStatus {
    pub(crate) fn new(state: TaskState, timestamp: impl Into<String>) -> TaskStatus {
        TaskStatus {
            state,
            message: None,
            timestamp: Some(timestamp.into()),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Artifact {
    #[serde(alias = "artifact_id")]
    pub(crate) artifact_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) description: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) extensions: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) metadata: Option<Metadata>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) name: Option<String>,
    pub(crate) parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Task {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) artifacts: Vec<Artifact>,
    // Optional in the proto, but every task the server makes has one, and clients key on it.
    #[serde(default, alias = "context_id")]
    pub(crate) context_id: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) history: Vec<Message>,
    pub(crate) id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) metadata: Option<Metadata>,
    pub(crate) status: TaskStatus,
}

impl Task {
    /// The `historyLength` rule the reference server applies: keep the last N messages; 0 means
    /// none; absent means all.
    pub(crate) fn with_history_length(mut self, history_length: Option<i32>) -> Task {
        if let Some(n) = history_length {
            let keep = usize::try_from(n.max(0)).unwrap_or(0);
            let drop = self.history.len().saturating_sub(keep);
            self.history.drain(..drop);
        }
        self
    }

    /// Adds a message to the history, naming this task and its context.
    pub(crate) fn push_history(&mut self, mut m: Message) {
        m.task_id = Some(self.id.clone());
        m.context_id = Some(self.context_id.clone());
        self.history.push(m);
    }

    /// ListTasks leaves artifacts out unless `includeArtifacts` is true.
    pub(crate) fn without_artifacts(mut self) -> Task {
        self.artifacts.clear();
        self
    }
}

/// No `final` flag in 1.0: the server closes the stream after a terminal or interrupted state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskStatusUpdateEvent {
    #[serde(alias = "context_id")]
    pub(crate) context_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) metadata: Option<Metadata>,
    pub(crate) status: TaskStatus,
    #[serde(alias = "task_id")]
    pub(crate) task_id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskArtifactUpdateEvent {
    /// This chunk extends an artifact with the same id sent earlier.
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) append: bool,
    pub(crate) artifact: Artifact,
    #[serde(alias = "context_id")]
    pub(crate) context_id: String,
    #[serde(default, skip_serializing_if = "is_false", alias = "last_chunk")]
    pub(crate) last_chunk: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) metadata: Option<Metadata>,
    #[serde(alias = "task_id")]
    pub(crate) task_id: String,
}

/// One event of a stream (and the body of a push notification): a single-key object naming the
/// oneof member, `{"task": …}`, `{"message": …}`, `{"statusUpdate": …}`, `{"artifactUpdate": …}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum StreamResponse {
    Task(Task),
    Message(Message),
    StatusUpdate(TaskStatusUpdateEvent),
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

impl StreamResponse {
    /// Whether a stream must close after this event: a direct Message, or a terminal or
    /// interrupted state.
    pub(crate) fn ends_stream(&self) -> bool {
        match self {
            StreamResponse::Message(_) => true,
            StreamResponse::Task(t) => t.status.state.ends_stream(),
            StreamResponse::StatusUpdate(u) => u.status.state.ends_stream(),
            StreamResponse::ArtifactUpdate(_) => false,
        }
    }
}

/// The result of SendMessage: wrapped like a StreamResponse, never a bare Task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum SendMessageResponse {
    Task(Task),
    Message(Message),
}

// ---------------------------------------------------------------------------------------------
// Small helpers

pub(crate) fn is_false(b: &bool) -> bool {
    !*b
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::a2a::params::{
        AuthenticationInfo, ListTaskPushNotificationConfigsResponse, ListTasksResponse,
        TaskPushNotificationConfig,
    };
    use serde::de::DeserializeOwned;
    use serde_json::json;

    /// Decode `doc` as `T`, encode it again, and require the same JSON: proves field names,
    /// omission of absent fields and oneof wrapping match the captured wire text.
    fn round_trip<T: DeserializeOwned + Serialize>(doc: Value) -> T {
        let typed: T = serde_json::from_value(doc.clone()).expect("decodes");
        assert_eq!(serde_json::to_value(&typed).unwrap(), doc);
        typed
    }

    /// A task with nothing but its ids and a state without a timestamp.
    fn bare_task(id: &str, context_id: &str, state: TaskState) -> Task {
        let status = TaskStatus {
            state,
            ..TaskStatus::default()
        };
        let (id, context_id) = (id.into(), context_id.into());
        Task {
            id,
            context_id,
            status,
            ..Task::default()
        }
    }

    /// Every type that goes out writes its keys sorted: the text of its `Value` (a sorted map).
    #[test]
    fn keys_are_written_in_sorted_order() {
        let md = |k: &str| -> Metadata {
            let mut m = Map::new();
            m.insert(k.into(), json!({"z": 1, "a": [1.5, "x"]}));
            m
        };
        let parts = vec![
            Part::text("hi \"there\"\n"),
            Part::data(json!({"b": 1, "a": {"d": 2, "c": 3}}))
                .extras(|e| e.filename = Some("f.json".into()))
                .extras(|e| e.media_type = Some("application/json".into()))
                .extras(|e| e.metadata = Some(md("m"))),
            Part::raw(b"bytes").extras(|e| e.media_type = Some("application/octet-stream".into())),
            Part::url("http://x/y").extras(|e| e.filename = Some("y".into())),
        ];
        let message = Message {
            context_id: Some("ctx-1".into()),
            extensions: vec!["urn:x".into()],
            message_id: "m-1".into(),
            metadata: Some(md("revision")),
            parts: parts.clone(),
            reference_task_ids: vec!["task-0".into()],
            role: Role::User,
            task_id: Some("task-1".into()),
        };
        let artifact = Artifact {
            artifact_id: "a".into(),
            description: Some("d".into()),
            extensions: vec!["urn:e".into()],
            metadata: Some(md("k")),
            name: Some("n".into()),
            parts,
        };
        let status = TaskStatus {
            message: Some(Box::new(message.clone())),
            state: TaskState::Completed,
            timestamp: Some("2026-01-01T00:00:00.000Z".into()),
        };
        let task = Task {
            artifacts: vec![artifact.clone()],
            context_id: "ctx-1".into(),
            history: vec![message.clone()],
            id: "task-1".into(),
            metadata: Some(md("revision")),
            status: status.clone(),
        };
        let config = TaskPushNotificationConfig {
            authentication: Some(AuthenticationInfo {
                credentials: Some("c".into()),
                scheme: "Bearer".into(),
            }),
            id: Some("h".into()),
            task_id: Some("t".into()),
            tenant: Some("x".into()),
            token: Some("tk".into()),
            url: "http://127.0.0.1:1/h".into(),
        };
        fn same<T: Serialize>(v: &T) {
            let direct = serde_json::to_string(v).unwrap();
            assert_eq!(direct, serde_json::to_value(v).unwrap().to_string());
        }
        same(&SendMessageResponse::Task(task.clone()));
        same(&SendMessageResponse::Message(message.clone()));
        same(&StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            context_id: "c".into(),
            metadata: Some(md("r")),
            status,
            task_id: "t".into(),
        }));
        same(&StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
            append: true,
            artifact,
            context_id: "c".into(),
            last_chunk: true,
            metadata: Some(md("r")),
            task_id: "t".into(),
        }));
        same(&ListTasksResponse {
            next_page_token: "1".into(),
            page_size: 1,
            tasks: vec![task],
            total_size: 2,
        });
        same(&ListTaskPushNotificationConfigsResponse {
            configs: vec![config],
            next_page_token: "x".into(),
        });
    }

    #[test]
    fn send_message_result_is_wrapped() {
        let task = bare_task("t1", "c1", TaskState::Completed);
        let v = serde_json::to_value(SendMessageResponse::Task(task)).unwrap();
        assert_eq!(
            v,
            json!({"task": {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_COMPLETED"}}})
        );
        let msg = Message::agent("m1", vec![Part::text("hello")]);
        let v = serde_json::to_value(SendMessageResponse::Message(msg)).unwrap();
        assert_eq!(
            v,
            json!({"message": {"messageId": "m1", "role": "ROLE_AGENT", "parts": [{"text": "hello"}]}})
        );
    }

    #[test]
    fn a_part_keeps_its_rare_fields_apart_and_only_when_given() {
        // Tasks keep their parts for the world's life: a plain one stays small.
        assert!(std::mem::size_of::<Part>() <= 48);
        let bare = Part::text("a");
        assert!(bare.is_bare());
        let named = Part::text("a").extras(|e| e.filename = Some("f.txt".into()));
        assert_eq!(named.filename().map(String::as_str), Some("f.txt"));
        assert!(named.media_type().is_none() && named.metadata().is_none());
        assert_eq!(named.clone().extras(|e| e.filename = None), bare);
        let empty_meta = Part::text("a").extras(|e| e.metadata = Some(Map::new()));
        assert_ne!(empty_meta, bare);
        assert_eq!(
            serde_json::to_value(&empty_meta).unwrap(),
            json!({"metadata": {}, "text": "a"})
        );
        let read: Part = serde_json::from_value(json!({"text": "a", "filename": null})).unwrap();
        assert!(read.is_bare());
    }

    #[test]
    fn parts_are_oneofs_without_kind() {
        let doc = json!([
            {"text": "hello", "mediaType": "text/plain"},
            {"raw": "aGk=", "filename": "hi.txt", "mediaType": "text/plain"},
            {"url": "https://example.invalid/report.pdf", "filename": "report.pdf", "mediaType": "application/pdf"},
            {"data": {"account": "acct-9", "amount": 100}, "metadata": {"revision": "2"}},
            {"data": [1, "two", null]}
        ]);
        let parts: Vec<Part> = round_trip(doc);
        assert_eq!(parts[1].content, PartContent::Raw("aGk=".into()));
        assert_eq!(
            serde_json::to_value(Part::raw(b"hi").extras(|e| e.filename = Some("hi.txt".into())))
                .unwrap(),
            json!({"raw": "aGk=", "filename": "hi.txt"})
        );
        // 0.3 clients still send `kind`; it is ignored, and never emitted.
        let old: Part = serde_json::from_value(json!({"kind": "text", "text": "hi"})).unwrap();
        assert_eq!(serde_json::to_value(old).unwrap(), json!({"text": "hi"}));
        // A part with no content is not a part.
        assert!(serde_json::from_value::<Part>(json!({"mediaType": "text/plain"})).is_err());
    }

    #[test]
    fn enums_use_proto_names_and_tolerate_unknowns() {
        let all = [
            (TaskState::Unspecified, "TASK_STATE_UNSPECIFIED"),
            (TaskState::Submitted, "TASK_STATE_SUBMITTED"),
            (TaskState::Working, "TASK_STATE_WORKING"),
            (TaskState::Completed, "TASK_STATE_COMPLETED"),
            (TaskState::Failed, "TASK_STATE_FAILED"),
            (TaskState::Canceled, "TASK_STATE_CANCELED"),
            (TaskState::InputRequired, "TASK_STATE_INPUT_REQUIRED"),
            (TaskState::Rejected, "TASK_STATE_REJECTED"),
            (TaskState::AuthRequired, "TASK_STATE_AUTH_REQUIRED"),
        ];
        let state = |v: Value| serde_json::from_value::<TaskState>(v).unwrap();
        let role = |v: Value| serde_json::from_value::<Role>(v).unwrap();
        for (number, (s, name)) in all.into_iter().enumerate() {
            assert_eq!(serde_json::to_value(s).unwrap(), json!(name));
            assert_eq!((state(json!(name)), state(json!(number))), (s, s));
        }
        assert_eq!(state(json!("completed")), TaskState::Unspecified);
        assert_eq!(state(json!(99)), TaskState::Unspecified);
        assert_eq!(
            serde_json::to_value(Role::Agent).unwrap(),
            json!("ROLE_AGENT")
        );
        assert_eq!(role(json!("ROLE_USER")), Role::User);
        assert_eq!(role(json!("user")), Role::Unspecified);

        let terminal: Vec<_> = all
            .iter()
            .map(|(s, _)| *s)
            .filter(|s| s.is_terminal())
            .collect();
        assert_eq!(
            terminal,
            [
                TaskState::Completed,
                TaskState::Failed,
                TaskState::Canceled,
                TaskState::Rejected
            ]
        );
        assert!(TaskState::InputRequired.ends_stream() && !TaskState::Working.ends_stream());
    }

    #[test]
    fn task_with_everything_round_trips_and_optional_fields_are_omitted() {
        let doc = json!({"id": "t1", "contextId": "c1",
            "status": {"state": "TASK_STATE_INPUT_REQUIRED", "timestamp": "2026-11-30T08:20:56.819Z",
                "message": {"messageId": "m2", "role": "ROLE_AGENT", "parts": [{"text": "which account?"}],
                    "taskId": "t1", "contextId": "c1"}},
            "artifacts": [{"artifactId": "a1", "name": "result", "description": "d",
                "parts": [{"text": "Pay vendor account cny-1"}, {"data": {"account": "cny-1"}}],
                "metadata": {"revision": "1"}, "extensions": ["urn:x"]}],
            "history": [{"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "go"}],
                "referenceTaskIds": ["t0"], "extensions": ["urn:y"], "metadata": {"revision": "1"}}],
            "metadata": {"revision": "1"}});
        let task: Task = round_trip(doc);
        assert_eq!(task.clone().with_history_length(Some(0)).history.len(), 0);
        assert_eq!(task.clone().with_history_length(None).history.len(), 1);
        assert!(task.without_artifacts().artifacts.is_empty());

        let bare = bare_task("t", "c", TaskState::Working);
        let s = serde_json::to_string(&bare).unwrap();
        assert!(!s.contains("null"), "{s}");
        // Keys in sorted order: the order the JSON-RPC answers have always had on the wire.
        assert_eq!(
            s,
            r#"{"contextId":"c","id":"t","status":{"state":"TASK_STATE_WORKING"}}"#
        );
    }

    #[test]
    fn artifact_chunks_carry_append_and_last_chunk_only_when_set() {
        let doc = json!({"taskId": "t", "contextId": "c", "append": true, "lastChunk": true,
            "artifact": {"artifactId": "a", "parts": [{"text": "tail"}]}, "metadata": {"revision": "1"}});
        let ev: TaskArtifactUpdateEvent = round_trip(doc);
        assert!(ev.append && ev.last_chunk);
        let first = TaskArtifactUpdateEvent {
            append: false,
            last_chunk: false,
            ..ev
        };
        let v = serde_json::to_value(first).unwrap();
        assert!(v.get("append").is_none() && v.get("lastChunk").is_none());
    }

    #[test]
    fn push_body_is_a_bare_stream_response() {
        let ev = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: "t".into(),
            context_id: "c".into(),
            status: TaskStatus::new(TaskState::Completed, "2026-11-30T09:02:59.676Z"),
            metadata: None,
        });
        assert_eq!(
            serde_json::to_value(&ev).unwrap(),
            json!({"statusUpdate": {"taskId": "t", "contextId": "c",
            "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-11-30T09:02:59.676Z"}}})
        );
    }
}
