//! Rules about the effects of actions: the same intent applied more than once (ACC-1), a retry
//! sent blind after an attempt whose outcome was unknown (REC-4), and a tool call made again
//! while its first call's task was still the client's to poll (REC-4).

use serde_json::Value;

use super::index::{Index, NO_INTENT};
use super::report::Finding;
use super::rows::Row;
use crate::ledger::Disposition;

/// Executions grouped by intent id, in ledger order: the groups of two or more that pass `keep`.
fn intent_groups<'e>(ix: &Index<'e>, keep: impl Fn(&Row) -> bool) -> Vec<Vec<&'e Row>> {
    let mut counts = vec![0u32; ix.intents];
    for (e, id) in ix.rows().zip(&ix.intent_ids) {
        if *id != NO_INTENT && keep(e) {
            counts[*id as usize] += 1;
        }
    }
    let mut slot = vec![u32::MAX; ix.intents];
    let mut groups: Vec<Vec<&Row>> = Vec::new();
    for (e, id) in ix.rows().zip(&ix.intent_ids) {
        if *id == NO_INTENT || counts[*id as usize] < 2 || !keep(e) {
            continue;
        }
        let g = &mut slot[*id as usize];
        if *g == u32::MAX {
            *g = groups.len() as u32;
            groups.push(Vec::new());
        }
        groups[*g as usize].push(e);
    }
    groups
}

fn is_repeatable(e: &Row) -> bool {
    e.detail
        .as_ref()
        .and_then(|d| d.get("repeatable"))
        .and_then(Value::as_bool)
        == Some(true)
}

/// ACC-1: the same intent applied more than once.
pub(super) fn acc1_duplicate_effects(ix: &Index, out: &mut Vec<Finding>) {
    // A same-key retry the service executed again because it had forgotten the key is not the
    // client's duplicate (the verdict's notes name it).
    let groups = intent_groups(ix, |e| {
        e.disposition == Disposition::Executed && e.applied && !is_repeatable(e) && !e.key_forgotten
    });
    for group in &groups {
        let first = group[0];
        out.push(Finding {
            rule: "ACC-1".into(),
            summary: format!(
                "the same action took effect {} times: {} {} on {}",
                group.len(),
                first.route().unwrap_or("?"),
                first.intent_text(),
                first.service
            ),
            entries: group.iter().map(|e| e.seq).collect(),
            hint: "execute an action at most once: confirm the earlier attempt's outcome (lookup or same-key retry) before sending it again".into(),
        });
    }
}

/// Each client execution that passes `first` with the first later execution of its intent under
/// a new or no key, when the client had not learned the first's outcome in between.
fn unlearned_retries<'e>(ix: &Index<'e>, first: impl Fn(&Row) -> bool) -> Vec<(&'e Row, &'e Row)> {
    let groups = intent_groups(ix, |e| {
        e.disposition == Disposition::Executed && e.by_client()
    });
    let mut out = Vec::new();
    for group in &groups {
        for (i, f) in group.iter().enumerate().filter(|(_, f)| first(f)) {
            let retry = group[i + 1..]
                .iter()
                .find(|r| f.key.is_none() || r.key() != f.key());
            if let Some(r) = retry.filter(|r| !ix.learned(f, r.seq)) {
                out.push((*f, *r));
            }
        }
    }
    out
}

/// REC-4: a retry with a new or no key after an attempt whose outcome was unknown, with no
/// lookup or replay in between — even when luck prevented a duplicate.
pub(super) fn rec4_blind_retries(ix: &Index, out: &mut Vec<Finding>) {
    for (first, retry) in unlearned_retries(ix, Row::uncertain) {
        let how = if retry.key.is_none() {
            "no idempotency key"
        } else {
            "a new idempotency key"
        };
        out.push(Finding {
            rule: "REC-4".into(),
            summary: format!(
                "retried {} {} with {how} after the outcome of the first attempt was unknown ({}), without a lookup in between",
                first.route().unwrap_or("?"),
                first.intent_text(),
                first.why_uncertain()
            ),
            entries: vec![first.seq, retry.seq],
            hint: "classify the first attempt as unknown, query the authoritative state (lookup) or retry with the SAME key within its retention window; if it cannot be resolved, block the retry and report the uncertainty".into(),
        });
    }
}

/// The MCP task each tool call started, by the call's seq: its `task-created` entry names the
/// call, or, for a task that asked first (created before its call was admitted), the call's own
/// MCP facts name the task.
pub(super) fn tasks_started<'e>(ix: &Index<'e>) -> crate::hash::FastMap<u64, &'e str> {
    let mut m = crate::hash::FastMap::default();
    for e in ix.rows() {
        if let Some(d) = e.agent_event("task-created") {
            if let (Some(t), Some(id)) = (d.get("target").and_then(Value::as_u64), e.task_of()) {
                m.insert(t, id);
            }
        }
        let via = e
            .detail
            .as_ref()
            .and_then(|d| d.get("mcp")?.get("task_id")?.as_str());
        if let Some(id) = via {
            m.insert(e.seq, id);
        }
    }
    m
}

/// REC-4: a tool call made again (a new or no key) while the client held the first call's task
/// id, with no poll of it in between: it should have asked `tasks/get`.
pub(super) fn rec4_recalls_holding_a_task(ix: &Index, out: &mut Vec<Finding>) {
    let started = tasks_started(ix);
    if started.is_empty() {
        return;
    }
    // A call whose task id never arrived is the blind-retry rule's.
    let holding = |e: &Row| started.contains_key(&e.seq) && !e.uncertain();
    for (first, retry) in unlearned_retries(ix, holding) {
        out.push(Finding {
            rule: "REC-4".into(),
            summary: format!(
                "called {} {} again while holding task {} of the first call, without polling it",
                first.route().unwrap_or("?"),
                first.intent_text(),
                started[&first.seq]
            ),
            entries: vec![first.seq, retry.seq],
            hint: "a tool call answered with a task is still running: poll tasks/get (it is safe to retry) for its outcome instead of calling the tool again".into(),
        });
    }
}
