//! SendMessage and SendStreamingMessage: a message is a follow-up to the task it names, a
//! duplicate (with de-duplication on), a new task, or a direct reply. The table's lock is held
//! to look the message id up and to number a new task; the rest runs under the task's own lock
//! (see the parent module's header for the order).

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{json, Value};

use super::render::{canary, Render};
use super::run::timeline;
use super::table::{Seen, Table};
use super::{lock_entry, new_entry, revision_meta, tasks, Entry, Sent, Shared, Want};
use crate::agent::a2a::detail::{self, CreatedDetail, MessageCall, Taken};
use crate::agent::a2a::errors::RpcError;
use crate::agent::a2a::params::{SendMessageRequest, TaskPushNotificationConfig};
use crate::agent::a2a::push;
use crate::agent::a2a::rpc::Binding;
use crate::agent::a2a::types::{Message, Part, StreamResponse, TaskState, TaskStatus};
use crate::agent::Ctx;
use crate::scenario::a2a::{A2aAgent, ReplyKind, Script};
use crate::sync::unpoisoned;

/// One message and what it is read to mean before any lock is taken.
struct Incoming<'a> {
    ctx: &'a Ctx<'a>,
    spec: &'a A2aAgent,
    method: &'a str,
    binding: Binding,
    want: Want<'a>,
    req: SendMessageRequest,
    push_config: Option<TaskPushNotificationConfig>,
    revision: Option<Value>,
    text: String,
    /// One instant for the entries of this message (a follow-up or a duplicate reads its own
    /// once it has its task's lock, which it may have had to wait for).
    now: Duration,
    behavior: Option<usize>,
    script: &'a Arc<Script>,
}

impl Incoming<'_> {
    fn msg(&self) -> &Message {
        &self.req.message
    }

    /// What the `message` entries of this message share.
    fn call(&self) -> MessageCall<'_> {
        MessageCall {
            method: self.method,
            binding: self.binding,
            msg: &self.req.message,
            text: &self.text,
            revision: self.revision.as_ref(),
        }
    }

    /// Record an entry of this message that names no task (a direct reply's).
    fn log(&self, event: &str, detail: impl serde::Serialize) {
        let (world, rev) = (&self.ctx.world, self.revision.as_ref());
        detail::log_at(world, self.now, self.ctx.name, event, None, rev, detail);
    }
}

/// Take in a message: a follow-up to a task, a duplicate, a new task, or a direct reply. Runs
/// under the table's lock and then the task's (both released when this returns).
pub(crate) fn send(
    ctx: &Ctx<'_>,
    spec: &A2aAgent,
    (method, binding): (&str, Binding),
    req: SendMessageRequest,
    want: Want<'_>,
) -> Result<Sent, RpcError> {
    let msg = &req.message;
    if msg.message_id.is_empty() {
        return Err(RpcError::invalid_params("message.messageId is required"));
    }
    if msg.parts.is_empty() {
        return Err(RpcError::invalid_params(
            "message.parts must hold at least one part",
        ));
    }
    let push_config = (req.push_config().cloned())
        .map(|c| push::check(spec, c, (ctx.base_url, ctx.grpc)))
        .transpose()?;
    // The message's own metadata first, then the request's (SendMessageRequest.metadata): SDKs
    // put it in either. Kept as sent, to be echoed as sent; read as a `Revision` where compared.
    let revision = [msg.metadata.as_ref(), req.metadata.as_ref()]
        .into_iter()
        .flatten()
        .find_map(|m| m.get(&*spec.revision_key).filter(|v| !v.is_null()))
        .cloned();
    let text = msg.text();
    let (behavior, script) = spec.script_for(&text, &msg.message_id, msg.metadata.as_ref());
    let follow_up = msg.task_id.as_deref().is_some_and(|t| !t.is_empty());
    let now = ctx.world.clock.now();
    // A new task's entry is made before the table's lock is taken: its allocations then hold
    // up no other send. (With de-duplication on, a repeated message makes no task: the entry
    // is made under the lock.)
    let fresh = (!follow_up && !spec.dedupe_message_id && script.reply == ReplyKind::Task)
        .then(|| new_entry(ctx, spec, script, revision.clone(), now));
    let inc = Incoming {
        ctx,
        spec,
        method,
        binding,
        want,
        req,
        push_config,
        revision,
        text,
        now,
        behavior,
        script,
    };
    let all = tasks(&ctx.world);
    let (table, seen) =
        new_message_turn(all, ctx.name, inc.msg(), follow_up, spec.dedupe_message_id);

    let table = match (spec.dedupe_message_id, &seen) {
        (true, Some(first)) => match duplicate(&inc, table, first) {
            Ok(sent) => return Ok(sent),
            Err(table) => table,
        },
        _ => table,
    };
    let repeat_of = seen.as_ref().map(|s| match s {
        Seen::Task(id) => id.clone(),
        Seen::Message(m) => m.message_id.clone(),
    });
    if follow_up {
        return follow_up_to_task(inc, table, seen.as_ref(), repeat_of);
    }
    let mut table = table;
    table.next_id += 1;
    if inc.script.reply == ReplyKind::Message {
        return Ok(direct_reply(&inc, table, repeat_of));
    }
    let cell = fresh.unwrap_or_else(|| new_entry(ctx, spec, script, inc.revision.clone(), now));
    Ok(new_task(inc, table, cell, repeat_of))
}

