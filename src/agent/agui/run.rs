//! One AG-UI run: the scripted agent loop, played into the SSE stream.
//!
//! Each iteration passes `beforeModel` → model output (text, state) → `afterModel` → its tool
//! calls are proposed (`TOOL_CALL_START/ARGS/END`) → `beforeTools` → tools run → `afterTools`,
//! and at every boundary the interrupts declared there that fire form one batch that ends the run
//! with one `RUN_FINISHED{outcome: interrupt}` (PH-5). A run that resumes enters the script at
//! the boundary it paused at, so every hook from there on runs again (PH-6). Backend tool calls
//! go through [`crate::service::admit`] like any client's request (actor `agent:NAME`, work id = the
//! tool call id), gated by the judged answers; every backend call gets a `TOOL_CALL_RESULT`,
//! even when it did not run, so a consumer never mistakes it for a pending frontend call.
//!
//! Events are buffered and handed over in batches ([`Run::flush`]): as the whole response body
//! if the run ends without waiting, else through the stream's channel, whose only sender the
//! run owns (dropping it closes the response). A failed send means the client went away: the
//! run stops before doing anything else.

use crate::sync::unpoisoned;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Bytes;
use serde_json::{json, Map, Value};
use tokio::sync::mpsc::{self, error::TrySendError};

use super::admit::Admitted;
use super::event::{self, Event};
use super::input::RunAgentInput;
use super::interrupt::Interrupt;
use super::resume::{Answer, Decision, Judgement};
use super::sse;
use super::start::{answered_calls, call_id, message_id, plain_interrupt};
use super::{Boundary, Call, Checkpoint, Notice, Start};
use crate::clock::format_rfc3339_ms;
use crate::ledger::Record;
use crate::revision::Revision;
use crate::scenario::agui::{AgUiAgent, InterruptSpec, OnContinuation, Phase, ToolKind, Violation};
use crate::world::World;

mod finish;
mod tools;

enum End {
    /// Completed, or paused on frontend tool calls (named in `pendingToolCallIds`, INT-2).
    Success { pending: Vec<String> },
    /// One batch of interrupts at one boundary (PH-5, INT-1).
    Interrupt {
        batch: Vec<Interrupt>,
        at: Boundary,
        calls: Vec<Call>,
    },
    /// Stopped on request by the script (`cancel_at`).
    Cancelled,
    /// The client went away: nobody hears the end; the ledger does.
    Gone,
    /// The world was reset or replaced under the run.
    WorldClosed,
}

pub(super) struct Run {
    world: Arc<World>,
    agent: String,
    spec: AgUiAgent,
    input: RunAgentInput,
    judgement: Judgement,
    /// The stream's channel, once needed ([`Self::sender`]).
    tx: Option<mpsc::Sender<Bytes>>,
    /// Where the channel's receiver goes for the request handler to answer with.
    outlet: Outlet,
    /// Interrupts this run resumes (answered, discarded or still open): a `skip` interrupt
    /// among them is not raised again.
    resumed: BTreeSet<String>,
    /// Tool calls the input already holds results for.
    answered: BTreeSet<String>,
    state: Value,
    model_calls: u64,
    input_tokens: u64,
    output_tokens: u64,
    /// Types of the events emitted, in order: the first `sent` were handed to the response,
    /// the rest are in `out`.
    types: Vec<&'static str>,
    sent: usize,
    /// SSE frames emitted and not yet handed to the response (see [`Self::flush`]).
    out: Vec<u8>,
    gone: bool,
    violated: BTreeSet<Violation>,
    /// The checkpoint this run continues (stateful agents): put back if the client goes away,
    /// so its retry is still a continuation.
    consumed: Option<Checkpoint>,
    /// Tool calls this run admitted to a service (or skipped), with the result content once
    /// known: never again.
    executed: BTreeMap<String, Option<String>>,
    /// Answers earlier continuations gave at the boundary this run resumes.
    carried: BTreeMap<String, Answer>,
    /// Where the run's own timeline stands (its arrival, moved on by each wait): delays count
    /// from here.
    cursor: Duration,
    /// Where the run enters the script and the warnings it opens with, until [`Self::go`].
    start: Option<Start>,
    notices: Vec<Notice>,
    /// Stated on every entry of the run, as A2A tasks state theirs.
    revision: Option<Revision>,
    /// What its tool call ids end with.
    call_tag: String,
}

