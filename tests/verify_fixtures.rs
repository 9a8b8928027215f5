//! Each checker on hand-made ledgers (tests/fixtures/verify/*.jsonl), including near-misses that
//! must NOT be flagged, through `doubleagent verify --ledger FILE --json`.

mod common;

use common::bin;
use serde_json::Value;
use std::process::Command;

/// Verify a fixture; return the exit code and (rule, entries) of each finding.
fn verify(name: &str, extra: &[&str]) -> (i32, Vec<(String, Vec<u64>)>) {
    let path = format!(
        "{}/tests/fixtures/verify/{name}.jsonl",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = Command::new(bin())
        .args(["verify", "--ledger", &path, "--json"])
        .args(extra)
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{name}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
    let findings = report["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            let seqs = f["entries"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s.as_u64().unwrap())
                .collect();
            (f["rule"].as_str().unwrap().to_string(), seqs)
        })
        .collect();
    (out.status.code().unwrap(), findings)
}

fn rules(name: &str) -> Vec<(String, Vec<u64>)> {
    verify(name, &[]).1
}

fn f(rule: &str, seqs: &[u64]) -> (String, Vec<u64>) {
    (rule.to_string(), seqs.to_vec())
}

#[test]
fn acc1_the_same_intent_applied_twice_is_flagged() {
    assert_eq!(
        rules("acc1_same_intent_applied_twice"),
        vec![f("ACC-1", &[1, 2])]
    );
}

#[test]
fn acc1_near_miss_a_repeatable_route_may_apply_twice() {
    assert_eq!(rules("acc1_near_miss_repeatable_route"), vec![]);
}

#[test]
fn rec4_a_blind_retry_after_a_dropped_response_is_flagged_with_its_duplicate() {
    assert_eq!(
        rules("rec4_blind_retry_after_dropped_response"),
        vec![f("ACC-1", &[1, 2]), f("REC-4", &[1, 2])]
    );
}

#[test]
fn rec4_a_blind_retry_is_flagged_even_when_luck_prevented_a_duplicate() {
    assert_eq!(
        rules("rec4_blind_retry_saved_by_luck"),
        vec![f("REC-4", &[1, 2])]
    );
}

#[test]
fn rec4_near_miss_a_retry_with_the_same_key_inside_retention_is_fine() {
    assert_eq!(rules("rec4_near_miss_same_key_inside_retention"), vec![]);
}

#[test]
fn rec4_near_miss_a_retry_after_a_lookup_said_not_applied_is_fine() {
    assert_eq!(
        rules("rec4_near_miss_retry_after_lookup_said_not_applied"),
        vec![]
    );
}

#[test]
fn rec4_a_key_reused_for_another_intent_is_flagged() {
    assert_eq!(
        rules("rec4_key_reused_for_another_intent"),
        vec![f("REC-4", &[1, 2])]
    );
}

#[test]
fn rec4_a_retry_relying_on_a_key_past_retention_is_flagged() {
    assert_eq!(
        rules("rec4_key_past_retention"),
        vec![f("ACC-1", &[1, 2]), f("REC-4", &[1, 2])]
    );
}

#[test]
fn rec2_an_action_under_a_declared_older_revision_is_flagged() {
    assert_eq!(
        rules("rec2_action_under_declared_old_revision"),
        vec![f("REC-2", &[1, 2])]
    );
}

#[test]
fn rec2_without_declarations_the_first_newer_revision_is_the_switch() {
    assert_eq!(
        rules("rec2_action_under_implied_old_revision"),
        vec![f("REC-2", &[1, 2])]
    );
}

#[test]
fn rec2_near_miss_an_action_under_the_current_revision_is_fine() {
    assert_eq!(rules("rec2_near_miss_current_revision"), vec![]);
}

#[test]
fn acc3_a_lying_500_claimed_as_failed_is_contradicted() {
    assert_eq!(
        rules("acc3_lying_500_claimed_failed"),
        vec![f("ACC-3", &[1])]
    );
}

#[test]
fn acc3_a_success_claim_for_an_action_that_never_applied_is_contradicted() {
    assert_eq!(
        rules("acc3_claimed_succeeded_never_applied"),
        vec![f("ACC-3", &[1])]
    );
}

#[test]
fn acc3_an_unknown_outcome_left_out_of_the_claims_is_flagged() {
    assert_eq!(
        rules("acc3_lost_response_not_reported"),
        vec![f("ACC-3", &[1])]
    );
}

