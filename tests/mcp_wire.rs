//! The MCP endpoint's transport edges, against the real binary: bodies over the cap, batches,
//! methods other than POST, `Last-Event-ID` resumption, request ids (reference: shared
//! reference/mcp.md §A.1–A.4). Rule IDs in the test names (`acct` = ACC-T, the rig itself).

mod common;

use common::*;
use serde_json::{json, Value};

fn scenario(top: &str, server: &str) -> String {
    let base = LOST_RESPONSE.replace(
        "fates = [\"drop-after-apply\", \"respond\"]",
        "fates = [\"respond\"]",
    );
    format!(
        r#"{top}
{base}
[mcp.payments]
{server}

[[mcp.payments.tools]]
name = "create_transfer"
input_schema = {{ type = "object" }}
call = {{ service = "payments", route = "create-transfer" }}
"#
    )
}

const ACCEPT: (&str, &str) = ("accept", "application/json, text/event-stream");

fn rpc(id: Value, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

fn events(da: &Da, event: &str) -> Vec<Value> {
    da.ledger()
        .into_iter()
        .filter(|e| e["service"] == "mcp/payments" && e["event"] == event)
        .collect()
}

#[test]
fn acct_an_oversized_body_is_a_recorded_json_rpc_refusal_on_413() {
    let da = Da::start(&scenario("max_body_bytes = 256", ""));
    let big = "x".repeat(1024);
    let body = rpc(
        json!(1),
        "tools/call",
        json!({"name": "create_transfer", "arguments": {"note": big}}),
    );
    let r = da.post_json("/mcp/payments", &[ACCEPT], &body).unwrap();
    assert_eq!(r.status, 413, "{}", r.text());
    let v = r.json();
    assert_eq!(v["jsonrpc"], "2.0", "{v}");
    assert_eq!(v["error"]["code"], -32600, "{v}");
    let refused = events(&da, "rpc-error");
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0]["detail"]["http_status"], 413);
}
