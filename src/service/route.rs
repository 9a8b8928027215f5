//! Matching a request to its service's route, and what a request says about itself in headers
//! (work id, revision); the 404 answer, with the nearest routes, for one that matches nothing.

use std::borrow::Cow;

use hyper::header::{HeaderName, HeaderValue};
use hyper::HeaderMap;
use serde_json::Value;

use super::errors::{Failure, Kind};
use super::{Request, Response};
use crate::ledger::Record;
use crate::revision::Revision;
use crate::scenario::{did_you_mean, ErrorStyle, Route, Service};

/// The first route of `svc` that matches the request, with the path's parameters.
pub(super) fn find<'s>(
    svc: &'s Service,
    req: &Request<'_>,
    json: Option<&Value>,
) -> Option<(&'s Route, Vec<(String, String)>)> {
    svc.routes.iter().find_map(|r| {
        if r.method != req.method {
            return None;
        }
        let mut params = r.path.matches(&req.path)?;
        let headers_ok = r.matcher.headers.iter().all(|(k, v)| {
            req.headers
                .get(k.as_str())
                .is_some_and(|h| h.as_bytes() == v.as_bytes())
        });
        let json_ok = r
            .matcher
            .json
            .iter()
            .all(|(p, v)| json.and_then(|j| pointer(j, p)) == Some(v));
        if !(headers_ok && json_ok) {
            return None;
        }
        for (_, v) in &mut params {
            *v = param_text(v);
        }
        Some((r, params))
    })
}

/// The work id and revision a request carries: from in-process callers, else from its headers.
pub(super) fn work_of(
    service: Option<&Service>,
    headers: &HeaderMap,
    work_id: Option<String>,
    revision: Option<Revision>,
) -> (Option<String>, Option<Revision>) {
    let Some(s) = service else {
        return (work_id, revision);
    };
    let text = |v: &HeaderValue| header_text(v).into_owned();
    let work_id = work_id.or_else(|| header_value(headers, &s.work_id_header).map(text));
    let revision = revision.or_else(|| {
        header_value(headers, &s.revision_header).map(|v| Revision::parse(&header_text(v)))
    });
    (work_id, revision)
}

/// A request header's (first) value.
pub fn header_value<'h>(headers: &'h HeaderMap, name: &HeaderName) -> Option<&'h HeaderValue> {
    headers.get(name)
}

/// A header's value as text, with invalid UTF-8 replaced.
pub(crate) fn header_text(v: &HeaderValue) -> Cow<'_, str> {
    match v.to_str() {
        Ok(s) => Cow::Borrowed(s),
        Err(_) => String::from_utf8_lossy(v.as_bytes()),
    }
}

/// An idempotency key as text that is equal for equal bytes and different for different ones:
/// a UTF-8 key is itself; one that is not is its lossy text, DEL (U+007F, a byte no header value
/// can hold, so no UTF-8 key can end up the same) and the bytes in hex, e.g. `k\u{fffd}\u{7f}6bff`.
pub(super) fn key_text(v: &HeaderValue) -> String {
    bytes_text(v.as_bytes())
}

fn bytes_text(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_string(),
        Err(_) => {
            let mut t = String::from_utf8_lossy(bytes).into_owned();
            t.push('\u{7f}');
            t.push_str(&hex::encode(bytes));
            t
        }
    }
}

/// A path parameter as the client meant it: percent-decoded (a key `order 7` is looked up as
/// `order%207`), and as [`key_text`] writes the same bytes sent in a header.
fn param_text(raw: &str) -> String {
    match raw.contains('%') {
        true => bytes_text(&percent_encoding::percent_decode_str(raw).collect::<Vec<u8>>()),
        false => raw.to_string(),
    }
}

/// The 404 for a request no route matched: the services there are, or the routes nearest to it.
pub(super) fn unmatched(all: &[Service], service: Option<&Service>, req: &Record) -> Response {
    let asked = format!("{} {}", req.method, req.path);
    match service {
        None => {
            let names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
            let message = format!(
                "no service named \"{}\"{}",
                req.service,
                did_you_mean(&req.service, names.iter().copied())
            );
            // No service, no provider: doubleagent's own shape.
            Failure::new(404, Kind::Unmatched, message)
                .with("services", names)
                .respond(&ErrorStyle::GENERIC, req.seq)
        }
        Some(svc) => {
            let mut closest: Vec<(usize, String)> = svc
                .routes
                .iter()
                .map(|r| {
                    let cand = format!("{} {}", r.method, r.path.raw);
                    (distance(&asked, &cand), format!("{cand} ({})", r.name))
                })
                .collect();
            closest.sort();
            let message = format!("no route of service \"{}\" matches {asked}", svc.name);
            let closest: Vec<String> = closest.into_iter().take(3).map(|(_, c)| c).collect();
            Failure::new(404, Kind::Unmatched, message)
                .with("closest", closest)
                .respond(&svc.errors, req.seq)
        }
    }
}

fn distance(a: &str, b: &str) -> usize {
    // Common-prefix length counts most: "/v1/transfer" is nearer "/v1/transfers" than "/v2".
    let common = a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
    a.chars().count().max(b.chars().count()) - common
}

/// `Value::pointer` without its allocation per token (it unescapes every token into a new
/// string); only a token that holds an escape (`~0`, `~1`) is unescaped. Runs several times per
/// request (matchers, intent, placeholders).
pub(super) fn pointer<'v>(v: &'v Value, pointer: &str) -> Option<&'v Value> {
    if pointer.is_empty() {
        return Some(v);
    }
    let rest = pointer.strip_prefix('/')?;
    rest.split('/').try_fold(v, |v, token| {
        if token.contains('~') {
            step(v, &token.replace("~1", "/").replace("~0", "~"))
        } else {
            step(v, token)
        }
    })
}

fn step<'v>(v: &'v Value, token: &str) -> Option<&'v Value> {
    match v {
        Value::Object(m) => m.get(token),
        Value::Array(a) => {
            // As RFC 6901 (and `Value::pointer`): digits only, no leading zeros.
            if token.starts_with('+') || (token.len() > 1 && token.starts_with('0')) {
                return None;
            }
            a.get(token.parse::<usize>().ok()?)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn pointers_find_what_value_pointer_finds() {
        let v = serde_json::json!({"a/b": [1, {"c~d": 2.5}], "": {"x": null}, "0": [7]});
        for p in [
            "",
            "/a~1b",
            "/a~1b/1/c~0d",
            "/a~1b/01",
            "/a~1b/+1",
            "/a~1b/9",
            "/",
            "//x",
            "/0/0",
            "x",
        ] {
            assert_eq!(super::pointer(&v, p), v.pointer(p), "{p}");
        }
    }
}
