//! The ledger indexed once for all rules ([`Index`]): the claims (declared in the ledger and
//! given on top), the revision in force before each entry, lookups and replays by what they
//! looked up, and the numberings of intents and keys that let the rules group entries without
//! comparing strings.

use std::hash::BuildHasher;

use serde::Deserialize;
use serde_json::Value;

use super::claims::Claims;
use super::rows::{Ledger, Row, Rows};
use crate::hash::FastMap as HashMap;
use crate::ledger::Disposition;

/// The ledger, indexed once for all checkers.
pub(super) struct Index<'e> {
    pub l: &'e Ledger,
    /// All claims: declared in the ledger plus the extra ones; `None` if none were submitted.
    pub claims: Option<Claims>,
    /// Revision in force just before each entry (by position), and the seq that put it in force.
    pub in_force: Vec<Option<(i64, u64)>>,
    /// Lookups per service: (target seq or id) → seqs of lookups.
    lookups_by_target: HashMap<u64, Vec<u64>>,
    lookups_by_id: HashMap<(&'e str, &'e str), Vec<u64>>,
    replays_of: HashMap<u64, Vec<u64>>,
    /// For each execution with an intent, a number shared by every execution of the same
    /// (service, route, intent); [`NO_INTENT`] otherwise.
    pub intent_ids: Vec<u32>,
    pub intents: usize,
    /// For each entry with an idempotency key, a number shared by every entry with the same
    /// (service, key); [`NO_KEY`] otherwise.
    pub key_ids: Vec<u32>,
    pub keys: usize,
    /// The revision in force after the last entry.
    pub final_force: Option<(i64, u64)>,
}

/// No number: a row without an intent or key.
const NO_ID: u32 = u32::MAX;
pub(super) const NO_INTENT: u32 = NO_ID;
pub(super) const NO_KEY: u32 = NO_ID;

/// Number rows into classes of equal keys, in the order of each class's first row: `key` gives
/// a row's hash (`None`: [`NO_ID`]), `same` whether two rows of equal hashes have equal keys.
///
/// One table of a million keys costs a cache miss or two per row, so rows are first spread by
/// hash over cache-sized partitions and grouped there by hash; then each row is checked against
/// its class's first row (usually close by: a retry follows its first attempt). Should two keys
/// share a 64-bit hash, the numbering is redone the exact way.
fn number(
    rows: &Rows,
    key: impl Fn(&Row) -> Option<u64>,
    same: impl Fn(&Row, &Row) -> bool,
) -> (Vec<u32>, usize) {
    let n = rows.len();
    let bits = if n < 4096 { 0 } else { 8 };
    let parts = 1usize << bits;
    let part_of = |h: u64| h.checked_shr(64 - bits).unwrap_or(0) as usize;
    // The hashes, counted per partition, then spread over them (ledger order kept in each).
    let mut hashed: Vec<(u64, u32)> = Vec::with_capacity(n);
    let mut starts = vec![0usize; parts + 1];
    for (i, r) in rows.iter().enumerate() {
        if let Some(h) = key(r) {
            hashed.push((h, i as u32));
            starts[part_of(h) + 1] += 1;
        }
    }
    for p in 0..parts {
        starts[p + 1] += starts[p];
    }
    let mut spread = vec![(0u64, 0u32); hashed.len()];
    let mut fill = starts.clone();
    for &(h, i) in &hashed {
        let p = part_of(h);
        spread[fill[p]] = (h, i);
        fill[p] += 1;
    }
    drop(hashed);
    // The first row of each row's class, by hash.
    let mut class = vec![NO_ID; n];
    let mut first: HashMap<u64, u32> = HashMap::default();
    for p in 0..parts {
        first.clear();
        for &(h, i) in &spread[starts[p]..starts[p + 1]] {
            class[i as usize] = *first.entry(h).or_insert(i);
        }
    }
    drop(spread);
    // Equal hashes are equal keys, and numbers follow first rows (which come before the other
    // rows of their class).
    let mut next = 0u32;
    for (i, r) in rows.iter().enumerate() {
        let f = class[i];
        if f == NO_ID {
            continue;
        }
        class[i] = if f as usize == i {
            next += 1;
            next - 1
        } else if same(rows.get(f as usize), r) {
            class[f as usize]
        } else {
            return number_exactly(rows, key, same);
        };
    }
    (class, next as usize)
}

