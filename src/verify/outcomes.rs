//! ACC-3, the orchestrator's account of outcomes against the ledger: claims the ledger
//! contradicts, outcomes never learned yet not reported as unknown, and effects applied under a
//! superseded revision that the claims do not mention.

use serde_json::Value;

use super::claims::{ActionClaim, ActionOutcome, Claims};
use super::index::{Index, NO_KEY};
use super::report::Finding;
use super::rows::{text_hash, Ledger, Row};
use crate::hash::{FastMap as HashMap, FastSet as HashSet};
use crate::ledger::Disposition;

/// Executions indexed by what an action claim can name them by, so that resolving every claim
/// costs lookups, not a scan of the ledger each.
struct Claimable<'e> {
    l: &'e Ledger,
    by_key: HashMap<&'e str, Vec<usize>>,
    by_work: HashMap<&'e str, Vec<usize>>,
    /// Recorded intent (its JSON text) → executions; built only when a claim names an intent.
    by_intent: HashMap<&'e str, Vec<usize>>,
    /// The distinct pointer sets of recorded intents (`["/amount", "/to"]`), onto which a claim
    /// written as body fields is projected.
    pointer_sets: Vec<Vec<String>>,
}

impl<'e> Claimable<'e> {
    fn new(l: &'e Ledger, claims: &'e Claims) -> Claimable<'e> {
        let with_intent = claims.actions.iter().any(|c| c.intent.is_some());
        // Only the keys and work ids some claim names are worth indexing.
        let keys: HashSet<&str> = claims
            .actions
            .iter()
            .filter_map(|c| c.key.as_deref())
            .collect();
        let works: HashSet<&str> = claims
            .actions
            .iter()
            .filter_map(|c| c.work_id.as_deref())
            .collect();
        let mut ix = Claimable {
            l,
            by_key: HashMap::default(),
            by_work: HashMap::default(),
            by_intent: HashMap::default(),
            pointer_sets: Vec::new(),
        };
        // Keys are matched by the hashes the rows carry first: reading each row's key would
        // be a cache miss per row.
        let key_hashes: HashSet<u64> = keys.iter().map(|k| text_hash(&l.hash, k)).collect();
        for (i, e) in l.rows.iter().enumerate() {
            if e.disposition != Disposition::Executed {
                continue;
            }
            if key_hashes.contains(&e.key_hash) {
                if let Some(k) = e.key().filter(|k| keys.contains(k)) {
                    ix.by_key.entry(k).or_default().push(i);
                }
            }
            if let Some(w) = e
                .work_id()
                .filter(|w| !works.is_empty() && works.contains(w))
            {
                ix.by_work.entry(w).or_default().push(i);
            }
            if let (true, Some(intent)) = (with_intent, e.intent()) {
                ix.by_intent.entry(intent).or_default().push(i);
            }
        }
        // The pointer sets, from each distinct recorded intent once.
        let mut sets: HashSet<Vec<String>> = HashSet::default();
        for text in ix.by_intent.keys() {
            if let Ok(Value::Object(m)) = serde_json::from_str::<Value>(text) {
                if !m.is_empty() && m.keys().all(|k| k.starts_with('/')) {
                    sets.insert(m.keys().cloned().collect());
                }
            }
        }
        ix.pointer_sets = sets.into_iter().collect();
        ix
    }

    /// Executions an action claim refers to, in ledger order.
    fn claimed(&self, c: &ActionClaim) -> Vec<&'e Row> {
        let mut hits: Vec<usize> = if let Some(k) = &c.key {
            self.by_key.get(k.as_str()).cloned().unwrap_or_default()
        } else if let Some(w) = &c.work_id {
            self.by_work.get(w.as_str()).cloned().unwrap_or_default()
        } else if let Some(claimed) = &c.intent {
            // Candidates: the claim as recorded, and the claim projected onto each pointer set;
            // `intent_matches` has the last word.
            let mut found: Vec<usize> = Vec::new();
            let mut add = |text: String| {
                if let Some(v) = self.by_intent.get(text.as_str()) {
                    found.extend_from_slice(v);
                }
            };
            add(claimed.to_string());
            for set in &self.pointer_sets {
                let projected: Option<serde_json::Map<String, Value>> = set
                    .iter()
                    .map(|p| claimed.pointer(p).map(|v| (p.to_string(), v.clone())))
                    .collect();
                if let Some(m) = projected {
                    add(Value::Object(m).to_string());
                }
            }
            found.sort_unstable();
            found.dedup();
            found.retain(|&i| intent_matches(claimed, self.l.rows.get(i).intent()));
            found
        } else {
            Vec::new()
        };
        hits.sort_unstable();
        hits.into_iter().map(|i| self.l.rows.get(i)).collect()
    }
}

/// A claimed intent matches an entry's intent as recorded (`{"/to": ..}`) or as body fields
/// (`{"to": ..}`), whichever the orchestrator wrote.
fn intent_matches(claimed: &Value, recorded: Option<&str>) -> bool {
    let Some(recorded) = recorded.and_then(|t| serde_json::from_str::<Value>(t).ok()) else {
        return false;
    };
    if *claimed == recorded {
        return true;
    }
    match recorded.as_object() {
        Some(m) if !m.is_empty() && m.keys().all(|k| k.starts_with('/')) => {
            m.iter().all(|(ptr, v)| claimed.pointer(ptr) == Some(v))
        }
        _ => false,
    }
}

