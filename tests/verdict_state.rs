//! A verifier that says what it could not judge (issue 27, item 6; ACC-3 applied to the verdict
//! itself): `state` is clean, findings or incomplete, the notes name every check skipped and why,
//! and `verify`/`run` exit 0 clean, 1 findings, 3 incomplete (0 with `--allow-incomplete`).

mod common;

use common::*;
use serde_json::Value;
use std::process::Command;

const T: &str = r#""service": "payments", "route": "create-transfer", "method": "POST", "path": "/v1/transfers""#;

fn executed(seq: u64, extra: &str) -> String {
    format!(
        r#"{{"seq": {seq}, {T}, "received_at": "2026-11-30T10:00:0{seq}.000Z", "intent": {{"/to": "acct-{seq}", "/amount": 100}}, "body": {{"to": "acct-{seq}", "amount": 100}}, "disposition": "executed", "fate": "respond", "action_id": "act_{seq}", "applied": true, "response": {{"delivery": "sent", "status": 201}}{extra}}}"#
    )
}

/// `verify --ledger` over `lines` with `args`: exit code and the JSON report.
fn verify(lines: &[String], args: &[&str]) -> (i32, Value) {
    let ledger = temp_file("ledger.jsonl", &(lines.join("\n") + "\n"));
    let out = Command::new(bin())
        .args(["verify", "--json", "--ledger", ledger.to_str().unwrap()])
        .args(args)
        .output()
        .unwrap();
    let report = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code().unwrap(), report)
}

