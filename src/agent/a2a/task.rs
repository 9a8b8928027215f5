//! The task table of a world's A2A agents and the lifecycle of each task on the scenario clock.
//!
//! [`Tasks`] is a world extension, so `/_admin/reset` (a fresh world) forgets every task. Each
//! task keeps its wire snapshot (what GetTask returns), the timeline its script compiled to, a
//! broadcast channel its streams and blocking calls listen on, and its push targets. A task is
//! driven by one runner: it sleeps on the scenario clock until the next scripted event, and
//! while it holds the clock's [`Tick`] it applies every event that is due — status change,
//! side-effect call through [`crate::service::admit`], artifact, final state — so on a manual
//! clock an advance replays them in order, each at its own instant, and the side effect lands in
//! the ledger at its scheduled time.
//!
//! Everything an orchestrator does to a task (send, cancel, get, subscribe, push configs) is
//! decided here under the task's own lock and recorded in the ledger as an agent entry with the
//! task as `work_id` and the task's revision. The table's lock is held only to look a task up,
//! to number and put in a new one, and for the message-id bookkeeping (what a message id first
//! produced, and the `message` entry that reads or notes it, so the ledger's order of messages
//! is the order the table saw them in); the long part of a send — a new task's due steps, their
//! side effects through `service::admit`, the answer — runs under the task's lock alone, so
//! concurrent sends to different tasks do not wait for each other. Lock order: the table's
//! lock, then a task's lock, then `world.lock()` (taken by the ledger appends and by
//! `service::admit`), never the reverse: whoever holds a task's lock never takes the table's
//! (a new task is locked before it is put in, so taking its lock there never waits). Only a
//! holder of the table's lock waits for a task's lock while holding another task's (a
//! follow-up, for the task its message id first went to; ListTasks, which holds every task it
//! lists): there is one such holder at a time, so no two of them wait for each other.
//!
//! Those entries carry enough (rendered parts, status messages, timestamps as entry times) for
//! [`restore`] to rebuild the table from a ledger restored by the journal after a restart.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use hyper::body::Bytes;
use serde_json::{json, Map, Value};
use tokio::sync::broadcast;

use super::detail::Detail;
use super::push::{self, PushTarget};
use super::wire::{
    self, Artifact, ListTasksRequest, ListTasksResponse, Message, Part, Role, RpcError,
    SendMessageRequest, StreamResponse, Task, TaskArtifactUpdateEvent, TaskPushNotificationConfig,
    TaskState, TaskStatus, TaskStatusUpdateEvent,
};
use crate::agent::Ctx;
use crate::clock::{Clock, Tick};
use crate::hash::FastMap;
use crate::ledger::{AgentEvent, Record};
use crate::scenario::a2a::{
    A2aAgent, CancelPolicy, Outcome, PartContent, PartSpec, ReplyKind, Script, UpdateState,
};
use crate::service;
use crate::template;
use crate::world::World;

mod restore;

pub(crate) use restore::restore;

/// Events a task's streams buffer before a slow reader is cut off, at most.
const STREAM_BUFFER: usize = 1024;

/// The stream buffer for a task of `spec`: room for everything two of its scripts can emit
/// (a run and a resumed run) plus slack, between 32 and [`STREAM_BUFFER`]. A broadcast channel
/// allocates and initialises its whole buffer up front (~380 bytes a slot), so 1 024 slots for
/// every task cost ~385 KB each; even 32 slots (~12 KB) were the largest cost of a blocking
/// SendMessage round trip, which is why the channel is only made for a task someone listens
/// to ([`Entry::subscribe`]).
fn stream_capacity(spec: &A2aAgent) -> usize {
    let events = |s: &Script| s.updates.len() + s.steps.len() + s.artifacts.len() + 2;
    let most = spec
        .behaviors
        .iter()
        .map(|b| events(&b.script))
        .chain(std::iter::once(events(&spec.script)))
        .max()
        .unwrap_or(2);
    (2 * most + 16).next_power_of_two().clamp(32, STREAM_BUFFER)
}

/// Every A2A task of one world, across its agents.
#[derive(Default)]
pub struct Tasks {
    table: Mutex<Table>,
}

/// A map by string id whose table holds a 64-bit hash of each id (and the id beside its
/// value): growing it rehashes numbers, where a map keyed by the strings would read every key's
/// text, one cache miss each, under the task table's lock — 100 000 tasks and messages took
/// tens of milliseconds, which every call waiting on the lock then saw (the A2A figure's p99).
/// Ids whose hashes collide probe the next number; nothing is ever removed, so a probe ends at
/// the first free number. Every number has the bits of `mark` set (see [`TaskMap`]).
struct IdMap<V> {
    map: FastMap<u64, (String, V)>,
    mark: u64,
}

impl<V> Default for IdMap<V> {
    fn default() -> Self {
        IdMap {
            map: FastMap::default(),
            mark: 0,
        }
    }
}

impl<V> IdMap<V> {
    fn hash(id: &str) -> u64 {
        use std::hash::BuildHasher;
        crate::hash::FastState::default().hash_one(id)
    }

    /// Where `id` is, or the free number it would go to.
    fn slot(&self, id: &str) -> (u64, bool) {
        let mut h = Self::hash(id) | self.mark;
        loop {
            match self.map.get(&h) {
                Some((k, _)) if k == id => return (h, true),
                Some(_) => h = h.wrapping_add(1) | self.mark,
                None => return (h, false),
            }
        }
    }

    /// The number `id` is kept under, if it is there: it stays its own, since nothing is
    /// removed.
    fn key(&self, id: &str) -> Option<u64> {
        match self.slot(id) {
            (h, true) => Some(h),
            _ => None,
        }
    }

    /// The id and value kept under the number `key` (see [`IdMap::key`]).
    fn at(&self, key: u64) -> Option<(&String, &V)> {
        self.map.get(&key).map(|(k, v)| (k, v))
    }

    fn iter(&self) -> impl Iterator<Item = (&String, &V)> {
        self.map.values().map(|(k, v)| (k, v))
    }

    fn len(&self) -> usize {
        self.map.len()
    }
}

/// The tasks by id. The ids the table hands out, `task-N` (see [`numbered`]), index a vector by
/// N: no hashing, no copy of the id (it is written again when needed), 16 bytes a task, and
/// growing it moves no ids. Any other id (a journal's, which doubleagent did not write, or an N
/// far beyond the others) goes in an [`IdMap`] whose keys have the top bit set, so a key names
/// a task either way (N, or the map's number).
struct TaskMap {
    dense: Vec<Option<Slot>>,
    dense_len: usize,
    other: IdMap<Slot>,
}

/// Keys of [`TaskMap::other`] have it set; a `task-N` key is N, below it.
const OTHER: u64 = 1 << 63;

/// How far past the vector's end a `task-N` may land and still go in it (the numbers between are
/// left empty): direct replies take numbers too, and a journal may skip some.
const DENSE_SLACK: usize = 4096;

impl Default for TaskMap {
    fn default() -> Self {
        TaskMap {
            dense: Vec::new(),
            dense_len: 0,
            other: IdMap {
                map: FastMap::default(),
                mark: OTHER,
            },
        }
    }
}

/// N of `task-N` as [`numbered`] writes it (no sign, no leading zero), if `id` is one.
fn task_number(id: &str) -> Option<u64> {
    let digits = id.strip_prefix("task-")?;
    let canonical = !digits.is_empty()
        && digits.len() <= 18
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    canonical.then(|| digits.parse().ok()).flatten()
}

impl TaskMap {
    /// The task's key, if it is there: it stays its own, since nothing is removed.
    fn key(&self, id: &str) -> Option<u64> {
        if let Some(n) = task_number(id) {
            if self.dense.get(n as usize).is_some_and(Option::is_some) {
                return Some(n);
            }
        }
        self.other.key(id)
    }

    fn at(&self, key: u64) -> Option<&Slot> {
        if key & OTHER == 0 {
            self.dense.get(key as usize)?.as_ref()
        } else {
            self.other.at(key).map(|(_, s)| s)
        }
    }

    /// The id of the task under `key`.
    fn id_at(&self, key: u64) -> Option<String> {
        if key & OTHER == 0 {
            self.at(key).map(|_| numbered("task-", key))
        } else {
            self.other.at(key).map(|(id, _)| id.clone())
        }
    }

    fn get(&self, id: &str) -> Option<&Slot> {
        self.at(self.key(id)?)
    }

    fn get_mut(&mut self, key: u64) -> Option<&mut Slot> {
        if key & OTHER == 0 {
            self.dense.get_mut(key as usize)?.as_mut()
        } else {
            self.other.map.get_mut(&key).map(|(_, s)| s)
        }
    }

