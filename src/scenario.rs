//! Scenarios: the TOML model of a simulated world, its validation, and the compiled form the
//! world runs on.
//!
//! Loading is two passes. Serde (with `deny_unknown_fields` everywhere) reads the document into
//! `Raw*` structs, and `serde_path_to_error` names the key path of the first failure; then
//! [`compile`] checks what serde cannot (duplicates, kind-specific keys, reserved names) and
//! builds the [`Scenario`]. Every problem is reported as `file:line:col: key.path: message`, the
//! position found from the error's span or, for semantic problems, by walking the parsed document
//! to the key path. A scenario that fails validation never reaches a world.
//!
//! Imports `clock`, `fate` and `idempotency` (policies are resolved here from presets).

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::de::{self, Deserializer};
use serde::Deserialize;
use serde_json::Value;

use crate::clock::{parse_duration, ClockKind};
use crate::fate::FateSchedule;
use crate::idempotency::{Cache, Fingerprint, Mode, Policy, Preset};

pub mod a2a;
pub mod agui;

/// The built-in quickstart, served when `serve` is given no file.
pub const QUICKSTART: &str = include_str!("../scenarios/quickstart.toml");

/// Service names that would shadow doubleagent's own paths.
const RESERVED: &[&str] = &["_admin", "agents"];

// ---------------------------------------------------------------------------------------------
// Errors

/// One problem in a scenario, located in its source.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub line: usize,
    pub col: usize,
    /// `services.payments.routes[0].fates`; empty for document-level syntax errors.
    pub path: String,
    pub message: String,
}

/// A scenario that failed to load: every problem found, with the file it came from.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub struct ScenarioError {
    pub file: String,
    pub problems: Vec<Problem>,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{}:{}:{}: ", self.file, p.line, p.col)?;
            if !p.path.is_empty() {
                write!(f, "{}: ", p.path)?;
            }
            write!(f, "{}", p.message)?;
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// The raw TOML model

/// A duration written as `"250ms"`, `"24h"`, `"1h30m"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Dur(pub Duration);

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Dur, D::Error> {
        let s = String::deserialize(d)?;
        parse_duration(&s).map(Dur).map_err(de::Error::custom)
    }
}

/// An HTTP status code, 100..=599.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Status(pub u16);