/// Where a run puts its stream's receiver once it opens the channel (see [`Run::sender`]).
pub(super) type Outlet = Arc<std::sync::Mutex<Option<mpsc::Receiver<Bytes>>>>;

impl Run {
    pub(super) fn new(
        world: Arc<World>,
        agent: String,
        spec: AgUiAgent,
        admitted: Admitted,
        outlet: Outlet,
    ) -> Run {
        let carried = (admitted.consumed.as_ref())
            .map(|c| c.answers.clone())
            .unwrap_or_default();
        let resumed = (admitted.judgement.resumed().map(str::to_string))
            .chain(carried.keys().cloned())
            .collect();
        let input = admitted.input;
        Run {
            answered: answered_calls(&input.messages),
            state: input.state_or_default(),
            world,
            agent,
            spec,
            input,
            judgement: admitted.judgement,
            tx: None,
            outlet,
            resumed,
            model_calls: 0,
            input_tokens: 0,
            output_tokens: 0,
            types: Vec::with_capacity(16),
            sent: 0,
            out: Vec::with_capacity(2048),
            gone: false,
            violated: BTreeSet::new(),
            consumed: admitted.consumed,
            executed: BTreeMap::new(),
            carried,
            cursor: admitted.started_at,
            start: Some(admitted.start),
            notices: admitted.notices,
            revision: admitted.revision,
            call_tag: admitted.call_tag,
        }
    }

    /// Play the run and close the stream. Returns the whole response body if no frame had to be
    /// handed over before the end ([`Self::flush`]); `None` if they went through the channel.
    pub(super) async fn go(mut self: Box<Self>) -> Option<Bytes> {
        let start = self.start.take().unwrap_or(Start::Top);
        let notices = std::mem::take(&mut self.notices);
        if let Decision::RunError { code, message } = self.judgement.decision.clone() {
            // PROD-3: refused before the run starts; RUN_ERROR is the stream's first event.
            self.emit(Event::run_error(message.clone(), Some(code)));
            for n in &notices {
                self.record("warning", n);
            }
            self.flush(false).await;
            let detail = json!({
                "thread_id": self.input.thread_id,
                "run_id": self.input.run_id,
                "outcome": "error",
                "code": code,
                "error": message,
                "events": self.types,
            });
            self.record("run-finished", detail);
            return self.rest().await;
        }
        self.emit(Event::run_started(&self.input));
        for n in notices {
            self.warn(n);
        }
        let end = match self.iterations(start).await {
            Ok(pending) => End::Success { pending },
            Err(end) => end,
        };
        self.finish(end).await;
        self.rest().await
    }

    /// The end of the output: the whole body if no channel was ever needed, else the last
    /// frames through it (dropping the run then closes the stream).
    async fn rest(&mut self) -> Option<Bytes> {
        if self.tx.is_none() {
            self.sent = self.types.len();
            return Some(Bytes::from(std::mem::take(&mut self.out)));
        }
        self.flush(true).await;
        None
    }

    // --- the loop ---------------------------------------------------------------------------

