//! Admission of an AG-UI request: the HTTP checks, reading the `RunAgentInput` and its
//! notices, judging its resume list, where the run starts, and the `run-started` entry. A
//! [`Refusal`] is an HTTP 4xx with a JSON body and no stream, recorded as `run-rejected`.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::{json, Value};

use super::input::{self, RunAgentInput, VersionVerdict};
use super::message::Message;
use super::resume::{self, Decision, Judgement, Knowledge, ResumeCase};
use super::start::{gated_interrupt, plain_interrupt, start_point};
use super::{sse, Checkpoint, Notice, Start, Threads};
use crate::agent::{AgentRequest, Reply};
use crate::ledger::Record;
use crate::revision::Revision;
use crate::scenario::agui::{AgUiAgent, ClientKind, ResumeMode};
use crate::service::Response;
use crate::world::World;

/// What admission hands a run.
pub(super) struct Admitted {
    pub input: RunAgentInput,
    pub judgement: Judgement,
    pub consumed: Option<Checkpoint>,
    pub start: Start,
    pub notices: Vec<Notice>,
    pub started_at: std::time::Duration,
    /// The orchestrator's revision the run was started under (see [`run_revision`]).
    pub revision: Option<Revision>,
    /// What its tool call ids end with ([`Threads::call_tag`]).
    pub call_tag: String,
}

/// Calls already settled on the thread, by id, with their result content once known.
pub(super) type Settled = BTreeMap<String, Option<String>>;

/// A request refused before any stream.
pub(super) struct Refusal {
    status: u16,
    code: String,
    message: String,
    /// More members for the ledger detail (an object, or `null` for none).
    extra: Value,
}

impl Refusal {
    fn new(status: u16, code: &str, message: String) -> Refusal {
        Refusal {
            status,
            code: code.to_string(),
            message,
            extra: Value::Null,
        }
    }

    /// Record it as `run-rejected` (with the body as the ledger keeps it) and answer it.
    pub(super) fn reply(self, world: &World, agent: &str, input: Value) -> Reply {
        let (status, code, message) = (self.status, self.code, self.message);
        let mut detail = json!({"status": status, "code": code, "error": message});
        if let (Value::Object(d), Value::Object(x)) = (&mut detail, self.extra) {
            for (k, v) in x {
                d.entry(k).or_insert(v);
            }
        }
        // Timed when appended.
        let mut rec = Record::agent_event(agent, "run-rejected", std::time::Duration::ZERO, detail);
        rec.method = "POST".into();
        rec.path = format!("/agents/{agent}");
        rec.work_id = input
            .get("runId")
            .and_then(Value::as_str)
            .map(str::to_string);
        rec.body = input.into();
        rec.response.status = Some(status);
        world.append_now(rec);
        let mut resp = Response::json(
            status,
            &json!({"error": message, "code": code, "status": status}),
        );
        if status == 405 {
            resp.headers.push(("allow".into(), "POST".into()));
        }
        Reply::Full(resp)
    }
}

/// What the ledger keeps of a request body: its JSON, or (a prefix of) its text. With it,
/// whether that JSON is the whole body's and repeats no member name (so the input may be read
/// from it: [`RunAgentInput::from_parsed`]).
pub(super) struct LedgerBody {
    pub json: Value,
    reusable: bool,
}

impl LedgerBody {
    pub(super) fn read(world: &World, body: &[u8]) -> LedgerBody {
        if body.is_empty() {
            return LedgerBody {
                json: Value::Null,
                reusable: false,
            };
        }
        let cap = world.scenario.ledger_body_bytes;
        match input::parse_json(body) {
            Ok((json, repeats)) if body.len() <= cap => LedgerBody {
                json,
                reusable: !repeats,
            },
            _ => LedgerBody {
                json: Value::String(
                    String::from_utf8_lossy(&body[..body.len().min(cap)]).into_owned(),
                ),
                reusable: false,
            },
        }
    }
}