impl<'de> Deserialize<'de> for Status {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Status, D::Error> {
        let n = i64::deserialize(d)?;
        if (100..=599).contains(&n) {
            Ok(Status(n as u16))
        } else {
            Err(de::Error::custom(format!(
                "expected an HTTP status code between 100 and 599, found {n}"
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
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawService {
    idempotency: Option<RawIdempotency>,
    work_id_header: Option<String>,
    revision_header: Option<String>,
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
    mismatch_status: Option<Status>,
    conflict_status: Option<Status>,
    missing_status: Option<Status>,
}

#[derive(Clone)]
enum RawFingerprint {
    Body,
    None,
    Pointers(Vec<String>),
}

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
            Either::Word(w) if w == "body" => Ok(RawFingerprint::Body),
            Either::Word(w) if w == "none" => Ok(RawFingerprint::None),
            Either::Word(w) => Err(de::Error::custom(format!("{expected}, found \"{w}\""))),
            Either::List(ps) => {
                for p in &ps {
                    check_pointer(p).map_err(de::Error::custom)?;
                }
                Ok(RawFingerprint::Pointers(ps))
            }
        }
    }
}

pub(crate) fn check_pointer(p: &str) -> Result<(), String> {
    if p.is_empty() || p.starts_with('/') {
        Ok(())
    } else {
        Err(format!(
            "\"{p}\" is not a JSON pointer; pointers start with '/', e.g. \"/{p}\""
        ))
    }
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
}

#[derive(Deserialize)]
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

// ---------------------------------------------------------------------------------------------
// The compiled model

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
    /// Where it came from (a path, or `<quickstart>`), for messages.
    pub origin: String,
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

impl RespondBody {
    pub fn json(v: Value) -> RespondBody {
        let compiled = crate::template::Compiled::of(&v);
        RespondBody::Json(v, compiled)
    }
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
    fn parse(raw: &str) -> Result<PathTemplate, String> {
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
        if !self.segments.iter().any(|s| matches!(s, Segment::Param(_))) {
            return Some(Vec::new());
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

    pub fn has_param(&self, name: &str) -> bool {
        self.segments
            .iter()
            .any(|s| matches!(s, Segment::Param(n) if n == name))
    }
}

impl Scenario {
    /// Load and validate a scenario file.
    pub fn from_file(path: &Path) -> Result<Scenario, ScenarioError> {
        let file = path.display().to_string();
        let src = std::fs::read_to_string(path).map_err(|e| ScenarioError {
            file: file.clone(),
            problems: vec![Problem {
                line: 0,
                col: 0,
                path: String::new(),
                message: format!("cannot read the scenario: {e}"),
            }],
        })?;
        let stem = path.file_stem().map(|s| s.to_string_lossy().into_owned());
        Scenario::parse(&src, &file, stem.as_deref())
    }

    /// Validate a scenario given as text; `file` names it in messages.
    pub fn from_toml(src: &str, file: &str) -> Result<Scenario, ScenarioError> {
        Scenario::parse(src, file, None)
    }

    /// The built-in quickstart.
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
            fail(vec![locate_serde_error(src, &path, &inner)])
        })?;
        compile(raw, default_name, file, src).map_err(|issues| {
            fail(
                issues
                    .into_iter()
                    .map(|(path, message)| locate(src, path, message))
                    .collect(),
            )
        })
    }

    pub fn service(&self, name: &str) -> Option<&Service> {
        self.services.iter().find(|s| s.name == name)
    }

    pub fn agent(&self, name: &str) -> Option<&Agent> {
        self.agents.iter().find(|a| *a.name == *name)
    }
}

impl Route {
    /// The name of the counter an execution of this route advances (its fate ordinal), as
    /// chosen by `per`.
    pub fn fate_stream(&self, service: &str, intent: Option<&Value>, key: Option<&str>) -> String {
        let mut out = String::new();
        let text = intent.map(|v| v.to_string());
        self.write_fate_stream(&mut out, service, text.as_deref().map(str::as_bytes), key);
        out
    }

