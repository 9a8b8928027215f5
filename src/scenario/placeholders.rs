//! Placeholders a scenario's strings may use, checked at load: one that can name nothing (an
//! unknown name, a path parameter the route lacks, `body.` without a pointer) is a `check`
//! error with its key path, never text sent to a client. Responses, `error` templates and A2A
//! agents' texts each have their own names.

use serde_json::Value;

use super::{did_you_mean, Issues, PathTemplate, Respond, RespondBody};

/// What an action's response can name (see `service::action`'s placeholder context).
const RESPONSE_NAMES: &[&str] = &[
    "action.id",
    "action.seq",
    "key",
    "work_id",
    "revision",
    "now",
    "request.method",
    "request.path",
];

/// What a lookup's answer can name, about the action found (see `service::target`'s `Found`).
const LOOKUP_NAMES: &[&str] = &[
    "id",
    "action.id",
    "action.seq",
    "state",
    "key",
    "applied_at",
    "received_at",
    "now",
    "intent",
];

/// Every placeholder in a route's response names something it can name: an action's
/// response, or (`lookup`) a lookup's answer about the action found.
pub(super) fn check_response(
    respond: &Respond,
    path: Option<&PathTemplate>,
    rpath: &str,
    lookup: bool,
    issues: &mut Issues,
) {
    let (known, who) = if lookup {
        (LOOKUP_NAMES, "a lookup's answer")
    } else {
        (RESPONSE_NAMES, "a response")
    };
    let mut texts: Vec<(String, &str)> = Vec::new();
    match &respond.body {
        RespondBody::Json(v, _) => json_strings(v, format!("{rpath}.respond.json"), &mut texts),
        RespondBody::Text(t) => texts.push((format!("{rpath}.respond.body"), t.as_str())),
    }
    for (name, value) in &respond.headers {
        texts.push((format!("{rpath}.respond.headers.{name}"), value.as_str()));
    }
    for (at, text) in texts {
        for name in crate::template::names(text) {
            let problem = if let Some(p) = name.strip_prefix("body.") {
                if !p.is_empty() && !p.starts_with('/') {
                    Some(format!("`{{{{{name}}}}}`: `body.` takes a JSON pointer, like `{{{{body./amount}}}}`"))
                } else {
                    super::check_pointer(p)
                        .err()
                        .map(|e| format!("`{{{{{name}}}}}`: {e}"))
                }
            } else if let Some(param) = name.strip_prefix("path.") {
                (!path.is_some_and(|p| p.has_param(param))).then(|| {
                    format!("`{{{{{name}}}}}`: the route's path has no parameter `{{{param}}}`")
                })
            } else {
                let also = ", body./POINTER, path.NAME";
                unknown(name, known, who, also)
            };
            if let Some(m) = problem {
                issues.add(at.clone(), m);
            }
        }
    }
}

/// Every string of a JSON value with its key path (keys are not expanded, so not included).
pub(super) fn json_strings<'v>(v: &'v Value, at: String, out: &mut Vec<(String, &'v str)>) {
    match v {
        Value::String(s) => out.push((at, s)),
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                json_strings(x, format!("{at}[{i}]"), out);
            }
        }
        Value::Object(o) => {
            for (k, x) in o {
                json_strings(x, format!("{at}.{k}"), out);
            }
        }
        _ => {}
    }
}

/// What an `error` template can name (see `service::errors::Failure`'s placeholders): the
/// failure's status, message and kind, and the facts some kinds carry.
const ERROR_NAMES: &[&str] = &[
    "error.status",
    "error.message",
    "error.kind",
    "error.id",
    "error.state",
    "error.closest",
    "error.services",
];

/// Every placeholder in an `error` template (at key path `at`) names one of [`ERROR_NAMES`].
pub(super) fn check_error(template: &Value, at: String, issues: &mut Issues) {
    let mut texts = Vec::new();
    json_strings(template, at, &mut texts);
    for (at, text) in texts {
        for name in crate::template::names(text) {
            if let Some(m) = unknown(name, ERROR_NAMES, "an error template", "") {
                issues.add(at.clone(), m);
            }
        }
    }
}

/// What an A2A agent's texts can name (see `agent::a2a::task::render`).
const A2A_NAMES: &[&str] = &[
    "canary",
    "task.id",
    "context.id",
    "revision",
    "agent",
    "message.text",
];

/// Every placeholder in an A2A agent's rendered texts names one of [`A2A_NAMES`].
pub(super) fn check_a2a(texts: &[(String, &str)], issues: &mut Issues) {
    for (at, text) in texts {
        for name in crate::template::names(text) {
            if let Some(m) = unknown(name, A2A_NAMES, "an A2A agent's texts", "") {
                issues.add(at.clone(), m);
            }
        }
    }
}

/// That `name` names nothing, if it is not one of `known`: with the nearest, and what `who` can
/// use instead (the names, then `also`).
fn unknown(name: &str, known: &[&str], who: &str, also: &str) -> Option<String> {
    (!known.contains(&name)).then(|| {
        let hint = did_you_mean(name, known.iter().copied());
        let names = known.join(", ");
        format!("`{{{{{name}}}}}` names nothing{hint} ({who} can use {names}{also})")
    })
}
