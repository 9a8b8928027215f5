//! The fault suite (issue 30): what a staging sidecar meets — a full disk, a damaged or torn
//! journal — and the promise it keeps through them: nothing acknowledged is lost or executed
//! twice (ACC-1).

mod common;

use common::*;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, Stdio};

/// `doubleagent serve ARGS... --listen 127.0.0.1:0` run by `sh` with `prefix` first (a ulimit).
fn start_sh(prefix: &str, args: &[&str]) -> Da {
    let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "{prefix} exec '{}' serve {} --listen 127.0.0.1:0",
            bin(),
            quoted.join(" ")
        ))
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let ready: serde_json::Value = serde_json::from_str(&line).expect("ready line");
    Da {
        url: ready["url"].as_str().unwrap().to_string(),
        child,
        ready,
        ready_line: line,
    }
}

/// `serve` that is expected to refuse to start: its exit code and stderr.
fn refused(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(bin())
        .arg("serve")
        .args(args)
        .args(["--listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(
        out.stdout.is_empty(),
        "it served: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

fn keyed(da: &Da, key: &str) -> Option<Resp> {
    da.post_json(
        "/payments/v1/transfers",
        &[("Idempotency-Key", key)],
        &serde_json::json!({"to": key, "amount": 1}),
    )
    .ok()
}

fn scenario_and_journal() -> (std::path::PathBuf, std::path::PathBuf) {
    let scenario = temp_file(
        "s.toml",
        &payments("idempotency = { preset = \"stripe\" }", ""),
    );
    let journal = scenario.with_file_name("journal.jsonl");
    (scenario, journal)
}

fn args<'a>(scenario: &'a Path, journal: &'a Path, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![
        scenario.to_str().unwrap(),
        "--journal",
        journal.to_str().unwrap(),
        "--fsync",
        "always",
    ];
    a.extend_from_slice(extra);
    a
}

/// Send keyed transfers until the journal fails; the acknowledged ones as (key, action id).
fn fill_until_503(da: &Da) -> Vec<(String, String)> {
    let mut acked = Vec::new();
    for i in 0..5000 {
        let key = format!("k-{i}");
        let r = keyed(da, &key).expect("every request is answered");
        match r.status {
            201 => acked.push((key, r.json()["id"].as_str().unwrap().to_string())),
            503 => return acked,
            s => panic!("unexpected {s}: {}", r.text()),
        }
    }
    panic!("the journal never filled up");
}

/// After a restart, every acknowledged action is in the ledger and its key replays it.
fn all_acknowledged_survive(da: &Da, acked: &[(String, String)]) {
    let ids: std::collections::HashSet<String> = da
        .ledger()
        .iter()
        .filter_map(|e| e["action_id"].as_str().map(str::to_string))
        .collect();
    for (key, id) in acked {
        assert!(ids.contains(id), "{id} ({key}) was acknowledged, then lost");
    }
    let (key, id) = acked.last().unwrap();
    let r = keyed(da, key).unwrap();
    assert_eq!(
        r.header("Idempotent-Replayed"),
        Some("true"),
        "{}",
        r.text()
    );
    assert_eq!(r.json()["id"], id.as_str());
}

/// Once `make_room` frees space (false: it cannot while this process runs), the refused
/// request's retry with its key executes afresh: its key was not kept, since its record never
/// reached the journal, so it is not a replay of an answer nobody got (ACC-1).
fn retry_once_there_is_room(da: &Da, acked: &[(String, String)], make_room: impl Fn() -> bool) {
    if !make_room() {
        return;
    }
    let refused = format!("k-{}", acked.len());
    let r = keyed(da, &refused).unwrap();
    assert_eq!(r.status, 201, "{}", r.text());
    assert_eq!(r.header("Idempotent-Replayed"), None, "{}", r.text());
    let last = da.ledger().pop().unwrap();
    assert_eq!(last["disposition"], "executed", "{last}");
    assert_eq!(last["idempotency_key"], refused.as_str(), "{last}");
}

fn full_journal_is_503_and_loses_nothing(
    prefix: &str,
    journal: &Path,
    scenario: &Path,
    make_room: impl Fn() -> bool,
) {
    let da = start_sh(prefix, &args(scenario, journal, &[]));
    let acked = fill_until_503(&da);
    assert!(!acked.is_empty());
    // Health and metrics say so while it lasts.
    let h = da.get("/_admin/health");
    assert_eq!(h.status, 503, "{}", h.text());
    assert_eq!(h.json()["status"], "journal-failing");
    assert_eq!(h.json()["journal"]["failing"], true);
    let m = da.get("/_admin/metrics").text();
    assert!(m.contains("doubleagent_journal_failing 1"), "{m}");
    assert!(
        !m.contains("doubleagent_journal_write_failures_total 0"),
        "{m}"
    );
    // The ledger in memory records the 503 that went out, and that it did not take effect.
    let last = da.ledger().pop().unwrap();
    assert_eq!(last["response"]["status"], 503, "{last}");
    assert_eq!(last["applies_at"], serde_json::Value::Null, "{last}");
    retry_once_there_is_room(&da, &acked, make_room);
    drop(da);

    // A restart with room again: the journal loads cleanly (the failed write's partial line
    // was cut back) and holds every acknowledged action.
    let da = Da::start_args(&args(scenario, journal, &[]));
    all_acknowledged_survive(&da, &acked);
}

/// Issue 30 item 1, ACC-1: a full disk under `--fsync always` answers 503, never an
/// acknowledgement the journal does not hold. The disk is "full" by the kernel's file-size limit
/// (EFBIG on the journal's write), which works on every Unix machine without privileges.
#[test]
fn a_journal_that_cannot_write_answers_503_and_loses_no_acknowledged_entry_acc_1() {
    let (scenario, journal) = scenario_and_journal();
    // dash counts in 512-byte blocks: a 32 KiB journal, ignoring SIGXFSZ so the write fails.
    full_journal_is_503_and_loses_nothing(
        "trap '' XFSZ; ulimit -f 64;",
        &journal,
        &scenario,
        || false,
    );
}

/// The same without the shell ignoring SIGXFSZ: the server ignores it itself, so the limit is a
/// failed write answered 503 (docs/staging.md), not a process killed by the signal (ACC-1).
#[test]
fn a_file_size_limit_answers_503_without_trapping_sigxfsz_acc_1() {
    let (scenario, journal) = scenario_and_journal();
    full_journal_is_503_and_loses_nothing("ulimit -f 64;", &journal, &scenario, || false);
}

/// The same on a real 64 KiB tmpfs (ENOSPC), where the machine lets the test mount one.
#[test]
fn a_full_tmpfs_answers_503_and_loses_no_acknowledged_entry_acc_1() {
    let (scenario, journal) = scenario_and_journal();
    let dir = journal.with_file_name("small-fs");
    std::fs::create_dir_all(&dir).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
        .arg(&dir)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        eprintln!("skipped: cannot mount a tmpfs here");
        return;
    }
    let journal = dir.join("journal.jsonl");
    let result = std::panic::catch_unwind(|| {
        full_journal_is_503_and_loses_nothing("", &journal, &scenario, || {
            let grown = Command::new("mount")
                .args(["-o", "remount,size=1m"])
                .arg(&dir)
                .status();
            assert!(grown.unwrap().success());
            true
        });
    });
    let _ = Command::new("umount").arg(&dir).status();
    if let Err(p) = result {
        std::panic::resume_unwind(p);
    }
}

