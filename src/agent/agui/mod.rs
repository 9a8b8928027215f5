//! Fake AG-UI 1.0 agents: `POST /agents/NAME` with a `RunAgentInput` answers a
//! `text/event-stream` of one scripted run.
//!
//! A request goes through three stages:
//! 1. **Admission** (`admit.rs`, `input.rs`): anything wrong is an HTTP 4xx with a JSON body
//!    and no stream, recorded in the ledger (`event: "run-rejected"`).
//! 2. **Judging** the resume list (`resume.rs`) against what the agent knows: with
//!    `resume = "stateful"` the thread's checkpoint (its latest interrupted run, kept in the
//!    `Threads` world extension so `/_admin/reset` forgets it), with `"stateless"` only the
//!    script and the messages (PROD-1). The decision is an HTTP 409, a stream opening with
//!    `RUN_ERROR`, or a run; `start.rs` says where in the script it starts.
//! 3. **The run** (`run.rs`, `run/tools.rs`, `run/finish.rs`): the scripted agent loop, played
//!    in the request handler up to its first wait: a run that never waits answers its whole
//!    event stream at once ([`Reply::Ready`]); one that waits streams from its own task
//!    ([`Reply::Stream`]).
//!
//! The protocol's types: `input.rs` (the request body), `message.rs`, `interrupt.rs`
//! (interrupts and resume entries), `event.rs` (the 31 events), `sse.rs` (framing) and
//! `tanstack.rs` (TanStack AI's interrupt binding).
//!
//! A run is cancelled (INT-2) by its script (`cancel_at = "<phase>"`: `RUN_FINISHED{outcome:
//! cancelled}` at that boundary) or by the client going away: the run stops at once, performs
//! no further tool call, and the ledger records `cancelled` with `cause: "client-disconnected"`.
//! After a restart with `--journal`, [`restore()`] rebuilds the threads' checkpoints.

mod admit;
pub mod event;
pub mod input;
pub mod interrupt;
pub mod message;
pub mod restore;
pub mod resume;
mod run;
pub mod sse;
mod start;
pub mod tanstack;
mod wire;

pub use restore::restore;

use crate::hash::{FastMap, FastState};
use crate::sync::unpoisoned;
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::hash::{BuildHasher, Hash};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use super::{AgentRequest, Ctx, Reply};
use crate::scenario::agui::{AgUiAgent, Phase};
use crate::world::World;
use interrupt::Interrupt;

/// Where in the script a run stands: an iteration and one of its boundaries (in the ledger
/// `{"iteration", "phase"}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Boundary {
    pub iteration: usize,
    pub phase: Phase,
}

/// A tool call the agent made, as it travels from the run that proposed it to the run that
/// executes it. A checkpoint's ledger form keeps only its id and whether it is done: the
/// script gives its tool and arguments, `tool-call` entries its result.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Call {
    /// It ran (or was skipped with a result): never run it again.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub done: bool,
    pub id: String,
    /// Index into the script's tools.
    #[serde(skip)]
    pub tool: usize,
    /// The scripted arguments (shared with the script).
    #[serde(skip)]
    pub args: Arc<Value>,
    /// The `TOOL_CALL_RESULT` content it got, to send again to a client that never heard it.
    #[serde(skip)]
    pub result: Option<String>,
}

/// What a stateful agent keeps of a thread's latest interrupted run; serialized, what its
/// `run-finished` entry keeps for a restart (`restore.rs`), members in name order.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Checkpoint {
    /// Answers given at this boundary by earlier continuations of the same pause (a
    /// re-interrupted batch is answered piecemeal): they still hold.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub answers: BTreeMap<String, resume::Answer>,
    /// That iteration's tool calls, once proposed.
    #[serde(default)]
    pub calls: Vec<Call>,
    /// The interrupts as emitted (ids, `expiresAt` (what RES-5 is judged by), bindings).
    pub interrupts: Vec<Interrupt>,
    #[serde(rename = "paused_at")]
    pub at: Boundary,
    pub run_id: String,
    /// The agent state the run left (RES-6).
    #[serde(default = "empty_object")]
    pub state: Value,
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// Per-world AG-UI state, by (agent, thread): a stateful agent's open checkpoints and the tool
/// calls it settled.
#[derive(Default)]
pub(crate) struct Threads {
    maps: Mutex<ThreadMaps>,
}

