//! The TanStack AI binding of interrupts: what `@tanstack/ai-client@0.33.2`'s headless `ChatClient` needs to answer an interrupt.
//!
//! A plain AG-UI interrupt reaches that client as `kind:"unbound", canResolve:false`
//! (display-only). It becomes answerable (`kind:"generic", canResolve:true`) when it
//! carries `metadata["tanstack:interruptBinding"]` with (read from
//! `@tanstack/ai/src/interrupt-resume.ts` `readInterruptBinding` and
//! `@tanstack/ai-client/src/interrupt-manager.ts`):
//! - `v: 1`, `kind: "generic"`, `interruptId` equal to the interrupt's `id`;
//! - `interruptedRunId` equal to the runId of the *request* the client sent (it tracks its
//!   own request run id, not RUN_FINISHED's), `generation` a non-negative integer, the same
//!   on every interrupt of the batch (otherwise the client assumes 0);
//! - when the interrupt has a `responseSchema`: `responseSchemaHash` equal to
//!   `"sha256:" + hex(sha256(canonical JSON of responseSchema))`, else the item is not
//!   resumable;
//! - when present, `expiresAt` must parse with JS `Date.parse`, else the binding is ignored.
//!
//! The client never checks expiry itself and, for a mixed batch, sends a `resume` that
//! omits the unbound interrupts: the producer-side rules have to catch that.

use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};

use super::interrupt::Interrupt;

pub const INTERRUPT_BINDING_KEY: &str = "tanstack:interruptBinding";
pub const BINDING_VERSION: u64 = 1;

/// Adds to `interrupt`, raised by the run `interrupted_run_id`, its generic binding under
/// `metadata`, keeping other keys. Every batch is generation 0.
pub fn bind_generic(interrupt: &mut Interrupt, interrupted_run_id: &str) {
    let mut b = json!({
        "v": BINDING_VERSION,
        "kind": "generic",
        "interruptId": interrupt.id,
        "interruptedRunId": interrupted_run_id,
        "generation": 0,
    });
    if let Some(schema) = &interrupt.response_schema {
        b["responseSchemaHash"] = json!(response_schema_hash(schema));
    }
    if let Some(expires_at) = &interrupt.expires_at {
        b["expiresAt"] = json!(expires_at);
    }
    interrupt
        .metadata
        .get_or_insert_with(Map::new)
        .insert(INTERRUPT_BINDING_KEY.into(), b);
}

/// `"sha256:<hex>"` of the canonical JSON of a response schema.
pub fn response_schema_hash(schema: &Map<String, Value>) -> String {
    let canonical = canonical_json(&Value::Object(schema.clone()));
    format!(
        "sha256:{}",
        hex::encode(Sha256::digest(canonical.as_bytes()))
    )
}

/// TanStack's `canonicalInterruptJson`: keys sorted (UTF-16 code-unit order), no
/// whitespace, strings and numbers as `JSON.stringify` writes them.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Number(n) => out.push_str(&js_number(n)),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::to_string(k).unwrap_or_default());
                out.push(':');
                write_canonical(&map[k], out);
            }
            out.push('}');
        }
        // `null`, booleans and strings: serde_json writes them as `JSON.stringify` does.
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// `JSON.stringify(number)`.
fn js_number(n: &serde_json::Number) -> String {
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    let f = n.as_f64().unwrap_or(0.0);
    if f == 0.0 {
        return "0".into();
    }
    let abs = f.abs();
    if (1e-6..1e21).contains(&abs) {
        // Rust's Display is the shortest round-trip decimal without exponent, as JS.
        return format!("{f}");
    }
    let e = format!("{f:e}"); // e.g. "1.5e21", "1e-7"
    match e.split_once('e') {
        Some((mantissa, exp)) if !exp.starts_with('-') => format!("{mantissa}e+{exp}"),
        _ => e,
    }
}
