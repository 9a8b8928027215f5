//! The scenario model of a fake MCP tool server (`[mcp.NAME]`): the protocol versions it serves,
//! what it does with a cancelled call, and its tools, each bound to a fake service's route whose
//! pipeline a `tools/call` runs through. Compiled and checked at load, problems reported with
//! their key path; `crate::mcp` serves the compiled [`McpServer`].

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::fate::{Fate, FateSchedule};

use super::schema::Schema;
use super::{check_segment, did_you_mean, sub_table, Dur, Issues, PathTemplate, Pointer, Service};

/// The protocol revisions a server may be configured to serve: the Streamable HTTP ones. The
/// last is the modern (stateless, per-request `_meta`) era; the others need `initialize`.
pub const KNOWN_VERSIONS: &[&str] = &["2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"];

/// The first revision of the modern era.
pub const MODERN: &str = "2026-07-28";

/// Served when a scenario lists none: the newest of each era.
const DEFAULT_VERSIONS: &[&str] = &["2025-11-25", "2026-07-28"];

/// The annotation keys MCP defines, with whether each is a boolean hint (else text).
const ANNOTATIONS: &[(&str, bool)] = &[
    ("title", false),
    ("readOnlyHint", true),
    ("destructiveHint", true),
    ("idempotentHint", true),
    ("openWorldHint", true),
];

/// What a cancelled call does (`cancel`; in the ledger as `policy`).
#[derive(Deserialize, Serialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum CancelMode {
    /// The call still takes effect (recorded as ignored).
    #[default]
    Ignore,
    /// The call does not take effect if it has not been applied yet.
    Honor,
}

/// How answers go out to a client that accepts both JSON and an event stream (`responses`).
#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Responses {
    /// One JSON body (the response goes out whole, or not at all).
    #[default]
    Json,
    /// A `text/event-stream`: headers first, the answer as a `message` event; a dropped answer
    /// is then cut off mid-stream, after the headers, and a delayed one holds the open stream.
    Sse,
}

/// What a legacy client finds when it resumes a cut-off stream (`resume`, with
/// `responses = "sse"`): 2025-11-25 lets a client reconnect with `GET` and `Last-Event-ID`.
#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Resume {
    /// Streams carry no event ids: a cut stream cannot be resumed.
    #[default]
    None,
    /// A priming event id first; a `GET` with `Last-Event-ID` replays the answer.
    Replay,
    /// A priming event id first, but the event store is "lost": the `GET` gets 404.
    Lost,
}

/// What a modern request's `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` headers must do.
#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum HeaderPolicy {
    /// Repeat the body, or the request is refused (400, -32020), as the spec says.
    #[default]
    Strict,
    /// A mismatch is recorded (`header-violation`) and the request served: some clients omit
    /// one (fastmcp-tasks' `Mcp-Name` on `tasks/get`).
    Lenient,
}

/// A validated MCP server.
#[derive(Clone, Debug)]
pub struct McpServer {
    pub name: Arc<str>,
    /// In the order written; each one of [`KNOWN_VERSIONS`].
    pub versions: Vec<&'static str>,
    pub cancel: CancelMode,
    pub responses: Responses,
    pub resume: Resume,
    pub headers: HeaderPolicy,
    /// Browser origins allowed besides loopback ones (`scheme://host[:port]`, lowercase): a
    /// request with another `Origin` is refused (403), against DNS rebinding.
    pub origins: Vec<String>,
    /// A legacy session ends right after its Nth tool call took effect: that call is answered
    /// 404 (the client must re-initialize), its effect standing.
    pub expire_session: Option<u64>,
    pub tools: Vec<Tool>,
}

impl McpServer {
    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.name == name)
    }

    pub fn serves(&self, version: &str) -> bool {
        self.versions.contains(&version)
    }

    /// Whether some tool reads its key from `params` (SEP-3182's shape), which a client learns
    /// from `capabilities.tools.idempotency`.
    pub fn keys_in_params(&self) -> bool {
        self.tools
            .iter()
            .any(|t| matches!(t.key, Some(KeySource::Params(_))))
    }

    /// The legacy (initialize-era) versions it serves, newest last as written.
    pub fn legacy_versions(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.versions.iter().copied().filter(|v| *v != MODERN)
    }
}

