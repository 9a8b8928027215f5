//! Fake AG-UI 1.0 agents: `POST /agents/NAME` with a `RunAgentInput` answers a
//! `text/event-stream` of one scripted run.
//!
//! A request goes through three stages:
//! 1. **Admission** ([`handle`]): method, `Accept`, the body parsed as a `RunAgentInput`
//!    ([`wire`]), its `protocolVersion`; anything wrong is an HTTP 4xx with a JSON body and no
//!    stream, recorded in the ledger (`event: "run-rejected"`). Unknown members are stripped with
//!    a warning (TanStack's known habits silently, for `client = "tanstack"`).
//! 2. **Judging** the resume list ([`resume::judge`]) against what the agent knows: with
//!    `resume = "stateful"` the thread's [`Checkpoint`] (its latest interrupted run, kept as a
//!    world extension so `/_admin/reset` forgets it), with `"stateless"` only the script and the
//!    messages (PROD-1). The decision picks the HTTP 409 (`uncovered = "reject"`), a stream opening
//!    with `RUN_ERROR` (`"run-error"`), or a run, and [`start_point`] says where in the script the
//!    run resumes: the boundary it paused at, after an answered frontend-tool pause, or the top.
//! 3. **The run** ([`run`]): the scripted agent loop with its interrupt batches, tool calls
//!    through [`crate::service`]'s action pipeline, and one ledger entry per fact (run start
//!    with its input, warnings, tool calls, violations, the outcome with every emitted event
//!    type). It is played in the request handler up to its first wait: a run that never waits
//!    answers its whole event stream at once ([`Reply::Ready`]); one that waits streams through
//!    a channel from its own task from then on ([`Reply::Stream`]).
//!
//! How a run is cancelled (INT-2): either scripted (`cancel_at = "<phase>"` on an iteration:
//! the run ends `RUN_FINISHED{outcome: cancelled}` at that boundary), or by the client going
//! away (aborting the request): the run stops at once, performs no further tool call, and the
//! ledger records the outcome `cancelled` with `cause: "client-disconnected"`.
//!
//! After a restart with `--journal`, [`restore()`] rebuilds the threads' checkpoints from the
//! ledger (`restore.rs`); a run streaming at the crash ends as a client abort would end it,
//! with `cause: "restart"`.

mod detail;
mod restore;
pub mod resume;
mod run;
mod scan;
pub mod wire;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};

use serde_json::{json, Map, Value};

use super::{AgentRequest, Ctx, Reply};
use crate::ledger::{AgentEvent, Record};
use crate::scenario::agui::{AgUiAgent, ClientKind, Phase, ResumeMode, ToolKind, Uncovered};
use crate::service::Response;
use crate::world::World;
use detail::Detail;
use resume::{Decision, Judgement, Knowledge, ResumeCase, UncoveredPolicy};
use wire::{Interrupt, Message, RunAgentInput, ToolCall, VersionVerdict};

/// Where in the script a run stands: an iteration and one of its boundaries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Boundary {
    pub iteration: usize,
    pub phase: Phase,
}

impl Boundary {
    /// As member `name` of a ledger detail (the same as [`Boundary::json`]).
    fn write(self, d: &mut Detail, name: &'static str) {
        d.raw(name, |out| {
            out.extend_from_slice(b"{\"iteration\":");
            detail::write_u64(out, self.iteration as u64);
            out.extend_from_slice(b",\"phase\":");
            wire::write_json_str(out, self.phase.as_str());
            out.push(b'}');
        });
    }

    fn json(self) -> Value {
        object([
            ("iteration", Value::from(self.iteration)),
            ("phase", Value::from(self.phase.as_str())),
        ])
    }
}

/// A tool call the agent made, as it travels from the run that proposed it to the run that
/// executes it.
#[derive(Clone, Debug)]
pub(crate) struct Call {
    pub id: String,
    /// Index into the script's tools.
    pub tool: usize,
    /// The scripted arguments (shared with the script).
    pub args: Arc<Value>,
    /// It ran (or was skipped with a result): never run it again.
    pub done: bool,
    /// The `TOOL_CALL_RESULT` content it got, to send again to a client that never heard it.
    pub result: Option<String>,
}

