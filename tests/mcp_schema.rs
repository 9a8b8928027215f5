//! A tool's JSON Schemas (issue 28 item 1): every keyword is checked on a call, so arguments that
//! fail a `pattern`, a `$ref`'d definition or a combinator are a tool error naming each pointer
//! and nothing executes (ACC-T); a schema that is not valid JSON Schema is a located scenario
//! error (exit 2).

mod common;

use common::*;
use serde_json::{json, Value};

const TOOL: &str = r##"
[mcp.payments]
[[mcp.payments.tools]]
name = "pay"
input_schema = { type = "object", required = ["to", "amount"], properties = { to = { "$ref" = "#/$defs/iban" }, amount = { type = "integer", multipleOf = 5 }, speed = { oneOf = [{ const = "fast" }, { const = "cheap" }] } }, "$defs" = { iban = { type = "string", pattern = "^[A-Z]{2}[0-9]{2,}$" } } }
call = { service = "payments", route = "create-transfer" }
"##;

fn scenario() -> String {
    let answered = LOST_RESPONSE.replace(
        "fates = [\"drop-after-apply\", \"respond\"]",
        "fates = [\"respond\"]",
    );
    format!("{answered}{TOOL}")
}

fn call(da: &Da, args: Value) -> Value {
    let params = json!({"name": "pay", "arguments": args, "_meta": {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}});
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let h = [
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "pay"),
    ];
    da.post_json("/mcp/payments", &h, &body).unwrap().json()
}

fn transfers(da: &Da) -> usize {
    da.get("/_admin/ledger?route=create-transfer").json()["entries"]
        .as_array()
        .unwrap()
        .len()
}

#[test]
fn acct_arguments_failing_pattern_ref_multiple_of_or_one_of_are_a_tool_error_and_nothing_runs() {
    let da = Da::start(&scenario());
    let v = call(&da, json!({"to": "nope", "amount": 7, "speed": "slow"}));
    assert_eq!(v["result"]["isError"], true, "{v}");
    let text = v["result"]["content"][0]["text"].as_str().unwrap();
    for pointer in ["/to: ", "/amount: ", "/speed: "] {
        assert!(text.contains(pointer), "{pointer} in {text}");
    }
    assert_eq!(transfers(&da), 0, "refused arguments execute nothing");

    let ok = call(&da, json!({"to": "DE44", "amount": 10, "speed": "fast"}));
    assert_eq!(ok["result"]["isError"], false, "{ok}");
    assert_eq!(transfers(&da), 1);
}

#[test]
fn acct_a_tool_schema_that_is_not_json_schema_is_located_and_exits_2() {
    let bad = scenario().replace("multipleOf = 5", "multipleOf = \"five\"");
    let (code, err) = check_scenario(&bad);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("bad.toml:")
            && err.contains("mcp.payments.tools[0].input_schema.properties.amount.multipleOf: "),
        "{err}"
    );
}

#[test]
fn acct_an_empty_question_key_is_located_and_exits_2() {
    let bad = scenario().replace(
        "call = { service = \"payments\", route = \"create-transfer\" }",
        "call = { service = \"payments\", route = \"create-transfer\" }\ninput = { key = \"\", message = \"Sure?\" }",
    );
    let (code, err) = check_scenario(&bad);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("mcp.payments.tools[0].input.key: "), "{err}");
}
