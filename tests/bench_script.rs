//! `bench/run.sh`'s command line: bad arguments are refused before anything is built (the
//! script's own runs are CI's smoke step, not these tests).

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