    /// [`Route::fate_stream`] into a buffer the caller reuses (once per executed action), with
    /// the intent as its compact JSON text.
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

// ---------------------------------------------------------------------------------------------
// Semantic checks and compilation

pub(crate) type Issues = Vec<(String, String)>;

fn compile(
    raw: RawScenario,
    default_name: Option<&str>,
    origin: &str,
    source: &str,
) -> Result<Scenario, Issues> {
    let mut issues: Issues = Vec::new();
    let mut services = Vec::new();
    for (sname, rs) in raw.services {
        let spath = format!("services.{sname}");
        if RESERVED.contains(&sname.as_str()) {
            issues.push((spath.clone(), format!("\"{sname}\" is reserved for doubleagent's own endpoints; pick another service name")));
        } else if sname.is_empty()
            || !sname
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            issues.push((spath.clone(), "a service name may use only letters, digits, '-' and '_' (it becomes a URL path segment)".into()));
        }
        let headers = [
            ("work_id_header", rs.work_id_header.as_deref()),
            ("revision_header", rs.revision_header.as_deref()),
        ];
        for (key, h) in headers {
            if let Some(h) = h {
                check_header(h, &format!("{spath}.{key}"), &mut issues);
            }
        }
        let svc_idem = rs.idempotency.clone().unwrap_or_default();
        if let Some(h) = &svc_idem.header {
            check_header(h, &format!("{spath}.idempotency.header"), &mut issues);
        }
        let mut routes: Vec<Route> = Vec::new();
        for (i, r) in rs.routes.into_iter().enumerate() {
            let rpath = format!("{spath}.routes[{i}]");
            if let Some(route) = compile_route(r, &rpath, &svc_idem, &mut issues) {
                if routes.iter().any(|o| o.name == route.name) {
                    issues.push((
                        format!("{rpath}.name"),
                        format!(
                            "duplicate route name \"{}\" in service \"{sname}\"",
                            route.name
                        ),
                    ));
                }
                if let Some(o) = routes.iter().find(|o| {
                    o.method == route.method
                        && o.path.raw == route.path.raw
                        && o.matcher == route.matcher
                }) {
                    issues.push((format!("{rpath}.path"), format!("duplicate route: {} {} is already served by route \"{}\" (add a `match` to tell them apart)", route.method, route.path.raw, o.name)));
                }
                routes.push(route);
            }
        }
        // `of` must name action routes of the same service.
        for (i, r) in routes.iter().enumerate() {
            for target in r.of.iter().flatten() {
                match routes.iter().find(|o| &o.name == target) {
                    Some(o) if o.kind == RouteKind::Action => {}
                    Some(_) => issues.push((
                        format!("{spath}.routes[{i}].of"),
                        format!("\"{target}\" is not an action route"),
                    )),
                    None => issues.push((
                        format!("{spath}.routes[{i}].of"),
                        format!(
                            "no route named \"{target}\" in service \"{sname}\"{}",
                            did_you_mean(target, routes.iter().map(|o| o.name.as_str()))
                        ),
                    )),
                }
            }
        }
        services.push(Service {
            name: sname,
            // An invalid name was reported above (and the scenario is refused).
            work_id_header: header_name(rs.work_id_header.as_deref(), "x-work-id"),
            revision_header: header_name(rs.revision_header.as_deref(), "x-revision"),
            routes,
        });
    }
    let mut agents = Vec::new();
    for (aname, table) in &raw.agents {
        let apath = format!("agents.{aname}");
        if aname.is_empty()
            || !aname
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            issues.push((apath.clone(), "an agent name may use only letters, digits, '-' and '_' (it becomes a URL path segment)".into()));
        }
        if services.iter().any(|s| &s.name == aname) {
            issues.push((apath.clone(), format!("\"{aname}\" is already a service name; agents and services share the ledger's `service` field, so pick another name")));
        }
        let spec = match table.get("protocol").map(|p| p.as_str()) {
            Some(Some("a2a")) => {
                a2a::compile(table, &apath, &services, &mut issues).map(AgentSpec::A2a)
            }
            Some(Some("ag-ui")) => {
                agui::compile(table, &apath, &services, &mut issues).map(AgentSpec::AgUi)
            }
            Some(Some(other)) => {
                let hint = did_you_mean(other, ["a2a", "ag-ui"].into_iter());
                issues.push((
                    format!("{apath}.protocol"),
                    format!("unknown protocol \"{other}\"{hint}; expected \"a2a\" or \"ag-ui\""),
                ));
                None
            }
            Some(None) => {
                issues.push((
                    format!("{apath}.protocol"),
                    "expected a string: \"a2a\" or \"ag-ui\"".into(),
                ));
                None
            }
            None => {
                issues.push((
                    apath.clone(),
                    "missing key `protocol` (\"a2a\" or \"ag-ui\")".into(),
                ));
                None
            }
        };
        if let Some(spec) = spec {
            agents.push(Agent {
                name: aname.as_str().into(),
                spec,
            });
        }
    }
    if !issues.is_empty() {
        return Err(issues);
    }
    Ok(Scenario {
        agents,
        name: raw
            .name
            .or(default_name.map(str::to_string))
            .unwrap_or_else(|| "scenario".into()),
        seed: raw.seed.unwrap_or(0),
        clock: raw.clock.unwrap_or(ClockKind::Real),
        max_body_bytes: raw.max_body_bytes.unwrap_or(1 << 20),
        ledger_body_bytes: raw.ledger_body_bytes.unwrap_or(64 << 10),
        services,
        origin: origin.to_string(),
        source: source.to_string(),
    })
}

pub(crate) fn check_header(h: &str, path: &str, issues: &mut Issues) {
    if hyper::header::HeaderName::from_bytes(h.as_bytes()).is_err() {
        issues.push((
            path.to_string(),
            format!("\"{h}\" is not a valid HTTP header name"),
        ));
    }
}

fn compile_route(
    r: RawRoute,
    rpath: &str,
    svc_idem: &RawIdempotency,
    issues: &mut Issues,
) -> Option<Route> {
    let start = issues.len();
    const METHODS: &[&str] = &["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];
    if !METHODS.contains(&r.method.as_str()) {
        issues.push((
            format!("{rpath}.method"),
            format!(
                "expected one of {}, found \"{}\"",
                METHODS.join(", "),
                r.method
            ),
        ));
    }
    let path = PathTemplate::parse(&r.path)
        .map_err(|e| issues.push((format!("{rpath}.path"), e)))
        .ok();
    if r.name.is_empty() {
        issues.push((
            format!("{rpath}.name"),
            "a route needs a non-empty name".into(),
        ));
    }
    // Keys that only make sense for some kinds: reject rather than silently ignore.
    let only = |present: bool, key: &str, kinds: &[RouteKind], issues: &mut Issues| {
        if present && !kinds.contains(&r.kind) {
            let names: Vec<String> = kinds
                .iter()
                .map(|k| format!("{k:?}").to_lowercase())
                .collect();
            issues.push((
                format!("{rpath}.{key}"),
                format!(
                    "`{key}` applies only to {} routes; this route is kind = \"{}\"",
                    names.join(" and "),
                    format!("{:?}", r.kind).to_lowercase()
                ),
            ));
        }
    };
    use RouteKind::*;
    only(r.intent.is_some(), "intent", &[Action], issues);
    only(r.fates.is_some(), "fates", &[Action], issues);
    only(r.per.is_some(), "per", &[Action], issues);
    only(r.respond.is_some(), "respond", &[Action], issues);
    only(r.idempotency.is_some(), "idempotency", &[Action], issues);
    only(r.repeatable.is_some(), "repeatable", &[Action], issues);
    only(r.lag.is_some(), "lag", &[Lookup], issues);
    only(r.available.is_some(), "available", &[Lookup], issues);
    only(r.policy.is_some(), "policy", &[Cancel], issues);
    only(r.of.is_some(), "of", &[Lookup, Cancel], issues);
    if let Some(p) = &path {
        if matches!(r.kind, Lookup | Cancel) && !p.has_param("id") {
            issues.push((format!("{rpath}.path"), format!("a {} route's path needs an {{id}} segment (an action id or idempotency key), e.g. \"/v1/transfers/{{id}}\"", format!("{:?}", r.kind).to_lowercase())));
        }
    }
    let respond = match r.respond {
        Some(rr) => {
            if rr.json.is_some() && rr.body.is_some() {
                issues.push((
                    format!("{rpath}.respond"),
                    "give either `json` or `body`, not both".into(),
                ));
            }
            for h in rr.headers.keys() {
                check_header(h, &format!("{rpath}.respond.headers"), issues);
            }
            Respond {
                status: rr.status.map(|s| s.0).unwrap_or(200),
                headers: rr.headers.into_iter().collect(),
                body: match (rr.json, rr.body) {
                    (_, Some(text)) => RespondBody::Text(text),
                    (Some(json), None) => RespondBody::json(json),
                    (None, None) => default_body(),
                },
            }
        }
        None => Respond {
            status: 200,
            headers: Vec::new(),
            body: default_body(),
        },
    };
    let (policy, pol_issues) = resolve_policy(svc_idem, r.idempotency.as_ref());
    for (k, m) in pol_issues {
        issues.push((format!("{rpath}.idempotency.{k}"), m));
    }
    let matcher = match r.matcher {
        Some(m) => {
            for h in m.headers.keys() {
                check_header(h, &format!("{rpath}.match.headers"), issues);
            }
            Matcher {
                headers: m.headers.into_iter().collect(),
                json: m.json.into_iter().map(|(p, v)| (p.0, v)).collect(),
            }
        }
        None => Matcher::default(),
    };
    if issues.len() > start {
        return None;
    }
    // In byte order, each once: the order and count of an intent's keys in the ledger (a map
    // of pointer to value), worked out here rather than per request.
    let intent = {
        let mut pointers: Vec<String> = r
            .intent
            .unwrap_or_default()
            .into_iter()
            .map(|p| p.0)
            .collect();
        pointers.sort_unstable();
        pointers.dedup();
        pointers
    };
    Some(Route {
        name: r.name,
        method: r.method,
        path: path?,
        kind: r.kind,
        intent,
        fates: r.fates.unwrap_or_default(),
        per: r.per.unwrap_or_default(),
        respond,
        idempotency: policy,
        matcher,
        lag: r.lag.map(|d| d.0).unwrap_or_default(),
        available: r.available.unwrap_or(true),
        cancel_policy: r.policy.unwrap_or_default(),
        of: r.of,
        repeatable: r.repeatable.unwrap_or(false),
    })
}

fn default_body() -> RespondBody {
    RespondBody::json(serde_json::json!({"id": "{{action.id}}", "status": "succeeded"}))
}

/// Preset first (the route's, else the service's), then the service's fields, then the route's.
fn resolve_policy(svc: &RawIdempotency, route: Option<&RawIdempotency>) -> (Policy, Issues) {
    let preset = route.and_then(|r| r.preset).or(svc.preset);
    let mut p = match preset {
        Some(preset) => preset.policy(),
        // An idempotency table without a preset means "honour keys, IETF style".
        None if route.is_some()
            || svc.mode.is_some()
            || svc.header.is_some()
            || svc.retention.is_some() =>
        {
            Preset::Ietf.policy()
        }
        None => Policy::default(),
    };
    let mut issues = Vec::new();
    for layer in std::iter::once(svc).chain(route) {
        if let Some(m) = layer.mode {
            p.mode = m;
        }
        if let Some(h) = &layer.header {
            match hyper::header::HeaderName::from_bytes(h.as_bytes()) {
                Ok(name) => p.header_name = name,
                Err(_) => issues.push((
                    "header".to_string(),
                    format!("\"{h}\" is not a valid HTTP header name"),
                )),
            }
            p.header = h.clone();
        }
        if let Some(r) = layer.required {
            p.required = r;
        }
        if let Some(r) = layer.retention {
            p.retention = r.0;
        }
        if let Some(f) = &layer.fingerprint {
            p.fingerprint = match f {
                RawFingerprint::Body => Fingerprint::Body,
                RawFingerprint::None => Fingerprint::None,
                RawFingerprint::Pointers(ps) => Fingerprint::Pointers(ps.clone()),
            };
        }
        if let Some(c) = layer.cache {
            p.cache = c;
        }
        if let Some(h) = &layer.replay_header {
            if !h.is_empty() && hyper::header::HeaderName::from_bytes(h.as_bytes()).is_err() {
                issues.push((
                    "replay_header".to_string(),
                    format!("\"{h}\" is not a valid HTTP header name (\"\" for none)"),
                ));
            }
            p.replay_header = (!h.is_empty()).then(|| h.clone().into());
        }
        if let Some(e) = layer.echo_key {
            p.echo_key = e;
        }
        if let Some(s) = layer.mismatch_status {
            p.mismatch_status = s.0;
        }
        if let Some(s) = layer.conflict_status {
            p.conflict_status = s.0;
        }
        if let Some(s) = layer.missing_status {
            p.missing_status = s.0;
        }
    }
    (p, issues)
}

// ---------------------------------------------------------------------------------------------
// Locating problems in the source

fn path_string(p: &serde_path_to_error::Path) -> String {
    let mut out = String::new();
    for seg in p.iter() {
        match seg {
            serde_path_to_error::Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            serde_path_to_error::Segment::Map { key }
            | serde_path_to_error::Segment::Enum { variant: key } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            serde_path_to_error::Segment::Unknown => {}
        }
    }
    out
}

fn locate_serde_error(src: &str, path: &str, e: &toml::de::Error) -> Problem {
    let (path, message) = explain(path, e);
    let offset = match e.span() {
        Some(span) => Some(span.start),
        None => find_path(src, &path),
    };
    let (line, col) = offset.map(|o| line_col(src, o)).unwrap_or((1, 1));
    Problem {
        line,
        col,
        path,
        message,
    }
}

/// A serde error as a (key path, message) pair, with the unknown key named in the path and a
/// "did you mean" where one is close.
pub(crate) fn explain(path: &str, e: &toml::de::Error) -> (String, String) {
    let mut message = e.message().trim().to_string();
    let mut path = path.to_string();
    if let Some((field, expected)) = parse_unknown(&message) {
        if !path.ends_with(&field) {
            path = if path.is_empty() {
                field.clone()
            } else {
                format!("{path}.{field}")
            };
        }
        message = format!(
            "unknown key `{field}`{}",
            did_you_mean(&field, expected.iter().map(String::as_str))
        );
        if !expected.is_empty() {
            message.push_str(&format!(" (expected one of: {})", expected.join(", ")));
        }
    } else if let Some(hint) = parse_unknown_variant(&message) {
        message.push_str(&hint);
    } else if let Some(rest) = message.strip_prefix("unknown fate \"") {
        let name = rest.split(['"', ':']).next().unwrap_or_default();
        let hint = did_you_mean(name, crate::fate::NAMES.iter().copied());
        if let Some(at) = message.find("; expected") {
            message.insert_str(at, &hint);
        }
    }
    (path, message)
}

/// Deserialize one sub-table of the document (an agent's table) into its protocol's raw model,
/// reporting failures under `prefix` (e.g. `agents.researcher`).
pub(crate) fn sub_table<T: serde::de::DeserializeOwned>(
    table: &toml::Table,
    prefix: &str,
    issues: &mut Issues,
) -> Option<T> {
    match serde_path_to_error::deserialize(toml::Value::Table(table.clone())) {
        Ok(v) => Some(v),
        Err(e) => {
            let sub = path_string(e.path());
            let full = if sub.is_empty() {
                prefix.to_string()
            } else if sub.starts_with('[') {
                format!("{prefix}{sub}")
            } else {
                format!("{prefix}.{sub}")
            };
            issues.push(explain(&full, e.inner()));
            None
        }
    }
}

/// `unknown field `x`, expected one of `a`, `b`` → ("x", ["a", "b"]).
fn parse_unknown(msg: &str) -> Option<(String, Vec<String>)> {
    let rest = msg.strip_prefix("unknown field `")?;
    let (field, rest) = rest.split_once('`')?;
    Some((field.to_string(), backticked(rest)))
}

fn parse_unknown_variant(msg: &str) -> Option<String> {
    let rest = msg.strip_prefix("unknown variant `")?;
    let (found, rest) = rest.split_once('`')?;
    let hint = did_you_mean(found, backticked(rest).iter().map(String::as_str));
    (!hint.is_empty()).then_some(hint)
}

fn backticked(s: &str) -> Vec<String> {
    s.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// `; did you mean `fates`?` when a candidate is within a small edit distance.
pub fn did_you_mean<'a>(word: &str, candidates: impl Iterator<Item = &'a str>) -> String {
    candidates
        .map(|c| (edit_distance(word, c), c))
        .filter(|(d, c)| *d <= (c.len().max(word.len()) / 3).max(1))
        .min()
        .map(|(_, c)| format!("; did you mean `{c}`?"))
        .unwrap_or_default()
}

/// Optimal-string-alignment distance: like Levenshtein, but a swap of two neighbours (`nmae`)
/// costs one edit, the commonest typo.
fn edit_distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut v = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                v = v.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = v;
        }
    }
    d[a.len()][b.len()]
}

