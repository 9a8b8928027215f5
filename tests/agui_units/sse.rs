use crate::support::{sse_frame, sse_payloads};
use doubleagent::agent::agui::event::Event;
use doubleagent::agent::agui::event::{RunOutcome, StepFinished, StepStarted, TokenUsage};
use doubleagent::agent::agui::interrupt::Interrupt;
use serde_json::json;
use std::sync::Arc;

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

// The verified encoder lines of the reference, byte for byte.
#[test]
fn int1_reference_interrupt_frame_is_byte_exact() {
    let mut e = Event::run_finished(
        "t1",
        "r1",
        Some(RunOutcome::Interrupt {
            interrupts: vec![interrupt_example()],
        }),
    );
    let Event::RunFinished(finished) = &mut e else {
        unreachable!()
    };
    finished.usage = Some(vec![TokenUsage {
        provider: Some("fake".into()),
        model: Some("fake-1".into()),
        input_tokens: Some(3),
        output_tokens: Some(2),
        total_tokens: Some(5),
        ..Default::default()
    }]);
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
        serde_json::to_string(&Event::run_success("t", "r", vec![])).unwrap(),
        "{\"type\":\"RUN_FINISHED\",\"threadId\":\"t\",\"runId\":\"r\",\"outcome\":{\"type\":\"success\"}}"
    );
}

#[test]
fn err1_reference_run_error_frame_is_byte_exact() {
    assert_eq!(
        sse_frame(&Event::run_error("boom", Some("resume_incomplete"))),
        "data: {\"type\":\"RUN_ERROR\",\"message\":\"boom\",\"code\":\"resume_incomplete\"}\n\n"
    );
}

#[test]
fn sse_payloads_parse_like_the_client() {
    let body = format!(
        "{}{}: keep-alive\n\nevent: x\ndata: {{\"a\":\ndata: 1}}\n\n",
        sse_frame(&Event::StepStarted(StepStarted {
            step_name: "a".into(),
            ..Default::default()
        })),
        sse_frame(&Event::StepFinished(StepFinished {
            step_name: "a".into(),
            ..Default::default()
        }))
    );
    let p = sse_payloads(&body);
    assert_eq!(p.len(), 3);
    assert_eq!(p[2], "{\"a\":\n1}");
}
