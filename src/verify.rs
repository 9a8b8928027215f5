//! Verification: checkers that read a ledger (and the orchestrator's own claims) and name every
//! broken rule of `shared/spec/rules.md`.
//!
//! Everything here works on serialized [`Entry`]s, so the same code verifies a live world
//! (`GET /_admin/verify`), a ledger fetched over HTTP (`doubleagent verify --url`) and an exported
//! JSONL file (`doubleagent verify --ledger`). Declarations made through the admin API (revisions
//! taking over, claims) are ledger entries too, so an export carries them.
//!
//! Each checker is a function from the indexed ledger to [`Finding`]s; each finding names its
//! rule, says what happened in one line, lists the ledger seqs involved and what the orchestrator
//! should have done. The checkers are linear or `n log n` in the ledger: a million entries verify
//! in seconds.

use std::fmt::Write as _;
use std::hash::{BuildHasher, Hash, Hasher};

use crate::hash::{FastMap as HashMap, FastSet as HashSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ledger::{Delivery, Disposition, Entry};

// ---------------------------------------------------------------------------------------------
// Claims

/// The orchestrator's own account of what happened (`POST /_admin/claims`, `--claims FILE`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claims {
    #[serde(default)]
    pub actions: Vec<ActionClaim>,
    #[serde(default)]
    pub tasks: Vec<TaskClaim>,
    /// Ids of tasks whose results the orchestrator adopted.
    #[serde(default)]
    pub adopted: Vec<String>,
}

/// A claim about an action, naming it by exactly one of `key`, `intent` or `work_id`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionClaim {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_id: Option<String>,
    pub claim: ActionOutcome,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ActionOutcome {
    Succeeded,
    Failed,
    Unknown,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskClaim {
    pub task_id: String,
    pub claim: TaskOutcome,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskOutcome {
    Completed,
    Cancelled,
    StopRequested,
    Unknown,
}

/// Why a claims document was rejected.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0}")]
pub struct ClaimsError(pub String);

impl Claims {
    /// Parse and validate a claims document, with the JSON path of the first problem.
    pub fn parse(json: &[u8]) -> Result<Claims, ClaimsError> {
        let mut de = serde_json::Deserializer::from_slice(json);
        let claims: Claims = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            let msg = inner.to_string();
            // serde_json appends " at line L column C"; keep it, it helps in files.
            if path == "." || path.is_empty() {
                ClaimsError(format!("invalid claims: {msg}"))
            } else {
                ClaimsError(format!("invalid claims: {path}: {msg}"))
            }
        })?;
        for (i, a) in claims.actions.iter().enumerate() {
            let named = [a.key.is_some(), a.intent.is_some(), a.work_id.is_some()];
            if named.iter().filter(|b| **b).count() != 1 {
                return Err(ClaimsError(format!(
                    "invalid claims: actions[{i}]: name the action by exactly one of `key`, `intent` or `work_id`"
                )));
            }
        }
        Ok(claims)
    }

    fn merge(&mut self, other: Claims) {
        self.actions.extend(other.actions);
        self.tasks.extend(other.tasks);
        self.adopted.extend(other.adopted);
    }
}

// ---------------------------------------------------------------------------------------------
// Reading an exported ledger

/// Parse a JSONL ledger (one [`Entry`] a line, blank lines skipped); `origin` names it in the
/// error, which gives the first bad line's number. A million entries are a few hundred MB of
/// JSON, so the text is cut at line boundaries into one piece per core and parsed in parallel.
pub fn parse_jsonl(text: &str, origin: &str) -> Result<Vec<Entry>, String> {
    parse_lines(text, origin, |l| serde_json::from_str::<Entry>(l))
}

/// Like [`parse_jsonl`], for verification only: the fields no checker reads (`body`,
/// `fingerprint`, `body_truncated`, `applied_at`, `cancelled_at`, `response.at`) are checked for
/// their type but not kept, which spares most of the allocations of a full parse. The same lines
/// are accepted and rejected as by [`parse_jsonl`].
pub fn parse_jsonl_for_verify(text: &str, origin: &str) -> Result<Vec<Entry>, String> {
    parse_lines(text, origin, |l| {
        serde_json::from_str::<LeanEntry>(l).map(LeanEntry::into_entry)
    })
}

