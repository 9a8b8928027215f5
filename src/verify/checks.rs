//! The checkers: each a function from the indexed ledger ([`Index`] over [`Ledger`] rows) to
//! [`Finding`]s. They are linear or `n log n` in the ledger; the index is built once for all of
//! them, its two numberings (intents, keys) on two threads when the ledger is large.

use std::hash::BuildHasher;

use serde_json::Value;

use super::rows::{text_hash, Ledger, Row, Rows, Sym, NONE};
use super::{ActionClaim, ActionOutcome, Claims, Finding, Report, TaskOutcome};
use crate::hash::{FastMap as HashMap, FastSet as HashSet, FastState};
use crate::ledger::{Delivery, Disposition};

/// Verify a ledger, with optional extra claims (from a file) on top of any declared in it.
pub(super) fn verify(l: &Ledger<'_>, extra: Option<&Claims>) -> Report {
    let ix = Index::new(l, extra);
    let of_ledger = |ix: &Index| {
        let mut out = Vec::new();
        acc1_duplicate_effects(ix, &mut out);
        rec4_blind_retries(ix, &mut out);
        rec4_key_reuse(ix, &mut out);
        rec4_expired_keys(ix, &mut out);
        rec2_stale_admissions(ix, &mut out);
        rec4_resent_messages(ix, &mut out);
        rec6_messages_to_terminal_tasks(ix, &mut out);
        acc2_stale_results(ix, &mut out);
        out
    };
    let of_claims = |ix: &Index, claims: &Claims| {
        let mut out = Vec::new();
        acc3_claims(ix, claims, &mut out);
        rec3_cancel_claims(ix, claims, &mut out);
        acc2_adopted(ix, claims, &mut out);
        out
    };
    // The claim checks on another thread, when there is enough to check; the findings in the
    // same order either way.
    let (mut findings, of_claims) = match &ix.claims {
        Some(claims) if l.rows.len() >= PARALLEL_ROWS => std::thread::scope(|s| {
            let other = s.spawn(|| of_claims(&ix, claims));
            let findings = of_ledger(&ix);
            // A panic there is a bug; checking again here gives the same findings.
            let other = other.join().unwrap_or_else(|_| of_claims(&ix, claims));
            (findings, Some(other))
        }),
        Some(claims) => (of_ledger(&ix), Some(of_claims(&ix, claims))),
        None => (of_ledger(&ix), None),
    };
    let mut notes = Vec::new();
    if let Some(more) = of_claims {
        findings.extend(more);
    } else {
        notes.push(
            "no claims were submitted (POST /_admin/claims or --claims FILE): the ACC-3 checks of \
             what the orchestrator reported were skipped"
                .to_string(),
        );
    }
    if let Some(first) = l.rows.first().filter(|e| e.seq > 1) {
        notes.push(format!(
            "the ledger is incomplete: it starts at entry #{} (the {} oldest were evicted, see --max-entries), so findings involving them cannot be seen",
            first.seq,
            first.seq - 1
        ));
    }
    findings.sort_by(|a, b| {
        a.entries
            .first()
            .cmp(&b.entries.first())
            .then(a.rule.cmp(&b.rule))
    });
    Report {
        clean: findings.is_empty(),
        findings,
        entries: l.rows.len(),
        claims: ix.claims.is_some(),
        notes,
    }
}

/// The ledger, indexed once for all checkers.
struct Index<'e> {
    l: &'e Ledger<'e>,
    /// All claims: declared in the ledger plus the extra ones; `None` if none were submitted.
    claims: Option<Claims>,
    /// Revision in force just before each entry (by position), and the seq that put it in force.
    in_force: Vec<Option<(i64, u64)>>,
    /// Lookups per service: (target seq or id) → seqs of lookups.
    lookups_by_target: HashMap<u64, Vec<u64>>,
    lookups_by_id: HashMap<(Sym, &'e str), Vec<u64>>,
    replays_of: HashMap<u64, Vec<u64>>,
    /// For each execution with an intent, a number shared by every execution of the same
    /// (service, route, intent); [`NO_INTENT`] otherwise.
    intent_ids: Vec<u32>,
    intents: usize,
    /// For each entry with an idempotency key, a number shared by every entry with the same
    /// (service, key); [`NO_KEY`] otherwise.
    key_ids: Vec<u32>,
    keys: usize,
    /// The revision in force after the last entry.
    final_force: Option<(i64, u64)>,
}

