//! An orchestrator's instruction revision, read as a value (REC-2, REC-6, ACC-2): an integral
//! JSON number (`1`, or `1.0` as a protobuf `Struct` carries a Python int) and a string of digits
//! (`"1"`) are the same revision wherever one is read — A2A metadata, headers, the admin API's
//! declarations, the ledger, canaries. Anything else (`"rev-b"`, `1.5`) is kept as it was sent:
//! recorded, but not ordered, and the verifier says which checks it therefore could not make.

use std::fmt;

use serde::de::{self, Deserializer};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Serialized as the number or the text it holds.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(untagged)]
pub enum Revision {
    /// A whole number, however it was written: revisions in this form are ordered.
    Number(i64),
    /// Anything else, as its text (a JSON string's content, or other JSON's text).
    Text(Box<str>),
}

impl Revision {
    /// The revision a JSON value names; `None` for `null` (no revision).
    pub fn of(v: &Value) -> Option<Revision> {
        match v {
            Value::Null => None,
            Value::String(s) => Some(Revision::parse(s)),
            Value::Number(n) => Some(match (n.as_i64(), n.as_f64()) {
                (Some(i), _) => Revision::Number(i),
                // An integral float within `i64` is that number (`1.0` is 1).
                (None, Some(f))
                    if f.fract() == 0.0 && f > i64::MIN as f64 && f < i64::MAX as f64 =>
                {
                    Revision::Number(f as i64)
                }
                _ => Revision::Text(n.to_string().into()),
            }),
            other => Some(Revision::Text(other.to_string().into())),
        }
    }

    /// The revision a text names: digits, with optional sign and surrounding spaces, are a number.
    pub fn parse(s: &str) -> Revision {
        match s.trim().parse::<i64>() {
            Ok(n) => Revision::Number(n),
            Err(_) => Revision::Text(s.into()),
        }
    }

    /// Its place in the order of revisions, if it has one.
    pub fn ordinal(&self) -> Option<i64> {
        match self {
            Revision::Number(n) => Some(*n),
            Revision::Text(_) => None,
        }
    }

    /// As JSON: a number, or a string.
    pub fn to_value(&self) -> Value {
        match self {
            Revision::Number(n) => Value::from(*n),
            Revision::Text(t) => Value::String(t.to_string()),
        }
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Revision::Number(n) => write!(f, "{n}"),
            Revision::Text(t) => write!(f, "{t:?}"),
        }
    }
}

/// Read as [`Revision::of`] reads a JSON value: any JSON but `null` is a revision.
impl<'de> Deserialize<'de> for Revision {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Revision, D::Error> {
        let v = Value::deserialize(d)?;
        Revision::of(&v).ok_or_else(|| de::Error::custom("a revision cannot be null"))
    }
}
