//! A task's script on the scenario clock: its timeline (every event as a deadline from the
//! run's start), the runner that sleeps until the next one, and what each event does when it is
//! due — a status change, a side-effect call through [`service::admit`], an artifact, the final
//! state. The runner applies events while it holds the clock's [`Tick`], so on a manual clock
//! an advance replays them in order, each at its own instant, and a side effect lands in the
//! ledger at its scheduled time.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use hyper::body::Bytes;
use hyper::header::{HeaderName, HeaderValue, CONTENT_TYPE};

use super::{entry_of, lock_entry, Entry};
use crate::agent::a2a::detail::{ArtifactDetail, ArtifactIds, ResultDetail, StatusDetail};
use crate::agent::a2a::types::{
    Artifact, StreamResponse, TaskArtifactUpdateEvent, TaskState, TaskStatus,
};
use crate::clock::{Clock, Tick};
use crate::revision::Revision;
use crate::scenario::a2a::{CallStep, Outcome, Script, UpdateState};
use crate::service;
use crate::world::World;

/// One scripted thing a task does: the index of the step in the task's [`Script`].
#[derive(Clone, Copy, Debug)]
pub(crate) enum Event {
    Status(usize),
    Call(usize),
    Artifact(usize),
    Final,
}

/// The events of a script as absolute deadlines from `start`, in the order they happen:
/// by time, then updates, calls, artifacts and the final state.
pub(crate) fn timeline(script: &Script, start: Duration) -> Vec<(Duration, Event)> {
    let mut evs =
        Vec::with_capacity(script.updates.len() + script.steps.len() + script.artifacts.len() + 1);
    for (i, u) in script.updates.iter().enumerate() {
        evs.push((start + u.at, Event::Status(i)));
    }
    for (i, s) in script.steps.iter().enumerate() {
        evs.push((start + s.at, Event::Call(i)));
    }
    for (i, a) in script.artifacts.iter().enumerate() {
        let at = a.at.unwrap_or(script.work);
        evs.push((start + at, Event::Artifact(i)));
    }
    evs.push((start + script.work, Event::Final));
    // Stable, and pushed kind by kind in index order: equal times keep that order.
    evs.sort_by_key(|(t, _)| *t);
    evs
}

type Sleep = Pin<Box<dyn Future<Output = Option<Tick>> + Send>>;

/// Start sleeping until `deadline` *now*: the sleeper is registered with the clock before this
/// returns, so an advance that is already under way (or starts next) sees it and wakes it at
/// its own deadline instead of passing it by.
pub(crate) fn arm(clock: Clock, deadline: Duration) -> Sleep {
    let mut fut: Sleep = Box::pin(async move { clock.sleep_until(deadline).await });
    match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        // Done already: what it gave, since it cannot be polled again.
        Poll::Ready(t) => Box::pin(std::future::ready(t)),
        Poll::Pending => fut,
    }
}

/// A runner for the rest of the script of run `generation` of a task, from its next deadline.
pub(crate) fn hand_over(world: &Arc<World>, task_id: String, generation: u64, deadline: Duration) {
    let mut armed = arm(world.clock.clone(), deadline);
    let world = world.clone();
    tokio::spawn(async move {
        loop {
            // None: the world closed (reset, replaced, shut down).
            let Some(tick) = armed.await else {
                return;
            };
            // The task gone, a newer run owning it or its script done: nothing more to do.
            let Some(cell) = entry_of(&world, &task_id) else {
                return;
            };
            let next = run_due_in(&world, &mut lock_entry(&cell), Some(generation));
            let Some(deadline) = next else {
                return;
            };
            armed = arm(world.clock.clone(), deadline);
            drop(tick);
        }
    });
}