/// Issue 30 item 1, ACC-1: a damaged line in the middle stops the start, naming file, line and
/// seq; `--journal-recover` keeps every readable entry and never reuses the lost seq.
#[test]
fn a_damaged_middle_line_stops_the_start_and_recover_never_reuses_its_seq_acc_1() {
    let (scenario, journal) = scenario_and_journal();
    let da = Da::start_args(&args(&scenario, &journal, &[]));
    let acked: Vec<(String, String)> = (0..20)
        .map(|i| {
            let key = format!("k-{i}");
            let r = keyed(&da, &key).unwrap();
            (key, r.json()["id"].as_str().unwrap().to_string())
        })
        .collect();
    da.terminate();
    // One changed byte in the record of seq 9: still valid JSON, caught by the checksum.
    let text = std::fs::read_to_string(&journal).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let at = lines
        .iter()
        .position(|l| l.contains("\"t\":\"record\"") && l.contains("\"seq\":9,"))
        .unwrap();
    lines[at] = lines[at].replacen("\"amount\":1", "\"amount\":2", 1);
    std::fs::write(&journal, lines.join("\n") + "\n").unwrap();

    let (code, err) = refused(&args(&scenario, &journal, &[]));
    assert_eq!(code, Some(1), "{err}");
    let line_no = format!("line {} is damaged", at + 1);
    assert!(
        err.contains(journal.to_str().unwrap()) && err.contains(&line_no),
        "{err}"
    );
    assert!(
        err.contains("seq 9") && err.contains("--journal-recover"),
        "{err}"
    );

    let mut da = Da::start_args(&args(&scenario, &journal, &["--journal-recover"]));
    let ledger = da.ledger();
    assert_eq!(
        ledger.len(),
        20,
        "19 entries and the lost one's placeholder"
    );
    assert_eq!(ledger[8]["event"], "journal-lost");
    for (key, id) in acked.iter().filter(|(_, id)| id != "act_9") {
        assert!(
            ledger.iter().any(|e| e["action_id"] == id.as_str()),
            "{id} ({key}) lost"
        );
    }
    // A new request gets a fresh seq, and a later entry's lookup still answers.
    let r = keyed(&da, "new").unwrap();
    assert_eq!(r.json()["id"], "act_21");
    let r = da.get("/payments/v1/transfers/act_15");
    assert_eq!(r.status, 200, "{}", r.text());
    let _ = da.child.kill();
    let mut err = String::new();
    da.child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(err.contains("seq 9 of the default session"), "{err}");
    drop(da);
    // The journal was rewritten without the damage: the next start needs no flag.
    let da = Da::start_args(&args(&scenario, &journal, &[]));
    assert_eq!(da.ledger().len(), 22);
}