fn parse_lines(
    text: &str,
    origin: &str,
    one: impl Fn(&str) -> serde_json::Result<Entry> + Sync,
) -> Result<Vec<Entry>, String> {
    let threads = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(16);
    let pieces = if text.len() < (1 << 20) { 1 } else { threads };
    let mut bounds = vec![0usize];
    for k in 1..pieces {
        let at = (text.len() * k / pieces).max(*bounds.last().unwrap_or(&0));
        let cut = text[at..].find('\n').map_or(text.len(), |i| at + i + 1);
        bounds.push(cut);
    }
    bounds.push(text.len());
    let parse = |piece: &str| -> Result<Vec<Entry>, (usize, String)> {
        piece
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
            .map(|(i, l)| one(l).map_err(|e| (i, e.to_string())))
            .collect()
    };
    let results: Vec<Result<Vec<Entry>, (usize, String)>> = if pieces == 1 {
        vec![parse(text)]
    } else {
        std::thread::scope(|scope| {
            let handles: Vec<_> = bounds
                .windows(2)
                .map(|w| {
                    let piece = &text[w[0]..w[1]];
                    let parse = &parse;
                    scope.spawn(move || parse(piece))
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err((0, "parser panicked".into())))
                })
                .collect()
        })
    };
    let total = results.iter().map(|r| r.as_ref().map_or(0, Vec::len)).sum();
    let mut entries = Vec::with_capacity(total);
    for (k, r) in results.into_iter().enumerate() {
        match r {
            Ok(v) => entries.extend(v),
            Err((i, e)) => {
                let before = text[..bounds[k]].bytes().filter(|b| *b == b'\n').count();
                return Err(format!(
                    "{origin}:{}: not a ledger entry: {e}",
                    before + i + 1
                ));
            }
        }
    }
    Ok(entries)
}

/// A string whose value is not kept (its type is still checked).
#[derive(Default)]
struct SkippedString;

impl<'de> Deserialize<'de> for SkippedString {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = SkippedString;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<SkippedString, E> {
                Ok(SkippedString)
            }
        }
        d.deserialize_str(V)
    }
}