    /// Puts in a task that is not there yet; returns its key.
    fn put(&mut self, id: &str, slot: Slot) -> u64 {
        if let Some(n) = task_number(id).filter(|&n| (n as usize) < self.dense.len() + DENSE_SLACK)
        {
            let i = n as usize;
            if i >= self.dense.len() {
                self.dense.resize_with(i + 1, || None);
            }
            if self.dense[i].is_none() {
                self.dense[i] = Some(slot);
                self.dense_len += 1;
                return n;
            }
        }
        let (h, _) = self.other.slot(id);
        self.other.map.insert(h, (id.to_string(), slot));
        h
    }

    /// Every task with its id (written again for `task-N`).
    fn iter(&self) -> impl Iterator<Item = (String, &Slot)> {
        let dense = self
            .dense
            .iter()
            .enumerate()
            .filter_map(|(n, s)| s.as_ref().map(|s| (numbered("task-", n as u64), s)));
        dense.chain(self.other.iter().map(|(id, s)| (id.clone(), s)))
    }

    fn values(&self) -> impl Iterator<Item = &Slot> {
        let dense = self.dense.iter().flatten();
        dense.chain(self.other.map.values().map(|(_, s)| s))
    }

    fn len(&self) -> usize {
        self.dense_len + self.other.len()
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A task in the table: its entry behind a lock of its own (see the module's header). Shared,
/// so that the entry can be locked once the table's lock is released; several hundred bytes
/// the map would otherwise move when it grows.
type Shared = Arc<Mutex<Entry>>;

/// A task's place in the table.
struct Slot {
    /// Its place in creation order (see [`Table::insert`]), for stable listing.
    created: u64,
    entry: Shared,
}

/// A task's entry, locked. Every mutation of an entry keeps it consistent before it can panic,
/// so poison is harmless (as for the table).
fn lock_entry(cell: &Mutex<Entry>) -> MutexGuard<'_, Entry> {
    cell.lock().unwrap_or_else(|e| e.into_inner())
}

#[derive(Default)]
struct Table {
    tasks: TaskMap,
    /// How many tasks were ever put in: the next one's [`Entry::created`].
    created: u64,
    /// What each agent's messages (by messageId) first produced, for de-duplication and for
    /// the ledger. By agent first, so that a message is looked up without copying its id; the
    /// agent's name here is the one tasks restored from the ledger share.
    seen: FastMap<Arc<str>, IdMap<Seen>>,
    next_id: u64,
}

impl Table {
    /// What the message `message_id` to `agent` first produced, if it came before, and the
    /// number the message id is kept under or would go to, for
    /// [`Table::note_seen`] to use instead of hashing and probing again (it checks the number
    /// still fits: the lock may have been released in between).
    fn look(&self, agent: &str, message_id: &str) -> (Option<&Seen>, Option<u64>) {
        let Some(of_agent) = self.seen.get(agent) else {
            return (None, None);
        };
        let (h, found) = of_agent.slot(message_id);
        let seen = found.then(|| of_agent.map.get(&h).map(|(_, s)| s));
        (seen.flatten(), Some(h))
    }

    /// Notes what the message `message_id` to `agent` produced, unless one with that id came
    /// before (or always, with `replace`). The id is copied only if it is new (an owned one,
    /// made before the table's lock was taken, is moved in).
    /// `at` is what [`Table::look`] gave, if anything.
    fn note_seen(
        &mut self,
        agent: &str,
        message_id: impl AsRef<str> + Into<String>,
        at: Option<u64>,
        replace: bool,
        seen: impl FnOnce() -> Seen,
    ) {
        let id = message_id.as_ref();
        let of_agent = match self.seen.get_mut(agent) {
            Some(m) => m,
            None => self.seen.entry(agent.into()).or_default(),
        };
        let slot = match at.map(|h| (h, of_agent.map.get(&h))) {
            Some((h, Some((k, _)))) if k == id => (h, true),
            Some((h, None)) => (h, false),
            _ => of_agent.slot(id),
        };
        match slot {
            (h, true) if replace => {
                if let Some((_, s)) = of_agent.map.get_mut(&h) {
                    *s = seen();
                }
            }
            (_, true) => {}
            (h, false) => {
                of_agent.map.insert(h, (message_id.into(), seen()));
            }
        }
    }

    /// `agent`'s name, as the tasks restored from the ledger share it (a task made by a call
    /// shares the scenario's).
    fn agent(&mut self, agent: &str) -> Arc<str> {
        if let Some((name, _)) = self.seen.get_key_value(agent) {
            return name.clone();
        }
        let name: Arc<str> = agent.into();
        self.seen.insert(name.clone(), IdMap::default());
        name
    }

    /// The task `id`, to lock once the table's lock is released.
    fn entry(&self, id: &str) -> Option<Shared> {
        self.tasks.get(id).map(|s| s.entry.clone())
    }

    /// Puts a task in, numbered in creation order (a task already there is replaced and keeps
    /// its place). Returns its key (see [`TaskMap`]).
    fn insert(&mut self, id: &str, entry: Shared) -> u64 {
        if let Some(key) = self.tasks.key(id) {
            if let Some(old) = self.tasks.get_mut(key) {
                old.entry = entry;
            }
            return key;
        }
        let created = self.created;
        self.created += 1;
        self.tasks.put(id, Slot { created, entry })
    }

    /// The task kept under `key` (see [`TaskMap`]).
    fn task_at(&self, key: u64) -> Option<&Shared> {
        self.tasks.at(key).map(|s| &s.entry)
    }

    /// The tasks' ids in creation order.
    fn ids_in_order(&self) -> Vec<String> {
        let mut ids: Vec<(u64, String)> =
            self.tasks.iter().map(|(id, s)| (s.created, id)).collect();
        ids.sort_unstable();
        ids.into_iter().map(|(_, id)| id).collect()
    }
}

#[derive(Clone)]
enum Seen {
    /// The task's key in the table (see [`TaskMap`]), not a copy of its id.
    Task(u64),
    /// Boxed: one of these is kept per message, and most name a task.
    Message(Box<Message>),
}

struct Entry {
    /// The agent's name, shared with the scenario (a restored task's, with the table: see
    /// [`Table::agent`]).
    agent: Arc<str>,
    task: Task,
    revision: Option<Value>,
    revision_key: Arc<str>,
    canary: Token,
    canary_issued: bool,
    /// When the current script run started, for `honor-before`.
    start: Duration,
    /// The script of the current run, shared with the scenario; `None` for a task rebuilt from
    /// the ledger, which runs nothing more.
    script: Option<Arc<Script>>,
    /// What `script` does, in order, as deadlines.
    timeline: Vec<(Duration, Event)>,
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

/// One scripted thing a task does: the index of the step in the task's [`Script`].
#[derive(Clone, Copy, Debug)]
enum Event {
    Status(usize),
    Call(usize),
    Artifact(usize),
    Final,
}

/// What the caller of [`send`] needs of the task it leads to.
#[derive(Clone, Copy)]
pub(super) enum Want<'a> {
    /// Its snapshot, and a receiver for every later event (SendStreamingMessage).
    Stream,
    /// Its snapshot (SendMessage with `returnImmediately`).
    Snapshot,
    /// A blocking SendMessage: the answer made from the task once the due part of its script
    /// has run, if it has stopped then (see [`Sent::Looked`]).
    Answer(&'a dyn Fn(&Task) -> Vec<u8>),
}

/// What a message led to.
pub(super) enum Sent {
    /// A task (new, resumed, or the one a follow-up or duplicate names), for [`Want::Stream`]
    /// and [`Want::Snapshot`]. `run` says a script was (re)started and needs [`start`];
    /// `events` is there for a stream.
    Task {
        id: String,
        snapshot: Box<Task>,
        events: Option<broadcast::Receiver<StreamResponse>>,
        run: bool,
    },
    /// For [`Want::Answer`]: the script's due steps have run (the rest handed to a runner) in
    /// the same hold of the task's lock that took the message, and the task was looked at
    /// then: the answer if it had stopped (terminal or interrupted), else its id and a receiver
    /// for what comes next, so the stop cannot slip between the look and the subscription. A
    /// script that finishes at once is so answered without a channel or a runner ever being
    /// made, without a copy of the task and without looking it up again.
    Looked(Result<Vec<u8>, (String, broadcast::Receiver<StreamResponse>)>),
    /// A direct Message reply: no task exists.
    Message(Message),
}

impl Tasks {
    fn lock(&self) -> MutexGuard<'_, Table> {
        // Every mutation keeps the table consistent before it can panic, so poison is harmless.
        self.table.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn tasks(world: &World) -> &Tasks {
    world.extension::<Tasks>()
}

/// Append an agent entry with the task as work id and its revision.
pub(super) fn log(
    world: &World,
    agent: &str,
    event: &str,
    task: Option<&str>,
    revision: Option<&Value>,
    detail: Value,
) -> u64 {
    log_at(
        world,
        world.clock.now(),
        agent,
        event,
        task,
        revision,
        detail,
    )
}

/// [`log`] at a given scenario time: a status change is logged at the instant its timestamp
/// names, so the task rebuilt from the ledger after a restart carries the very same timestamp.
fn log_at(
    world: &World,
    at: Duration,
    agent: &str,
    event: &str,
    task: Option<&str>,
    revision: Option<&Value>,
    detail: Value,
) -> u64 {
    let mut rec = Record::agent_event(agent, event, at, detail);
    rec.work_id = task.map(str::to_string);
    rec.revision = revision.cloned();
    world.lock().ledger.append(rec)
}

/// [`log_at`] with the detail written by `write` (keys in sorted order, see [`Detail`]) and
/// appended as text: the entries of a round trip, which so never build a `Value` tree.
#[allow(clippy::too_many_arguments)]
fn log_with(
    world: &World,
    at: Duration,
    agent: &str,
    event: &str,
    task: Option<&str>,
    revision: Option<&Value>,
    write: impl FnOnce(&mut Detail),
) -> u64 {
    thread_local! {
        // One buffer per thread, reused: taken while in use, so a nested call gets its own.
        static BUF: Cell<Vec<u8>> = const { Cell::new(Vec::new()) };
    }
    let mut d = Detail::new(BUF.with(Cell::take));
    write(&mut d);
    let seq = world.lock().ledger.append_agent_event(&AgentEvent {
        agent,
        event,
        at,
        work_id: task,
        revision,
        detail: d.finish(),
    });
    BUF.with(|b| b.set(d.into_buf()));
    seq
}

/// Record a protocol error an orchestrator got (malformed call, unknown method...).
pub(super) fn log_error(world: &World, agent: &str, method: &str, err: &RpcError) {
    log(
        world,
        agent,
        "rpc-error",
        None,
        None,
        json!({"method": method, "code": err.code, "message": err.message}),
    );
}

fn revision_meta(key: &str, revision: Option<&Value>) -> Option<Map<String, Value>> {
    revision.map(|r| {
        let mut m = Map::new();
        m.insert(key.to_string(), r.clone());
        m
    })
}

/// `prefix` and `n` (`task-12`): ids are made for every task, and `format!` costs more.
fn numbered(prefix: &str, n: u64) -> String {
    let mut out = String::new();
    numbered_into(&mut out, prefix, n);
    out
}

/// Room for any `task-N`: a new task's id is written into it under the table's lock.
const TASK_ID_ROOM: usize = "task-".len() + 20;

/// [`numbered`], written over `out` (which allocates nothing if it has the room).
fn numbered_into(out: &mut String, prefix: &str, n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    let mut n = n;
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.clear();
    out.reserve(prefix.len() + digits.len() - i);
    out.push_str(prefix);
    // Only ASCII digits were written.
    out.extend(digits[i..].iter().map(|&d| char::from(d)));
}

/// A new task's entry, in the state the `message` that starts it finds it: submitted, its script
/// ahead of it. Its id and context id are left for the caller to write once the task has its
/// number; its canary, once it has its id.
fn new_entry(
    ctx: &Ctx<'_>,
    spec: &A2aAgent,
    script: &Arc<Script>,
    revision: Option<Value>,
    now: Duration,
) -> Shared {
    let world = &ctx.world;
    // The history gets the message itself, once its entry is written (see `send_locked`).
    let task = Task {
        id: String::with_capacity(TASK_ID_ROOM),
        context_id: String::new(),
        status: TaskStatus::new(TaskState::Submitted, stamp(world, now)),
        artifacts: Vec::new(),
        history: Vec::with_capacity(1),
        metadata: revision_meta(&spec.revision_key, revision.as_ref()),
    };
    Arc::new(Mutex::new(Entry {
        agent: ctx.name.clone(),
        task,
        revision,
        revision_key: spec.revision_key.clone(),
        canary: Token([0; 20]),
        canary_issued: false,
        start: now,
        script: Some(script.clone()),
        timeline: timeline(script, now),
        cursor: 0,
        generation: 0,
        cancel: script.cancel,
        text: String::new(),
        events: None,
        capacity: stream_capacity(spec),
        push: Vec::new(),
    }))
}

/// `world.clock.rfc3339(at)`, formatted once per millisecond per thread: a round trip stamps
/// its task's status two or three times within the same millisecond.
fn stamp(world: &World, at: Duration) -> String {
    restamp(world, at, None)
}

/// [`stamp`] written into the buffer of the timestamp it replaces, if any: a status change
/// then allocates nothing for its timestamp.
fn restamp(world: &World, at: Duration, old: Option<String>) -> String {
    thread_local! {
        static LAST: std::cell::RefCell<(u64, String)> =
            const { std::cell::RefCell::new((u64::MAX, String::new())) };
    }
    let ms = world.clock.wall_ms(at);
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        if last.0 != ms {
            *last = (ms, crate::clock::format_rfc3339_ms(ms));
        }
        match old {
            Some(mut s) => {
                s.clear();
                s.push_str(&last.1);
                s
            }
            None => last.1.clone(),
        }
    })
}

/// Where `cc` (two of `c`) first occurs in `s`: `s.find("{{")` without a searcher.
fn find_pair(s: &str, c: u8) -> Option<usize> {
    s.as_bytes().windows(2).position(|w| w[0] == c && w[1] == c)
}

/// A token unique to (world seed, task, revision): it lets a later check tell which task and
/// revision produced a value that shows up somewhere else.
fn canary(world: &World, task_id: &str, revision: Option<&Value>) -> Token {
    canary_token(world.seed, task_id, revision)
}

/// A canary token, `cny-` and 16 hex digits, kept inline: every task keeps one for the world's
/// life, and a string of its own was one more allocation per task.
#[derive(Clone, Copy)]
struct Token([u8; 20]);

impl Token {
    /// A token as the ledger gives it back (see `restore`): what [`canary_token`] makes.
    fn parse(s: &str) -> Option<Token> {
        <[u8; 20]>::try_from(s.as_bytes()).ok().map(Token)
    }

    fn as_str(&self) -> &str {
        // Only made from ASCII digits or from a whole string (`parse`).
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

fn canary_token(seed: u64, task_id: &str, revision: Option<&Value>) -> Token {
    // `format!("canary/{task_id}/{rev}")` and `format!("cny-{h:016x}")`, written out: every
    // task gets one, and the formatting machinery cost more than the hash.
    // The stream's name goes into a buffer reused by the thread: only its hash is kept.
    thread_local! {
        static STREAM: Cell<String> = const { Cell::new(String::new()) };
    }
    let mut stream = STREAM.with(Cell::take);
    stream.clear();
    stream.push_str("canary/");
    stream.push_str(task_id);
    stream.push('/');
    if let Some(r) = revision {
        use std::fmt::Write;
        let _ = write!(stream, "{r}");
    }
    let h = crate::fate::stream_seed(seed, &stream, 0);
    STREAM.with(|s| s.set(stream));
    let mut token = *b"cny-0000000000000000";
    for (i, shift) in (0..16).rev().enumerate() {
        token[4 + i] = b"0123456789abcdef"[((h >> (shift * 4)) & 0xf) as usize];
    }
    Token(token)
}

// ---------------------------------------------------------------------------------------------
// Placeholders

/// Expands `{{canary}}`, `{{task.id}}`, `{{context.id}}`, `{{revision}}`, `{{agent}}` and
/// `{{message.text}}`, noting whether the canary was issued.
struct Render<'a> {
    task_id: &'a str,
    context_id: &'a str,
    revision: Option<&'a Value>,
    /// As bytes (ASCII): made text only where a script names it, which few of a task's
    /// renderings do (`from_utf8` for every one cost more than the rest of most).
    canary: &'a [u8],
    agent: &'a str,
    text: &'a str,
    used_canary: std::cell::Cell<bool>,
}

impl template::Vars for Render<'_> {
    fn var(&self, name: &str) -> Option<Value> {
        Some(match name.trim() {
            "canary" => {
                self.used_canary.set(true);
                Value::from(self.canary_text())
            }
            "task.id" => Value::from(self.task_id),
            "context.id" => Value::from(self.context_id),
            "revision" => self.revision?.clone(),
            "agent" => Value::from(self.agent),
            "message.text" => Value::from(self.text),
            _ => return None,
        })
    }
}

impl Render<'_> {
    fn canary_text(&self) -> &str {
        std::str::from_utf8(self.canary).unwrap_or_default()
    }

    /// `template::text(s, self)`, writing each value straight into the result: the same
    /// placeholders found the same way, without a `Value` (and an allocation) per value.
    fn text(&self, s: &str) -> String {
        let mut out = String::with_capacity(s.len() + 16);
        let mut rest = s;
        while let Some(start) = find_pair(rest, b'{') {
            let Some(len) = find_pair(&rest[start..], b'}') else {
                break;
            };
            out.push_str(&rest[..start]);
            if !self.push_var(&mut out, rest[start + 2..start + len].trim()) {
                out.push_str(&rest[start..start + len + 2]);
            }
            rest = &rest[start + len + 2..];
        }
        out.push_str(rest);
        out
    }

    /// Appends what [`template::Vars::var`] gives for `name`; false if that is nothing.
    fn push_var(&self, out: &mut String, name: &str) -> bool {
        match name {
            "canary" => {
                self.used_canary.set(true);
                out.push_str(self.canary_text());
            }
            "task.id" => out.push_str(self.task_id),
            "context.id" => out.push_str(self.context_id),
            "agent" => out.push_str(self.agent),
            "message.text" => out.push_str(self.text),
            "revision" => match self.revision {
                None => return false,
                Some(Value::String(v)) => out.push_str(v),
                Some(v) => out.push_str(&v.to_string()),
            },
            _ => return false,
        }
        true
    }

    fn json(&self, v: &Value) -> Value {
        template::json(v, self)
    }

    fn part(&self, p: &PartSpec) -> Part {
        let part = match &p.content {
            PartContent::Text(t) => Part::text(self.text(t)),
            PartContent::Raw(t) => Part::raw(self.text(t).as_bytes()),
            PartContent::Url(u) => Part::url(self.text(u)),
            PartContent::Data(d) => Part::data(self.json(d)),
        };
        part.set_filename(p.filename.clone())
            .set_media_type(p.media_type.clone())
            .set_metadata(
                p.metadata
                    .as_ref()
                    .and_then(|m| self.json(m).as_object().cloned()),
            )
    }
}

impl Entry {
    fn render(&self) -> Render<'_> {
        Render {
            task_id: &self.task.id,
            context_id: &self.task.context_id,
            revision: self.revision.as_ref(),
            canary: &self.canary.0,
            agent: &self.agent,
            text: &self.text,
            used_canary: std::cell::Cell::new(false),
        }
    }

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
                task_id: self.task.id.clone(),
                context_id: self.task.context_id.clone(),
                status: self.task.status.clone(),
                metadata: self.meta(),
            });
            self.emit(world, ev);
        }
    }

    /// A receiver for the task's events from now on; the channel is made on first use.
    fn subscribe(&mut self) -> broadcast::Receiver<StreamResponse> {
        match &self.events {
            Some(tx) => tx.subscribe(),
            None => {
                let (tx, rx) = broadcast::channel(self.capacity);
                self.events = Some(tx);
                rx
            }
        }
    }

    /// The answer to a message that led to this task, with what the caller wants of it; for
    /// [`Want::Answer`], also the runner's next deadline to hand over once the task's lock is
    /// released (see [`send`]).
    fn sent(&mut self, world: &Arc<World>, want: Want<'_>, run: bool, next: &mut Next) -> Sent {
        match want {
            Want::Answer(answer) => {
                if let Some((generation, Some(deadline))) =
                    run.then(|| run_due_in(world, self, None)).flatten()
                {
                    *next = Some((self.task.id.clone(), generation, deadline));
                }
                Sent::Looked(if self.task.status.state.ends_stream() {
                    Ok(answer(&self.task))
                } else {
                    Err((self.task.id.clone(), self.subscribe()))
                })
            }
            Want::Stream | Want::Snapshot => Sent::Task {
                id: self.task.id.clone(),
                snapshot: Box::new(self.task.clone()),
                events: matches!(want, Want::Stream).then(|| self.subscribe()),
                run,
            },
        }
    }

    fn log(&self, world: &World, event: &str, detail: Value) -> u64 {
        self.log_at(world, world.clock.now(), event, detail)
    }

    fn log_with(
        &self,
        world: &World,
        at: Duration,
        event: &str,
        write: impl FnOnce(&mut Detail),
    ) -> u64 {
        log_with(
            world,
            at,
            &self.agent,
            event,
            Some(&self.task.id),
            self.revision.as_ref(),
            write,
        )
    }

    fn log_at(&self, world: &World, at: Duration, event: &str, detail: Value) -> u64 {
        log_at(
            world,
            at,
            &self.agent,
            event,
            Some(&self.task.id),
            self.revision.as_ref(),
            detail,
        )
    }

    /// Drops what only a running script needs: tasks are kept for as long as the world, and a
    /// resumed run gets a new timeline and the text of the message that resumes it.
    fn run_over(&mut self) {
        self.timeline = Vec::new();
        self.text = String::new();
    }

    fn note_canary(&mut self, world: &World, used: bool, now: Duration) {
        if used && !self.canary_issued {
            self.canary_issued = true;
            self.log_with(world, now, "canary", |d| {
                d.str("canary", self.canary.as_str())
                    .opt_value("revision", self.revision.as_ref())
                    .str("task_id", &self.task.id);
            });
        }
    }
}

