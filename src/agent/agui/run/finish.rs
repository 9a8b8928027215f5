//! How a run ends: its `RUN_FINISHED` (or `RUN_ERROR`) with this run's own usage, the
//! checkpoint a stateful agent keeps of an interrupted run, the `run-finished` ledger entry,
//! and a scripted late error (INT-6).

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{json, Value};

use super::{End, Run};
use crate::agent::agui::event::{Event, TokenUsage};
use crate::agent::agui::interrupt::Interrupt;
use crate::agent::agui::{tanstack, Checkpoint, Threads};
use crate::agent::agui::{Boundary, Call};
use crate::scenario::agui::{ClientKind, ResumeMode, Violation};

impl Run {
    /// Close the run as `end` says, record it, and play a scripted late error.
    pub(super) async fn finish(&mut self, end: End) {
        let mut detail = FinishedDetail::default();
        let (thread_id, run_id) = (&self.input.thread_id, &self.input.run_id);
        let closing = match end {
            End::Success { pending } => {
                detail.outcome = "success";
                detail.pending_tool_call_ids = Some(pending.clone());
                Some(Event::run_success(thread_id, run_id, pending))
            }
            End::Interrupt { batch, at, calls } => {
                Some(self.finish_interrupted(batch, at, calls, &mut detail))
            }
            End::Cancelled => {
                detail.outcome = "cancelled";
                detail.cause = Some("scripted");
                Some(Event::run_cancelled(thread_id, run_id))
            }
            End::Gone => {
                detail.outcome = "cancelled";
                detail.cause = Some("client-disconnected");
                self.put_back_checkpoint(&mut detail);
                None
            }
            End::WorldClosed => {
                detail.outcome = "error";
                detail.cause = Some("world-reset");
                self.emit(Event::run_error(
                    "the scenario was reset while the run was in progress",
                    Some("world_reset"),
                ));
                None
            }
        };
        // Queued unless the script breaks that rule; whether it reached the client is known
        // after the flush.
        let mut finished = false;
        if let Some(Event::RunFinished(mut e)) = closing {
            if !self.breaks(Violation::MissingRunFinished) {
                e.usage = self.usage();
                self.emit(Event::RunFinished(e));
                finished = !self.gone;
            }
        }
        // What the client got is known once it is handed over.
        self.flush(false).await;
        let finished = finished && !self.gone;
        detail.model_calls = self.model_calls;
        detail.events = &self.types;
        detail.client_disconnected = self.gone;
        detail.run_id = &self.input.run_id;
        detail.thread_id = &self.input.thread_id;
        detail.usage = (self.model_calls > 0).then(|| {
            [UsageDetail {
                input_tokens: self.input_tokens,
                model: &self.spec.model,
                output_tokens: self.output_tokens,
                provider: PROVIDER,
                total_tokens: self.input_tokens + self.output_tokens,
            }]
        });
        let seq = self.record("run-finished", detail);
        if self.gone {
            // What the client never got is not what it knows (REC-4), as for any response.
            self.world.abandon(seq);
        }

        if finished {
            self.late_error().await;
        }
    }