/// The table's lock for a message, taken once what its id first went to (if anything) has its
/// `message` entry in the ledger. A new task's `message` entry is written under the task's own
/// lock after the table's is released, and verification reads repeats in ledger order (REC-4:
/// the first message with an id, then each `repeat_of` it), so a new message whose id was seen
/// before waits for the first task's lock, holding neither lock; if the id was first seen while
/// it waited (a race of two sends of one id), it waits again for that one. What an id first
/// produced never changes but to a direct reply, whose entries are written under the table's
/// lock. A follow-up waits for the first task itself (see [`follow_up_to_task`]); a duplicate,
/// for the very task it answers with.
fn new_message_turn<'a>(
    all: &'a Mutex<Table>,
    agent: &str,
    msg: &Message,
    follow_up: bool,
    dedupe: bool,
) -> (MutexGuard<'a, Table>, Option<Seen>) {
    let mut waited: Option<String> = None;
    loop {
        let table = unpoisoned(all.lock());
        let first = match table.look(agent, &msg.message_id) {
            Some(Seen::Task(id)) if !follow_up && !dedupe && waited.as_ref() != Some(id) => {
                id.clone()
            }
            seen => {
                let seen = seen.cloned();
                return (table, seen);
            }
        };
        let cell = table.entry(&first);
        drop(table);
        if let Some(cell) = cell {
            drop(lock_entry(&cell));
        }
        waited = Some(first);
    }
}

/// A de-duplicated message: the answer of what its id first produced, or the table back if
/// that task is not there.
fn duplicate<'t>(
    inc: &Incoming<'_>,
    table: MutexGuard<'t, Table>,
    first: &Seen,
) -> Result<Sent, MutexGuard<'t, Table>> {
    let world = &inc.ctx.world;
    match first {
        Seen::Task(id) => {
            let Some(cell) = table.entry(id) else {
                return Err(table);
            };
            // Nothing of the table changes: the task answers under its own lock alone, once
            // whoever has it is done (its `message` entry is then in the ledger, before this
            // one's).
            drop(table);
            let mut e = lock_entry(&cell);
            let taken = Taken::Duplicate { of: id };
            let detail = inc.call().detail(Some(id), Some(&e.task.context_id), taken);
            e.log(world, "message", detail);
            Ok(e.sent(world, inc.want, false))
        }
        Seen::Message(m) => {
            let taken = Taken::Duplicate { of: &m.message_id };
            inc.log(
                "message",
                inc.call().detail(None, m.context_id.as_deref(), taken),
            );
            Ok(Sent::Message((**m).clone()))
        }
    }
}

/// A message naming a task. Terminal tasks never restart (REC-6); an interrupted one resumes
/// with the script this message selects.
fn follow_up_to_task(
    inc: Incoming<'_>,
    mut table: MutexGuard<'_, Table>,
    seen: Option<&Seen>,
    repeat_of: Option<String>,
) -> Result<Sent, RpcError> {
    let (ctx, world) = (inc.ctx, &inc.ctx.world);
    let msg = inc.msg();
    // Present: only a message naming its task is a follow-up.
    let task_id = msg.task_id.as_deref().unwrap_or_default();
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
    // A repeated message id: the task it first went to has its `message` entry in the ledger
    // before this one's once its lock is free (see `new_message_turn`; waited for with the
    // table held, which only a follow-up and ListTasks do while holding a task).
    if let Some(Seen::Task(first)) = seen {
        if let Some(first) = table.entry(first) {
            if !cell.as_ref().is_some_and(|own| Arc::ptr_eq(own, &first)) {
                drop(lock_entry(&first));
            }
        }
    }
    e.task.push_history(msg.clone());
    let resume = state.is_interrupted();
    let taken = Taken::FollowUp {
        resumes: resume,
        repeat_of: repeat_of.as_deref(),
    };
    let detail = inc
        .call()
        .detail(Some(task_id), Some(&e.task.context_id), taken);
    e.log_at(world, now, "message", detail);
    if let Some(cfg) = inc.push_config.clone() {
        e.add_push(world, inc.spec.push, cfg);
    }
    if resume {
        resume_task(&inc, e, now);
    }
    let id = e.task.id.clone();
    table.note_seen(ctx.name, &msg.message_id, false, || Seen::Task(id));
    // The resumed run's due steps, if any, under the task's lock alone.
    drop(table);
    Ok(e.sent(world, inc.want, resume))
}

