//! Rules about idempotency keys (REC-4): a key reused for another intent, and a key relied on
//! past its retention window.

use serde_json::Value;

use super::index::Index;
use super::report::Finding;
use super::rows::Row;
use crate::hash::FastSet as HashSet;
use crate::ledger::Disposition;

/// Whether two intents (canonical texts) are equal as JSON values (`Value`'s `==`): the same
/// text, or texts that differ only where `==` does not look (`0.0` and `-0.0`).
fn same_value(a: &str, b: &str) -> bool {
    a == b
        || matches!(
            (serde_json::from_str::<Value>(a), serde_json::from_str::<Value>(b)),
            (Ok(x), Ok(y)) if x == y
        )
}

/// REC-4: an idempotency key reused for a different intent.
pub(super) fn rec4_key_reuse(ix: &Index, out: &mut Vec<Finding>) {
    let mut first_use: Vec<Option<&Row>> = vec![None; ix.keys];
    let mut reported: HashSet<(u64, &str)> = HashSet::default();
    for (e, kid) in ix.rows().zip(&ix.key_ids) {
        if !e.by_client()
            || e.disposition == Disposition::Lookup
            || e.disposition == Disposition::Cancel
        {
            continue;
        }
        let (Some(key), Some(intent)) = (e.key(), e.intent()) else {
            continue;
        };
        let slot = &mut first_use[*kid as usize];
        match slot {
            None => *slot = Some(e),
            Some(first) if !first.intent().is_some_and(|i| same_value(i, intent)) => {
                if reported.insert((first.seq, intent)) {
                    out.push(Finding {
                        rule: "REC-4".into(),
                        summary: format!(
                            "idempotency key \"{key}\" reused for a different intent: first {}, then {intent}",
                            first.intent_text()
                        ),
                        entries: vec![first.seq, e.seq],
                        hint: "reuse a key only for the same intent; a new intent needs a new key".into(),
                    });
                }
            }
            Some(_) => {}
        }
    }
}

/// REC-4: a retry that relied on a key past its retention window.
pub(super) fn rec4_expired_keys(ix: &Index, out: &mut Vec<Finding>) {
    let mut last_exec: Vec<Option<u64>> = vec![None; ix.keys];
    for (e, kid) in ix.rows().zip(&ix.key_ids) {
        if e.disposition != Disposition::Executed {
            continue;
        }
        let Some(key) = e.key() else {
            continue;
        };
        let last = &mut last_exec[*kid as usize];
        if e.executed_after_expiry {
            out.push(Finding {
                rule: "REC-4".into(),
                summary: format!(
                    "retried with idempotency key \"{key}\" after its retention window had passed: the service no longer knew it and executed again"
                ),
                entries: last.iter().copied().chain([e.seq]).collect(),
                hint: "reuse a key only within the service's retention window; past it, look the action up before deciding to retry".into(),
            });
        }
        *last = Some(e.seq);
    }
}
