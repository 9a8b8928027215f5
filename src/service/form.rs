//! What a request's body says, in one JSON model whatever its encoding: JSON as it is; an
//! `application/x-www-form-urlencoded` body (Stripe, Twilio, older APIs) decoded by `serde_qs`
//! with bracket nesting (`metadata[order]=7` an object, `items[0][price]=p_1` and `expand[]=a`
//! arrays, every value a string). Intents, fingerprints, `match.json`, templates and the
//! ledger's `body` all read this model, so a form and the same fields as JSON are judged alike
//! (ACC-1, REC-4).

use hyper::header::CONTENT_TYPE;
use hyper::HeaderMap;
use serde_json::Value;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    /// Anything but a form: read as JSON when it is (and kept as text when it is not).
    Json,
    /// Declared JSON (`application/json`, `…+json`): a body that does not parse is malformed.
    DeclaredJson,
    Form,
}

/// The encoding a request declares by its `Content-Type` (parameters such as `charset`
/// ignored).
pub fn encoding(headers: &HeaderMap) -> Encoding {
    let declared = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(str::trim);
    match declared {
        Some(t) if t.eq_ignore_ascii_case("application/x-www-form-urlencoded") => Encoding::Form,
        Some(t) if t.eq_ignore_ascii_case("application/json") || suffix(t, b"+json") => {
            Encoding::DeclaredJson
        }
        _ => Encoding::Json,
    }
}

/// The media types an `Accept` or `Content-Type` value names, in order, their parameters
/// (`;q=0.9`, `;charset=utf-8`) left out; compare them ignoring ASCII case.
pub fn media_types(value: &str) -> impl Iterator<Item = &str> {
    value
        .split(',')
        .map(|range| range.split(';').next().unwrap_or("").trim())
}

fn suffix(t: &str, suffix: &[u8]) -> bool {
    let t = t.as_bytes();
    t.len() >= suffix.len() && t[t.len() - suffix.len()..].eq_ignore_ascii_case(suffix)
}

/// Why a body that declares JSON is not JSON: `None` when it is, or when it is empty (no body
/// to read). Asked only of a body [`decode`] found no model in.
pub fn malformed(encoding: Encoding, body: &[u8]) -> Option<String> {
    if encoding != Encoding::DeclaredJson || body.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    let e = serde_json::from_slice::<serde::de::IgnoredAny>(body).err()?;
    Some(format!("the body is not valid JSON ({e})"))
}

/// The body's JSON model, or `None` when it is not valid in its encoding (then kept as text).
pub fn decode(encoding: Encoding, body: &[u8]) -> Option<Value> {
    match encoding {
        Encoding::Json | Encoding::DeclaredJson => serde_json::from_slice(body).ok(),
        // Not UTF-8 after percent-decoding, or nested past serde_qs's depth: not a form any
        // provider would read either.
        Encoding::Form => serde_qs::Config::new().deserialize_bytes(body).ok(),
    }
}
