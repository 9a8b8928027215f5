//! Scenarios: the TOML model of a simulated world, its validation, and the compiled form the
//! world runs on.
//!
//! Loading is two passes: serde (`deny_unknown_fields` everywhere) reads the document into
//! `Raw*` structs, `serde_path_to_error` naming each failure's key path (serde stops at the
//! first; `problems::every_shape_problem` finds the rest); then `compile` checks what serde
//! cannot (duplicates, kind-specific keys, reserved names) and builds the [`Scenario`]. Every
//! problem reads `file:line:col: key.path: message`; a failing scenario never reaches a world.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::de::{self, Deserializer};
use serde::Deserialize;
use serde_json::Value;

use crate::clock::{parse_duration, ClockKind};
use crate::fate::FateSchedule;
use crate::idempotency::{Cache, ErrorShape, Fingerprint, Mode, Policy, Preset};

pub mod a2a;
pub mod agui;
mod compile;
pub mod mcp;
mod placeholders;
mod problems;
pub mod schema;

use compile::compile;
pub(crate) use compile::{check_header, check_segment};
pub(crate) use problems::sub_table;
pub use problems::{did_you_mean, Problem, ScenarioError};
use problems::{every_shape_problem, line_col, locate_all, locate_serde_error, path_string};

/// The built-in quickstart, served when `serve` is given no file.
pub const QUICKSTART: &str = include_str!("../scenarios/quickstart.toml");

/// Service names that would shadow doubleagent's own paths.
const RESERVED: &[&str] = &["_admin", "agents", "mcp"];

/// A duration written as `"250ms"`, `"24h"`, `"1h30m"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dur(pub Duration);

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Dur, D::Error> {
        let s = String::deserialize(d)?;
        parse_duration(&s).map(Dur).map_err(de::Error::custom)
    }
}

/// A response's HTTP status code, 200..=599: a 1xx is an interim response, never an answer
/// (hyper sends a 101 as "Switching Protocols" and turns any other into a 500).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status(pub u16);

impl<'de> Deserialize<'de> for Status {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Status, D::Error> {
        let n = i64::deserialize(d)?;
        let message = match n {
            200..=599 => return Ok(Status(n as u16)),
            100..=199 => format!(
                "expected an HTTP status code between 200 and 599, found {n} (a 1xx status is interim, not an answer)"
            ),
            _ => format!("expected an HTTP status code between 100 and 599, found {n}"),
        };
        Err(de::Error::custom(message))
    }
}

/// An error status doubleagent answers with (an idempotency conflict, mismatch or missing key):
/// 400..=599, as a fate's error status is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorStatus(pub u16);