/// [`number`] with one table, and hash collisions told apart.
fn number_exactly(
    rows: &Rows,
    key: impl Fn(&Row) -> Option<u64>,
    same: impl Fn(&Row, &Row) -> bool,
) -> (Vec<u32>, usize) {
    // hash → (id, position of its first row); `more` holds the classes of colliding hashes.
    let mut first: HashMap<u64, (u32, usize)> = HashMap::default();
    let mut more: HashMap<u64, Vec<(u32, usize)>> = HashMap::default();
    let mut next = 0u32;
    let ids = rows
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let Some(h) = key(e) else {
                return NO_ID;
            };
            let same = |at: usize| same(rows.get(at), e);
            let id = next;
            match first.get(&h) {
                None => {
                    first.insert(h, (id, i));
                }
                Some(&(known, at)) if same(at) => return known,
                Some(_) => {
                    let bucket = more.entry(h).or_default();
                    if let Some(&(known, _)) = bucket.iter().find(|(_, at)| same(*at)) {
                        return known;
                    }
                    bucket.push((id, i));
                }
            }
            next += 1;
            id
        })
        .collect();
    (ids, next as usize)
}

/// Number the distinct (service, route, intent) of executions, by canonical JSON text.
fn intent_ids(l: &Ledger) -> (Vec<u32>, usize) {
    number(
        &l.rows,
        |e| {
            (e.disposition == Disposition::Executed && e.intent.is_some())
                .then(|| l.hash.hash_one((&e.service, e.route_key(), e.intent_hash)))
        },
        |f, e| f.service == e.service && f.route_key() == e.route_key() && f.intent() == e.intent(),
    )
}

/// Number the distinct (service, idempotency key) of all entries that carry a key.
fn key_ids(l: &Ledger) -> (Vec<u32>, usize) {
    number(
        &l.rows,
        |e| {
            e.key
                .is_some()
                .then(|| l.hash.hash_one((&e.service, e.key_hash)))
        },
        |f, e| f.service == e.service && f.key() == e.key(),
    )
}

