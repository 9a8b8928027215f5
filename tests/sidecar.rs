//! Running as a staging sidecar: admin auth, per-test sessions, bounded memory, the probe.

mod common;

use common::*;
use std::process::Command;

#[test]
fn the_admin_api_needs_the_token_while_services_and_health_do_not() {
    let path = temp_file("s.toml", LOST_RESPONSE);
    let da = Da::start_args(&[path.to_str().unwrap(), "--admin-token", "s3cret"]);
    let denied = da.get("/_admin/ledger");
    assert_eq!(denied.status, 401);
    assert_eq!(denied.json()["status"], 401);
    assert_eq!(denied.header("www-authenticate"), Some("Bearer"));
    let wrong = da.call(
        "GET",
        "/_admin/ledger",
        &[("Authorization", "Bearer s3creT")],
        "",
    );
    assert_eq!(wrong.status, 401);
    let ok = da.call(
        "GET",
        "/_admin/ledger",
        &[("Authorization", "Bearer s3cret")],
        "",
    );
    assert_eq!(ok.status, 200);
    // RFC 9110: an authentication scheme's name is case-insensitive.
    let lower = da.call(
        "GET",
        "/_admin/ledger",
        &[("Authorization", "bearer s3cret")],
        "",
    );
    assert_eq!(lower.status, 200);
    assert_eq!(da.get("/_admin/health").status, 200, "health stays open");
    // Fake services imitate real ones: no token needed.
    assert!(
        da.post_json("/payments/v1/transfers", &[], &transfer())
            .is_err(),
        "first fate drops"
    );
    let reset = da.call("POST", "/_admin/reset", &[], "");
    assert_eq!(
        reset.status, 401,
        "no one resets the world without the token"
    );
}