/// No number: a row without an intent or key.
const NO_ID: u32 = u32::MAX;
const NO_INTENT: u32 = NO_ID;
const NO_KEY: u32 = NO_ID;

/// Below this many rows the index is built on one thread: a thread costs more than it saves.
/// (Lower in unit tests, so that their ledgers take both ways.)
const PARALLEL_ROWS: usize = if cfg!(test) { 1_000 } else { 50_000 };

/// Number rows into classes of equal keys, in the order of each class's first row (as one hash
/// map fed the rows in order would): `key` gives a row's hash (`None`: no key, [`NO_ID`]),
/// `same` whether two rows of equal hashes have equal keys.
///
/// With a million keys in one table every row is a cache miss or two, so the rows are first
/// spread by hash over partitions small enough for each one's table to stay in cache, and
/// grouped there by hash alone; then, in ledger order, each row is checked against its class's
/// first row, which is mostly close by (a retry follows its first attempt). Should two different
/// keys ever share a 64-bit hash, the numbering is done again the exact way.
fn number(
    rows: &Rows<'_>,
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
    rows: &Rows<'_>,
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

/// Number the distinct (service, route, intent) of executions. Intents are compared as their
/// canonical JSON texts (see [`super::rows`]), hashed where the rows were made.
fn intent_ids(l: &Ledger<'_>) -> (Vec<u32>, usize) {
    let state = FastState::default();
    number(
        &l.rows,
        |e| {
            (e.disposition == Disposition::Executed && e.intent.is_some())
                .then(|| state.hash_one((e.service, l.route_key(e), e.intent_hash)))
        },
        |f, e| {
            f.service == e.service && l.route_key(f) == l.route_key(e) && l.intent(f) == l.intent(e)
        },
    )
}

/// Number the distinct (service, idempotency key) of all entries that carry a key.
fn key_ids(l: &Ledger<'_>) -> (Vec<u32>, usize) {
    let state = FastState::default();
    number(
        &l.rows,
        |e| {
            e.key
                .is_some()
                .then(|| state.hash_one((e.service, e.key_hash)))
        },
        |f, e| f.service == e.service && l.key(f) == l.key(e),
    )
}

/// Whether two intents (canonical texts) are equal as JSON values (`Value`'s `==`): the same
/// text, or texts that differ only where `==` does not look (`0.0` and `-0.0`).
fn same_value(a: &str, b: &str) -> bool {
    a == b
        || matches!(
            (serde_json::from_str::<Value>(a), serde_json::from_str::<Value>(b)),
            (Ok(x), Ok(y)) if x == y
        )
}

/// Executions (as positions) grouped by intent id, in ledger order, keeping only the groups of
/// two or more that pass `keep`.
fn intent_groups<'e>(ix: &Index<'e>, keep: impl Fn(&Row) -> bool) -> Vec<Vec<&'e Row<'e>>> {
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

impl<'e> Index<'e> {
    fn new(l: &'e Ledger<'e>, extra: Option<&Claims>) -> Index<'e> {
        std::thread::scope(|s| {
            // Keys numbered on another thread while the rest is done here.
            let keys = (l.rows.len() >= PARALLEL_ROWS).then(|| s.spawn(|| key_ids(l)));
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
    fn build(l: &'e Ledger<'e>, extra: Option<&Claims>) -> Self {
        let mut claims: Option<Claims> = extra.cloned();
        let mut in_force = Vec::with_capacity(l.rows.len());
        let mut global: Option<(i64, u64)> = None;
        let mut scoped: HashMap<&str, (i64, u64)> = HashMap::default();
        let mut lookups_by_target: HashMap<u64, Vec<u64>> = HashMap::default();
        let mut lookups_by_id: HashMap<(Sym, &str), Vec<u64>> = HashMap::default();
        let mut replays_of: HashMap<u64, Vec<u64>> = HashMap::default();
        let raise = |slot: &mut Option<(i64, u64)>, rev: i64, seq: u64| {
            if slot.is_none_or(|(r, _)| rev > r) {
                *slot = Some((rev, seq));
            }
        };
        for e in l.rows.iter() {
            let scoped_here = match l.work_id(e) {
                Some(w) if !scoped.is_empty() => scoped.get(w).copied(),
                _ => None,
            };
            let here = match scoped_here {
                Some((r, s)) if global.is_none_or(|(g, _)| r > g) => Some((r, s)),
                _ => global,
            };
            in_force.push(here);
            let event = l.name(e.event);
            match (e.disposition, event) {
                (Disposition::Declaration, Some("revision")) => {
                    if let Some(rev) = e.revision {
                        match l.work_id(e) {
                            Some(w) => {
                                let mut slot = scoped.get(w).copied();
                                raise(&mut slot, rev, e.seq);
                                if let Some(v) = slot {
                                    scoped.insert(w, v);
                                }
                            }
                            None => raise(&mut global, rev, e.seq),
                        }
                    }
                }
                (Disposition::Declaration, Some("claims")) => {
                    if let Some(c) = e
                        .detail
                        .as_deref()
                        .and_then(|d| serde_json::from_value::<Claims>(d.clone()).ok())
                    {
                        claims.get_or_insert_with(Claims::default).merge(c);
                    }
                }
                // Without declarations, the first request carrying a newer revision is the switch.
                (Disposition::Declaration, _) | (Disposition::Agent, _) => {}
                _ => {
                    if let Some(rev) = e.revision {
                        if e.actor == NONE {
                            raise(&mut global, rev, e.seq);
                        }
                    }
                }
            }
            if e.disposition == Disposition::Lookup {
                if let Some(d) = e.detail.as_deref() {
                    if let Some(t) = d.get("target").and_then(Value::as_u64) {
                        lookups_by_target.entry(t).or_default().push(e.seq);
                    }
                    if let Some(id) = d.get("id").and_then(Value::as_str) {
                        lookups_by_id
                            .entry((e.service, id))
                            .or_default()
                            .push(e.seq);
                    }
                }
            }
            if let Some(of) = e.replay_of {
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

    fn rows(&self) -> impl DoubleEndedIterator<Item = &'e Row<'e>> + Clone + 'e {
        self.l.rows.iter()
    }

    fn intent_text(&self, e: &Row) -> &'e str {
        self.l.intent(e).unwrap_or("(no intent)")
    }

    /// The task an agent entry is about: `detail.task_id`, else the entry's work id.
    fn task_of(&self, e: &'e Row<'e>) -> Option<&'e str> {
        e.detail
            .as_deref()
            .and_then(|d| str_field(d, "task_id"))
            .or(self.l.work_id(e))
    }

    fn service(&self, e: &Row) -> &'e str {
        self.l.name(e.service).unwrap_or_default()
    }

    fn route(&self, e: &Row) -> Option<&'e str> {
        self.l.name(e.route)
    }

    fn actor(&self, e: &Row) -> Option<&'e str> {
        self.l.name(e.actor)
    }

    /// An execution whose outcome the client could not know from what it received.
    fn uncertain(&self, e: &Row) -> bool {
        e.disposition == Disposition::Executed
            && (matches!(
                e.delivery,
                Delivery::Dropped | Delivery::Reset | Delivery::Hung | Delivery::Pending
            ) || self
                .l
                .name(e.fate)
                .is_some_and(|f| f.starts_with("error-after-apply")))
    }

    /// The detail of an agent entry for `event`.
    fn agent_event(&self, e: &'e Row<'e>, event: &str) -> Option<&'e Value> {
        (e.disposition == Disposition::Agent && self.l.name(e.event) == Some(event))
            .then_some(e.detail.as_deref())
            .flatten()
    }

    /// Did the client learn the outcome of `e` (a replay of it, or a lookup of it) in the
    /// open interval (e.seq, before)?
    fn learned(&self, e: &Row, before: u64) -> bool {
        let within = |seqs: Option<&Vec<u64>>| {
            seqs.is_some_and(|v| v.iter().any(|s| *s > e.seq && *s < before))
        };
        if within(self.replays_of.get(&e.seq)) || within(self.lookups_by_target.get(&e.seq)) {
            return true;
        }
        let ids = [self.l.key(e), self.l.action_id(e)];
        ids.iter()
            .flatten()
            .any(|id| within(self.lookups_by_id.get(&(e.service, *id))))
    }
}