/// A tool, bound to the route a call runs through.
#[derive(Clone, Debug)]
pub struct Tool {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    /// JSON Schema of the arguments (an object schema), advertised and checked per call.
    pub input_schema: Schema,
    pub output_schema: Option<Schema>,
    /// Client capabilities a call needs (`sampling`, `elicitation`, `roots`): a modern call
    /// whose `_meta` does not declare them is refused with -32021.
    pub requires: Vec<String>,
    /// Advertised as written, true or not: orchestrators key their retry policy on them.
    pub annotations: Option<Map<String, Value>>,
    pub service: String,
    pub route: String,
    pub method: String,
    pub path: PathTemplate,
    /// Route path parameter → pointer into the arguments.
    pub path_params: Vec<(String, String)>,
    /// Where the call's idempotency key is read.
    pub key: Option<KeySource>,
    /// The header the route's policy reads its key from: the call hands the key over there,
    /// so the route's idempotency applies as it does to an HTTP client.
    pub key_header: hyper::header::HeaderName,
    /// A call may run as a task (`task = { ... }`); `None`: never.
    pub task: Option<TaskSpec>,
    /// A modern call (not run as a task) first asks this question, a multi-round-trip request:
    /// answered `input_required` with a `requestState`, it runs when re-sent with the answer.
    pub input: Option<TaskInput>,
}

/// How a tool's calls run as tasks (2025-11-25 core tasks, the 2026-07-28 tasks extension).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskSpec {
    /// `required`: a call that does not ask for a task (legacy) or does not declare the
    /// extension (modern) is refused.
    pub required: bool,
    /// How long the task works before it completes; its effect lands then.
    pub duration: Duration,
    /// The poll interval the server asks for (`pollInterval`, `pollIntervalMs`).
    pub poll_interval: Duration,
    /// How long the task is kept after creation; `None`: the client's requested TTL, or for ever.
    pub ttl: Option<Duration>,
    /// What `tasks/cancel` does: `honor` stops the effect if it has not landed; `ignore`
    /// acknowledges and completes anyway.
    pub cancel: CancelMode,
    /// The task stops to ask for input (`input_required`): in 2026-07-28 `tasks/get` shows the
    /// question and `tasks/update` answers it; in 2025-11-25 the `tasks/result` stream asks it
    /// and the client's response answers.
    pub input: Option<TaskInput>,
    /// The fates of the task's own methods, each counted per task.
    pub fates: TaskFates,
}

/// What becomes of a task's `tasks/get`, `tasks/result` (legacy), `tasks/cancel` and
/// `tasks/update` (modern), the n-th of each method on one task getting the n-th fate. A
/// method's "effect" is what it does to the task (a cancel, an answer) or, for a read, the
/// server reading it: `drop-before-apply` loses the request, `drop-after-apply` its answer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TaskFates([FateSchedule; 4]);

/// The task methods that have fates, in [`TaskFates`]' order.
const TASK_METHODS: [&str; 4] = ["get", "result", "cancel", "update"];

impl TaskFates {
    /// The schedule of task method `method` (`tasks/get`, …), with its place among the four.
    pub fn of(&self, method: &str) -> Option<(usize, &FateSchedule)> {
        let name = method.strip_prefix("tasks/")?;
        let slot = TASK_METHODS.iter().position(|m| *m == name)?;
        Some((slot, &self.0[slot]))
    }
}

/// A question a task asks part-way (`task.input`): an `elicitation/create` request.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskInput {
    /// The question's key in `inputRequests`, under which the answer comes back.
    pub key: String,
    /// How long into its work the task asks; the rest of its work follows the answer.
    pub after: Duration,
    pub message: String,
    /// The `requestedSchema` of the answer's content.
    pub schema: Value,
    /// A plain call's question only: how long its `requestState` is honoured (`None`: always).
    pub ttl: Option<Duration>,
}

/// Where a tool call's idempotency key comes from (`key`); serialized as the ledger names it
/// (`detail.mcp.key_source`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum KeySource {
    /// `key = "/pointer"`: an argument, as servers in the wild take one.
    Argument(String),
    /// `key = { meta = "NAME" }`: a `params._meta` entry (e.g. `dev.doubleagent/idempotencyKey`).
    Meta(String),
    /// `key = { params = "NAME" }`: a `params` member, as SEP-3182 proposed `idempotencyKey` (a
    /// closed proposal; the server then advertises `capabilities.tools.idempotency`).
    Params(String),
}