/// The events of a script as absolute deadlines from `start`, in the order they happen:
/// by time, then updates, calls, artifacts and the final state.
fn timeline(script: &Script, start: Duration) -> Vec<(Duration, Event)> {
    let mut evs: Vec<(Duration, u8, usize, Event)> =
        Vec::with_capacity(script.updates.len() + script.steps.len() + script.artifacts.len() + 1);
    for (i, u) in script.updates.iter().enumerate() {
        evs.push((start + u.at, 0, i, Event::Status(i)));
    }
    for (i, s) in script.steps.iter().enumerate() {
        evs.push((start + s.at, 1, i, Event::Call(i)));
    }
    for (i, a) in script.artifacts.iter().enumerate() {
        let at = a.at.unwrap_or(script.work);
        evs.push((start + at, 2, i, Event::Artifact(i)));
    }
    evs.push((start + script.work, 3, 0, Event::Final));
    evs.sort_by_key(|(t, rank, i, _)| (*t, *rank, *i));
    evs.into_iter().map(|(t, _, _, e)| (t, e)).collect()
}

fn outcome_state(o: Outcome) -> TaskState {
    match o {
        Outcome::Completed => TaskState::Completed,
        Outcome::Failed => TaskState::Failed,
        Outcome::Rejected => TaskState::Rejected,
        Outcome::InputRequired => TaskState::InputRequired,
        Outcome::AuthRequired => TaskState::AuthRequired,
    }
}