/// Every step of admission, in order; the first refusal ends it.
pub(super) fn admit(
    world: &World,
    name: &str,
    spec: &AgUiAgent,
    req: &AgentRequest,
    body: &mut LedgerBody,
) -> Result<Admitted, Refusal> {
    check_request(name, req)?;
    let mut input = read_input(req, body)?;
    let mut notices = input_notices(spec, &mut input)?;
    let (judgement, checkpoint, ran) = judge_resume(world, name, spec, &input)?;
    notices.extend(judgement_notices(&judgement, checkpoint.as_ref(), &input));
    let start = start_point(spec, &input, checkpoint.as_ref(), &judgement, &ran);
    let detail = started_detail(&input, &judgement, checkpoint.as_ref(), &start);
    if let Decision::Reject {
        status,
        code,
        message,
    } = &judgement.decision
    {
        // The refusal's detail merges the run's into its own.
        let mut refusal = Refusal::new(*status, code, message.clone());
        refusal.extra = serde_json::to_value(&detail).unwrap_or_default();
        return Err(refusal);
    }
    let started_at = world.clock.now();
    let revision = run_revision(req, &input);
    let threads = world.extension::<Threads>();
    let call_tag = threads.call_tag(name, &input.run_id, &input.thread_id);
    let mut rec = Record::agent_event(name, "run-started", started_at, detail);
    rec.work_id = Some(input.run_id.clone());
    rec.revision = revision.clone();
    rec.method = "POST".into();
    rec.path = ["/agents/", name].concat();
    // Admitted: the tree is the ledger's now (a refusal would have needed it).
    rec.body = std::mem::take(&mut body.json).into();
    world.lock().ledger.append(rec);
    // Only a run that goes ahead got here, so a checkpoint it saw (only a stateful agent reads
    // one) is one it consumed.
    Ok(Admitted {
        input,
        judgement,
        consumed: checkpoint,
        start,
        notices,
        started_at,
        revision,
        call_tag,
    })
}

/// The revision a run is started under (REC-6, ACC-2), read as every revision is:
/// `forwardedProps.revision` (AG-UI's place for what the client passes through), else an
/// `X-Revision` header.
fn run_revision(req: &AgentRequest, input: &RunAgentInput) -> Option<Revision> {
    input
        .forwarded_props
        .as_ref()
        .and_then(|p| p.get("revision"))
        .and_then(Revision::of)
        .or_else(|| {
            req.headers
                .get("x-revision")
                .map(|v| Revision::parse(&crate::service::header_text(v)))
        })
}

/// The HTTP side: the agent's own path, `POST`, and an `Accept` that admits the stream.
fn check_request(name: &str, req: &AgentRequest) -> Result<(), Refusal> {
    if req.too_large {
        let message = "request body too large: over the scenario's max_body_bytes";
        return Err(Refusal::new(413, "too_large", message.into()));
    }
    if !(req.path.is_empty() || req.path == "/") {
        return Err(Refusal::new(
            404,
            "not_found",
            format!(
                "AG-UI agent \"{name}\" is served at /agents/{name} only, not at /agents/{name}{}",
                req.path
            ),
        ));
    }
    if req.method != "POST" {
        return Err(Refusal::new(
            405,
            "method_not_allowed",
            format!("AG-UI agent \"{name}\" takes POST with a RunAgentInput body"),
        ));
    }
    let accept = req
        .headers
        .get(hyper::header::ACCEPT)
        .map(|v| String::from_utf8_lossy(v.as_bytes()));
    if !sse::accepts_event_stream(accept.as_deref()) {
        return Err(Refusal::new(
            406,
            "not_acceptable",
            format!(
                "this agent answers text/event-stream; the request accepts only {}",
                accept.unwrap_or_default()
            ),
        ));
    }
    Ok(())
}

/// The body as a `RunAgentInput`: from the tree already parsed for the ledger when that is
/// the whole body's, else from the bytes (whose error says where it went wrong).
fn read_input(req: &AgentRequest, body: &LedgerBody) -> Result<RunAgentInput, Refusal> {
    let parsed = Some(&body.json)
        .filter(|_| body.reusable)
        .and_then(RunAgentInput::from_parsed);
    parsed
        .map_or_else(|| RunAgentInput::parse(&req.body), Ok)
        .map_err(|e| Refusal::new(400, "invalid_input", e.message))
}

/// The declared protocol version judged (another major is refused), and unknown members
/// stripped with a warning (TanStack's known habits silently, for `client = "tanstack"`).
fn input_notices(spec: &AgUiAgent, input: &mut RunAgentInput) -> Result<Vec<Notice>, Refusal> {
    let mut notices = Vec::new();
    match input.version_verdict() {
        VersionVerdict::Accept => {}
        VersionVerdict::AcceptWithWarning(m) => {
            notices.push(Notice::new("protocol-version", m, Value::Null))
        }
        VersionVerdict::UnknownMajor(m) => {
            return Err(Refusal::new(400, "unsupported_protocol_version", m))
        }
    }
    let warned: Vec<String> = input
        .strip_unknown()
        .into_iter()
        .filter(|p| !(spec.client == ClientKind::Tanstack && tanstack_habit(input, p)))
        .collect();
    if !warned.is_empty() {
        let message = format!(
            "unknown RunAgentInput member(s) stripped: {}",
            warned.join(", ")
        );
        notices.push(Notice::new("input", message, json!({"stripped": warned})));
    }
    Ok(notices)
}