/// What a stateful agent keeps of a thread's latest interrupted run.
#[derive(Clone, Debug)]
pub(crate) struct Checkpoint {
    pub run_id: String,
    /// The interrupts as emitted (ids, `expiresAt`, bindings).
    pub interrupts: Vec<Interrupt>,
    pub at: Boundary,
    /// That iteration's tool calls, once proposed.
    pub calls: Vec<Call>,
    /// The agent state the run left (RES-6).
    pub state: Value,
    /// Answers given at this boundary by earlier continuations of the same pause (a
    /// re-interrupted batch is answered piecemeal): they still hold.
    pub answers: BTreeMap<String, resume::Answer>,
}

/// Per-world AG-UI state: open checkpoints by (agent, thread).
#[derive(Default)]
pub(crate) struct Threads {
    open: Mutex<HashMap<(String, String), Checkpoint>>,
}

impl Threads {
    fn lock(&self) -> MutexGuard<'_, HashMap<(String, String), Checkpoint>> {
        // The map holds plain values; a panic elsewhere cannot leave one half-written.
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(crate) fn store(&self, agent: &str, thread: &str, cp: Checkpoint) {
        self.lock()
            .insert((agent.to_string(), thread.to_string()), cp);
    }

    fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }
}

/// Rebuild a world's AG-UI threads from its ledger after a restart (see `restore.rs`):
/// each thread's open checkpoint as its last finished run left it; runs still streaming at the
/// crash end as if their client had gone away, recorded as `run-finished` with
/// `cause: "restart"`. Returns how many checkpoints are open.
pub fn restore(world: &Arc<World>) -> usize {
    restore::restore(world)
}

/// Where a run starts in the script.
#[derive(Clone, Debug)]
pub(crate) enum Start {
    /// Iteration 0, `beforeModel`.
    Top,
    /// The iteration after one whose frontend tool calls the input answers.
    After(usize),
    /// A boundary a previous run paused at; `calls` are that iteration's proposed tool calls
    /// when known.
    At {
        boundary: Boundary,
        calls: Option<Vec<Call>>,
    },
}

impl Start {
    /// As member `name` of a ledger detail (the same as [`Start::json`]).
    fn write(&self, d: &mut Detail, name: &'static str) {
        match self {
            Start::Top => d.raw(name, |out| {
                out.extend_from_slice(b"{\"iteration\":0,\"phase\":\"beforeModel\"}")
            }),
            Start::At { boundary, .. } => boundary.write(d, name),
            Start::After(_) => d.value(name, &self.json()),
        }
    }

    fn json(&self) -> Value {
        match self {
            Start::Top => object([
                ("iteration", Value::from(0)),
                ("phase", Value::from("beforeModel")),
            ]),
            Start::After(i) => json!({"after_frontend_tools_of_iteration": i}),
            Start::At { boundary, .. } => boundary.json(),
        }
    }
}

/// A warning for the stream (`CUSTOM` event) and the ledger.
#[derive(Clone, Debug)]
pub(crate) struct Notice {
    pub rule: String,
    pub message: String,
    pub details: Value,
}

impl Notice {
    fn new(rule: &str, message: impl Into<String>, details: Value) -> Notice {
        Notice {
            rule: rule.to_string(),
            message: message.into(),
            details,
        }
    }
}

impl From<Uncovered> for UncoveredPolicy {
    fn from(u: Uncovered) -> Self {
        match u {
            Uncovered::Reinterrupt => UncoveredPolicy::Reinterrupt,
            Uncovered::Reject => UncoveredPolicy::Reject,
            Uncovered::RunError => UncoveredPolicy::RunError,
        }
    }
}

