//! What a journal restores is what happened: a delayed response the server never sent (killed,
//! or cut by the drain) is not restored as sent (REC-4), and a journal that lost lines says so.

mod common;

use common::*;
use std::process::Command;
use std::time::Duration;

fn delayed(delay: &str) -> String {
    format!(
        r#"name = "kr"
seed = 1
[services.pay]
idempotency = {{ preset = "stripe", retention = "24h" }}
[[services.pay.routes]]
name = "create"
method = "POST"
path = "/v1/t"
kind = "action"
intent = ["/to", "/amount"]
fates = ["delay:{delay}", "respond"]
respond = {{ status = 201, json = {{ id = "{{{{action.id}}}}" }} }}
"#
    )
}

fn serve(scenario: &std::path::Path, journal: &std::path::Path, extra: &[&str]) -> Da {
    let mut args = vec![
        scenario.to_str().unwrap(),
        "--journal",
        journal.to_str().unwrap(),
        "--fsync",
        "always",
    ];
    args.extend_from_slice(extra);
    Da::start_args(&args)
}

fn transfer_with(da: &Da, key: &str) -> std::net::TcpStream {
    send(
        &da.url,
        "POST",
        "/pay/v1/t",
        &[
            ("Idempotency-Key", key),
            ("content-type", "application/json"),
        ],
        br#"{"to":"x","amount":5}"#,
    )
}

/// After a restart: the first entry was never answered, and a retry of its intent with a new
/// key is judged with its outcome unknown (REC-4), not as a duplicate of a delivered success.
fn restored_unanswered(da: &Da) {
    let entry = &da.ledger()[0];
    assert_eq!(entry["response"]["delivery"], "abandoned", "{entry}");
    assert!(entry["response"]["status"].is_null(), "{entry}");
    let r = da
        .post_json(
            "/pay/v1/t",
            &[("Idempotency-Key", "a2")],
            &serde_json::json!({"to":"x","amount":5}),
        )
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.text());
    let verdict = da.get("/_admin/verify.txt").text();
    assert!(verdict.contains("REC-4"), "{verdict}");
}

/// REC-4: a response delayed past a SIGKILL was never sent; restored, it says so.
#[test]
fn a_delayed_response_cut_by_sigkill_is_restored_abandoned_not_sent_rec_4() {
    let scenario = temp_file("s.toml", &delayed("3s"));
    let journal = scenario.with_file_name("j.jsonl");
    let da = serve(&scenario, &journal, &[]);
    let _client = transfer_with(&da, "a1");
    da.wait_for("service=pay", 1);
    Command::new("kill")
        .args(["-KILL", &da.child.id().to_string()])
        .status()
        .unwrap();
    drop(da);
    std::thread::sleep(Duration::from_secs(3));
    let da = serve(&scenario, &journal, &[]);
    restored_unanswered(&da);
}

/// REC-4: a delayed response cut by the SIGTERM drain timeout was never sent either.
#[test]
fn a_delayed_response_cut_by_the_drain_timeout_is_recorded_abandoned_rec_4() {
    let scenario = temp_file("s.toml", &delayed("8s"));
    let journal = scenario.with_file_name("j.jsonl");
    let da = serve(&scenario, &journal, &["--drain-timeout", "1s"]);
    let _client = transfer_with(&da, "a1");
    da.wait_for("service=pay", 1);
    assert!(da.terminate().success());
    let da = serve(&scenario, &journal, &[]);
    assert!(da.ledger()[0]["response"]["at"].is_string());
    restored_unanswered(&da);
}

/// A delayed response that was sent stays sent across a restart.
#[test]
fn a_delayed_response_that_was_sent_is_restored_sent() {
    let scenario = temp_file("s.toml", &delayed("200ms"));
    let journal = scenario.with_file_name("j.jsonl");
    let da = serve(&scenario, &journal, &[]);
    let r = da
        .post_json(
            "/pay/v1/t",
            &[("Idempotency-Key", "a1")],
            &serde_json::json!({"to":"x","amount":5}),
        )
        .unwrap();
    assert_eq!(r.status, 201);
    Command::new("kill")
        .args(["-KILL", &da.child.id().to_string()])
        .status()
        .unwrap();
    drop(da);
    let da = serve(&scenario, &journal, &[]);
    let entry = &da.ledger()[0];
    assert_eq!(entry["response"]["delivery"], "sent", "{entry}");
    assert_eq!(entry["response"]["status"], 201, "{entry}");
}

