//! Compiling one A2A script (an agent's top-level keys, or a behaviour's over them): its
//! status steps, side-effect calls, result and artifacts checked against the scenario's
//! services and laid out on the task's timeline.

use hyper::header::HeaderName;

use super::*;

/// A script from its own keys over `parent`'s. A behaviour whose outcome is not `completed`
/// does not inherit the parent's result or artifacts: a rejection carrying the agent's normal
/// result would be a contradiction nobody asked for.
pub(super) fn compile_script(
    raw: &RawBehavior,
    parent: &Script,
    path: &str,
    services: &[Service],
    issues: &mut Issues,
) -> Option<Script> {
    let start = issues.len();
    let outcome = raw.outcome.unwrap_or(parent.outcome);
    let reply = raw.reply.unwrap_or(parent.reply);
    let inherit_results = raw.outcome.is_none() || outcome == Outcome::Completed;
    let updates = match &raw.updates {
        Some(us) => us
            .iter()
            .map(|u| StatusStep {
                at: u.at.map(|d| d.0).unwrap_or_default(),
                state: u.state,
                message: u.message.clone(),
            })
            .collect(),
        None => parent.updates.clone(),
    };
    let steps = match &raw.steps {
        Some(steps) => steps
            .iter()
            .enumerate()
            .filter_map(|(i, s)| compile_step(s, &format!("{path}.steps[{i}]"), services, issues))
            .collect(),
        None => parent.steps.clone(),
    };
    let explicit = raw.result.is_some() || raw.artifacts.is_some();
    let mut artifacts: Vec<ArtifactSpec> = raw
        .result
        .iter()
        .map(|r| compile_result(r, path, issues))
        .collect();
    for (i, a) in raw.artifacts.iter().flatten().enumerate() {
        let apath = format!("{path}.artifacts[{i}]");
        artifacts.push(compile_artifact(a, &apath, i, issues));
    }
    if !explicit && inherit_results {
        artifacts = parent.artifacts.clone();
    }
    let script = Script {
        work: raw.work.map(|d| d.0).unwrap_or(parent.work),
        cancel: raw.cancel.unwrap_or(parent.cancel),
        outcome,
        reply,
        // A behaviour with its own outcome says its own final words.
        message: raw
            .message
            .clone()
            .or_else(|| parent.message.clone().filter(|_| raw.outcome.is_none())),
        updates,
        steps,
        artifacts,
    };
    check_schedule(&script, raw, path, issues);
    crate::scenario::placeholders::check_a2a(&rendered_texts(raw, path), issues);
    if script.reply == ReplyKind::Message
        && (raw.steps.as_ref().is_some_and(|s| !s.is_empty()) || raw.artifacts.is_some())
    {
        issues.add(
            format!("{path}.reply"),
            "a direct Message reply has no task, so it cannot have `steps` or `artifacts` (its text is `message`, or the `result` parts)",
        );
    }
    (issues.len() == start).then_some(script)
}

