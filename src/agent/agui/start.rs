//! Where a run enters its script: the tool call ids that tie the messages back to script
//! positions, the interrupts a stateless agent can rebuild, and [`start_point`] (from a kept
//! checkpoint, from the interrupts the resume list answers, after answered frontend tool
//! calls, or from the top).

use std::collections::BTreeSet;

use super::admit::Settled;
use super::input::RunAgentInput;
use super::interrupt::Interrupt;
use super::message::{Message, ToolCall};
use super::resume::Judgement;
use super::{Boundary, Call, Checkpoint, Start};
use crate::scenario::agui::{AgUiAgent, InterruptSpec, Phase, ToolKind};

/// A declared interrupt as a stateless agent can rebuild it: no `expiresAt` (it does not keep
/// the moment it asked), no `toolCallId`.
pub(crate) fn plain_interrupt(d: &InterruptSpec) -> Interrupt {
    let mut i = Interrupt::new(d.key.clone(), d.reason.clone());
    i.message = d.message.clone();
    i.response_schema = d.response_schema.clone();
    i.subagent_run_id = d.subagent_run_id.clone();
    i
}

/// Tool call ids are `call-<iteration>-<k>-<tag>`, the tag being the run id, qualified with the
/// thread if another thread used that run id first ([`super::Threads::call_tag`]): unique per
/// agent, and readable back into a script position by an agent that keeps nothing.
pub(crate) fn call_id(iteration: usize, k: usize, tag: &str) -> String {
    let mut id = String::with_capacity(tag.len() + 12);
    id.push_str("call-");
    push_index(&mut id, iteration);
    id.push('-');
    push_index(&mut id, k);
    id.push('-');
    id.push_str(tag);
    id
}

/// The message id of an iteration's model output: `msg-<iteration>-<runId>`.
pub(crate) fn message_id(iteration: usize, run_id: &str) -> String {
    let mut id = String::with_capacity(run_id.len() + 8);
    id.push_str("msg-");
    push_index(&mut id, iteration);
    id.push('-');
    id.push_str(run_id);
    id
}

/// A script position in decimal, without `format!` (ids are made on every run).
fn push_index(out: &mut String, n: usize) {
    match u8::try_from(n) {
        Ok(d @ 0..=9) => out.push(char::from(b'0' + d)),
        _ => out.push_str(&n.to_string()),
    }
}

pub(crate) fn parse_call_id(id: &str) -> Option<(usize, usize)> {
    let mut parts = id.splitn(4, '-');
    if parts.next()? != "call" {
        return None;
    }
    let i = parts.next()?.parse().ok()?;
    let k = parts.next()?.parse().ok()?;
    parts.next()?;
    Some((i, k))
}

/// PROD-3's second source: a call in the messages that this script gates with an approval at
/// `beforeTools` (a backend tool; a frontend call awaiting the application is not an interrupt).
pub(super) fn gated_interrupt(spec: &AgUiAgent, call: &ToolCall) -> Option<Interrupt> {
    let (i, k) = parse_call_id(&call.id)?;
    let scripted = spec.iterations.get(i)?.tool_calls.get(k)?;
    let tool = spec.tools.get(scripted.tool)?;
    if tool.name != call.function.name || matches!(tool.kind, ToolKind::Frontend) {
        return None;
    }
    let d = spec
        .interrupts_at(i, Phase::BeforeTools)
        .find(|d| d.tool == Some(scripted.tool))?;
    let mut it = plain_interrupt(d);
    it.tool_call_id = Some(call.id.clone());
    Some(it)
}

/// Tool call ids that have a tool result message in the input.
pub(crate) fn answered_calls(messages: &[Message]) -> BTreeSet<String> {
    messages
        .iter()
        .filter_map(Message::answers)
        .map(str::to_string)
        .collect()
}