/// The client's executions whose outcome it never learned: no answer, replay or lookup of them,
/// and no later answered execution under the same key. ACC-3 judges them against the claims.
pub(super) fn never_learned<'e>(ix: &Index<'e>) -> Vec<&'e Row> {
    // The last execution per (service, key) that got an answer: a later same-key execution
    // that answered also told the client the outcome.
    let mut answered: Vec<Option<u64>> = vec![None; ix.keys];
    for (x, kid) in ix.rows().zip(&ix.key_ids) {
        if *kid != NO_KEY && x.disposition == Disposition::Executed && !x.uncertain() {
            answered[*kid as usize] = Some(x.seq);
        }
    }
    ix.rows()
        .zip(&ix.key_ids)
        .filter(|(e, kid)| {
            let answered_by_retry = (**kid != NO_KEY)
                .then(|| answered[**kid as usize])
                .flatten()
                .is_some_and(|last| last > e.seq);
            e.by_client() && e.uncertain() && !ix.learned(e, u64::MAX) && !answered_by_retry
        })
        .map(|(e, _)| e)
        .collect()
}

/// ACC-3: claims contradicted by the ledger, unknown outcomes not reported, and effects applied
/// under a superseded revision that the claims do not mention.
pub(super) fn acc3_claims(ix: &Index, claims: &Claims, out: &mut Vec<Finding>) {
    let mut covered: HashMap<u64, ActionOutcome> = HashMap::default();
    let mut contradicted: HashSet<u64> = HashSet::default();
    let claimable = Claimable::new(ix.l, claims);
    let missing = ix.l.missing_entries();
    for c in &claims.actions {
        let hits = claimable.claimed(c);
        if hits.is_empty() && missing {
            // Its entries may be among those missing: the verdict's notes say it was not judged.
            continue;
        }
        for h in &hits {
            covered.insert(h.seq, c.claim);
        }
        let applied = hits.iter().any(|e| e.applied);
        let name = match (&c.key, &c.work_id, &c.intent) {
            (Some(k), _, _) => format!("key \"{k}\""),
            (_, Some(w), _) => format!("work id \"{w}\""),
            (_, _, i) => format!(
                "intent {}",
                i.as_ref().map(Value::to_string).unwrap_or_default()
            ),
        };
        const REPORT: &str = "report what the authoritative state says; when it cannot be known, report the outcome as unknown";
        let contradiction = match c.claim {
            ActionOutcome::Succeeded if !applied => Some(("ACC-3", if hits.is_empty() {
                format!("the action named by {name} was claimed succeeded but was never executed")
            } else {
                format!("the action named by {name} was claimed succeeded but never took effect")
            }, REPORT)),
            ActionOutcome::Failed if applied => Some(("ACC-3", format!(
                "the action named by {name} was claimed failed but it took effect"
            ), REPORT)),
            // A cancel is a request: the call may have been applied before it arrived, or the
            // server may ignore it (MCP makes cancellation advisory).
            ActionOutcome::Cancelled if applied => Some(("REC-3", format!(
                "the action named by {name} was claimed cancelled but it took effect"
            ), "a cancel is a request, not an outcome: record \"stop requested\" and look the action up before believing it did not happen")),
            _ => None,
        };
        if let Some((rule, summary, hint)) = contradiction {
            contradicted.extend(hits.iter().map(|e| e.seq));
            out.push(Finding {
                rule: rule.into(),
                summary,
                entries: hits.iter().map(|e| e.seq).collect(),
                hint: hint.into(),
            });
        }
    }
    for e in never_learned(ix) {
        match covered.get(&e.seq) {
            None => out.push(Finding {
                rule: "ACC-3".into(),
                summary: format!(
                    "the outcome of {} {} was never known ({}) and was never reported as unknown",
                    e.route().unwrap_or("?"),
                    e.intent_text(),
                    e.why_uncertain()
                ),
                entries: vec![e.seq],
                hint: "when reconciliation is impossible, state the unresolved outcome explicitly (claim \"unknown\")".into(),
            }),
            Some(ActionOutcome::Unknown) => {}
            Some(_) if contradicted.contains(&e.seq) => {}
            Some(claim) => out.push(Finding {
                rule: "ACC-3".into(),
                summary: format!(
                    "the outcome of {} {} was reported as {} although it was never learned ({})",
                    e.route().unwrap_or("?"),
                    e.intent_text(),
                    serde_json::to_value(claim).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default(),
                    e.why_uncertain()
                ),
                entries: vec![e.seq],
                hint: "an outcome the client could not observe is unknown until a lookup or a replay confirms it".into(),
            }),
        }
    }
    let task_claimed: HashSet<&str> = claims.tasks.iter().map(|t| t.task_id.as_str()).collect();
    for (i, e) in ix.rows().enumerate() {
        if e.disposition != Disposition::Executed
            || !e.applied
            || !e.actor().is_some_and(|a| a.starts_with("agent:"))
        {
            continue;
        }
        let (Some(rev), Some((in_force, since))) = (e.revision, ix.in_force[i]) else {
            continue;
        };
        let mentioned =
            covered.contains_key(&e.seq) || e.work_id().is_some_and(|w| task_claimed.contains(w));
        if rev < in_force && !mentioned {
            out.push(Finding {
                rule: "ACC-3".into(),
                summary: format!(
                    "{} applied {} {} under superseded revision {rev} (revision {in_force} was in force) and the claims do not mention it",
                    e.actor().unwrap_or("an agent"),
                    e.route().unwrap_or("?"),
                    e.intent_text()
                ),
                entries: vec![since, e.seq],
                hint: "report effects that happened under an old revision (e.g. by a subagent that ignored its cancel) so they can be reconciled or compensated".into(),
            });
        }
    }
}
