//! The conventions every AG-UI 1.0 wire type follows, in one place: the serde helpers for the
//! schema's "absent, never `null`" optionals and its objects, and [`wire!`], which declares a
//! wire struct with them.
//!
//! Source of truth: `@ag-ui/core@1.0.0` `src/generated/schemas.ts` (zod, generated from the
//! published 1.0 JSON Schema). Conventions, all taken from that schema:
//! - field names are camelCase;
//! - an optional field is **left out, never `null`**: every `Option` is skipped when `None`,
//!   and on input a `null` in an optional slot is rejected the way zod rejects it (the one
//!   exception is `RunAgentInput.state`, where the schema maps `null` to absent);
//! - every object is a zod `looseObject`: members the types do not know are kept in an `extra`
//!   map instead of failing the parse. A producer strips them with a warning
//!   (`RunAgentInput::strip_unknown`).

use std::sync::Arc;

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// `metadata` on events, messages, tools, interrupts and resume entries: an object open by
/// key (a `null` *under* a key is data), never `null` as a whole.
pub type Metadata = Map<String, Value>;

/// Declares a wire struct: `Debug, Clone, PartialEq, Serialize, Deserialize`, camelCase
/// members, every field `pub`. A field written `name?: T` is an `Option<T>` that is left out
/// when `None` and may be absent but never `null` on input ([`non_null`]; for `Metadata`,
/// [`object_non_null`]). Other fields are written as usual, with their own serde attributes.
/// Most of the schema's fields are such optionals: one marker each instead of four attributes.
macro_rules! wire {
    (@fields [$($head:tt)*] [$($done:tt)*]) => {
        #[derive(Debug, Clone, PartialEq, ::serde::Serialize, ::serde::Deserialize)]
        #[serde(rename_all = "camelCase")]
        $($head)* { $($done)* }
    };
    (@fields $head:tt [$($done:tt)*] $(#[$a:meta])* $f:ident ?: Metadata, $($rest:tt)*) => {
        $crate::agent::agui::wire::wire!(@fields $head [$($done)* $(#[$a])*
            #[serde(default, skip_serializing_if = "Option::is_none",
                deserialize_with = "crate::agent::agui::wire::object_non_null")]
            pub $f: Option<$crate::agent::agui::wire::Metadata>,] $($rest)*);
    };
    (@fields $head:tt [$($done:tt)*] $(#[$a:meta])* $f:ident ?: $t:ty, $($rest:tt)*) => {
        $crate::agent::agui::wire::wire!(@fields $head [$($done)* $(#[$a])*
            #[serde(default, skip_serializing_if = "Option::is_none",
                deserialize_with = "crate::agent::agui::wire::non_null")]
            pub $f: Option<$t>,] $($rest)*);
    };
    (@fields $head:tt [$($done:tt)*] $(#[$a:meta])* $f:ident : $t:ty, $($rest:tt)*) => {
        $crate::agent::agui::wire::wire!(@fields $head [$($done)* $(#[$a])* pub $f: $t,] $($rest)*);
    };
    ($(#[$m:meta])* pub struct $name:ident { $($body:tt)* }) => {
        $crate::agent::agui::wire::wire!(@fields [$(#[$m])* pub struct $name] [] $($body)*);
    };
}
pub(super) use wire;

/// `Option<T>` whose wire form may be absent but never `null` (zod `.optional()` and
/// `z.any().refine(v => v !== null).optional()`).
pub(super) fn non_null<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    let value = Value::deserialize(deserializer)?;
    if value.is_null() {
        return Err(D::Error::custom(
            "an optional member must be left out, not null",
        ));
    }
    serde_json::from_value(value)
        .map(Some)
        .map_err(D::Error::custom)
}

/// A JSON object (`z.custom(v => typeof v === "object" && v !== null && !Array.isArray(v))`).
pub(super) fn object_non_null<'de, D>(
    deserializer: D,
) -> Result<Option<Map<String, Value>>, D::Error>
where
    D: Deserializer<'de>,
{
    match Value::deserialize(deserializer)? {
        Value::Object(map) => Ok(Some(map)),
        Value::Null => Err(D::Error::custom(
            "an optional member must be left out, not null",
        )),
        _ => Err(D::Error::custom("expected a JSON object")),
    }
}

/// A shared JSON object: written as the object, read as [`object_non_null`] does.
pub(super) mod shared_object {
    use super::*;

    pub fn serialize<S>(value: &Option<Arc<Map<String, Value>>>, s: S) -> Result<S::Ok, S::Error>
    where
        S: serde::Serializer,
    {
        value.as_deref().serialize(s)
    }

    pub fn deserialize<'de, D>(d: D) -> Result<Option<Arc<Map<String, Value>>>, D::Error>
    where
        D: Deserializer<'de>,
    {
        object_non_null(d).map(|m| m.map(Arc::new))
    }
}

/// Required JSON object.
pub(super) fn object_required<'de, D>(deserializer: D) -> Result<Map<String, Value>, D::Error>
where
    D: Deserializer<'de>,
{
    match Value::deserialize(deserializer)? {
        Value::Object(map) => Ok(map),
        _ => Err(D::Error::custom("expected a JSON object")),
    }
}