/// The texts of a script that a task renders (see `agent::a2a::task::render`), with their key
/// paths: what it defines itself, not what it inherits (that was checked where it was written).
fn rendered_texts<'r>(raw: &'r RawBehavior, path: &str) -> Vec<(String, &'r str)> {
    use crate::scenario::placeholders::json_strings;
    let mut out = Vec::new();
    if let Some(m) = &raw.message {
        out.push((format!("{path}.message"), m.as_str()));
    }
    for (i, u) in raw.updates.iter().flatten().enumerate() {
        if let Some(m) = &u.message {
            out.push((format!("{path}.updates[{i}].message"), m.as_str()));
        }
    }
    for (i, st) in raw.steps.iter().flatten().enumerate() {
        let at = format!("{path}.steps[{i}].call");
        if let Some(j) = &st.call.json {
            json_strings(j, format!("{at}.json"), &mut out);
        }
        if let Some(b) = &st.call.body {
            out.push((format!("{at}.body"), b.as_str()));
        }
        for (k, v) in &st.call.headers {
            out.push((format!("{at}.headers.{k}"), v.as_str()));
        }
    }
    if let Some(r) = &raw.result {
        let at = format!("{path}.result");
        for (k, v) in [("text", &r.text), ("raw", &r.raw), ("url", &r.url)] {
            if let Some(t) = v {
                out.push((format!("{at}.{k}"), t.as_str()));
            }
        }
        if let Some(d) = &r.data {
            json_strings(d, format!("{at}.data"), &mut out);
        }
    }
    for (i, a) in raw.artifacts.iter().flatten().enumerate() {
        for (j, p) in a.parts.iter().enumerate() {
            let at = format!("{path}.artifacts[{i}].parts[{j}]");
            for (k, v) in [("text", &p.text), ("raw", &p.raw), ("url", &p.url)] {
                if let Some(t) = v {
                    out.push((format!("{at}.{k}"), t.as_str()));
                }
            }
            for (k, v) in [("data", &p.data), ("metadata", &p.metadata)] {
                if let Some(d) = v {
                    json_strings(d, format!("{at}.{k}"), &mut out);
                }
            }
        }
    }
    out
}

/// The `result` shorthand: one artifact named `result` of its text, raw, url and data parts.
fn compile_result(r: &RawResult, path: &str, issues: &mut Issues) -> ArtifactSpec {
    let plain = |content| PartSpec {
        content,
        filename: None,
        media_type: None,
        metadata: None,
    };
    let file = |content| PartSpec {
        filename: r.filename.clone(),
        media_type: r.media_type.clone(),
        ..plain(content)
    };
    let parts: Vec<PartSpec> = [
        r.text.clone().map(PartContent::Text).map(plain),
        r.raw.clone().map(PartContent::Raw).map(file),
        r.url.clone().map(PartContent::Url).map(file),
        r.data.clone().map(PartContent::Data).map(plain),
    ]
    .into_iter()
    .flatten()
    .collect();
    if parts.is_empty() {
        let m = "a result needs at least one of `text`, `raw`, `url`, `data`";
        issues.add(format!("{path}.result"), m);
    }
    ArtifactSpec {
        at: None,
        id: "result".into(),
        name: Some(r.name.clone().unwrap_or_else(|| "result".into())),
        description: None,
        parts,
        append: false,
        last_chunk: false,
    }
}

/// One of `[[...artifacts]]`, the `i`th, at `apath`.
fn compile_artifact(a: &RawArtifact, apath: &str, i: usize, issues: &mut Issues) -> ArtifactSpec {
    let mut parts = Vec::new();
    for (j, p) in a.parts.iter().enumerate() {
        let contents = [
            p.text.clone().map(PartContent::Text),
            p.raw.clone().map(PartContent::Raw),
            p.url.clone().map(PartContent::Url),
            p.data.clone().map(PartContent::Data),
        ];
        let mut given: Vec<PartContent> = contents.into_iter().flatten().collect();
        if given.len() != 1 {
            let m = "a part has exactly one of `text`, `raw`, `url`, `data`";
            issues.add(format!("{apath}.parts[{j}]"), m);
            continue;
        }
        if p.metadata.as_ref().is_some_and(|m| !m.is_object()) {
            issues.add(
                format!("{apath}.parts[{j}].metadata"),
                "metadata is a table",
            );
        }
        parts.push(PartSpec {
            content: given.remove(0),
            filename: p.filename.clone(),
            media_type: p.media_type.clone(),
            metadata: p.metadata.clone(),
        });
    }
    if a.parts.is_empty() {
        issues.add(
            format!("{apath}.parts"),
            "an artifact needs at least one part",
        );
    }
    ArtifactSpec {
        at: a.at.map(|d| d.0),
        id: a
            .id
            .clone()
            .unwrap_or_else(|| format!("artifact-{}", i + 1)),
        name: a.name.clone(),
        description: a.description.clone(),
        parts,
        append: a.append,
        last_chunk: a.last_chunk,
    }
}

