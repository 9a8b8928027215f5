//! Rules about revisions: an action admitted under a superseded revision (REC-2), and a result
//! of a superseded revision used later or adopted (ACC-2, found by its canary or its task).

use serde_json::Value;

use super::claims::Claims;
use super::index::Index;
use super::report::Finding;
use super::rows::str_field;
use crate::hash::FastMap as HashMap;
use crate::ledger::Disposition;
use crate::revision::Revision;

/// REC-2: an action the orchestrator sent under a revision older than the one in force.
pub(super) fn rec2_stale_admissions(ix: &Index, out: &mut Vec<Finding>) {
    for (i, e) in ix.rows().enumerate() {
        if e.disposition != Disposition::Executed || !e.by_client() {
            continue;
        }
        let (Some(rev), Some((in_force, since))) = (e.revision, ix.in_force[i]) else {
            continue;
        };
        if rev < in_force {
            out.push(Finding {
                rule: "REC-2".into(),
                summary: format!(
                    "{} {} was admitted under revision {rev} after revision {in_force} had taken over",
                    e.route().unwrap_or("?"),
                    e.intent_text()
                ),
                entries: vec![since, e.seq],
                hint: "check the revision at the admission of every action and refuse actions of a superseded revision".into(),
            });
        }
    }
}

/// `cny-` + 16 hex digits, wherever they appear in a text.
fn canaries_in(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("cny-") {
        let cand = rest.get(at..at + 20);
        if let Some(c) = cand.filter(|c| c[4..].bytes().all(|b| b.is_ascii_hexdigit())) {
            out.push(c);
        }
        rest = &rest[at + 4..];
    }
    out
}

/// Every string in a JSON value, keys aside.
fn strings_in<'v>(v: Option<&'v Value>, out: &mut Vec<&'v str>) {
    match v {
        Some(Value::String(s)) => out.push(s),
        Some(Value::Array(a)) => a.iter().for_each(|x| strings_in(Some(x), out)),
        Some(Value::Object(o)) => o.values().for_each(|x| strings_in(Some(x), out)),
        _ => {}
    }
}

/// ACC-2: a canary of a result produced under a revision that has since been superseded, found
/// in a later request.
pub(super) fn acc2_stale_results(ix: &Index, out: &mut Vec<Finding>) {
    let mut issued: HashMap<&str, (u64, Option<&str>, Option<i64>)> = HashMap::default();
    for (i, e) in ix.rows().enumerate() {
        if let Some(d) = e.agent_event("canary") {
            if let Some(c) = str_field(d, "canary") {
                let rev = detail_revision(d).or(e.revision);
                issued
                    .entry(c)
                    .or_insert((e.seq, str_field(d, "task_id"), rev));
            }
            continue;
        }
        let carried: Vec<&str> = if e.disposition == Disposition::Agent {
            // What the orchestrator told an agent counts as a request too.
            // Its text, and any part or metadata (a result's data part forwarded as data).
            let mut texts = Vec::new();
            if let Some(d) = e.agent_event("message") {
                texts.extend(str_field(d, "text"));
                for k in ["parts", "metadata"] {
                    strings_in(d.get(k), &mut texts);
                }
            }
            texts.into_iter().flat_map(canaries_in).collect()
        } else if e.by_client() {
            e.detail
                .as_ref()
                .and_then(|d| d.get("canaries"))
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default()
        } else {
            Vec::new()
        };
        for c in carried {
            let Some(&(cseq, task, Some(rev))) = issued.get(c) else {
                continue;
            };
            let Some((in_force, since)) = ix.in_force[i] else {
                continue;
            };
            if rev < in_force {
                out.push(Finding {
                    rule: "ACC-2".into(),
                    summary: format!(
                        "a result produced under superseded revision {rev} (task {}, canary {c}) was used in a later request, after revision {in_force} took over",
                        task.unwrap_or("?")
                    ),
                    entries: vec![cseq, since, e.seq],
                    hint: "reject late results whose revision does not match the one in force; redo the work as a new task under the current revision".into(),
                });
            }
        }
    }
}

/// The ordered revision an agent event's detail names, read as every revision is.
fn detail_revision(d: &Value) -> Option<i64> {
    d.get("revision")
        .and_then(Revision::of)
        .and_then(|r| r.ordinal())
}

/// The revision each piece of agent work was started under: an A2A task (its `task-created`
/// entry) or an AG-UI run (its `run-started` entry, the run id as its work id).
fn task_revisions<'e>(ix: &Index<'e>) -> HashMap<&'e str, (u64, i64)> {
    let mut m = HashMap::default();
    for e in ix.rows() {
        if e.agent_event("task-created").is_some() || e.agent_event("run-started").is_some() {
            if let (Some(t), Some(r)) = (
                e.task_of(),
                e.revision
                    .or_else(|| e.detail.as_ref().and_then(detail_revision)),
            ) {
                m.entry(t).or_insert((e.seq, r));
            }
        }
    }
    m
}

/// The `task-created` seqs of tasks started under a revision that has since been superseded:
/// whether their results were adopted (ACC-2) only the claims can say.
pub(super) fn superseded_tasks(ix: &Index) -> Vec<u64> {
    let Some((force, _)) = ix.final_force else {
        return Vec::new();
    };
    let mut seqs: Vec<u64> = task_revisions(ix)
        .values()
        .filter(|(_, rev)| *rev < force)
        .map(|(seq, _)| *seq)
        .collect();
    seqs.sort_unstable();
    seqs
}

/// ACC-2: a task claimed as adopted whose result was produced under a superseded revision.
pub(super) fn acc2_adopted(ix: &Index, claims: &Claims, out: &mut Vec<Finding>) {
    let revs = task_revisions(ix);
    let in_force = ix.final_force;
    for task in &claims.adopted {
        let (Some(&(seq, rev)), Some((force, since))) = (revs.get(task.as_str()), in_force) else {
            continue;
        };
        if rev < force {
            out.push(Finding {
                rule: "ACC-2".into(),
                summary: format!("the result of task {task}, produced under revision {rev}, was adopted although revision {force} had taken over"),
                entries: vec![seq, since],
                hint: "adopt only results that state the revision in force; a late result of a superseded revision is rejected".into(),
            });
        }
    }
}