    /// The script's iterations from `start` on, until one ends with frontend calls still
    /// waiting for the application (INT-2, returned) or the run stops early (`Err`).
    async fn iterations(&mut self, start: Start) -> Result<Vec<String>, End> {
        let (first, from, mut calls, resuming) = match start {
            Start::Top => (0, Phase::BeforeModel, None, false),
            Start::After(i) => (i + 1, Phase::BeforeModel, None, false),
            Start::At { boundary, calls } => (boundary.iteration, boundary.phase, calls, true),
        };
        for i in first..self.spec.iterations.len() {
            let from = if i == first { from } else { Phase::BeforeModel };
            if i != first {
                calls = None;
            }
            // The boundary a resumed run re-enters: still-open interrupts are raised there again.
            let at = (resuming && i == first).then_some(from);
            if from <= Phase::BeforeModel {
                self.boundary(i, Phase::BeforeModel, at, &mut calls).await?;
                self.model_output(i).await?;
            }
            if from <= Phase::AfterModel {
                self.boundary(i, Phase::AfterModel, at, &mut calls).await?;
                calls = Some(self.propose_calls(i));
            }
            if from <= Phase::BeforeTools {
                self.boundary(i, Phase::BeforeTools, at, &mut calls).await?;
                let list = calls.get_or_insert_with(|| self.propose_calls(i));
                self.run_tools(i, list, &BTreeSet::new()).await?;
            }
            self.boundary(i, Phase::AfterTools, at, &mut calls).await?;
            let pending: Vec<String> = calls
                .iter()
                .flatten()
                .filter(|c| {
                    !c.done
                        && !self.answered.contains(&c.id)
                        && matches!(self.spec.tools[c.tool].kind, ToolKind::Frontend)
                })
                .map(|c| c.id.clone())
                .collect();
            if !pending.is_empty() {
                return Ok(pending);
            }
        }
        Ok(Vec::new())
    }

    /// One lifecycle boundary: a scripted stop, else the batch of interrupts that fire here.
    /// `reentry` is the boundary a resumed run re-enters, in its first iteration.
    async fn boundary(
        &mut self,
        i: usize,
        phase: Phase,
        reentry: Option<Phase>,
        calls: &mut Option<Vec<Call>>,
    ) -> Result<(), End> {
        let reentered = reentry == Some(phase);
        if self.gone || self.client_left() {
            self.gone = true;
            return Err(End::Gone);
        }
        if self.spec.iterations[i].cancel_at == Some(phase) {
            return Err(End::Cancelled);
        }
        let mut batch = match (&self.judgement.decision, reentered) {
            (Decision::Reinterrupt { still_open }, true) => still_open.clone(),
            _ => Vec::new(),
        };
        let reraised = !batch.is_empty();
        let spec = self.spec.clone();
        for d in spec.interrupts_at(i, phase) {
            if self.fires(d, calls.as_deref()) && !batch.iter().any(|b| b.id == d.key) {
                batch.push(self.raise(d, calls.as_deref()));
            }
        }
        if batch.is_empty() {
            return Ok(());
        }
        if reraised && phase == Phase::BeforeTools {
            // PROD-3 "reinterrupt": do what the covered entries allow, then pause again.
            let held: BTreeSet<String> = batch.iter().map(|b| b.id.clone()).collect();
            let list = calls.get_or_insert_with(|| self.propose_calls(i));
            self.run_tools(i, list, &held).await?;
        }
        Err(End::Interrupt {
            batch,
            at: Boundary {
                iteration: i,
                phase,
            },
            // The run ends here: the calls go with it.
            calls: calls.take().unwrap_or_default(),
        })
    }

    /// PH-6: a fresh run raises everything; a continuation raises `repeat` interrupts again and
    /// `skip` ones only if it does not resume them, nor are they moot: an approval whose gated
    /// calls all have their result already (a re-interrupted batch answered piecemeal; an agent
    /// that keeps nothing learns that from the messages).
    fn fires(&self, d: &InterruptSpec, calls: Option<&[Call]>) -> bool {
        if !self.judgement.is_continuation || d.on_continuation == OnContinuation::Repeat {
            return true;
        }
        if self.resumed.contains(&d.key) {
            return false;
        }
        let gated: Vec<&Call> = match (d.tool, d.phase) {
            (Some(tool), Phase::BeforeTools) => calls
                .into_iter()
                .flatten()
                .filter(|c| c.tool == tool)
                .collect(),
            _ => Vec::new(),
        };
        gated.is_empty()
            || !gated
                .iter()
                .all(|c| c.done || self.answered.contains(&c.id))
    }