/// Members `@tanstack/ai-client` always sends that the 1.0 schema does not know: the legacy
/// `data` mirror of `forwardedProps`, and a `name` on tool messages.
fn tanstack_habit(input: &RunAgentInput, path: &str) -> bool {
    if path == "data" {
        return true;
    }
    path.strip_prefix("messages[")
        .and_then(|r| r.strip_suffix("].name"))
        .and_then(|i| i.parse::<usize>().ok())
        .and_then(|i| input.messages.get(i))
        .is_some_and(|m| matches!(m, Message::Tool(_)))
}

/// Judge the resume list against what this agent knows about the thread: with
/// `resume = "stateful"` its open checkpoint, with `"stateless"` only the script and the
/// messages (PROD-1). A run that goes ahead consumes the checkpoint, under the same lock.
/// Also the calls of the messages a stateful agent already settled on the thread, with their
/// results: a client that never heard them still shows them open.
fn judge_resume(
    world: &World,
    name: &str,
    spec: &AgUiAgent,
    input: &RunAgentInput,
) -> Result<(Judgement, Option<Checkpoint>, Settled), Refusal> {
    let threads = world.extension::<Threads>();
    let now_ms = world.clock.wall_ms(world.clock.now()) as i64;
    // What a stateless agent recognizes resume entries by: only entries need it.
    let raisable: Vec<_> = if input.resume_entries().is_empty() {
        Vec::new()
    } else {
        spec.interrupts.iter().map(plain_interrupt).collect()
    };
    let mut from_messages =
        resume::known_open_from_messages(&input.messages, |c| gated_interrupt(spec, c));
    // Only a stateful agent keeps checkpoints: a stateless one neither reads nor takes one.
    let stateful = spec.resume == ResumeMode::Stateful;
    let key = (name.to_string(), input.thread_id.clone());
    let mut open = stateful.then(|| threads.lock());
    let checkpoint = open.as_ref().and_then(|m| m.open.get(&key).cloned());
    let ran: Settled = match open.as_ref().and_then(|m| m.settled.get(&key)) {
        Some(done) => (input.messages.iter().flat_map(Message::tool_calls))
            .filter_map(|c| Some((c.id.clone(), done.get(&c.id)?.clone())))
            .collect(),
        None => Settled::new(),
    };
    // A call that already ran on this thread is not open, whatever the messages say.
    from_messages.retain(|i| !i.tool_call_id.as_ref().is_some_and(|c| ran.contains_key(c)));
    if let Some(cp) = &checkpoint {
        // A call the messages show open may be gated by an approval given earlier in a
        // piecemeal batch: that one is answered, the checkpoint says which are not.
        from_messages.retain(|i| !cp.answers.contains_key(&i.id));
        if cp.run_id == input.run_id {
            let mut refusal = Refusal::new(
                409,
                "run_closed",
                format!("run \"{}\" ended interrupted and is closed; continue the thread with a new runId (INT-6)", cp.run_id),
            );
            refusal.extra = json!({"thread_id": input.thread_id, "run_id": input.run_id});
            return Err(refusal);
        }
    }
    let knowledge = match (spec.resume, &checkpoint) {
        (ResumeMode::Stateless, _) => Knowledge::Stateless {
            raisable: &raisable,
        },
        (ResumeMode::Stateful, Some(cp)) => Knowledge::Checkpoint {
            run_id: &cp.run_id,
            interrupts: &cp.interrupts,
        },
        (ResumeMode::Stateful, None) => Knowledge::NothingOpen,
    };
    let judgement = resume::judge(&ResumeCase {
        knowledge,
        known_open_from_messages: &from_messages,
        entries: input.resume_entries(),
        parent_run_id: input.parent_run_id.as_deref(),
        now_ms,
        policy: spec.uncovered,
    });
    if matches!(
        judgement.decision,
        Decision::Proceed | Decision::Reinterrupt { .. }
    ) {
        if let Some(open) = &mut open {
            open.open.remove(&key);
        }
    }
    Ok((judgement, checkpoint, ran))
}

