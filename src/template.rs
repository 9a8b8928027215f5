//! Placeholders in scenario strings: `{{name}}` expanded from whatever a caller knows (an
//! action's id and body for a fake service's response; a task's id, revision and canary for an
//! agent's result).
//!
//! A caller implements [`Vars`]; [`text`] interpolates into a string, [`json`] expands a JSON
//! value's strings, and a string that is exactly one placeholder takes the value's own JSON type
//! (`amount = "{{body./amount}}"` stays a number). An unknown placeholder is left as written,
//! though scenarios never get that far: names are checked at load (`scenario::placeholders`);
//! [`OrNull`] sends a known name without a value as `null`.
//! [`Compiled`] is a fake service's response body compiled once at load. Imports nothing from
//! the crate.

use serde_json::Value;

/// What placeholders can name.
pub trait Vars {
    /// The value of `{{name}}` (already trimmed), or `None` if unknown.
    fn var(&self, name: &str) -> Option<Value>;

    /// Write the value of `{{name}}` as JSON onto `out` without making a [`Value`], where that
    /// is cheaper (the action id in every response); `false` (nothing written) sends the name
    /// to [`Vars::var`].
    fn write(&self, _name: &str, _out: &mut Vec<u8>) -> bool {
        false
    }
}

/// `vars` with every name it has no value for as `null`: for templates whose names were all
/// checked at load, where a missing value means the request (or failure) lacks it.
pub struct OrNull<'a>(pub &'a dyn Vars);

impl Vars for OrNull<'_> {
    fn var(&self, name: &str) -> Option<Value> {
        Some(self.0.var(name).unwrap_or(Value::Null))
    }

    fn write(&self, name: &str, out: &mut Vec<u8>) -> bool {
        self.0.write(name, out)
    }
}

/// Expand the placeholders in a string.
pub fn text(s: &str, vars: &dyn Vars) -> String {
    let mut out = String::new();
    let rest = scan(s, |before, written, name| {
        out.push_str(before);
        match vars.var(name) {
            Some(Value::String(v)) => out.push_str(&v),
            Some(v) => out.push_str(&v.to_string()),
            None => out.push_str(written),
        }
    });
    out.push_str(rest);
    out
}

/// The names of the placeholders in a string, trimmed, as [`text`] finds them.
pub fn names(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    scan(s, |_, _, name| out.push(name));
    out
}

/// Calls `each(text before, placeholder as written, trimmed name)` per placeholder; gives the tail.
fn scan<'a>(s: &'a str, mut each: impl FnMut(&'a str, &'a str, &'a str)) -> &'a str {
    let mut rest = s;
    while let Some(start) = find2(rest, b"{{") {
        let Some(len) = find2(&rest[start..], b"}}") else {
            break;
        };
        let written = &rest[start..start + len + 2];
        each(&rest[..start], written, written[2..len].trim());
        rest = &rest[start + len + 2..];
    }
    rest
}

/// Expand the placeholders in every string of a JSON value.
pub fn json(v: &Value, vars: &dyn Vars) -> Value {
    match v {
        Value::String(s) => {
            if let Some(v) = whole_placeholder(s).and_then(|name| vars.var(name)) {
                return v;
            }
            Value::String(text(s, vars))
        }
        Value::Array(a) => Value::Array(a.iter().map(|x| json(x, vars)).collect()),
        Value::Object(o) => {
            Value::Object(o.iter().map(|(k, x)| (k.clone(), json(x, vars))).collect())
        }
        other => other.clone(),
    }
}

/// A JSON template compiled at load: the text between placeholder strings is written out ahead
/// of time, so [`Compiled::write`] gives `json(v, vars).to_string()`'s bytes without building
/// the expanded tree.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Compiled {
    pieces: Vec<Piece>,
}

#[derive(Clone, Debug, PartialEq)]
enum Piece {
    /// JSON text as it is.
    Raw(Vec<u8>),
    /// A string that is exactly one placeholder: the value, typed (as written if unknown).
    Whole { name: String, written: String },
    /// A string with placeholders among other text.
    Text(String),
}

impl Compiled {
    pub fn of(v: &Value) -> Compiled {
        let mut c = Compiled { pieces: Vec::new() };
        let mut raw = Vec::new();
        c.add(v, &mut raw);
        if !raw.is_empty() {
            c.pieces.push(Piece::Raw(raw));
        }
        c
    }

    fn add(&mut self, v: &Value, raw: &mut Vec<u8>) {
        match v {
            Value::String(s) => {
                if find2(s, b"{{").is_none() {
                    put(raw, s);
                    return;
                }
                let piece = match whole_placeholder(s) {
                    Some(name) => Piece::Whole {
                        name: name.to_string(),
                        written: s.clone(),
                    },
                    None => Piece::Text(s.clone()),
                };
                if !raw.is_empty() {
                    self.pieces.push(Piece::Raw(std::mem::take(raw)));
                }
                self.pieces.push(piece);
            }
            Value::Array(a) => {
                raw.push(b'[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        raw.push(b',');
                    }
                    self.add(x, raw);
                }
                raw.push(b']');
            }
            Value::Object(o) => {
                raw.push(b'{');
                for (i, (k, x)) in o.iter().enumerate() {
                    if i > 0 {
                        raw.push(b',');
                    }
                    put(raw, k);
                    raw.push(b':');
                    self.add(x, raw);
                }
                raw.push(b'}');
            }
            other => put(raw, other),
        }
    }

    /// The template's JSON text with its placeholders expanded.
    pub fn write(&self, vars: &dyn Vars, out: &mut Vec<u8>) {
        for p in &self.pieces {
            match p {
                Piece::Raw(b) => out.extend_from_slice(b),
                Piece::Whole { name, .. } if vars.write(name, out) => {}
                Piece::Whole { name, written } => match vars.var(name) {
                    Some(v) => put(out, &v),
                    None => put(out, &text(written, vars)),
                },
                Piece::Text(s) => put(out, &text(s, vars)),
            }
        }
    }
}

/// The name in a string that is exactly one placeholder (`"{{ name }}"`), which takes its type.
fn whole_placeholder(s: &str) -> Option<&str> {
    let inner = s.trim().strip_prefix("{{")?.strip_suffix("}}")?;
    find2(inner, b"{{").is_none().then(|| inner.trim())
}

/// Where `{{` or `}}` starts: a byte scan, cheaper than `str::find` on short strings, per response.
fn find2(s: &str, pat: &[u8; 2]) -> Option<usize> {
    s.as_bytes().windows(2).position(|w| w == pat)
}

/// Serialising strings and JSON values into a byte buffer cannot fail (no I/O, string keys).
fn put<T: serde::Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) {
    let _ = serde_json::to_writer(&mut *out, v);
}