fn why_uncertain(e: &Row) -> &'static str {
    match e.delivery {
        Delivery::Dropped => "its response was dropped",
        Delivery::Reset => "its connection was reset",
        Delivery::Hung => "its response never came",
        Delivery::Pending => "its response was still pending",
        Delivery::Sent => "it answered with an error although the effect happened",
    }
}

fn is_repeatable(e: &Row) -> bool {
    e.detail
        .as_deref()
        .and_then(|d| d.get("repeatable"))
        .and_then(Value::as_bool)
        == Some(true)
}

/// ACC-1: the same intent applied more than once.
fn acc1_duplicate_effects(ix: &Index, out: &mut Vec<Finding>) {
    let groups = intent_groups(ix, |e| {
        e.disposition == Disposition::Executed && e.applied && !is_repeatable(e)
    });
    for group in &groups {
        let first = group[0];
        out.push(Finding {
            rule: "ACC-1".into(),
            summary: format!(
                "the same action took effect {} times: {} {} on {}",
                group.len(),
                ix.route(first).unwrap_or("?"),
                ix.intent_text(first),
                ix.service(first)
            ),
            entries: group.iter().map(|e| e.seq).collect(),
            hint: "execute an action at most once: confirm the earlier attempt's outcome (lookup or same-key retry) before sending it again".into(),
        });
    }
}