impl<'e> Index<'e> {
    /// The index; keys are numbered on a second thread from `parallel_rows` rows on.
    pub fn new(l: &'e Ledger, extra: Option<&Claims>, parallel_rows: usize) -> Index<'e> {
        std::thread::scope(|s| {
            // Keys numbered on another thread while the rest is done here.
            let keys = (l.rows.len() >= parallel_rows).then(|| s.spawn(|| key_ids(l)));
            let mut ix = Index::build(l, extra);
            (ix.intent_ids, ix.intents) = intent_ids(l);
            (ix.key_ids, ix.keys) = match keys {
                // A panic there is a bug; numbering again here gives the same result.
                Some(h) => h.join().unwrap_or_else(|_| key_ids(l)),
                None => key_ids(l),
            };
            ix
        })
    }

    /// Everything but the numberings of intents and keys.
    fn build(l: &'e Ledger, extra: Option<&Claims>) -> Self {
        let mut claims: Option<Claims> = extra.cloned();
        let mut in_force = Vec::with_capacity(l.rows.len());
        let mut global: Option<(i64, u64)> = None;
        let mut scoped: HashMap<&str, Option<(i64, u64)>> = HashMap::default();
        let mut lookups_by_target: HashMap<u64, Vec<u64>> = HashMap::default();
        let mut lookups_by_id: HashMap<(&str, &str), Vec<u64>> = HashMap::default();
        let mut replays_of: HashMap<u64, Vec<u64>> = HashMap::default();
        // The executions whose answer was a lie (error-after-apply), with the status they lied with.
        let mut lies: HashMap<u64, Option<u16>> = HashMap::default();
        let raise = |slot: &mut Option<(i64, u64)>, rev: i64, seq: u64| {
            if slot.is_none_or(|(r, _)| rev > r) {
                *slot = Some((rev, seq));
            }
        };
        for e in l.rows.iter() {
            let scoped_here = match e.work_id() {
                Some(w) if !scoped.is_empty() => scoped.get(w).copied().flatten(),
                _ => None,
            };
            let here = match scoped_here {
                Some((r, s)) if global.is_none_or(|(g, _)| r > g) => Some((r, s)),
                _ => global,
            };
            in_force.push(here);
            match (e.disposition, e.event()) {
                (Disposition::Declaration, Some("revision")) => {
                    if let Some(rev) = e.revision {
                        match e.work_id() {
                            Some(w) => raise(scoped.entry(w).or_default(), rev, e.seq),
                            None => raise(&mut global, rev, e.seq),
                        }
                    }
                }
                (Disposition::Declaration, Some("claims")) => {
                    // A claims declaration that does not parse was refused when declared; one
                    // in a hand-made ledger that does not is ignored, as no claims.
                    if let Some(c) = e.detail.as_ref().and_then(|d| Claims::deserialize(d).ok()) {
                        claims.get_or_insert_with(Claims::default).merge(c);
                    }
                }
                // Without declarations, the first request carrying a newer revision is the switch.
                (Disposition::Declaration, _) | (Disposition::Agent, _) => {}
                _ => {
                    if let Some(rev) = e.revision.filter(|_| e.by_client()) {
                        raise(&mut global, rev, e.seq);
                    }
                }
            }
            // An MCP task polled, listed, read or cancelled, or a cut stream resumed with its
            // answer replayed: the client learnt (or settled) the state of the action, unless
            // the answer was lost on the way.
            if e.disposition == Disposition::Agent
                && matches!(
                    e.event(),
                    Some("task-get" | "task-result" | "task-list" | "task-cancel" | "resumed")
                )
            {
                let heard = |d: &&Value| {
                    d.get("answered") != Some(&Value::Bool(false))
                        && (e.event() != Some("resumed")
                            || d.get("outcome").and_then(Value::as_str) == Some("replayed"))
                };
                if let Some(d) = e.detail.as_ref().filter(heard) {
                    let one = d.get("target").into_iter();
                    let many = d
                        .get("targets")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten();
                    for t in one.chain(many).filter_map(Value::as_u64) {
                        lookups_by_target.entry(t).or_default().push(e.seq);
                    }
                }
            }
            if let (Disposition::Lookup, Some(d)) = (e.disposition, &e.detail) {
                if let Some(t) = d.get("target").and_then(Value::as_u64) {
                    lookups_by_target.entry(t).or_default().push(e.seq);
                }
                if let Some(id) = d.get("id").and_then(Value::as_str) {
                    lookups_by_id
                        .entry((&*e.service, id))
                        .or_default()
                        .push(e.seq);
                }
            }
            if e.error_after_apply {
                lies.insert(e.seq, e.status);
            }
            // A replay of a lie repeats it (a preset that caches 5xx, as Stripe does): the client
            // learns nothing from it, so it is no confirmation of the outcome (REC-4, ACC-3).
            if let Some(of) = e.replay_of.filter(|of| lies.get(of) != Some(&e.status)) {
                replays_of.entry(of).or_default().push(e.seq);
            }
        }
        Index {
            l,
            claims,
            in_force,
            lookups_by_target,
            lookups_by_id,
            replays_of,
            intent_ids: Vec::new(),
            intents: 0,
            key_ids: Vec::new(),
            keys: 0,
            final_force: global,
        }
    }

    pub fn rows(&self) -> impl DoubleEndedIterator<Item = &'e Row> + Clone + 'e {
        self.l.rows.iter()
    }

    /// Did the client learn the outcome of `e` (a replay or a lookup of it) in (e.seq, before)?
    pub fn learned(&self, e: &Row, before: u64) -> bool {
        let within = |seqs: Option<&Vec<u64>>| {
            seqs.is_some_and(|v| v.iter().any(|s| *s > e.seq && *s < before))
        };
        if within(self.replays_of.get(&e.seq)) || within(self.lookups_by_target.get(&e.seq)) {
            return true;
        }
        let ids = [e.key(), e.action_id.as_deref()];
        ids.iter()
            .flatten()
            .any(|id| within(self.lookups_by_id.get(&(&*e.service, *id))))
    }
}