fn keyed_payments() -> (std::path::PathBuf, std::path::PathBuf) {
    let scenario = temp_file(
        "s.toml",
        &payments("idempotency = { preset = \"stripe\" }", ""),
    );
    let journal = scenario.with_file_name("j.jsonl");
    (scenario, journal)
}

fn transfer_keyed(da: &Da, key: &str) -> Resp {
    let r = da
        .post_json(
            "/payments/v1/transfers",
            &[("Idempotency-Key", key)],
            &serde_json::json!({"to": key, "amount": 1}),
        )
        .unwrap();
    assert_eq!(r.status, 201, "{}", r.text());
    r
}

/// The journal with the line of record `seq` changed by `edit` (`None`: removed).
fn edit_record_line(journal: &std::path::Path, seq: u64, edit: impl Fn(&str) -> Option<String>) {
    let text = std::fs::read_to_string(journal).unwrap();
    let needle = format!("\"record\":{{\"seq\":{seq},");
    let mut found = false;
    let lines: Vec<String> = text
        .lines()
        .filter_map(
            |l| match l.contains("\"t\":\"record\"") && l.contains(&needle) {
                true => {
                    found = true;
                    edit(l)
                }
                false => Some(l.to_string()),
            },
        )
        .collect();
    assert!(found, "no record line of seq {seq} in {text}");
    std::fs::write(journal, lines.join("\n") + "\n").unwrap();
}

/// `serve` expected to refuse to start: its exit code and stderr.
fn refused(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(bin())
        .arg("serve")
        .args(args)
        .args(["--listen", "127.0.0.1:0"])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.stdout.is_empty(), "it served: {stdout}");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

fn stderr_of(mut da: Da) -> String {
    use std::io::Read;
    let _ = da.child.kill();
    let mut err = String::new();
    da.child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    err
}

/// ACC-1: a journal missing a whole middle line is damage like a broken one: the start stops
/// (its lost key would execute again), and `--journal-recover` keeps a placeholder in its place.
#[test]
fn a_journal_missing_a_whole_line_stops_the_start_acc_1() {
    let (scenario, journal) = keyed_payments();
    let (s, j) = (scenario.to_str().unwrap(), journal.to_str().unwrap());
    let da = Da::start_args(&[s, "--journal", j]);
    for k in ["k1", "k2", "k3", "k4"] {
        transfer_keyed(&da, k);
    }
    assert!(da.terminate().success());
    edit_record_line(&journal, 3, |_| None);

    let (code, err) = refused(&[s, "--journal", j]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("seq 3 of the default session") && err.contains("--journal-recover"),
        "{err}"
    );

    let da = Da::start_args(&[s, "--journal", j, "--journal-recover"]);
    let ledger = da.ledger();
    assert_eq!(ledger.len(), 4, "{ledger:?}");
    assert_eq!(ledger[2]["event"], "journal-lost", "{}", ledger[2]);
    let report = da.get("/_admin/verify").json();
    assert_ne!(report["state"], "clean", "{report}");
    let notes = report["notes"].to_string();
    assert!(
        notes.contains("#3") && notes.contains("journal-lost"),
        "{notes}"
    );
    let err = stderr_of(da);
    assert!(err.contains("seq 3 of the default session"), "{err}");
    // Rewritten with the placeholder: the next start needs no flag, and no seq is reused.
    let da = Da::start_args(&[s, "--journal", j]);
    assert_eq!(da.ledger().len(), 4);
    assert_eq!(transfer_keyed(&da, "k5").json()["id"], "act_5");
}

