//! Canaries: the `cny-` tokens agents issue in their results, found in an outside request (its
//! path, headers or body) and noted in its ledger entry as the verifier's evidence that a result
//! was used (ACC-2).

use hyper::HeaderMap;
use serde_json::json;

use crate::ledger::Record;

/// The canaries (`cny-` + 16 hex digits) an outside request carries in its path, its headers'
/// values or its body. The ledger may keep only part of a body, so the request itself is
/// scanned, all of it: callers run this before they lock the world.
pub(super) fn canaries_in(path: &str, headers: &HeaderMap, body: &[u8]) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let parts = std::iter::once(path.as_bytes())
        .chain(headers.values().map(|v| v.as_bytes()))
        .chain(std::iter::once(body));
    // A text shorter than a canary (most paths and header values) is not searched.
    for bytes in parts.filter(|b| b.len() >= 20) {
        // Each '-' and the three bytes before it: cheaper on short texts (a path, a header)
        // than a substring searcher.
        let starts = memchr::memchr_iter(b'-', bytes).filter_map(|dash| dash.checked_sub(3));
        for start in starts.filter(|&s| &bytes[s..s + 3] == b"cny") {
            let token = bytes.get(start..start + 20);
            if let Some(t) = token.filter(|t| t[4..].iter().all(u8::is_ascii_hexdigit)) {
                let t = String::from_utf8_lossy(t).into_owned();
                if !found.contains(&t) {
                    found.push(t);
                }
            }
        }
    }
    found
}

/// Notes the canaries [`canaries_in`] found in the record's `detail.canaries`.
pub(super) fn note_canaries(found: Vec<String>, record: &mut Record) {
    if found.is_empty() {
        return;
    }
    let mut detail = record
        .detail
        .as_ref()
        .map_or_else(|| json!({}), |d| d.value());
    if let Some(m) = detail.as_object_mut() {
        m.insert("canaries".into(), json!(found));
    }
    record.detail = Some(detail.into());
}