/// REC-4: a retry with a new or no key after an attempt whose outcome was unknown, with no
/// lookup or replay in between — even when luck prevented a duplicate.
fn rec4_blind_retries(ix: &Index, out: &mut Vec<Finding>) {
    let later = intent_groups(ix, |e| {
        e.disposition == Disposition::Executed && e.actor == NONE
    });
    for group in &later {
        for (i, first) in group.iter().enumerate() {
            if !ix.uncertain(first) {
                continue;
            }
            let Some(retry) = group[i + 1..]
                .iter()
                .find(|r| !first.key.is_some() || ix.l.key(r) != ix.l.key(first))
            else {
                continue;
            };
            if ix.learned(first, retry.seq) {
                continue;
            }
            let how = if !retry.key.is_some() {
                "no idempotency key"
            } else {
                "a new idempotency key"
            };
            out.push(Finding {
                rule: "REC-4".into(),
                summary: format!(
                    "retried {} {} with {how} after the outcome of the first attempt was unknown ({}), without a lookup in between",
                    ix.route(first).unwrap_or("?"),
                    ix.intent_text(first),
                    why_uncertain(first)
                ),
                entries: vec![first.seq, retry.seq],
                hint: "classify the first attempt as unknown, query the authoritative state (lookup) or retry with the SAME key within its retention window; if it cannot be resolved, block the retry and report the uncertainty".into(),
            });
        }
    }
}

