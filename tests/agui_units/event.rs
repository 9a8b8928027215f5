use crate::support::{input, sse_frame, user};
use doubleagent::agent::agui::event::*;
use serde_json::json;
use serde_json::Value;

fn to_json(e: &Event) -> String {
    serde_json::to_string(e).unwrap()
}

#[test]
fn every_event_type_round_trips_with_its_type_name() {
    let mut events = vec![
        Event::text_start("m1"),
        Event::text_content("m1", "hello"),
        Event::text_end("m1"),
        Event::tool_call_start("tc1", "transfer_funds", Some("m1")),
        Event::tool_call_args("tc1", "{\"to\":\"acct-9\"}"),
        Event::tool_call_end("tc1"),
        Event::tool_call_result("m2", "tc1", "{\"id\":\"act-1\"}"),
        Event::state_snapshot(json!({"balance": 5})),
        Event::MessagesSnapshot(MessagesSnapshot {
            messages: vec![user("u1", "hi")],
            ..Default::default()
        }),
        Event::custom("doubleagent.warning", json!({"rule": "PROD-2"})),
        Event::run_started(&input("t", "r")),
        Event::run_success("t", "r", vec![]),
        Event::run_error("boom", None),
        Event::StepStarted(StepStarted {
            step_name: "beforeTools".into(),
            ..Default::default()
        }),
        Event::StepFinished(StepFinished {
            step_name: "beforeTools".into(),
            ..Default::default()
        }),
    ];
    // The types doubleagent never emits, as a producer would send them.
    let sent = json!([
        {"type": "TEXT_MESSAGE_CHUNK", "delta": "x"},
        {"type": "TOOL_CALL_CHUNK", "toolCallId": "tc2"},
        {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "/balance", "value": 4}]},
        {"type": "ACTIVITY_SNAPSHOT", "messageId": "a", "activityType": "plan", "content": {}},
        {"type": "ACTIVITY_DELTA", "messageId": "a", "activityType": "plan",
         "patch": [{"op": "remove", "path": "/x"}]},
        {"type": "RAW", "event": {"k": 1}, "source": "fake"},
        {"type": "REASONING_START", "messageId": "rm"},
        {"type": "REASONING_MESSAGE_START", "messageId": "rm", "role": "reasoning"},
        {"type": "REASONING_MESSAGE_CONTENT", "messageId": "rm", "delta": "d"},
        {"type": "REASONING_MESSAGE_END", "messageId": "rm"},
        {"type": "REASONING_MESSAGE_CHUNK"},
        {"type": "REASONING_END", "messageId": "rm"},
        {"type": "REASONING_ENCRYPTED_VALUE", "subtype": "tool-call", "entityId": "tc1",
         "encryptedValue": "e"},
        {"type": "SUBAGENT_STARTED", "subagentRunId": "sa1", "name": "helper"},
        {"type": "SUBAGENT_FINISHED", "subagentRunId": "sa1",
         "outcome": {"type": "suspended", "interruptIds": ["i1"]}},
        {"type": "SUBAGENT_ERROR", "subagentRunId": "sa1", "message": "x"},
    ]);
    events.extend(serde_json::from_value::<Vec<Event>>(sent).unwrap());
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
    let mut input = input("t", "r2");
    input.protocol_version = Some("1.3".into());
    input.parent_run_id = Some("r1".into());
    assert_eq!(
        to_json(&Event::run_started(&input)),
        r#"{"type":"RUN_STARTED","threadId":"t","runId":"r2","protocolVersion":"1.0","parentRunId":"r1"}"#
    );
}

#[test]
fn event_base_fields_and_unknown_members_serialize_after_the_body() {
    let step = StepStarted {
        step_name: "s".into(),
        ..Default::default()
    };
    let mut e = Event::StepStarted(step).at(1_700_000_000_000);
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
    assert!(serde_json::from_str::<Event>(r#"{"type":"CUSTOM","name":"x","value":null}"#).is_ok());
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
