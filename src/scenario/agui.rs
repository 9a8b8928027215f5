//! The scenario model of an AG-UI agent (`[agents.NAME]` with `protocol = "ag-ui"`): its raw TOML
//! shape, validation against the scenario's services, and the compiled [`AgUiAgent`] script the
//! engine in `agent::agui` plays.
//!
//! A script is a list of *iterations* (scripted model turns: text and/or tool calls), the tools
//! they name (a fake-service route, or *frontend* tools left to the application), and the
//! *interrupts* raised at an iteration's four boundaries (PH-1..PH-4), all checked at load.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{
    check_header, check_pointer, did_you_mean, find_route, sub_table, Dur, Issues, Service,
};

/// The four boundaries of one agent iteration, in the order an iteration passes them; named
/// as in scenarios and on the wire (`beforeTools`).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[serde(rename_all = "camelCase")]
pub enum Phase {
    /// Before the model call: the conversation so far, no assistant text yet (PH-1).
    BeforeModel,
    /// The model stream finished; its tool calls are not in the messages yet (PH-2).
    AfterModel,
    /// The assistant's tool calls are in the messages; no tool has run (PH-3).
    BeforeTools,
    /// Tools ran and their results are in the messages: side effects happened (PH-4).
    AfterTools,
}

/// `resume = "stateful" | "stateless"` (PROD-1).
#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum ResumeMode {
    /// Keeps each thread's latest interrupted run (its open interrupts, where it paused, its
    /// tool calls and the state it left) and judges the next run against it.
    #[default]
    Stateful,
    /// Keeps nothing across the gap: resume entries naming an interrupt the script can raise
    /// are taken as the answers it paused for; the rest is read from the messages.
    Stateless,
}

/// `uncovered = "reinterrupt" | "reject" | "run-error"` (PROD-3).
#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Uncovered {
    /// Do what the covered entries allow, end with the still-open interrupts again.
    #[default]
    Reinterrupt,
    /// HTTP 409 before any stream.
    Reject,
    /// A stream whose first event is `RUN_ERROR`.
    RunError,
}

/// `client = "ag-ui" | "tanstack"`: whose habits the agent speaks to.
#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum ClientKind {
    #[default]
    AgUi,
    /// `@tanstack/ai-client`: interrupts carry `metadata["tanstack:interruptBinding"]`, and its
    /// request habits (`data`, a `name` on tool messages) are stripped without a warning.
    Tanstack,
}

/// `on_continuation = "skip" | "repeat"` (PH-6).
#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum OnContinuation {
    /// Raised only until a continuation answers it: the continuation passes the boundary.
    #[default]
    Skip,
    /// Raised by every run that reaches the boundary, continuations included: answering it
    /// pauses again at the same place.
    Repeat,
}

/// A rule the agent breaks on purpose (`violate = [...]`), so a consumer can be tested against a
/// faulty producer. Each one committed is recorded in the ledger (`event: "violation"`).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum Violation {
    /// An interrupted run reports `outcome: {type: "success", interrupts: [...]}` (INT-2, ERR-1).
    SuccessWhileInterrupted,
    /// The interrupt batch carries its first interrupt twice (INT-3).
    DuplicateInterruptIds,
    /// `outcome: {type: "interrupt", interrupts: []}` (INT-1).
    InterruptWithoutInterrupts,
    /// The stream ends without `RUN_FINISHED` (a truncated run).
    MissingRunFinished,
    /// Every event carries a member the 1.0 schema does not know.
    UnknownFields,
}

