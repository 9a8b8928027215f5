//! What `serve` writes to stderr by default: a line per request only in the JSON format (and
//! whenever RUST_LOG asks for it), so that the default pretty log costs nothing per request.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use common::{bin, payments, request, temp_file};

/// Serve, send one transfer, stop with SIGTERM; return stderr.
fn logs_of(format: &str, rust_log: Option<&str>) -> String {
    let path = temp_file("s.toml", &payments("", ""));
    let mut cmd = Command::new(bin());
    cmd.args(["serve", path.to_str().unwrap(), "--listen", "127.0.0.1:0"])
        .args(["--log-format", format])
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(l) = rust_log {
        cmd.env("RUST_LOG", l);
    }
    let mut child = cmd.spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = serde_json::from_str::<serde_json::Value>(&line).unwrap()["url"]
        .as_str()
        .unwrap()
        .to_string();
    let r = request(&url, "POST", "/payments/v1/transfers", &[], b"{}").unwrap();
    assert_eq!(r.status, 201);
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn the_default_pretty_log_has_no_line_per_request_but_its_own_lines() {
    let logs = logs_of("pretty", None);
    assert!(logs.contains("serving"), "{logs}");
    assert!(
        logs.contains("stopped"),
        "the last line is flushed before exit: {logs}"
    );
    assert!(!logs.contains("seq=1"), "{logs}");
    assert!(
        !logs.contains('\u{1b}'),
        "no colour codes when stderr is not a terminal: {logs}"
    );
}

#[test]
fn rust_log_brings_request_lines_back_in_the_pretty_log() {
    let logs = logs_of("pretty", Some("info"));
    let line = logs
        .lines()
        .find(|l| l.contains(" request ") || l.ends_with(" request"))
        .or_else(|| logs.lines().find(|l| l.contains("seq=1")))
        .unwrap_or_else(|| panic!("no request line: {logs}"));
    assert!(
        line.contains("seq=1") && line.contains("disposition=\"executed\""),
        "{line}"
    );
}

#[test]
fn the_json_log_has_one_object_per_request_by_default() {
    let logs = logs_of("json", None);
    let req = logs
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["fields"]["message"] == "request")
        .unwrap_or_else(|| panic!("no request object: {logs}"));
    assert_eq!(req["fields"]["seq"], 1);
    assert_eq!(req["level"], "INFO");
    let f = &req["fields"];
    assert_eq!(f["service"], "payments", "{req}");
    assert_eq!(f["route"], "create-transfer", "{req}");
    assert_eq!(f["method"], "POST", "{req}");
    assert_eq!(f["path"], "/v1/transfers", "{req}");
    assert_eq!(f["disposition"], "executed", "{req}");
}
