//! Compiling a parsed scenario: every name, header and pointer checked (all problems at once),
//! routes' policies resolved and their per-request facts worked out once, at load.

use std::collections::{BTreeMap, HashMap};

use super::*;

pub(super) fn compile(
    raw: RawScenario,
    default_name: Option<&str>,
    source: &str,
) -> Result<Scenario, Issues> {
    let mut issues = Issues::default();
    let mut services = Vec::new();
    for (sname, rs) in raw.services {
        services.push(compile_service(sname, rs, &mut issues));
    }
    let agents = compile_agents(&raw.agents, &services, &mut issues);
    let mcp = mcp::compile_all(&raw.mcp, &services, &mut issues);
    if !issues.is_empty() {
        return Err(issues);
    }
    Ok(Scenario {
        agents,
        mcp,
        name: raw
            .name
            .or(default_name.map(str::to_string))
            .unwrap_or_else(|| "scenario".into()),
        seed: raw.seed.unwrap_or(0),
        clock: raw.clock.unwrap_or(ClockKind::Real),
        max_body_bytes: raw.max_body_bytes.unwrap_or(1 << 20),
        ledger_body_bytes: raw.ledger_body_bytes.unwrap_or(64 << 10),
        services,
        source: source.to_string(),
    })
}

/// One service: its name, headers and routes, checked together (duplicates, `of` targets).
fn compile_service(sname: String, rs: RawService, issues: &mut Issues) -> Service {
    let spath = format!("services.{sname}");
    if RESERVED.contains(&sname.as_str()) {
        issues.add(&spath, format!("\"{sname}\" is reserved for doubleagent's own endpoints; pick another service name"));
    } else {
        check_segment(&sname, &spath, "a service name", issues);
    }
    if let Some(t) = &rs.error {
        super::placeholders::check_error(t, format!("{spath}.error"), issues);
    }
    let svc_idem = rs.idempotency.unwrap_or_default();
    let headers = [
        ("work_id_header", &rs.work_id_header),
        ("revision_header", &rs.revision_header),
    ];
    for (key, h) in headers {
        if let Some(h) = h {
            check_header(h, &format!("{spath}.{key}"), issues);
        }
    }
    check_idempotency(&svc_idem, &format!("{spath}.idempotency"), issues);
    let mut routes: Vec<Route> = Vec::new();
    // Indexes by name and by (method, path), so checking a route against those before it costs
    // the same for the 100,000th route as for the first.
    let mut by_name: HashMap<String, usize> = HashMap::new();
    let mut by_shape: HashMap<(String, String), Vec<usize>> = HashMap::new();
    for (i, r) in rs.routes.into_iter().enumerate() {
        let rpath = format!("{spath}.routes[{i}]");
        if let Some(route) = compile_route(r, &rpath, &svc_idem, rs.error.as_ref(), issues) {
            if by_name.contains_key(&route.name) {
                let m = format!(
                    "duplicate route name \"{}\" in service \"{sname}\"",
                    route.name
                );
                issues.add(format!("{rpath}.name"), m);
            }
            let same = by_shape
                .entry((route.method.clone(), route.path.raw.clone()))
                .or_default();
            if let Some(o) = same
                .iter()
                .map(|&j| &routes[j])
                .find(|o| o.matcher == route.matcher)
            {
                issues.add(format!("{rpath}.path"), format!("duplicate route: {} {} is already served by route \"{}\" (add a `match` to tell them apart)", route.method, route.path.raw, o.name));
            }
            same.push(routes.len());
            by_name.entry(route.name.clone()).or_insert(routes.len());
            routes.push(route);
        }
    }
    // `of` must name action routes of the same service.
    for (i, r) in routes.iter().enumerate() {
        for target in r.of.iter().flatten() {
            let problem = match by_name.get(target).map(|&j| &routes[j]) {
                Some(o) if o.kind == RouteKind::Action => continue,
                Some(_) => format!("\"{target}\" is not an action route"),
                None => format!(
                    "no route named \"{target}\" in service \"{sname}\"{}",
                    did_you_mean(target, routes.iter().map(|o| o.name.as_str()))
                ),
            };
            issues.add(format!("{spath}.routes[{i}].of"), problem);
        }
    }
    Service {
        name: sname,
        // An invalid name was reported above (and the scenario is refused).
        work_id_header: header_name(rs.work_id_header.as_deref(), "x-work-id"),
        revision_header: header_name(rs.revision_header.as_deref(), "x-revision"),
        routes,
        errors: ErrorStyle {
            shape: resolve_policy(&svc_idem, None).errors,
            template: rs.error,
        },
    }
}

