//! A tool's JSON Schemas (input and output), compiled at load by the `jsonschema` crate in the
//! dialect a schema names (else 2020-12, MCP's default). [`Schema::problems`] names every way a
//! value fails one, each with its JSON pointer, so a model reading the `isError` text can
//! correct its call (SEP-1303); common keywords are worded as doubleagent's other errors.

use std::sync::Arc;

use jsonschema::error::{TypeKind, ValidationErrorKind as Kind};
use jsonschema::ValidationError;
use serde::Serialize;
use serde_json::Value;

/// A compiled schema beside the JSON it came from, which `tools/list` sends as written.
#[derive(Clone, Debug, Serialize)]
#[serde(transparent)]
pub struct Schema {
    json: Value,
    #[serde(skip)]
    validator: Arc<jsonschema::Validator>,
}

impl Schema {
    /// Compile `json`; an invalid schema gives where in it (a dotted key path) and what is wrong.
    pub fn compile(json: Value) -> Result<Schema, (String, String)> {
        let mut checked = json.clone();
        name_no_properties(&mut checked);
        match jsonschema::validator_for(&checked) {
            Ok(v) => Ok(Schema {
                json,
                validator: Arc::new(v),
            }),
            Err(e) => {
                let at: String = e
                    .instance_path()
                    .into_iter()
                    .map(|s| format!(".{s}"))
                    .collect();
                Err((at, e.to_string()))
            }
        }
    }

    pub fn json(&self) -> &Value {
        &self.json
    }

    /// Every way `v` fails the schema, as `"/pointer: what was expected"`, in pointer order.
    pub fn problems(&self, v: &Value) -> Vec<String> {
        let mut out: Vec<String> = self.validator.iter_errors(v).flat_map(worded).collect();
        out.sort();
        out
    }
}

/// `additionalProperties: false` beside no `properties` gets `properties: {}` (the same schema):
/// without it the crate (0.61) reports only the first extra property, as a `false` schema at
/// the object's own pointer, where every extra property named by its pointer is wanted.
fn name_no_properties(schema: &mut Value) {
    match schema {
        Value::Object(m) => {
            if m.get("additionalProperties") == Some(&Value::Bool(false)) {
                m.entry("properties")
                    .or_insert_with(|| Value::Object(Default::default()));
            }
            m.values_mut().for_each(name_no_properties);
        }
        Value::Array(a) => a.iter_mut().for_each(name_no_properties),
        _ => {}
    }
}

/// One validation error as the lines it makes (`additionalProperties` names each property).
fn worded(e: ValidationError<'_>) -> Vec<String> {
    let path = e.instance_path().as_str();
    let here = if path.is_empty() { "/" } else { path };
    let found = e.instance();
    let number = found.as_f64().unwrap_or_default();
    let limit = |l: &Value| l.as_f64().unwrap_or_default();
    let said = match e.kind() {
        Kind::Type { kind } => {
            let allowed: Vec<String> = match kind {
                TypeKind::Single(t) => vec![t.to_string()],
                TypeKind::Multiple(ts) => ts.into_iter().map(|t| t.to_string()).collect(),
            };
            format!(
                "expected {}, found {}",
                allowed.join(" or "),
                type_of(found)
            )
        }
        Kind::Required { property } => {
            let name = property.as_str().unwrap_or_default();
            format!("missing required property \"{name}\"")
        }
        Kind::AdditionalProperties { unexpected } => {
            return unexpected
                .iter()
                .map(|k| {
                    let k = k.replace('~', "~0").replace('/', "~1");
                    format!("{path}/{k}: no such property is allowed")
                })
                .collect();
        }
        Kind::Enum { options } => format!("expected one of {options}"),
        Kind::Constant { expected_value } => format!("expected {expected_value}"),
        Kind::Minimum { limit: l } => bound("at least", limit(l), number),
        Kind::Maximum { limit: l } => bound("at most", limit(l), number),
        Kind::ExclusiveMinimum { limit: l } => bound("more than", limit(l), number),
        Kind::ExclusiveMaximum { limit: l } => bound("less than", limit(l), number),
        Kind::MinLength { limit } => count("at least", *limit, "characters", found),
        Kind::MaxLength { limit } => count("at most", *limit, "characters", found),
        Kind::MinItems { limit } => count("at least", *limit, "items", found),
        Kind::MaxItems { limit } => count("at most", *limit, "items", found),
        Kind::MinProperties { limit } => count("at least", *limit, "properties", found),
        Kind::MaxProperties { limit } => count("at most", *limit, "properties", found),
        _ => e.to_string(),
    };
    vec![format!("{here}: {said}")]
}

fn bound(says: &str, limit: f64, n: f64) -> String {
    format!("expected a number {says} {limit}, found {n}")
}

/// A length bound: characters of a string, items of an array, properties of an object.
fn count(says: &str, limit: u64, what: &str, v: &Value) -> String {
    let n = match v {
        Value::String(t) => t.chars().count(),
        Value::Array(a) => a.len(),
        Value::Object(m) => m.len(),
        _ => 0,
    };
    format!("expected {says} {limit} {what}, found {n}")
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