type ThreadKey = (String, String);

#[derive(Default)]
pub(crate) struct ThreadMaps {
    pub open: HashMap<ThreadKey, Checkpoint>,
    /// The calls each thread ran (or skipped with a result), with the result content once
    /// known: a call id runs at most once per thread, whatever stale messages a retry carries.
    pub settled: HashMap<ThreadKey, HashMap<String, Option<String>>>,
    /// The thread each run id was first admitted on, by (agent, run id) (see [`Threads::call_tag`]):
    /// hashes ([`run_hashes`]), as it only tells whether another thread came first.
    pub runs: FastMap<u64, u64>,
}

/// A run's key in [`ThreadMaps::runs`], the hash of (agent, run id), and its thread's hash.
pub(crate) fn run_hashes(agent: &str, run: &str, thread: &str) -> (u64, u64) {
    let h = FastState::default();
    (h.hash_one((agent, run)), h.hash_one(thread))
}

impl Threads {
    fn lock(&self) -> MutexGuard<'_, ThreadMaps> {
        // The maps hold plain values; a panic elsewhere cannot leave one half-written.
        unpoisoned(self.maps.lock())
    }

    pub(crate) fn store(&self, agent: &str, thread: &str, cp: Checkpoint) {
        let key = (agent.to_string(), thread.to_string());
        self.lock().open.insert(key, cp);
    }

    /// What a run's tool call ids end with (`call-<i>-<k>-<tag>`): its run id, qualified with
    /// its thread (`r1@tB`) when another thread of the agent was first to use that run id, so
    /// that no two threads share a call id (nor the work id and key it lends the call's request).
    pub(crate) fn call_tag(&self, agent: &str, run: &str, thread: &str) -> String {
        let (key, this) = run_hashes(agent, run, thread);
        let first = {
            let mut maps = self.lock();
            forget_past_bound(&mut maps.runs, &key, KEPT);
            *maps.runs.entry(key).or_insert(this)
        };
        if first == this {
            run.to_string()
        } else {
            [run, "@", thread].concat()
        }
    }

    /// Take call `id` of the thread for running it: `None` if it is this run's now, else what
    /// the run that settled it first got (`Some(None)` while its result is unknown).
    pub(crate) fn claim(&self, agent: &str, thread: &str, id: &str) -> Option<Option<String>> {
        let key = (agent.to_string(), thread.to_string());
        let mut maps = self.lock();
        forget_past_bound(&mut maps.settled, &key, KEPT);
        let calls = maps.settled.entry(key).or_default();
        if let Some(had) = calls.get(id) {
            return Some(had.clone());
        }
        calls.insert(id.to_string(), None);
        None
    }

    /// The result content call `id` of the thread got.
    pub(crate) fn settle(&self, agent: &str, thread: &str, id: &str, result: &str) {
        let key = (agent.to_string(), thread.to_string());
        let mut maps = self.lock();
        let calls = maps.settled.entry(key).or_default();
        calls.insert(id.to_string(), Some(result.to_string()));
    }
}

/// Runs (and threads with settled calls) remembered at most: as many as a server's ledger keeps
/// entries by default, so a long-lived sidecar's memory stays bounded. Past it, everything
/// remembered is forgotten at once: only a run id reused, or a continuation retried, that long
/// after could then be taken as new.
const KEPT: usize = crate::world::DEFAULT_MAX_ENTRIES;