/// ACC-3: over a ledger with a lost entry, a claim naming only that entry is not judged (no
/// false "never executed"); the notes say the entry was lost. Losing seq 1 leaves a placeholder
/// too, not a note blaming --max-entries.
#[test]
fn a_verdict_over_lost_entries_says_so_instead_of_asserting_acc_3() {
    let (scenario, journal) = keyed_payments();
    let (s, j) = (scenario.to_str().unwrap(), journal.to_str().unwrap());
    let da = Da::start_args(&[s, "--journal", j]);
    for k in ["k0", "k1", "k2"] {
        transfer_keyed(&da, k);
    }
    assert!(da.terminate().success());
    let damage = |l: &str| Some(l.replacen("\"amount\":1", "\"amount\":2", 1));
    edit_record_line(&journal, 1, damage);
    edit_record_line(&journal, 2, damage);

    let da = Da::start_args(&[s, "--journal", j, "--journal-recover"]);
    let ledger = da.ledger();
    assert_eq!(ledger[0]["seq"], 1, "{}", ledger[0]);
    assert_eq!(ledger[0]["event"], "journal-lost", "{}", ledger[0]);
    let r = da.call(
        "POST",
        "/_admin/claims",
        &[("content-type", "application/json")],
        r#"{"actions": [{"key": "k1", "claim": "succeeded"}, {"key": "k2", "claim": "succeeded"}]}"#,
    );
    assert_eq!(r.status, 200, "{}", r.text());
    let report = da.get("/_admin/verify").json();
    assert_eq!(report["findings"], serde_json::json!([]), "{report}");
    assert_eq!(report["state"], "incomplete", "{report}");
    let notes = report["notes"].to_string();
    assert!(notes.contains("2 entries (#1, #2)"), "{notes}");
    assert!(!notes.contains("evicted"), "{notes}");
    assert!(notes.contains("claims naming no entry"), "{notes}");
    let err = stderr_of(da);
    assert!(!err.contains("seq=it claims"), "{err}");
}

/// A torn last line's warning says which line it was (the seq it followed), not only its bytes.
#[test]
fn a_torn_tail_is_named_by_the_seq_it_followed() {
    let (scenario, journal) = keyed_payments();
    let (s, j) = (scenario.to_str().unwrap(), journal.to_str().unwrap());
    let da = Da::start_args(&[s, "--journal", j]);
    transfer_keyed(&da, "k1");
    transfer_keyed(&da, "k2");
    assert!(da.terminate().success());
    let mut text = std::fs::read(&journal).unwrap();
    text.extend_from_slice(br#"{"line":{"t":"record","session":null,"record":{"seq":3,"#);
    std::fs::write(&journal, text).unwrap();
    let da = Da::start_args(&[s, "--journal", j]);
    assert_eq!(da.ledger().len(), 2);
    let err = stderr_of(da);
    assert!(
        err.contains("1 line") && err.contains("follows seq 2 of the default session"),
        "{err}"
    );
}

/// A file whose line never ends is refused with a clear error, not read without bound.
#[test]
fn a_journal_line_that_never_ends_is_refused() {
    let (scenario, _) = keyed_payments();
    let (code, err) = refused(&[scenario.to_str().unwrap(), "--journal", "/dev/zero"]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("line 1 is longer than 256 MiB"), "{err}");
}

/// ACC-1: a same-key retry that executes again because --max-keys forgot the key is marked so,
/// and the verifier does not blame the client for it (a note says what happened).
#[test]
fn a_retry_whose_key_was_forgotten_for_capacity_is_marked_not_blamed_acc_1() {
    let (scenario, _) = keyed_payments();
    let da = Da::start_args(&[scenario.to_str().unwrap(), "--max-keys", "2"]);
    for k in ["k1", "k2", "k3"] {
        transfer_keyed(&da, k);
    }
    let again = transfer_keyed(&da, "k1");
    assert_eq!(again.json()["id"], "act_4");
    let ledger = da.ledger();
    assert_eq!(ledger[3]["key_forgotten"], true, "{}", ledger[3]);
    assert!(ledger[0].get("key_forgotten").is_none(), "{}", ledger[0]);
    let report = da.get("/_admin/verify").json();
    assert_eq!(report["findings"], serde_json::json!([]), "{report}");
    let notes = report["notes"].to_string();
    assert!(
        notes.contains("1 action (#4)") && notes.contains("--max-keys"),
        "{notes}"
    );
}

/// A `ledger/wait` long-poll open at SIGTERM is answered at once (503), not held for the whole
/// --drain-timeout.
#[test]
fn a_ledger_wait_open_at_sigterm_is_answered_at_once() {
    let (scenario, _) = keyed_payments();
    let da = Da::start_args(&[scenario.to_str().unwrap(), "--drain-timeout", "10s"]);
    let url = da.url.clone();
    let waiter = std::thread::spawn(move || {
        request(
            &url,
            "GET",
            "/_admin/ledger/wait?count=5&timeout=60s",
            &[],
            b"",
        )
    });
    std::thread::sleep(Duration::from_millis(300));
    let started = std::time::Instant::now();
    assert!(da.terminate().success());
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let r = waiter.join().unwrap().expect("the wait is answered");
    assert_eq!(r.status, 503, "{}", r.text());
}
