//! The journal: state survives a restart, including after SIGKILL in the middle of load.

mod common;

use common::*;
use std::io::Write;
use std::process::Command;

fn serve_with_journal(scenario: &std::path::Path, journal: &std::path::Path, fsync: &str) -> Da {
    Da::start_args(&[
        scenario.to_str().unwrap(),
        "--journal",
        journal.to_str().unwrap(),
        "--fsync",
        fsync,
    ])
}

fn kill9(da: Da) {
    Command::new("kill")
        .args(["-KILL", &da.child.id().to_string()])
        .status()
        .unwrap();
    drop(da);
}

#[test]
fn a_restart_restores_the_ledger_keys_fate_sequence_clock_and_sessions() {
    let scenario = temp_file("s.toml", LOST_RESPONSE);
    let journal = scenario.with_file_name("journal.jsonl");
    let key = [("Idempotency-Key", "k-1")];
    let da = serve_with_journal(&scenario, &journal, "always");
    assert!(
        da.post_json("/payments/v1/transfers", &key, &transfer())
            .is_err(),
        "1st attempt: dropped"
    );
    da.advance("1h");
    da.post_json(
        "/payments/v1/transfers",
        &[("X-Doubleagent-Session", "s1")],
        &transfer(),
    )
    .err();
    kill9(da);

    let da = serve_with_journal(&scenario, &journal, "always");
    let ledger = da.ledger();
    assert_eq!(ledger.len(), 1);
    assert_eq!(ledger[0]["applied"], true);
    assert_eq!(
        da.get("/_admin/clock").json()["elapsed"],
        "1h",
        "the manual clock resumes"
    );
    // The key survived: same key → replay, nothing applied twice.
    let r = da
        .post_json("/payments/v1/transfers", &key, &transfer())
        .unwrap();
    assert_eq!(r.header("Idempotent-Replayed"), Some("true"));
    // The fate sequence continued: a new intent gets the 2nd fate (respond), not the 1st (drop).
    let other = serde_json::json!({"to": "acct-1", "amount": 1});
    assert_eq!(
        da.post_json("/payments/v1/transfers", &[], &other)
            .unwrap()
            .status,
        201
    );
    assert_eq!(
        da.get("/_admin/ledger?session=s1").json()["entries"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        da.ledger()
            .iter()
            .map(|e| e["seq"].as_u64().unwrap())
            .collect::<Vec<_>>(),
        vec![1, 2, 3]
    );
}

#[test]
fn every_answered_request_survives_sigkill_under_load_and_a_torn_line_is_skipped() {
    let scenario = temp_file(
        "s.toml",
        &payments("idempotency = { preset = \"stripe\" }", ""),
    );
    let journal = scenario.with_file_name("journal.jsonl");
    let da = serve_with_journal(&scenario, &journal, "never");
    let url = da.url.clone();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let workers: Vec<_> = (0..4)
        .map(|w| {
            let (url, stop) = (url.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut answered = Vec::new();
                for i in 0..2000 {
                    if stop.load(std::sync::atomic::Ordering::Relaxed) {
                        break;
                    }
                    let key = format!("w{w}-{i}");
                    let body = format!("{{\"to\":\"{key}\",\"amount\":1}}");
                    match request(
                        &url,
                        "POST",
                        "/payments/v1/transfers",
                        &[
                            ("Idempotency-Key", &key),
                            ("content-type", "application/json"),
                        ],
                        body.as_bytes(),
                    ) {
                        Ok(r) if r.status == 201 => {
                            answered.push((key, r.json()["id"].as_str().unwrap().to_string()))
                        }
                        _ => break,
                    }
                }
                answered
            })
        })
        .collect();
    // Kill once some load has been answered, while the workers are still sending: 200 answers
    // at least, since each of the 4 workers may have one request recorded but not yet answered.
    da.wait_for("service=payments", 204);
    kill9(da);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let answered: Vec<(String, String)> = workers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    assert!(answered.len() >= 200);
    // Simulate the kill tearing the last line mid-write.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&journal)
        .unwrap()
        .write_all(b"{\"t\":\"record\",\"sess")
        .unwrap();

    let da = serve_with_journal(&scenario, &journal, "never");
    let ledger = da.ledger();
    let ids: std::collections::HashSet<String> = ledger
        .iter()
        .filter_map(|e| e["action_id"].as_str().map(str::to_string))
        .collect();
    for (key, id) in &answered {
        assert!(
            ids.contains(id),
            "{id} ({key}) was answered before the kill but is missing after the restart"
        );
    }
    // Idempotency replays still work across the restart.
    let (key, id) = &answered[0];
    let body = format!("{{\"to\":\"{key}\",\"amount\":1}}");
    let r = da
        .req(
            "POST",
            "/payments/v1/transfers",
            &[
                ("Idempotency-Key", key),
                ("content-type", "application/json"),
            ],
            &body,
        )
        .unwrap();
    assert_eq!(r.header("Idempotent-Replayed"), Some("true"));
    assert_eq!(r.json()["id"], id.as_str());
    // The torn line was reported.
    let mut child = da;
    child.child.kill().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(err.contains("torn last line"), "{err}");
}