fn outcome_name(o: Outcome) -> &'static str {
    match o {
        Outcome::Completed => "completed",
        Outcome::Failed => "failed",
        Outcome::Rejected => "rejected",
        Outcome::InputRequired => "input-required",
        Outcome::AuthRequired => "auth-required",
    }
}

/// What a `message` entry says beyond the message itself, by how the message was taken.
#[derive(Clone, Copy)]
enum Taken<'a> {
    /// A repeated messageId, de-duplicated: what the first one produced.
    Duplicate { of: &'a str },
    /// A follow-up naming its task.
    FollowUp {
        resumes: bool,
        repeat_of: Option<&'a str>,
    },
    /// A new task or a direct reply.
    New {
        behavior: Option<usize>,
        repeat_of: Option<&'a str>,
    },
}

/// The detail of a `message` entry: the call, the message's ids, revision and text, how it was
/// taken, and what a plain one-text-part user message lacks to give the message back exactly
/// (it goes into the task's history, which survives a restart), so the usual entry stays small.
/// Keys in sorted order (see [`Detail`]).
#[allow(clippy::too_many_arguments)]
fn message_detail(
    d: &mut Detail,
    method: &str,
    msg: &Message,
    text: &str,
    revision: Option<&Value>,
    task_id: Option<&str>,
    context_id: Option<&str>,
    taken: Taken<'_>,
) {
    // `msg.parts != [Part::text(text)]`, without making the part.
    let one_plain_text = matches!(&msg.parts[..], [p] if p.as_text() == Some(text)
        && p.is_bare());
    if let Taken::New { behavior, .. } = taken {
        match behavior {
            Some(b) => d.ser("behavior", &b),
            None => d.null("behavior"),
        };
    }
    d.opt_str("context_id", context_id);
    if let Taken::Duplicate { of } = taken {
        d.str("duplicate_of", of);
    }
    if !msg.extensions.is_empty() {
        d.ser("extensions", &msg.extensions);
    }
    if let Taken::FollowUp { .. } = taken {
        d.bool("follow_up", true);
    }
    d.str("message_id", &msg.message_id);
    if let Some(m) = &msg.metadata {
        d.ser("metadata", m);
    }
    d.str("method", method);
    if !one_plain_text {
        d.parts("parts", &msg.parts);
    }
    if !msg.reference_task_ids.is_empty() {
        d.ser("reference_task_ids", &msg.reference_task_ids);
    }
    match taken {
        Taken::FollowUp { repeat_of, .. } | Taken::New { repeat_of, .. } => {
            d.opt_str("repeat_of", repeat_of);
        }
        Taken::Duplicate { .. } => {}
    }
    if let Taken::FollowUp { resumes, .. } = taken {
        d.bool("resumes", resumes);
    }
    d.opt_value("revision", revision);
    if msg.role != Role::User {
        d.ser("role", &msg.role);
    }
    d.opt_str("task_id", task_id).str("text", text);
}

