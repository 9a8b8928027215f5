//! The calls on a task once it exists: CancelTask (its policy decides), GetTask, ListTasks,
//! SubscribeToTask, and the push-config methods. Each looks the task up under the table's lock
//! and works under the task's own.

use std::sync::MutexGuard;

use serde_json::json;
use tokio::sync::broadcast;

use super::{entry_of, lock_entry, tasks, Entry};
use crate::agent::a2a::detail::log;
use crate::agent::a2a::errors::RpcError;
use crate::agent::a2a::params::{
    ListTasksRequest, ListTasksResponse, TaskPushNotificationConfig, LIST_TASKS_DEFAULT_PAGE_SIZE,
    LIST_TASKS_MAX_PAGE_SIZE,
};
use crate::agent::a2a::push::PushTarget;
use crate::agent::a2a::rpc::Binding;
use crate::agent::a2a::types::{StreamResponse, Task, TaskState, TaskStatus};
use crate::agent::Ctx;
use crate::scenario::a2a::{A2aAgent, CancelPolicy};
use crate::sync::unpoisoned;
use crate::world::World;

/// Runs `f` on the agent's task `task_id` under the task's lock; -32001 if the agent has none.
fn with_task<T>(
    ctx: &Ctx<'_>,
    task_id: &str,
    f: impl FnOnce(&mut Entry) -> T,
) -> Result<T, RpcError> {
    let found = entry_of(&ctx.world, task_id).and_then(|cell| {
        let mut e = lock_entry(&cell);
        (*e.agent == **ctx.name).then(|| f(&mut e))
    });
    found.ok_or_else(|| RpcError::task_not_found(task_id))
}

/// Cancellation is an attempt (REC-3): the policy decides, and the outcome is recorded apart
/// from any state change.
pub(crate) fn cancel(ctx: &Ctx<'_>, task_id: &str, binding: Binding) -> Result<Task, RpcError> {
    let world = &ctx.world;
    with_task(ctx, task_id, |e| {
        let state = e.task.status.state;
        let now = world.clock.now();
        let outcome = match e.cancel {
            _ if state.is_terminal() => "refused",
            CancelPolicy::Honor => "honored",
            CancelPolicy::TooLate => "refused",
            CancelPolicy::AckThenComplete => "acknowledged",
            CancelPolicy::HonorBefore(d) if now < e.start + d => "honored",
            CancelPolicy::HonorBefore(_) => "refused",
        };
        let policy = e.cancel.name();
        let detail = json!({"task_id": task_id, "outcome": outcome, "binding": binding,
            "policy": policy, "state": state.as_str()});
        e.log(world, "cancel", detail);
        match outcome {
            "honored" => {
                let status = TaskStatus::new(TaskState::Canceled, world.clock.rfc3339(now));
                e.set_status(world, status);
                let detail = json!({"state": TaskState::Canceled.as_str()});
                e.log_at(world, now, "status", detail);
                Ok(e.task.clone())
            }
            "acknowledged" => Ok(e.task.clone()),
            _ => Err(RpcError::task_not_cancelable(task_id, state)),
        }
    })
    .unwrap_or_else(|not_found| {
        let detail = json!({"task_id": task_id, "outcome": "unknown-task", "binding": binding});
        log(world, ctx.name, "cancel", Some(task_id), None, detail);
        Err(not_found)
    })
}

pub(crate) fn get(
    ctx: &Ctx<'_>,
    task_id: &str,
    history_length: Option<i32>,
) -> Result<Task, RpcError> {
    with_task(ctx, task_id, |e| {
        e.log(&ctx.world, "get-task", json!({"task_id": task_id}));
        e.task.clone().with_history_length(history_length)
    })
}