/// Everything scheduled must fall within the work: after the final state nothing runs.
fn check_schedule(script: &Script, raw: &RawBehavior, path: &str, issues: &mut Issues) {
    let late = |at: Duration| at > script.work;
    let work_txt = crate::clock::format_duration(script.work);
    let mut late_issue = |key: String, at: Duration| {
        issues.add(
            key,
            format!(
                "at = \"{}\" comes after the task ends (work = \"{work_txt}\"); nothing runs after the final state",
                crate::clock::format_duration(at)
            ),
        )
    };
    for (i, u) in script.updates.iter().enumerate() {
        if late(u.at) && raw.updates.is_some() {
            late_issue(format!("{path}.updates[{i}].at"), u.at);
        }
    }
    for (i, s) in script.steps.iter().enumerate() {
        if late(s.at) {
            let key = if raw.steps.is_some() {
                format!("{path}.steps[{i}].at")
            } else {
                format!("{path}.work")
            };
            late_issue(key, s.at);
        }
    }
    for (i, a) in script.artifacts.iter().enumerate() {
        if let Some(at) = a.at.filter(|at| late(*at)) {
            let key = if raw.artifacts.is_some() {
                format!("{path}.artifacts[{i}].at")
            } else {
                format!("{path}.work")
            };
            late_issue(key, at);
        }
    }
}

fn compile_step(
    s: &RawStep,
    path: &str,
    services: &[Service],
    issues: &mut Issues,
) -> Option<CallStep> {
    let call = &s.call;
    let (svc, route) = crate::scenario::find_route(
        services,
        (&call.service, &call.route),
        &format!("{path}.call"),
        issues,
    )?;
    if let Some((at, problem)) = call_problem(call, route) {
        issues.add(format!("{path}.{at}"), problem);
        return None;
    }
    Some(CallStep {
        at: s.at.map_or(Duration::ZERO, |d| d.0),
        service: svc.name.clone(),
        route: route.name.clone(),
        method: route.method.clone(),
        path: call.path.clone().unwrap_or_else(|| route.path.raw.clone()),
        headers: call.headers.clone().into_iter().collect(),
        json: call.json.clone(),
        fixed_json: call
            .json
            .as_ref()
            .filter(|j| !has_placeholder(j))
            .map(|j| j.to_string().into()),
        body: call.body.clone(),
    })
}

/// What is wrong with a step's call of `route`, if anything: the key it is at, and why.
fn call_problem(call: &RawCall, route: &crate::scenario::Route) -> Option<(&'static str, String)> {
    let (name, raw_path) = (&route.name, &route.path.raw);
    if let Some(p) = &call.path {
        if route
            .path
            .matches(p.split('?').next().unwrap_or(""))
            .is_none()
        {
            let m = format!("\"{p}\" does not fit route \"{name}\"'s path {raw_path}");
            return Some(("call.path", m));
        }
    } else if raw_path.contains('{') {
        let m =
            format!("route \"{name}\" has path parameters ({raw_path}); give the concrete `path`");
        return Some(("call", m));
    }
    if call.json.is_some() && call.body.is_some() {
        return Some(("call", "give either `json` or `body`, not both".into()));
    }
    let bad_header = |h: &&String| HeaderName::from_bytes(h.as_bytes()).is_err();
    if let Some(h) = call.headers.keys().find(bad_header) {
        return Some((
            "call.headers",
            format!("\"{h}\" is not a valid HTTP header name"),
        ));
    }
    let body_to_get =
        route.kind != RouteKind::Action && call.json.is_some() && route.method == "GET";
    body_to_get.then(|| {
        let m = format!(
            "route \"{name}\" is a GET {:?} route; it takes no body",
            route.kind
        );
        ("call.json", m.to_lowercase())
    })
}