fn forget_past_bound<K: Hash + Eq, V, S: BuildHasher>(
    m: &mut HashMap<K, V, S>,
    adding: &K,
    kept: usize,
) {
    if m.len() >= kept && !m.contains_key(adding) {
        m.clear();
    }
}

/// Where a run starts in the script.
#[derive(Clone, Debug)]
pub(crate) enum Start {
    /// Iteration 0, `beforeModel`.
    Top,
    /// The iteration after one whose frontend tool calls the input answers.
    After(usize),
    /// A boundary a previous run paused at; `calls` are that iteration's proposed tool calls
    /// when known.
    At {
        boundary: Boundary,
        calls: Option<Vec<Call>>,
    },
}

/// In the ledger: the boundary it starts at, or `{"after_frontend_tools_of_iteration": i}`.
impl Serialize for Start {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let top = Boundary {
            iteration: 0,
            phase: Phase::BeforeModel,
        };
        match self {
            Start::Top => top.serialize(s),
            Start::After(i) => s.collect_map([("after_frontend_tools_of_iteration", i)]),
            Start::At { boundary, .. } => boundary.serialize(s),
        }
    }
}

/// A warning for the stream (`CUSTOM` event) and, serialized (members in name order), the
/// ledger.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Notice {
    pub details: Value,
    pub message: String,
    pub rule: &'static str,
}

impl Notice {
    fn new(rule: &'static str, message: impl Into<String>, details: Value) -> Notice {
        Notice {
            rule,
            message: message.into(),
            details,
        }
    }
}

/// Serve one request to an AG-UI agent: admit it (or refuse it with a JSON 4xx), then play
/// the run it starts.
pub async fn handle(ctx: Ctx<'_>, spec: &AgUiAgent, req: AgentRequest) -> Reply {
    let world = ctx.world.clone();
    // A copy: the run may outlive the call.
    let name = ctx.name.to_string();
    let mut body = admit::LedgerBody::read(&world, &req.body);
    match admit::admit(&world, &name, spec, &req, &mut body) {
        Ok(admitted) => play(world, name, spec, admitted),
        Err(refusal) => refusal.reply(&world, &name, body.json),
    }
}

/// Play an admitted run here up to its first wait. A run that never waits answers its whole
/// stream as one chunk, with no task and no channel; one that waits (a scripted delay, a delayed
/// tool response, a late error) opens the channel, hands over what it emitted so far and goes
/// on in its own task.
fn play(world: Arc<World>, name: String, spec: &AgUiAgent, admitted: admit::Admitted) -> Reply {
    let outlet = run::Outlet::default();
    // Boxed apart from its future: an async fn's future holds its arguments twice.
    let run = Box::new(run::Run::new(
        world,
        name,
        spec.clone(),
        admitted,
        outlet.clone(),
    ));
    let mut run = Box::pin(run.go());
    let whole = match run.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(whole) => whole,
        Poll::Pending => {
            tokio::spawn(run);
            None
        }
    };
    let status = 200;
    let headers = vec![
        ("content-type".into(), sse::EVENT_STREAM_CONTENT_TYPE.into()),
        ("cache-control".into(), "no-cache".into()),
    ];
    // Only the run and this handler touch the outlet, one after the other.
    let rx = unpoisoned(outlet.lock()).take();
    match (whole, rx) {
        (_, Some(body)) => Reply::Stream {
            status,
            headers,
            body,
        },
        (whole, None) => Reply::Ready {
            status,
            headers,
            // A run that did not end here opened its channel first, wherever it paused: the
            // only way to get here without one is to have ended with the whole body.
            body: whole.unwrap_or_default(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_threads_remember_is_bounded_and_a_known_key_keeps_it() {
        let mut m: HashMap<u32, ()> = (0..2).map(|k| (k, ())).collect();
        forget_past_bound(&mut m, &1, 2);
        assert_eq!(m.len(), 2, "a key already known adds nothing");
        forget_past_bound(&mut m, &7, 2);
        assert!(m.is_empty(), "a new key past the bound forgets the rest");
    }
}
