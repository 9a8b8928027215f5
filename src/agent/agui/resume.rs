//! Resume judging: what a producer does with the `resume` list of a new run. Pure logic, no
//! HTTP, no clock of its own (the caller passes "now" in ms since the epoch, read from the
//! scenario clock).
//!
//! Rules (`docs/rules.md`, interrupts and resume):
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
//!   *discard* of an expired interrupt is accepted. Expired means `expiresAt <= now`
//!   ([`crate::clock::parse_rfc3339_ms`]; doubleagent judges only the `expiresAt` it emitted); an
//!   unparseable value never expires, as `new Date(x) <= now` is false in the reference client.
//! - RES-3: `payload` is the answer, `metadata` is envelope only and never read here.
//!
//! Used once per request, before the stream opens.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Serialize, Serializer};
use serde_json::Value;

use super::interrupt::{Interrupt, ResumeEntry, ResumeStatus};
use super::message::{Message, ToolCall};
use crate::clock::parse_rfc3339_ms;

mod gate;
pub use gate::{gate_for, Answer, Gate, SkipReason};

// --- Inputs ---

/// What the agent does when it finds an uncovered interrupt: the scenario's
/// `uncovered = "reject" | "run-error" | "reinterrupt"`.
pub use crate::scenario::agui::Uncovered as UncoveredPolicy;

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

// --- Outputs ---

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnrecognizedWhy {
    /// It names an interrupt this producer did not raise (PROD-2).
    NotRaised,
    /// The run continues no interrupted run (ERR-1).
    NoInterruptedRun,
}

/// The verdict on one resume entry, in input order: the interrupt it names, and what it is
/// (in the ledger `{"interrupt_id", "verdict": label}`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EntryVerdict {
    pub interrupt_id: String,
    #[serde(rename = "verdict")]
    pub kind: Verdict,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// `resolved` for an open, unexpired interrupt: `payload` is the answer.
    Answered { payload: Option<Value> },
    /// `cancelled`: explicitly discarded (allowed also when expired, RES-5).
    Discarded { expired: bool },
    /// PROD-2 / ERR-1: ignored, with a warning.
    Unrecognized { why: UnrecognizedWhy },
    /// RES-5: `resolved` for an interrupt whose `expiresAt` has passed.
    AnswersExpired { expires_at: String },
    /// A second entry for an interrupt already answered by an earlier entry. If it
    /// disagrees with the first one the interrupt counts as uncovered (nobody can tell
    /// which answer was meant).
    Duplicate { conflicting: bool },
}

impl Verdict {
    /// Short label for the ledger: `answered`, `discarded`, `unrecognized`,
    /// `answers-expired`, `duplicate`.
    pub fn label(&self) -> &'static str {
        match self {
            Verdict::Answered { .. } => "answered",
            Verdict::Discarded { .. } => "discarded",
            Verdict::Unrecognized { .. } => "unrecognized",
            Verdict::AnswersExpired { .. } => "answers-expired",
            Verdict::Duplicate { .. } => "duplicate",
        }
    }
}

impl Serialize for Verdict {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.label())
    }
}

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

#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    /// `parentRunId` set or a non-empty `resume` (PH-6: `on_continuation = "skip"`
    /// interrupts do not fire again). `@ag-ui/client@1.0.0` never sends `parentRunId`.
    pub is_continuation: bool,
    /// One verdict per entry, in input order.
    pub verdicts: Vec<EntryVerdict>,
    /// Known-open interrupts without a usable entry, in emission order; while there is one
    /// the run may not end `success` (INT-2 / PROD-3).
    pub uncovered: Vec<Uncovered>,
    pub warnings: Vec<Warning>,
    pub decision: Decision,
    /// The usable answers by interrupt id (conflicting ones left out).
    pub answers: BTreeMap<String, Answer>,
}

impl Judgement {
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

