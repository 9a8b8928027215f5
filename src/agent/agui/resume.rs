//! Resume judging: what a producer does with the `resume` list of a new run. Pure logic, no
//! HTTP, no clock of its own (the caller passes "now" in ms since the epoch, read from the
//! scenario clock).
//!
//! Rules (`shared/spec/rules.md`, section A):
//! - PROD-1: a producer treats resume entries as the answers it paused for, and need keep
//!   nothing across the gap ([`Knowledge::Stateless`]).
//! - PROD-2 / ERR-1: an entry naming an interrupt the producer did not raise, or any entry of
//!   a run that continues no interrupted run, is *unrecognized*: the run proceeds without it
//!   and a warning is surfaced.
//! - RES-4 / PROD-3: an interrupt the producer can tell is still open (it kept a checkpoint,
//!   or the messages hold an approval-gated tool call with neither a result nor an entry)
//!   and that has no entry is *uncovered*: its action is never performed, the omission is
//!   not a discard, and the run never ends `success`. Per policy the producer rejects before
//!   the stream (HTTP 4xx), opens the stream with `RUN_ERROR`, or re-interrupts.
//! - RES-5: an entry that *answers* an expired interrupt is treated like an uncovered one; a
//!   *discard* of an expired interrupt is accepted. Expired means `expiresAt <= now`, with
//!   `expiresAt` read as a date ([`crate::clock::parse_rfc3339_ms`]: doubleagent only ever judges
//!   the `expiresAt` it emitted itself, always `YYYY-MM-DDTHH:MM:SS.sssZ`); an unparseable value
//!   never expires (the reference client's reading: `new Date(x) <= now` is false for an invalid
//!   date).
//! - RES-3: `payload` is the answer, `metadata` is envelope only and never read here.
//!
//!
//! Used by the AG-UI engine ([`super`]) once per request, before the stream opens; imports only
//! [`super::interrupt`], [`super::message`] and the clock's timestamp parser.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;

use serde_json::Value;

use super::interrupt::{Interrupt, ResumeEntry, ResumeStatus};
use super::message::{Message, ToolCall};
use crate::clock::parse_rfc3339_ms;

// ---------------------------------------------------------------------------------------
// Inputs
// ---------------------------------------------------------------------------------------

/// What the agent does when it finds an uncovered interrupt (`uncovered = "..."`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UncoveredPolicy {
    /// HTTP 4xx before any stream.
    Reject,
    /// A stream whose first event is `RUN_ERROR`.
    RunError,
    /// Do what the covered entries allow, end with the still-open interrupts.
    Reinterrupt,
}

/// A policy name that is not `reject`, `run-error` or `reinterrupt`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown uncovered policy '{0}' (expected reject | run-error | reinterrupt)")]
pub struct UnknownPolicy(pub String);

impl FromStr for UncoveredPolicy {
    type Err = UnknownPolicy;
    fn from_str(s: &str) -> Result<Self, UnknownPolicy> {
        match s {
            "reject" => Ok(UncoveredPolicy::Reject),
            "run-error" => Ok(UncoveredPolicy::RunError),
            "reinterrupt" => Ok(UncoveredPolicy::Reinterrupt),
            other => Err(UnknownPolicy(other.to_string())),
        }
    }
}

/// What the producer knows about the thread before judging.
#[derive(Debug, Clone, Copy)]
pub enum Knowledge<'a> {
    /// `resume = "stateful"`, and the thread's latest interrupted run is still open: its run
    /// id and its interrupts (as emitted, `expiresAt` included).
    Checkpoint {
        run_id: &'a str,
        interrupts: &'a [Interrupt],
    },
    /// `resume = "stateful"`, and the thread has no open interrupted run (never interrupted,
    /// or its latest interrupted run was already continued or cancelled). Any entry is
    /// unrecognized (ERR-1).
    NothingOpen,
    /// `resume = "stateless"` (PROD-1): nothing kept. `raisable` are the interrupts this agent
    /// could have raised (rebuilt from the scenario with their deterministic ids): entries
    /// naming them are taken as answers, anything else is unrecognized.
    Stateless { raisable: &'a [Interrupt] },
}

/// One judging problem.
#[derive(Debug, Clone)]
pub struct ResumeCase<'a> {
    pub knowledge: Knowledge<'a>,
    /// Interrupts the producer can see are open from the input's messages alone
    /// ([`known_open_from_messages`]); used by both kinds of producer.
    pub known_open_from_messages: &'a [Interrupt],
    /// `input.resume` (empty when absent).
    pub entries: &'a [ResumeEntry],
    /// `input.parentRunId`.
    pub parent_run_id: Option<&'a str>,
    /// Scenario clock, ms since the epoch.
    pub now_ms: i64,
    pub policy: UncoveredPolicy,
}

// ---------------------------------------------------------------------------------------
// Outputs
// ---------------------------------------------------------------------------------------

/// Why an entry is unrecognized.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnrecognizedWhy {
    /// It names an interrupt this producer did not raise (PROD-2).
    NotRaised,
    /// The run continues no interrupted run (ERR-1).
    NoInterruptedRun,
}

/// The verdict on one resume entry, in input order.
#[derive(Debug, Clone, PartialEq)]
pub enum EntryVerdict {
    /// `resolved` for an open, unexpired interrupt: `payload` is the answer.
    Answered {
        interrupt_id: String,
        payload: Option<Value>,
    },
    /// `cancelled`: explicitly discarded (allowed also when expired, RES-5).
    Discarded { interrupt_id: String, expired: bool },
    /// PROD-2 / ERR-1: ignored, with a warning.
    Unrecognized {
        interrupt_id: String,
        why: UnrecognizedWhy,
    },
    /// RES-5: `resolved` for an interrupt whose `expiresAt` has passed.
    AnswersExpired {
        interrupt_id: String,
        expires_at: String,
    },
    /// A second entry for an interrupt already answered by an earlier entry. If it
    /// disagrees with the first one the interrupt counts as uncovered (nobody can tell
    /// which answer was meant).
    Duplicate {
        interrupt_id: String,
        conflicting: bool,
    },
}