/// [`Entry`] as verification reads it: the same fields, types and defaults, minus the values
/// no checker looks at.
#[derive(Deserialize, Default)]
#[serde(default)]
struct LeanEntry {
    seq: u64,
    service: String,
    route: Option<String>,
    method: String,
    path: String,
    received_at: String,
    idempotency_key: Option<String>,
    fingerprint: Option<SkippedString>,
    intent: Option<Value>,
    work_id: Option<String>,
    revision: Option<Value>,
    body: serde::de::IgnoredAny,
    body_truncated: bool,
    disposition: Disposition,
    replay_of: Option<u64>,
    executed_after_expiry: bool,
    fate: Option<String>,
    action_id: Option<String>,
    applied: bool,
    applied_at: Option<SkippedString>,
    cancelled_at: Option<SkippedString>,
    response: LeanResponse,
    actor: Option<String>,
    event: Option<String>,
    detail: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct LeanResponse {
    delivery: Delivery,
    status: Option<u16>,
    at: Option<SkippedString>,
}

impl LeanEntry {
    fn into_entry(self) -> Entry {
        let LeanEntry {
            seq,
            service,
            route,
            method,
            path,
            received_at,
            idempotency_key,
            fingerprint: _,
            intent,
            work_id,
            revision,
            body: _,
            body_truncated: _,
            disposition,
            replay_of,
            executed_after_expiry,
            fate,
            action_id,
            applied,
            applied_at: _,
            cancelled_at: _,
            response:
                LeanResponse {
                    delivery,
                    status,
                    at: _,
                },
            actor,
            event,
            detail,
        } = self;
        // Listed in full so that a field added to Entry is a compile error here.
        Entry {
            seq,
            service,
            route,
            method,
            path,
            received_at,
            idempotency_key,
            fingerprint: None,
            intent,
            work_id,
            revision,
            body: Value::Null,
            body_truncated: false,
            disposition,
            replay_of,
            executed_after_expiry,
            fate,
            action_id,
            applied,
            applied_at: None,
            cancelled_at: None,
            response: crate::ledger::EntryResponse {
                delivery,
                status,
                at: None,
            },
            actor,
            event,
            detail,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Findings and the report

/// One broken rule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub rule: String,
    pub summary: String,
    /// Ledger seqs involved, in order.
    pub entries: Vec<u64>,
    /// What the orchestrator should have done.
    pub hint: String,
}

/// The verdict over a ledger.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub clean: bool,
    pub findings: Vec<Finding>,
    /// Number of ledger entries read.
    pub entries: usize,
    /// Whether any claims were submitted (the claim-based ACC-3 checks need them).
    pub claims: bool,
    /// Caveats about the verdict (skipped checks, an incomplete ledger).
    pub notes: Vec<String>,
}

impl Report {
    /// Readable without the docs: rule, what happened in order, what was expected.
    pub fn human(&self, entries: &[Entry]) -> String {
        let by_seq: HashMap<u64, &Entry> = entries.iter().map(|e| (e.seq, e)).collect();
        let mut out = String::new();
        if self.clean {
            let _ = writeln!(
                out,
                "doubleagent verify: no findings over {} ledger entries",
                self.entries
            );
        } else {
            let _ = writeln!(
                out,
                "doubleagent verify: {} finding(s) over {} ledger entries",
                self.findings.len(),
                self.entries
            );
        }
        for f in &self.findings {
            let _ = writeln!(out, "\n{}  {}", f.rule, f.summary);
            for seq in &f.entries {
                match by_seq.get(seq) {
                    Some(e) => {
                        let _ = writeln!(out, "    {}", describe(e));
                    }
                    None => {
                        let _ = writeln!(out, "    #{seq}");
                    }
                }
            }
            let _ = writeln!(out, "    expected: {}", f.hint);
        }
        for n in &self.notes {
            let _ = writeln!(out, "\nnote: {n}");
        }
        out
    }
}

/// `#3 12:00:01.250 POST /payments/v1/transfers key=k-2 rev=1 → executed, applied, 201`
pub fn describe(e: &Entry) -> String {
    let time = e.received_at.get(11..23).unwrap_or(&e.received_at);
    let mut s = format!("#{} {time} ", e.seq);
    if e.disposition == Disposition::Agent || e.disposition == Disposition::Declaration {
        let _ = write!(s, "{} {}", e.service, e.event.as_deref().unwrap_or("event"));
        if let Some(d) = &e.detail {
            let _ = write!(s, " {d}");
        }
        return s;
    }
    let _ = write!(s, "{} /{}{}", e.method, e.service, e.path);
    if let Some(a) = &e.actor {
        let _ = write!(s, " by {a}");
    }
    if let Some(k) = &e.idempotency_key {
        let _ = write!(s, " key={k}");
    }
    if let Some(r) = &e.revision {
        let _ = write!(s, " rev={r}");
    }
    let disp = e.disposition.as_str();
    let _ = write!(s, " → {disp}");
    if e.disposition == Disposition::Executed {
        if let Some(f) = &e.fate {
            let _ = write!(s, " ({f})");
        }
        s.push_str(if e.applied {
            ", applied"
        } else {
            ", not applied"
        });
    }
    match (e.response.delivery, e.response.status) {
        (Delivery::Sent, Some(st)) => {
            let _ = write!(s, ", {st}");
        }
        (d, _) => {
            let _ = write!(s, ", response {}", d.as_str());
        }
    }
    s
}

// ---------------------------------------------------------------------------------------------
// Verification

/// Verify a ledger, with optional extra claims (from a file) on top of any declared in it.
pub fn verify(entries: &[Entry], extra: Option<&Claims>) -> Report {
    let ix = Index::new(entries, extra);
    let mut findings = Vec::new();
    acc1_duplicate_effects(&ix, &mut findings);
    rec4_blind_retries(&ix, &mut findings);
    rec4_key_reuse(&ix, &mut findings);
    rec4_expired_keys(&ix, &mut findings);
    rec2_stale_admissions(&ix, &mut findings);
    rec4_resent_messages(&ix, &mut findings);
    rec6_messages_to_terminal_tasks(&ix, &mut findings);
    acc2_stale_results(&ix, &mut findings);
    let mut notes = Vec::new();
    if let Some(claims) = &ix.claims {
        acc3_claims(&ix, claims, &mut findings);
        rec3_cancel_claims(&ix, claims, &mut findings);
        acc2_adopted(&ix, claims, &mut findings);
    } else {
        notes.push(
            "no claims were submitted (POST /_admin/claims or --claims FILE): the ACC-3 checks of \
             what the orchestrator reported were skipped"
                .to_string(),
        );
    }
    if let Some(first) = entries.first().filter(|e| e.seq > 1) {
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
        entries: entries.len(),
        claims: ix.claims.is_some(),
        notes,
    }
}

/// The ledger, indexed once for all checkers.
struct Index<'a> {
    entries: &'a [Entry],
    /// All claims: declared in the ledger plus the extra ones; `None` if none were submitted.
    claims: Option<Claims>,
    /// Revision in force just before each entry (by position), and the seq that put it in force.
    in_force: Vec<Option<(i64, u64)>>,
    /// Lookups per service: (target seq or id) → seqs of lookups.
    lookups_by_target: HashMap<u64, Vec<u64>>,
    lookups_by_id: HashMap<(&'a str, &'a str), Vec<u64>>,
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

const NO_INTENT: u32 = u32::MAX;
const NO_KEY: u32 = u32::MAX;

/// Number the distinct (service, route, intent) of executions. Intents are hashed and compared
/// as JSON trees, without formatting them; two intents are the same exactly when their JSON
/// texts are (see [`same_json`]).
fn intent_ids(entries: &[Entry]) -> (Vec<u32>, usize) {
    let state = crate::hash::FastState::default();
    // hash → (id, position of its first execution); `more` holds the rare hash collisions.
    let mut first: HashMap<u64, (u32, usize)> = HashMap::default();
    let mut more: HashMap<u64, Vec<(u32, usize)>> = HashMap::default();
    let mut next = 0u32;
    let ids = entries
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let (Disposition::Executed, Some(intent)) = (e.disposition, e.intent.as_ref()) else {
                return NO_INTENT;
            };
            let route = e.route.as_deref().unwrap_or("");
            let mut h = state.build_hasher();
            e.service.hash(&mut h);
            route.hash(&mut h);
            hash_json(&mut h, intent);
            let h = h.finish();
            let same = |at: usize| {
                let f = &entries[at];
                f.service == e.service
                    && f.route.as_deref().unwrap_or("") == route
                    && f.intent.as_ref().is_some_and(|x| same_json(x, intent))
            };
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

/// Number the distinct (service, idempotency key) of all entries that carry a key.
fn key_ids(entries: &[Entry]) -> (Vec<u32>, usize) {
    let mut ids: HashMap<(&str, &str), u32> = HashMap::default();
    let v = entries
        .iter()
        .map(|e| match e.idempotency_key.as_deref() {
            None => NO_KEY,
            Some(k) => {
                let next = ids.len() as u32;
                *ids.entry((e.service.as_str(), k)).or_insert(next)
            }
        })
        .collect();
    (v, ids.len())
}

fn hash_json(h: &mut impl Hasher, v: &Value) {
    match v {
        Value::Null => h.write_u8(0),
        Value::Bool(b) => h.write_u8(1 + *b as u8),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                h.write_u8(3);
                h.write_u64(u);
            } else if let Some(i) = n.as_i64() {
                h.write_u8(4);
                h.write_u64(i as u64);
            } else {
                h.write_u8(5);
                h.write_u64(n.as_f64().map(f64::to_bits).unwrap_or(0));
            }
        }
        Value::String(s) => {
            h.write_u8(6);
            s.hash(h);
        }
        Value::Array(a) => {
            h.write_u8(7);
            h.write_usize(a.len());
            for x in a {
                hash_json(h, x);
            }
        }
        Value::Object(m) => {
            h.write_u8(8);
            h.write_usize(m.len());
            for (k, x) in m {
                k.hash(h);
                hash_json(h, x);
            }
        }
    }
}

/// JSON equality as text: like `==`, except that numbers must also be written the same way
/// (`1` is not `1.0`, `0.0` is not `-0.0`), as when intents were compared as strings.
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            x.as_u64() == y.as_u64()
                && x.as_i64() == y.as_i64()
                && x.is_f64() == y.is_f64()
                && x.as_f64().map(f64::to_bits) == y.as_f64().map(f64::to_bits)
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_json(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|((kp, p), (kq, q))| kp == kq && same_json(p, q))
        }
        _ => a == b,
    }
}