/// Issue 30 item 1, ACC-1: a torn last line is cut off the file, so the line appended after the
/// restart is whole and read at the following one (a merged line lost a key and re-executed).
#[test]
fn a_torn_tail_is_cut_off_before_appending_acc_1() {
    let (scenario, journal) = scenario_and_journal();
    let da = Da::start_args(&args(&scenario, &journal, &[]));
    keyed(&da, "k-1").unwrap();
    da.terminate();
    std::fs::OpenOptions::new()
        .append(true)
        .open(&journal)
        .and_then(|mut f| std::io::Write::write_all(&mut f, b"{\"line\":{\"t\":\"rec"))
        .unwrap();
    let da = Da::start_args(&args(&scenario, &journal, &[]));
    let id = keyed(&da, "k-2").unwrap().json()["id"].clone();
    assert_eq!(id, "act_2");
    da.terminate();
    let da = Da::start_args(&args(&scenario, &journal, &[]));
    let r = keyed(&da, "k-2").unwrap();
    assert_eq!(
        r.header("Idempotent-Replayed"),
        Some("true"),
        "{}",
        r.text()
    );
    assert_eq!(r.json()["id"], id);
}

/// `serve ARGS...` with `env`, expected to refuse to start: its exit code and stderr.
fn refused_with(args: &[&str], env: &[(&str, &str)]) -> (Option<i32>, String) {
    let out = Command::new(bin())
        .arg("serve")
        .args(args)
        .env_remove("DOUBLEAGENT_ADMIN_TOKEN")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.stdout.is_empty(), "it served");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// Issue 30 item 2: an empty token (an empty Kubernetes secret) is refused like a bad argument,
/// on loopback and off it (it must not pass the "no non-loopback listen without a token" guard).
#[test]
fn an_empty_admin_token_is_refused_at_start_by_flag_and_by_env() {
    let scenario = temp_file("s.toml", &payments("", ""));
    let s = scenario.to_str().unwrap();
    for (args, env) in [
        (
            vec![s, "--admin-token", "", "--listen", "127.0.0.1:0"],
            vec![],
        ),
        (
            vec![s, "--listen", "0.0.0.0:0"],
            vec![("DOUBLEAGENT_ADMIN_TOKEN", "")],
        ),
        (
            vec![s, "--listen", "127.0.0.1:0"],
            vec![("DOUBLEAGENT_ADMIN_TOKEN", "  ")],
        ),
    ] {
        let (code, err) = refused_with(&args, &env);
        assert_eq!(code, Some(2), "{args:?} {env:?}: {err}");
        assert!(err.contains("admin token is empty"), "{err}");
    }
}