/// Serve one request to an AG-UI agent.
pub async fn handle(ctx: Ctx<'_>, spec: &AgUiAgent, req: AgentRequest) -> Reply {
    let world = ctx.world.clone();
    // A copy: the run may outlive the call (and a shared count would be written by both
    // workers on every run).
    let name = ctx.name.to_string();
    // The common input is read straight from the bytes (`scan`), which also writes the text
    // the ledger keeps; anything else is parsed into a tree first, as the ledger keeps it.
    let scanned = (req.body.len() <= world.scenario.ledger_body_bytes)
        .then(|| scan::scan(&req.body))
        .flatten();
    let (input_json, reusable) = match scanned {
        Some(_) => (None, false),
        None => {
            let (v, reusable) = ledger_body(&world, &req.body);
            (Some(v), reusable)
        }
    };
    let reject = |status: u16, code: &str, message: String, extra: Value| {
        // A refusal of a scanned body (rare) builds the tree the ledger keeps after all.
        let input = match &input_json {
            Some(v) => v.clone(),
            None => ledger_body(&world, &req.body).0,
        };
        rejected(&world, &name, status, code, message, input, extra)
    };

    if !(req.path.is_empty() || req.path == "/") {
        return reject(
            404,
            "not_found",
            format!(
                "AG-UI agent \"{name}\" is served at /agents/{name} only, not at /agents/{name}{}",
                req.path
            ),
            Value::Null,
        );
    }
    if req.method != "POST" {
        let mut r = reject(
            405,
            "method_not_allowed",
            format!("AG-UI agent \"{name}\" takes POST with a RunAgentInput body"),
            Value::Null,
        );
        if let Reply::Full(resp) = &mut r {
            resp.headers.push(("allow".into(), "POST".into()));
        }
        return r;
    }
    let accept = req
        .headers
        .get(hyper::header::ACCEPT)
        .map(|v| String::from_utf8_lossy(v.as_bytes()));
    if !wire::accepts_event_stream(accept.as_deref()) {
        return reject(
            406,
            "not_acceptable",
            format!(
                "this agent answers text/event-stream; the request accepts only {}",
                accept.unwrap_or_default()
            ),
            Value::Null,
        );
    }
    let (parsed, ledger_text) = match scanned {
        Some(s) => (Some(s.input), Some(s.ledger_text)),
        None => (
            input_json
                .as_ref()
                .filter(|_| reusable)
                .and_then(RunAgentInput::from_parsed),
            None,
        ),
    };
    let mut input = match parsed.map_or_else(|| RunAgentInput::parse(&req.body), Ok) {
        Ok(i) => i,
        Err(e) => return reject(400, "invalid_input", e.message, Value::Null),
    };

    let mut notices = Vec::new();
    match input.version_verdict() {
        VersionVerdict::Accept => {}
        VersionVerdict::AcceptWithWarning(m) => {
            notices.push(Notice::new("protocol-version", m, Value::Null))
        }
        VersionVerdict::UnknownMajor(m) => {
            return reject(400, "unsupported_protocol_version", m, Value::Null)
        }
    }
    let unknown = input.unknown_members();
    let habits: Vec<&String> = unknown
        .iter()
        .filter(|p| spec.client == ClientKind::Tanstack && tanstack_habit(&input, p))
        .collect();
    let warned: Vec<&String> = unknown.iter().filter(|p| !habits.contains(p)).collect();
    if !warned.is_empty() {
        notices.push(Notice::new(
            "input",
            format!(
                "unknown RunAgentInput member(s) stripped: {}",
                warned
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            json!({"stripped": warned}),
        ));
    }
    input.strip_unknown();

    // Judge the resume list against what this agent knows about the thread.
    let threads = world.extension::<Threads>();
    let now_ms = world.clock.wall_ms(world.clock.now()) as i64;
    // What a stateless agent recognizes resume entries by: only entries need it.
    let raisable: Vec<Interrupt> = if input.resume_entries().is_empty() {
        Vec::new()
    } else {
        spec.interrupts.iter().map(plain_interrupt).collect()
    };
    let mut from_messages =
        resume::known_open_from_messages(&input.messages, |c| gated_interrupt(spec, c));
    // Only a stateful agent keeps checkpoints: a stateless one neither reads nor takes one.
    let stateful = spec.resume == ResumeMode::Stateful;
    let key = stateful.then(|| (name.clone(), input.thread_id.clone()));
    let (judgement, checkpoint) = {
        let mut open = key.as_ref().map(|_| threads.lock());
        let checkpoint = match (&open, &key) {
            (Some(open), Some(key)) => open.get(key).cloned(),
            _ => None,
        };
        if let Some(cp) = &checkpoint {
            // A call the messages show open may be gated by an approval given earlier in a
            // piecemeal batch: that one is answered, the checkpoint says which are not.
            from_messages.retain(|i| !cp.answers.contains_key(&i.id));
            if cp.run_id == input.run_id {
                drop(open);
                return reject(
                    409,
                    "run_closed",
                    format!("run \"{}\" ended interrupted and is closed; continue the thread with a new runId (INT-6)", cp.run_id),
                    json!({"thread_id": input.thread_id, "run_id": input.run_id}),
                );
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
        let j = resume::judge(&ResumeCase {
            knowledge,
            known_open_from_messages: &from_messages,
            entries: input.resume_entries(),
            parent_run_id: input.parent_run_id.as_deref(),
            now_ms,
            policy: spec.uncovered.into(),
        });
        // A run that goes ahead consumes the checkpoint: whatever it ends with replaces it.
        if matches!(j.decision, Decision::Proceed | Decision::Reinterrupt { .. }) {
            if let (Some(open), Some(key)) = (&mut open, &key) {
                open.remove(key);
            }
        }
        (j, checkpoint)
    };
    for w in &judgement.warnings {
        notices.push(Notice::new(
            w.rule,
            w.message.clone(),
            json!({"interruptId": w.interrupt_id}),
        ));
    }
    if let Some(cp) = &checkpoint {
        notices.extend(continuity_notices(cp, &input));
    }
    if let Decision::Reinterrupt { .. } = judgement.decision {
        // Say why the same interrupt comes back, rather than leave the consumer guessing.
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
            notices.push(Notice::new(
                rule,
                format!("interrupt \"{}\" is still open: it {why}", u.interrupt.id),
                json!({"interruptId": u.interrupt.id}),
            ));
        }
    }

    let start = start_point(spec, &input, checkpoint.as_ref(), &judgement);
    // Members in name order, the detail's own (its sort then has nothing to move).
    let mut started = Detail::new();
    started.bool("continuation", input.is_continuation());
    // The interrupted run whose checkpoint this run consumed: what a restart needs to tell
    // which checkpoints are still open (the `Threads` lock is not held across the append).
    if let (ResumeMode::Stateful, Some(cp), Decision::Proceed | Decision::Reinterrupt { .. }) =
        (spec.resume, &checkpoint, &judgement.decision)
    {
        started.str("continues", &cp.run_id);
    }
    started.str("decision", decision_label(&judgement.decision));
    started.u64("messages", input.messages.len() as u64);
    started.opt_str("parent_run_id", input.parent_run_id.as_deref());
    started.opt_str("protocol_version", input.protocol_version.as_deref());
    match input.resume_entries() {
        [] => started.raw("resume", |out| out.extend_from_slice(b"[]")),
        // Through a tree, as the entries' own order of members is not the ledger's.
        entries => started.value("resume", &json!(entries)),
    }
    started.str("run_id", &input.run_id);
    start.write(&mut started, "start");
    match &input.state {
        Some(state) => started.value("state", state),
        None => started.raw("state", |out| out.extend_from_slice(b"{}")),
    }
    started.str("thread_id", &input.thread_id);
    started.raw("uncovered", |out| {
        out.push(b'[');
        for (k, u) in judgement.uncovered.iter().enumerate() {
            if k > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"{\"interrupt_id\":");
            wire::write_json_str(out, &u.interrupt.id);
            out.extend_from_slice(b",\"why\":");
            wire::write_json_str(out, &format!("{:?}", u.why));
            out.push(b'}');
        }
        out.push(b']');
    });
    started.raw("verdicts", |out| {
        out.push(b'[');
        for (k, v) in judgement.verdicts.iter().enumerate() {
            if k > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"{\"interrupt_id\":");
            wire::write_json_str(out, v.interrupt_id());
            out.extend_from_slice(b",\"verdict\":");
            wire::write_json_str(out, v.label());
            out.push(b'}');
        }
        out.push(b']');
    });
    if let Decision::Reject {
        status,
        code,
        message,
    } = &judgement.decision
    {
        // Rare: the refusal's detail merges the run's into its own, as a tree.
        let started = started.finish(|b| serde_json::from_slice(b).unwrap_or(Value::Null));
        return reject(*status, code, message.clone(), started);
    }

    let started_at = world.clock.now();
    // The body as the ledger keeps it: the scan's text, or the tree's.
    let body = match (ledger_text, input_json) {
        (Some(text), _) => text,
        (None, json) => serde_json::to_vec(&json.unwrap_or(Value::Null)).unwrap_or_default(),
    };
    let path = ["/agents/", name.as_str()].concat();
    started.finish(|detail| {
        let ev = AgentEvent {
            agent: &name,
            event: "run-started",
            at: started_at,
            work_id: Some(&input.run_id),
            revision: None,
            detail,
        };
        world
            .lock()
            .ledger
            .append_agent_request(&ev, "POST", &path, &body)
    });

    let outlet = run::Outlet::default();
    // Only a run that goes ahead got here, so a checkpoint it saw is one it consumed.
    let consumed = checkpoint.filter(|_| spec.resume == ResumeMode::Stateful);
    // Boxed apart from its future: an async fn's future holds its arguments twice (as passed
    // and as moved into its body), so a run passed by value doubled the future's size.
    let run = Box::new(run::Run::new(
        world.clone(),
        name,
        spec.clone(),
        run::Admitted {
            input,
            judgement,
            consumed,
            started_at,
        },
        outlet.clone(),
    ));
    // Play the run right here up to its first wait. Most runs never wait: then the whole stream
    // is ready before the response starts, and goes out as one chunk, with no task spawned, no
    // channel and no wake-ups between the run and the connection. A run that does wait (a
    // scripted delay, a delayed tool response, a late error) opens the stream's channel,
    // hands over what it emitted so far, and goes on in its own task (which polls it again at
    // once, with a waker that counts).
    let mut run = Box::pin(run.go(start, notices));
    let whole = match run.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(whole) => whole,
        Poll::Pending => {
            tokio::spawn(run);
            None
        }
    };
    let status = 200;
    let headers = vec![
        (
            "content-type".into(),
            wire::EVENT_STREAM_CONTENT_TYPE.into(),
        ),
        ("cache-control".into(), "no-cache".into()),
    ];
    let rx = outlet.lock().unwrap_or_else(|e| e.into_inner()).take();
    match (whole, rx) {
        (_, Some(body)) => Reply::Stream {
            status,
            headers,
            body,
        },
        (whole, None) => Reply::Ready {
            status,
            headers,
            // A run that did not end here opened its channel first, wherever it paused: the
            // only way to get here without one is to have ended with the whole body.
            body: whole.unwrap_or_default(),
        },
    }
}