/// Executions (as positions) grouped by intent id, in ledger order, keeping only the groups of
/// two or more that pass `keep`.
fn intent_groups<'e>(ix: &Index<'e>, keep: impl Fn(&Entry) -> bool) -> Vec<Vec<&'e Entry>> {
    let mut counts = vec![0u32; ix.intents];
    for (e, id) in ix.entries.iter().zip(&ix.intent_ids) {
        if *id != NO_INTENT && keep(e) {
            counts[*id as usize] += 1;
        }
    }
    let mut slot = vec![u32::MAX; ix.intents];
    let mut groups: Vec<Vec<&Entry>> = Vec::new();
    for (e, id) in ix.entries.iter().zip(&ix.intent_ids) {
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

fn revision_of(e: &Entry) -> Option<i64> {
    e.revision.as_ref().and_then(Value::as_i64)
}

impl<'a> Index<'a> {
    fn new(entries: &'a [Entry], extra: Option<&Claims>) -> Index<'a> {
        let mut claims: Option<Claims> = extra.cloned();
        let mut in_force = Vec::with_capacity(entries.len());
        let mut global: Option<(i64, u64)> = None;
        let mut scoped: HashMap<&str, (i64, u64)> = HashMap::default();
        let mut lookups_by_target: HashMap<u64, Vec<u64>> = HashMap::default();
        let mut lookups_by_id: HashMap<(&str, &str), Vec<u64>> = HashMap::default();
        let mut replays_of: HashMap<u64, Vec<u64>> = HashMap::default();
        let raise = |slot: &mut Option<(i64, u64)>, rev: i64, seq: u64| {
            if slot.is_none_or(|(r, _)| rev > r) {
                *slot = Some((rev, seq));
            }
        };
        for e in entries {
            let here = match e.work_id.as_deref().and_then(|w| scoped.get(w)) {
                Some(&(r, s)) if global.is_none_or(|(g, _)| r > g) => Some((r, s)),
                _ => global,
            };
            in_force.push(here);
            match (e.disposition, e.event.as_deref()) {
                (Disposition::Declaration, Some("revision")) => {
                    if let Some(rev) = revision_of(e) {
                        match e.work_id.as_deref() {
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
                        .as_ref()
                        .and_then(|d| serde_json::from_value::<Claims>(d.clone()).ok())
                    {
                        claims.get_or_insert_with(Claims::default).merge(c);
                    }
                }
                // Without declarations, the first request carrying a newer revision is the switch.
                (Disposition::Declaration, _) | (Disposition::Agent, _) => {}
                _ => {
                    if let Some(rev) = revision_of(e) {
                        if e.actor.is_none() {
                            raise(&mut global, rev, e.seq);
                        }
                    }
                }
            }
            if e.disposition == Disposition::Lookup {
                if let Some(d) = &e.detail {
                    if let Some(t) = d.get("target").and_then(Value::as_u64) {
                        lookups_by_target.entry(t).or_default().push(e.seq);
                    }
                    if let Some(id) = d.get("id").and_then(Value::as_str) {
                        lookups_by_id
                            .entry((e.service.as_str(), id))
                            .or_default()
                            .push(e.seq);
                    }
                }
            }
            if let Some(of) = e.replay_of {
                replays_of.entry(of).or_default().push(e.seq);
            }
        }
        let (intent_ids, intents) = intent_ids(entries);
        let (key_ids, keys) = key_ids(entries);
        Index {
            entries,
            claims,
            in_force,
            lookups_by_target,
            lookups_by_id,
            replays_of,
            intent_ids,
            intents,
            key_ids,
            keys,
            final_force: global,
        }
    }

    /// Did the client learn the outcome of `e` (a replay of it, or a lookup of it) in the
    /// open interval (e.seq, before)?
    fn learned(&self, e: &Entry, before: u64) -> bool {
        let within = |seqs: Option<&Vec<u64>>| {
            seqs.is_some_and(|v| v.iter().any(|s| *s > e.seq && *s < before))
        };
        if within(self.replays_of.get(&e.seq)) || within(self.lookups_by_target.get(&e.seq)) {
            return true;
        }
        let ids = [e.idempotency_key.as_deref(), e.action_id.as_deref()];
        ids.iter()
            .flatten()
            .any(|id| within(self.lookups_by_id.get(&(e.service.as_str(), *id))))
    }
}

/// An execution whose outcome the client could not know from what it received.
fn uncertain(e: &Entry) -> bool {
    e.disposition == Disposition::Executed
        && (matches!(
            e.response.delivery,
            Delivery::Dropped | Delivery::Reset | Delivery::Hung | Delivery::Pending
        ) || e
            .fate
            .as_deref()
            .is_some_and(|f| f.starts_with("error-after-apply")))
}

fn why_uncertain(e: &Entry) -> &'static str {
    match e.response.delivery {
        Delivery::Dropped => "its response was dropped",
        Delivery::Reset => "its connection was reset",
        Delivery::Hung => "its response never came",
        Delivery::Pending => "its response was still pending",
        Delivery::Sent => "it answered with an error although the effect happened",
    }
}

fn is_repeatable(e: &Entry) -> bool {
    e.detail
        .as_ref()
        .and_then(|d| d.get("repeatable"))
        .and_then(Value::as_bool)
        == Some(true)
}

fn intent_text(e: &Entry) -> String {
    e.intent
        .as_ref()
        .map(|i| i.to_string())
        .unwrap_or_else(|| "(no intent)".into())
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
                first.route.as_deref().unwrap_or("?"),
                intent_text(first),
                first.service
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
        e.disposition == Disposition::Executed && e.actor.is_none()
    });
    for group in &later {
        for (i, first) in group.iter().enumerate() {
            if !uncertain(first) {
                continue;
            }
            let Some(retry) = group[i + 1..].iter().find(|r| {
                first.idempotency_key.is_none() || r.idempotency_key != first.idempotency_key
            }) else {
                continue;
            };
            if ix.learned(first, retry.seq) {
                continue;
            }
            let how = if retry.idempotency_key.is_none() {
                "no idempotency key"
            } else {
                "a new idempotency key"
            };
            out.push(Finding {
                rule: "REC-4".into(),
                summary: format!(
                    "retried {} {} with {how} after the outcome of the first attempt was unknown ({}), without a lookup in between",
                    first.route.as_deref().unwrap_or("?"),
                    intent_text(first),
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
    let mut first_use: Vec<Option<&Entry>> = vec![None; ix.keys];
    let mut reported: HashSet<(u64, String)> = HashSet::default();
    for (e, kid) in ix.entries.iter().zip(&ix.key_ids) {
        if e.actor.is_some()
            || e.disposition == Disposition::Lookup
            || e.disposition == Disposition::Cancel
        {
            continue;
        }
        let (Some(key), Some(intent)) = (e.idempotency_key.as_deref(), e.intent.as_ref()) else {
            continue;
        };
        let slot = &mut first_use[*kid as usize];
        match slot {
            None => {
                *slot = Some(e);
            }
            Some(first) if first.intent.as_ref() != Some(intent) => {
                if reported.insert((first.seq, intent.to_string())) {
                    out.push(Finding {
                        rule: "REC-4".into(),
                        summary: format!(
                            "idempotency key \"{key}\" reused for a different intent: first {}, then {intent}",
                            intent_text(first)
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
    for (e, kid) in ix.entries.iter().zip(&ix.key_ids) {
        if e.disposition != Disposition::Executed {
            continue;
        }
        let Some(key) = e.idempotency_key.as_deref() else {
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
    for (i, e) in ix.entries.iter().enumerate() {
        if e.disposition != Disposition::Executed || e.actor.is_some() {
            continue;
        }
        let (Some(rev), Some((in_force, since))) = (revision_of(e), ix.in_force[i]) else {
            continue;
        };
        if rev < in_force {
            out.push(Finding {
                rule: "REC-2".into(),
                summary: format!(
                    "{} {} was admitted under revision {rev} after revision {in_force} had taken over",
                    e.route.as_deref().unwrap_or("?"),
                    intent_text(e)
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
    entries: &'e [Entry],
    by_key: HashMap<&'e str, Vec<usize>>,
    by_work: HashMap<&'e str, Vec<usize>>,
    /// Recorded intent (its JSON text) → executions; built only when a claim names an intent.
    by_intent: HashMap<String, Vec<usize>>,
    /// The distinct pointer sets of recorded intents (`["/amount", "/to"]`), onto which a claim
    /// written as body fields is projected.
    pointer_sets: Vec<Vec<&'e str>>,
}

impl<'e> Claimable<'e> {
    fn new(entries: &'e [Entry], claims: &'e Claims) -> Claimable<'e> {
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
            entries,
            by_key: HashMap::default(),
            by_work: HashMap::default(),
            by_intent: HashMap::default(),
            pointer_sets: Vec::new(),
        };
        let mut sets: HashSet<Vec<&str>> = HashSet::default();
        for (i, e) in entries.iter().enumerate() {
            if e.disposition != Disposition::Executed {
                continue;
            }
            if let Some(k) = e.idempotency_key.as_deref().filter(|k| keys.contains(k)) {
                ix.by_key.entry(k).or_default().push(i);
            }
            if let Some(w) = e.work_id.as_deref().filter(|w| works.contains(w)) {
                ix.by_work.entry(w).or_default().push(i);
            }
            if let (true, Some(intent)) = (with_intent, &e.intent) {
                ix.by_intent.entry(intent.to_string()).or_default().push(i);
                if let Some(m) = intent.as_object() {
                    if !m.is_empty() && m.keys().all(|k| k.starts_with('/')) {
                        sets.insert(m.keys().map(String::as_str).collect());
                    }
                }
            }
        }
        ix.pointer_sets = sets.into_iter().collect();
        ix
    }

    /// Executions an action claim refers to, in ledger order.
    fn claimed(&self, c: &ActionClaim) -> Vec<&'e Entry> {
        let mut hits: Vec<usize> = if let Some(k) = &c.key {
            self.by_key.get(k.as_str()).cloned().unwrap_or_default()
        } else if let Some(w) = &c.work_id {
            self.by_work.get(w.as_str()).cloned().unwrap_or_default()
        } else if let Some(claimed) = &c.intent {
            // Candidates: the claim as recorded, and the claim projected onto each pointer set;
            // `intent_matches` has the last word.
            let mut found: Vec<usize> = Vec::new();
            let mut add = |text: String| {
                if let Some(v) = self.by_intent.get(&text) {
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
            found.retain(|&i| intent_matches(claimed, &self.entries[i]));
            found
        } else {
            Vec::new()
        };
        hits.sort_unstable();
        hits.into_iter().map(|i| &self.entries[i]).collect()
    }
}

/// A claimed intent matches an entry's intent as recorded (`{"/to": ..}`) or as body fields
/// (`{"to": ..}`), whichever the orchestrator wrote.
fn intent_matches(claimed: &Value, e: &Entry) -> bool {
    let Some(recorded) = &e.intent else {
        return false;
    };
    if claimed == recorded {
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
    let claimable = Claimable::new(ix.entries, claims);
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
    for (x, kid) in ix.entries.iter().zip(&ix.key_ids) {
        if *kid != NO_KEY && x.disposition == Disposition::Executed && !uncertain(x) {
            answered[*kid as usize] = Some(x.seq);
        }
    }
    for (e, kid) in ix.entries.iter().zip(&ix.key_ids) {
        if e.actor.is_some() || !uncertain(e) || ix.learned(e, u64::MAX) {
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
                    e.route.as_deref().unwrap_or("?"),
                    intent_text(e),
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
                    e.route.as_deref().unwrap_or("?"),
                    intent_text(e),
                    serde_json::to_value(claim).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default(),
                    why_uncertain(e)
                ),
                entries: vec![e.seq],
                hint: "an outcome the client could not observe is unknown until a lookup or a replay confirms it".into(),
            }),
        }
    }
    let task_claimed: HashSet<&str> = claims.tasks.iter().map(|t| t.task_id.as_str()).collect();
    for (i, e) in ix.entries.iter().enumerate() {
        if e.disposition != Disposition::Executed
            || !e.applied
            || !e.actor.as_deref().is_some_and(|a| a.starts_with("agent:"))
        {
            continue;
        }
        let (Some(rev), Some((in_force, since))) = (revision_of(e), ix.in_force[i]) else {
            continue;
        };
        let mentioned = covered.contains_key(&e.seq)
            || e.work_id
                .as_deref()
                .is_some_and(|w| task_claimed.contains(w));
        if rev < in_force && !mentioned {
            out.push(Finding {
                rule: "ACC-3".into(),
                summary: format!(
                    "{} applied {} {} under superseded revision {rev} (revision {in_force} was in force) and the claims do not mention it",
                    e.actor.as_deref().unwrap_or("an agent"),
                    e.route.as_deref().unwrap_or("?"),
                    intent_text(e)
                ),
                entries: vec![since, e.seq],
                hint: "report effects that happened under an old revision (e.g. by a subagent that ignored its cancel) so they can be reconciled or compensated".into(),
            });
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Agents: late results, cancellation, terminal tasks, message ids

fn agent_event<'e>(e: &'e Entry, event: &str) -> Option<&'e Value> {
    (e.disposition == Disposition::Agent && e.event.as_deref() == Some(event))
        .then_some(e.detail.as_ref())
        .flatten()
}

fn str_field<'v>(v: &'v Value, k: &str) -> Option<&'v str> {
    v.get(k).and_then(Value::as_str)
}

/// The task an agent entry is about: `detail.task_id`, else the entry's work id.
fn task_of(e: &Entry) -> Option<&str> {
    e.detail
        .as_ref()
        .and_then(|d| str_field(d, "task_id"))
        .or(e.work_id.as_deref())
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
    let mut first: HashMap<(&str, &str), u64> = HashMap::default();
    for e in ix.entries {
        let Some(d) = agent_event(e, "message") else {
            continue;
        };
        let Some(id) = str_field(d, "message_id") else {
            continue;
        };
        if d.get("repeat_of").is_some_and(|r| !r.is_null()) {
            let mut seqs: Vec<u64> = first
                .get(&(e.service.as_str(), id))
                .copied()
                .into_iter()
                .collect();
            seqs.push(e.seq);
            out.push(Finding {
                rule: "REC-4".into(),
                summary: format!(
                    "message {id} was sent to agent {} again; the agent does not de-duplicate message ids, so it started the work a second time",
                    e.service
                ),
                entries: seqs,
                hint: "a message id alone does not de-duplicate in A2A: after a timeout, find the existing task (GetTask/ListTasks) instead of resending".into(),
            });
        }
        first.entry((e.service.as_str(), id)).or_insert(e.seq);
    }
}

/// REC-6: a message sent to a task that had already reached a terminal state.
fn rec6_messages_to_terminal_tasks(ix: &Index, out: &mut Vec<Finding>) {
    for e in ix.entries {
        let Some(d) = agent_event(e, "rpc-error") else {
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
            summary: format!("a message was sent to task {task} of agent {}, which had already finished ({message})", e.service),
            entries: vec![e.seq],
            hint: "a task in a terminal state cannot be restarted: send follow-up work as a new task (referencing the old one)".into(),
        });
    }
}

/// ACC-2: a canary of a result produced under a revision that has since been superseded, found
/// in a later request.
fn acc2_stale_results(ix: &Index, out: &mut Vec<Finding>) {
    let mut issued: HashMap<&str, (u64, Option<&str>, Option<i64>)> = HashMap::default();
    for (i, e) in ix.entries.iter().enumerate() {
        if let Some(d) = agent_event(e, "canary") {
            if let Some(c) = str_field(d, "canary") {
                let rev = d
                    .get("revision")
                    .and_then(Value::as_i64)
                    .or_else(|| revision_of(e));
                issued
                    .entry(c)
                    .or_insert((e.seq, str_field(d, "task_id"), rev));
            }
            continue;
        }
        let carried: Vec<&str> = if e.disposition == Disposition::Agent {
            // What the orchestrator told an agent counts as a request too.
            agent_event(e, "message")
                .and_then(|d| str_field(d, "text"))
                .map(canaries_in)
                .unwrap_or_default()
        } else if e.actor.is_none() {
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

/// The revision each task was started under (from its `task-created` entry).
fn task_revisions<'e>(ix: &'e Index) -> HashMap<&'e str, (u64, i64)> {
    let mut m = HashMap::default();
    for e in ix.entries {
        if agent_event(e, "task-created").is_some() {
            if let (Some(t), Some(r)) = (
                task_of(e),
                revision_of(e).or_else(|| {
                    e.detail
                        .as_ref()
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
        let about: Vec<&Entry> = ix
            .entries
            .iter()
            .filter(|e| e.disposition == Disposition::Agent && task_of(e) == Some(id))
            .collect();
        let cancels: Vec<&Entry> = about
            .iter()
            .copied()
            .filter(|e| agent_event(e, "cancel").is_some())
            .collect();
        // A task's end: its result, or its failure by a doubleagent restart.
        let last_state = about
            .iter()
            .rev()
            .find_map(|e| {
                agent_event(e, "result")
                    .or_else(|| agent_event(e, "task-interrupted"))
                    .and_then(|d| str_field(d, "state"))
            })
            .or_else(|| {
                about
                    .iter()
                    .rev()
                    .find_map(|e| agent_event(e, "status").and_then(|d| str_field(d, "state")))
            });
        match t.claim {
            TaskOutcome::Cancelled => {
                let honored = cancels.iter().any(|e| {
                    e.detail.as_ref().and_then(|d| str_field(d, "outcome")) == Some("honored")
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
                            .as_ref()
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
                    .find(|e| agent_event(e, "result").is_some())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn line(seq: u64, key: &str) -> String {
        format!(
            r#"{{"seq":{seq},"service":"pay","route":"create","method":"POST","path":"/t","received_at":"2026-01-01T00:00:00.000Z","idempotency_key":"{key}","fingerprint":"00ff","intent":{{"/to":"a","/n":{seq}}},"body":{{"to":"a","n":{seq},"deep":[1,{{"x":null}}]}},"body_truncated":false,"disposition":"executed","fate":"respond","action_id":"act_{seq}","applied":true,"applied_at":"2026-01-01T00:00:00.000Z","response":{{"delivery":"sent","status":201,"at":"2026-01-01T00:00:00.000Z"}}}}"#
        )
    }

    #[test]
    fn the_lean_parse_keeps_what_checkers_read_and_rejects_the_same_lines() {
        // Over 1 MiB, so that the text is parsed in pieces on several threads.
        let mut text = String::new();
        for i in 1..=6000u64 {
            text.push_str(&line(i, &format!("k-{i}")));
            text.push('\n');
            if i % 1000 == 0 {
                text.push('\n'); // blank lines are skipped
            }
        }
        assert!(text.len() > 1 << 20);
        let full = parse_jsonl(&text, "t").unwrap();
        let lean = parse_jsonl_for_verify(&text, "t").unwrap();
        assert_eq!(full.len(), 6000);
        assert_eq!(lean.len(), 6000);
        for (f, l) in full.iter().zip(&lean) {
            let mut expect = f.clone();
            expect.body = Value::Null;
            expect.fingerprint = None;
            expect.applied_at = None;
            expect.response.at = None;
            assert_eq!(&expect, l);
        }
        assert_eq!(verify(&full, None), verify(&lean, None));

        // A wrong type in a field the lean parse does not keep is still an error, on the same
        // line, however the text was cut into pieces.
        let bad = 5123;
        let broken: String = text
            .lines()
            .enumerate()
            .map(|(i, l)| {
                if i + 1 == bad {
                    l.replace(r#""fingerprint":"00ff""#, r#""fingerprint":7"#)
                } else {
                    l.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        let e1 = parse_jsonl(&broken, "f.jsonl").unwrap_err();
        let e2 = parse_jsonl_for_verify(&broken, "f.jsonl").unwrap_err();
        assert!(
            e1.starts_with(&format!("f.jsonl:{bad}: not a ledger entry")),
            "{e1}"
        );
        assert!(
            e2.starts_with(&format!("f.jsonl:{bad}: not a ledger entry")),
            "{e2}"
        );
    }

    #[test]
    fn intents_are_the_same_exactly_when_their_json_text_is() {
        let v = |s: &str| serde_json::from_str::<Value>(s).unwrap();
        assert!(same_json(
            &v(r#"{"a":1,"b":[true,"x"]}"#),
            &v(r#"{"b":[true,"x"],"a":1}"#)
        ));
        assert!(!same_json(&v("1"), &v("1.0")));
        assert!(!same_json(&v("0.0"), &v("-0.0")));
        assert!(!same_json(&v(r#"{"a":1}"#), &v(r#"{"a":1,"b":2}"#)));
        let entry = |seq: u64, intent: &str| Entry {
            seq,
            service: "pay".into(),
            route: Some("create".into()),
            disposition: Disposition::Executed,
            applied: true,
            intent: Some(v(intent)),
            ..Entry::default()
        };
        let ledger = [
            entry(1, r#"{"/to":"a","/n":1}"#),
            entry(2, r#"{"/n":1,"/to":"a"}"#),
            entry(3, r#"{"/to":"a","/n":1.0}"#),
        ];
        let report = verify(&ledger, None);
        let acc1: Vec<&Finding> = report
            .findings
            .iter()
            .filter(|f| f.rule == "ACC-1")
            .collect();
        assert_eq!(acc1.len(), 1);
        assert_eq!(
            acc1[0].entries,
            vec![1, 2],
            "1.0 is another intent, as in its text"
        );
    }
}