/// Issue 30 item 2: with a token, an unauthenticated health check (or root) naming a session
/// creates none, so nobody without the token can use up the session slots; wrong tokens of any
/// length are refused.
#[test]
fn without_the_token_no_request_to_admin_or_root_creates_a_session() {
    let scenario = temp_file("s.toml", &payments("", ""));
    let da = Da::start_args(&[
        scenario.to_str().unwrap(),
        "--admin-token",
        "s3cret",
        "--max-sessions",
        "1",
    ]);
    let auth = [("Authorization", "Bearer s3cret")];
    for i in 0..5 {
        let r = da.get(&format!("/_admin/health?session=probe-{i}"));
        assert_eq!(r.status, 200, "{}", r.text());
        let r = da.call("GET", "/", &[("X-Doubleagent-Session", "root-probe")], "");
        assert_eq!(r.status, 200, "{}", r.text());
    }
    let listed = da.call("GET", "/_admin/sessions", &auth, "").json();
    assert_eq!(listed["sessions"], serde_json::json!([]), "{listed}");
    // The one slot is still free for a real test.
    let r = da.call(
        "GET",
        "/payments/v1/transfers/x",
        &[("X-Doubleagent-Session", "real")],
        "",
    );
    assert_eq!(r.status, 404, "a lookup of nothing: {}", r.text());
    for wrong in [
        "",
        "Bearer ",
        "Bearer s3cre",
        "Bearer s3cret2",
        "Bearer S3CRET",
        "s3cret",
    ] {
        let h = [("Authorization", wrong)];
        assert_eq!(
            da.call("GET", "/_admin/ledger", &h, "").status,
            401,
            "{wrong:?}"
        );
    }
    assert_eq!(da.call("GET", "/_admin/ledger", &auth, "").status, 200);
}