impl<'de> Deserialize<'de> for ErrorStatus {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ErrorStatus, D::Error> {
        let n = i64::deserialize(d)?;
        if (400..=599).contains(&n) {
            Ok(ErrorStatus(n as u16))
        } else {
            Err(de::Error::custom(format!(
                "expected an HTTP error status between 400 and 599, found {n}"
            )))
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScenario {
    name: Option<String>,
    seed: Option<u64>,
    clock: Option<ClockKind>,
    max_body_bytes: Option<usize>,
    ledger_body_bytes: Option<usize>,
    #[serde(default)]
    services: BTreeMap<String, RawService>,
    /// Read as plain tables here; each protocol's module gives them their shape.
    #[serde(default)]
    agents: BTreeMap<String, toml::Table>,
    /// Fake MCP tool servers, shaped by `scenario::mcp` as agents are by theirs.
    #[serde(default)]
    mcp: BTreeMap<String, toml::Table>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawService {
    idempotency: Option<RawIdempotency>,
    work_id_header: Option<String>,
    revision_header: Option<String>,
    /// A JSON template for doubleagent's own errors on this service (overrides the preset's shape).
    error: Option<Value>,
    #[serde(default)]
    routes: Vec<RawRoute>,
}

#[derive(Deserialize, Default, Clone)]
#[serde(deny_unknown_fields)]
struct RawIdempotency {
    preset: Option<Preset>,
    mode: Option<Mode>,
    header: Option<String>,
    required: Option<bool>,
    retention: Option<Dur>,
    fingerprint: Option<RawFingerprint>,
    cache: Option<Cache>,
    replay_header: Option<String>,
    echo_key: Option<bool>,
    mismatch_status: Option<ErrorStatus>,
    conflict_status: Option<ErrorStatus>,
    missing_status: Option<ErrorStatus>,
    errors: Option<ErrorShape>,
    max_key_length: Option<usize>,
}

/// `fingerprint = "body" | "none" | ["/pointer", ...]`.
#[derive(Clone)]
struct RawFingerprint(Fingerprint);

impl<'de> Deserialize<'de> for RawFingerprint {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<RawFingerprint, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either {
            Word(String),
            List(Vec<String>),
        }
        let expected =
            "expected \"body\", \"none\" or a list of JSON pointers like [\"/to\", \"/amount\"]";
        match Either::deserialize(d).map_err(|_| de::Error::custom(expected))? {
            Either::Word(w) if w == "body" => Ok(RawFingerprint(Fingerprint::Body)),
            Either::Word(w) if w == "none" => Ok(RawFingerprint(Fingerprint::None)),
            Either::Word(w) => Err(de::Error::custom(format!("{expected}, found \"{w}\""))),
            Either::List(ps) => {
                for p in &ps {
                    check_pointer(p).map_err(de::Error::custom)?;
                }
                Ok(RawFingerprint(Fingerprint::Pointers(ps)))
            }
        }
    }
}

/// A JSON pointer (RFC 6901): empty, or '/'-separated keys where a `~` is `~0` or `~1`.
pub(crate) fn check_pointer(p: &str) -> Result<(), String> {
    if !p.is_empty() && !p.starts_with('/') {
        return Err(format!(
            "\"{p}\" is not a JSON pointer; pointers start with '/', e.g. \"/{p}\""
        ));
    }
    let escapes_ok = p
        .split('~')
        .skip(1)
        .all(|after| after.starts_with(['0', '1']));
    if !escapes_ok {
        return Err(format!(
            "\"{p}\" is not a valid JSON pointer: a `~` is written `~0`, and a `/` within a key `~1`"
        ));
    }
    Ok(())
}

/// A JSON pointer (`/to`, `/items/0/id`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Pointer(String);

impl<'de> Deserialize<'de> for Pointer {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Pointer, D::Error> {
        let s = String::deserialize(d)?;
        check_pointer(&s).map_err(de::Error::custom)?;
        Ok(Pointer(s))
    }
}

#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum RouteKind {
    Action,
    Lookup,
    Cancel,
}

/// What a route's fate counter counts: attempts per route, per intent, or per key.
#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Per {
    #[default]
    Route,
    Intent,
    Key,
}

/// How a cancel route treats a pending action.
#[derive(Deserialize, Clone, Copy, Debug, PartialEq, Eq, Default)]
#[serde(rename_all = "kebab-case")]
pub enum CancelPolicy {
    /// Pending → cancelled; already applied → 409.
    #[default]
    Honor,
    /// 202 "stop requested" while the action still takes effect.
    AckOnly,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRoute {
    name: String,
    method: String,
    path: String,
    kind: RouteKind,
    intent: Option<Vec<Pointer>>,
    fates: Option<FateSchedule>,
    per: Option<Per>,
    respond: Option<RawRespond>,
    idempotency: Option<RawIdempotency>,
    #[serde(rename = "match")]
    matcher: Option<RawMatch>,
    lag: Option<Dur>,
    available: Option<bool>,
    policy: Option<CancelPolicy>,
    of: Option<Vec<String>>,
    repeatable: Option<bool>,
    id: Option<Pointer>,
    error: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawRespond {
    status: Option<Status>,
    json: Option<Value>,
    body: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMatch {
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    json: BTreeMap<Pointer, Value>,
}

/// A validated scenario, ready to build a world from.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub name: String,
    pub seed: u64,
    pub clock: ClockKind,
    pub max_body_bytes: usize,
    pub ledger_body_bytes: usize,
    pub services: Vec<Service>,
    pub agents: Vec<Agent>,
    /// Fake MCP tool servers, served at `/mcp/NAME`.
    pub mcp: Vec<mcp::McpServer>,
    /// The TOML text it was read from (the journal keeps it, so a restart restores a scenario
    /// replaced through the admin API).
    pub source: String,
}

/// A fake subagent, served at `/agents/NAME`.
#[derive(Clone, Debug)]
pub struct Agent {
    /// Shared: every request to the agent, and every task it keeps, names it.
    pub name: Arc<str>,
    pub spec: AgentSpec,
}

/// The protocol an agent speaks, with its protocol-specific script.
#[derive(Clone, Debug)]
pub enum AgentSpec {
    A2a(a2a::A2aAgent),
    AgUi(agui::AgUiAgent),
}

#[derive(Clone, Debug)]
pub struct Service {
    pub name: String,
    /// Where an outside request names its work and revision (parsed once: read per request).
    pub work_id_header: hyper::header::HeaderName,
    pub revision_header: hyper::header::HeaderName,
    pub routes: Vec<Route>,
    /// How errors of a request no route matched are written (the service's own).
    pub errors: ErrorStyle,
}

/// How doubleagent writes its own errors on a service or route: the provider's shape, unless
/// the scenario gives an `error` template (placeholders `{{error.status}}`, `{{error.message}}`,
/// `{{error.kind}}`, and the facts a kind has, e.g. `{{error.id}}`).
#[derive(Clone, Debug, PartialEq)]
pub struct ErrorStyle {
    pub shape: ErrorShape,
    pub template: Option<Value>,
}

impl ErrorStyle {
    /// doubleagent's own shape, for requests to no service.
    pub const GENERIC: ErrorStyle = ErrorStyle {
        shape: ErrorShape::Generic,
        template: None,
    };
}

fn header_name(given: Option<&str>, default: &'static str) -> hyper::header::HeaderName {
    given
        .and_then(|h| hyper::header::HeaderName::from_bytes(h.as_bytes()).ok())
        .unwrap_or(hyper::header::HeaderName::from_static(default))
}

#[derive(Clone, Debug)]
pub struct Route {
    pub name: String,
    pub method: String,
    pub path: PathTemplate,
    pub kind: RouteKind,
    /// Pointers, in byte order and each once: the names of the intent's map, in its order.
    pub intent: Vec<String>,
    pub fates: FateSchedule,
    pub per: Per,
    pub respond: Respond,
    pub idempotency: Policy,
    pub matcher: Matcher,
    pub lag: Duration,
    pub available: bool,
    pub cancel_policy: CancelPolicy,
    /// For lookup and cancel routes: which action routes' actions they see (all if `None`).
    pub of: Option<Vec<String>>,
    /// The same intent may legitimately apply more than once (the verifier won't flag it).
    pub repeatable: bool,
    /// For action routes: where the action's own id is in its response (a JSON pointer, e.g.
    /// `/id` when the response hands out `pi_1`): lookups and cancels find it by that id too.
    pub id: Option<String>,
    /// For lookup routes: the answer found actions get (a template over the action found).
    pub lookup_respond: Option<Respond>,
    /// How doubleagent's own errors on this route are written.
    pub errors: ErrorStyle,
}

/// The canned response of an action route; strings may hold `{{...}}` placeholders.
#[derive(Clone, Debug)]
pub struct Respond {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: RespondBody,
}

#[derive(Clone, Debug)]
pub enum RespondBody {
    /// A JSON body with placeholders, compiled once (the value is kept for what reads it).
    Json(Value, crate::template::Compiled),
    Text(String),
}

/// Extra conditions beyond method and path.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Matcher {
    pub headers: Vec<(String, String)>,
    pub json: Vec<(String, Value)>,
}

/// A route path like `/v1/transfers/{id}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathTemplate {
    pub raw: String,
    segments: Vec<Segment>,
    /// A template without parameters, as the text a fitting path has after its leading '/'s:
    /// compared whole, instead of segment by segment.
    literal: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Segment {
    Literal(String),
    Param(String),
}

impl PathTemplate {
    /// Reads a path; a `{param}` fills a whole segment, and names one segment only.
    pub fn parse(raw: &str) -> Result<PathTemplate, String> {
        if !raw.starts_with('/') {
            return Err(format!("a route path starts with '/', found \"{raw}\""));
        }
        let mut segments = Vec::new();
        for seg in raw.trim_start_matches('/').split('/') {
            if let Some(name) = seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    return Err(format!(
                        "\"{seg}\" is not a valid path parameter; use {{name}}"
                    ));
                }
                if segments.contains(&Segment::Param(name.to_string())) {
                    return Err(format!(
                        "\"{seg}\" is named twice in the path; give each parameter its own name"
                    ));
                }
                segments.push(Segment::Param(name.to_string()));
            } else if seg.contains(['{', '}']) {
                return Err(format!(
                    "\"{seg}\": a parameter must fill a whole path segment, like /{{id}}"
                ));
            } else {
                segments.push(Segment::Literal(seg.to_string()));
            }
        }
        let literal = segments
            .iter()
            .all(|s| matches!(s, Segment::Literal(_)))
            .then(|| raw.trim_start_matches('/').to_string());
        Ok(PathTemplate {
            raw: raw.to_string(),
            segments,
            literal,
        })
    }