impl<'de> Deserialize<'de> for KeySource {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<KeySource, D::Error> {
        use serde::de::Error;
        let expected = "expected a JSON pointer into the arguments (\"/idempotency_key\"), { meta = \"NAME\" } or { params = \"NAME\" }";
        let v = toml::Value::deserialize(d)?;
        let one = |t: &toml::Table| -> Option<(String, String)> {
            let (k, v) = t.iter().next().filter(|_| t.len() == 1)?;
            Some((k.clone(), v.as_str()?.to_string()))
        };
        match &v {
            toml::Value::String(p) => {
                super::check_pointer(p).map_err(D::Error::custom)?;
                Ok(KeySource::Argument(p.clone()))
            }
            toml::Value::Table(t) => match one(t) {
                Some((k, n)) if k == "meta" && !n.is_empty() => Ok(KeySource::Meta(n)),
                Some((k, n)) if k == "params" && !n.is_empty() => Ok(KeySource::Params(n)),
                _ => Err(D::Error::custom(expected)),
            },
            _ => Err(D::Error::custom(expected)),
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    versions: Option<Vec<String>>,
    cancel: Option<CancelMode>,
    responses: Option<Responses>,
    resume: Option<Resume>,
    headers: Option<HeaderPolicy>,
    origins: Option<Vec<String>>,
    expire_session: Option<u64>,
    #[serde(default)]
    tools: Vec<RawTool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTool {
    name: String,
    title: Option<String>,
    description: Option<String>,
    input_schema: Option<Value>,
    output_schema: Option<Value>,
    annotations: Option<Map<String, Value>>,
    #[serde(default)]
    requires: Vec<String>,
    call: RawToolCall,
    key: Option<KeySource>,
    task: Option<RawTask>,
    input: Option<RawInput>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTask {
    support: Option<RawSupport>,
    duration: Option<Dur>,
    poll_interval: Option<Dur>,
    ttl: Option<Dur>,
    cancel: Option<CancelMode>,
    input: Option<RawInput>,
    fates: Option<RawTaskFates>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTaskFates {
    get: Option<FateSchedule>,
    result: Option<FateSchedule>,
    cancel: Option<FateSchedule>,
    update: Option<FateSchedule>,
}

#[derive(Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum RawSupport {
    Optional,
    Required,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawInput {
    key: Option<String>,
    after: Option<Dur>,
    message: String,
    schema: Option<Value>,
    ttl: Option<Dur>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawToolCall {
    service: String,
    route: String,
    #[serde(default)]
    path: BTreeMap<String, Pointer>,
}

/// Every `[mcp.NAME]` table, each compiled against the scenario's services.
pub(crate) fn compile_all(
    raw: &BTreeMap<String, toml::Table>,
    services: &[Service],
    issues: &mut Issues,
) -> Vec<McpServer> {
    let mut out = Vec::new();
    for (name, table) in raw {
        let path = format!("mcp.{name}");
        check_segment(name, &path, "an MCP server name", issues);
        if let Some(s) = compile(name, table, &path, services, issues) {
            out.push(s);
        }
    }
    out
}

fn compile(
    name: &str,
    table: &toml::Table,
    path: &str,
    services: &[Service],
    issues: &mut Issues,
) -> Option<McpServer> {
    let raw: RawServer = sub_table(table, path, issues)?;
    let start = issues.len();
    let versions = match &raw.versions {
        None => DEFAULT_VERSIONS.to_vec(),
        Some(vs) => compile_versions(vs, &format!("{path}.versions"), issues),
    };
    if raw.resume.is_some_and(|r| r != Resume::None) && raw.responses != Some(Responses::Sse) {
        let m = "resuming needs event streams: add responses = \"sse\"";
        issues.add(format!("{path}.resume"), m);
    }
    if raw.expire_session == Some(0) {
        let m = "the session ends after its Nth tool call: N is at least 1";
        issues.add(format!("{path}.expire_session"), m);
    }
    let mut origins = Vec::new();
    for (i, o) in raw.origins.iter().flatten().enumerate() {
        let o = o.trim_end_matches('/').to_ascii_lowercase();
        match o.parse::<hyper::Uri>() {
            Ok(u) if u.scheme().is_some() && u.host().is_some() && u.path() == "/" => {
                origins.push(o)
            }
            _ => issues.add(
                format!("{path}.origins[{i}]"),
                format!("\"{o}\" is not an origin: write scheme://host[:port], like \"https://app.example\""),
            ),
        }
    }
    let mut tools: Vec<Tool> = Vec::new();
    for (i, t) in raw.tools.into_iter().enumerate() {
        let tpath = format!("{path}.tools[{i}]");
        if tools.iter().any(|o| o.name == t.name) {
            let m = format!(
                "duplicate tool name \"{}\" in MCP server \"{name}\"",
                t.name
            );
            issues.add(format!("{tpath}.name"), m);
        }
        if let Some(tool) = compile_tool(t, &tpath, services, raw.cancel, issues) {
            tools.push(tool);
        }
    }
    (issues.len() == start).then(|| McpServer {
        name: name.into(),
        versions,
        cancel: raw.cancel.unwrap_or_default(),
        responses: raw.responses.unwrap_or_default(),
        resume: raw.resume.unwrap_or_default(),
        headers: raw.headers.unwrap_or_default(),
        origins,
        expire_session: raw.expire_session,
        tools,
    })
}

fn compile_versions(given: &[String], path: &str, issues: &mut Issues) -> Vec<&'static str> {
    let mut out = Vec::new();
    for (i, v) in given.iter().enumerate() {
        match KNOWN_VERSIONS.iter().find(|k| **k == v.as_str()) {
            Some(k) if out.contains(k) => {
                issues.add(format!("{path}[{i}]"), format!("\"{v}\" is listed twice"))
            }
            Some(k) => out.push(*k),
            None => issues.add(
                format!("{path}[{i}]"),
                format!(
                    "unknown MCP protocol version \"{v}\"; expected some of: {}",
                    KNOWN_VERSIONS.join(", ")
                ),
            ),
        }
    }
    if given.is_empty() {
        issues.add(path, "list at least one protocol version");
    }
    out
}

fn compile_tool(
    t: RawTool,
    tpath: &str,
    services: &[Service],
    cancel: Option<CancelMode>,
    issues: &mut Issues,
) -> Option<Tool> {
    let start = issues.len();
    let name_ok = (1..=128).contains(&t.name.len())
        && t.name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !name_ok {
        let m = "a tool name is 1 to 128 of the characters A-Z, a-z, 0-9, '_', '-' and '.'";
        issues.add(format!("{tpath}.name"), m);
    }
    let input_schema = t
        .input_schema
        .unwrap_or_else(|| serde_json::json!({"type": "object", "additionalProperties": false}));
    if input_schema.get("type").and_then(Value::as_str) != Some("object") {
        let m = "an input schema describes the arguments object: it needs type = \"object\"";
        issues.add(format!("{tpath}.input_schema"), m);
    }
    let input_schema = compile_schema(input_schema, &format!("{tpath}.input_schema"), issues);
    const CAPABILITIES: &[&str] = &["elicitation", "roots", "sampling"];
    for (i, c) in t.requires.iter().enumerate() {
        if !CAPABILITIES.contains(&c.as_str()) {
            let m = format!(
                "unknown client capability \"{c}\"; expected one of: {}",
                CAPABILITIES.join(", ")
            );
            issues.add(format!("{tpath}.requires[{i}]"), m);
        }
    }
    let output_schema = t
        .output_schema
        .and_then(|s| compile_schema(s, &format!("{tpath}.output_schema"), issues));
    if let Some(a) = &t.annotations {
        check_annotations(a, &format!("{tpath}.annotations"), issues);
    }
    let (svc, route) = super::find_route(
        services,
        (&t.call.service, &t.call.route),
        &format!("{tpath}.call"),
        issues,
    )?;
    let (rname, rpath) = (&route.name, &route.path.raw);
    for param in t.call.path.keys().filter(|p| !route.path.has_param(p)) {
        let m = format!("route \"{rname}\"'s path {rpath} has no parameter {{{param}}}");
        issues.add(format!("{tpath}.call.path.{param}"), m);
    }
    for param in route
        .path
        .params()
        .filter(|p| !t.call.path.contains_key(*p))
    {
        issues.add(format!("{tpath}.call"), format!("route \"{rname}\"'s path {rpath} has the parameter {{{param}}}: say where the arguments hold it, e.g. path = {{ {param} = \"/{param}\" }}"));
    }
    let task = t
        .task
        .map(|raw| compile_task(raw, &format!("{tpath}.task"), cancel, issues));
    let input = t
        .input
        .map(|raw| compile_input(raw, Duration::MAX, &format!("{tpath}.input"), issues));
    if issues.len() > start {
        return None;
    }
    Some(Tool {
        name: t.name,
        title: t.title,
        description: t.description,
        input_schema: input_schema?,
        output_schema,
        requires: t.requires,
        annotations: t.annotations,
        service: svc.name.clone(),
        route: route.name.clone(),
        method: route.method.clone(),
        path: route.path.clone(),
        path_params: t.call.path.into_iter().map(|(k, p)| (k, p.0)).collect(),
        key: t.key,
        key_header: route.idempotency.header_name.clone(),
        task,
        input,
    })
}

/// A question (`input`): asked `after` into a task's work (at most `within`), or before a call.
fn compile_input(i: RawInput, within: Duration, path: &str, issues: &mut Issues) -> TaskInput {
    let after = i.after.map_or(Duration::ZERO, |d| d.0);
    if i.key.as_deref() == Some("") {
        let m = "the question's key names it in inputRequests: a non-empty string";
        issues.add(format!("{path}.key"), m);
    }
    if within == Duration::MAX && i.after.is_some() {
        let m = "a call asks before it runs: `after` belongs to a task's input";
        issues.add(format!("{path}.after"), m);
    } else if after > within {
        let m = "the task asks within its work: `after` is at most the task's `duration`";
        issues.add(format!("{path}.after"), m);
    }
    if within != Duration::MAX && i.ttl.is_some() {
        issues.add(format!("{path}.ttl"), "a task's question lasts as long as the task: `ttl` belongs to a call's input (its requestState), set the task's own `ttl` instead");
    }
    let schema = i
        .schema
        .unwrap_or_else(|| serde_json::json!({"type": "object", "properties": {}}));
    // Checked only: the answer is judged by the client that renders the form.
    compile_schema(schema.clone(), &format!("{path}.schema"), issues);
    TaskInput {
        key: i.key.unwrap_or_else(|| "input".into()),
        after,
        message: i.message,
        schema,
        ttl: i.ttl.map(|d| d.0),
    }
}

/// A tool's `task` table: defaults a client can live with (a short task, the 5 s poll and
/// the server's cancel policy); an input asked within the task's work.
fn compile_task(
    raw: RawTask,
    path: &str,
    cancel: Option<CancelMode>,
    issues: &mut Issues,
) -> TaskSpec {
    let duration = raw.duration.map_or(Duration::from_secs(1), |d| d.0);
    let input = raw
        .input
        .map(|i| compile_input(i, duration, &format!("{path}.input"), issues));
    TaskSpec {
        required: raw.support == Some(RawSupport::Required),
        duration,
        poll_interval: raw.poll_interval.map_or(Duration::from_secs(5), |d| d.0),
        ttl: raw.ttl.map(|d| d.0),
        cancel: raw.cancel.or(cancel).unwrap_or_default(),
        input,
        fates: raw
            .fates
            .map(|f| compile_task_fates(f, &format!("{path}.fates"), issues))
            .unwrap_or_default(),
    }
}

/// A task method's fates: a task method answers at once or not at all, so `apply-later` has no
/// meaning; `respond-without-apply` (a cancel acknowledged and not done) only for `cancel`.
fn compile_task_fates(raw: RawTaskFates, path: &str, issues: &mut Issues) -> TaskFates {
    let schedules = [raw.get, raw.result, raw.cancel, raw.update].map(Option::unwrap_or_default);
    for (schedule, method) in schedules.iter().zip(TASK_METHODS) {
        let fates: Vec<Fate> = match schedule {
            FateSchedule::Sequence(f) => f.clone(),
            FateSchedule::Weighted(w) => w.iter().map(|(f, _)| *f).collect(),
        };
        for fate in fates {
            let refused = match fate {
                Fate::ApplyLater(_) => "a task method answers now or never: `apply-later` is for actions",
                Fate::RespondWithoutApply if method != "cancel" => "`respond-without-apply` (a cancel acknowledged and not done) belongs to `cancel`",
                _ => continue,
            };
            issues.add(format!("{path}.{method}"), refused);
        }
    }
    TaskFates(schedules)
}

fn check_annotations(a: &Map<String, Value>, path: &str, issues: &mut Issues) {
    for (k, v) in a {
        let problem = match ANNOTATIONS.iter().find(|(n, _)| n == k) {
            None => format!(
                "unknown annotation `{k}`{}",
                did_you_mean(k, ANNOTATIONS.iter().map(|(n, _)| *n))
            ),
            Some((_, true)) if !v.is_boolean() => "expected true or false".into(),
            Some((_, false)) if !v.is_string() => "expected a string".into(),
            Some(_) => continue,
        };
        issues.add(format!("{path}.{k}"), problem);
    }
}

/// A tool's schema compiled, or where in it (below `path`) it is not a valid JSON Schema.
fn compile_schema(s: Value, path: &str, issues: &mut Issues) -> Option<Schema> {
    if !s.is_object() {
        issues.add(path, "a JSON Schema is a table");
        return None;
    }
    Schema::compile(s)
        .map_err(|(at, what)| issues.add(format!("{path}{at}"), what))
        .ok()
}
