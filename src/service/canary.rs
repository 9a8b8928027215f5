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

#[cfg(test)]
mod tests {
    use hyper::header::HeaderValue;

    use super::*;

    #[test]
    fn acc2_canaries_are_found_once_each_wherever_they_sit_and_near_misses_are_not() {
        let (a, b) = ("cny-0123456789abcdef", "cny-fedcba9876543210");
        let mut headers = HeaderMap::new();
        headers.insert("x-note", HeaderValue::from_static(a));
        headers.insert("x-short", HeaderValue::from_static("cny-0123"));
        let body = format!(
            "{a} cn-0123456789abcdef cny-0123456789abcdeg cnycny-{} {b}",
            &b[4..]
        );
        let found = canaries_in(&format!("/v1/{b}/x"), &headers, body.as_bytes());
        assert_eq!(found, vec![b.to_string(), a.to_string()]);
        // A canary cut short by the end of the text is none.
        assert!(canaries_in("/", &HeaderMap::new(), &a.as_bytes()[..19]).is_empty());
    }
}