/// Apply every event of the task due by now, its lock held, unless a newer run than
/// `generation` owns it. Returns its next deadline, if its script has one left.
pub(crate) fn run_due_in(
    world: &Arc<World>,
    e: &mut Entry,
    generation: Option<u64>,
) -> Option<Duration> {
    if generation.is_some_and(|g| g != e.generation) {
        return None;
    }
    let now = world.clock.now();
    // Its text, made once for every status set now.
    let mut stamp = None;
    // The timeline indexes into this script (a task without one has an empty timeline).
    let script = e.script.clone();
    loop {
        // A canceled task does nothing more; its remaining steps never run.
        let terminal = e.task.status.state.is_terminal();
        let (false, Some(&(at, ev)), Some(script)) =
            (terminal, e.timeline.get(e.cursor), script.as_deref())
        else {
            // Tasks are kept for as long as the world: what only a running script needs goes (a
            // resumed run gets a new timeline and the text of the message that resumes it).
            (e.timeline, e.text) = (Vec::new(), String::new());
            return None;
        };
        if at > now {
            return Some(at);
        }
        e.cursor += 1;
        // One instant for every event found due: their status timestamps and their entries.
        match ev {
            Event::Status(i) => status(world, e, script, i, (now, &mut stamp)),
            Event::Call(i) => call(world, e, &script.steps[i], now),
            Event::Artifact(i) => artifact(world, e, script, i, now),
            Event::Final => finish(world, e, script, (now, &mut stamp)),
        }
    }
}

/// The instant due events run at, with its RFC 3339 text once made (see [`rfc3339`]).
type Now<'a> = (Duration, &'a mut Option<String>);

/// A status timestamp for `now`: formatted once per instant.
fn rfc3339(world: &World, (now, stamp): &mut Now<'_>) -> String {
    let now = *now;
    stamp
        .get_or_insert_with(|| world.clock.rfc3339(now))
        .clone()
}

fn status(world: &Arc<World>, e: &mut Entry, script: &Script, i: usize, mut at: Now<'_>) {
    let now = at.0;
    let step = &script.updates[i];
    let r = e.render();
    let text = step.message.as_ref().map(|t| r.text(t));
    let used = r.used_canary.get();
    let state = match step.state {
        UpdateState::Submitted => TaskState::Submitted,
        UpdateState::Working => TaskState::Working,
    };
    let id = text
        .as_ref()
        .map(|_| format!("{}-status-{}", e.task.id, e.cursor));
    let message = id
        .clone()
        .zip(text.clone())
        .map(|(id, t)| e.agent_message(id, t));
    let status = TaskStatus {
        message,
        state,
        timestamp: Some(rfc3339(world, &mut at)),
    };
    e.set_status(world, status);
    let detail = StatusDetail {
        message: text.as_deref(),
        message_id: id.as_deref(),
        state: state.as_str(),
    };
    e.log_at(world, now, "status", detail);
    e.note_canary(world, used, now);
}

/// A side-effect call, admitted synchronously while the runner holds the clock's tick: the
/// effect is in the ledger at the step's scheduled time. The agent does not read the response.
fn call(world: &Arc<World>, e: &mut Entry, step: &CallStep, now: Duration) {
    let r = e.render();
    let mut headers = hyper::HeaderMap::new();
    for (k, v) in &step.headers {
        // The scenario checked the names; a value rendered into something no header can hold
        // is left out, as a real client would refuse to send it.
        if let (Ok(k), Ok(v)) = (
            HeaderName::from_bytes(k.as_bytes()),
            HeaderValue::from_str(&r.text(v)),
        ) {
            headers.insert(k, v);
        }
    }
    let body = match (&step.json, &step.body) {
        (Some(j), _) => {
            headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            match &step.fixed_json {
                Some(fixed) => fixed.clone(),
                None => r.json(j).to_string().into(),
            }
        }
        (None, Some(b)) => r.text(b).into(),
        (None, None) => Bytes::new(),
    };
    let used = r.used_canary.get();
    service::admit(
        world,
        service::Request {
            service: step.service.as_str().into(),
            method: step.method.as_str().into(),
            path: step.path.as_str().into(),
            headers,
            body,
            actor: Some(["agent:", &e.agent].concat()),
            work_id: Some(e.task.id.clone()),
            revision: e.revision.as_ref().and_then(Revision::of),
            unread: true,
            ..service::Request::default()
        },
    );
    e.note_canary(world, used, now);
}

