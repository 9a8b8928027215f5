//! A command line that scripts can trust (issue 27, item 7): a closed stdout ends a command
//! quietly with its own exit code, `run --json` prints the verdict alone on stdout, `check`
//! reports every problem of every file, and a missing file has no position.
//!
//! A closed stdout is made deterministic by closing the reading end *before* the command has
//! anything to write: each command here waits on its stdin (a scenario or ledger read from
//! `/dev/stdin`, or a CMD that reads a line) that the test feeds only after closing stdout.

mod common;

use common::*;
use serde_json::Value;
use std::io::{Read, Write};
use std::process::{Command, Output, Stdio};

const SCENARIO: &str = "name = \"tiny\"\n[services.payments]\n";

/// Start `doubleagent ARGS` with stdout piped, close that pipe, then give it `input` on stdin.
fn with_closed_stdout(args: &[&str], input: &str) -> Output {
    let mut child = Command::new(bin())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().unwrap();
    // The command may already have ended (and closed its stdin): that is for the asserts.
    let _ = stdin.write_all(input.as_bytes());
    drop(stdin);
    child.wait_with_output().unwrap()
}

#[track_caller]
fn assert_quiet(out: &Output, code: i32) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert_eq!(out.status.code(), Some(code), "{err}");
}

#[test]
fn check_with_a_closed_stdout_still_checks_every_file_and_exits_with_its_code() {
    let bad = temp_file("bad.toml", "[services._admin]\n");
    let out = with_closed_stdout(&["check", "/dev/stdin", bad.to_str().unwrap()], SCENARIO);
    assert_quiet(&out, 2);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is reserved"),
        "the file after the closed stdout is still checked"
    );
    let good = with_closed_stdout(&["check", "/dev/stdin"], SCENARIO);
    assert_quiet(&good, 0);
}

#[test]
fn verify_with_a_closed_stdout_exits_with_its_verdict_not_a_panic() {
    let fixture = format!(
        "{}/tests/fixtures/verify/acc1_same_intent_applied_twice.jsonl",
        env!("CARGO_MANIFEST_DIR")
    );
    let ledger = std::fs::read_to_string(fixture).unwrap();
    for json in [false, true] {
        let mut args = vec!["verify", "--ledger", "/dev/stdin"];
        if json {
            args.push("--json");
        }
        assert_quiet(&with_closed_stdout(&args, &ledger), 1);
    }
}

#[test]
fn acc1_a_ledger_from_a_pipe_is_read_not_taken_for_an_empty_one() {
    let fixture = format!(
        "{}/tests/fixtures/verify/acc1_same_intent_applied_twice.jsonl",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut child = Command::new(bin())
        .args(["verify", "--ledger", "/dev/stdin", "--json"])
        .stdin(std::fs::File::open(fixture).unwrap())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut text = String::new();
    child
        .stdout
        .take()
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(1));
    let report: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(report["findings"][0]["rule"], "ACC-1", "{report}");
}

#[test]
fn run_with_a_closed_stdout_exits_with_its_verdict_not_a_panic() {
    let scenario = temp_file("tiny.toml", SCENARIO);
    let out = with_closed_stdout(
        &[
            "run",
            scenario.to_str().unwrap(),
            "--",
            "sh",
            "-c",
            "read line",
        ],
        "go\n",
    );
    assert_quiet(&out, 0);
}

#[test]
fn run_json_prints_the_verdict_alone_and_the_commands_stdout_on_stderr() {
    let scenario = temp_file("tiny.toml", SCENARIO);
    let out = Command::new(bin())
        .args(["run", scenario.to_str().unwrap(), "--json", "--"])
        .args(["sh", "-c", "echo from-the-command"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    assert_eq!(report["clean"], true);
    assert!(stderr.contains("from-the-command"), "{stderr}");
    // Without --json the command's stdout stays on stdout.
    let plain = Command::new(bin())
        .args(["run", scenario.to_str().unwrap(), "--"])
        .args(["sh", "-c", "echo from-the-command"])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&plain.stdout).contains("from-the-command"));
}

#[test]
fn check_reports_every_shape_problem_of_a_file_top_to_bottom() {
    let src = "clock = \"manul\"\n\
               [services.payments]\n\
               idempotency = { retention = \"24 hours\" }\n\
               [[services.payments.routes]]\n\
               name = \"a\"\nmethod = \"POST\"\npath = \"/a\"\nkind = \"action\"\nfatez = []\n\
               [[services.payments.routes]]\n\
               name = 5\nmethod = \"POST\"\npath = \"/b\"\nkind = \"action\"\n\
               [[services.payments.routes]]\n\
               name = \"c\"\nmethod = \"POST\"\npath = \"/c\"\nkind = \"sideways\"\n";
    let path = temp_file("bad.toml", src);
    let out = Command::new(bin())
        .args(["check", "bad.toml"])
        .current_dir(path.parent().unwrap())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines.len(), 5, "{err}");
    assert!(
        lines[0].starts_with("bad.toml:1:9: clock: unknown variant `manul`"),
        "{err}"
    );
    assert!(
        lines[1].starts_with(
            "bad.toml:3:17: services.payments.idempotency.retention: expected a duration"
        ),
        "{err}"
    );
    assert!(
        lines[2]
            .starts_with("bad.toml:9:1: services.payments.routes[0].fatez: unknown key `fatez`"),
        "{err}"
    );
    assert!(
        lines[3].starts_with("bad.toml:11:1: services.payments.routes[1].name: invalid type"),
        "{err}"
    );
    assert!(
        lines[4].starts_with(
            "bad.toml:19:1: services.payments.routes[2].kind: unknown variant `sideways`"
        ),
        "{err}"
    );
}

#[test]
fn check_reports_problems_of_every_file_and_a_missing_file_without_a_position() {
    let bad = temp_file("bad.toml", "[services._admin]\n");
    let out = Command::new(bin())
        .args(["check", "/nonexistent/scenario.toml"])
        .arg(&bad)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("/nonexistent/scenario.toml: cannot read the scenario: "),
        "{err}"
    );
    assert!(!err.contains(":0:0"), "{err}");
    assert!(err.contains("is reserved"), "{err}");
}

#[test]
fn report_to_a_closed_stdout_ends_quietly_and_to_an_open_one_writes_the_page() {
    let fixture = format!(
        "{}/tests/fixtures/verify/acc1_same_intent_applied_twice.jsonl",
        env!("CARGO_MANIFEST_DIR")
    );
    let ledger = std::fs::read_to_string(&fixture).unwrap();
    let out = with_closed_stdout(&["report", "--ledger", "/dev/stdin", "-o", "-"], &ledger);
    assert_quiet(&out, 0);
    let out = Command::new(bin())
        .args(["report", "--ledger", &fixture, "-o", "-"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("<html"));
}

#[test]
fn run_refuses_two_names_that_would_share_an_environment_variable() {
    let scenario = temp_file(
        "clash.toml",
        "name = \"clash\"\n[agents.a-b]\nprotocol = \"a2a\"\n[agents.a_b]\nprotocol = \"a2a\"\n",
    );
    let out = Command::new(bin())
        .args(["run", scenario.to_str().unwrap(), "--", "true"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("DOUBLEAGENT_A_B_URL"), "{stderr}");
}
