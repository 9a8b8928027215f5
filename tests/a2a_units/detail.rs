use doubleagent::agent::a2a::detail::*;
use doubleagent::agent::a2a::rpc::Binding;
use doubleagent::agent::a2a::types::{Message, Part, Role};
use serde_json::{json, Value};

fn value(detail: &MessageDetail<'_>) -> Value {
    serde_json::to_value(detail).unwrap()
}

#[test]
fn a_plain_user_message_is_recorded_by_its_text_alone() {
    let msg = Message {
        message_id: "m-1".into(),
        parts: vec![Part::text("go")],
        role: Role::User,
        ..Message::default()
    };
    let call = MessageCall {
        method: "SendMessage",
        binding: Binding::JsonRpc,
        msg: &msg,
        text: "go",
        revision: None,
    };
    let new = Taken::New {
        behavior: None,
        repeat_of: None,
    };
    assert_eq!(
        value(&call.detail(Some("task-1"), Some("ctx-1"), new)),
        json!({"behavior": null, "binding": "JSONRPC", "context_id": "ctx-1", "message_id": "m-1",
            "method": "SendMessage", "repeat_of": null, "revision": null,
            "task_id": "task-1", "text": "go"})
    );
    let follow = Taken::FollowUp {
        resumes: true,
        repeat_of: Some("task-0"),
    };
    let agent = Message {
        role: Role::Agent,
        parts: vec![Part::text("go"), Part::url("http://u")],
        ..msg.clone()
    };
    let call = MessageCall {
        msg: &agent,
        binding: Binding::HttpJson,
        ..call
    };
    assert_eq!(
        value(&call.detail(Some("task-1"), None, follow)),
        json!({"binding": "HTTP+JSON", "context_id": null, "follow_up": true, "message_id": "m-1",
            "method": "SendMessage", "parts": [{"text": "go"}, {"url": "http://u"}],
            "repeat_of": "task-0", "resumes": true, "revision": null, "role": "ROLE_AGENT",
            "task_id": "task-1", "text": "go"})
    );
    let dup = value(&call.detail(None, Some("c"), Taken::Duplicate { of: "msg-2" }));
    assert_eq!(dup["duplicate_of"], "msg-2");
    assert!(dup.get("repeat_of").is_none() && dup.get("behavior").is_none());
}