/// A scripted artifact (or chunk of one).
fn artifact(world: &Arc<World>, e: &mut Entry, script: &Script, i: usize, now: Duration) {
    let spec = &script.artifacts[i];
    let r = e.render();
    let artifact = Artifact {
        artifact_id: spec.id.clone(),
        description: spec.description.clone(),
        metadata: e.meta(),
        name: spec.name.clone(),
        parts: spec.parts.iter().map(|p| r.part(p)).collect(),
        ..Artifact::default()
    };
    let used = r.used_canary.get();
    // The event (a copy of the artifact) is built only for someone who gets it.
    if e.listened() {
        let event = StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
            append: spec.append,
            artifact: artifact.clone(),
            context_id: e.task.context_id.clone(),
            last_chunk: spec.last_chunk,
            metadata: e.meta(),
            task_id: e.task.id.clone(),
        });
        e.emit(world, event);
    }
    // Written before the artifact is merged (and its parts possibly appended to another's):
    // nobody sees the task in between, its lock is held.
    let detail = ArtifactDetail {
        append: spec.append,
        artifact_id: &spec.id,
        description: spec.description.as_deref(),
        last_chunk: spec.last_chunk,
        name: spec.name.as_deref(),
        parts: &artifact.parts,
    };
    e.log_at(world, now, "artifact", detail);
    merge_artifact(&mut e.task.artifacts, artifact, spec.append);
    e.note_canary(world, used, now);
}

/// The script's outcome: the final (or interrupted) state.
fn finish(world: &Arc<World>, e: &mut Entry, script: &Script, mut at: Now<'_>) {
    let now = at.0;
    let outcome = script.outcome;
    let r = e.render();
    let text = script.message.as_ref().map(|t| r.text(t));
    let used = r.used_canary.get();
    let state = match outcome {
        Outcome::Completed => TaskState::Completed,
        Outcome::Failed => TaskState::Failed,
        Outcome::Rejected => TaskState::Rejected,
        Outcome::InputRequired => TaskState::InputRequired,
        Outcome::AuthRequired => TaskState::AuthRequired,
    };
    let status = TaskStatus {
        message: text.map(|t| e.agent_message(format!("{}-final", e.task.id), t)),
        state,
        timestamp: Some(rfc3339(world, &mut at)),
    };
    e.note_canary(world, used, now);
    e.set_status(world, status);
    let status_message = e.task.status.message.as_ref();
    let detail = ResultDetail {
        artifacts: ArtifactIds(&e.task.artifacts),
        canary: e.canary_issued.then_some(&*e.canary),
        message: status_message.and_then(|m| m.parts.first()?.as_text()),
        outcome,
        state: state.as_str(),
        task_id: &e.task.id,
    };
    e.log_at(world, now, "result", detail);
}

/// Put an artifact event into a task's artifacts: a new id is added, a chunk with `append`
/// extends the parts of the one it continues, any other replaces it.
pub(crate) fn merge_artifact(artifacts: &mut Vec<Artifact>, artifact: Artifact, append: bool) {
    match artifacts
        .iter_mut()
        .find(|a| a.artifact_id == artifact.artifact_id)
    {
        Some(existing) if append => existing.parts.extend(artifact.parts),
        Some(existing) => *existing = artifact,
        None => {
            // One more slot, not the four a first push gives: a task keeps its artifacts for
            // the world's life.
            artifacts.reserve_exact(1);
            artifacts.push(artifact)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::a2a::ArtifactSpec;

    #[test]
    fn a_timeline_orders_by_time_then_updates_calls_artifacts_final() {
        let mut s = Script {
            work: Duration::from_secs(3),
            ..Script::default()
        };
        s.artifacts.push(ArtifactSpec {
            at: None,
            id: "a".into(),
            name: None,
            description: None,
            parts: vec![],
            append: false,
            last_chunk: false,
        });
        let t = timeline(&s, Duration::from_secs(10));
        let kinds: Vec<(u64, &str)> = t
            .iter()
            .map(|(at, e)| {
                let k = match e {
                    Event::Status(_) => "status",
                    Event::Call(_) => "call",
                    Event::Artifact(_) => "artifact",
                    Event::Final => "final",
                };
                (at.as_secs(), k)
            })
            .collect();
        assert_eq!(kinds, [(10, "status"), (13, "artifact"), (13, "final")]);
    }
}
