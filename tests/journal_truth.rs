//! What a journal restores is what happened: a delayed response the server never sent (killed,
//! or cut by the drain) is not restored as sent (REC-4), and a journal that lost lines says so.

mod common;

use common::*;
use std::process::Command;
use std::time::Duration;

fn delayed(delay: &str) -> String {
    format!(
        r#"name = "kr"
seed = 1
[services.pay]
idempotency = {{ preset = "stripe", retention = "24h" }}
[[services.pay.routes]]
name = "create"
method = "POST"
path = "/v1/t"
kind = "action"
intent = ["/to", "/amount"]
fates = ["delay:{delay}", "respond"]
respond = {{ status = 201, json = {{ id = "{{{{action.id}}}}" }} }}
"#
    )
}

fn serve(scenario: &std::path::Path, journal: &std::path::Path, extra: &[&str]) -> Da {
    let mut args = vec![
        scenario.to_str().unwrap(),
        "--journal",
        journal.to_str().unwrap(),
        "--fsync",
        "always",
    ];
    args.extend_from_slice(extra);
    Da::start_args(&args)
}

fn transfer_with(da: &Da, key: &str) -> std::net::TcpStream {
    send(
        &da.url,
        "POST",
        "/pay/v1/t",
        &[
            ("Idempotency-Key", key),
            ("content-type", "application/json"),
        ],
        br#"{"to":"x","amount":5}"#,
    )
}

/// After a restart: the first entry was never answered, and a retry of its intent with a new
/// key is judged with its outcome unknown (REC-4), not as a duplicate of a delivered success.
fn restored_unanswered(da: &Da) {
    let entry = &da.ledger()[0];
    assert_eq!(entry["response"]["delivery"], "abandoned", "{entry}");
    assert!(entry["response"]["status"].is_null(), "{entry}");
    let r = da
        .post_json(
            "/pay/v1/t",
            &[("Idempotency-Key", "a2")],
            &serde_json::json!({"to":"x","amount":5}),
        )
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.text());
    let verdict = da.get("/_admin/verify.txt").text();
    assert!(verdict.contains("REC-4"), "{verdict}");
}

/// REC-4: a response delayed past a SIGKILL was never sent; restored, it says so.
#[test]
fn a_delayed_response_cut_by_sigkill_is_restored_abandoned_not_sent_rec_4() {
    let scenario = temp_file("s.toml", &delayed("3s"));
    let journal = scenario.with_file_name("j.jsonl");
    let da = serve(&scenario, &journal, &[]);
    let _client = transfer_with(&da, "a1");
    da.wait_for("service=pay", 1);
    Command::new("kill")
        .args(["-KILL", &da.child.id().to_string()])
        .status()
        .unwrap();
    drop(da);
    std::thread::sleep(Duration::from_secs(3));
    let da = serve(&scenario, &journal, &[]);
    restored_unanswered(&da);
}

/// REC-4: a delayed response cut by the SIGTERM drain timeout was never sent either.
#[test]
fn a_delayed_response_cut_by_the_drain_timeout_is_recorded_abandoned_rec_4() {
    let scenario = temp_file("s.toml", &delayed("8s"));
    let journal = scenario.with_file_name("j.jsonl");
    let da = serve(&scenario, &journal, &["--drain-timeout", "1s"]);
    let _client = transfer_with(&da, "a1");
    da.wait_for("service=pay", 1);
    assert!(da.terminate().success());
    let da = serve(&scenario, &journal, &[]);
    assert!(da.ledger()[0]["response"]["at"].is_string());
    restored_unanswered(&da);
}

/// A delayed response that was sent stays sent across a restart.
#[test]
fn a_delayed_response_that_was_sent_is_restored_sent() {
    let scenario = temp_file("s.toml", &delayed("200ms"));
    let journal = scenario.with_file_name("j.jsonl");
    let da = serve(&scenario, &journal, &[]);
    let r = da
        .post_json(
            "/pay/v1/t",
            &[("Idempotency-Key", "a1")],
            &serde_json::json!({"to":"x","amount":5}),
        )
        .unwrap();
    assert_eq!(r.status, 201);
    Command::new("kill")
        .args(["-KILL", &da.child.id().to_string()])
        .status()
        .unwrap();
    drop(da);
    let da = serve(&scenario, &journal, &[]);
    let entry = &da.ledger()[0];
    assert_eq!(entry["response"]["delivery"], "sent", "{entry}");
    assert_eq!(entry["response"]["status"], 201, "{entry}");
}