fn locate(src: &str, path: String, message: String) -> Problem {
    let (line, col) = find_path(src, &path)
        .map(|o| line_col(src, o))
        .unwrap_or((1, 1));
    Problem {
        line,
        col,
        path,
        message,
    }
}

/// Byte offset of the value (or key) at a `a.b[2].c` path in the document, if it exists.
fn find_path(src: &str, path: &str) -> Option<usize> {
    use toml::de::{DeTable, DeValue};
    let doc = DeTable::parse(src).ok()?;
    let mut segs = Vec::new();
    for part in path.split('.') {
        let (key, mut rest) = part
            .split_once('[')
            .map(|(k, r)| (k, Some(r)))
            .unwrap_or((part, None));
        if !key.is_empty() {
            segs.push(Err(key.to_string()));
        }
        while let Some(r) = rest {
            let (idx, after) = r.split_once(']')?;
            segs.push(Ok(idx.parse::<usize>().ok()?));
            rest = after.strip_prefix('[');
        }
    }
    let mut best = doc.span().start;
    let mut table = Some(doc.get_ref());
    let mut array: Option<&toml::de::DeArray> = None;
    for seg in segs {
        let value = match (seg, table, array) {
            (Err(key), Some(t), _) => {
                let (k, v) = t.iter().find(|(k, _)| k.get_ref() == &key)?;
                best = k.span().start;
                v
            }
            (Ok(i), _, Some(a)) => {
                let v = a.get(i)?;
                best = v.span().start;
                v
            }
            _ => return Some(best),
        };
        table = None;
        array = None;
        match value.get_ref() {
            DeValue::Table(t) => table = Some(t),
            DeValue::Array(a) => array = Some(a),
            _ => {}
        }
    }
    Some(best)
}

