use doubleagent::agent::a2a::params::{
    AuthenticationInfo, ListTaskPushNotificationConfigsResponse, ListTasksResponse,
    TaskPushNotificationConfig,
};
use doubleagent::agent::a2a::types::*;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::json;
use serde_json::{Map, Value};

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
