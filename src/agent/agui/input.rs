//! The request body of an AG-UI run (`RunAgentInput`): its tools, context and resume entries,
//! how its `protocolVersion` is judged and how unknown members are found and stripped (the
//! schema's conventions are in [`super::wire`]).

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use super::event::PROTOCOL_VERSION;
use super::interrupt::ResumeEntry;
use super::message::Message;
use super::wire::wire;

wire! {
    /// The request body of `POST /agents/NAME`. Only `threadId`, `runId` and `messages` are
    /// required; absent `tools`/`context` mean empty, absent `state` means `{}`.
    #[derive(Default)]
    pub struct RunAgentInput {
        thread_id: String,
        run_id: String,
        protocol_version?: String,
        parent_run_id?: String,
        /// Any JSON value; a whole `null` reads as absent (serde's `Option`), as the schema's
        /// `.nullable().transform()` has it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        state: Option<Value>,
        messages: Vec<Message>,
        #[serde(default)]
        tools: Vec<Tool>,
        #[serde(default)]
        context: Vec<Context>,
        forwarded_props?: Value,
        resume?: Vec<ResumeEntry>,
        /// Members the schema does not describe (TanStack sends `data`, for one).
        #[serde(flatten)]
        extra: Map<String, Value>,
    }
}

/// Why a request body was refused before any stream (HTTP 4xx, no `RUN_STARTED`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct InputError {
    pub message: String,
}

/// What the producer should do about the input's `protocolVersion`
/// (`docs/spec/1.0/basic/versioning.mdx`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionVerdict {
    /// Absent (TanStack never sends it) or a 1.0 declaration.
    Accept,
    /// A newer 1.x, or a value outside the `MAJOR.MINOR` grammar: serve it and warn.
    AcceptWithWarning(String),
    /// Another major version: the producer MAY reject, and only before `RUN_STARTED`.
    UnknownMajor(String),
}

impl RunAgentInput {
    /// Parses a request body. Malformed JSON or a malformed *known* member is an error
    /// (answer it with an HTTP 4xx and no stream); unknown members are kept in the `extra`
    /// maps, see [`Self::strip_unknown`].
    pub fn parse(body: &[u8]) -> Result<Self, InputError> {
        serde_json::from_slice(body).map_err(|e| InputError {
            message: format!("invalid RunAgentInput: {e}"),
        })
    }

    /// [`Self::parse`] for a body already parsed by [`parse_json`] that repeats no member name
    /// (member order does not matter to these types). `None` if it does not deserialize:
    /// [`Self::parse`] then says why, with line and column.
    pub fn from_parsed(json: &Value) -> Option<Self> {
        Self::deserialize(json).ok()
    }

    pub fn state_or_default(&self) -> Value {
        self.state
            .clone()
            .unwrap_or_else(|| Value::Object(Map::new()))
    }

    pub fn resume_entries(&self) -> &[ResumeEntry] {
        self.resume.as_deref().unwrap_or(&[])
    }

    /// A continuation is a new run that answers an interrupted one. `@ag-ui/client@1.0.0`
    /// never sends `parentRunId` (its `RunAgentParameters` has no such field), TanStack
    /// always does; so a non-empty `resume` alone also marks a continuation.
    pub fn is_continuation(&self) -> bool {
        self.parent_run_id.is_some() || !self.resume_entries().is_empty()
    }

    pub fn version_verdict(&self) -> VersionVerdict {
        let Some(declared) = self.protocol_version.as_deref() else {
            return VersionVerdict::Accept;
        };
        if declared == PROTOCOL_VERSION {
            return VersionVerdict::Accept;
        }
        // Digits only: `parse` alone would take a sign.
        let number = |s: &str| {
            let digits = !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
            digits.then(|| s.parse::<u64>().ok()).flatten()
        };
        let parsed = (declared.split_once('.')).and_then(|(a, b)| Some((number(a)?, number(b)?)));
        match parsed {
            Some((1, _)) => VersionVerdict::AcceptWithWarning(format!(
                "input declares protocol {declared}; this producer speaks {PROTOCOL_VERSION}"
            )),
            Some((major, _)) => VersionVerdict::UnknownMajor(format!(
                "input declares protocol {declared} (major {major}); this producer speaks {PROTOCOL_VERSION}"
            )),
            None => VersionVerdict::AcceptWithWarning(format!(
                "input declares protocol version '{declared}', which is not MAJOR.MINOR"
            )),
        }
    }