impl Violation {
    pub fn rule(self) -> &'static str {
        match self {
            Violation::SuccessWhileInterrupted => "INT-2",
            Violation::DuplicateInterruptIds => "INT-3",
            Violation::InterruptWithoutInterrupts => "INT-1",
            Violation::MissingRunFinished => "INT-6",
            Violation::UnknownFields => "schema",
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAgent {
    #[allow(dead_code)]
    protocol: String,
    resume: Option<ResumeMode>,
    uncovered: Option<Uncovered>,
    client: Option<ClientKind>,
    model: Option<String>,
    #[serde(default)]
    violate: Vec<Violation>,
    late_error: Option<RawLateError>,
    #[serde(default)]
    tools: Vec<RawTool>,
    #[serde(default)]
    iterations: Vec<RawIteration>,
    #[serde(default)]
    interrupts: Vec<RawInterrupt>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLateError {
    message: String,
    code: Option<String>,
    after: Option<Dur>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTool {
    name: String,
    description: Option<String>,
    service: Option<String>,
    route: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    answer_at: Option<String>,
    frontend: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawIteration {
    text: Option<String>,
    #[serde(default)]
    tool_calls: Vec<RawCall>,
    state: Option<Value>,
    usage: Option<RawUsage>,
    delay: Option<Dur>,
    cancel_at: Option<Phase>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCall {
    tool: String,
    args: Option<Value>,
}

#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RawUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawInterrupt {
    phase: Phase,
    iteration: Option<usize>,
    key: Option<String>,
    reason: Option<String>,
    message: Option<String>,
    tool_call: Option<String>,
    approve_if: Option<String>,
    response_schema: Option<Value>,
    expires_in: Option<Dur>,
    subagent_run_id: Option<String>,
    on_continuation: Option<OnContinuation>,
}

/// A validated AG-UI agent script, shared: the agent table is cloned per request and a run
/// keeps its script while it streams, so a clone is a reference count, not a deep copy.
pub type AgUiAgent = Arc<Script>;

/// What an [`AgUiAgent`] holds.
#[derive(Debug, Default)]
pub struct Script {
    pub resume: ResumeMode,
    pub uncovered: Uncovered,
    pub client: ClientKind,
    /// The model name reported in `usage`.
    pub model: String,
    pub violate: Vec<Violation>,
    pub late_error: Option<LateError>,
    pub tools: Vec<Tool>,
    pub iterations: Vec<Iteration>,
    pub interrupts: Vec<InterruptSpec>,
}

impl Script {
    pub fn violates(&self, v: Violation) -> bool {
        self.violate.contains(&v)
    }

    /// The interrupts declared at one boundary, in scenario order.
    pub fn interrupts_at(
        &self,
        iteration: usize,
        phase: Phase,
    ) -> impl Iterator<Item = &InterruptSpec> {
        self.interrupts
            .iter()
            .filter(move |i| i.iteration == iteration && i.phase == phase)
    }

    pub fn interrupt(&self, key: &str) -> Option<&InterruptSpec> {
        self.interrupts.iter().find(|i| i.key == key)
    }
}

/// A `RUN_ERROR` sent after `RUN_FINISHED` (INT-6).
#[derive(Clone, Debug)]
pub struct LateError {
    pub message: String,
    pub code: Option<String>,
    /// Scenario time between `RUN_FINISHED` and the late error.
    pub after: Duration,
}

#[derive(Clone, Debug)]
pub struct Tool {
    pub name: String,
    pub description: Option<String>,
    pub kind: ToolKind,
}

#[derive(Clone, Debug)]
pub enum ToolKind {
    /// Runs as a request to a fake-service route, through the action pipeline.
    Backend {
        service: String,
        route: String,
        /// Extra request headers; values may hold `{{tool_call_id}}`, `{{run_id}}`, `{{thread_id}}`
        headers: Vec<(String, String)>,
        /// Where in the request body the resolved answer's payload goes, if anywhere.
        answer_at: Option<String>,
    },
    /// Executed by the application: the run ends `success` naming the call in
    /// `pendingToolCallIds`, and the answer comes back as a tool message (INT-2).
    Frontend,
}

/// One scripted model turn.
#[derive(Clone, Debug, Default)]
pub struct Iteration {
    pub text: Option<String>,
    pub tool_calls: Vec<ScriptedCall>,
    /// Merged into the agent state (JSON merge patch) after the model output.
    pub state: Option<Value>,
    pub usage: Option<RawUsage>,
    /// Scenario time the model "thinks" before its output.
    pub delay: Option<Duration>,
    /// The run is stopped on request at this boundary: `RUN_FINISHED` cancelled (INT-2).
    pub cancel_at: Option<Phase>,
}

#[derive(Clone, Debug)]
pub struct ScriptedCall {
    /// Index into [`Script::tools`].
    pub tool: usize,
    /// A JSON object, shared with every call made from it.
    pub args: Arc<Value>,
    /// `args` as compact JSON (what `TOOL_CALL_ARGS` streams), written once.
    pub args_json: String,
}

/// An interrupt the script raises at one boundary.
#[derive(Clone, Debug)]
pub struct InterruptSpec {
    /// The interrupt's `id` on the wire: deterministic, so a stateless agent can recognise it.
    pub key: String,
    pub phase: Phase,
    pub iteration: usize,
    pub reason: String,
    pub message: Option<String>,
    /// The tool (index into [`Script::tools`]) whose calls in this iteration the interrupt
    /// is about: `toolCallId` names the first; at `beforeTools` it gates all of them.
    pub tool: Option<usize>,
    /// JSON pointer that must be `true` in a resolved answer's payload for the gated calls to run.
    pub approve_if: Option<String>,
    pub response_schema: Option<Arc<Map<String, Value>>>,
    pub expires_in: Option<Duration>,
    pub subagent_run_id: Option<String>,
    pub on_continuation: OnContinuation,
}

pub(crate) fn compile(
    table: &toml::Table,
    path: &str,
    services: &[Service],
    issues: &mut Issues,
) -> Option<AgUiAgent> {
    let raw: RawAgent = sub_table(table, path, issues)?;
    let start = issues.len();

    let (tools, broken) = compile_tools(raw.tools, path, services, issues);
    if raw.iterations.is_empty() {
        let m = format!(
            "an AG-UI agent needs at least one [[{path}.iterations]] (a scripted model turn)"
        );
        issues.add(path, m);
    }
    let iterations: Vec<Iteration> = raw
        .iterations
        .into_iter()
        .enumerate()
        .map(|(n, it)| {
            let ipath = format!("{path}.iterations[{n}]");
            compile_iteration(it, &ipath, path, &tools, &broken, services, issues)
        })
        .collect();

    let mut interrupts: Vec<InterruptSpec> = Vec::new();
    for (n, ri) in raw.interrupts.into_iter().enumerate() {
        let ipath = format!("{path}.interrupts[{n}]");
        if ri.tool_call.as_ref().is_some_and(|t| broken.contains(t)) {
            continue;
        }
        if let Some(spec) = compile_interrupt(ri, n, &ipath, &tools, &iterations, issues) {
            if interrupts.iter().any(|o| o.key == spec.key) {
                issues.add(format!("{ipath}.key"), format!("duplicate interrupt key \"{}\": keys are the interrupts' ids and must be unique per agent (INT-3)", spec.key));
            }
            interrupts.push(spec);
        }
    }

    if issues.len() > start {
        return None;
    }
    Some(Arc::new(Script {
        resume: raw.resume.unwrap_or_default(),
        uncovered: raw.uncovered.unwrap_or_default(),
        client: raw.client.unwrap_or_default(),
        model: raw.model.unwrap_or_else(|| "scripted".into()),
        violate: raw.violate,
        late_error: raw.late_error.map(|l| LateError {
            message: l.message,
            code: l.code,
            after: l.after.map(|d| d.0).unwrap_or_default(),
        }),
        tools,
        iterations,
        interrupts,
    }))
}

/// The script's tools, and the names of those reported broken (calls naming them are not).
fn compile_tools(
    raw: Vec<RawTool>,
    path: &str,
    services: &[Service],
    issues: &mut Issues,
) -> (Vec<Tool>, Vec<String>) {
    let mut tools: Vec<Tool> = Vec::new();
    let mut broken: Vec<String> = Vec::new();
    for (n, t) in raw.into_iter().enumerate() {
        let tpath = format!("{path}.tools[{n}]");
        let name = t.name.clone();
        let Some(tool) = compile_tool(t, &tpath, services, issues) else {
            broken.push(name);
            continue;
        };
        if tools.iter().any(|o| o.name == tool.name) {
            issues.add(
                format!("{tpath}.name"),
                format!("duplicate tool name \"{}\"", tool.name),
            );
        }
        tools.push(tool);
    }
    (tools, broken)
}

/// One scripted model turn; calls with an issue are left out (the issue is reported).
fn compile_iteration(
    it: RawIteration,
    ipath: &str,
    path: &str,
    tools: &[Tool],
    broken: &[String],
    services: &[Service],
    issues: &mut Issues,
) -> Iteration {
    let mut calls = Vec::new();
    for (k, c) in it.tool_calls.into_iter().enumerate() {
        let cpath = format!("{ipath}.tool_calls[{k}]");
        if let Some(call) = compile_call(c, &cpath, path, tools, broken, services, issues) {
            calls.push(call);
        }
    }
    if it.state.as_ref().is_some_and(|s| !s.is_object()) {
        let m = "state must be a table; it is merged into the agent state (JSON merge patch)";
        issues.add(format!("{ipath}.state"), m);
    }
    Iteration {
        text: it.text,
        tool_calls: calls,
        state: it.state,
        usage: it.usage,
        delay: it.delay.map(|d| d.0),
        cancel_at: it.cancel_at,
    }
}

/// A scripted tool call: its tool's index, its arguments and their JSON text, written once.
fn compile_call(
    c: RawCall,
    cpath: &str,
    path: &str,
    tools: &[Tool],
    broken: &[String],
    services: &[Service],
    issues: &mut Issues,
) -> Option<ScriptedCall> {
    let Some(tool) = tools.iter().position(|t| t.name == c.tool) else {
        if !broken.contains(&c.tool) {
            issues.add(
                format!("{cpath}.tool"),
                format!(
                    "no tool named \"{}\" in [[{path}.tools]]{}",
                    c.tool,
                    did_you_mean(&c.tool, tools.iter().map(|t| t.name.as_str()))
                ),
            );
        }
        return None;
    };
    let args = c.args.unwrap_or_else(|| Value::Object(Map::new()));
    if !args.is_object() {
        let m = "tool call args must be a table, e.g. { to = \"acct-9\", amount = 100 }";
        issues.add(format!("{cpath}.args"), m);
        return None;
    }
    if let ToolKind::Backend { service, route, .. } = &tools[tool].kind {
        let r = services
            .iter()
            .find(|s| &s.name == service)
            .and_then(|s| s.route(route));
        for param in r.into_iter().flat_map(|r| r.path.params()) {
            if args
                .get(param)
                .is_none_or(|v| !(v.is_string() || v.is_number()))
            {
                issues.add(format!("{cpath}.args"), format!("route \"{route}\" of service \"{service}\" has a {{{param}}} path segment: give `{param}` (a string or number) in args"));
            }
        }
    }
    let args_json = args.to_string();
    Some(ScriptedCall {
        tool,
        args: Arc::new(args),
        args_json,
    })
}

fn compile_tool(
    t: RawTool,
    tpath: &str,
    services: &[Service],
    issues: &mut Issues,
) -> Option<Tool> {
    let start = issues.len();
    if t.name.is_empty() {
        issues.add(format!("{tpath}.name"), "a tool needs a non-empty name");
    }
    let kind = match (t.frontend.unwrap_or(false), t.service, t.route) {
        (true, None, None) => {
            if !t.headers.is_empty() {
                issues.add(format!("{tpath}.headers"), "`headers` applies only to backend tools (service + route); a frontend tool runs in the application");
            }
            if t.answer_at.is_some() {
                let m = "`answer_at` applies only to backend tools (service + route)";
                issues.add(format!("{tpath}.answer_at"), m);
            }
            ToolKind::Frontend
        }
        (true, _, _) => {
            issues.add(tpath, "a tool is either a backend tool (service + route) or a frontend tool (frontend = true), not both");
            return None;
        }
        (false, Some(service), Some(route)) => {
            find_route(services, (&service, &route), tpath, issues);
            for (h, v) in &t.headers {
                check_header(h, &format!("{tpath}.headers"), issues);
                if hyper::header::HeaderValue::from_str(v).is_err() {
                    let m = format!("\"{v}\" is not a valid HTTP header value");
                    issues.add(format!("{tpath}.headers.{h}"), m);
                }
            }
            if let Some(p) = &t.answer_at {
                let checked = match p.as_str() {
                    "" => Err("answer_at must point inside the body, e.g. \"/approval\"".into()),
                    p => check_pointer(p),
                };
                if let Err(e) = checked {
                    issues.add(format!("{tpath}.answer_at"), e);
                }
            }
            ToolKind::Backend {
                service,
                route,
                headers: t.headers.into_iter().collect(),
                answer_at: t.answer_at,
            }
        }
        (false, service, _) => {
            let missing = service.map_or("service", |_| "route");
            issues.add(tpath, format!("missing key `{missing}`: a backend tool names a fake-service route (service + route); a tool the application runs says frontend = true"));
            return None;
        }
    };
    (issues.len() == start).then_some(Tool {
        name: t.name,
        description: t.description,
        kind,
    })
}

fn compile_interrupt(
    ri: RawInterrupt,
    n: usize,
    ipath: &str,
    tools: &[Tool],
    iterations: &[Iteration],
    issues: &mut Issues,
) -> Option<InterruptSpec> {
    let start = issues.len();
    let iteration = ri.iteration.unwrap_or(0);
    if !iterations.is_empty() && iteration >= iterations.len() {
        issues.add(
            format!("{ipath}.iteration"),
            format!(
                "iteration {iteration} does not exist: the agent has {} iteration(s), numbered from 0",
                iterations.len()
            ),
        );
    }
    let key = ri.key.unwrap_or_else(|| format!("interrupt-{n}"));
    if key.is_empty() {
        issues.add(
            format!("{ipath}.key"),
            "an interrupt key (its id) may not be empty",
        );
    }
    let mut tool = None;
    if let Some(name) = &ri.tool_call {
        let at = format!("{ipath}.tool_call");
        if !matches!(ri.phase, Phase::BeforeTools | Phase::AfterTools) {
            let phase = serde_json::to_value(ri.phase).unwrap_or_default();
            issues.add(&at, format!("`tool_call` applies only at beforeTools (an approval: the call has not run) or afterTools (an audit: it has); at {} this iteration's tool calls are not in the messages yet (PH-1, PH-2)", phase.as_str().unwrap_or_default()));
        }
        match tools.iter().position(|t| &t.name == name) {
            None => {
                let hint = did_you_mean(name, tools.iter().map(|t| t.name.as_str()));
                issues.add(at, format!("no tool named \"{name}\"{hint}"));
            }
            Some(t) => {
                let called = iterations
                    .get(iteration)
                    .is_none_or(|it| it.tool_calls.iter().any(|c| c.tool == t));
                if !called {
                    issues.add(at, format!("iteration {iteration} makes no \"{name}\" call for this interrupt to be about"));
                }
                tool = Some(t);
            }
        }
    }
    if let Some(p) = &ri.approve_if {
        if let Err(e) = check_pointer(p) {
            issues.add(format!("{ipath}.approve_if"), e);
        }
        if ri.tool_call.is_none() || ri.phase != Phase::BeforeTools {
            let m =
                "`approve_if` gates a tool call: it needs `tool_call` and phase = \"beforeTools\"";
            issues.add(format!("{ipath}.approve_if"), m);
        }
    }
    let response_schema = match ri.response_schema {
        None => None,
        Some(Value::Object(m)) => Some(Arc::new(m)),
        Some(_) => {
            let m = "response_schema must be a table (a JSON Schema object)";
            issues.add(format!("{ipath}.response_schema"), m);
            None
        }
    };
    if issues.len() > start {
        return None;
    }
    let reason = ri.reason.unwrap_or_else(|| {
        if tool.is_some() && ri.phase == Phase::BeforeTools {
            "approval-required".into()
        } else {
            "input-required".into()
        }
    });
    Some(InterruptSpec {
        key,
        phase: ri.phase,
        iteration,
        reason,
        message: ri.message,
        tool,
        approve_if: ri.approve_if,
        response_schema,
        expires_in: ri.expires_in.map(|d| d.0),
        subagent_run_id: ri.subagent_run_id,
        on_continuation: ri.on_continuation.unwrap_or_default(),
    })
}