/// REC-4: an idempotency key reused for a different intent.
fn rec4_key_reuse(ix: &Index, out: &mut Vec<Finding>) {
    let mut first_use: Vec<Option<&Row>> = vec![None; ix.keys];
    let mut reported: HashSet<(u64, &str)> = HashSet::default();
    for (e, kid) in ix.rows().zip(&ix.key_ids) {
        if e.actor != NONE
            || e.disposition == Disposition::Lookup
            || e.disposition == Disposition::Cancel
        {
            continue;
        }
        let (Some(key), Some(intent)) = (ix.l.key(e), ix.l.intent(e)) else {
            continue;
        };
        let slot = &mut first_use[*kid as usize];
        match slot {
            None => {
                *slot = Some(e);
            }
            Some(first) if !ix.l.intent(first).is_some_and(|i| same_value(i, intent)) => {
                if reported.insert((first.seq, intent)) {
                    out.push(Finding {
                        rule: "REC-4".into(),
                        summary: format!(
                            "idempotency key \"{key}\" reused for a different intent: first {}, then {intent}",
                            ix.intent_text(first)
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
fn rec4_expired_keys(ix: &Index, out: &mut Vec<Finding>) {
    let mut last_exec: Vec<Option<u64>> = vec![None; ix.keys];
    for (e, kid) in ix.rows().zip(&ix.key_ids) {
        if e.disposition != Disposition::Executed {
            continue;
        }
        let Some(key) = ix.l.key(e) else {
            continue;
        };
        let last = &mut last_exec[*kid as usize];
        if e.executed_after_expiry {
            let mut seqs: Vec<u64> = last.iter().copied().collect();
            seqs.push(e.seq);
            out.push(Finding {
                rule: "REC-4".into(),
                summary: format!(
                    "retried with idempotency key \"{key}\" after its retention window had passed: the service no longer knew it and executed again"
                ),
                entries: seqs,
                hint: "reuse a key only within the service's retention window; past it, look the action up before deciding to retry".into(),
            });
        }
        *last = Some(e.seq);
    }
}

/// REC-2: an action the orchestrator sent under a revision older than the one in force.
fn rec2_stale_admissions(ix: &Index, out: &mut Vec<Finding>) {
    for (i, e) in ix.rows().enumerate() {
        if e.disposition != Disposition::Executed || e.actor != NONE {
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
                    ix.route(e).unwrap_or("?"),
                    ix.intent_text(e)
                ),
                entries: vec![since, e.seq],
                hint: "check the revision at the admission of every action and refuse actions of a superseded revision".into(),
            });
        }
    }
}

/// Executions indexed by what an action claim can name them by, so that resolving every claim
/// costs lookups, not a scan of the ledger each (1 000 claims over 1 000 000 entries used to take
/// a minute).
struct Claimable<'e> {
    l: &'e Ledger<'e>,
    by_key: HashMap<&'e str, Vec<usize>>,
    by_work: HashMap<&'e str, Vec<usize>>,
    /// Recorded intent (its JSON text) → executions; built only when a claim names an intent.
    by_intent: HashMap<&'e str, Vec<usize>>,
    /// The distinct pointer sets of recorded intents (`["/amount", "/to"]`), onto which a claim
    /// written as body fields is projected.
    pointer_sets: Vec<Vec<String>>,
}

impl<'e> Claimable<'e> {
    fn new(l: &'e Ledger<'e>, claims: &'e Claims) -> Claimable<'e> {
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
        let state = FastState::default();
        let key_hashes: HashSet<u64> = keys.iter().map(|k| text_hash(&state, k)).collect();
        for (i, e) in l.rows.iter().enumerate() {
            if e.disposition != Disposition::Executed {
                continue;
            }
            if key_hashes.contains(&e.key_hash) {
                if let Some(k) = l.key(e).filter(|k| keys.contains(k)) {
                    ix.by_key.entry(k).or_default().push(i);
                }
            }
            if works.is_empty() {
                // (no work id to look for)
            } else if let Some(w) = l.work_id(e).filter(|w| works.contains(w)) {
                ix.by_work.entry(w).or_default().push(i);
            }
            if let (true, Some(intent)) = (with_intent, l.intent(e)) {
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
    fn claimed(&self, c: &ActionClaim) -> Vec<&'e Row<'e>> {
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
            found.retain(|&i| intent_matches(claimed, self.l.intent(self.l.rows.get(i))));
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

/// ACC-3: claims contradicted by the ledger, unknown outcomes not reported, and effects applied
/// under a superseded revision that the claims do not mention.
fn acc3_claims(ix: &Index, claims: &Claims, out: &mut Vec<Finding>) {
    let mut covered: HashMap<u64, ActionOutcome> = HashMap::default();
    let mut contradicted: HashSet<u64> = HashSet::default();
    let claimable = Claimable::new(ix.l, claims);
    for c in &claims.actions {
        let hits = claimable.claimed(c);
        for h in &hits {
            covered.insert(h.seq, c.claim);
        }
        let applied = hits.iter().any(|e| e.applied);
        let name = c
            .key
            .as_ref()
            .map(|k| format!("key \"{k}\""))
            .or_else(|| c.work_id.as_ref().map(|w| format!("work id \"{w}\"")))
            .unwrap_or_else(|| {
                format!(
                    "intent {}",
                    c.intent.as_ref().map(|i| i.to_string()).unwrap_or_default()
                )
            });
        let contradiction = match c.claim {
            ActionOutcome::Succeeded if !applied => Some(if hits.is_empty() {
                format!("the action named by {name} was claimed succeeded but was never executed")
            } else {
                format!("the action named by {name} was claimed succeeded but never took effect")
            }),
            ActionOutcome::Failed if applied => Some(format!(
                "the action named by {name} was claimed failed but it took effect"
            )),
            _ => None,
        };
        if let Some(summary) = contradiction {
            contradicted.extend(hits.iter().map(|e| e.seq));
            out.push(Finding {
                rule: "ACC-3".into(),
                summary,
                entries: hits.iter().map(|e| e.seq).collect(),
                hint: "report what the authoritative state says; when it cannot be known, report the outcome as unknown".into(),
            });
        }
    }
    // The last execution per (service, key) that got an answer: a later same-key execution
    // that answered also told the client the outcome.
    let mut answered: Vec<Option<u64>> = vec![None; ix.keys];
    for (x, kid) in ix.rows().zip(&ix.key_ids) {
        if *kid != NO_KEY && x.disposition == Disposition::Executed && !ix.uncertain(x) {
            answered[*kid as usize] = Some(x.seq);
        }
    }
    for (e, kid) in ix.rows().zip(&ix.key_ids) {
        if e.actor != NONE || !ix.uncertain(e) || ix.learned(e, u64::MAX) {
            continue;
        }
        let answered_by_retry = (*kid != NO_KEY)
            .then(|| answered[*kid as usize])
            .flatten()
            .is_some_and(|last| last > e.seq);
        if answered_by_retry {
            continue;
        }
        match covered.get(&e.seq) {
            None => out.push(Finding {
                rule: "ACC-3".into(),
                summary: format!(
                    "the outcome of {} {} was never known ({}) and was never reported as unknown",
                    ix.route(e).unwrap_or("?"),
                    ix.intent_text(e),
                    why_uncertain(e)
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
                    ix.route(e).unwrap_or("?"),
                    ix.intent_text(e),
                    serde_json::to_value(claim).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default(),
                    why_uncertain(e)
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
            || !ix.actor(e).is_some_and(|a| a.starts_with("agent:"))
        {
            continue;
        }
        let (Some(rev), Some((in_force, since))) = (e.revision, ix.in_force[i]) else {
            continue;
        };
        let mentioned = covered.contains_key(&e.seq)
            || ix.l.work_id(e).is_some_and(|w| task_claimed.contains(w));
        if rev < in_force && !mentioned {
            out.push(Finding {
                rule: "ACC-3".into(),
                summary: format!(
                    "{} applied {} {} under superseded revision {rev} (revision {in_force} was in force) and the claims do not mention it",
                    ix.actor(e).unwrap_or("an agent"),
                    ix.route(e).unwrap_or("?"),
                    ix.intent_text(e)
                ),
                entries: vec![since, e.seq],
                hint: "report effects that happened under an old revision (e.g. by a subagent that ignored its cancel) so they can be reconciled or compensated".into(),
            });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Agents: late results, cancellation, terminal tasks, message ids

fn str_field<'v>(v: &'v Value, k: &str) -> Option<&'v str> {
    v.get(k).and_then(Value::as_str)
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

/// REC-4: a message resent with the same messageId to an agent that does not de-duplicate:
/// it started a second task. A message id alone does not de-duplicate.
fn rec4_resent_messages(ix: &Index, out: &mut Vec<Finding>) {
    let mut first: HashMap<(Sym, &str), u64> = HashMap::default();
    for e in ix.rows() {
        let Some(d) = ix.agent_event(e, "message") else {
            continue;
        };
        let Some(id) = str_field(d, "message_id") else {
            continue;
        };
        if d.get("repeat_of").is_some_and(|r| !r.is_null()) {
            let mut seqs: Vec<u64> = first.get(&(e.service, id)).copied().into_iter().collect();
            seqs.push(e.seq);
            out.push(Finding {
                rule: "REC-4".into(),
                summary: format!(
                    "message {id} was sent to agent {} again; the agent does not de-duplicate message ids, so it started the work a second time",
                    ix.service(e)
                ),
                entries: seqs,
                hint: "a message id alone does not de-duplicate in A2A: after a timeout, find the existing task (GetTask/ListTasks) instead of resending".into(),
            });
        }
        first.entry((e.service, id)).or_insert(e.seq);
    }
}

/// REC-6: a message sent to a task that had already reached a terminal state.
fn rec6_messages_to_terminal_tasks(ix: &Index, out: &mut Vec<Finding>) {
    for e in ix.rows() {
        let Some(d) = ix.agent_event(e, "rpc-error") else {
            continue;
        };
        if d.get("code").and_then(Value::as_i64) != Some(-32004) {
            continue;
        }
        let message = str_field(d, "message").unwrap_or("");
        let Some(task) = message
            .strip_prefix("Task ")
            .and_then(|m| m.split(" is in terminal state").next())
        else {
            continue;
        };
        if !message.contains("terminal state") {
            continue;
        }
        out.push(Finding {
            rule: "REC-6".into(),
            summary: format!("a message was sent to task {task} of agent {}, which had already finished ({message})", ix.service(e)),
            entries: vec![e.seq],
            hint: "a task in a terminal state cannot be restarted: send follow-up work as a new task (referencing the old one)".into(),
        });
    }
}

/// ACC-2: a canary of a result produced under a revision that has since been superseded, found
/// in a later request.
fn acc2_stale_results(ix: &Index, out: &mut Vec<Finding>) {
    let mut issued: HashMap<&str, (u64, Option<&str>, Option<i64>)> = HashMap::default();
    for (i, e) in ix.rows().enumerate() {
        if let Some(d) = ix.agent_event(e, "canary") {
            if let Some(c) = str_field(d, "canary") {
                let rev = d.get("revision").and_then(Value::as_i64).or(e.revision);
                issued
                    .entry(c)
                    .or_insert((e.seq, str_field(d, "task_id"), rev));
            }
            continue;
        }
        let carried: Vec<&str> = if e.disposition == Disposition::Agent {
            // What the orchestrator told an agent counts as a request too.
            ix.agent_event(e, "message")
                .and_then(|d| str_field(d, "text"))
                .map(canaries_in)
                .unwrap_or_default()
        } else if e.actor == NONE {
            e.detail
                .as_deref()
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

/// The revision each task was started under (from its `task-created` entry).
fn task_revisions<'e>(ix: &Index<'e>) -> HashMap<&'e str, (u64, i64)> {
    let mut m = HashMap::default();
    for e in ix.rows() {
        if ix.agent_event(e, "task-created").is_some() {
            if let (Some(t), Some(r)) = (
                ix.task_of(e),
                e.revision.or_else(|| {
                    e.detail
                        .as_deref()
                        .and_then(|d| d.get("revision"))
                        .and_then(Value::as_i64)
                }),
            ) {
                m.entry(t).or_insert((e.seq, r));
            }
        }
    }
    m
}

/// ACC-2: a task claimed as adopted whose result was produced under a superseded revision.
fn acc2_adopted(ix: &Index, claims: &Claims, out: &mut Vec<Finding>) {
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

/// REC-3: a task claimed `cancelled` whose cancel was refused or only acknowledged, or that
/// completed anyway; and (ACC-3) a task claimed `completed` that never completed.
fn rec3_cancel_claims(ix: &Index, claims: &Claims, out: &mut Vec<Finding>) {
    for t in &claims.tasks {
        let id = t.task_id.as_str();
        let about: Vec<&Row> = ix
            .rows()
            .filter(|e| e.disposition == Disposition::Agent && ix.task_of(e) == Some(id))
            .collect();
        let cancels: Vec<&Row> = about
            .iter()
            .copied()
            .filter(|e| ix.agent_event(e, "cancel").is_some())
            .collect();
        // A task's end: its result, or its failure by a doubleagent restart.
        let last_state = about
            .iter()
            .rev()
            .find_map(|e| {
                ix.agent_event(e, "result")
                    .or_else(|| ix.agent_event(e, "task-interrupted"))
                    .and_then(|d| str_field(d, "state"))
            })
            .or_else(|| {
                about.iter().rev().find_map(|e| {
                    ix.agent_event(e, "status")
                        .and_then(|d| str_field(d, "state"))
                })
            });
        match t.claim {
            TaskOutcome::Cancelled => {
                let honored = cancels.iter().any(|e| {
                    e.detail.as_deref().and_then(|d| str_field(d, "outcome")) == Some("honored")
                });
                let ended_cancelled = last_state == Some("TASK_STATE_CANCELED");
                if honored && ended_cancelled {
                    continue;
                }
                let why = match (cancels.last(), last_state) {
                    (None, _) => "no cancel was ever requested".to_string(),
                    (Some(c), s) => {
                        let outcome = c
                            .detail
                            .as_deref()
                            .and_then(|d| str_field(d, "outcome"))
                            .unwrap_or("?");
                        format!(
                            "the cancel was {outcome} and the task ended {}",
                            s.unwrap_or("in no final state")
                        )
                    }
                };
                let mut seqs: Vec<u64> = cancels.iter().map(|e| e.seq).collect();
                if let Some(r) = about
                    .iter()
                    .rev()
                    .find(|e| ix.agent_event(e, "result").is_some())
                {
                    seqs.push(r.seq);
                }
                out.push(Finding {
                    rule: "REC-3".into(),
                    summary: format!("task {id} was claimed cancelled, but {why}"),
                    entries: seqs,
                    hint: "record \"stop requested\" until the task is observed in a cancelled state; a cancel can be refused, and an acknowledged one may still complete".into(),
                });
            }
            TaskOutcome::Completed
                if last_state.is_some_and(|s| s != "TASK_STATE_COMPLETED")
                    || last_state.is_none() =>
            {
                out.push(Finding {
                    rule: "ACC-3".into(),
                    summary: format!("task {id} was claimed completed, but it ended {}", last_state.unwrap_or("in no final state")),
                    entries: about.iter().map(|e| e.seq).take(8).collect(),
                    hint: "report the task state the agent actually reported (GetTask); unknown if it cannot be observed".into(),
                });
            }
            _ => {}
        }
    }
}
