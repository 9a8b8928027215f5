//! Builders and readers the tests share: what a client would write or read, made from the
//! crate's public types.

use doubleagent::agent::agui::event::Event;
use doubleagent::agent::agui::input::RunAgentInput;
use doubleagent::agent::agui::interrupt::{Interrupt, ResumeEntry, ResumeStatus};
use doubleagent::agent::agui::message::{Content, Message, UserMessage};
use doubleagent::agent::agui::sse::write_sse_frame;
use doubleagent::agent::agui::tanstack::INTERRUPT_BINDING_KEY;
use serde_json::{Map, Value};

/// A minimal input (what `HttpAgent` sends on a first run, minus its defaults).
pub fn input(thread_id: &str, run_id: &str) -> RunAgentInput {
    RunAgentInput {
        thread_id: thread_id.into(),
        run_id: run_id.into(),
        ..RunAgentInput::default()
    }
}

/// The paths `strip_unknown` would strip.
pub fn unknown_members(input: &RunAgentInput) -> Vec<String> {
    input.clone().strip_unknown()
}

pub fn user(id: &str, content: &str) -> Message {
    Message::User(UserMessage {
        id: id.into(),
        content: Content::Text(content.into()),
        ..UserMessage::default()
    })
}

fn entry(interrupt_id: &str, status: ResumeStatus, payload: Option<Value>) -> ResumeEntry {
    ResumeEntry {
        interrupt_id: interrupt_id.into(),
        status,
        payload,
        metadata: None,
        extra: Map::new(),
    }
}

pub fn resolved(interrupt_id: &str, payload: Option<Value>) -> ResumeEntry {
    entry(interrupt_id, ResumeStatus::Resolved, payload)
}

pub fn cancelled(interrupt_id: &str) -> ResumeEntry {
    entry(interrupt_id, ResumeStatus::Cancelled, None)
}

/// One event's SSE frame as a string.
pub fn sse_frame(event: &Event) -> String {
    let mut out = Vec::new();
    write_sse_frame(&mut out, event);
    String::from_utf8(out).unwrap()
}

/// Splits an SSE body into the JSON payloads of its `data:` lines, the way
/// `@ag-ui/client`'s `parseSSEStream` does (frames split on `\n\n`, multi-line data joined
/// with `\n`, one optional space after the colon, other fields ignored).
pub fn sse_payloads(body: &str) -> Vec<String> {
    body.split("\n\n")
        .filter_map(|frame| {
            let lines: Vec<&str> = frame
                .split('\n')
                .filter_map(|l| l.strip_prefix("data:"))
                .map(|l| l.strip_prefix(' ').unwrap_or(l))
                .collect();
            (!lines.is_empty()).then(|| lines.join("\n"))
        })
        .collect()
}

/// An interrupt's TanStack binding, if it has one.
pub fn binding(interrupt: &Interrupt) -> Option<&Map<String, Value>> {
    interrupt
        .metadata
        .as_ref()?
        .get(INTERRUPT_BINDING_KEY)?
        .as_object()
}