fn notes(report: &Value) -> String {
    report["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn acc3_a_clean_ledger_is_clean_with_exit_0() {
    let (code, r) = verify(&[executed(1, "")], &[]);
    assert_eq!((code, r["state"].as_str()), (0, Some("clean")), "{r}");
    assert_eq!(r["clean"], true);
}

#[test]
fn acc3_an_outcome_never_learned_without_claims_is_incomplete_with_exit_3() {
    let dropped = executed(1, "").replace(
        r#""delivery": "sent", "status": 201"#,
        r#""delivery": "dropped""#,
    );
    let (code, r) = verify(std::slice::from_ref(&dropped), &[]);
    assert_eq!((code, r["state"].as_str()), (3, Some("incomplete")), "{r}");
    assert!(notes(&r).contains("1 attempt (#1)"), "{r}");
    // Existing fields keep their meaning: no findings.
    assert_eq!(r["clean"], true);
    assert_eq!(
        verify(std::slice::from_ref(&dropped), &["--allow-incomplete"]).0,
        0
    );
    // With claims that report it as unknown, it is judged: clean.
    let claims = temp_file(
        "claims.json",
        r#"{"actions": [{"key": "k-1", "claim": "unknown"}]}"#,
    );
    let keyed = dropped.replace(r#""intent""#, r#""idempotency_key": "k-1", "intent""#);
    let (code, r) = verify(&[keyed], &["--claims", claims.to_str().unwrap()]);
    assert_eq!((code, r["state"].as_str()), (0, Some("clean")), "{r}");
}

#[test]
fn rec2_a_revision_that_cannot_be_ordered_is_named_in_the_notes_not_skipped() {
    let decl = r#"{"seq": 1, "service": "_admin", "method": "POST", "path": "/revision", "received_at": "2026-11-30T10:00:01.000Z", "disposition": "declaration", "event": "revision", "detail": {"revision": 2}, "revision": 2}"#;
    let lines = [decl.to_string(), executed(2, r#", "revision": "rev-b""#)];
    let (code, r) = verify(&lines, &[]);
    assert_eq!((code, r["state"].as_str()), (3, Some("incomplete")), "{r}");
    let n = notes(&r);
    assert!(
        n.contains("1 entry (#2)") && n.contains("cannot be ordered"),
        "{n}"
    );
    // The same action under "1" is ordered and judged: REC-2.
    let lines = [decl.to_string(), executed(2, r#", "revision": "1""#)];
    let (code, r) = verify(&lines, &[]);
    assert_eq!((code, r["state"].as_str()), (1, Some("findings")), "{r}");
    assert_eq!(r["findings"][0]["rule"], "REC-2");
}

#[test]
fn acc1_actions_whose_body_is_not_json_are_named_in_the_notes() {
    let form = executed(1, "").replace(
        r#""body": {"to": "acct-1", "amount": 100}"#,
        r#""body": "to=acct-1&amount=100""#,
    );
    let (code, r) = verify(&[form], &[]);
    assert_eq!((code, r["state"].as_str()), (3, Some("incomplete")), "{r}");
    assert!(notes(&r).contains("1 action (#1) are not JSON"), "{r}");
}

#[test]
fn acc3_an_evicted_ledger_is_incomplete_and_findings_stay_findings() {
    let (code, r) = verify(&[executed(3, "")], &[]);
    assert_eq!((code, r["state"].as_str()), (3, Some("incomplete")), "{r}");
    // Findings stand whatever could not be judged: state findings, exit 1.
    let twice = executed(4, "").replace("acct-4", "acct-3");
    let (code, r) = verify(&[executed(3, ""), twice], &[]);
    assert_eq!((code, r["state"].as_str()), (1, Some("findings")), "{r}");
    assert!(notes(&r).contains("incomplete"), "{r}");
}

#[test]
fn acc3_run_exits_3_on_an_incomplete_verdict_and_0_when_allowed() {
    let scenario = temp_file("s.toml", &payments("", ""));
    // A client (bash's /dev/tcp) sending one transfer under a revision that cannot be ordered.
    let client = r#"hp=${DOUBLEAGENT_URL#http://}; exec 3<>/dev/tcp/${hp%:*}/${hp##*:};
        body='{"to":"acct-9","amount":100}';
        printf 'POST /payments/v1/transfers HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Revision: rev-b\r\ncontent-type: application/json\r\ncontent-length: %s\r\n\r\n%s' ${#body} "$body" >&3;
        cat <&3 >/dev/null"#;
    let run = |extra: &[&str]| {
        Command::new(bin())
            .args(["run", scenario.to_str().unwrap()])
            .args(extra)
            .args(["--", "bash", "-c", client])
            .output()
            .unwrap()
    };
    let out = run(&[]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.starts_with("doubleagent verify: incomplete: no findings over 1 ledger entries"),
        "{text}"
    );
    assert!(text.contains("cannot be ordered"), "{text}");
    assert_eq!(run(&["--allow-incomplete"]).status.code(), Some(0));
}

#[test]
fn acc2_rec3_tasks_of_a_superseded_revision_and_cancels_without_claims_are_incomplete() {
    let lines = [
        r#"{"seq": 1, "service": "researcher", "received_at": "2026-11-30T10:00:01.000Z", "disposition": "agent", "actor": "agent:researcher", "event": "task-created", "detail": {"task_id": "t-1", "revision": 1}, "work_id": "t-1", "revision": 1}"#,
        r#"{"seq": 2, "service": "_admin", "method": "POST", "path": "/revision", "received_at": "2026-11-30T10:00:02.000Z", "disposition": "declaration", "event": "revision", "detail": {"revision": 2}, "revision": 2}"#,
        r#"{"seq": 3, "service": "researcher", "received_at": "2026-11-30T10:00:03.000Z", "disposition": "agent", "actor": "agent:researcher", "event": "cancel", "detail": {"task_id": "t-1", "outcome": "acknowledged"}, "work_id": "t-1", "revision": 1}"#,
    ]
    .map(str::to_string);
    let (code, r) = verify(&lines, &[]);
    assert_eq!((code, r["state"].as_str()), (3, Some("incomplete")), "{r}");
    let n = notes(&r);
    assert!(
        n.contains("1 task (#1) started under a superseded revision"),
        "{n}"
    );
    assert!(n.contains("1 cancel (#3) (REC-3)"), "{n}");
    // With claims (even empty ones) both are judged: nothing was adopted or claimed cancelled.
    let claims = temp_file("claims.json", r#"{"adopted": []}"#);
    let (code, r) = verify(&lines, &["--claims", claims.to_str().unwrap()]);
    assert_eq!((code, r["state"].as_str()), (0, Some("clean")), "{r}");
}

#[test]
fn acc1_actions_whose_intent_could_not_be_read_are_not_one_repeated_action() {
    // Different text bodies to a route with intent pointers: nothing of the intent was read, so
    // the ledger recorded every value null. Not the same action 15 times: not judged, said so.
    let unread = |seq: u64| {
        executed(seq, "")
            .replace(
                &format!(r#""intent": {{"/to": "acct-{seq}", "/amount": 100}}"#),
                r#""intent": {"/amount": null, "/to": null}"#,
            )
            .replace(
                &format!(r#""body": {{"to": "acct-{seq}", "amount": 100}}"#),
                &format!(r#""body": "not json {seq}""#),
            )
    };
    let lines: Vec<String> = (1..=9).map(unread).collect();
    assert!(lines[0].contains(r#""/to": null"#), "{}", lines[0]);
    let (code, r) = verify(&lines, &[]);
    assert_eq!((code, r["state"].as_str()), (3, Some("incomplete")), "{r}");
    assert_eq!(r["findings"], serde_json::json!([]), "{r}");
    let notes = notes(&r);
    assert!(
        notes.contains(
            "the intents of 9 actions (#1, #2, #3, #4, #5, #6, #7, #8, #9) could not be read"
        ),
        "{notes}"
    );
    assert!(
        notes.contains("ACC-1 and REC-4 could not judge them"),
        "{notes}"
    );
    // One value read is an intent: the same one twice is still ACC-1.
    let half = |seq: u64| {
        executed(seq, "").replace(
            &format!(r#""intent": {{"/to": "acct-{seq}", "/amount": 100}}"#),
            r#""intent": {"/amount": 100, "/to": null}"#,
        )
    };
    let (code, r) = verify(&[half(1), half(2)], &[]);
    assert_eq!(
        (code, r["findings"][0]["rule"].as_str()),
        (1, Some("ACC-1")),
        "{r}"
    );
}