    /// The interrupts this input resumes: those its entries name and the agent recognizes
    /// (answered, discarded or not), then those it leaves open.
    pub fn resumed(&self) -> impl Iterator<Item = &str> {
        (self.verdicts.iter())
            .filter(|v| !matches!(v.kind, Verdict::Unrecognized { .. }))
            .map(|v| v.interrupt_id.as_str())
            .chain(self.uncovered.iter().map(|u| u.interrupt.id.as_str()))
    }
}

// --- Judging ---

/// Judges a resume list. See the module docs for the rules applied.
pub fn judge(case: &ResumeCase<'_>) -> Judgement {
    let is_continuation = case.parent_run_id.is_some() || !case.entries.is_empty();
    let open = known_open(case);
    let recognizable = recognizable(case, &open);
    let mut warnings = Vec::new();
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
    let read = read_entries(case, &recognizable, &mut warnings);
    let uncovered = uncovered(&open, &recognizable, &read);
    let decision = decide(&uncovered, case.policy);
    Judgement {
        is_continuation,
        verdicts: read.verdicts,
        uncovered,
        warnings,
        decision,
        answers: read.answers,
    }
}

/// Known-open interrupts, in emission order, de-duplicated by id: the checkpoint's, then
/// those the messages show.
fn known_open<'a>(case: &ResumeCase<'a>) -> Vec<&'a Interrupt> {
    let kept: &[Interrupt] = match case.knowledge {
        Knowledge::Checkpoint { interrupts, .. } => interrupts,
        _ => &[],
    };
    let mut open: Vec<&Interrupt> = Vec::new();
    for i in kept.iter().chain(case.known_open_from_messages) {
        if !open.iter().any(|o| o.id == i.id) {
            open.push(i);
        }
    }
    open
}

/// Interrupts an entry may name. A stateful producer takes answers only for what its
/// checkpoint holds: an open call it merely sees in the messages (of another thread, or from
/// before a reset) keeps the run from succeeding but is not something it asked on this
/// thread. A stateless producer has nothing else to go by.
fn recognizable<'a>(
    case: &ResumeCase<'a>,
    open: &[&'a Interrupt],
) -> BTreeMap<&'a str, &'a Interrupt> {
    let known: Vec<&Interrupt> = match case.knowledge {
        Knowledge::Checkpoint { interrupts, .. } => interrupts.iter().collect(),
        Knowledge::NothingOpen => Vec::new(),
        Knowledge::Stateless { raisable } => open.iter().copied().chain(raisable).collect(),
    };
    let mut recognizable = BTreeMap::new();
    for i in known {
        recognizable.entry(i.id.as_str()).or_insert(i);
    }
    recognizable
}

/// What the entries say, read one by one.
struct Read<'a> {
    verdicts: Vec<EntryVerdict>,
    /// Usable answers (conflicting ones removed).
    answers: BTreeMap<String, Answer>,
    /// Recognized interrupts answered (not discarded) after they expired.
    expired_answer: BTreeSet<&'a str>,
    /// Recognized interrupts answered more than once, differently.
    conflicting: BTreeSet<&'a str>,
}

