//! The command line as a user meets it: the quickstart, the ready line and ready file, `check`,
//! exit codes, graceful shutdown.

mod common;

use common::*;
use std::process::Command;

#[test]
fn serve_without_a_scenario_serves_the_quickstart_and_prints_the_ready_line_first() {
    let da = Da::start_args(&[]);
    assert_eq!(da.ready["event"], "ready");
    assert_eq!(da.ready["scenario"], "quickstart");
    assert_eq!(
        da.ready["services"]["payments"],
        format!("{}/payments", da.url)
    );
    assert!(
        da.ready_line
            .starts_with("{\"event\":\"ready\",\"url\":\"http://127.0.0.1:"),
        "keys in the documented order: {}",
        da.ready_line
    );
    // The quickstart's story: first transfer applied, response lost; same key → replay.
    let body = transfer();
    let key = [("Idempotency-Key", "k-1")];
    assert!(da.post_json("/payments/v1/transfers", &key, &body).is_err());
    let r = da.post_json("/payments/v1/transfers", &key, &body).unwrap();
    assert_eq!(r.status, 201);
    assert_eq!(r.header("Idempotent-Replayed"), Some("true"));
    assert_eq!(
        da.get("/payments/v1/transfers/k-1").json()["state"],
        "applied"
    );
}

#[test]
fn the_ready_file_holds_the_same_json_as_the_ready_line() {
    let file = temp_file("ready.json", "");
    let da = Da::start_args(&["--ready-file", file.to_str().unwrap()]);
    let written = std::fs::read_to_string(&file).unwrap();
    assert_eq!(written.trim_end(), da.ready_line.trim_end());
}

#[test]
fn sigterm_stops_the_server_gracefully_with_exit_0() {
    let da = Da::start(LOST_RESPONSE);
    assert_eq!(da.get("/_admin/health").status, 200);
    let status = da.terminate();
    assert_eq!(status.code(), Some(0));
}

#[test]
fn sigterm_releases_hung_connections_instead_of_waiting_for_them() {
    let da = Da::start(&payments("", "fates = [\"hang-after-apply\"]"));
    let conn = send(&da.url, "POST", "/payments/v1/transfers", &[], b"{}");
    da.wait_for("service=payments", 1);
    let status = da.terminate();
    assert_eq!(status.code(), Some(0));
    assert!(
        read_response(conn).is_err(),
        "a hung response is never sent"
    );
}

#[test]
fn sigterm_closes_idle_keep_alive_connections_instead_of_waiting_out_the_drain_timeout() {
    use std::io::{Read, Write};
    let path = temp_file("s.toml", LOST_RESPONSE);
    let mut da = Da::start_args(&[path.to_str().unwrap(), "--drain-timeout", "60s"]);
    let hostport = da.url.trim_start_matches("http://").to_string();
    // Two connections: one that has had its answer and waits for its next request, and one that
    // has not been used at all.
    let mut used = std::net::TcpStream::connect(&hostport).unwrap();
    used.set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    write!(
        used,
        "GET /_admin/health HTTP/1.1\r\nHost: {hostport}\r\n\r\n"
    )
    .unwrap();
    read_until(&mut used, "\"status\"");
    let mut fresh = std::net::TcpStream::connect(&hostport).unwrap();
    fresh
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    assert_eq!(da.get("/_admin/health").status, 200);
    let pid = da.child.id().to_string();
    Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    // Told to close, both connections end: the server does not wait for them.
    for conn in [&mut used, &mut fresh] {
        let mut rest = Vec::new();
        conn.read_to_end(&mut rest)
            .expect("closed by the server, not by the read timeout");
        assert!(rest.is_empty(), "{}", String::from_utf8_lossy(&rest));
    }
    let status = da.child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    let mut err = String::new();
    da.child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(!err.contains("drain timeout"), "{err}");
}

#[test]
fn check_accepts_good_scenarios_with_exit_0() {
    let path = temp_file("good.toml", LOST_RESPONSE);
    let out = Command::new(bin())
        .arg("check")
        .arg(&path)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout)
        .contains("ok (scenario \"lost-response\", 1 service(s))"));
}

#[test]
fn bad_input_on_the_command_line_exits_2() {
    let missing = Command::new(bin())
        .args(["check", "/nonexistent/scenario.toml"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot read the scenario"));
    let usage = Command::new(bin())
        .args(["serve", "--no-such-flag"])
        .output()
        .unwrap();
    assert_eq!(usage.status.code(), Some(2));
    let seed = Command::new(bin())
        .args(["serve", "--seed", "minus-one"])
        .output()
        .unwrap();
    assert_eq!(seed.status.code(), Some(2));
}

#[test]
fn an_address_that_cannot_be_bound_is_a_runtime_failure() {
    let da = Da::start(LOST_RESPONSE);
    let taken = da.url.trim_start_matches("http://").to_string();
    let out = Command::new(bin())
        .args(["serve", "--listen", &taken])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cannot listen on"));
}

#[test]
fn verify_and_report_of_a_server_that_cannot_be_read_are_a_runtime_failure() {
    // Nothing listens on port 1 (`probe` exits 1 there too); a server with a token answers 401
    // without it.
    let path = temp_file("s.toml", LOST_RESPONSE);
    let da = Da::start_args(&[path.to_str().unwrap(), "--admin-token", "tok"]);
    let none = "http://127.0.0.1:1";
    for (url, says) in [(none, none), (da.url.as_str(), "401")] {
        let mut cmds = vec![
            vec!["verify", "--url", url],
            vec!["report", "--url", url, "-o", "-"],
        ];
        if url == none {
            cmds.push(vec!["probe", "--url", url]);
        }
        for cmd in cmds {
            let out = Command::new(bin())
                .args(&cmd)
                .env_remove("DOUBLEAGENT_ADMIN_TOKEN")
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{cmd:?}: {err}");
            if cmd[0] != "probe" {
                assert!(err.contains(says), "{cmd:?}: {err}");
            }
        }
    }
    // A ledger file that is not there stays bad input.
    let out = Command::new(bin())
        .args(["verify", "--ledger", "/nonexistent/l.jsonl"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn the_seed_flag_overrides_the_scenario_seed_and_is_reported_by_health() {
    let path = temp_file("s.toml", LOST_RESPONSE);
    let da = Da::start_args(&[path.to_str().unwrap(), "--seed", "99"]);
    assert_eq!(da.get("/_admin/health").json()["seed"], 99);
}

/// The client `verify --url`, `report --url` and `probe` call a server with.
#[tokio::test]
async fn only_plain_http_urls_with_a_host_are_sent() {
    use doubleagent::client::{send, ClientError};
    for bad in ["https://x/", "http:///x", "ftp://h/", "not a url"] {
        let err = send(
            "GET",
            bad,
            &[],
            Vec::new(),
            std::time::Duration::from_secs(1),
        )
        .await;
        assert!(matches!(err, Err(ClientError::Url(_))), "{bad}: {err:?}");
    }
}