#[test]
fn a_reset_and_a_replaced_scenario_are_journaled_too() {
    let scenario = temp_file("s.toml", LOST_RESPONSE);
    let journal = scenario.with_file_name("journal.jsonl");
    let da = serve_with_journal(&scenario, &journal, "batch");
    da.post_json("/payments/v1/transfers", &[], &transfer())
        .err();
    assert_eq!(da.call("POST", "/_admin/reset", &[], "").status, 200);
    let other = payments("", "").replace("name = \"t\"", "name = \"replaced\"");
    assert_eq!(da.call("POST", "/_admin/scenario", &[], &other).status, 200);
    da.post_json("/payments/v1/transfers", &[], &transfer())
        .unwrap();
    let status = da.terminate();
    assert_eq!(
        status.code(),
        Some(0),
        "SIGTERM flushes the journal and exits 0"
    );

    let da = serve_with_journal(&scenario, &journal, "batch");
    assert_eq!(da.get("/_admin/health").json()["scenario"], "replaced");
    let ledger = da.ledger();
    assert_eq!(
        ledger.len(),
        1,
        "only the replaced world's entry: {ledger:?}"
    );
    assert_eq!(ledger[0]["fate"], "respond");
}

#[test]
fn a_journaled_action_keeps_its_request_parts_across_a_restart() {
    // The ledger hands the journal a whole record: its intent and body, which the ledger itself
    // keeps as text, are parsed for it; nothing of the request may go missing on the way.
    let scenario = temp_file("s.toml", LOST_RESPONSE);
    let journal = scenario.with_file_name("journal.jsonl");
    let da = serve_with_journal(&scenario, &journal, "always");
    da.post_json(
        "/payments/v1/transfers",
        &[("Idempotency-Key", "k-parts")],
        &transfer(),
    )
    .err();
    let before = da.ledger();
    assert_eq!(before.len(), 1);
    let e = &before[0];
    assert_eq!(e["service"], "payments", "{e}");
    assert_eq!(e["method"], "POST", "{e}");
    assert_eq!(e["path"], "/v1/transfers", "{e}");
    assert_eq!(e["idempotency_key"], "k-parts", "{e}");
    assert!(e["route"].is_string(), "{e}");
    assert!(e["fingerprint"].is_string(), "{e}");
    assert_eq!(e["body"], transfer(), "{e}");
    assert!(e["intent"].is_object(), "{e}");
    kill9(da);

    let da = serve_with_journal(&scenario, &journal, "always");
    let after = da.ledger();
    assert_eq!(after.len(), 1);
    for field in [
        "seq",
        "service",
        "route",
        "method",
        "path",
        "idempotency_key",
        "fingerprint",
        "intent",
        "body",
        "disposition",
        "applied",
        "fate",
    ] {
        assert_eq!(after[0][field], before[0][field], "{field}");
    }
}
