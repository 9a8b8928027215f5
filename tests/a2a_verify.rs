//! The verifier over A2A agents, against the real binary: a task cancelled while it waited for
//! input and claimed cancelled is no REC-3 finding; subscribing to a finished task is a read,
//! not a message to it (no REC-6); a superseded result's canary forwarded in a data part is
//! adopted all the same (ACC-2). Rule IDs from shared/spec/rules.md are in the test names.

mod common;

use common::*;
use serde_json::{json, Value};

const SCENARIO: &str = r#"
name = "a2a-verify"
clock = "manual"

[agents.h]
protocol = "a2a"
work = "3s"
cancel = "honor"

[agents.h.result]
text = "result {{canary}}"
data = { account = "{{canary}}" }

[[agents.h.behaviors]]
match = { text = "ask" }
outcome = "input-required"
message = "Which account?"
work = "0s"
"#;

fn rpc(da: &Da, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let r = da
        .post_json("/agents/h", &[("A2A-Version", "1.0")], &body)
        .unwrap();
    assert_eq!(r.status, 200, "{method}: {}", r.text());
    r.json()
}

fn send(da: &Da, id: &str, parts: Value, meta: Value) -> Value {
    let mut m = json!({"messageId": id, "role": "ROLE_USER", "parts": parts});
    if !meta.is_null() {
        m["metadata"] = meta;
    }
    let cfg = json!({"returnImmediately": true});
    rpc(
        da,
        "SendMessage",
        json!({"message": m, "configuration": cfg}),
    )
}

fn findings(da: &Da, rule: &str) -> Vec<Value> {
    let v = da.get("/_admin/verify").json();
    let all = v["findings"].as_array().unwrap().clone();
    all.into_iter().filter(|f| f["rule"] == rule).collect()
}

#[test]
fn rec3_a_task_cancelled_while_it_waited_for_input_and_claimed_cancelled_is_no_finding() {
    let da = Da::start(SCENARIO);
    let ask = json!({"messageId": "q1", "role": "ROLE_USER", "parts": [{"text": "ask me"}]});
    let task = rpc(&da, "SendMessage", json!({"message": ask}));
    assert_eq!(
        task["result"]["task"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{task}"
    );
    let id = task["result"]["task"]["id"].clone();
    let cancelled = rpc(&da, "CancelTask", json!({"id": id}));
    assert_eq!(
        cancelled["result"]["status"]["state"], "TASK_STATE_CANCELED",
        "{cancelled}"
    );
    let claims = json!({"tasks": [{"task_id": id, "claim": "cancelled"}]});
    assert!(da.post_json("/_admin/claims", &[], &claims).unwrap().status < 300);
    assert_eq!(findings(&da, "REC-3"), Vec::<Value>::new());

    // Claimed completed, the same task is ACC-3: it ended cancelled.
    let claims = json!({"tasks": [{"task_id": id, "claim": "completed"}]});
    assert!(da.post_json("/_admin/claims", &[], &claims).unwrap().status < 300);
    let acc3 = findings(&da, "ACC-3");
    assert_eq!(acc3.len(), 1, "{acc3:?}");
    assert!(
        acc3[0]["summary"]
            .as_str()
            .unwrap()
            .contains("TASK_STATE_CANCELED"),
        "{acc3:?}"
    );
}

#[test]
fn rec6_subscribing_to_a_finished_task_is_a_read_not_a_message_to_it() {
    let da = Da::start(SCENARIO);
    let id = send(&da, "m1", json!([{"text": "go"}]), Value::Null)["result"]["task"]["id"].clone();
    da.advance("5s");
    let body =
        json!({"jsonrpc": "2.0", "id": 2, "method": "SubscribeToTask", "params": {"id": id}});
    let r = da
        .post_json("/agents/h", &[("A2A-Version", "1.0")], &body)
        .unwrap();
    assert!(
        r.text().contains("-32004"),
        "a finished task cannot be subscribed to: {}",
        r.text()
    );
    assert_eq!(findings(&da, "REC-6"), Vec::<Value>::new());

    // A message to it is REC-6.
    let follow =
        json!({"messageId": "m2", "role": "ROLE_USER", "taskId": id, "parts": [{"text": "more"}]});
    let r = rpc(&da, "SendMessage", json!({"message": follow}));
    assert_eq!(r["error"]["code"], -32004, "{r}");
    assert_eq!(findings(&da, "REC-6").len(), 1);
}

#[test]
fn acc2_a_superseded_canary_forwarded_in_a_data_part_is_adopted() {
    let da = Da::start(SCENARIO);
    let task = send(&da, "m1", json!([{"text": "go"}]), json!({"revision": 1}));
    let id = task["result"]["task"]["id"].clone();
    da.advance("3s");
    let done = rpc(&da, "GetTask", json!({"id": id}));
    let canary = done["result"]["artifacts"][0]["parts"][1]["data"]["account"].clone();
    assert!(
        canary.as_str().is_some_and(|c| c.starts_with("cny-")),
        "{done}"
    );
    let r = da
        .post_json("/_admin/revision", &[], &json!({"revision": 2}))
        .unwrap();
    assert!(r.status < 300, "{}", r.text());
    send(
        &da,
        "m2",
        json!([{"data": {"acct": canary}}]),
        json!({"revision": 2}),
    );
    let acc2 = findings(&da, "ACC-2");
    assert_eq!(
        acc2.len(),
        1,
        "the canary in a data part is found: {acc2:?}"
    );
}
