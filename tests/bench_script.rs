//! `bench/run.sh`'s command line: bad arguments are refused before anything is built; and
//! `bench/report.py`'s table for figures left out (the script's own runs are CI's smoke step,
//! not these tests).

use std::process::{Command, Output};

fn run_sh(args: &[&str]) -> Output {
    Command::new("bash")
        .arg("bench/run.sh")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("bash runs")
}

fn refused(args: &[&str], says: &str) {
    let out = run_sh(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(stderr.contains(says), "{args:?}: {stderr}");
    assert!(
        !stderr.contains("building"),
        "{args:?} started a build: {stderr}"
    );
}

#[test]
fn a_misspelt_figure_in_only_is_refused_with_the_figures_listed() {
    // `--smoke`, so that a script that stopped checking would not run the full figure here.
    refused(
        &["--smoke", "--only", "throughput,througput"],
        "unknown figure 'througput' in --only (figures: throughput, replays",
    );
}

#[test]
fn rounds_and_secs_must_be_whole_numbers_of_at_least_one() {
    // One quick figure, so that a script that stopped checking would not run them all here.
    refused(
        &["--only", "startup", "--rounds", "0"],
        "--rounds wants a whole number",
    );
    refused(
        &["--only", "startup", "--secs", "2s"],
        "--secs wants a whole number",
    );
}

#[test]
fn an_option_without_its_value_is_refused() {
    refused(&["--only"], "--only wants a value");
    refused(&["--nonsense"], "unknown argument --nonsense");
}

/// `bench/report.py` over one start-up measurement, with the agents in the state `agents`.
fn report(agents: &str) -> String {
    let dir = std::env::temp_dir().join(format!("da-bench-report-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let tsv = dir.join(format!("{agents}.tsv"));
    std::fs::write(&tsv, "startup\tda\tms\t3.5\nstartup\tbase\tms\t1.5\n").expect("write tsv");
    let out = Command::new("python3")
        .arg("bench/report.py")
        .arg(&tsv)
        .args(["full", "1", "test machine", agents])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("python3 runs");
    let _ = std::fs::remove_file(&tsv);
    let _ = std::fs::remove_dir(&dir);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn agents_left_out_by_only_get_no_row_but_unavailable_agents_are_reported_skipped() {
    // `--only startup` passes "off": the table has the start-up row and nothing about agents,
    // as for every other figure left out.
    let left_out = report("a2a=off,agui=off");
    assert!(left_out.contains("start-up: process start"), "{left_out}");
    assert!(!left_out.contains("agents:"), "{left_out}");
    // Asked for, but their probes failed: each agent line says so rather than vanishing.
    let unavailable = report("a2a=0,agui=0");
    assert_eq!(
        unavailable.matches("skipped: agents not available").count(),
        2,
        "{unavailable}"
    );
}