/// A paused task carries on with the script the message selects.
fn resume_task(inc: &Incoming<'_>, e: &mut Entry, now: Duration) {
    let (world, script) = (&inc.ctx.world, inc.script);
    e.timeline = timeline(script, now);
    e.script = Some(script.clone());
    e.cursor = 0;
    e.start = now;
    e.generation += 1;
    e.cancel = script.cancel;
    e.text = inc.text.clone();
    // Out of the interrupted state before anyone looks: a blocking call must wait for the
    // resumed run, and the reply shows the task in flight again.
    let status = TaskStatus::new(TaskState::Submitted, world.clock.rfc3339(now));
    e.set_status(world, status);
    let detail = json!({
        "task_id": e.task.id,
        "behavior": inc.behavior,
        "work": crate::clock::format_duration(script.work),
        "cancel": script.cancel.name(),
    });
    e.log_at(world, now, "task-resumed", detail);
}

/// The context of a new task or reply: the message's, or a fresh one.
fn context_for(msg: &Message, n: u64) -> String {
    msg.context_id
        .clone()
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| ["ctx-", &n.to_string()].concat())
}

/// A direct Message reply: no task; its entries are written under the table's lock.
fn direct_reply(
    inc: &Incoming<'_>,
    mut table: MutexGuard<'_, Table>,
    repeat_of: Option<String>,
) -> Sent {
    let (ctx, world, msg) = (inc.ctx, &inc.ctx.world, inc.msg());
    let n = table.next_id;
    let context_id = context_for(msg, n);
    let reply_id = ["msg-", &n.to_string()].concat();
    let token = canary(world, &reply_id, inc.revision.as_ref());
    let r = Render {
        task_id: "",
        context_id: &context_id,
        revision: inc.revision.as_ref(),
        canary: &token,
        agent: ctx.name,
        text: &inc.text,
        used_canary: std::cell::Cell::new(false),
    };
    let parts = match &inc.script.message {
        Some(t) => vec![Part::text(r.text(t))],
        None => inc
            .script
            .artifacts
            .iter()
            .flat_map(|a| a.parts.iter().map(|p| r.part(p)))
            .collect(),
    };
    let mut reply = Message::agent(reply_id.clone(), parts);
    reply.context_id = Some(context_id.clone());
    reply.metadata = revision_meta(&inc.spec.revision_key, inc.revision.as_ref());
    let taken = Taken::New {
        behavior: inc.behavior,
        repeat_of: repeat_of.as_deref(),
    };
    inc.log("message", inc.call().detail(None, Some(&context_id), taken));
    // The reply's parts and the message it answers: what de-duplication replays, also after a
    // restart.
    let result = json!({
        "context_id": context_id,
        "in_reply_to": msg.message_id,
        "message_id": reply_id,
        "parts": reply.parts,
        "reply": "message",
    });
    inc.log("result", result);
    if r.used_canary.get() {
        let detail = json!({
            "canary": token,
            "message_id": reply_id,
            "revision": inc.revision,
            "task_id": null,
        });
        inc.log("canary", detail);
    }
    table.note_seen(ctx.name, &msg.message_id, true, || {
        Seen::Message(Box::new(reply.clone()))
    });
    Sent::Message(reply)
}

/// A new task: numbered and put in the table, its first entries written and its due steps
/// run under its own lock.
fn new_task(
    inc: Incoming<'_>,
    mut table: MutexGuard<'_, Table>,
    cell: Shared,
    repeat_of: Option<String>,
) -> Sent {
    let (ctx, world, now) = (inc.ctx, &inc.ctx.world, inc.now);
    let n = table.next_id;
    // Locked before it is put in (so this never waits): whoever finds the task from now on
    // waits for this lock, and sees it only once its ids and entries are written and its due
    // steps have run.
    let mut guard = lock_entry(&cell);
    let entry = &mut *guard;
    entry.task.id = ["task-", &n.to_string()].concat();
    table.insert(&entry.task.id, cell.clone());
    let id = entry.task.id.clone();
    table.note_seen(ctx.name, &inc.msg().message_id, false, || Seen::Task(id));
    drop(table);
    entry.task.context_id = context_for(inc.msg(), n);
    entry.canary = canary(world, &entry.task.id, inc.revision.as_ref());
    let taken = Taken::New {
        behavior: inc.behavior,
        repeat_of: repeat_of.as_deref(),
    };
    let detail = inc
        .call()
        .detail(Some(&entry.task.id), Some(&entry.task.context_id), taken);
    entry.log_at(world, now, "message", detail);
    let created = CreatedDetail {
        behavior: inc.behavior,
        cancel: &inc.script.cancel.name(),
        context_id: &entry.task.context_id,
        revision: inc.revision.as_ref(),
        task_id: &entry.task.id,
        work: crate::clock::format_duration(inc.script.work),
    };
    entry.log_at(world, now, "task-created", created);
    // Nobody has seen the entry yet: the message and its text move into it now.
    let (want, policy, push_config) = (inc.want, inc.spec.push, inc.push_config);
    entry.text = inc.text;
    entry.task.push_history(inc.req.message);
    if let Some(cfg) = push_config {
        entry.add_push(world, policy, cfg);
    }
    // Push receivers get the initial Task snapshot too, as the reference sender does.
    if !entry.push.is_empty() {
        let snapshot = StreamResponse::Task(entry.task.clone());
        push::enqueue(world, &entry.push, &snapshot);
    }
    entry.sent(world, want, true)
}