    /// The parameters if `path` (without query) fits this template.
    pub fn matches(&self, path: &str) -> Option<Vec<(String, String)>> {
        // Segments never hold a '/': the path's segments are the template's exactly when the
        // texts are equal.
        if let Some(l) = &self.literal {
            return (path.trim_start_matches('/') == l).then(Vec::new);
        }
        // Checked before anything is copied: every request is tried against routes it misses.
        let mut parts = path.trim_start_matches('/').split('/');
        let fits = self.segments.iter().all(|seg| match (seg, parts.next()) {
            (Segment::Literal(l), Some(part)) => l == part,
            (Segment::Param(_), Some(part)) => !part.is_empty(),
            (_, None) => false,
        });
        if !fits || parts.next().is_some() {
            return None;
        }
        let parts = path.trim_start_matches('/').split('/');
        Some(
            self.segments
                .iter()
                .zip(parts)
                .filter_map(|(seg, part)| match seg {
                    Segment::Param(name) => Some((name.clone(), part.to_string())),
                    Segment::Literal(_) => None,
                })
                .collect(),
        )
    }

    pub fn params(&self) -> impl Iterator<Item = &str> {
        self.segments.iter().filter_map(|s| match s {
            Segment::Param(n) => Some(n.as_str()),
            Segment::Literal(_) => None,
        })
    }

