//! Sessions behind plain URLs: `/_s/NAME/...` picks session NAME as the `X-Doubleagent-Session`
//! header does, and every URL handed out inside a session carries the prefix, so code under test
//! needs only a base URL.

mod common;

use common::*;
use serde_json::json;

const WITH_AGENT: &str = r#"
name = "prefixed"
clock = "manual"

[services.payments]
[[services.payments.routes]]
name = "create-transfer"
method = "POST"
path = "/v1/transfers"
kind = "action"
respond = { status = 201, json = { id = "{{action.id}}", status = "succeeded" } }

[agents.researcher]
protocol = "a2a"
work = "3s"
"#;

fn rules_of(verdict: &serde_json::Value) -> Vec<String> {
    verdict["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["rule"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_url_prefix_selects_its_own_session_and_its_blind_retry_is_judged_there_acc_1_rec_4() {
    let da = Da::start(LOST_RESPONSE);
    let k1 = [("Idempotency-Key", "k-1")];
    let k2 = [("Idempotency-Key", "k-2")];
    assert!(
        da.post_json("/_s/t-42/payments/v1/transfers", &k1, &transfer())
            .is_err(),
        "the session's first fate drops the response"
    );
    let second = da
        .post_json("/_s/t-42/payments/v1/transfers", &k2, &transfer())
        .unwrap();
    assert_eq!(second.status, 201);
    let session = da.get("/_admin/ledger?session=t-42").json();
    assert_eq!(session["entries"].as_array().unwrap().len(), 2);
    assert_eq!(
        da.get("/_admin/ledger").json()["entries"],
        json!([]),
        "the default session saw nothing"
    );
    // The header reaches the same world: the lost transfer is found by its key.
    let looked_up = da.call(
        "GET",
        "/payments/v1/transfers/k-1",
        &[("X-Doubleagent-Session", "t-42")],
        "",
    );
    assert_eq!(looked_up.status, 200);
    // The admin API behind the prefix is the session's, as `?session=` is.
    let verdict = da.get("/_s/t-42/_admin/verify").json();
    let rules = rules_of(&verdict);
    assert!(
        rules.contains(&"ACC-1".to_string()) && rules.contains(&"REC-4".to_string()),
        "{verdict}"
    );
    assert_eq!(verdict, da.get("/_admin/verify?session=t-42").json());
    assert!(rules_of(&da.get("/_admin/verify").json()).is_empty());
}

#[test]
fn the_ready_json_and_agent_cards_inside_a_session_carry_its_prefix() {
    let da = Da::start(WITH_AGENT);
    let base = format!("{}/_s/t-1", da.url);
    let ready = da.get("/_s/t-1/").json();
    assert_eq!(ready["url"], base);
    assert_eq!(ready["services"]["payments"], format!("{base}/payments"));
    assert_eq!(
        ready["agents"]["researcher"],
        format!("{base}/agents/researcher")
    );
    assert_eq!(da.get("/_s/t-1").json(), ready, "no trailing slash needed");
    let url = format!("{base}/agents/researcher");
    let interfaces = json!([
        {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"url": url, "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
        // gRPC has no path: the tenant carries the session.
        {"url": da.ready["grpc"], "protocolBinding": "GRPC", "protocolVersion": "1.0",
            "tenant": "_s/t-1/researcher"},
    ]);
    let card = da
        .get("/_s/t-1/agents/researcher/.well-known/agent-card.json")
        .json();
    assert_eq!(card["supportedInterfaces"], interfaces);
    // A session picked by its header hands out the same prefixed URLs: they lead back into it
    // even from a client that does not forward the header.
    let by_header = da.call(
        "GET",
        "/agents/researcher/.well-known/agent-card.json",
        &[("X-Doubleagent-Session", "t-1")],
        "",
    );
    assert_eq!(by_header.json()["supportedInterfaces"], interfaces);
    // Outside a session nothing changes.
    assert_eq!(da.get("/").json()["url"], da.url);
    // Replacing a session's scenario answers with the session's URLs.
    let replaced = da.call("POST", "/_admin/scenario?session=t-1", &[], WITH_AGENT);
    assert_eq!(replaced.json()["url"], base);
    let replaced = da.call("POST", "/_s/t-2/_admin/scenario", &[], WITH_AGENT);
    assert_eq!(
        replaced.json()["services"]["payments"],
        format!("{}/_s/t-2/payments", da.url)
    );
}

#[test]
fn bad_or_conflicting_session_prefixes_get_a_400_json_error() {
    let da = Da::start(LOST_RESPONSE);
    for path in [
        "/_s/bad%20name/payments/v1/transfers/x",
        "/_s//payments/v1/transfers/x",
    ] {
        let r = da.get(path);
        assert_eq!(r.status, 400, "{path}");
        assert!(
            r.json()["error"]
                .as_str()
                .unwrap()
                .contains("bad session name"),
            "{path}: {}",
            r.text()
        );
    }
    let conflict = da.call(
        "GET",
        "/_s/a/payments/v1/transfers/x",
        &[("X-Doubleagent-Session", "b")],
        "",
    );
    assert_eq!(conflict.status, 400);
    let msg = conflict.json()["error"].as_str().unwrap().to_string();
    assert!(msg.contains("/_s/a/") && msg.contains("(b)"), "{msg}");
    let agreeing = da.call(
        "GET",
        "/_s/a/payments/v1/transfers/x",
        &[("X-Doubleagent-Session", "a")],
        "",
    );
    assert_eq!(agreeing.status, 404, "the same name twice is fine");
    let admin = da.get("/_s/a/_admin/ledger?session=b");
    assert_eq!(admin.status, 400);
    assert!(admin.json()["error"]
        .as_str()
        .unwrap()
        .contains("different sessions"));
    assert_eq!(da.get("/_s/a/_admin/ledger?session=a").status, 200);
    assert_eq!(da.get("/_s/bad%20name/_admin/ledger").status, 400);
    assert_eq!(
        da.get("/_admin/sessions").json()["sessions"],
        json!(["a"]),
        "no session was made for a refused request"
    );
}

#[test]
fn the_root_answers_get_only_and_other_methods_get_405_and_allow() {
    let da = Da::start(LOST_RESPONSE);
    for path in ["/", "/_s/x/", "/_s/x"] {
        assert_eq!(da.get(path).status, 200, "{path}");
        for method in ["POST", "DELETE", "PUT"] {
            let r = da.call(method, path, &[], "{}");
            assert_eq!(r.status, 405, "{method} {path}: {}", r.text());
            assert_eq!(r.header("allow"), Some("GET, HEAD"), "{method} {path}");
            assert!(r.json()["error"].as_str().unwrap().contains("takes GET"));
        }
    }
    assert_eq!(
        da.get("/_admin/sessions").json()["sessions"],
        json!([]),
        "the root describes a session and creates none"
    );
}