/// Put an artifact event into a task's artifacts: a new id is added, a chunk with `append`
/// extends the parts of the one it continues, any other replaces it.
fn merge_artifact(artifacts: &mut Vec<Artifact>, artifact: Artifact, append: bool) {
    match artifacts
        .iter_mut()
        .find(|a| a.artifact_id == artifact.artifact_id)
    {
        Some(existing) if append => existing.parts.extend(artifact.parts),
        Some(existing) => *existing = artifact,
        None => {
            // One more slot, not the four a first push gives: a task keeps its artifacts for
            // the world's life, and has one or two (~150 bytes each).
            artifacts.reserve_exact(1);
            artifacts.push(artifact)
        }
    }
}

// ---------------------------------------------------------------------------------------------
// SendMessage / SendStreamingMessage

/// Take in a message: a follow-up to a task, a duplicate, a new task, or a direct reply.
pub(super) fn send(
    ctx: &Ctx<'_>,
    spec: &A2aAgent,
    method: &str,
    req: SendMessageRequest,
    want: Want<'_>,
) -> Result<Sent, RpcError> {
    let mut next = None;
    let sent = send_locked(ctx, spec, method, req, want, &mut next)?;
    // The locks are released: a runner for the rest of the script, if anything is left.
    if let Some((id, generation, deadline)) = next {
        hand_over(&ctx.world, &id, (generation, Some(deadline)));
    }
    Ok(sent)
}

/// The task, generation and deadline a runner is needed for, once the table's lock is released.
type Next = Option<(String, u64, Duration)>;

/// The table's lock for a message, taken once what its id first went to (if anything) has its
/// `message` entry in the ledger. A new task's `message` entry is written under the task's own
/// lock after the table's is released, and verification reads repeats in ledger order (REC-4:
/// the first message with an id, then each `repeat_of` it), so a new message whose id was seen
/// before waits for the first task's lock, holding neither lock; if the id was first seen while
/// it waited (a race of two sends of one id), it waits again for that one. What an id first
/// produced never changes but to a direct reply, whose entries are written under the table's
/// lock. A follow-up waits for the first task itself (see [`send_locked`]); a duplicate, for the
/// very task it answers with.
fn new_message_turn<'a>(
    all: &'a Tasks,
    agent: &str,
    msg: &Message,
    follow_up: bool,
    dedupe: bool,
) -> (MutexGuard<'a, Table>, Option<Seen>, Option<u64>) {
    let mut waited = None;
    loop {
        let table = all.lock();
        let first = match table.look(agent, &msg.message_id) {
            (Some(&Seen::Task(key)), _) if !follow_up && !dedupe && waited != Some(key) => key,
            (seen, at) => {
                let seen = seen.cloned();
                return (table, seen, at);
            }
        };
        let cell = table.task_at(first).cloned();
        drop(table);
        if let Some(cell) = cell {
            drop(lock_entry(&cell));
        }
        waited = Some(first);
    }
}

/// [`send`] under the table's lock and then the task's (see the module's header; both released
/// when this returns); `next` is what a [`Want::Answer`] leaves for a runner.
fn send_locked(
    ctx: &Ctx<'_>,
    spec: &A2aAgent,
    method: &str,
    req: SendMessageRequest,
    want: Want<'_>,
    next: &mut Next,
) -> Result<Sent, RpcError> {
    let world = &ctx.world;
    let msg = &req.message;
    if msg.message_id.is_empty() {
        return Err(RpcError::invalid_params("message.messageId is required"));
    }
    if msg.parts.is_empty() {
        return Err(RpcError::invalid_params(
            "message.parts must hold at least one part",
        ));
    }
    let push_config = match req.push_config() {
        Some(c) => Some(push::check(spec, c.clone())?),
        None => None,
    };
    let revision = msg
        .metadata
        .as_ref()
        .and_then(|m| m.get(&*spec.revision_key))
        .filter(|v| !v.is_null())
        .cloned();
    let text = msg.text();
    // One instant for the entries of this message (a follow-up or a duplicate reads its own
    // once it has its task's lock, which it may have had to wait for).
    let now = world.clock.now();
    let (behavior, script) = spec.script_for(&text, &msg.message_id, msg.metadata.as_ref());
    let follow_up = msg.task_id.as_deref().is_some_and(|t| !t.is_empty());
    // A new task's entry, and the copy of the message id the table keeps, made before the
    // table's lock is taken: their allocations (and the page faults fresh memory may take) then
    // hold up no other send. The entry's ids are written once the task has its number. (With
    // de-duplication on, a repeated message makes no task: the entry is made under the lock.)
    let fresh =
        (!follow_up && !spec.dedupe_message_id && script.reply == ReplyKind::Task).then(|| {
            let entry = new_entry(ctx, spec, script, revision.clone(), now);
            (entry, msg.message_id.clone())
        });
    let all = tasks(world);
    let (mut table, seen, at) =
        new_message_turn(all, ctx.name, msg, follow_up, spec.dedupe_message_id);
    let detail = |d: &mut Detail, task_id: Option<&str>, context_id: Option<&str>, taken| {
        message_detail(
            d,
            method,
            msg,
            &text,
            revision.as_ref(),
            task_id,
            context_id,
            taken,
        )
    };

    // A repeated messageId, with de-duplication on: answer with what the first one produced.
    if let (true, Some(first)) = (spec.dedupe_message_id, &seen) {
        match first {
            &Seen::Task(key) => {
                let found = table.task_at(key).cloned().zip(table.tasks.id_at(key));
                if let Some((cell, id)) = found {
                    // Nothing of the table changes: the task answers under its own lock alone,
                    // once whoever has it is done (its `message` entry is then in the ledger,
                    // before this one's).
                    drop(table);
                    let mut e = lock_entry(&cell);
                    let now = world.clock.now();
                    e.log_with(world, now, "message", |d| {
                        let taken = Taken::Duplicate { of: &id };
                        detail(d, Some(&id), Some(&e.task.context_id), taken)
                    });
                    return Ok(e.sent(world, want, false, next));
                }
            }
            Seen::Message(m) => {
                log_with(
                    world,
                    now,
                    ctx.name,
                    "message",
                    None,
                    revision.as_ref(),
                    |d| {
                        let taken = Taken::Duplicate { of: &m.message_id };
                        detail(d, None, m.context_id.as_deref(), taken)
                    },
                );
                return Ok(Sent::Message((**m).clone()));
            }
        }
    }
    let repeat_of = seen.as_ref().and_then(|s| match s {
        &Seen::Task(key) => table.tasks.id_at(key),
        Seen::Message(m) => Some(m.message_id.clone()),
    });

    // A message naming a task: a follow-up. Terminal tasks never restart (REC-6).
    if let Some(task_id) = msg.task_id.as_deref().filter(|t| !t.is_empty()) {
        // The task's lock is taken with the table's still held (the documented order), so the
        // message is noted as seen in the same hold of the table that found it unseen.
        let cell = table.entry(task_id);
        let mut guard = cell.as_deref().map(lock_entry);
        let Some(e) = guard.as_deref_mut().filter(|e| *e.agent == **ctx.name) else {
            return Err(RpcError::task_not_found(task_id));
        };
        // The instant the task was taken (its lock may have been waited for).
        let now = world.clock.now();
        if let Some(c) = msg.context_id.as_deref().filter(|c| !c.is_empty()) {
            if c != e.task.context_id {
                return Err(RpcError::context_mismatch(c, &e.task.context_id, task_id));
            }
        }
        let state = e.task.status.state;
        if state.is_terminal() {
            return Err(RpcError::task_in_terminal_state(task_id, state));
        }
        // A repeated message id: the task it first went to has its `message` entry in the
        // ledger before this one's once its lock is free (see `new_message_turn`; waited for
        // with the table held, which only a follow-up and ListTasks do while holding a task).
        if let Some(&Seen::Task(first)) = seen.as_ref() {
            if let Some(first) = table.task_at(first) {
                if !cell.as_ref().is_some_and(|own| Arc::ptr_eq(own, first)) {
                    drop(lock_entry(first));
                }
            }
        }
        let mut m = msg.clone();
        m.task_id = Some(e.task.id.clone());
        m.context_id = Some(e.task.context_id.clone());
        e.task.history.push(m);
        let resume = state.is_interrupted();
        e.log_with(world, now, "message", |d| {
            let taken = Taken::FollowUp {
                resumes: resume,
                repeat_of: repeat_of.as_deref(),
            };
            detail(d, Some(task_id), Some(&e.task.context_id), taken)
        });
        if let Some(cfg) = push_config {
            let rev = e.revision.clone();
            push::add(
                world,
                spec.push,
                ctx.name,
                &mut e.push,
                cfg,
                task_id,
                rev.as_ref(),
            );
        }
        if resume {
            // The paused task carries on with the script this message selects.
            e.timeline = timeline(script, now);
            e.script = Some(script.clone());
            e.cursor = 0;
            e.start = now;
            e.generation += 1;
            e.cancel = script.cancel;
            e.text = text.clone();
            // Out of the interrupted state before anyone looks: a blocking call must wait for
            // the resumed run, and the reply shows the task in flight again.
            e.set_status(
                world,
                TaskStatus::new(TaskState::Submitted, stamp(world, now)),
            );
            e.log_at(
                world,
                now,
                "task-resumed",
                json!({
                    "task_id": task_id,
                    "behavior": behavior,
                    "work": crate::clock::format_duration(script.work),
                    "cancel": script.cancel.name(),
                }),
            );
        }
        if let Some(key) = table.tasks.key(task_id) {
            table.note_seen(ctx.name, &msg.message_id, at, false, || Seen::Task(key));
        }
        // The resumed run's due steps, if any, under the task's lock alone.
        drop(table);
        return Ok(e.sent(world, want, resume, next));
    }

    // A new task (or a direct reply), in the given context or a fresh one.
    table.next_id += 1;
    let n = table.next_id;
    let context_id = || {
        msg.context_id
            .clone()
            .filter(|c| !c.is_empty())
            .unwrap_or_else(|| numbered("ctx-", n))
    };

    if script.reply == ReplyKind::Message {
        let context_id = context_id();
        let reply_id = format!("msg-{n}");
        let token = canary(world, &reply_id, revision.as_ref());
        let r = Render {
            task_id: "",
            context_id: &context_id,
            revision: revision.as_ref(),
            canary: &token.0,
            agent: ctx.name,
            text: &text,
            used_canary: std::cell::Cell::new(false),
        };
        let parts = match &script.message {
            Some(t) => vec![Part::text(r.text(t))],
            None => script
                .artifacts
                .iter()
                .flat_map(|a| a.parts.iter().map(|p| r.part(p)))
                .collect(),
        };
        let mut reply = Message::agent(reply_id.clone(), parts);
        reply.context_id = Some(context_id.clone());
        reply.metadata = revision_meta(&spec.revision_key, revision.as_ref());
        let taken = Taken::New {
            behavior,
            repeat_of: repeat_of.as_deref(),
        };
        let rev = revision.as_ref();
        log_with(world, now, ctx.name, "message", None, rev, |d| {
            detail(d, None, Some(&context_id), taken)
        });
        // The reply's parts and the message it answers: what de-duplication replays, also
        // after a restart.
        log_with(world, now, ctx.name, "result", None, rev, |d| {
            d.str("context_id", &context_id)
                .str("in_reply_to", &msg.message_id)
                .str("message_id", &reply_id)
                .parts("parts", &reply.parts)
                .str("reply", "message");
        });
        if r.used_canary.get() {
            log_with(world, now, ctx.name, "canary", None, rev, |d| {
                d.str("canary", token.as_str())
                    .str("message_id", &reply_id)
                    .opt_value("revision", rev)
                    .null("task_id");
            });
        }
        table.note_seen(ctx.name, &msg.message_id, at, true, || {
            Seen::Message(Box::new(reply.clone()))
        });
        return Ok(Sent::Message(reply));
    }

    let (cell, seen_id) = fresh.unwrap_or_else(|| {
        let entry = new_entry(ctx, spec, script, revision.clone(), now);
        (entry, msg.message_id.clone())
    });
    // Locked before it is put in (so this never waits): whoever finds the task from now on waits
    // for this lock, and sees it only once its ids and entries are written and its due steps
    // have run.
    let mut guard = lock_entry(&cell);
    let entry = &mut *guard;
    numbered_into(&mut entry.task.id, "task-", n);
    let key = table.insert(&entry.task.id, cell.clone());
    table.note_seen(ctx.name, seen_id, at, false, || Seen::Task(key));
    drop(table);
    let context_id = context_id();
    entry.task.context_id.clone_from(&context_id);
    entry.canary = canary(world, &entry.task.id, revision.as_ref());
    entry.log_with(world, now, "message", |d| {
        let taken = Taken::New {
            behavior,
            repeat_of: repeat_of.as_deref(),
        };
        detail(d, Some(&entry.task.id), Some(&context_id), taken)
    });
    // Nobody has seen the entry yet: the message and its text move into it now.
    entry.text = text;
    let mut user = req.message;
    user.task_id = Some(entry.task.id.clone());
    user.context_id = Some(context_id);
    entry.task.history.push(user);
    entry.log_with(world, now, "task-created", |d| {
        match behavior {
            Some(b) => d.ser("behavior", &b),
            None => d.null("behavior"),
        };
        d.str("cancel", &script.cancel.name())
            .str("context_id", &entry.task.context_id)
            .opt_value("revision", revision.as_ref())
            .str("task_id", &entry.task.id)
            .str("work", &crate::clock::format_duration(script.work));
    });
    if let Some(cfg) = push_config {
        push::add(
            world,
            spec.push,
            ctx.name,
            &mut entry.push,
            cfg,
            &entry.task.id,
            revision.as_ref(),
        );
    }
    // Push receivers get the initial Task snapshot too, as the reference sender does.
    if !entry.push.is_empty() {
        push::enqueue(
            world,
            &entry.push,
            &StreamResponse::Task(entry.task.clone()),
        );
    }
    Ok(entry.sent(world, want, true, next))
}