    fn raise(&self, d: &InterruptSpec, calls: Option<&[Call]>) -> Interrupt {
        let mut it = plain_interrupt(d);
        if let Some(tool) = d.tool {
            it.tool_call_id = calls
                .into_iter()
                .flatten()
                .find(|c| c.tool == tool)
                .map(|c| c.id.clone());
        }
        if let Some(ttl) = d.expires_in {
            let now = self.world.clock.now();
            it.expires_at = Some(format_rfc3339_ms(self.world.clock.wall_ms(now + ttl)));
        }
        it
    }

    async fn model_output(&mut self, i: usize) -> Result<(), End> {
        let spec = self.spec.clone();
        let it = &spec.iterations[i];
        if let Some(d) = it.delay {
            self.wait(d).await?;
        }
        self.model_calls += 1;
        let (inp, out) = match it.usage {
            Some(u) => (u.input_tokens, u.output_tokens),
            // A stand-in for a tokenizer: fixed prompt cost, output by words and calls.
            None => {
                let words = it
                    .text
                    .as_deref()
                    .map(|t| t.split_whitespace().count())
                    .unwrap_or(0) as u64;
                (10, (words + 10 * it.tool_calls.len() as u64).max(1))
            }
        };
        self.input_tokens += inp;
        self.output_tokens += out;
        if let Some(text) = &it.text {
            let mid = message_id(i, &self.input.run_id);
            self.emit(Event::text_start(&mid));
            self.emit(Event::text_content(&mid, text.as_str()));
            self.emit(Event::text_end(&mid));
        }
        if let Some(patch) = &it.state {
            merge_patch(&mut self.state, patch);
            self.emit(Event::state_snapshot(self.state.clone()));
        }
        Ok(())
    }

    /// The iteration's tool calls join the messages (between `afterModel` and `beforeTools`).
    fn propose_calls(&mut self, i: usize) -> Vec<Call> {
        let spec = self.spec.clone();
        let scripted = &spec.iterations[i].tool_calls;
        let parent = if scripted.is_empty() {
            String::new()
        } else {
            message_id(i, &self.input.run_id)
        };
        let mut out = Vec::with_capacity(scripted.len());
        for (k, c) in scripted.iter().enumerate() {
            let id = call_id(i, k, &self.call_tag);
            let name = &spec.tools[c.tool].name;
            self.emit(Event::tool_call_start(&id, name, Some(&parent)));
            self.emit(Event::tool_call_args(&id, c.args_json.as_str()));
            self.emit(Event::tool_call_end(&id));
            out.push(Call {
                id,
                tool: c.tool,
                args: c.args.clone(),
                done: false,
                result: None,
            });
        }
        out
    }

    /// Wait `d` of scenario time on the run's own timeline, unless the client leaves or the world
    /// closes first. The timeline starts at the run's arrival (its `run-started` entry) and moves
    /// only by waits, not by when this task gets here: so with a manual clock, a test that sees
    /// an entry and then advances cannot slip in before the sleep and leave the run waiting.
    async fn wait(&mut self, d: Duration) -> Result<(), End> {
        self.cursor += d;
        self.sleep_until(self.cursor).await
    }

    /// Hand over what is ready, then sleep until `deadline` on the scenario clock, unless the
    /// client leaves (`End::Gone`) or the world closes (`End::WorldClosed`) first.
    async fn sleep_until(&mut self, deadline: Duration) -> Result<(), End> {
        self.flush(true).await;
        let clock = self.world.clock.clone();
        let tx = self.sender().clone();
        // Boxed (see `flush`).
        let woke = Box::pin(async move {
            tokio::select! {
                tick = clock.sleep_until(deadline) => Some(tick.is_some()),
                _ = tx.closed() => None,
            }
        })
        .await;
        match woke {
            Some(true) => Ok(()),
            Some(false) => Err(End::WorldClosed),
            None => {
                self.gone = true;
                Err(End::Gone)
            }
        }
    }

    // --- output ---------------------------------------------------------------------------

    /// The stream's channel, opened the first time the run must hand frames over before it
    /// ends; its receiver goes to the response through the outlet.
    fn sender(&mut self) -> &mpsc::Sender<Bytes> {
        self.tx.get_or_insert_with(|| {
            let (tx, rx) = mpsc::channel(64);
            // Only the run and the request handler touch it, one after the other.
            *unpoisoned(self.outlet.lock()) = Some(rx);
            tx
        })
    }

