//! The task table of a world's A2A agents and the lifecycle of each task on the scenario clock.
//!
//! The table is a world extension, so `/_admin/reset` (a fresh world) forgets every task. Each
//! task keeps its wire snapshot (what GetTask returns), the timeline its script compiled to, a
//! broadcast channel its streams and blocking calls listen on, and its push targets; one runner
//! plays its script on the scenario clock ([`run`]).
//!
//! Everything an orchestrator does to a task is decided under the task's own lock and recorded
//! in the ledger as an agent entry with the task as `work_id` and its revision; those entries
//! carry enough (rendered parts, status messages, timestamps as entry times) for [`restore`] to
//! rebuild the table after a restart. The table's lock is held only to look a task up, to number
//! and put in a new one, and for the message-id bookkeeping (what a message id first produced,
//! and the `message` entry that reads or notes it, so the ledger's order of messages is the
//! order the table saw them in); the long part of a send runs under the task's lock alone, so
//! concurrent sends to different tasks do not wait for each other.
//!
//! Lock order: the table's lock, then a task's lock, then `world.lock()` (taken by the ledger
//! appends and by `service::admit`), never the reverse: whoever holds a task's lock never takes
//! the table's (a new task is locked before it is put in, so taking its lock there never waits).
//! Only a holder of the table's lock waits for a task's lock while holding another task's (a
//! follow-up, for the task its message id first went to; ListTasks, which holds every task it
//! lists): there is one such holder at a time, so no two of them wait for each other.
//!
//! The parts: [`table`] (the maps), [`render`] (placeholders and canaries), [`send`] (taking in
//! a message), [`run`] (the timeline and its runner), [`calls`] (cancel, get, list, subscribe,
//! push configs) and [`restore`].

use crate::sync::unpoisoned;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value};
use tokio::sync::broadcast;

use self::table::Table;
use super::detail;
use super::params::TaskPushNotificationConfig;
use super::push::{self, PushTarget};
use super::rpc::RpcId;
use super::types::{
    Message, Part, StreamResponse, Task, TaskState, TaskStatus, TaskStatusUpdateEvent,
};
use crate::agent::Ctx;
use crate::scenario::a2a::{A2aAgent, CancelPolicy, PushPolicy, Script};
use crate::world::World;

mod calls;
mod render;
mod restore;
mod run;
mod send;
mod table;

pub(crate) use calls::{add_push, cancel, get, list, snapshot, subscribe, with_push};
pub use restore::restore;
pub(crate) use run::arm;
pub(crate) use send::send;

/// The table of every A2A task of one world, across its agents. Every mutation keeps it
/// consistent before it can panic, so poison is harmless.
fn tasks(world: &World) -> &Mutex<Table> {
    world.extension::<Mutex<Table>>()
}

/// A task in the table: its entry behind a lock of its own (see the module's header). Shared,
/// so that the entry can be locked once the table's lock is released.
type Shared = Arc<Mutex<Entry>>;

/// A task's entry, locked; poison is harmless, as for the table.
fn lock_entry(cell: &Mutex<Entry>) -> MutexGuard<'_, Entry> {
    unpoisoned(cell.lock())
}

/// The task `task_id`, looked up under the table's lock, which is released before the caller
/// takes the task's own.
fn entry_of(world: &World, task_id: &str) -> Option<Shared> {
    unpoisoned(tasks(world).lock()).entry(task_id)
}

#[derive(Default)]
struct Entry {
    /// The agent's name, shared with the scenario (a restored task's, with the table: see
    /// [`Table::agent`]).
    agent: Arc<str>,
    task: Task,
    revision: Option<Value>,
    revision_key: Arc<str>,
    canary: String,
    canary_issued: bool,
    /// When the current script run started, for `honor-before`.
    start: Duration,
    /// The script of the current run, shared with the scenario; `None` for a task rebuilt from
    /// the ledger, which runs nothing more.
    script: Option<Arc<Script>>,
    /// What `script` does, in order, as deadlines.
    timeline: Vec<(Duration, run::Event)>,
    cursor: usize,
    /// Bumped when a paused task resumes with a new script, so a stale runner stops.
    generation: u64,
    cancel: CancelPolicy,
    /// The text of the message that started (or resumed) the task, for `{{message.text}}`.
    text: String,
    /// What streams and blocking calls listen on: made by the first [`Entry::subscribe`], since
    /// most tasks (a blocking call whose script finishes at once) never have a listener.
    events: Option<broadcast::Sender<StreamResponse>>,
    /// The buffer `events` gets when it is made.
    capacity: usize,
    push: Vec<PushTarget>,
}

/// What the caller of [`send`] needs of the task it leads to.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Want<'a> {
    /// Its snapshot, and a receiver for every later event (SendStreamingMessage).
    Stream,
    /// Its snapshot (SendMessage with `returnImmediately`).
    Snapshot,
    /// A blocking SendMessage to answer (the call `id`, its `historyLength`): the task once the
    /// due part of its script has run.
    Blocking {
        id: &'a RpcId,
        history_length: Option<i32>,
    },
}

/// What a message led to.
pub(crate) enum Sent {
    /// A task (new, resumed, or the one a follow-up or duplicate names) for [`Want::Stream`]
    /// and [`Want::Snapshot`], as it was before its due steps ran (`events` is there for a
    /// stream).
    Task {
        snapshot: Box<Task>,
        events: Option<broadcast::Receiver<StreamResponse>>,
    },
    /// For [`Want::Blocking`], the answer (a JSON body) with a task that had stopped (terminal
    /// or interrupted) once they had run, written in the same hold of its lock that took the
    /// message.
    Answered(Vec<u8>),
    /// For [`Want::Blocking`], a task still running then: its id and a receiver for what comes
    /// next, subscribed in that same hold, so the stop cannot slip in between.
    Running(String, broadcast::Receiver<StreamResponse>),
    /// A direct Message reply: no task exists.
    Message(Message),
}