pub(crate) fn list(ctx: &Ctx<'_>, req: &ListTasksRequest) -> Result<ListTasksResponse, RpcError> {
    let page_size = match req.page_size {
        None | Some(0) => LIST_TASKS_DEFAULT_PAGE_SIZE,
        Some(n) if n < 0 => return Err(RpcError::invalid_params("pageSize must be positive")),
        Some(n) => n.min(LIST_TASKS_MAX_PAGE_SIZE),
    };
    // A page token is the sort key (status time, creation number) of the last task handed out:
    // the next page starts below it, so tasks made or moved to the front meanwhile shift nothing.
    let below: Option<(i64, u64)> = match req.page_token.as_deref().filter(|t| !t.is_empty()) {
        None => None,
        Some(t) => Some(
            t.split_once('.')
                .and_then(|(ts, i)| Some((ts.parse().ok()?, i.parse().ok()?)))
                .ok_or_else(|| RpcError::invalid_params(format!("invalid pageToken \"{t}\"")))?,
        ),
    };
    let after = (req.status_timestamp_after.as_deref())
        .map(|s| {
            let e = || format!("statusTimestampAfter is not a timestamp: \"{s}\"");
            crate::clock::parse_rfc3339_ms(s).ok_or_else(|| RpcError::invalid_params(e()))
        })
        .transpose()?;
    // The table's lock is held and every task looked at stays locked until the page is made:
    // the listing is one snapshot.
    let table = unpoisoned(tasks(&ctx.world).lock());
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
            let ts = e.task.status.timestamp.as_deref();
            (
                ts.and_then(crate::clock::parse_rfc3339_ms).unwrap_or(0),
                i,
                e,
            )
        })
        .filter(|(ts, _, _)| after.is_none_or(|a| *ts > a))
        .collect();
    // Newest status first (SPEC §3.1.4); among equal timestamps, the newest task first.
    found.sort_by_key(|(ts, i, _)| std::cmp::Reverse((*ts, *i)));
    let total = found.len();
    let include = req.include_artifacts.unwrap_or(false);
    let rest = below.map_or(0, |b| found.partition_point(|(ts, i, _)| (*ts, *i) >= b));
    let page: Vec<Task> = found[rest..]
        .iter()
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
    let end = rest + page.len();
    Ok(ListTasksResponse {
        tasks: page,
        next_page_token: match found.get(end.wrapping_sub(1)) {
            Some((ts, i, _)) if end < total && end > 0 => format!("{ts}.{i}"),
            _ => String::new(),
        },
        page_size,
        total_size: i32::try_from(total).unwrap_or(i32::MAX),
    })
}

/// The task's current snapshot and a receiver for what comes next, taken together under the
/// lock so no event is missed or seen twice.
pub(crate) fn subscribe(
    ctx: &Ctx<'_>,
    task_id: &str,
) -> Result<(Task, broadcast::Receiver<StreamResponse>), RpcError> {
    with_task(ctx, task_id, |e| {
        let state = e.task.status.state;
        if state.is_terminal() {
            return Err(RpcError::task_in_terminal_state(task_id, state));
        }
        e.log(&ctx.world, "subscribe", json!({"task_id": task_id}));
        Ok((e.task.clone(), e.subscribe()))
    })?
}

/// A fresh snapshot (after a blocking call saw its task stop).
pub(crate) fn snapshot(world: &World, task_id: &str) -> Option<Task> {
    let cell = entry_of(world, task_id)?;
    let task = lock_entry(&cell).task.clone();
    Some(task)
}

pub(crate) fn with_push<T>(
    ctx: &Ctx<'_>,
    task_id: &str,
    f: impl FnOnce(&mut Vec<PushTarget>) -> T,
) -> Result<T, RpcError> {
    with_task(ctx, task_id, |e| f(&mut e.push))
}

/// Adds a checked config to a task (CreateTaskPushNotificationConfig).
pub(crate) fn add_push(
    ctx: &Ctx<'_>,
    spec: &A2aAgent,
    task_id: &str,
    cfg: TaskPushNotificationConfig,
) -> Result<TaskPushNotificationConfig, RpcError> {
    with_task(ctx, task_id, |e| e.add_push(&ctx.world, spec.push, cfg))
}