    /// The client went away: the response (and with it the channel's receiver) was dropped.
    /// Before the channel exists, the response has not started: nobody left yet.
    fn client_left(&self) -> bool {
        self.tx.as_ref().is_some_and(mpsc::Sender::is_closed)
    }

    /// Queue one event (sent at the next [`Self::flush`]).
    fn emit(&mut self, event: Event) {
        if self.gone {
            return;
        }
        let now = self.world.clock.now();
        let mut e = event.at(self.world.clock.wall_ms(now) as i64);
        // Every event's path: the check stays inline.
        if self.spec.violates(Violation::UnknownFields) {
            e.base_mut()
                .extra
                .insert("doubleagentUnknownField".into(), json!(true));
            self.breaks(Violation::UnknownFields);
        }
        sse::write_sse_frame(&mut self.out, &e);
        self.types.push(e.type_name());
    }

    /// Hand the frames emitted since the last flush to the response as one chunk: before the run
    /// waits (`now`), before the ledger says what the client got, and at the end. Until the run
    /// first flushes `now` there is no channel: the frames stay in the buffer, counted as the
    /// client's, and become the whole body ([`Self::rest`]).
    async fn flush(&mut self, now: bool) {
        if self.out.is_empty() {
            return;
        }
        if self.tx.is_none() && !now {
            self.sent = self.types.len();
            return;
        }
        self.sender();
        let frames = Bytes::from(std::mem::take(&mut self.out));
        let Some(tx) = &self.tx else { return };
        let sent = !self.gone
            && match tx.try_send(frames) {
                Ok(()) => true,
                Err(TrySendError::Closed(_)) => false,
                // A client reading slower than the run writes: wait for room. Boxed, so only a
                // run that waits pays for the wait's state.
                Err(TrySendError::Full(frames)) => Box::pin(tx.send(frames)).await.is_ok(),
            };
        if sent {
            self.sent = self.types.len();
        } else {
            self.gone = true;
            self.types.truncate(self.sent);
        }
    }

    fn warn(&mut self, n: Notice) {
        self.record("warning", &n);
        self.emit(event::warning_event(n.rule, &n.message, n.details));
    }

    // --- ledger ----------------------------------------------------------------------------

    fn record(&self, event: &str, detail: impl serde::Serialize) -> u64 {
        self.record_for(&self.input.run_id, event, detail)
    }

    /// An entry of the run whose work id is `work_id` (a tool call's is the call's id).
    fn record_for(&self, work_id: &str, event: &str, detail: impl serde::Serialize) -> u64 {
        // Timed when appended.
        let mut rec = Record::agent_event(&self.agent, event, Duration::ZERO, detail);
        rec.work_id = Some(work_id.to_string());
        rec.revision = self.revision.clone();
        self.world.append_now(rec)
    }

    /// Whether the script breaks rule `v` on purpose; recorded once per run and kind.
    fn breaks(&mut self, v: Violation) -> bool {
        let breaks = self.spec.violates(v);
        if breaks && self.violated.insert(v) {
            self.record(
                "violation",
                json!({
                    "thread_id": self.input.thread_id,
                    "run_id": self.input.run_id,
                    "violation": v,
                    "rule": v.rule(),
                }),
            );
        }
        breaks
    }
}

/// RFC 7386 JSON merge patch.
fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(t) = target {
        for (k, v) in p {
            if v.is_null() {
                t.remove(k);
            } else {
                merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_patch_follows_rfc7386() {
        let mut s = json!({"a": 1, "b": {"c": 2, "d": 3}});
        merge_patch(&mut s, &json!({"a": null, "b": {"c": 5}, "e": [1]}));
        assert_eq!(s, json!({"b": {"c": 5, "d": 3}, "e": [1]}));
        let mut s = json!("x");
        merge_patch(&mut s, &json!({"k": 1}));
        assert_eq!(s, json!({"k": 1}));
    }
}