/// The metadata that echoes a task's revision under the agent's key.
fn revision_meta(key: &str, revision: Option<&Value>) -> Option<Map<String, Value>> {
    revision.map(|r| Map::from_iter([(key.to_string(), r.clone())]))
}

/// A new task's entry, in the state the `message` that starts it finds it: submitted, its script
/// ahead of it. Its ids are left for the caller to write once the task has its number; its
/// canary, once it has its id.
fn new_entry(
    ctx: &Ctx<'_>,
    spec: &A2aAgent,
    script: &Arc<Script>,
    revision: Option<Value>,
    now: Duration,
) -> Shared {
    let task = Task {
        // The message itself, once its entry is written (see `send`).
        history: Vec::with_capacity(1),
        metadata: revision_meta(&spec.revision_key, revision.as_ref()),
        status: TaskStatus::new(TaskState::Submitted, ctx.world.clock.rfc3339(now)),
        ..Task::default()
    };
    Arc::new(Mutex::new(Entry {
        agent: ctx.name.clone(),
        task,
        revision,
        revision_key: spec.revision_key.clone(),
        start: now,
        script: Some(script.clone()),
        timeline: run::timeline(script, now),
        cancel: script.cancel,
        capacity: spec.stream_capacity,
        ..Entry::default()
    }))
}

impl Entry {
    fn meta(&self) -> Option<Map<String, Value>> {
        revision_meta(&self.revision_key, self.revision.as_ref())
    }

    /// A status message of this task (boxed, as a status keeps it).
    fn agent_message(&self, id: String, text: String) -> Box<Message> {
        let mut m = Message::agent(id, vec![Part::text(text)]);
        m.task_id = Some(self.task.id.clone());
        m.context_id = Some(self.task.context_id.clone());
        m.metadata = self.meta();
        Box::new(m)
    }

    /// Whether an event of this task reaches anyone: a push target or an open stream (or a
    /// blocking call waiting). Events nobody gets are not even built.
    fn listened(&self) -> bool {
        !self.push.is_empty()
            || self
                .events
                .as_ref()
                .is_some_and(|tx| tx.receiver_count() > 0)
    }

    /// Send an event to the task's streams and push targets.
    fn emit(&self, world: &Arc<World>, ev: StreamResponse) {
        push::enqueue(world, &self.push, &ev);
        if let Some(tx) = &self.events {
            // No receiver is fine: nobody is streaming this task.
            let _ = tx.send(ev);
        }
    }

    fn set_status(&mut self, world: &Arc<World>, status: TaskStatus) {
        self.task.status = status;
        if self.listened() {
            let ev = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                context_id: self.task.context_id.clone(),
                metadata: self.meta(),
                status: self.task.status.clone(),
                task_id: self.task.id.clone(),
            });
            self.emit(world, ev);
        }
    }

    /// A receiver for the task's events from now on; the channel is made on first use.
    fn subscribe(&mut self) -> broadcast::Receiver<StreamResponse> {
        match &self.events {
            Some(tx) => tx.subscribe(),
            None => {
                let (tx, rx) = broadcast::channel(self.capacity.max(1));
                self.events = Some(tx);
                rx
            }
        }
    }

    /// The answer to a message that led to this task, with what the caller wants of it, once
    /// the due steps of a (re)started script (`run`) have run and a runner has the rest.
    fn sent(&mut self, world: &Arc<World>, want: Want<'_>, run: bool) -> Sent {
        let before = match want {
            Want::Stream | Want::Snapshot => Some(Sent::Task {
                snapshot: Box::new(self.task.clone()),
                events: (want == Want::Stream).then(|| self.subscribe()),
            }),
            Want::Blocking { .. } => None,
        };
        if let Some(deadline) = run.then(|| run::run_due_in(world, self, None)).flatten() {
            run::hand_over(world, self.task.id.clone(), self.generation, deadline);
        }
        match (before, want) {
            (Some(sent), _) => sent,
            (None, Want::Blocking { id, history_length })
                if self.task.status.state.ends_stream() =>
            {
                Sent::Answered(super::stopped_answer(id, &self.task, history_length))
            }
            (None, _) => Sent::Running(self.task.id.clone(), self.subscribe()),
        }
    }

    fn log_at(&self, world: &World, at: Duration, event: &str, detail: impl Serialize) -> u64 {
        let (task, rev) = (Some(&*self.task.id), self.revision.as_ref());
        detail::log_at(world, at, &self.agent, event, task, rev, detail)
    }

    fn log(&self, world: &World, event: &str, detail: impl Serialize) -> u64 {
        self.log_at(world, world.clock.now(), event, detail)
    }

    /// Registers a checked push config on this task (replacing one with the same id).
    fn add_push(
        &mut self,
        world: &Arc<World>,
        policy: PushPolicy,
        cfg: TaskPushNotificationConfig,
    ) -> TaskPushNotificationConfig {
        let owner = self.push_owner();
        push::add(world, policy, owner, &mut self.push, cfg)
    }

    /// The task as its push targets name it.
    fn push_owner(&self) -> push::Owner {
        push::Owner {
            agent: self.agent.to_string(),
            task_id: self.task.id.clone(),
            revision: self.revision.clone(),
        }
    }

    fn note_canary(&mut self, world: &World, used: bool, now: Duration) {
        if used && !self.canary_issued {
            self.canary_issued = true;
            let detail = detail::CanaryDetail {
                canary: &self.canary,
                revision: self.revision.as_ref(),
                task_id: &self.task.id,
            };
            self.log_at(world, now, "canary", detail);
        }
    }
}