/// 1-based line and column (in characters) of a byte offset.
fn line_col(src: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(src.len());
    let before = &src[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before
        .rsplit('\n')
        .next()
        .map(|l| l.chars().count())
        .unwrap_or(0)
        + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(src: &str) -> String {
        Scenario::from_toml(src, "s.toml").unwrap_err().to_string()
    }

    #[test]
    fn the_quickstart_validates() {
        let s = Scenario::quickstart();
        assert!(s.service("payments").is_some());
    }

    #[test]
    fn path_templates_match_whole_segments() {
        let t = PathTemplate::parse("/v1/transfers/{id}").unwrap();
        assert_eq!(
            t.matches("/v1/transfers/act_3"),
            Some(vec![("id".into(), "act_3".into())])
        );
        assert_eq!(t.matches("/v1/transfers"), None);
        assert_eq!(t.matches("/v1/transfers/"), None);
        assert!(PathTemplate::parse("v1").is_err());
        assert!(PathTemplate::parse("/v1/x{id}").is_err());
        // Without parameters, compared whole: the same answers as segment by segment.
        let l = PathTemplate::parse("/v1/transfers").unwrap();
        for (path, fits) in [
            ("/v1/transfers", true),
            ("//v1/transfers", true),
            ("/v1/transfers/", false),
            ("/v1/transfer", false),
            ("/v1//transfers", false),
            ("/v1/transfers/x", false),
            ("/v1", false),
            ("", false),
        ] {
            assert_eq!(l.matches(path), fits.then(Vec::new), "{path}");
        }
        assert_eq!(PathTemplate::parse("/").unwrap().matches("/"), Some(vec![]));
        assert_eq!(PathTemplate::parse("/").unwrap().matches("/a"), None);
    }

    #[test]
    fn misspelt_key_is_located_with_a_hint() {
        let src = "name = \"x\"\n[services.payments]\n[[services.payments.routes]]\nname = \"a\"\nmethod = \"POST\"\npath = \"/a\"\nkind = \"action\"\nfatez = [\"respond\"]\n";
        let e = err(src);
        assert!(e.starts_with("s.toml:8:1: services.payments.routes[0].fatez: unknown key `fatez`; did you mean `fates`?"), "{e}");
    }

    #[test]
    fn semantic_problems_name_their_key_path() {
        let src = "[services._admin]\n";
        assert_eq!(err(src), "s.toml:1:11: services._admin: \"_admin\" is reserved for doubleagent's own endpoints; pick another service name");
    }

    #[test]
    fn edit_distance_suggests_close_words_only() {
        assert_eq!(
            did_you_mean("fatez", ["fates", "intent"].into_iter()),
            "; did you mean `fates`?"
        );
        assert_eq!(did_you_mean("zzz", ["fates", "intent"].into_iter()), "");
        assert_eq!(
            did_you_mean("nmae", ["name", "seed"].into_iter()),
            "; did you mean `name`?"
        );
    }
}