/// The judgement's warnings, RES-6's continuity checks, and why each still-open interrupt of a
/// re-interrupted batch comes back (rather than leave the consumer guessing).
fn judgement_notices(
    judgement: &Judgement,
    checkpoint: Option<&Checkpoint>,
    input: &RunAgentInput,
) -> Vec<Notice> {
    let mut notices: Vec<Notice> = judgement
        .warnings
        .iter()
        .map(|w| {
            let details = json!({"interruptId": w.interrupt_id});
            Notice::new(w.rule, w.message.clone(), details)
        })
        .collect();
    if let Some(cp) = checkpoint {
        notices.extend(continuity_notices(cp, input));
    }
    if let Decision::Reinterrupt { .. } = judgement.decision {
        for u in &judgement.uncovered {
            let (rule, why) = match u.why {
                resume::UncoveredWhy::NoEntry => (
                    "RES-4",
                    "has no resume entry (omission is not a discard)".to_string(),
                ),
                resume::UncoveredWhy::AnsweredAfterExpiry => (
                    "RES-5",
                    format!(
                        "was answered after it expired at {}; only a discard is accepted now",
                        u.interrupt.expires_at.as_deref().unwrap_or("?")
                    ),
                ),
                resume::UncoveredWhy::ConflictingEntries => {
                    ("INT-3", "has contradictory resume entries".to_string())
                }
            };
            let message = format!("interrupt \"{}\" is still open: it {why}", u.interrupt.id);
            let details = json!({"interruptId": u.interrupt.id});
            notices.push(Notice::new(rule, message, details));
        }
    }
    notices
}

/// RES-6: a continuation of the same thread must carry the state the interrupted run left and
/// the tool calls it proposed.
fn continuity_notices(cp: &Checkpoint, input: &RunAgentInput) -> Vec<Notice> {
    let mut out = Vec::new();
    let state = input.state_or_default();
    if state != cp.state {
        let message = format!(
            "the input's state differs from the state run \"{}\" left",
            cp.run_id
        );
        let details = json!({"expected": cp.state, "received": state});
        out.push(Notice::new("RES-6", message, details));
    }
    let carried: BTreeSet<&str> = (input.messages.iter().flat_map(Message::tool_calls))
        .map(|c| c.id.as_str())
        .collect();
    let missing: Vec<&str> = (cp.calls.iter().map(|c| c.id.as_str()))
        .filter(|id| !carried.contains(id))
        .collect();
    if !missing.is_empty() {
        out.push(Notice::new(
            "RES-6",
            format!(
                "the input's messages lack the tool call(s) run \"{}\" proposed: {}",
                cp.run_id,
                missing.join(", ")
            ),
            json!({"missing": missing}),
        ));
    }
    out
}

/// The `run-started` entry's detail, borrowed from the input; fields in name order, as earlier
/// ledgers have them.
#[derive(Serialize)]
struct StartedDetail<'a> {
    continuation: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    continues: Option<&'a str>,
    decision: &'static str,
    messages: usize,
    parent_run_id: &'a Option<String>,
    protocol_version: &'a Option<String>,
    resume: &'a [super::interrupt::ResumeEntry],
    run_id: &'a str,
    start: &'a Start,
    state: Cow<'a, Value>,
    thread_id: &'a str,
    uncovered: Vec<Uncovered<'a>>,
    verdicts: &'a [resume::EntryVerdict],
}

#[derive(Serialize)]
struct Uncovered<'a> {
    interrupt_id: &'a str,
    why: String,
}

/// The `run-started` entry's detail: the input's facts, the judgement and where the run starts.
fn started_detail<'a>(
    input: &'a RunAgentInput,
    judgement: &'a Judgement,
    checkpoint: Option<&'a Checkpoint>,
    start: &'a Start,
) -> StartedDetail<'a> {
    // The interrupted run whose checkpoint this run consumed: what a restart needs to tell
    // which checkpoints are still open (the `Threads` lock is not held across the append).
    let continues = match (checkpoint, &judgement.decision) {
        (Some(cp), Decision::Proceed | Decision::Reinterrupt { .. }) => Some(cp.run_id.as_str()),
        _ => None,
    };
    StartedDetail {
        continuation: input.is_continuation(),
        continues,
        decision: decision_label(&judgement.decision),
        messages: input.messages.len(),
        parent_run_id: &input.parent_run_id,
        protocol_version: &input.protocol_version,
        resume: input.resume_entries(),
        run_id: &input.run_id,
        start,
        state: match &input.state {
            Some(s) => Cow::Borrowed(s),
            None => Cow::Owned(Value::Object(serde_json::Map::new())),
        },
        thread_id: &input.thread_id,
        uncovered: (judgement.uncovered.iter())
            .map(|u| Uncovered {
                interrupt_id: &u.interrupt.id,
                why: format!("{:?}", u.why),
            })
            .collect(),
        verdicts: &judgement.verdicts,
    }
}

fn decision_label(d: &Decision) -> &'static str {
    match d {
        Decision::Proceed => "proceed",
        Decision::Reject { .. } => "reject",
        Decision::RunError { .. } => "run-error",
        Decision::Reinterrupt { .. } => "reinterrupt",
    }
}