/// Issue 30 item 6, ACC-1: idempotency keys are compared as the bytes sent. Three keys that are
/// not UTF-8 (and read the same with replacement characters) are three keys, each replayed only
/// by itself.
#[test]
fn keys_that_are_not_utf8_are_compared_as_bytes_acc_1() {
    let da = Da::start(&payments("idempotency = { preset = \"stripe\" }", ""));
    let send = |key: &[u8]| {
        let body = br#"{"to":"acct-9","amount":100}"#;
        let mut req = b"POST /payments/v1/transfers HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/json\r\nIdempotency-Key: ".to_vec();
        req.extend_from_slice(key);
        req.extend_from_slice(format!("\r\nContent-Length: {}\r\n\r\n", body.len()).as_bytes());
        req.extend_from_slice(body);
        raw_request(&da.url, &req).unwrap()
    };
    let keys: [&[u8]; 3] = [b"k\xff", b"k\xfe", b"k\xc3"];
    let ids: Vec<String> = keys
        .iter()
        .map(|k| {
            let r = send(k);
            assert_eq!(r.status, 201, "{}", r.text());
            assert_eq!(r.header("Idempotent-Replayed"), None, "{}", r.text());
            r.json()["id"].as_str().unwrap().to_string()
        })
        .collect();
    assert_eq!(ids, ["act_1", "act_2", "act_3"]);
    for (k, id) in keys.iter().zip(&ids) {
        let r = send(k);
        assert_eq!(r.header("Idempotent-Replayed"), Some("true"));
        assert_eq!(r.json()["id"], id.as_str());
    }
    let shown: Vec<String> = da
        .ledger()
        .iter()
        .take(3)
        .map(|e| e["idempotency_key"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(shown[0], "k\u{fffd}\u{7f}6bff");
}

/// Issue 30 item 5: bounded by default — 100,000 entries per session unless told otherwise,
/// `--max-entries 0` for unbounded.
#[test]
fn the_ledger_is_bounded_by_default_and_zero_means_unbounded() {
    let da = Da::start(&payments("", ""));
    assert_eq!(da.get("/_admin/health").json()["max_entries"], 100_000);
    let scenario = temp_file("s.toml", &payments("", ""));
    let da = Da::start_args(&[scenario.to_str().unwrap(), "--max-entries", "0"]);
    assert_eq!(
        da.get("/_admin/health").json()["max_entries"],
        serde_json::Value::Null
    );
}

/// Issue 30 item 5: a `ledger/wait` cannot park a connection for longer than 5 minutes.
#[test]
fn a_ledger_wait_longer_than_the_cap_is_a_400() {
    let da = Da::start(&payments("", ""));
    let r = da.get("/_admin/ledger/wait?count=1&timeout=301s");
    assert_eq!(r.status, 400, "{}", r.text());
    assert!(r.text().contains("at most 5m"), "{}", r.text());
    // At the cap it is accepted (and answers at once: the count is already met).
    let r = da.get("/_admin/ledger/wait?count=0&timeout=5m");
    assert_eq!(r.status, 200, "{}", r.text());
}

fn routes(n: usize) -> String {
    let mut toml = String::from("name = \"big\"\n[services.s]\n");
    for i in 0..n {
        toml.push_str(&format!(
            "[[services.s.routes]]\nname = \"r{i}\"\nmethod = \"GET\"\npath = \"/p{i}/{{id}}\"\nkind = \"lookup\"\n"
        ));
    }
    toml
}

/// Issue 30 item 5: validating a scenario is linear in its size, for a valid one and for one
/// with a problem in every route (each problem used to re-parse the document), and
/// `POST /_admin/scenario` validates off the request threads. (100k routes took over 60 s.)
#[test]
fn a_100k_route_scenario_is_validated_in_linear_time_off_the_request_threads() {
    let da = Da::start(&payments("", ""));
    let big = routes(100_000);
    let started = std::time::Instant::now();
    let r = da.call("POST", "/_admin/scenario", &[], &big);
    let took = started.elapsed();
    assert_eq!(r.status, 200, "{}", &r.text()[..200.min(r.text().len())]);
    eprintln!("100k routes replaced in {took:?}");
    assert!(took < std::time::Duration::from_secs(30), "{took:?}");
    assert_eq!(da.get("/_admin/health").json()["scenario"], "big");

    let bad = routes(20_000).replace("/{id}\"", "\"");
    let file = temp_file("bad.toml", &bad);
    let started = std::time::Instant::now();
    let out = Command::new(bin())
        .arg("check")
        .arg(&file)
        .output()
        .unwrap();
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(2));
    let problems = String::from_utf8_lossy(&out.stderr).lines().count();
    assert_eq!(problems, 20_000);
    eprintln!("20k problems located in {took:?}");
    assert!(took < std::time::Duration::from_secs(30), "{took:?}");
}

/// Issue 30 item 3: a push target on loopback must be on a port the scenario lists, and never
/// doubleagent's own listener (a push to its /_admin/reset wiped the ledger); each refusal is a
/// JSON-RPC error and a ledger entry.
#[test]
fn push_targets_on_loopback_need_a_listed_port_and_never_reach_doubleagent_itself() {
    let toml = std::fs::read_to_string(format!(
        "{}/scenarios/late-result.toml",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
    .replacen(
        "[agents.researcher]\n",
        "[agents.researcher]\npush_ports = [9]\n",
        1,
    );
    let da = Da::start(&toml);
    let own = da.url.rsplit(':').next().unwrap().to_string();
    let create = |url: &str| {
        let body = serde_json::json!({"jsonrpc": "2.0", "id": 1,
            "method": "CreateTaskPushNotificationConfig",
            "params": {"taskId": "task-404", "url": url,
                "authentication": {"scheme": "Bearer", "credentials": "admin-token"}}});
        da.post_json("/agents/researcher", &[("A2A-Version", "1.0")], &body)
            .unwrap()
            .json()
    };
    for url in [
        format!("http://127.0.0.1:{own}/_admin/reset"),
        format!("http://localhost:{own}/_admin/reset"),
        format!("http://[::1]:{own}/_admin/reset"),
        "http://127.0.0.1:8500/v1/kv".into(),
        "http://127.0.0.1/hook".into(),
        "http://0.0.0.0:9200/".into(),
    ] {
        let r = create(&url);
        assert_eq!(r["error"]["code"], -32602, "{url}: {r}");
    }
    // A listed port passes the check (and then meets the unknown task).
    let r = create("http://127.0.0.1:9/hook");
    assert_ne!(r["error"]["code"], -32602, "{r}");
    let refused = da
        .get("/_admin/ledger?service=researcher&event=rpc-error")
        .json()["entries"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(
        refused, 7,
        "every refusal (and the unknown task) is an entry"
    );
    // Nothing reached the admin API: the ledger is still there.
    assert!(!da.ledger().is_empty());
}

fn addr(da: &Da) -> String {
    da.url.trim_start_matches("http://").to_string()
}

/// Read until the server closes the connection (Ok(0) or a reset); how long it took.
fn closed_within(s: &mut std::net::TcpStream) -> std::time::Duration {
    let started = std::time::Instant::now();
    s.set_read_timeout(Some(std::time::Duration::from_secs(20)))
        .unwrap();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return started.elapsed(),
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return started.elapsed(),
            Err(e) => panic!("still open after {:?}: {e}", started.elapsed()),
        }
    }
}

/// Issue 30 item 4: a client dribbling its request head, and a kept-alive connection left
/// idle, are closed after --header-read-timeout (wall clock); a hung fate's connection is kept.
#[test]
fn slow_and_idle_connections_are_closed_but_a_hung_fate_keeps_its_own() {
    use std::io::Write;
    let scenario = temp_file("s.toml", &payments("", "fates = [\"hang-after-apply\"]"));
    let da = Da::start_args(&[scenario.to_str().unwrap(), "--header-read-timeout", "300ms"]);
    let mut slow = std::net::TcpStream::connect(addr(&da)).unwrap();
    slow.write_all(b"GET /_admin/health HTTP/1.1\r\nHost: x\r\n")
        .unwrap();
    let took = closed_within(&mut slow);
    assert!(took < std::time::Duration::from_secs(10), "{took:?}");

    let mut idle = std::net::TcpStream::connect(addr(&da)).unwrap();
    idle.write_all(b"GET /_admin/health HTTP/1.1\r\nHost: x\r\n\r\n")
        .unwrap();
    let took = closed_within(&mut idle);
    assert!(took < std::time::Duration::from_secs(10), "{took:?}");

    let body = r#"{"to":"a","amount":1}"#;
    let mut hung = std::net::TcpStream::connect(addr(&da)).unwrap();
    hung.write_all(format!("POST /payments/v1/transfers HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len()).as_bytes()).unwrap();
    da.wait_for("service=payments", 1);
    // Several header timeouts later it is still open: nothing arrives, nothing closes.
    hung.set_read_timeout(Some(std::time::Duration::from_millis(1500)))
        .unwrap();
    let mut buf = [0u8; 64];
    let r = hung.read(&mut buf);
    assert!(
        matches!(&r, Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut)),
        "the hung connection ended: {r:?}"
    );
}

/// Issue 30 item 4: beyond --max-connections, a new connection waits until one closes.
#[test]
fn connections_beyond_the_cap_wait_for_a_free_slot() {
    use std::io::Write;
    let scenario = temp_file("s.toml", &payments("", ""));
    let da = Da::start_args(&[scenario.to_str().unwrap(), "--max-connections", "1"]);
    let first = std::net::TcpStream::connect(addr(&da)).unwrap();
    let mut second = std::net::TcpStream::connect(addr(&da)).unwrap();
    second
        .write_all(b"GET /_admin/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .unwrap();
    second
        .set_read_timeout(Some(std::time::Duration::from_millis(700)))
        .unwrap();
    let mut buf = [0u8; 16];
    assert!(second.read(&mut buf).is_err(), "answered beyond the cap");
    drop(first);
    second.set_read_timeout(None).unwrap();
    let r = read_response(second).unwrap();
    assert_eq!(r.status, 200);
}
