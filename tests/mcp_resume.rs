//! A delayed legacy stream whose client left while it waited is resumed with `GET` +
//! `Last-Event-ID` (2025-11-25 resumability, `resume = "replay"`): the answer comes on the new
//! stream when it falls due on the scenario clock, and the resumption is recorded, so learning
//! the outcome this way needs no re-call (REC-4, ACC-1).

mod common;

use common::*;
use serde_json::{json, Value};

fn scenario() -> String {
    let delayed = LOST_RESPONSE.replace(
        "fates = [\"drop-after-apply\", \"respond\"]",
        "fates = [\"delay:5s\"]",
    );
    format!(
        "{delayed}\n[mcp.payments]\nresponses = \"sse\"\nresume = \"replay\"\n[[mcp.payments.tools]]\nname = \"pay\"\ninput_schema = {{ type = \"object\" }}\ncall = {{ service = \"payments\", route = \"create-transfer\" }}\n"
    )
}

const ACCEPT: (&str, &str) = ("accept", "application/json, text/event-stream");

fn session(da: &Da) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "1"}}});
    let r = da.post_json("/mcp/payments", &[ACCEPT], &init).unwrap();
    r.header("mcp-session-id").unwrap().to_string()
}

fn entries(da: &Da, event: &str) -> Vec<Value> {
    da.ledger()
        .into_iter()
        .filter(|e| e["event"] == event)
        .collect()
}

#[test]
fn rec4_acc1_a_delayed_stream_left_while_waiting_is_resumed_and_answered_when_due() {
    let da = Da::start(&scenario());
    let sid = session(&da);
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "pay", "arguments": {"to": "a", "amount": 1}}});
    let h = [
        ACCEPT,
        ("content-type", "application/json"),
        ("mcp-session-id", sid.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let body = serde_json::to_vec(&call).unwrap();
    let mut stream = send(&da.url, "POST", "/mcp/payments", &h, &body);
    let primed = String::from_utf8(read_until(&mut stream, "data: \n\n")).unwrap();
    let seq = da
        .ledger()
        .into_iter()
        .find(|e| e["route"] == "create-transfer")
        .unwrap()["seq"]
        .as_u64()
        .unwrap();
    assert!(primed.contains(&format!("id: {seq}-0")), "{primed}");
    // The client goes away while the answer waits.
    drop(stream);

    let last = format!("{seq}-0");
    let h = [
        ACCEPT,
        ("mcp-session-id", sid.as_str()),
        ("last-event-id", last.as_str()),
    ];
    let resumed = send(&da.url, "GET", "/mcp/payments", &h, b"");
    // Taken up before the answer is due: it waits on the new stream.
    da.wait_for("event=resumed", 1);
    da.advance("5s");
    let r = read_response(resumed).unwrap();
    assert_eq!(r.status, 200);
    let text = String::from_utf8(dechunk(&r.body)).unwrap();
    assert!(
        text.starts_with(&format!("id: {seq}-1\nevent: message\ndata: ")),
        "{text}"
    );
    assert!(text.contains("\"isError\":false"), "{text}");
    assert_eq!(entries(&da, "resumed")[0]["detail"]["outcome"], "replayed");
    let transfers = da
        .ledger()
        .into_iter()
        .filter(|e| e["route"] == "create-transfer")
        .count();
    assert_eq!(transfers, 1, "resuming is no second call");
}

/// The same server with every answer cut after its priming event.
fn cut_scenario() -> String {
    scenario().replace(
        "fates = [\"delay:5s\"]",
        "fates = [\"drop-after-apply\", \"respond\"]",
    )
}

fn findings(da: &Da) -> Vec<String> {
    da.get("/_admin/verify").json()["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn rec4_a_resumed_stream_tells_the_outcome_so_a_later_call_is_no_blind_retry() {
    for resume in ["replay", "lost"] {
        let src = cut_scenario().replace("resume = \"replay\"", &format!("resume = \"{resume}\""));
        let da = Da::start(&src);
        let sid = session(&da);
        let call = |id: u64| {
            let call = json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "pay", "arguments": {"to": "a", "amount": 1}}});
            let h = [
                ACCEPT,
                ("mcp-session-id", sid.as_str()),
                ("mcp-protocol-version", "2025-11-25"),
            ];
            da.post_json("/mcp/payments", &h, &call).unwrap()
        };
        call(1);
        let seq = da
            .ledger()
            .into_iter()
            .find(|e| e["route"] == "create-transfer")
            .unwrap()["seq"]
            .as_u64()
            .unwrap();
        let last = format!("{seq}-0");
        let h = [
            ACCEPT,
            ("mcp-session-id", sid.as_str()),
            ("last-event-id", last.as_str()),
        ];
        da.call("GET", "/mcp/payments", &h, "");
        call(2);
        let rules = findings(&da);
        assert!(rules.contains(&"ACC-1".to_string()), "{resume}: {rules:?}");
        assert_eq!(
            rules.contains(&"REC-4".to_string()),
            resume == "lost",
            "{resume}: a replayed answer is the outcome learnt; a lost one is not: {rules:?}"
        );
    }
}