impl EntryVerdict {
    pub fn interrupt_id(&self) -> &str {
        match self {
            EntryVerdict::Answered { interrupt_id, .. }
            | EntryVerdict::Discarded { interrupt_id, .. }
            | EntryVerdict::Unrecognized { interrupt_id, .. }
            | EntryVerdict::AnswersExpired { interrupt_id, .. }
            | EntryVerdict::Duplicate { interrupt_id, .. } => interrupt_id,
        }
    }

    /// Short label for the ledger: `answered`, `discarded`, `unrecognized`,
    /// `answers-expired`, `duplicate`.
    pub fn label(&self) -> &'static str {
        match self {
            EntryVerdict::Answered { .. } => "answered",
            EntryVerdict::Discarded { .. } => "discarded",
            EntryVerdict::Unrecognized { .. } => "unrecognized",
            EntryVerdict::AnswersExpired { .. } => "answers-expired",
            EntryVerdict::Duplicate { .. } => "duplicate",
        }
    }
}

/// Why a known-open interrupt is uncovered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UncoveredWhy {
    /// No entry at all (RES-4: omission is not discard).
    NoEntry,
    /// Only a `resolved` entry, after `expiresAt` (RES-5).
    AnsweredAfterExpiry,
    /// Entries that contradict each other.
    ConflictingEntries,
}

/// A known-open interrupt without a usable entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Uncovered {
    pub interrupt: Interrupt,
    pub why: UncoveredWhy,
}

/// A warning to surface (as a `CUSTOM` event and in the ledger).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// The rule that asks for it: `PROD-2`, `ERR-1`, `RES-2`, `INT-3`.
    pub rule: &'static str,
    pub message: String,
    pub interrupt_id: Option<String>,
}

/// What happens to the run.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Every known-open interrupt is covered: run, applying the answers.
    Proceed,
    /// `uncovered = "reject"`: answer the POST with `status` and a JSON error, no stream.
    Reject {
        status: u16,
        code: &'static str,
        message: String,
    },
    /// `uncovered = "run-error"`: the stream's first event is `RUN_ERROR{message, code}`.
    RunError { code: &'static str, message: String },
    /// `uncovered = "reinterrupt"`: do what the covered entries allow (see
    /// [`Judgement::gate`]), then end with `RUN_FINISHED{outcome: interrupt}` carrying
    /// `still_open` (plus whatever the continuation raises anew).
    Reinterrupt { still_open: Vec<Interrupt> },
}

/// RUN_ERROR / HTTP error code when some interrupt has no usable entry.
pub const CODE_RESUME_INCOMPLETE: &str = "resume_incomplete";
/// RUN_ERROR / HTTP error code when the only problem is answers to expired interrupts.
pub const CODE_INTERRUPT_EXPIRED: &str = "interrupt_expired";
/// HTTP status of a `reject`: the input conflicts with the thread's open interrupts.
pub const REJECT_STATUS: u16 = 409;

/// The recorded answer to one interrupt.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    Resolved(Option<Value>),
    Discarded,
}

/// What an answer (or its absence) allows the action it gates: a discard skips it, a resolved
/// answer runs it if `approve_if` (a JSON pointer into the payload, e.g. `/approved`) is `true`
/// or absent, no answer blocks it (PROD-3).
pub fn gate_for(answer: Option<&Answer>, approve_if: Option<&str>) -> Gate {
    match answer {
        None => Gate::Blocked,
        Some(Answer::Discarded) => Gate::Skip(SkipReason::Discarded),
        Some(Answer::Resolved(payload)) => {
            let approved = approve_if.is_none_or(|pointer| {
                payload
                    .as_ref()
                    .and_then(|p| p.pointer(pointer))
                    .is_some_and(|v| v == &Value::Bool(true))
            });
            if approved {
                Gate::Run {
                    payload: payload.clone(),
                }
            } else {
                Gate::Skip(SkipReason::NotApproved)
            }
        }
    }
}

/// Whether a gated action may run.
#[derive(Debug, Clone, PartialEq)]
pub enum Gate {
    /// Resolved (and approved, when an `approve_if` pointer is given): perform the action;
    /// `payload` reaches the tool call.
    Run { payload: Option<Value> },
    /// Answered, but the action must not happen.
    Skip(SkipReason),
    /// No usable answer (uncovered, expired, conflicting, or never asked): never performed
    /// (PROD-3).
    Blocked,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SkipReason {
    /// `status: "cancelled"`.
    Discarded,
    /// Resolved, but the `approve_if` pointer in the payload is not `true`.
    NotApproved,
}

/// The full judgement of one input.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    /// `parentRunId` set or a non-empty `resume` (PH-6: `on_continuation = "skip"`
    /// interrupts do not fire again). `@ag-ui/client@1.0.0` never sends `parentRunId`.
    pub is_continuation: bool,
    /// One verdict per entry, in input order.
    pub verdicts: Vec<EntryVerdict>,
    /// Known-open interrupts without a usable entry, in emission order.
    pub uncovered: Vec<Uncovered>,
    pub warnings: Vec<Warning>,
    pub decision: Decision,
    answers: BTreeMap<String, Answer>,
}

impl Judgement {
    /// The usable answer to `interrupt_id`, if any.
    pub fn answer_for(&self, interrupt_id: &str) -> Option<&Answer> {
        self.answers.get(interrupt_id)
    }

    /// Whether the action gated by `interrupt_id` may run. `approve_if` is a JSON pointer
    /// (e.g. `/approved`) that must be `true` in the payload of a resolved answer.
    pub fn gate(&self, interrupt_id: &str, approve_if: Option<&str>) -> Gate {
        if self
            .uncovered
            .iter()
            .any(|u| u.interrupt.id == interrupt_id)
        {
            return Gate::Blocked;
        }
        gate_for(self.answers.get(interrupt_id), approve_if)
    }

