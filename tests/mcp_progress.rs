//! Progress over MCP (issue 28, item 1): a streamed call that asks for progress
//! (`_meta.progressToken`) and whose answer the scenario delays hears `notifications/progress`
//! as scenario time passes, increasing, then its answer (ACC-T: the rig records the action and
//! then delays its response).

mod common;

use common::*;
use serde_json::{json, Value};

#[test]
fn acct_a_delayed_streamed_call_hears_progress_each_second_of_scenario_time() {
    let toml = format!(
        "{}\n[mcp.payments]\nresponses = \"sse\"\n[[mcp.payments.tools]]\nname = \"pay\"\ninput_schema = {{ type = \"object\" }}\ncall = {{ service = \"payments\", route = \"create-transfer\" }}\n",
        LOST_RESPONSE.replace("fates = [\"drop-after-apply\", \"respond\"]", "fates = [\"delay:3s\"]")
    );
    let da = Da::start(&toml);
    let params = json!({"name": "pay", "arguments": {"to": "a", "amount": 1}, "_meta": {
        "progressToken": "p-1",
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}}});
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
    let h = [
        ("content-type", "application/json"),
        ("accept", "application/json, text/event-stream"),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "pay"),
    ];
    let mut s = send(
        &da.url,
        "POST",
        "/mcp/payments",
        &h,
        body.to_string().as_bytes(),
    );
    read_until(&mut s, "\r\n\r\n");
    da.advance("3s");
    let r = read_response_rest(s);
    let messages: Vec<Value> = r
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect();
    let progress: Vec<(Value, Value)> = messages
        .iter()
        // The "started" event (progress 0, no total) went with the head.
        .filter(|m| m["method"] == "notifications/progress" && !m["params"]["total"].is_null())
        .map(|m| {
            (
                m["params"]["progress"].clone(),
                m["params"]["total"].clone(),
            )
        })
        .collect();
    assert_eq!(
        progress,
        [(json!(1000), json!(3000)), (json!(2000), json!(3000))],
        "{messages:?}"
    );
    let last = messages.last().unwrap();
    assert_eq!(last["id"], 1);
    assert_eq!(last["result"]["isError"], false, "{last}");
}

/// What is left of a response whose head was read: its body as text (chunked or not).
fn read_response_rest(mut s: std::net::TcpStream) -> String {
    use std::io::Read;
    let mut rest = Vec::new();
    s.read_to_end(&mut rest).unwrap();
    String::from_utf8_lossy(&dechunk(&rest)).into_owned()
}