/// The tool calls of `iteration` as the messages carry them (the latest assistant message with
/// such calls), with the scripted tool and arguments; `None` if the messages have none.
fn calls_from_messages(
    spec: &AgUiAgent,
    messages: &[Message],
    iteration: usize,
) -> Option<Vec<Call>> {
    let answered = answered_calls(messages);
    let it = spec.iterations.get(iteration)?;
    messages.iter().rev().find_map(|m| {
        let calls: Vec<Call> = (m.tool_calls().iter())
            .filter_map(|c| {
                let (i, k) = parse_call_id(&c.id)?;
                let scripted = it.tool_calls.get(k)?;
                (i == iteration).then(|| Call {
                    id: c.id.clone(),
                    tool: scripted.tool,
                    args: scripted.args.clone(),
                    done: answered.contains(&c.id),
                    result: None,
                })
            })
            .collect();
        (!calls.is_empty()).then_some(calls)
    })
}

/// Where the run starts. A consumed checkpoint says it exactly; otherwise the first interrupt
/// this continuation answers (or leaves open) that the script declares gives the boundary; a
/// continuation whose messages show calls that already ran on the thread (`ran`: a retry whose
/// client never heard their results) re-enters their tools step, where they are done; an input
/// answering the frontend tool calls of the latest scripted turn continues after it; anything
/// else plays the script from the top.
pub(super) fn start_point(
    spec: &AgUiAgent,
    input: &RunAgentInput,
    checkpoint: Option<&Checkpoint>,
    j: &Judgement,
    ran: &Settled,
) -> Start {
    let answered = answered_calls(&input.messages);
    if let Some(cp) = checkpoint {
        let calls = cp
            .calls
            .iter()
            .cloned()
            .map(|mut c| {
                c.done |= answered.contains(&c.id);
                c
            })
            .collect::<Vec<_>>();
        return Start::At {
            boundary: cp.at,
            calls: (cp.at.phase >= Phase::BeforeTools).then_some(calls),
        };
    }
    for id in j.resumed() {
        if let Some(d) = spec.interrupt(id) {
            let boundary = Boundary {
                iteration: d.iteration,
                phase: d.phase,
            };
            let calls = if d.phase >= Phase::BeforeTools {
                calls_from_messages(spec, &input.messages, d.iteration)
            } else {
                None
            };
            return Start::At { boundary, calls };
        }
    }
    let ran_in = (input.messages.iter().rev().flat_map(Message::tool_calls))
        .find(|c| ran.contains_key(&c.id))
        .and_then(|c| parse_call_id(&c.id));
    if let Some((iteration, _)) = ran_in.filter(|_| j.is_continuation) {
        let calls = calls_from_messages(spec, &input.messages, iteration).map(|calls| {
            let done = |mut c: Call| {
                if let Some(result) = ran.get(&c.id) {
                    (c.done, c.result) = (true, result.clone());
                }
                c
            };
            calls.into_iter().map(done).collect()
        });
        let boundary = Boundary {
            iteration,
            phase: Phase::BeforeTools,
        };
        return Start::At { boundary, calls };
    }
    // A frontend-tool pause answered: the latest assistant message with scripted calls has
    // frontend calls, all with results, and the user has not spoken since.
    let last = (input.messages.iter().enumerate().rev()).find_map(|(pos, m)| {
        let ids: Vec<(usize, usize, &str)> = (m.tool_calls().iter())
            .filter_map(|c| parse_call_id(&c.id).map(|(i, k)| (i, k, c.id.as_str())))
            .collect();
        (!ids.is_empty()).then_some((pos, ids))
    });
    let Some((pos, ids)) = last else {
        return Start::Top;
    };
    let user_since = (input.messages[pos + 1..].iter()).any(|m| matches!(m, Message::User(_)));
    let frontend: Vec<&(usize, usize, &str)> = ids
        .iter()
        .filter(|(i, k, _)| {
            spec.iterations
                .get(*i)
                .and_then(|it| it.tool_calls.get(*k))
                .and_then(|c| spec.tools.get(c.tool))
                .is_some_and(|t| matches!(t.kind, ToolKind::Frontend))
        })
        .collect();
    match frontend.first() {
        Some((i, _, _)) if !user_since && frontend.iter().all(|f| answered.contains(f.2)) => {
            Start::After(*i)
        }
        _ => Start::Top,
    }
}
