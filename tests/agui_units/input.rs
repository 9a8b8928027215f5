use crate::support::{self, unknown_members};
use doubleagent::agent::agui::input::*;
use doubleagent::agent::agui::interrupt::*;
use doubleagent::agent::agui::message::*;
use doubleagent::agent::agui::sse::accepts_event_stream;
use serde_json::json;
use serde_json::Value;

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
    assert!(unknown_members(&input).is_empty());
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
    assert_eq!(unknown_members(&input), vec!["data", "messages[2].name"]);
    input.strip_unknown();
    assert!(unknown_members(&input).is_empty());
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
    let ok = RunAgentInput::parse(br#"{"threadId":"t","runId":"r","messages":[],"state":null}"#)
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
            unknown_members(&RunAgentInput::from_parsed(&json).unwrap()),
            unknown_members(&from_bytes)
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
    let verdict = |declared: &str| {
        let mut i = support::input("t", "r");
        i.protocol_version = Some(declared.into());
        i.version_verdict()
    };
    assert!(matches!(
        verdict("1.3"),
        VersionVerdict::AcceptWithWarning(_)
    ));
    assert!(matches!(verdict("2.0"), VersionVerdict::UnknownMajor(_)));
    assert!(matches!(
        verdict("1.0.0"),
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
    let Message::User(u) = &parsed[3] else {
        panic!("not a user message: {:?}", parsed[3]);
    };
    assert_eq!(u.id, "u");
}