    /// Every usable answer of this input, by interrupt id.
    pub fn answers(&self) -> &BTreeMap<String, Answer> {
        &self.answers
    }

    /// INT-2 / PROD-3: the run may end `success` only if no known-open interrupt is uncovered.
    pub fn may_succeed(&self) -> bool {
        self.uncovered.is_empty()
    }
}

// ---------------------------------------------------------------------------------------
// Judging
// ---------------------------------------------------------------------------------------

/// Judges a resume list. See the module docs for the rules applied.
pub fn judge(case: &ResumeCase<'_>) -> Judgement {
    let is_continuation = case.parent_run_id.is_some() || !case.entries.is_empty();
    let mut warnings = Vec::new();

    // Known-open interrupts, in emission order, de-duplicated by id.
    let mut open: Vec<&Interrupt> = Vec::new();
    let mut seen_open = BTreeSet::new();
    if let Knowledge::Checkpoint { interrupts, .. } = case.knowledge {
        for i in interrupts {
            if seen_open.insert(i.id.as_str()) {
                open.push(i);
            }
        }
    }
    for i in case.known_open_from_messages {
        if seen_open.insert(i.id.as_str()) {
            open.push(i);
        }
    }

    // Interrupts an entry may name. A stateful producer takes answers only for what its
    // checkpoint holds: an open call it merely sees in the messages (of another thread, or from
    // before a reset) keeps the run from succeeding but is not something it asked on this
    // thread. A stateless producer has nothing else to go by.
    let mut recognizable: BTreeMap<&str, &Interrupt> = BTreeMap::new();
    match case.knowledge {
        Knowledge::Checkpoint { interrupts, .. } => {
            for i in interrupts {
                recognizable.entry(i.id.as_str()).or_insert(i);
            }
        }
        Knowledge::NothingOpen => {}
        Knowledge::Stateless { raisable } => {
            for i in open.iter().copied().chain(raisable) {
                recognizable.entry(i.id.as_str()).or_insert(i);
            }
        }
    }
    let unrecognized_why = match case.knowledge {
        Knowledge::NothingOpen => UnrecognizedWhy::NoInterruptedRun,
        _ => UnrecognizedWhy::NotRaised,
    };

    if let (Knowledge::Checkpoint { run_id, .. }, Some(parent)) =
        (case.knowledge, case.parent_run_id)
    {
        if parent != run_id {
            warnings.push(Warning {
                rule: "RES-2",
                message: format!(
                    "parentRunId '{parent}' is not the thread's latest interrupted run '{run_id}'; entries are matched against '{run_id}'"
                ),
                interrupt_id: None,
            });
        }
    }

    let mut verdicts = Vec::with_capacity(case.entries.len());
    let mut answers: BTreeMap<String, Answer> = BTreeMap::new();
    let mut first_entry: BTreeMap<&str, &ResumeEntry> = BTreeMap::new();
    let mut expired_answer: BTreeSet<&str> = BTreeSet::new();
    let mut conflicting: BTreeSet<&str> = BTreeSet::new();

    for entry in case.entries {
        let id = entry.interrupt_id.as_str();
        let Some(interrupt) = recognizable.get(id) else {
            let (rule, message) = match unrecognized_why {
                UnrecognizedWhy::NotRaised => (
                    "PROD-2",
                    format!("resume entry '{id}' names an interrupt this agent did not raise; ignored"),
                ),
                UnrecognizedWhy::NoInterruptedRun => (
                    "ERR-1",
                    format!("resume entry '{id}' answers nothing: this run continues no interrupted run; ignored"),
                ),
            };
            warnings.push(Warning {
                rule,
                message,
                interrupt_id: Some(id.to_string()),
            });
            verdicts.push(EntryVerdict::Unrecognized {
                interrupt_id: id.to_string(),
                why: unrecognized_why,
            });
            continue;
        };

        if let Some(first) = first_entry.get(id) {
            let agrees = first.status == entry.status && first.payload == entry.payload;
            if !agrees {
                conflicting.insert(id);
            }
            warnings.push(Warning {
                rule: "INT-3",
                message: if agrees {
                    format!("interrupt '{id}' is answered more than once; the repeats agree")
                } else {
                    format!(
                        "interrupt '{id}' is answered more than once, differently; it stays open"
                    )
                },
                interrupt_id: Some(id.to_string()),
            });
            verdicts.push(EntryVerdict::Duplicate {
                interrupt_id: id.to_string(),
                conflicting: !agrees,
            });
            continue;
        }
        first_entry.insert(id, entry);

        let expired = is_expired(interrupt, case.now_ms);
        match entry.status {
            ResumeStatus::Cancelled => {
                answers.insert(id.to_string(), Answer::Discarded);
                verdicts.push(EntryVerdict::Discarded {
                    interrupt_id: id.to_string(),
                    expired,
                });
            }
            ResumeStatus::Resolved if expired => {
                expired_answer.insert(id);
                verdicts.push(EntryVerdict::AnswersExpired {
                    interrupt_id: id.to_string(),
                    expires_at: interrupt.expires_at.clone().unwrap_or_default(),
                });
            }
            ResumeStatus::Resolved => {
                answers.insert(id.to_string(), Answer::Resolved(entry.payload.clone()));
                verdicts.push(EntryVerdict::Answered {
                    interrupt_id: id.to_string(),
                    payload: entry.payload.clone(),
                });
            }
        }
    }
    for id in &conflicting {
        answers.remove(*id);
    }

    // Uncovered: known-open without a usable entry, plus any recognized interrupt whose only
    // answer came too late or contradicts itself.
    let mut uncovered = Vec::new();
    let mut listed = BTreeSet::new();
    let mut push = |i: &Interrupt, why| {
        if listed.insert(i.id.clone()) {
            uncovered.push(Uncovered {
                interrupt: i.clone(),
                why,
            });
        }
    };
    for i in &open {
        let id = i.id.as_str();
        if conflicting.contains(id) {
            push(i, UncoveredWhy::ConflictingEntries);
        } else if expired_answer.contains(id) {
            push(i, UncoveredWhy::AnsweredAfterExpiry);
        } else if !answers.contains_key(id) {
            push(i, UncoveredWhy::NoEntry);
        }
    }
    for (id, i) in &recognizable {
        if conflicting.contains(id) {
            push(i, UncoveredWhy::ConflictingEntries);
        } else if expired_answer.contains(id) {
            push(i, UncoveredWhy::AnsweredAfterExpiry);
        }
    }

    let decision = decide(&uncovered, case.policy);
    Judgement {
        is_continuation,
        verdicts,
        uncovered,
        warnings,
        decision,
        answers,
    }
}