/// One verdict per entry, in input order: unrecognized (PROD-2 / ERR-1), a duplicate (INT-3),
/// a discard, an answer to an expired interrupt (RES-5), or an answer.
fn read_entries<'a>(
    case: &ResumeCase<'a>,
    recognizable: &BTreeMap<&'a str, &'a Interrupt>,
    warnings: &mut Vec<Warning>,
) -> Read<'a> {
    let unrecognized_why = match case.knowledge {
        Knowledge::NothingOpen => UnrecognizedWhy::NoInterruptedRun,
        _ => UnrecognizedWhy::NotRaised,
    };
    let mut read = Read {
        verdicts: Vec::with_capacity(case.entries.len()),
        answers: BTreeMap::new(),
        expired_answer: BTreeSet::new(),
        conflicting: BTreeSet::new(),
    };
    let mut first_entry: BTreeMap<&str, &ResumeEntry> = BTreeMap::new();
    for entry in case.entries {
        let id = entry.interrupt_id.as_str();
        let mut warn = |rule, message| {
            let interrupt_id = Some(id.to_string());
            warnings.push(Warning {
                rule,
                message,
                interrupt_id,
            });
        };
        let kind = 'kind: {
            let Some(interrupt) = recognizable.get(id) else {
                match unrecognized_why {
                    UnrecognizedWhy::NotRaised => warn(
                        "PROD-2",
                        format!("resume entry '{id}' names an interrupt this agent did not raise; ignored"),
                    ),
                    UnrecognizedWhy::NoInterruptedRun => warn(
                        "ERR-1",
                        format!("resume entry '{id}' answers nothing: this run continues no interrupted run; ignored"),
                    ),
                }
                break 'kind Verdict::Unrecognized {
                    why: unrecognized_why,
                };
            };
            if let Some(first) = first_entry.get(id) {
                let agrees = first.status == entry.status && first.payload == entry.payload;
                if agrees {
                    let m =
                        format!("interrupt '{id}' is answered more than once; the repeats agree");
                    warn("INT-3", m);
                } else {
                    read.conflicting.insert(id);
                    let m = format!(
                        "interrupt '{id}' is answered more than once, differently; it stays open"
                    );
                    warn("INT-3", m);
                }
                break 'kind Verdict::Duplicate {
                    conflicting: !agrees,
                };
            }
            first_entry.insert(id, entry);
            let expired = is_expired(interrupt, case.now_ms);
            match entry.status {
                ResumeStatus::Cancelled => {
                    read.answers.insert(id.to_string(), Answer::Discarded);
                    Verdict::Discarded { expired }
                }
                ResumeStatus::Resolved if expired => {
                    read.expired_answer.insert(id);
                    let expires_at = interrupt.expires_at.clone().unwrap_or_default();
                    Verdict::AnswersExpired { expires_at }
                }
                ResumeStatus::Resolved => {
                    let payload = entry.payload.clone();
                    let answer = Answer::Resolved {
                        payload: payload.clone(),
                    };
                    read.answers.insert(id.to_string(), answer);
                    Verdict::Answered { payload }
                }
            }
        };
        let interrupt_id = id.to_string();
        read.verdicts.push(EntryVerdict { interrupt_id, kind });
    }
    for id in &read.conflicting {
        read.answers.remove(*id);
    }
    read
}

/// Known-open interrupts without a usable entry, plus any recognized interrupt whose only
/// answer came too late or contradicts itself.
fn uncovered(
    open: &[&Interrupt],
    recognizable: &BTreeMap<&str, &Interrupt>,
    read: &Read<'_>,
) -> Vec<Uncovered> {
    let mut uncovered: Vec<Uncovered> = Vec::new();
    for (n, i) in open.iter().chain(recognizable.values()).enumerate() {
        let id = i.id.as_str();
        let why = if read.conflicting.contains(id) {
            UncoveredWhy::ConflictingEntries
        } else if read.expired_answer.contains(id) {
            UncoveredWhy::AnsweredAfterExpiry
        } else if n < open.len() && !read.answers.contains_key(id) {
            UncoveredWhy::NoEntry
        } else {
            continue;
        };
        if !uncovered.iter().any(|u| u.interrupt.id == id) {
            let interrupt = Interrupt::clone(i);
            uncovered.push(Uncovered { interrupt, why });
        }
    }
    uncovered
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
    let answered: BTreeSet<&str> = messages.iter().filter_map(Message::answers).collect();
    let mut out: Vec<Interrupt> = Vec::new();
    for call in messages.iter().flat_map(Message::tool_calls) {
        if answered.contains(call.id.as_str()) {
            continue;
        }
        if let Some(i) = gate(call) {
            if !out.iter().any(|o| o.id == i.id) {
                out.push(i);
            }
        }
    }
    out
}