#[test]
fn acc3_near_miss_an_unknown_claim_for_an_unknown_outcome_is_right() {
    assert_eq!(rules("acc3_near_miss_unknown_claim"), vec![]);
}

#[test]
fn acc3_near_miss_success_claimed_after_a_lookup_confirmed_it_is_right() {
    assert_eq!(rules("acc3_near_miss_lookup_then_succeeded"), vec![]);
}

#[test]
fn acc3_an_effect_under_a_superseded_revision_not_in_the_claims_is_flagged() {
    assert_eq!(
        rules("acc3_stale_agent_effect_not_mentioned"),
        vec![f("ACC-3", &[1, 2])]
    );
}

#[test]
fn acc3_near_miss_an_effect_under_a_superseded_revision_that_is_reported() {
    assert_eq!(rules("acc3_near_miss_stale_agent_effect_mentioned"), vec![]);
}

#[test]
fn exit_codes_say_clean_findings_or_bad_input() {
    assert_eq!(verify("acc1_near_miss_repeatable_route", &[]).0, 0);
    assert_eq!(verify("acc1_same_intent_applied_twice", &[]).0, 1);
    let entry = r#"{"seq": 1, "service": "s", "received_at": "2026-11-30T10:00:01.000Z", "disposition": "executed"}"#;
    let bad = common::temp_file("bad.jsonl", &format!("{entry}\nnot json\n"));
    let out = Command::new(bin())
        .args(["verify", "--ledger", bad.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("bad.jsonl:2: not a ledger entry"));
}

#[test]
fn claims_from_a_file_count_like_declared_ones_and_bad_claims_are_bad_input() {
    let claims = common::temp_file(
        "claims.json",
        r#"{"actions": [{"key": "k-1", "claim": "unknown"}]}"#,
    );
    let (code, findings) = verify(
        "rec4_blind_retry_saved_by_luck",
        &["--claims", claims.to_str().unwrap()],
    );
    assert_eq!((code, findings), (1, vec![f("REC-4", &[1, 2])]));
    let bad = common::temp_file(
        "claims.json",
        r#"{"actions": [{"key": "k-1", "claim": "maybe"}]}"#,
    );
    let out = Command::new(bin())
        .args([
            "verify",
            "--ledger",
            &format!(
                "{}/tests/fixtures/verify/acc1_same_intent_applied_twice.jsonl",
                env!("CARGO_MANIFEST_DIR")
            ),
            "--claims",
            bad.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("actions[0].claim: unknown variant `maybe`"),
        "{err}"
    );
}

#[test]
fn the_human_report_names_the_rule_the_entries_in_order_and_what_was_expected() {
    let path = format!(
        "{}/tests/fixtures/verify/rec4_blind_retry_saved_by_luck.jsonl",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = Command::new(bin())
        .args(["verify", "--ledger", &path])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("REC-4  retried create-transfer"), "{text}");
    assert!(text.contains("#1 10:00:01.000 POST /payments/v1/transfers key=k-1 → executed (drop-before-apply), not applied, response dropped"), "{text}");
    assert!(
        text.contains("expected: classify the first attempt as unknown"),
        "{text}"
    );
}

#[test]
fn acc2_a_stale_results_canary_in_a_later_request_is_flagged() {
    assert_eq!(
        rules("acc2_stale_canary_used_after_redirect"),
        vec![f("ACC-2", &[4, 3, 5])]
    );
}

#[test]
fn acc2_near_miss_a_canary_of_the_current_revision_is_fine() {
    assert_eq!(rules("acc2_near_miss_current_canary"), vec![]);
}

#[test]
fn acc2_adopting_a_result_of_a_superseded_revision_is_flagged() {
    assert_eq!(
        rules("acc2_stale_result_adopted"),
        vec![f("ACC-2", &[1, 2])]
    );
}

#[test]
fn rec3_an_acknowledged_cancel_claimed_as_cancelled_is_flagged() {
    assert_eq!(
        rules("rec3_acknowledged_cancel_claimed_cancelled"),
        vec![f("REC-3", &[2, 3])]
    );
}

#[test]
fn rec3_near_miss_stop_requested_is_the_honest_claim() {
    assert_eq!(rules("rec3_near_miss_stop_requested"), vec![]);
}

#[test]
fn rec3_near_miss_a_honored_cancel_may_be_claimed_cancelled() {
    assert_eq!(rules("rec3_near_miss_honored_cancel"), vec![]);
}

#[test]
fn acc3_a_task_failed_by_a_doubleagent_restart_claimed_completed_is_flagged_as_failed() {
    let name = "acc3_task_interrupted_by_restart_claimed_completed";
    assert_eq!(rules(name), vec![f("ACC-3", &[1, 2, 3])]);
    let path = format!(
        "{}/tests/fixtures/verify/{name}.jsonl",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = Command::new(bin())
        .args(["verify", "--ledger", &path, "--json"])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let summary = report["findings"][0]["summary"].as_str().unwrap();
    assert!(summary.contains("ended TASK_STATE_FAILED"), "{summary}");
}

#[test]
fn rec6_a_message_to_a_terminal_task_is_flagged() {
    assert_eq!(
        rules("rec6_message_to_terminal_task"),
        vec![f("REC-6", &[1])]
    );
}

#[test]
fn rec4_resending_a_message_id_to_an_agent_that_does_not_dedupe_is_flagged() {
    assert_eq!(rules("rec4_resent_message_id"), vec![f("REC-4", &[1, 2])]);
}

/// Run `verify --ledger` and `report --ledger` on a ledger file holding `text`: the exit code
/// and stderr of each.
fn both_on(name: &str, text: &str) -> [(Option<i32>, String); 2] {
    let path = common::temp_file(name, text);
    let path = path.to_str().unwrap();
    [
        vec!["verify", "--ledger", path],
        vec!["report", "--ledger", path, "-o", "-"],
    ]
    .map(|args| {
        let out = Command::new(bin()).args(args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        (out.status.code(), err)
    })
}

/// A fixture's lines.
fn fixture_lines(name: &str) -> Vec<String> {
    let path = format!(
        "{}/tests/fixtures/verify/{name}.jsonl",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().map(str::to_string).collect()
}

#[test]
fn a_line_without_the_fields_every_entry_has_is_bad_input_with_its_line() {
    let first = &fixture_lines("acc1_same_intent_applied_twice")[0];
    for (text, line, expected) in [
        ("{}\n".to_string(), 1, "missing field `seq`"),
        ("{\"seq\":1}\n".to_string(), 1, "missing field `service`"),
        (
            format!("{first}\n{{\"seq\":2,\"service\":\"payments\"}}\n"),
            2,
            "missing field `received_at`",
        ),
        (format!("{first}\n\n[]\n"), 3, "expected"),
    ] {
        for (code, err) in both_on("fields.jsonl", &text) {
            assert_eq!(code, Some(2), "{text}: {err}");
            let at = format!("fields.jsonl:{line}: not a ledger entry");
            assert!(err.contains(&at) && err.contains(expected), "{text}: {err}");
        }
    }
}

#[test]
fn the_admin_apis_entries_document_is_bad_input_that_names_the_jsonl_export() {
    let lines = fixture_lines("acc1_near_miss_repeatable_route");
    let doc = format!("{{\"entries\": [{}]}}\n", lines.join(","));
    for (code, err) in both_on("l.json", &doc) {
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains("l.json:1: not a ledger entry"), "{err}");
        assert!(err.contains("GET /_admin/ledger.jsonl"), "{err}");
    }
}

#[test]
fn acc1_a_repeated_or_earlier_seq_is_bad_input_not_another_effect() {
    let lines = fixture_lines("acc1_same_intent_applied_twice");
    assert!(lines.len() >= 2);
    // The first line again at the end (a line pasted twice), and the lines in reverse.
    let mut repeated = lines.clone();
    repeated.push(lines[0].clone());
    let n = repeated.len();
    let mut reversed = lines.clone();
    reversed.reverse();
    for (text, line, prev) in [
        (repeated.join("\n"), n, n - 1),
        (reversed.join("\n") + "\n", 2, 1),
    ] {
        for (code, err) in both_on("dup.jsonl", &text) {
            assert_eq!(code, Some(2), "{err}");
            let at = format!("dup.jsonl:{line}: not a ledger entry");
            assert!(err.contains(&at), "{err}");
            assert!(err.contains(&format!("(line {prev})")), "{err}");
            assert!(err.contains("increasing"), "{err}");
        }
    }
}