    /// Removes every member the schema does not describe and returns their paths, e.g.
    /// `data`, `messages[3].name`, `resume[0].note`. The spec says: strip with a warning.
    pub fn strip_unknown(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        take_keys(&mut out, String::new, &mut self.extra);
        for (i, m) in self.messages.iter_mut().enumerate() {
            take_keys(&mut out, || format!("messages[{i}]."), m.extra_mut());
            if let Message::Assistant(a) = m {
                for (j, tc) in a.tool_calls.iter_mut().flatten().enumerate() {
                    let call = || format!("messages[{i}].toolCalls[{j}].");
                    take_keys(&mut out, call, &mut tc.extra);
                    let function = || format!("{}function.", call());
                    take_keys(&mut out, function, &mut tc.function.extra);
                }
            }
        }
        for (i, t) in self.tools.iter_mut().enumerate() {
            take_keys(&mut out, || format!("tools[{i}]."), &mut t.extra);
        }
        for (i, c) in self.context.iter_mut().enumerate() {
            take_keys(&mut out, || format!("context[{i}]."), &mut c.extra);
        }
        for (i, r) in self.resume.iter_mut().flatten().enumerate() {
            take_keys(&mut out, || format!("resume[{i}]."), &mut r.extra);
        }
        out
    }
}

/// Moves the keys of `extra` into `out` as paths under `prefix` (built only if there are any).
fn take_keys(out: &mut Vec<String>, prefix: impl Fn() -> String, extra: &mut Map<String, Value>) {
    if extra.is_empty() {
        return;
    }
    let prefix = prefix();
    out.extend(extra.keys().map(|k| format!("{prefix}{k}")));
    extra.clear();
}

/// `serde_json::from_slice::<Value>(body)`, also telling whether an object in it repeats a
/// member name: a `Value` keeps the last, where a typed parse of a known member rejects the
/// body, so only a document without repeats may be read into a type through its `Value`
/// ([`RunAgentInput::from_parsed`]).
pub fn parse_json(body: &[u8]) -> serde_json::Result<(Value, bool)> {
    let repeats = std::cell::Cell::new(false);
    let mut de = serde_json::Deserializer::from_slice(body);
    let value = serde::de::DeserializeSeed::deserialize(ValueNotingRepeats(&repeats), &mut de)?;
    de.end()?;
    Ok((value, repeats.get()))
}

/// serde_json's own `Value` visitor, plus the repeat check: only what serde_json's
/// `deserialize_any` calls (a `null` is a unit, a string is borrowed or copied).
struct ValueNotingRepeats<'a>(&'a std::cell::Cell<bool>);

impl<'de> serde::de::DeserializeSeed<'de> for ValueNotingRepeats<'_> {
    type Value = Value;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for ValueNotingRepeats<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any valid JSON value")
    }
    fn visit_bool<E>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }
    fn visit_i64<E>(self, n: i64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }
    fn visit_u64<E>(self, n: u64) -> Result<Value, E> {
        Ok(Value::Number(n.into()))
    }
    fn visit_f64<E>(self, n: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(n).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, s: &str) -> Result<Value, E> {
        Ok(Value::String(s.to_owned()))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element_seed(ValueNotingRepeats(self.0))? {
            out.push(v);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(k) = map.next_key::<String>()? {
            let v = map.next_value_seed(ValueNotingRepeats(self.0))?;
            if out.insert(k, v).is_some() {
                self.0.set(true);
            }
        }
        Ok(Value::Object(out))
    }
}

wire! {
    /// `{name, description, parameters?, metadata?}`.
    pub struct Tool {
        name: String,
        description: String,
        parameters?: Value,
        metadata?: Metadata,
        #[serde(flatten)] extra: Map<String, Value>,
    }
}

wire! {
    /// `{description, value}`: ambient information for the run.
    pub struct Context {
        description: String,
        value: String,
        #[serde(flatten)] extra: Map<String, Value>,
    }
}