    /// The path with each parameter filled by `value` (`None` if one has none).
    pub fn fill(&self, mut value: impl FnMut(&str) -> Option<String>) -> Option<String> {
        let mut out = String::new();
        for s in &self.segments {
            out.push('/');
            match s {
                Segment::Literal(l) => out.push_str(l),
                Segment::Param(n) => out.push_str(&value(n)?),
            }
        }
        Some(out)
    }

    pub fn has_param(&self, name: &str) -> bool {
        self.params().any(|p| p == name)
    }
}

impl Scenario {
    pub fn from_file(path: &Path) -> Result<Scenario, ScenarioError> {
        let file = path.display().to_string();
        let src = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            file: file.clone(),
            problems: vec![Problem::unlocated(format!("cannot read the scenario: {e}"))],
        })?;
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
        Scenario::parse(&src, &file, stem.as_deref())
    }

    /// Validate a scenario given as text; `file` names it in messages.
    pub fn from_toml(src: &str, file: &str) -> Result<Scenario, ScenarioError> {
        Scenario::parse(src, file, None)
    }

    pub fn quickstart() -> Scenario {
        Scenario::from_toml(QUICKSTART, "scenarios/quickstart.toml")
            .expect("the embedded quickstart is validated by a test")
    }

    fn parse(src: &str, file: &str, default_name: Option<&str>) -> Result<Scenario, ScenarioError> {
        let fail = |problems| ScenarioError {
            file: file.to_string(),
            problems,
        };
        let de = toml::de::Deserializer::parse(src).map_err(|e| {
            let (line, col) = line_col(src, e.span().map(|s| s.start).unwrap_or(0));
            fail(vec![Problem {
                line,
                col,
                path: String::new(),
                message: e.message().trim().to_string(),
            }])
        })?;
        let raw: RawScenario = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = path_string(e.path());
            let inner = e.into_inner();
            fail(every_shape_problem::<RawScenario>(
                src,
                locate_serde_error(src, &path, &inner),
            ))
        })?;
        compile(raw, default_name, src).map_err(|issues| fail(locate_all(src, issues)))
    }

    pub fn service(&self, name: &str) -> Option<&Service> {
        self.services.iter().find(|s| s.name == name)
    }

    pub fn agent(&self, name: &str) -> Option<&Agent> {
        self.agents.iter().find(|a| *a.name == *name)
    }

    pub fn mcp_server(&self, name: &str) -> Option<&mcp::McpServer> {
        self.mcp.iter().find(|s| *s.name == *name)
    }

    /// Whether an A2A agent serves the gRPC binding (so a gRPC listener is wanted).
    pub fn serves_grpc(&self) -> bool {
        self.agents
            .iter()
            .any(|a| matches!(&a.spec, AgentSpec::A2a(s) if s.serves(a2a::Binding::Grpc)))
    }

    /// Whether an A2A agent names the gRPC binding in its `bindings` (not by default).
    pub fn names_grpc(&self) -> bool {
        let named = |s: &a2a::A2aAgent| s.bindings.contains(&a2a::Binding::Grpc);
        self.agents
            .iter()
            .any(|a| matches!(&a.spec, AgentSpec::A2a(s) if named(s)))
    }
}