fn decide(uncovered: &[Uncovered], policy: UncoveredPolicy) -> Decision {
    if uncovered.is_empty() {
        return Decision::Proceed;
    }
    let only_expired = uncovered
        .iter()
        .all(|u| u.why == UncoveredWhy::AnsweredAfterExpiry);
    let code = if only_expired {
        CODE_INTERRUPT_EXPIRED
    } else {
        CODE_RESUME_INCOMPLETE
    };
    let parts: Vec<String> = uncovered
        .iter()
        .map(|u| match u.why {
            UncoveredWhy::NoEntry => format!("{} (no resume entry)", u.interrupt.id),
            UncoveredWhy::AnsweredAfterExpiry => format!(
                "{} (answered after it expired at {}; cancel it instead)",
                u.interrupt.id,
                u.interrupt.expires_at.as_deref().unwrap_or("?")
            ),
            UncoveredWhy::ConflictingEntries => {
                format!("{} (contradictory resume entries)", u.interrupt.id)
            }
        })
        .collect();
    let message = format!(
        "{} open interrupt(s) not covered by resume: {}",
        uncovered.len(),
        parts.join(", ")
    );
    match policy {
        UncoveredPolicy::Reject => Decision::Reject {
            status: REJECT_STATUS,
            code,
            message,
        },
        UncoveredPolicy::RunError => Decision::RunError { code, message },
        UncoveredPolicy::Reinterrupt => Decision::Reinterrupt {
            still_open: uncovered.iter().map(|u| u.interrupt.clone()).collect(),
        },
    }
}

/// RES-5: whether `interrupt` is expired at `now_ms` (`expiresAt <= now`). No or an
/// unparseable `expiresAt` never expires.
pub fn is_expired(interrupt: &Interrupt, now_ms: i64) -> bool {
    interrupt
        .expires_at
        .as_deref()
        .and_then(parse_rfc3339_ms)
        .is_some_and(|t| t <= now_ms)
}

/// PROD-3's second source of knowledge: every tool call in `messages` that has no tool
/// result message and that `gate` says is approval-gated (returning the interrupt that
/// gates it, with the same id the producer emitted). Whether an entry covers it is judged
/// by [`judge`].
///
/// Tool results are matched by `toolCallId` anywhere in the messages. A producer that
/// discards an approval should therefore emit a `TOOL_CALL_RESULT` for the skipped call
/// (the client keeps it in its messages), or the call would look open forever.
pub fn known_open_from_messages<F>(messages: &[Message], mut gate: F) -> Vec<Interrupt>
where
    F: FnMut(&ToolCall) -> Option<Interrupt>,
{
    let answered: BTreeSet<&str> = messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool(t) => Some(t.tool_call_id.as_str()),
            _ => None,
        })
        .collect();
    let mut out: Vec<Interrupt> = Vec::new();
    for m in messages {
        let Message::Assistant(a) = m else { continue };
        for call in a.tool_calls.iter().flatten() {
            if answered.contains(call.id.as_str()) {
                continue;
            }
            if let Some(i) = gate(call) {
                if !out.iter().any(|o| o.id == i.id) {
                    out.push(i);
                }
            }
        }
    }
    out
}

impl fmt::Display for UncoveredPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            UncoveredPolicy::Reject => "reject",
            UncoveredPolicy::RunError => "run-error",
            UncoveredPolicy::Reinterrupt => "reinterrupt",
        })
    }
}