    /// The `RUN_FINISHED` of a run paused on a batch of interrupts (bound for TanStack when its
    /// client is), with the deliberate breaks a script may ask for; a stateful agent keeps the
    /// batch as the thread's checkpoint.
    fn finish_interrupted(
        &mut self,
        mut batch: Vec<Interrupt>,
        at: Boundary,
        calls: Vec<Call>,
        detail: &mut FinishedDetail<'_>,
    ) -> Event {
        if self.spec.client == ClientKind::Tanstack {
            for i in &mut batch {
                tanstack::bind_generic(i, &self.input.run_id);
            }
        }
        detail.outcome = "interrupt";
        detail.interrupts = Some(batch.iter().map(|i| i.id.clone()).collect());
        detail.paused_at = Some(at);
        let mut wire_batch = if self.spec.resume == ResumeMode::Stateful {
            batch.clone()
        } else {
            std::mem::take(&mut batch)
        };
        if !wire_batch.is_empty() && self.breaks(Violation::DuplicateInterruptIds) {
            wire_batch.push(wire_batch[0].clone());
        }
        if self.breaks(Violation::InterruptWithoutInterrupts) {
            wire_batch.clear();
        }
        let break_outcome = self.breaks(Violation::SuccessWhileInterrupted);
        let (thread_id, run_id) = (&self.input.thread_id, &self.input.run_id);
        let e = if break_outcome {
            let mut e = Event::run_finished(thread_id, run_id, None);
            let outcome = json!({"type": "success", "interrupts": wire_batch});
            e.base_mut().extra.insert("outcome".into(), outcome);
            e
        } else {
            Event::run_interrupted(thread_id, run_id, wire_batch)
        };
        if self.spec.resume == ResumeMode::Stateful {
            // Paused again where it resumed: the answers given so far still hold.
            let mut answers = BTreeMap::new();
            if self.consumed.as_ref().is_some_and(|c| c.at == at) {
                answers.extend(self.carried.clone());
                answers.extend(self.judgement.answers.clone());
            }
            answers.retain(|k, _| !batch.iter().any(|b| &b.id == k));
            let cp = Checkpoint {
                run_id: self.input.run_id.clone(),
                interrupts: batch,
                at,
                calls,
                state: self.state.clone(),
                answers,
            };
            // What a restart rebuilds the thread from (`restore`).
            detail.checkpoint = Some(cp.ledger_json());
            self.world
                .extension::<Threads>()
                .store(&self.agent, &self.input.thread_id, cp);
        }
        e
    }

    /// The client went away: it never heard how this continuation ended and still holds its
    /// open interrupts. Keep them open, minus what already ran, for its retry.
    fn put_back_checkpoint(&mut self, detail: &mut FinishedDetail<'_>) {
        if let Some(mut cp) = self.consumed.take() {
            for c in &mut cp.calls {
                if let Some(result) = self.executed.get(&c.id) {
                    c.done = true;
                    c.result = result.clone();
                }
            }
            detail.restored_checkpoint = Some(cp.run_id.clone());
            detail.checkpoint = Some(cp.ledger_json());
            self.world
                .extension::<Threads>()
                .store(&self.agent, &self.input.thread_id, cp);
        }
    }

    /// INT-6: a failure that surfaces after the run closed.
    async fn late_error(&mut self) {
        let Some(late) = self.spec.late_error.clone() else {
            return;
        };
        if !late.after.is_zero() && self.wait(late.after).await.is_err() {
            return;
        }
        self.emit(Event::run_error(late.message.clone(), late.code.as_deref()));
        self.flush(false).await;
        self.record(
            "late-error",
            json!({
                "thread_id": self.input.thread_id,
                "run_id": self.input.run_id,
                "message": late.message,
                "code": late.code,
                "delivered": !self.gone,
            }),
        );
    }

    /// RES-7: only this run's own model calls.
    fn usage(&self) -> Option<Vec<TokenUsage>> {
        (self.model_calls > 0).then(|| {
            vec![TokenUsage {
                provider: Some(PROVIDER.into()),
                model: Some(self.spec.model.clone()),
                input_tokens: Some(self.input_tokens),
                output_tokens: Some(self.output_tokens),
                total_tokens: Some(self.input_tokens + self.output_tokens),
                ..TokenUsage::default()
            }]
        })
    }
}

/// The provider named in `usage`.
const PROVIDER: &str = "doubleagent";

/// The `run-finished` entry's detail, fields in name order; what only some ends have is left
/// out. The checkpoint is a `Value`, its keys in name order too.
#[derive(Default, Serialize)]
pub(super) struct FinishedDetail<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    cause: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    checkpoint: Option<Value>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    client_disconnected: bool,
    events: &'a [&'static str],
    #[serde(skip_serializing_if = "Option::is_none")]
    interrupts: Option<Vec<String>>,
    model_calls: u64,
    outcome: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    paused_at: Option<Boundary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pending_tool_call_ids: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    restored_checkpoint: Option<String>,
    run_id: &'a str,
    thread_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    usage: Option<[UsageDetail<'a>; 1]>,
}

/// The run's [`TokenUsage`] (what [`Run::usage`] reports) as the detail states it: members in
/// name order.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct UsageDetail<'a> {
    input_tokens: u64,
    model: &'a str,
    output_tokens: u64,
    provider: &'static str,
    total_tokens: u64,
}
