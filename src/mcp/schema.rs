//! Checking a tool call's arguments against the tool's input schema: the JSON Schema keywords
//! tool schemas use (`type`, `required`, `properties`, `additionalProperties`, `items`, `enum`,
//! `const`, the numeric and length bounds). Others (`pattern`, `format`, `$ref`, the
//! combinators) are not checked: a fake need not out-validate the client, only refuse what a
//! real server would plainly refuse. Every problem is reported, each with its JSON pointer, so a
//! model reading the `isError` text can correct its call (as SEP-1303 intends).

use serde_json::Value;

/// Every way `v` fails `schema`, as `"/pointer: what was expected"`.
pub(crate) fn problems(schema: &Value, v: &Value) -> Vec<String> {
    let mut out = Vec::new();
    check(schema, v, "", &mut out);
    out
}

fn check(schema: &Value, v: &Value, at: &str, out: &mut Vec<String>) {
    let Some(s) = schema.as_object() else {
        return;
    };
    let here = if at.is_empty() { "/" } else { at };
    if let Some(t) = s.get("type") {
        let allowed: Vec<&str> = match t {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !allowed.is_empty() && !allowed.iter().any(|t| has_type(v, t)) {
            out.push(format!(
                "{here}: expected {}, found {}",
                allowed.join(" or "),
                type_of(v)
            ));
            return;
        }
    }
    if let Some(e) = s.get("enum").and_then(Value::as_array) {
        if !e.iter().any(|x| same(x, v)) {
            out.push(format!(
                "{here}: expected one of {}",
                Value::from(e.clone())
            ));
        }
    }
    if let Some(c) = s.get("const") {
        if !same(c, v) {
            out.push(format!("{here}: expected {c}"));
        }
    }
    bounds(s, v, here, out);
    match v {
        Value::Object(m) => {
            for r in s
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(name) = r.as_str().filter(|n| !m.contains_key(*n)) {
                    out.push(format!("{here}: missing required property \"{name}\""));
                }
            }
            let props = s.get("properties").and_then(Value::as_object);
            for (k, x) in m {
                let path = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                match (props.and_then(|p| p.get(k)), s.get("additionalProperties")) {
                    (Some(ps), _) => check(ps, x, &path, out),
                    (None, Some(Value::Bool(false))) => {
                        out.push(format!("{path}: no such property is allowed"))
                    }
                    (None, Some(extra @ Value::Object(_))) => check(extra, x, &path, out),
                    (None, _) => {}
                }
            }
        }
        Value::Array(items) => {
            if let Some(each) = s.get("items") {
                for (i, x) in items.iter().enumerate() {
                    check(each, x, &format!("{at}/{i}"), out);
                }
            }
        }
        _ => {}
    }
}

/// A numeric bound: its keyword, whether a number meets it, and how the message says it.
type Bound = (&'static str, fn(f64, f64) -> bool, &'static str);

/// The numeric bounds and the lengths of strings, arrays and objects.
fn bounds(s: &serde_json::Map<String, Value>, v: &Value, here: &str, out: &mut Vec<String>) {
    let limit = |k: &str| s.get(k).and_then(Value::as_f64);
    if let Some(n) = v.as_f64() {
        let checks: [Bound; 4] = [
            ("minimum", |n, l| n >= l, "at least"),
            ("maximum", |n, l| n <= l, "at most"),
            ("exclusiveMinimum", |n, l| n > l, "more than"),
            ("exclusiveMaximum", |n, l| n < l, "less than"),
        ];
        for (k, ok, says) in checks {
            if let Some(l) = limit(k).filter(|l| !ok(n, *l)) {
                out.push(format!("{here}: expected a number {says} {l}, found {n}"));
            }
        }
    }
    let len = match v {
        Value::String(t) => Some((t.chars().count(), "minLength", "maxLength", "characters")),
        Value::Array(a) => Some((a.len(), "minItems", "maxItems", "items")),
        Value::Object(m) => Some((m.len(), "minProperties", "maxProperties", "properties")),
        _ => None,
    };
    if let Some((n, min, max, what)) = len {
        if let Some(l) = limit(min).filter(|l| (n as f64) < *l) {
            out.push(format!("{here}: expected at least {l} {what}, found {n}"));
        }
        if let Some(l) = limit(max).filter(|l| (n as f64) > *l) {
            out.push(format!("{here}: expected at most {l} {what}, found {n}"));
        }
    }
}

fn has_type(v: &Value, t: &str) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "number" => v.is_number(),
        // 1.0 is an integer to JSON Schema: what matters is the value, not how it is written.
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|f| f.fract() == 0.0),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        _ => true,
    }
}

fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// JSON equality with numbers compared by value (`1` equals `1.0`).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, a)| y.get(k).is_some_and(|b| same(a, b)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn every_problem_is_named_by_its_pointer() {
        let schema = json!({"type": "object", "required": ["to", "amount"], "additionalProperties": false,
            "properties": {"to": {"type": "string", "minLength": 2}, "amount": {"type": "integer", "minimum": 1},
                "tags": {"type": "array", "items": {"enum": ["a", "b"]}}}});
        assert!(super::problems(&schema, &json!({"to": "acct", "amount": 5.0})).is_empty());
        let got = super::problems(
            &schema,
            &json!({"to": "x", "amount": 0, "tags": ["c"], "extra": 1}),
        );
        assert_eq!(
            got,
            [
                "/amount: expected a number at least 1, found 0",
                "/extra: no such property is allowed",
                "/tags/0: expected one of [\"a\",\"b\"]",
                "/to: expected at least 2 characters, found 1",
            ]
        );
        let got = super::problems(&schema, &json!({"amount": "5"}));
        assert_eq!(
            got,
            [
                "/: missing required property \"to\"",
                "/amount: expected integer, found string"
            ]
        );
    }
}