/// The agents, each compiled by its protocol's module.
fn compile_agents(
    raw: &BTreeMap<String, toml::Table>,
    services: &[Service],
    issues: &mut Issues,
) -> Vec<Agent> {
    let mut agents = Vec::new();
    for (aname, table) in raw {
        let apath = format!("agents.{aname}");
        check_segment(aname, &apath, "an agent name", issues);
        if services.iter().any(|s| &s.name == aname) {
            issues.add(&apath, format!("\"{aname}\" is already a service name; agents and services share the ledger's `service` field, so pick another name"));
        }
        let spec = match table.get("protocol").map(|p| p.as_str()) {
            Some(Some("a2a")) => a2a::compile(table, &apath, services, issues).map(AgentSpec::A2a),
            Some(Some("ag-ui")) => {
                agui::compile(table, &apath, services, issues).map(AgentSpec::AgUi)
            }
            Some(Some(other)) => {
                let hint = did_you_mean(other, ["a2a", "ag-ui"].into_iter());
                let m =
                    format!("unknown protocol \"{other}\"{hint}; expected \"a2a\" or \"ag-ui\"");
                issues.add(format!("{apath}.protocol"), m);
                None
            }
            Some(None) => {
                let m = "expected a string: \"a2a\" or \"ag-ui\"";
                issues.add(format!("{apath}.protocol"), m);
                None
            }
            None => {
                issues.add(&apath, "missing key `protocol` (\"a2a\" or \"ag-ui\")");
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
    agents
}

/// A name that becomes a URL path segment (`what` is "a service name", ...).
pub(crate) fn check_segment(name: &str, path: &str, what: &str, issues: &mut Issues) {
    let ok = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    if name.is_empty() || !name.chars().all(ok) {
        issues.add(
            path,
            format!(
                "{what} may use only letters, digits, '-' and '_' (it becomes a URL path segment)"
            ),
        );
    }
}

pub(crate) fn check_header(h: &str, path: &str, issues: &mut Issues) {
    if hyper::header::HeaderName::from_bytes(h.as_bytes()).is_err() {
        issues.add(path, format!("\"{h}\" is not a valid HTTP header name"));
    }
}

/// A header value's static text (its placeholders are the request's, sent as they come) must
/// be one the server can send: the `http` crate's `HeaderValue`, as the server builds it.
pub(crate) fn check_header_value(v: &str, path: &str, issues: &mut Issues) {
    struct Empty;
    impl crate::template::Vars for Empty {
        fn var(&self, _: &str) -> Option<Value> {
            Some(Value::String(String::new()))
        }
    }
    let text = crate::template::text(v, &Empty);
    if hyper::header::HeaderValue::from_bytes(text.as_bytes()).is_err() {
        issues.add(path, format!("{v:?} is not a valid HTTP header value"));
    }
}

fn compile_route(
    r: RawRoute,
    rpath: &str,
    svc_idem: &RawIdempotency,
    svc_error: Option<&Value>,
    issues: &mut Issues,
) -> Option<Route> {
    let start = issues.len();
    const METHODS: &[&str] = &["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"];
    if !METHODS.contains(&r.method.as_str()) {
        let m = format!(
            "expected one of {}, found \"{}\"",
            METHODS.join(", "),
            r.method
        );
        issues.add(format!("{rpath}.method"), m);
    }
    let path = PathTemplate::parse(&r.path)
        .map_err(|e| issues.add(format!("{rpath}.path"), e))
        .ok();
    if r.name.is_empty() {
        issues.add(format!("{rpath}.name"), "a route needs a non-empty name");
    }
    check_kind_keys(&r, rpath, path.as_ref(), issues);
    let (respond, lookup_respond) = match r.kind {
        RouteKind::Lookup => (
            compile_respond(None, rpath, issues),
            r.respond.map(|rr| compile_respond(Some(rr), rpath, issues)),
        ),
        _ => (compile_respond(r.respond, rpath, issues), None),
    };
    super::placeholders::check_response(&respond, path.as_ref(), rpath, false, issues);
    if let Some(answer) = &lookup_respond {
        super::placeholders::check_response(answer, path.as_ref(), rpath, true, issues);
    }
    if let Some(t) = &r.error {
        super::placeholders::check_error(t, format!("{rpath}.error"), issues);
    }
    if let Some(ri) = &r.idempotency {
        check_idempotency(ri, &format!("{rpath}.idempotency"), issues);
    }
    let policy = resolve_policy(svc_idem, r.idempotency.as_ref());
    let error_shape = policy.errors;
    let matcher = match r.matcher {
        Some(m) => {
            for (h, v) in &m.headers {
                check_header(h, &format!("{rpath}.match.headers"), issues);
                check_header_value(v, &format!("{rpath}.match.headers.{h}"), issues);
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
    let mut intent: Vec<String> = r.intent.into_iter().flatten().map(|p| p.0).collect();
    intent.sort_unstable();
    intent.dedup();
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
        id: r.id.map(|p| p.0),
        lookup_respond,
        errors: ErrorStyle {
            shape: error_shape,
            template: r.error.or_else(|| svc_error.cloned()),
        },
    })
}

/// Keys that only make sense for some kinds of route: rejected rather than silently ignored.
fn check_kind_keys(r: &RawRoute, rpath: &str, path: Option<&PathTemplate>, issues: &mut Issues) {
    let only = |present: bool, key: &str, kinds: &[RouteKind], issues: &mut Issues| {
        if present && !kinds.contains(&r.kind) {
            let names: Vec<String> = kinds
                .iter()
                .map(|k| format!("{k:?}").to_lowercase())
                .collect();
            issues.add(
                format!("{rpath}.{key}"),
                format!(
                    "`{key}` applies only to {} routes; this route is kind = \"{}\"",
                    names.join(" and "),
                    format!("{:?}", r.kind).to_lowercase()
                ),
            );
        }
    };
    use RouteKind::*;
    only(r.intent.is_some(), "intent", &[Action], issues);
    only(r.fates.is_some(), "fates", &[Action], issues);
    only(r.per.is_some(), "per", &[Action], issues);
    only(r.respond.is_some(), "respond", &[Action, Lookup], issues);
    only(r.id.is_some(), "id", &[Action], issues);
    only(r.idempotency.is_some(), "idempotency", &[Action], issues);
    only(r.repeatable.is_some(), "repeatable", &[Action], issues);
    only(r.lag.is_some(), "lag", &[Lookup], issues);
    only(r.available.is_some(), "available", &[Lookup], issues);
    only(r.policy.is_some(), "policy", &[Cancel], issues);
    only(r.of.is_some(), "of", &[Lookup, Cancel], issues);
    if matches!(r.kind, Lookup | Cancel) && path.is_some_and(|p| !p.has_param("id")) {
        issues.add(format!("{rpath}.path"), format!("a {} route's path needs an {{id}} segment (an action id or idempotency key), e.g. \"/v1/transfers/{{id}}\"", format!("{:?}", r.kind).to_lowercase()));
    }
}

/// An action route's canned response (its JSON body compiled as a template).
fn compile_respond(respond: Option<RawRespond>, rpath: &str, issues: &mut Issues) -> Respond {
    let rr = respond.unwrap_or_default();
    if rr.json.is_some() && rr.body.is_some() {
        issues.add(
            format!("{rpath}.respond"),
            "give either `json` or `body`, not both",
        );
    }
    for (h, v) in &rr.headers {
        check_header(h, &format!("{rpath}.respond.headers"), issues);
        check_header_value(v, &format!("{rpath}.respond.headers.{h}"), issues);
    }
    let default = || serde_json::json!({"id": "{{action.id}}", "status": "succeeded"});
    Respond {
        status: rr.status.map_or(200, |s| s.0),
        headers: rr.headers.into_iter().collect(),
        body: match (rr.json, rr.body) {
            (_, Some(text)) => RespondBody::Text(text),
            (json, None) => {
                let json = json.unwrap_or_else(default);
                let compiled = crate::template::Compiled::of(&json);
                RespondBody::Json(json, compiled)
            }
        },
    }
}

/// One `idempotency` table's header names, reported at its own key path `at`: once, whether
/// the table is a service's (which its routes inherit) or a route's.
fn check_idempotency(layer: &RawIdempotency, at: &str, issues: &mut Issues) {
    if let Some(h) = &layer.header {
        check_header(h, &format!("{at}.header"), issues);
    }
    if let Some(h) = &layer.replay_header {
        if !h.is_empty() && hyper::header::HeaderName::from_bytes(h.as_bytes()).is_err() {
            let m = format!("\"{h}\" is not a valid HTTP header name (\"\" for none)");
            issues.add(format!("{at}.replay_header"), m);
        }
    }
}

/// Preset first (the route's, else the service's), then the service's fields, then the route's.
/// Their headers were checked by [`check_idempotency`]; a bad one leaves the preset's name.
fn resolve_policy(svc: &RawIdempotency, route: Option<&RawIdempotency>) -> Policy {
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
    for layer in std::iter::once(svc).chain(route) {
        if let Some(h) = &layer.header {
            if let Ok(name) = hyper::header::HeaderName::from_bytes(h.as_bytes()) {
                p.header_name = name;
            }
            p.header = h.clone();
        }
        if let Some(h) = &layer.replay_header {
            p.replay_header = (!h.is_empty()).then(|| h.clone().into());
        }
        p.mode = layer.mode.unwrap_or(p.mode);
        p.required = layer.required.unwrap_or(p.required);
        p.retention = layer.retention.map_or(p.retention, |r| r.0);
        p.fingerprint = layer.fingerprint.clone().map_or(p.fingerprint, |f| f.0);
        p.cache = layer.cache.unwrap_or(p.cache);
        p.echo_key = layer.echo_key.unwrap_or(p.echo_key);
        p.mismatch_status = layer.mismatch_status.map_or(p.mismatch_status, |s| s.0);
        p.conflict_status = layer.conflict_status.map_or(p.conflict_status, |s| s.0);
        p.missing_status = layer.missing_status.map_or(p.missing_status, |s| s.0);
        p.errors = layer.errors.unwrap_or(p.errors);
        // 0: no limit.
        if let Some(n) = layer.max_key_length {
            p.max_key_length = (n > 0).then_some(n);
        }
    }
    p
}