/// The service and route a step or tool names, or an issue (with the nearest name) at `path`.
pub(crate) fn find_route<'s>(
    services: &'s [Service],
    (service, route): (&str, &str),
    path: &str,
    issues: &mut Issues,
) -> Option<(&'s Service, &'s Route)> {
    let Some(svc) = services.iter().find(|s| s.name == service) else {
        issues.add(
            format!("{path}.service"),
            format!(
                "no service named \"{service}\"{}",
                did_you_mean(service, services.iter().map(|s| s.name.as_str()))
            ),
        );
        return None;
    };
    let Some(found) = svc.route(route) else {
        issues.add(
            format!("{path}.route"),
            format!(
                "no route named \"{route}\" in service \"{}\"{}",
                svc.name,
                did_you_mean(route, svc.routes.iter().map(|r| r.name.as_str()))
            ),
        );
        return None;
    };
    Some((svc, found))
}

impl Route {
    /// The counter an execution of this route advances (its fate ordinal), as chosen by `per`,
    /// into a reused buffer; the intent as its compact JSON text.
    pub fn write_fate_stream(
        &self,
        out: &mut String,
        service: &str,
        intent: Option<&[u8]>,
        key: Option<&str>,
    ) {
        out.clear();
        out.push_str(service);
        out.push('/');
        out.push_str(&self.name);
        match self.per {
            Per::Route => {}
            Per::Intent => {
                out.push_str("/intent:");
                if let Some(text) = intent {
                    out.push_str(&String::from_utf8_lossy(text));
                }
            }
            Per::Key => {
                out.push_str("/key:");
                out.push_str(key.unwrap_or(""));
            }
        }
    }
}

impl Service {
    pub fn route(&self, name: &str) -> Option<&Route> {
        self.routes.iter().find(|r| r.name == name)
    }
}

/// The problems compilation finds, as (key path, message) pairs, located once all are found.
#[derive(Default)]
pub(crate) struct Issues(Vec<(String, String)>);

impl Issues {
    /// A problem with the value (or table) at key path `path`.
    pub(crate) fn add(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.0.push((path.into(), message.into()));
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}