// ---------------------------------------------------------------------------------------
// Tests: each named after the rule it exercises.
// ---------------------------------------------------------------------------------------

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // 2026-12-01T00:00:00Z
    const T0: i64 = 1_796_083_200_000;
    const MIN: i64 = 60_000;

    fn approval(id: &str, tool_call_id: &str) -> Interrupt {
        let mut i = Interrupt::new(id, "approval-required");
        i.tool_call_id = Some(tool_call_id.into());
        i.message = Some("Approve?".into());
        i
    }

    fn expiring(id: &str, expires_at_ms: i64) -> Interrupt {
        let mut i = Interrupt::new(id, "approval-required");
        i.expires_at = Some(crate::clock::format_rfc3339_ms(expires_at_ms as u64));
        i
    }

    fn case<'a>(
        knowledge: Knowledge<'a>,
        entries: &'a [ResumeEntry],
        policy: UncoveredPolicy,
    ) -> ResumeCase<'a> {
        ResumeCase {
            knowledge,
            known_open_from_messages: &[],
            entries,
            parent_run_id: None,
            now_ms: T0,
            policy,
        }
    }

    fn approve(id: &str) -> ResumeEntry {
        ResumeEntry::resolved(id, Some(json!({"approved": true})))
    }

    const ALL_POLICIES: [UncoveredPolicy; 3] = [
        UncoveredPolicy::Reject,
        UncoveredPolicy::RunError,
        UncoveredPolicy::Reinterrupt,
    ];

    // --- RES-1 / RES-3: answers and discards --------------------------------------------

    #[test]
    fn res1_entry_answers_the_open_interrupt_and_the_action_runs() {
        let open = [approval("approve-transfer", "tc-1")];
        let entries = [approve("approve-transfer")];
        let j = judge(&case(
            Knowledge::Checkpoint {
                run_id: "r1",
                interrupts: &open,
            },
            &entries,
            UncoveredPolicy::Reject,
        ));
        assert_eq!(j.decision, Decision::Proceed);
        assert!(j.may_succeed());
        assert!(j.warnings.is_empty());
        assert_eq!(j.verdicts[0].label(), "answered");
        assert_eq!(
            j.gate("approve-transfer", Some("/approved")),
            Gate::Run {
                payload: Some(json!({"approved": true}))
            }
        );
    }

    #[test]
    fn res3_discarded_interrupt_means_the_tool_is_not_run() {
        let open = [approval("approve-transfer", "tc-1")];
        let entries = [ResumeEntry::cancelled("approve-transfer")];
        let j = judge(&case(
            Knowledge::Checkpoint {
                run_id: "r1",
                interrupts: &open,
            },
            &entries,
            UncoveredPolicy::Reject,
        ));
        assert_eq!(j.decision, Decision::Proceed);
        assert_eq!(j.answer_for("approve-transfer"), Some(&Answer::Discarded));
        assert_eq!(
            j.gate("approve-transfer", Some("/approved")),
            Gate::Skip(SkipReason::Discarded)
        );
        assert_eq!(
            j.gate("approve-transfer", None),
            Gate::Skip(SkipReason::Discarded)
        );
    }

    #[test]
    fn res3_resolved_with_approve_if_false_skips_the_tool() {
        let open = [approval("a", "tc-1")];
        for payload in [
            json!({"approved": false}),
            json!({"approved": "yes"}),
            json!({}),
            json!(true),
        ] {
            let entries = [ResumeEntry::resolved("a", Some(payload.clone()))];
            let j = judge(&case(
                Knowledge::Checkpoint {
                    run_id: "r1",
                    interrupts: &open,
                },
                &entries,
                UncoveredPolicy::Reject,
            ));
            assert_eq!(j.decision, Decision::Proceed, "{payload}");
            assert_eq!(
                j.gate("a", Some("/approved")),
                Gate::Skip(SkipReason::NotApproved),
                "{payload}"
            );
        }
        // Without approve_if any resolved answer runs it; a whole-payload pointer works too.
        let entries = [ResumeEntry::resolved("a", Some(json!(true)))];
        let j = judge(&case(
            Knowledge::Checkpoint {
                run_id: "r1",
                interrupts: &open,
            },
            &entries,
            UncoveredPolicy::Reject,
        ));
        assert!(matches!(j.gate("a", None), Gate::Run { .. }));
        assert!(matches!(j.gate("a", Some("")), Gate::Run { .. }));
    }

    #[test]
    fn res3_metadata_is_envelope_not_answer() {
        let open = [approval("a", "tc-1")];
        let mut e = ResumeEntry::resolved("a", None);
        e.metadata = Some(json!({"approved": true}).as_object().unwrap().clone());
        let entries = [e];
        let j = judge(&case(
            Knowledge::Checkpoint {
                run_id: "r1",
                interrupts: &open,
            },
            &entries,
            UncoveredPolicy::Reject,
        ));
        assert_eq!(
            j.gate("a", Some("/approved")),
            Gate::Skip(SkipReason::NotApproved)
        );
    }

    // --- RES-4 / PROD-3: uncovered interrupts -------------------------------------------

    #[test]
    fn res4_uncovered_interrupt_is_rejected() {
        let open = [approval("a", "tc-1"), approval("b", "tc-2")];
        let entries = [approve("a")];
        let j = judge(&case(
            Knowledge::Checkpoint {
                run_id: "r1",
                interrupts: &open,
            },
            &entries,
            UncoveredPolicy::Reject,
        ));
        match &j.decision {
            Decision::Reject {
                status,
                code,
                message,
            } => {
                assert_eq!(*status, 409);
                assert_eq!(*code, CODE_RESUME_INCOMPLETE);
                assert!(message.contains("b (no resume entry)"), "{message}");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(j.uncovered.len(), 1);
        assert_eq!(j.uncovered[0].why, UncoveredWhy::NoEntry);
        assert!(!j.may_succeed());
    }

    #[test]
    fn res4_omission_is_not_discard() {
        let open = [approval("a", "tc-1")];
        let j = judge(&case(
            Knowledge::Checkpoint {
                run_id: "r1",
                interrupts: &open,
            },
            &[],
            UncoveredPolicy::Reinterrupt,
        ));
        // Not a Skip(Discarded): the action is blocked and the interrupt stays open.
        assert_eq!(j.gate("a", Some("/approved")), Gate::Blocked);
        assert_eq!(j.answer_for("a"), None);
        assert_eq!(
            j.decision,
            Decision::Reinterrupt {
                still_open: open.to_vec()
            }
        );
    }

    #[test]
    fn res4_new_run_without_resume_on_an_interrupted_thread_is_uncovered() {
        // HttpAgent would refuse this client-side; a defective consumer may still send it.
        let open = [approval("a", "tc-1")];
        let j = judge(&case(
            Knowledge::Checkpoint {
                run_id: "r1",
                interrupts: &open,
            },
            &[],
            UncoveredPolicy::Reject,
        ));
        assert!(!j.is_continuation);
        assert!(matches!(j.decision, Decision::Reject { .. }));
    }

    #[test]
    fn res4_fully_covered_batch_proceeds() {
        let open = [
            approval("a", "tc-1"),
            approval("b", "tc-2"),
            Interrupt::new("c", "choose"),
        ];
        let entries = [
            approve("a"),
            ResumeEntry::cancelled("b"),
            ResumeEntry::resolved("c", Some(json!("blue"))),
        ];
        for policy in ALL_POLICIES {
            let j = judge(&case(
                Knowledge::Checkpoint {
                    run_id: "r1",
                    interrupts: &open,
                },
                &entries,
                policy,
            ));
            assert_eq!(j.decision, Decision::Proceed);
            assert!(j.uncovered.is_empty());
        }
    }

    #[test]
    fn prod3_run_error_policy_opens_the_stream_with_run_error() {
        let open = [approval("a", "tc-1")];
        let j = judge(&case(
            Knowledge::Checkpoint {
                run_id: "r1",
                interrupts: &open,
            },
            &[],
            UncoveredPolicy::RunError,
        ));
        assert_eq!(
            j.decision,
            Decision::RunError {
                code: CODE_RESUME_INCOMPLETE,
                message: "1 open interrupt(s) not covered by resume: a (no resume entry)".into()
            }
        );
    }

    #[test]
    fn prod3_reinterrupt_runs_covered_entries_and_keeps_only_the_still_open() {
        let open = [approval("a", "tc-1"), approval("b", "tc-2")];
        let entries = [approve("a")];
        let j = judge(&case(
            Knowledge::Checkpoint {
                run_id: "r1",
                interrupts: &open,
            },
            &entries,
            UncoveredPolicy::Reinterrupt,
        ));
        assert_eq!(
            j.decision,
            Decision::Reinterrupt {
                still_open: vec![open[1].clone()]
            }
        );
        assert!(matches!(j.gate("a", Some("/approved")), Gate::Run { .. }));
        assert_eq!(j.gate("b", Some("/approved")), Gate::Blocked);
    }

    #[test]
    fn prod3_never_proceeds_while_a_known_open_interrupt_is_unanswered() {
        let open = [approval("a", "tc-1")];
        let bogus = [ResumeEntry::resolved(
            "bogus",
            Some(json!({"approved": true})),
        )];
        for policy in ALL_POLICIES {
            for entries in [&[][..], &bogus[..]] {
                let j = judge(&case(
                    Knowledge::Checkpoint {
                        run_id: "r1",
                        interrupts: &open,
                    },
                    entries,
                    policy,
                ));
                assert_ne!(j.decision, Decision::Proceed, "{policy}");
                assert!(!j.may_succeed());
                assert_eq!(j.gate("a", Some("/approved")), Gate::Blocked);
            }
        }
    }

    #[test]
    fn prod3_gated_tool_call_in_messages_is_known_open_to_a_stateless_producer() {
        let messages: Vec<Message> = serde_json::from_value(json!([
            {"id": "u1", "role": "user", "content": "pay acct-9"},
            {"id": "a1", "role": "assistant", "content": "I will move 100 to acct-9.",
             "toolCalls": [{"id": "tc-1", "type": "function", "function": {"name": "transfer_funds", "arguments": "{\"to\":\"acct-9\",\"amount\":100}"}}]}
        ]))
        .unwrap();
        let gate = |call: &ToolCall| {
            (call.function.name == "transfer_funds").then(|| approval("approve-transfer", &call.id))
        };
        let known = known_open_from_messages(&messages, gate);
        assert_eq!(known, vec![approval("approve-transfer", "tc-1")]);

        // No entry: blocked, whatever the policy.
        let mut c = case(
            Knowledge::Stateless { raisable: &known },
            &[],
            UncoveredPolicy::RunError,
        );
        c.known_open_from_messages = &known;
        let j = judge(&c);
        assert!(matches!(j.decision, Decision::RunError { .. }));
        assert_eq!(j.gate("approve-transfer", Some("/approved")), Gate::Blocked);

        // With the entry: covered.
        let entries = [approve("approve-transfer")];
        c.entries = &entries;
        let j = judge(&c);
        assert_eq!(j.decision, Decision::Proceed);
        assert!(matches!(
            j.gate("approve-transfer", Some("/approved")),
            Gate::Run { .. }
        ));
    }

    #[test]
    fn prod3_a_stateful_producer_takes_no_answer_for_a_call_only_the_messages_show() {
        let from_messages = [approval("approve-transfer", "tc-1")];
        let entries = [approve("approve-transfer")];
        let mut c = case(
            Knowledge::NothingOpen,
            &entries,
            UncoveredPolicy::Reinterrupt,
        );
        c.known_open_from_messages = &from_messages;
        let j = judge(&c);
        assert_eq!(j.verdicts[0].label(), "unrecognized");
        assert_eq!(j.warnings[0].rule, "ERR-1");
        assert_eq!(j.uncovered[0].why, UncoveredWhy::NoEntry);
        assert_eq!(
            j.decision,
            Decision::Reinterrupt {
                still_open: from_messages.to_vec()
            }
        );
        assert_eq!(j.gate("approve-transfer", Some("/approved")), Gate::Blocked);
    }

    #[test]
    fn prod3_tool_call_with_a_result_is_not_known_open() {
        let messages: Vec<Message> = serde_json::from_value(json!([
            {"id": "a1", "role": "assistant",
             "toolCalls": [{"id": "tc-1", "type": "function", "function": {"name": "transfer_funds", "arguments": "{}"}},
                           {"id": "tc-2", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]},
            {"id": "t1", "role": "tool", "toolCallId": "tc-1", "content": "skipped: approval discarded"}
        ]))
        .unwrap();
        let known = known_open_from_messages(&messages, |call| {
            (call.function.name == "transfer_funds").then(|| approval("approve-transfer", &call.id))
        });
        assert!(known.is_empty());
    }

    #[test]
    fn prod3_checkpoint_and_messages_are_merged_without_duplicates() {
        let open = [approval("a", "tc-1")];
        let from_messages = [approval("a", "tc-1"), approval("b", "tc-2")];
        let mut c = case(
            Knowledge::Checkpoint {
                run_id: "r1",
                interrupts: &open,
            },
            &[],
            UncoveredPolicy::Reinterrupt,
        );
        c.known_open_from_messages = &from_messages;
        let j = judge(&c);
        assert_eq!(j.uncovered.len(), 2);
        assert_eq!(
            j.decision,
            Decision::Reinterrupt {
                still_open: from_messages.to_vec()
            }
        );
    }

    // --- PROD-1: stateless ---------------------------------------------------------------

    #[test]
    fn prod1_stateless_producer_takes_entries_as_its_answers() {
        let raisable = [approval("approve-transfer", "tc-1")];
        let entries = [approve("approve-transfer")];
        let j = judge(&case(
            Knowledge::Stateless {
                raisable: &raisable,
            },
            &entries,
            UncoveredPolicy::Reject,
        ));
        assert_eq!(j.decision, Decision::Proceed);
        assert!(matches!(
            j.gate("approve-transfer", Some("/approved")),
            Gate::Run { .. }
        ));
    }

    #[test]
    fn prod1_stateless_producer_with_nothing_visible_has_nothing_to_enforce() {
        let raisable = [approval("approve-transfer", "tc-1")];
        for policy in ALL_POLICIES {
            let j = judge(&case(
                Knowledge::Stateless {
                    raisable: &raisable,
                },
                &[],
                policy,
            ));
            assert_eq!(j.decision, Decision::Proceed);
            // ...but it still never performs an action it has no answer for.
            assert_eq!(j.gate("approve-transfer", Some("/approved")), Gate::Blocked);
        }
    }

    // --- PROD-2 / ERR-1: unrecognized ----------------------------------------------------

    #[test]
    fn prod2_unrecognized_entry_is_ignored_with_a_warning_and_the_run_proceeds() {
        let open = [approval("a", "tc-1")];
        let entries = [approve("a"), ResumeEntry::resolved("bogus", Some(json!(1)))];
        let j = judge(&case(
            Knowledge::Checkpoint {
                run_id: "r1",
                interrupts: &open,
            },
            &entries,
            UncoveredPolicy::Reject,
        ));
        assert_eq!(j.decision, Decision::Proceed);
        assert_eq!(
            j.verdicts[1],
            EntryVerdict::Unrecognized {
                interrupt_id: "bogus".into(),
                why: UnrecognizedWhy::NotRaised
            }
        );
        assert_eq!(j.warnings.len(), 1);
        assert_eq!(j.warnings[0].rule, "PROD-2");
        assert_eq!(j.warnings[0].interrupt_id.as_deref(), Some("bogus"));
        assert_eq!(j.answer_for("bogus"), None);
    }

    #[test]
    fn prod2_stateless_unknown_id_is_unrecognized() {
        let raisable = [approval("approve-transfer", "tc-1")];
        let entries = [approve("nope")];
        let j = judge(&case(
            Knowledge::Stateless {
                raisable: &raisable,
            },
            &entries,
            UncoveredPolicy::Reject,
        ));
        assert_eq!(j.decision, Decision::Proceed);
        assert_eq!(j.verdicts[0].label(), "unrecognized");
        assert_eq!(j.warnings[0].rule, "PROD-2");
    }

    #[test]
    fn err1_resume_on_a_run_that_continues_nothing_is_all_unrecognized() {
        let entries = [approve("a"), ResumeEntry::cancelled("b")];
        let j = judge(&case(
            Knowledge::NothingOpen,
            &entries,
            UncoveredPolicy::Reject,
        ));
        assert_eq!(j.decision, Decision::Proceed);
        assert!(j.is_continuation);
        assert!(j.verdicts.iter().all(|v| matches!(
            v,
            EntryVerdict::Unrecognized {
                why: UnrecognizedWhy::NoInterruptedRun,
                ..
            }
        )));
        assert!(j.warnings.iter().all(|w| w.rule == "ERR-1"));
        assert_eq!(j.warnings.len(), 2);
        // Nothing it "answered" can run.
        assert_eq!(j.gate("a", None), Gate::Blocked);
    }

    // --- RES-5: expiry -------------------------------------------------------------------

    #[test]
    fn res5_answer_to_an_expired_interrupt_is_treated_as_uncovered() {
        let open = [expiring("a", T0 - MIN)];
        let entries = [approve("a")];
        let j = judge(&case(
            Knowledge::Checkpoint {
                run_id: "r1",
                interrupts: &open,
            },
            &entries,
            UncoveredPolicy::Reject,
        ));
        assert_eq!(
            j.verdicts[0],
            EntryVerdict::AnswersExpired {
                interrupt_id: "a".into(),
                expires_at: "2026-11-30T23:59:00.000Z".into()
            }
        );
        assert_eq!(j.uncovered[0].why, UncoveredWhy::AnsweredAfterExpiry);
        assert!(matches!(
            j.decision,
            Decision::Reject {
                code: CODE_INTERRUPT_EXPIRED,
                ..
            }
        ));
        assert_eq!(j.gate("a", None), Gate::Blocked);
    }

    #[test]
    fn res5_each_policy_handles_an_expired_answer_like_an_uncovered_one() {
        let open = [expiring("a", T0 - MIN)];
        let entries = [approve("a")];
        let mk = |policy| {
            judge(&case(
                Knowledge::Checkpoint {
                    run_id: "r1",
                    interrupts: &open,
                },
                &entries,
                policy,
            ))
            .decision
        };
        assert!(matches!(
            mk(UncoveredPolicy::RunError),
            Decision::RunError {
                code: CODE_INTERRUPT_EXPIRED,
                ..
            }
        ));
        assert_eq!(
            mk(UncoveredPolicy::Reinterrupt),
            Decision::Reinterrupt {
                still_open: open.to_vec()
            }
        );
    }

    #[test]
    fn res5_discarding_an_expired_interrupt_is_accepted() {
        let open = [expiring("a", T0 - MIN), approval("b", "tc-2")];
        let entries = [ResumeEntry::cancelled("a"), approve("b")];
        let j = judge(&case(
            Knowledge::Checkpoint {
                run_id: "r1",
                interrupts: &open,
            },
            &entries,
            UncoveredPolicy::Reject,
        ));
        assert_eq!(j.decision, Decision::Proceed);
        assert_eq!(
            j.verdicts[0],
            EntryVerdict::Discarded {
                interrupt_id: "a".into(),
                expired: true
            }
        );
        assert_eq!(j.gate("a", None), Gate::Skip(SkipReason::Discarded));
    }

    #[test]
    fn res5_now_equal_to_expires_at_is_expired_and_one_ms_before_is_not() {
        let at = [expiring("a", T0)];
        let before = [expiring("a", T0 + 1)];
        let entries = [approve("a")];
        let j = judge(&case(
            Knowledge::Checkpoint {
                run_id: "r1",
                interrupts: &at,
            },
            &entries,
            UncoveredPolicy::Reject,
        ));
        assert_eq!(j.verdicts[0].label(), "answers-expired");
        let j = judge(&case(
            Knowledge::Checkpoint {
                run_id: "r1",
                interrupts: &before,
            },
            &entries,
            UncoveredPolicy::Reject,
        ));
        assert_eq!(j.verdicts[0].label(), "answered");
    }

    #[test]
    fn res5_unparseable_expires_at_never_expires() {
        let mut i = Interrupt::new("a", "x");
        i.expires_at = Some("next tuesday".into());
        assert!(!is_expired(&i, i64::MAX));
        let open = [i];
        let entries = [approve("a")];
        let j = judge(&case(
            Knowledge::Checkpoint {
                run_id: "r1",
                interrupts: &open,
            },
            &entries,
            UncoveredPolicy::Reject,
        ));
        assert_eq!(j.decision, Decision::Proceed);
    }

    #[test]
    fn res5_stateless_expired_answer_to_a_raisable_interrupt_is_uncovered() {
        let raisable = [expiring("a", T0 - MIN)];
        let entries = [approve("a")];
        let j = judge(&case(
            Knowledge::Stateless {
                raisable: &raisable,
            },
            &entries,
            UncoveredPolicy::RunError,
        ));
        assert!(matches!(
            j.decision,
            Decision::RunError {
                code: CODE_INTERRUPT_EXPIRED,
                ..
            }
        ));
    }

    #[test]
    fn res2_parent_run_id_naming_another_run_warns_but_entries_still_match_by_id() {
        let open = [approval("a", "tc-1")];
        let entries = [approve("a")];
        let mut c = case(
            Knowledge::Checkpoint {
                run_id: "r1",
                interrupts: &open,
            },
            &entries,
            UncoveredPolicy::Reject,
        );
        c.parent_run_id = Some("r0");
        let j = judge(&c);
        assert_eq!(j.decision, Decision::Proceed);
        assert_eq!(j.warnings.len(), 1);
        assert_eq!(j.warnings[0].rule, "RES-2");
        c.parent_run_id = Some("r1");
        assert!(judge(&c).warnings.is_empty());
    }

    #[test]
    fn int3_agreeing_duplicate_entries_only_warn() {
        let open = [approval("a", "tc-1")];
        let entries = [approve("a"), approve("a")];
        let j = judge(&case(
            Knowledge::Checkpoint {
                run_id: "r1",
                interrupts: &open,
            },
            &entries,
            UncoveredPolicy::Reject,
        ));
        assert_eq!(j.decision, Decision::Proceed);
        assert_eq!(
            j.verdicts[1],
            EntryVerdict::Duplicate {
                interrupt_id: "a".into(),
                conflicting: false
            }
        );
        assert_eq!(j.warnings[0].rule, "INT-3");
        assert!(matches!(j.gate("a", Some("/approved")), Gate::Run { .. }));
    }

    #[test]
    fn int3_contradicting_duplicate_entries_leave_the_interrupt_uncovered() {
        let open = [approval("a", "tc-1")];
        let entries = [approve("a"), ResumeEntry::cancelled("a")];
        let j = judge(&case(
            Knowledge::Checkpoint {
                run_id: "r1",
                interrupts: &open,
            },
            &entries,
            UncoveredPolicy::Reinterrupt,
        ));
        assert_eq!(j.uncovered[0].why, UncoveredWhy::ConflictingEntries);
        assert_eq!(j.gate("a", Some("/approved")), Gate::Blocked);
        assert_eq!(
            j.decision,
            Decision::Reinterrupt {
                still_open: open.to_vec()
            }
        );
    }

    #[test]
    fn ph6_continuation_is_recognised_without_parent_run_id() {
        // @ag-ui/client@1.0.0 sends resume but never parentRunId.
        let open = [approval("a", "tc-1")];
        let entries = [approve("a")];
        let j = judge(&case(
            Knowledge::Checkpoint {
                run_id: "r1",
                interrupts: &open,
            },
            &entries,
            UncoveredPolicy::Reject,
        ));
        assert!(j.is_continuation);
        // TanStack sends parentRunId (and resume).
        let mut c = case(Knowledge::NothingOpen, &[], UncoveredPolicy::Reject);
        c.parent_run_id = Some("r1");
        assert!(judge(&c).is_continuation);
        assert!(
            !judge(&case(Knowledge::NothingOpen, &[], UncoveredPolicy::Reject)).is_continuation
        );
    }

    #[test]
    fn uncovered_policy_parses_the_scenario_spellings() {
        assert_eq!(
            "reject".parse::<UncoveredPolicy>(),
            Ok(UncoveredPolicy::Reject)
        );
        assert_eq!(
            "run-error".parse::<UncoveredPolicy>(),
            Ok(UncoveredPolicy::RunError)
        );
        assert_eq!(
            "reinterrupt".parse::<UncoveredPolicy>(),
            Ok(UncoveredPolicy::Reinterrupt)
        );
        assert!("RunError".parse::<UncoveredPolicy>().is_err());
        assert_eq!(UncoveredPolicy::RunError.to_string(), "run-error");
    }
}