#[test]
fn the_token_can_come_from_the_environment() {
    let path = temp_file("s.toml", LOST_RESPONSE);
    let mut child = Command::new(bin())
        .args(["serve", path.to_str().unwrap(), "--listen", "127.0.0.1:0"])
        .env("DOUBLEAGENT_ADMIN_TOKEN", "from-env")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let url = ready_of(&mut child)["url"].as_str().unwrap().to_string();
    assert_eq!(
        request(&url, "GET", "/_admin/clock", &[], b"")
            .unwrap()
            .status,
        401
    );
    assert_eq!(
        request(
            &url,
            "GET",
            "/_admin/clock",
            &[("Authorization", "Bearer from-env")],
            b""
        )
        .unwrap()
        .status,
        200
    );
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn a_non_loopback_address_without_a_token_is_refused_with_the_fix() {
    let out = Command::new(bin())
        .args(["serve", "--listen", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--admin-token") && err.contains("--insecure-admin"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

#[test]
fn insecure_admin_allows_a_non_loopback_address() {
    let mut child = Command::new(bin())
        .args(["serve", "--listen", "0.0.0.0:0", "--insecure-admin"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    assert_eq!(ready_of(&mut child)["event"], "ready");
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn sessions_keep_ledgers_keys_fates_and_clocks_apart() {
    let da = Da::start(LOST_RESPONSE);
    let a = [
        ("X-Doubleagent-Session", "test-a"),
        ("Idempotency-Key", "k-1"),
    ];
    let b = [
        ("X-Doubleagent-Session", "test-b"),
        ("Idempotency-Key", "k-1"),
    ];
    // Each session's fate sequence starts over: both first attempts are dropped.
    assert!(da
        .post_json("/payments/v1/transfers", &a, &transfer())
        .is_err());
    assert!(da
        .post_json("/payments/v1/transfers", &b, &transfer())
        .is_err());
    // The same key in another session is not a replay.
    let ledger_a = da.get("/_admin/ledger?session=test-a").json()["entries"]
        .as_array()
        .unwrap()
        .clone();
    let ledger_b = da.get("/_admin/ledger?session=test-b").json()["entries"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!((ledger_a.len(), ledger_b.len()), (1, 1));
    assert_eq!(ledger_b[0]["disposition"], "executed");
    assert!(da.ledger().is_empty(), "the default session saw nothing");
    // Clocks are per session.
    let r = da.call(
        "POST",
        "/_admin/clock/advance?session=test-a",
        &[("content-type", "application/json")],
        r#"{"by":"1h"}"#,
    );
    assert_eq!(r.json()["elapsed"], "1h");
    assert_eq!(
        da.get("/_admin/clock?session=test-b").json()["elapsed"],
        "0ms"
    );
    assert_eq!(
        da.get("/_admin/sessions").json()["sessions"],
        serde_json::json!(["test-a", "test-b"])
    );
    // A drop that is neither true nor false is refused, not read as "reset it" (Schemathesis
    // sent `drop=null`): a script that meant to end the session would quietly keep it.
    let unclear = da.call("POST", "/_admin/reset?session=test-a&drop=yes", &[], "");
    assert_eq!(unclear.status, 400, "{}", unclear.text());
    assert!(unclear.json()["error"]
        .as_str()
        .unwrap()
        .starts_with("drop:"));
    assert_eq!(
        da.get("/_admin/clock?session=test-a").json()["elapsed"],
        "1h",
        "nothing was reset"
    );
    let dropped = da.call("POST", "/_admin/reset?session=test-a&drop=true", &[], "");
    assert_eq!(dropped.json()["status"], "dropped");
    assert_eq!(dropped.json()["existed"], true);
    assert_eq!(
        da.get("/_admin/sessions").json()["sessions"],
        serde_json::json!(["test-b"])
    );
    // Neither dropping a session never used nor reading its verdict makes it.
    let never = da.call("POST", "/_admin/reset?session=never&drop=true", &[], "");
    assert_eq!(never.json()["existed"], false, "{}", never.text());
    assert_eq!(da.get("/_admin/verify.txt?session=unseen").status, 200);
    assert_eq!(
        da.get("/_admin/sessions").json()["sessions"],
        serde_json::json!(["test-b"])
    );
}

#[test]
fn two_tests_running_at_once_never_see_each_others_entries() {
    let da = Da::start(&payments("", ""));
    let url = da.url.clone();
    let workers: Vec<_> = (0..8)
        .map(|t| {
            let url = url.clone();
            std::thread::spawn(move || {
                let session = format!("t{t}");
                for i in 0..25 {
                    let key = format!("{session}-{i}");
                    let body = format!("{{\"to\":\"{session}\",\"amount\":{i}}}");
                    let r = request(
                        &url,
                        "POST",
                        "/payments/v1/transfers",
                        &[
                            ("X-Doubleagent-Session", &session),
                            ("Idempotency-Key", &key),
                            ("content-type", "application/json"),
                        ],
                        body.as_bytes(),
                    )
                    .unwrap();
                    assert_eq!(r.status, 201);
                }
                session
            })
        })
        .collect();
    for w in workers {
        let session = w.join().unwrap();
        let entries = da.get(&format!("/_admin/ledger?session={session}")).json()["entries"]
            .as_array()
            .unwrap()
            .clone();
        assert_eq!(entries.len(), 25, "{session}");
        assert!(
            entries.iter().all(|e| e["body"]["to"] == session.as_str()),
            "{session} saw another session's entry"
        );
        let seqs: Vec<u64> = entries.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
        assert_eq!(
            seqs,
            (1..=25).collect::<Vec<_>>(),
            "each session numbers its own ledger"
        );
    }
}

#[test]
fn bad_session_names_and_too_many_sessions_get_a_json_error() {
    let path = temp_file("s.toml", &payments("", ""));
    let da = Da::start_args(&[path.to_str().unwrap(), "--max-sessions", "1"]);
    let bad = da.call(
        "GET",
        "/payments/v1/transfers/x",
        &[("X-Doubleagent-Session", "no spaces please")],
        "",
    );
    assert_eq!(bad.status, 400);
    assert!(bad.json()["error"]
        .as_str()
        .unwrap()
        .contains("bad session name"));
    assert_eq!(
        da.call(
            "GET",
            "/payments/v1/transfers/x",
            &[("X-Doubleagent-Session", "one")],
            ""
        )
        .status,
        404
    );
    let full = da.call(
        "GET",
        "/payments/v1/transfers/x",
        &[("X-Doubleagent-Session", "two")],
        "",
    );
    assert_eq!(full.status, 429);
    assert_eq!(da.get("/_admin/ledger?session=two").status, 429);
}

#[test]
fn idle_sessions_are_dropped_after_their_ttl() {
    let path = temp_file("s.toml", &payments("", ""));
    let da = Da::start_args(&[path.to_str().unwrap(), "--session-ttl", "50ms"]);
    da.call(
        "GET",
        "/payments/v1/transfers/x",
        &[("X-Doubleagent-Session", "short-lived")],
        "",
    );
    assert_eq!(
        da.get("/_admin/sessions").json()["sessions"],
        serde_json::json!(["short-lived"])
    );
    // Wall-clock expiry by design (operations, not the simulated world): poll, bounded.
    let mut gone = false;
    for _ in 0..200 {
        if da.get("/_admin/sessions").json()["sessions"] == serde_json::json!([]) {
            gone = true;
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(gone, "idle session not dropped");
}

#[test]
fn max_entries_evicts_the_oldest_and_every_verdict_says_the_ledger_is_incomplete() {
    let path = temp_file("s.toml", &payments("", ""));
    let da = Da::start_args(&[path.to_str().unwrap(), "--max-entries", "3"]);
    for i in 0..5 {
        let body = serde_json::json!({"to": "acct", "amount": i});
        da.post_json("/payments/v1/transfers", &[], &body).unwrap();
    }
    let entries = da.ledger();
    assert_eq!(
        entries
            .iter()
            .map(|e| e["seq"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        vec![3, 4, 5]
    );
    let health = da.get("/_admin/health").json();
    assert_eq!(
        (health["entries"].as_u64(), health["evicted"].as_u64()),
        (Some(3), Some(2))
    );
    let verdict = da.get("/_admin/verify").json();
    assert!(
        verdict["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("incomplete")),
        "{verdict}"
    );
}

#[test]
fn probe_exits_0_when_health_answers_and_1_when_nothing_does() {
    let da = Da::start(LOST_RESPONSE);
    let ok = Command::new(bin())
        .args(["probe", "--url", &da.url])
        .status()
        .unwrap();
    assert_eq!(ok.code(), Some(0));
    let url = da.url.clone();
    drop(da);
    let down = Command::new(bin())
        .args(["probe", "--url", &url, "--timeout", "1s"])
        .status()
        .unwrap();
    assert_eq!(down.code(), Some(1));
}

#[test]
fn metrics_count_requests_by_label_and_never_go_backwards_across_resets() {
    let da = Da::start(&payments("idempotency = { preset = \"stripe\" }", ""));
    let key = [("Idempotency-Key", "k-1")];
    da.post_json("/payments/v1/transfers", &key, &transfer())
        .unwrap();
    da.post_json("/payments/v1/transfers", &key, &transfer())
        .unwrap();
    da.call(
        "GET",
        "/payments/v1/transfers/x",
        &[("X-Doubleagent-Session", "s1")],
        "",
    );
    da.get("/_admin/verify");
    let m = da.get("/_admin/metrics");
    assert_eq!(m.header("content-type"), Some("text/plain; version=0.0.4"));
    let text = m.text();
    assert!(text.contains("doubleagent_requests_total{service=\"payments\",route=\"create-transfer\",disposition=\"executed\",fate=\"respond\"} 1"), "{text}");
    assert!(text.contains("doubleagent_replays_total 1"), "{text}");
    assert!(text.contains("doubleagent_sessions 1"), "{text}");
    assert!(text.contains("disposition=\"lookup\""), "{text}");
    da.call("POST", "/_admin/reset", &[], "");
    da.call("POST", "/_admin/reset?session=s1&drop=true", &[], "");
    let after = da.get("/_admin/metrics").text();
    assert!(
        after.contains("doubleagent_replays_total 1"),
        "counters survive a reset: {after}"
    );
    assert!(
        after.contains("doubleagent_sessions 0")
            && after.contains("doubleagent_sessions_dropped_total 1"),
        "{after}"
    );
    assert!(after.contains("doubleagent_ledger_entries 0"), "{after}");
}

#[test]
fn json_logs_carry_one_object_per_request_with_its_seq() {
    let path = temp_file("s.toml", &payments("", ""));
    let mut child = Command::new(bin())
        .args([
            "serve",
            path.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
            "--log-format",
            "json",
        ])
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let url = ready_of(&mut child)["url"].as_str().unwrap().to_string();
    request(&url, "POST", "/payments/v1/transfers", &[], b"{}").unwrap();
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let logs = String::from_utf8_lossy(&out.stderr);
    let req = logs
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["fields"]["message"] == "request")
        .unwrap_or_else(|| panic!("no request log: {logs}"));
    assert_eq!(req["fields"]["seq"], 1);
    assert_eq!(req["fields"]["disposition"], "executed");
    assert_eq!(req["fields"]["route"], "create-transfer");
}

#[test]
fn the_dockerfile_builds_locked_runs_unprivileged_and_probes_itself() {
    let docker =
        std::fs::read_to_string(format!("{}/Dockerfile", env!("CARGO_MANIFEST_DIR"))).unwrap();
    assert!(docker.contains("cargo build --release --locked"));
    assert!(docker.matches("FROM ").count() >= 2, "multi-stage");
    assert!(docker.contains("USER doubleagent"));
    assert!(docker.contains("EXPOSE 7070"));
    assert!(docker.contains("HEALTHCHECK") && docker.contains("\"probe\""));
    assert!(docker.contains("0.0.0.0:7070"));
    assert!(!docker.contains("curl"), "the image needs no curl");
}

#[test]
fn the_staging_doc_names_the_ports_the_image_exposes_and_lets_its_user_write_the_data_volume() {
    let root = env!("CARGO_MANIFEST_DIR");
    let docker = std::fs::read_to_string(format!("{root}/Dockerfile")).unwrap();
    let doc = std::fs::read_to_string(format!("{root}/docs/staging.md")).unwrap();
    let exposed = docker.lines().find(|l| l.starts_with("EXPOSE ")).unwrap();
    assert!(
        doc.contains(&format!("`{exposed}`")),
        "docs/staging.md should say `{exposed}`"
    );
    // The Kubernetes example's data volume is writable by the image's user.
    assert!(docker.contains("--uid 10001") && doc.contains("fsGroup: 10001"));
}

#[test]
fn sigterm_lets_a_pending_delayed_response_finish_within_the_drain_timeout() {
    let scenario =
        payments("", "fates = [\"delay:300ms\"]").replace("clock = \"manual\"", "clock = \"real\"");
    let path = temp_file("s.toml", &scenario);
    let da = Da::start_args(&[path.to_str().unwrap(), "--drain-timeout", "10s"]);
    let conn = send(
        &da.url,
        "POST",
        "/payments/v1/transfers",
        &[("content-type", "application/json")],
        transfer().to_string().as_bytes(),
    );
    da.wait_for("service=payments", 1);
    let status = da.terminate();
    assert_eq!(status.code(), Some(0));
    let r = read_response(conn).expect("the delayed response was still delivered");
    assert_eq!(r.status, 201);
}