// ---------------------------------------------------------------------------------------------
// Running a task on the clock

type Sleep = Pin<Box<dyn Future<Output = Option<Tick>> + Send>>;

pub(super) enum Armed {
    Ready(Option<Tick>),
    Waiting(Sleep),
}

/// Start sleeping until `deadline` *now*: the sleeper is registered with the clock before this
/// returns, so an advance that is already under way (or starts next) sees it and wakes it at
/// its own deadline instead of passing it by.
pub(super) fn arm(clock: Clock, deadline: Duration) -> Armed {
    let mut fut: Sleep = Box::pin(async move { clock.sleep_until(deadline).await });
    match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(t) => Armed::Ready(t),
        Poll::Pending => Armed::Waiting(fut),
    }
}

impl Armed {
    pub(super) async fn wait(self) -> Option<Tick> {
        match self {
            Armed::Ready(t) => t,
            Armed::Waiting(f) => f.await,
        }
    }
}

/// Apply what is due now and hand the rest of the task's script to a runner.
pub(super) fn start(world: &Arc<World>, task_id: &str) {
    if let Some(next) = run_due(world, task_id, None) {
        hand_over(world, task_id, next);
    }
}

/// After [`run_due`]: a runner for the rest of the script, if anything is left.
fn hand_over(world: &Arc<World>, task_id: &str, (generation, next): (u64, Option<Duration>)) {
    let Some(deadline) = next else { return };
    let armed = arm(world.clock.clone(), deadline);
    tokio::spawn(drive(world.clone(), task_id.to_string(), generation, armed));
}

async fn drive(world: Arc<World>, task_id: String, generation: u64, mut armed: Armed) {
    loop {
        let tick = armed.wait().await;
        // None: the world closed (reset, replaced, shut down).
        let Some(tick) = tick else { return };
        match run_due(&world, &task_id, Some(generation)) {
            Some((_, Some(deadline))) => {
                armed = arm(world.clock.clone(), deadline);
                drop(tick);
            }
            _ => return,
        }
    }
}

/// Apply every event of the task due by now. Returns the task's generation and its next
/// deadline; `None` if the task is gone or a newer run owns it.
fn run_due(
    world: &Arc<World>,
    task_id: &str,
    generation: Option<u64>,
) -> Option<(u64, Option<Duration>)> {
    let cell = entry_of(world, task_id)?;
    let mut e = lock_entry(&cell);
    run_due_in(world, &mut e, generation)
}

/// The task `task_id`, looked up under the table's lock, which is released before the caller
/// takes the task's own.
fn entry_of(world: &World, task_id: &str) -> Option<Shared> {
    tasks(world).lock().entry(task_id)
}

/// [`run_due`] on the task's entry, its lock held.
fn run_due_in(
    world: &Arc<World>,
    e: &mut Entry,
    generation: Option<u64>,
) -> Option<(u64, Option<Duration>)> {
    if generation.is_some_and(|g| g != e.generation) {
        return None;
    }
    let now = world.clock.now();
    // The timeline indexes into this script (a task without one has an empty timeline).
    let script = e.script.clone();
    loop {
        // A canceled task does nothing more; its remaining steps never run.
        if e.task.status.state.is_terminal() {
            e.run_over();
            return Some((e.generation, None));
        }
        let (Some(&(at, ev)), Some(script)) = (e.timeline.get(e.cursor), script.as_deref()) else {
            e.run_over();
            return Some((e.generation, None));
        };
        if at > now {
            return Some((e.generation, Some(at)));
        }
        e.cursor += 1;
        apply(world, e, script, ev, now);
    }
}

