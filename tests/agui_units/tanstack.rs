use crate::support::binding;
use doubleagent::agent::agui::event::Event;
use doubleagent::agent::agui::interrupt::Interrupt;
use doubleagent::agent::agui::tanstack::*;
use serde_json::json;
use serde_json::Value;
use std::sync::Arc;

#[test]
fn tanstack_canonical_json_matches_js() {
    let v: Value = serde_json::from_str(
        r#"{"b":1,"a":[true,null,"x\"y"],"B":{"z":1.5,"y":1.0,"x":1e21,"w":1e-7,"v":-0.0,"u":0.000001}}"#,
    )
    .unwrap();
    // Checked against @tanstack/ai 0.58.0 canonicalInterruptJson.
    assert_eq!(
        canonical_json(&v),
        r#"{"B":{"u":0.000001,"v":0,"w":1e-7,"x":1e+21,"y":1,"z":1.5},"a":[true,null,"x\"y"],"b":1}"#
    );
}

#[test]
fn tanstack_binding_for_the_issue_example() {
    // Issue 7's approve-transfer interrupt. Hash checked against @tanstack/ai 0.58.0
    // digestInterruptJson(canonicalInterruptJson(schema)) under node.
    let mut i = Interrupt::new("approve-transfer", "approval-required");
    i.message = Some("Approve transferring 100 to acct-9?".into());
    i.tool_call_id = Some("tc-1".into());
    i.response_schema = Some(Arc::new(
        json!({"type": "object", "properties": {"approved": {"type": "boolean"}}})
            .as_object()
            .unwrap()
            .clone(),
    ));
    i.expires_at = Some("2026-01-01T00:10:00.000Z".into());
    bind_generic(&mut i, "run-1");
    let bound = i;
    let b = binding(&bound).unwrap();
    assert_eq!(b["v"], 1);
    assert_eq!(b["kind"], "generic");
    assert_eq!(b["interruptId"], "approve-transfer");
    assert_eq!(b["interruptedRunId"], "run-1");
    assert_eq!(b["generation"], 0);
    assert_eq!(b["expiresAt"], "2026-01-01T00:10:00.000Z");
    assert_eq!(
        b["responseSchemaHash"],
        "sha256:cf02c74d30b5aa436d45f581780e03fe2aef4b97d233bef3acdef4d9ca1176d1"
    );
    assert!(
        serde_json::to_string(&Event::run_interrupted("t", "r", vec![bound]))
            .unwrap()
            .contains("\"tanstack:interruptBinding\"")
    );
}
