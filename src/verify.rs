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

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;

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
    /// The revision in force after the last entry.
    final_force: Option<(i64, u64)>,
}

fn revision_of(e: &Entry) -> Option<i64> {
    e.revision.as_ref().and_then(Value::as_i64)
}

impl<'a> Index<'a> {
    fn new(entries: &'a [Entry], extra: Option<&Claims>) -> Index<'a> {
        let mut claims: Option<Claims> = extra.cloned();
        let mut in_force = Vec::with_capacity(entries.len());
        let mut global: Option<(i64, u64)> = None;
        let mut scoped: HashMap<&str, (i64, u64)> = HashMap::new();
        let mut lookups_by_target: HashMap<u64, Vec<u64>> = HashMap::new();
        let mut lookups_by_id: HashMap<(&str, &str), Vec<u64>> = HashMap::new();
        let mut replays_of: HashMap<u64, Vec<u64>> = HashMap::new();
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
        Index {
            entries,
            claims,
            in_force,
            lookups_by_target,
            lookups_by_id,
            replays_of,
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

fn intent_key(e: &Entry) -> Option<String> {
    let intent = e.intent.as_ref()?;
    Some(format!(
        "{}\u{1f}{}\u{1f}{intent}",
        e.service,
        e.route.as_deref().unwrap_or("")
    ))
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
    let mut groups: BTreeMap<String, Vec<&Entry>> = BTreeMap::new();
    for e in ix.entries {
        if e.disposition == Disposition::Executed && e.applied && !is_repeatable(e) {
            if let Some(k) = intent_key(e) {
                groups.entry(k).or_default().push(e);
            }
        }
    }
    for group in groups.values().filter(|g| g.len() > 1) {
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
    let mut later: HashMap<String, Vec<&Entry>> = HashMap::new();
    for e in ix.entries {
        if e.disposition == Disposition::Executed && e.actor.is_none() {
            if let Some(k) = intent_key(e) {
                later.entry(k).or_default().push(e);
            }
        }
    }
    for group in later.values() {
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
    let mut first_use: HashMap<(&str, &str), &Entry> = HashMap::new();
    let mut reported: HashSet<(u64, String)> = HashSet::new();
    for e in ix.entries {
        if e.actor.is_some()
            || e.disposition == Disposition::Lookup
            || e.disposition == Disposition::Cancel
        {
            continue;
        }
        let (Some(key), Some(intent)) = (e.idempotency_key.as_deref(), e.intent.as_ref()) else {
            continue;
        };
        match first_use.get(&(e.service.as_str(), key)) {
            None => {
                first_use.insert((e.service.as_str(), key), e);
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
    let mut last_exec: HashMap<(&str, &str), u64> = HashMap::new();
    for e in ix.entries {
        if e.disposition != Disposition::Executed {
            continue;
        }
        let Some(key) = e.idempotency_key.as_deref() else {
            continue;
        };
        if e.executed_after_expiry {
            let mut seqs: Vec<u64> = last_exec
                .get(&(e.service.as_str(), key))
                .copied()
                .into_iter()
                .collect();
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
        last_exec.insert((e.service.as_str(), key), e.seq);
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

/// Executions an action claim refers to.
fn claimed<'e>(ix: &'e Index, c: &ActionClaim) -> Vec<&'e Entry> {
    ix.entries
        .iter()
        .filter(|e| e.disposition == Disposition::Executed)
        .filter(|e| {
            if let Some(k) = &c.key {
                e.idempotency_key.as_ref() == Some(k)
            } else if let Some(w) = &c.work_id {
                e.work_id.as_ref() == Some(w)
            } else if let Some(i) = &c.intent {
                intent_matches(i, e)
            } else {
                false
            }
        })
        .collect()
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
    let mut covered: HashMap<u64, ActionOutcome> = HashMap::new();
    let mut contradicted: HashSet<u64> = HashSet::new();
    for c in &claims.actions {
        let hits = claimed(ix, c);
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
    let mut answered: HashMap<(&str, &str), u64> = HashMap::new();
    for x in ix.entries {
        if let (Disposition::Executed, Some(k), false) =
            (x.disposition, x.idempotency_key.as_deref(), uncertain(x))
        {
            answered.insert((x.service.as_str(), k), x.seq);
        }
    }
    for e in ix.entries {
        if e.actor.is_some() || !uncertain(e) || ix.learned(e, u64::MAX) {
            continue;
        }
        let answered_by_retry = e
            .idempotency_key
            .as_deref()
            .and_then(|k| answered.get(&(e.service.as_str(), k)))
            .is_some_and(|last| *last > e.seq);
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
    let mut first: HashMap<(&str, &str), u64> = HashMap::new();
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
    let mut issued: HashMap<&str, (u64, Option<&str>, Option<i64>)> = HashMap::new();
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
    let mut m = HashMap::new();
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