/// A JSON object of these members (built straight, without `json!`'s serializer round trip
/// per member: ledger details are built on every run).
pub(crate) fn object<const N: usize>(members: [(&str, Value); N]) -> Value {
    let mut map = Map::new();
    for (k, v) in members {
        // One by one: a few members fit one tree node, which beats sorting them first.
        map.insert(k.to_string(), v);
    }
    Value::Object(map)
}

/// A refusal before any stream: HTTP `status` with a JSON body, recorded as `run-rejected`.
fn rejected(
    world: &World,
    agent: &str,
    status: u16,
    code: &str,
    message: String,
    input: Value,
    extra: Value,
) -> Reply {
    let mut detail = json!({"status": status, "code": code, "error": message});
    if let (Value::Object(d), Value::Object(x)) = (&mut detail, extra) {
        for (k, v) in x {
            d.entry(k).or_insert(v);
        }
    }
    let mut rec = Record::agent_event(agent, "run-rejected", world.clock.now(), detail);
    rec.method = "POST".into();
    rec.path = format!("/agents/{agent}");
    rec.work_id = input
        .get("runId")
        .and_then(Value::as_str)
        .map(str::to_string);
    rec.body = input;
    rec.response.status = Some(status);
    world.lock().ledger.append(rec);
    Reply::Full(Response::json(
        status,
        &json!({"error": message, "code": code, "status": status}),
    ))
}

