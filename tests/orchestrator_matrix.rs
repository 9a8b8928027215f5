//! Proof that the verifier catches bugs: the example orchestrator (examples/orchestrator.rs), run
//! correct and with each deliberate bug against the shipped scenarios. The correct one must leave
//! no findings anywhere; every bug must be caught by at least one scenario with its rule ID.

mod common;

use common::bin;
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

/// `cargo test` builds the examples next to the test binaries.
fn orchestrator() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().unwrap().parent().unwrap();
    dir.join("examples")
        .join(format!("orchestrator{}", std::env::consts::EXE_SUFFIX))
}

fn scenario(name: &str) -> String {
    format!("{}/scenarios/{name}.toml", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_correct_orchestrator_is_clean_everywhere_and_every_bug_is_caught_with_its_rule() {
    let out = Command::new(orchestrator())
        .args(["--matrix", "--json"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let caught = |variant: &str| -> Vec<String> {
        let row = rows
            .iter()
            .find(|r| r["variant"] == variant)
            .unwrap_or_else(|| panic!("no row {variant}"));
        row["findings"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|rules| {
                rules
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| r.as_str().unwrap().to_string())
            })
            .collect()
    };
    assert_eq!(
        caught("correct"),
        Vec::<String>::new(),
        "the correct orchestrator must be clean: {rows:#?}"
    );
    // Each bug and the rule it breaks.
    for (bug, rule) in [
        ("blind-retry", "REC-4"),
        ("retry-after-expiry", "REC-4"),
        ("key-reuse", "REC-4"),
        ("cancel-believed", "REC-3"),
        ("old-revision", "REC-2"),
        ("lying-500-failed", "ACC-3"),
        ("lost-response-unreported", "ACC-3"),
        ("late-result-adopted", "ACC-2"),
        ("message-id-dedupe", "REC-4"),
        ("message-to-finished-task", "REC-6"),
    ] {
        assert!(
            caught(bug).iter().any(|r| r == rule),
            "bug {bug} not caught as {rule}: {rows:#?}"
        );
    }
}

fn run(scenario_name: &str, bug: Option<&str>) -> (i32, String) {
    let mut args = vec![
        "run".to_string(),
        scenario(scenario_name),
        "--".to_string(),
        orchestrator().display().to_string(),
    ];
    if let Some(b) = bug {
        args.extend(["--bug".to_string(), b.to_string()]);
    }
    let out = Command::new(bin()).args(&args).output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

#[test]
fn run_serves_the_scenario_runs_the_command_and_exits_with_the_verdict() {
    let (code, text) = run("lost-response", None);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("no findings"), "{text}");
    let (code, text) = run("lost-response", Some("blind-retry"));
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("REC-4  retried create-transfer"), "{text}");
    assert!(
        text.contains("ACC-1  the same action took effect 2 times"),
        "{text}"
    );
}

#[test]
fn run_exports_urls_to_the_command_and_passes_on_its_failure() {
    let out = Command::new(bin())
        .args(["run", &scenario("lost-response"), "--", "sh", "-c", "test -n \"$DOUBLEAGENT_URL\" && test \"$DOUBLEAGENT_PAYMENTS_URL\" = \"$DOUBLEAGENT_URL/payments\" && exit 3"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn verify_reads_a_running_server_over_http() {
    let da = common::Da::start_file("lost-response.toml");
    let out = Command::new(orchestrator())
        .args(["--url", &da.url, "--bug", "old-revision"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let verify = Command::new(bin())
        .args(["verify", "--url", &da.url, "--json"])
        .output()
        .unwrap();
    assert_eq!(verify.status.code(), Some(1));
    let report: Value = serde_json::from_slice(&verify.stdout).unwrap();
    assert_eq!(report["findings"][0]["rule"], "REC-2");
    // The same verdict from the server itself.
    let live = da.get("/_admin/verify").json();
    assert_eq!(live["findings"], report["findings"]);
}