/// Apply one due event at `now`, the instant [`run_due_in`] found it due: one instant for the
/// status timestamps and their ledger entries (see `log_at`), read once for every event due.
fn apply(world: &Arc<World>, e: &mut Entry, script: &Script, ev: Event, now: Duration) {
    // The timestamp is formatted only by the events that show one.
    // The new status's timestamp in the old one's buffer (the old status is replaced).
    let ts = |e: &mut Entry| restamp(world, now, e.task.status.timestamp.take());
    match ev {
        Event::Status(i) => {
            let step = &script.updates[i];
            let r = e.render();
            let message = step.message.as_ref().map(|t| r.text(t));
            let used = r.used_canary.get();
            let state = match step.state {
                UpdateState::Submitted => TaskState::Submitted,
                UpdateState::Working => TaskState::Working,
            };
            // The message's id and text for the entry, when there is one (a copy: rare).
            let mut logged = None;
            let message = message.map(|t| {
                let id = format!("{}-status-{}", e.task.id, e.cursor);
                logged = Some((id.clone(), t.clone()));
                e.agent_message(id, t)
            });
            let status = TaskStatus {
                state,
                message,
                timestamp: Some(ts(e)),
            };
            e.set_status(world, status);
            e.log_with(world, now, "status", |d| {
                if let Some((id, text)) = &logged {
                    d.str("message", text).str("message_id", id);
                }
                d.str("state", state.as_str());
            });
            e.note_canary(world, used, now);
        }
        Event::Call(i) => {
            let step = &script.steps[i];
            let r = e.render();
            let mut headers = hyper::HeaderMap::new();
            for (k, v) in &step.headers {
                if let (Ok(k), Ok(v)) = (
                    hyper::header::HeaderName::from_bytes(k.as_bytes()),
                    hyper::header::HeaderValue::from_str(&r.text(v)),
                ) {
                    headers.insert(k, v);
                }
            }
            let body = match (&step.json, &step.body) {
                (Some(j), _) => {
                    headers.insert(
                        hyper::header::CONTENT_TYPE,
                        hyper::header::HeaderValue::from_static("application/json"),
                    );
                    match &step.fixed_json {
                        Some(fixed) => fixed.clone(),
                        None => r.json(j).to_string().into(),
                    }
                }
                (None, Some(b)) => r.text(b).into(),
                (None, None) => Bytes::new(),
            };
            let used = r.used_canary.get();
            // Synchronous admission while the runner holds the clock's tick: the effect is in
            // the ledger at the step's scheduled time. The agent does not read the response.
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
                    revision: e.revision.clone(),
                    unread: true,
                    ..service::Request::default()
                },
            );
            e.note_canary(world, used, now);
        }
        Event::Artifact(i) => {
            let spec = &script.artifacts[i];
            let r = e.render();
            let artifact = Artifact {
                artifact_id: spec.id.clone(),
                name: spec.name.clone(),
                description: spec.description.clone(),
                parts: spec.parts.iter().map(|p| r.part(p)).collect(),
                metadata: e.meta(),
                extensions: Vec::new(),
            };
            let used = r.used_canary.get();
            // The event (a copy of the artifact) is built only for someone who gets it.
            let event = e.listened().then(|| {
                StreamResponse::ArtifactUpdate(TaskArtifactUpdateEvent {
                    task_id: e.task.id.clone(),
                    context_id: e.task.context_id.clone(),
                    artifact: artifact.clone(),
                    append: spec.append,
                    last_chunk: spec.last_chunk,
                    metadata: e.meta(),
                })
            });
            if let Some(event) = event {
                e.emit(world, event);
            }
            // The rendered parts (and name, description) rebuild the artifact after a restart.
            // Written before the artifact is merged (and its parts possibly appended to another's):
            // nobody sees the task in between, its lock is held.
            e.log_with(world, now, "artifact", |d| {
                d.bool("append", spec.append).str("artifact_id", &spec.id);
                if let Some(desc) = &spec.description {
                    d.str("description", desc);
                }
                d.bool("last_chunk", spec.last_chunk);
                if let Some(n) = &spec.name {
                    d.str("name", n);
                }
                d.parts("parts", &artifact.parts);
            });
            merge_artifact(&mut e.task.artifacts, artifact, spec.append);
            e.note_canary(world, used, now);
        }
        Event::Final => {
            let outcome = script.outcome;
            let r = e.render();
            let text = script.message.as_ref().map(|t| r.text(t));
            let used = r.used_canary.get();
            let state = outcome_state(outcome);
            let status = TaskStatus {
                state,
                message: text.map(|t| e.agent_message(format!("{}-final", e.task.id), t)),
                timestamp: Some(ts(e)),
            };
            e.note_canary(world, used, now);
            e.set_status(world, status);
            // The message's text for the entry: the one text part of the status's message.
            let status_message = e.task.status.message.as_ref();
            let logged = status_message.and_then(|m| m.parts.first()?.as_text());
            e.log_with(world, now, "result", |d| {
                d.str_seq(
                    "artifacts",
                    e.task.artifacts.iter().map(|a| a.artifact_id.as_str()),
                )
                .opt_str("canary", e.canary_issued.then_some(e.canary.as_str()));
                if let Some(t) = &logged {
                    d.str("message", t);
                }
                d.str("outcome", outcome_name(outcome))
                    .str("state", state.as_str())
                    .str("task_id", &e.task.id);
            });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// CancelTask, GetTask, ListTasks, SubscribeToTask

/// Cancellation is an attempt (REC-3): the policy decides, and the outcome is recorded apart
/// from any state change.
pub(super) fn cancel(ctx: &Ctx<'_>, task_id: &str) -> Result<Task, RpcError> {
    let world = &ctx.world;
    let cell = entry_of(world, task_id);
    let mut guard = cell.as_deref().map(lock_entry);
    let Some(e) = guard.as_deref_mut().filter(|e| *e.agent == **ctx.name) else {
        log(
            world,
            ctx.name,
            "cancel",
            Some(task_id),
            None,
            json!({"task_id": task_id, "outcome": "unknown-task"}),
        );
        return Err(RpcError::task_not_found(task_id));
    };
    let state = e.task.status.state;
    let now = world.clock.now();
    let outcome = if state.is_terminal() {
        "refused"
    } else {
        match e.cancel {
            CancelPolicy::Honor => "honored",
            CancelPolicy::TooLate => "refused",
            CancelPolicy::AckThenComplete => "acknowledged",
            CancelPolicy::HonorBefore(d) if now < e.start + d => "honored",
            CancelPolicy::HonorBefore(_) => "refused",
        }
    };
    e.log(
        world,
        "cancel",
        json!({
            "task_id": task_id,
            "outcome": outcome,
            "policy": e.cancel.name(),
            "state": state.as_str(),
        }),
    );
    match outcome {
        "honored" => {
            let status = TaskStatus::new(TaskState::Canceled, stamp(world, now));
            e.set_status(world, status);
            e.log_at(
                world,
                now,
                "status",
                json!({"state": TaskState::Canceled.as_str()}),
            );
            Ok(e.task.clone())
        }
        "acknowledged" => Ok(e.task.clone()),
        _ => Err(RpcError::task_not_cancelable(task_id, state)),
    }
}

pub(super) fn get(
    ctx: &Ctx<'_>,
    task_id: &str,
    history_length: Option<i32>,
) -> Result<Task, RpcError> {
    let cell = entry_of(&ctx.world, task_id);
    let guard = cell.as_deref().map(lock_entry);
    let e = guard
        .as_deref()
        .filter(|e| *e.agent == **ctx.name)
        .ok_or_else(|| RpcError::task_not_found(task_id))?;
    Ok(e.task.clone().with_history_length(history_length))
}

pub(super) fn list(ctx: &Ctx<'_>, req: &ListTasksRequest) -> Result<ListTasksResponse, RpcError> {
    let page_size = match req.page_size {
        None | Some(0) => wire::LIST_TASKS_DEFAULT_PAGE_SIZE,
        Some(n) if n < 0 => return Err(RpcError::invalid_params("pageSize must be positive")),
        Some(n) => n.min(wire::LIST_TASKS_MAX_PAGE_SIZE),
    };
    let offset: usize = match req.page_token.as_deref().filter(|t| !t.is_empty()) {
        None => 0,
        Some(t) => t
            .parse()
            .map_err(|_| RpcError::invalid_params(format!("invalid pageToken \"{t}\"")))?,
    };
    let after = match req.status_timestamp_after.as_deref() {
        None => None,
        Some(s) => Some(crate::clock::parse_rfc3339_ms(s).ok_or_else(|| {
            RpcError::invalid_params(format!("statusTimestampAfter is not a timestamp: \"{s}\""))
        })?),
    };
    let all = tasks(&ctx.world);
    // The table's lock is held throughout and every task looked at stays locked until the page
    // is made, so the listing is one snapshot, as it was when one lock covered every task.
    let table = all.lock();
    let mut found: Vec<(i64, u64, MutexGuard<'_, Entry>)> = table
        .tasks
        .values()
        .map(|s| (s.created, lock_entry(&s.entry)))
        .filter(|(_, e)| *e.agent == **ctx.name)
        .filter(|(_, e)| {
            req.context_id
                .as_deref()
                .is_none_or(|c| c.is_empty() || e.task.context_id == c)
        })
        .filter(|(_, e)| {
            req.status
                .is_none_or(|s| s == TaskState::Unspecified || e.task.status.state == s)
        })
        .map(|(i, e)| {
            let ts = e
                .task
                .status
                .timestamp
                .as_deref()
                .and_then(crate::clock::parse_rfc3339_ms)
                .unwrap_or(0);
            (ts, i, e)
        })
        .filter(|(ts, _, _)| after.is_none_or(|a| *ts > a))
        .collect();
    // Newest status first (SPEC §3.1.4); among equal timestamps, the newest task first.
    found.sort_by_key(|(ts, i, _)| std::cmp::Reverse((*ts, *i)));
    let total = found.len();
    let include = req.include_artifacts.unwrap_or(false);
    let page: Vec<Task> = found
        .iter()
        .skip(offset)
        .take(page_size as usize)
        .map(|(_, _, e)| {
            let t = e.task.clone().with_history_length(req.history_length);
            if include {
                t
            } else {
                t.without_artifacts()
            }
        })
        .collect();
    let end = offset + page.len();
    Ok(ListTasksResponse {
        tasks: page,
        next_page_token: if end < total {
            end.to_string()
        } else {
            String::new()
        },
        page_size,
        total_size: i32::try_from(total).unwrap_or(i32::MAX),
    })
}

/// The task's current snapshot and a receiver for what comes next, taken together under the
/// lock so no event is missed or seen twice.
pub(super) fn subscribe(
    ctx: &Ctx<'_>,
    task_id: &str,
) -> Result<(Task, broadcast::Receiver<StreamResponse>), RpcError> {
    let cell = entry_of(&ctx.world, task_id);
    let mut guard = cell.as_deref().map(lock_entry);
    let e = guard
        .as_deref_mut()
        .filter(|e| *e.agent == **ctx.name)
        .ok_or_else(|| RpcError::task_not_found(task_id))?;
    let state = e.task.status.state;
    if state.is_terminal() {
        return Err(RpcError::task_in_terminal_state(task_id, state));
    }
    e.log(&ctx.world, "subscribe", json!({"task_id": task_id}));
    Ok((e.task.clone(), e.subscribe()))
}

/// A fresh snapshot (after a blocking call saw its task stop).
pub(super) fn snapshot(world: &World, task_id: &str) -> Option<Task> {
    let cell = entry_of(world, task_id)?;
    let task = lock_entry(&cell).task.clone();
    Some(task)
}

/// Record a read (GetTask, ListTasks): an interaction like any other.
pub(super) fn log_read(ctx: &Ctx<'_>, event: &str, task_id: Option<&str>, detail: Value) {
    log(&ctx.world, ctx.name, event, task_id, None, detail);
}

// ---------------------------------------------------------------------------------------------
// Push notification configs

/// Runs `f` on the push targets of the agent's task `task_id`.
pub(super) fn with_push<T>(
    ctx: &Ctx<'_>,
    task_id: &str,
    f: impl FnOnce(&mut Vec<PushTarget>, Option<&Value>) -> Result<T, RpcError>,
) -> Result<T, RpcError> {
    let cell = entry_of(&ctx.world, task_id);
    let mut guard = cell.as_deref().map(lock_entry);
    let e = guard
        .as_deref_mut()
        .filter(|e| *e.agent == **ctx.name)
        .ok_or_else(|| RpcError::task_not_found(task_id))?;
    let rev = e.revision.clone();
    f(&mut e.push, rev.as_ref())
}

/// Adds a checked config to a task (CreateTaskPushNotificationConfig).
pub(super) fn add_push(
    ctx: &Ctx<'_>,
    spec: &A2aAgent,
    task_id: &str,
    cfg: TaskPushNotificationConfig,
) -> Result<TaskPushNotificationConfig, RpcError> {
    with_push(ctx, task_id, |targets, rev| {
        Ok(push::add(
            &ctx.world, spec.push, ctx.name, targets, cfg, task_id, rev,
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::a2a::{ArtifactSpec, Script};

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

    #[test]
    fn render_text_expands_as_the_template_module_does() {
        for rev in [
            None,
            Some(json!(3)),
            Some(json!("r-\"2")),
            Some(json!({"a": [1]})),
        ] {
            let r = Render {
                task_id: "task-1",
                context_id: "ctx-1",
                revision: rev.as_ref(),
                canary: b"cny-1",
                agent: "a",
                text: "hi {{canary}}",
                used_canary: std::cell::Cell::new(false),
            };
            for t in [
                "",
                "plain",
                "paid {{canary}}",
                "{{ canary }}{{task.id}}/{{context.id}} {{agent}}: {{message.text}}",
                "r={{revision}} {{ revision}}",
                "{{nope}} {{}} {{ }} {{{canary}}} {{canary}}} {{{{agent}}",
                "open {{canary and }} close",
                "x}}{{agent}}{{",
                "{{",
                "}}",
                "{{\u{e9}}}\u{e9}{{agent}}\u{2713}",
            ] {
                let ours = r.text(t);
                let used = r.used_canary.replace(false);
                assert_eq!(ours, template::text(t, &r), "{t:?}");
                assert_eq!(used, r.used_canary.replace(false), "{t:?}");
            }
        }
    }

    #[test]
    fn the_task_map_keeps_handed_out_ids_by_number_and_any_other_by_hash() {
        for (id, n) in [
            ("task-0", Some(0)),
            ("task-7", Some(7)),
            ("task-123", Some(123)),
        ] {
            assert_eq!(task_number(id), n, "{id}");
        }
        for id in [
            "task-",
            "task-07",
            "task--1",
            "task-+1",
            "task-1x",
            "Task-1",
            "msg-3",
            "task-1234567890123456789",
        ] {
            assert_eq!(task_number(id), None, "{id}");
        }
        let mut table = Table::default();
        let entry = |id: &str| {
            Arc::new(Mutex::new(Entry {
                agent: "a".into(),
                task: Task {
                    id: id.to_string(),
                    context_id: String::new(),
                    status: TaskStatus::new(TaskState::Submitted, ""),
                    artifacts: Vec::new(),
                    history: Vec::new(),
                    metadata: None,
                },
                revision: None,
                revision_key: "revision".into(),
                canary: Token([b'x'; 20]),
                canary_issued: false,
                start: Duration::ZERO,
                script: None,
                timeline: Vec::new(),
                cursor: 0,
                generation: 0,
                cancel: CancelPolicy::Honor,
                text: String::new(),
                events: None,
                capacity: 32,
                push: Vec::new(),
            }))
        };
        let ids = ["task-2", "task-07", "task-99999", "other", "task-1"];
        let keys: Vec<u64> = ids.iter().map(|id| table.insert(id, entry(id))).collect();
        assert_eq!(keys[0], 2);
        assert_eq!(keys[4], 1);
        assert!(keys[1..4].iter().all(|k| k & OTHER != 0), "{keys:?}");
        for (id, key) in ids.iter().zip(&keys) {
            assert_eq!(table.tasks.key(id), Some(*key));
            assert_eq!(table.tasks.id_at(*key).as_deref(), Some(*id));
            let cell = table.entry(id).unwrap();
            assert_eq!(lock_entry(&cell).task.id, *id);
        }
        assert_eq!(table.tasks.key("task-3"), None);
        assert_eq!(table.tasks.len(), 5);
        // Put in again: replaced in place, its key and place in creation order kept.
        assert_eq!(table.insert("task-2", entry("task-2")), 2);
        assert_eq!(table.insert("other", entry("other")), keys[3]);
        assert_eq!(table.tasks.len(), 5);
        assert_eq!(table.ids_in_order(), ids);
    }

    #[test]
    fn numbered_ids_are_the_prefix_and_the_number() {
        for n in [0, 1, 9, 10, 12345, u64::MAX] {
            assert_eq!(numbered("task-", n), format!("task-{n}"));
        }
    }

    #[test]
    fn canary_tokens_are_the_formatted_hash_of_task_and_revision() {
        for (seed, task, rev) in [
            (1, "task-1", None),
            (42, "msg-7", Some(json!(3))),
            (u64::MAX, "task-99", Some(json!("r-2"))),
        ] {
            let r = rev.as_ref().map(Value::to_string).unwrap_or_default();
            let h = crate::fate::stream_seed(seed, &format!("canary/{task}/{r}"), 0);
            assert_eq!(
                canary_token(seed, task, rev.as_ref()).as_str(),
                format!("cny-{h:016x}")
            );
        }
    }

    #[test]
    fn placeholders_expand_and_note_the_canary() {
        let rev = Value::from(2);
        let r = Render {
            task_id: "task-1",
            context_id: "ctx-1",
            revision: Some(&rev),
            canary: b"cny-1",
            agent: "a",
            text: "hi",
            used_canary: std::cell::Cell::new(false),
        };
        assert_eq!(r.text("t={{task.id}} r={{revision}}"), "t=task-1 r=2");
        assert!(!r.used_canary.get());
        assert_eq!(
            r.json(&json!({"n": "{{revision}}", "c": "x {{canary}}", "u": "{{nope}}"})),
            json!({"n": 2, "c": "x cny-1", "u": "{{nope}}"})
        );
        assert!(r.used_canary.get());
    }
}
