//! MCP tools' JSON Schemas (`doubleagent::scenario::schema`): every problem is named by its
//! pointer, and an invalid schema is located.

use serde_json::json;

use doubleagent::scenario::schema::Schema;

fn problems(schema: serde_json::Value, v: serde_json::Value) -> Vec<String> {
    Schema::compile(schema).unwrap().problems(&v)
}

#[test]
fn every_problem_is_named_by_its_pointer() {
    let schema = json!({"type": "object", "required": ["to", "amount"], "additionalProperties": false,
        "properties": {"to": {"type": "string", "minLength": 2}, "amount": {"type": "integer", "minimum": 1},
            "tags": {"type": "array", "items": {"enum": ["a", "b"]}}}});
    assert!(problems(schema.clone(), json!({"to": "acct", "amount": 5.0})).is_empty());
    let got = problems(
        schema.clone(),
        json!({"to": "x", "amount": 0, "tags": ["c"], "extra": 1}),
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
    let got = problems(schema, json!({"amount": "5"}));
    assert_eq!(
        got,
        [
            "/: missing required property \"to\"",
            "/amount: expected integer, found string"
        ]
    );
}

#[test]
fn keywords_beyond_the_common_ones_are_checked_too() {
    let schema = json!({"type": "object", "properties": {
        "iban": {"type": "string", "pattern": "^[A-Z]{2}[0-9]+$"},
        "mode": {"oneOf": [{"const": "fast"}, {"const": "cheap"}]},
        "to": {"$ref": "#/$defs/account"}},
        "$defs": {"account": {"type": "string", "maxLength": 4}}});
    assert!(problems(
        schema.clone(),
        json!({"iban": "DE12", "mode": "fast", "to": "a"})
    )
    .is_empty());
    let got = problems(schema, json!({"iban": "x", "mode": "slow", "to": "abcdef"}));
    assert_eq!(got.len(), 3, "{got:?}");
    assert!(got[0].starts_with("/iban: "), "{got:?}");
    assert!(got[1].starts_with("/mode: "), "{got:?}");
    assert_eq!(got[2], "/to: expected at most 4 characters, found 6");
}

#[test]
fn every_extra_property_is_named_when_the_schema_lists_none() {
    let schema = json!({"type": "object", "additionalProperties": false,
        "properties": {"inner": {"type": "object", "additionalProperties": false}}});
    let got = problems(
        schema.clone(),
        json!({"to": "a", "amount": 1, "inner": {"x": 1}}),
    );
    assert_eq!(
        got,
        [
            "/amount: no such property is allowed",
            "/inner/x: no such property is allowed",
            "/to: no such property is allowed",
        ]
    );
    let bare = json!({"type": "object", "additionalProperties": false});
    let schema = Schema::compile(bare.clone()).unwrap();
    assert_eq!(schema.json(), &bare, "advertised as written");
}

#[test]
fn an_invalid_schema_is_located() {
    let (at, what) =
        Schema::compile(json!({"type": "object", "properties": {"n": {"type": "integr"}}}))
            .unwrap_err();
    assert_eq!(at, ".properties.n.type", "{what}");
}