/// What the ledger keeps of a request body: its JSON, or (a prefix of) its text. With it,
/// whether that JSON is the whole body's and repeats no member name (so the input may be
/// read from it: [`RunAgentInput::from_parsed`]).
fn ledger_body(world: &World, body: &[u8]) -> (Value, bool) {
    if body.is_empty() {
        return (Value::Null, false);
    }
    let cap = world.scenario.ledger_body_bytes;
    match wire::parse_json(body) {
        Ok((v, repeats)) if body.len() <= cap => (v, !repeats),
        _ => (
            Value::String(String::from_utf8_lossy(&body[..body.len().min(cap)]).into_owned()),
            false,
        ),
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

/// A declared interrupt as a stateless agent can rebuild it: no `expiresAt` (it does not keep
/// the moment it asked), no `toolCallId`.
pub(crate) fn plain_interrupt(d: &crate::scenario::agui::InterruptSpec) -> Interrupt {
    let mut i = Interrupt::new(d.key.clone(), d.reason.clone());
    i.message = d.message.clone();
    i.response_schema = d.response_schema.clone();
    i.subagent_run_id = d.subagent_run_id.clone();
    i
}

/// Tool call ids are `call-<iteration>-<k>-<runId>`: unique per thread (the run id), and
/// readable back into a script position by an agent that keeps nothing.
pub(crate) fn call_id(iteration: usize, k: usize, run_id: &str) -> String {
    // Piece by piece: made for every proposed call, and `format!` costs several times more.
    let mut id = String::with_capacity(run_id.len() + 16);
    id.push_str("call-");
    push_usize(&mut id, iteration);
    id.push('-');
    push_usize(&mut id, k);
    id.push('-');
    id.push_str(run_id);
    id
}

/// `n` in decimal, appended.
pub(crate) fn push_usize(out: &mut String, n: usize) {
    let mut buf = [0u8; 20];
    // Digits only: ASCII.
    out.push_str(std::str::from_utf8(detail::digits(n as u64, &mut buf)).unwrap_or_default());
}

pub(crate) fn parse_call_id(id: &str) -> Option<(usize, usize)> {
    let mut parts = id.splitn(4, '-');
    if parts.next()? != "call" {
        return None;
    }
    let i = parts.next()?.parse().ok()?;
    let k = parts.next()?.parse().ok()?;
    parts.next()?;
    Some((i, k))
}

/// PROD-3's second source: a call in the messages that this script gates with an approval at
/// `beforeTools` (a backend tool; a frontend call awaiting the application is not an interrupt).
fn gated_interrupt(spec: &AgUiAgent, call: &ToolCall) -> Option<Interrupt> {
    let (i, k) = parse_call_id(&call.id)?;
    let scripted = spec.iterations.get(i)?.tool_calls.get(k)?;
    let tool = spec.tools.get(scripted.tool)?;
    if tool.name != call.function.name || matches!(tool.kind, ToolKind::Frontend) {
        return None;
    }
    let d = spec
        .interrupts_at(i, Phase::BeforeTools)
        .find(|d| d.tool == Some(scripted.tool))?;
    let mut it = plain_interrupt(d);
    it.tool_call_id = Some(call.id.clone());
    Some(it)
}

/// Tool call ids that have a tool result message in the input.
pub(crate) fn answered_calls(messages: &[Message]) -> BTreeSet<String> {
    messages
        .iter()
        .filter_map(|m| match m {
            Message::Tool(t) => Some(t.tool_call_id.clone()),
            _ => None,
        })
        .collect()
}

/// The tool calls of `iteration` as the messages carry them (the latest assistant message with
/// such calls), with the scripted tool and arguments; `None` if the messages have none.
fn calls_from_messages(
    spec: &AgUiAgent,
    messages: &[Message],
    iteration: usize,
) -> Option<Vec<Call>> {
    let answered = answered_calls(messages);
    let it = spec.iterations.get(iteration)?;
    messages.iter().rev().find_map(|m| {
        let Message::Assistant(a) = m else {
            return None;
        };
        let calls: Vec<Call> = a
            .tool_calls
            .iter()
            .flatten()
            .filter_map(|c| {
                let (i, k) = parse_call_id(&c.id)?;
                let scripted = it.tool_calls.get(k)?;
                (i == iteration).then(|| Call {
                    id: c.id.clone(),
                    tool: scripted.tool,
                    args: scripted.args.clone(),
                    done: answered.contains(&c.id),
                    result: None,
                })
            })
            .collect();
        (!calls.is_empty()).then_some(calls)
    })
}

/// Where the run starts. A consumed checkpoint says it exactly; otherwise the first interrupt
/// this continuation answers (or leaves open) that the script declares gives the boundary; an
/// input answering the frontend tool calls of the latest scripted turn continues after it;
/// anything else plays the script from the top.
fn start_point(
    spec: &AgUiAgent,
    input: &RunAgentInput,
    checkpoint: Option<&Checkpoint>,
    j: &Judgement,
) -> Start {
    let answered = answered_calls(&input.messages);
    if let Some(cp) = checkpoint {
        let calls = cp
            .calls
            .iter()
            .cloned()
            .map(|mut c| {
                c.done |= answered.contains(&c.id);
                c
            })
            .collect::<Vec<_>>();
        return Start::At {
            boundary: cp.at,
            calls: (cp.at.phase >= Phase::BeforeTools).then_some(calls),
        };
    }
    let resumed = j
        .verdicts
        .iter()
        .filter(|v| !matches!(v, resume::EntryVerdict::Unrecognized { .. }))
        .map(|v| v.interrupt_id().to_string())
        .chain(j.uncovered.iter().map(|u| u.interrupt.id.clone()));
    for id in resumed {
        if let Some(d) = spec.interrupt(&id) {
            let boundary = Boundary {
                iteration: d.iteration,
                phase: d.phase,
            };
            let calls = if d.phase >= Phase::BeforeTools {
                calls_from_messages(spec, &input.messages, d.iteration)
            } else {
                None
            };
            return Start::At { boundary, calls };
        }
    }
    // A frontend-tool pause answered: the latest assistant message with scripted calls has
    // frontend calls, all with results, and the user has not spoken since.
    let last = input
        .messages
        .iter()
        .enumerate()
        .rev()
        .find_map(|(pos, m)| match m {
            Message::Assistant(a) => {
                let ids: Vec<(usize, usize, &str)> = a
                    .tool_calls
                    .iter()
                    .flatten()
                    .filter_map(|c| parse_call_id(&c.id).map(|(i, k)| (i, k, c.id.as_str())))
                    .collect();
                (!ids.is_empty()).then_some((pos, ids))
            }
            _ => None,
        });
    if let Some((pos, ids)) = last {
        let user_since = input.messages[pos + 1..]
            .iter()
            .any(|m| matches!(m, Message::User(_)));
        let frontend: Vec<&(usize, usize, &str)> = ids
            .iter()
            .filter(|(i, k, _)| {
                spec.iterations
                    .get(*i)
                    .and_then(|it| it.tool_calls.get(*k))
                    .and_then(|c| spec.tools.get(c.tool))
                    .is_some_and(|t| matches!(t.kind, ToolKind::Frontend))
            })
            .collect();
        if !user_since
            && !frontend.is_empty()
            && frontend.iter().all(|(_, _, id)| answered.contains(*id))
        {
            return Start::After(frontend[0].0);
        }
    }
    Start::Top
}

/// RES-6: a continuation of the same thread must carry the state the interrupted run left and
/// the tool calls it proposed.
fn continuity_notices(cp: &Checkpoint, input: &RunAgentInput) -> Vec<Notice> {
    let mut out = Vec::new();
    let state = input.state_or_default();
    if state != cp.state {
        out.push(Notice::new(
            "RES-6",
            format!(
                "the input's state differs from the state run \"{}\" left",
                cp.run_id
            ),
            json!({"expected": cp.state, "received": state}),
        ));
    }
    let carried: BTreeSet<&str> = input
        .messages
        .iter()
        .filter_map(|m| match m {
            Message::Assistant(a) => a.tool_calls.as_ref(),
            _ => None,
        })
        .flatten()
        .map(|c| c.id.as_str())
        .collect();
    let missing: Vec<&str> = cp
        .calls
        .iter()
        .map(|c| c.id.as_str())
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
