//! The verifier as a whole (`doubleagent::verify`): a busy ledger read every way (a file a piece
//! at a time, a text, its entries) gives one report and one text; bad lines are named by their
//! number; intents compare as their JSON text.

use std::collections::HashSet;

use serde_json::Value;

use doubleagent::ledger::{Disposition, Entry};
use doubleagent::verify::{
    parse_jsonl_with, verify_with, Claims, Finding, LeanError, LeanLedger, Limits, Report,
};

/// Small pieces and a low threshold for a second thread, so that these ledgers are cut in many
/// places and take both ways.
const SMALL: Limits = Limits {
    piece: 64 << 10,
    parallel_rows: 1_000,
};

/// A file holding `bytes`, open for reading (and already unlinked).
fn temp_file(bytes: &[u8]) -> std::fs::File {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    let path = std::env::temp_dir().join(format!(
        "doubleagent-verify-{}-{}.jsonl",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::write(&path, bytes).unwrap();
    let file = std::fs::File::open(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    file
}

/// Verify `text` three ways, through its entries, as a text and as a file read a piece at a
/// time: the reports and their texts must be the same.
fn every_way(text: &str, claims: Option<&Claims>) -> Report {
    let full = parse_jsonl_with(text, "t", &SMALL).unwrap();
    let expect = verify_with(&full, claims, &SMALL);
    let human = expect.human(&full);
    let lean = LeanLedger::parse_with(text.as_bytes(), "t", SMALL).unwrap();
    assert_eq!(lean.len(), full.len());
    let got = lean.verify(claims);
    assert_eq!(got, expect);
    assert_eq!(lean.human(&got), human);
    let file = temp_file(text.as_bytes());
    let read = LeanLedger::read_with(&file, "t", SMALL).unwrap();
    assert_eq!(read.len(), full.len());
    let got = read.verify(claims);
    assert_eq!(got, expect);
    assert_eq!(read.human(&got), human);
    got
}

/// An executed request, with the fields the exporter writes (in its order).
fn executed(
    seq: u64,
    key: Option<&str>,
    intent: &str,
    rev: i64,
    fate: &str,
    delivery: &str,
) -> String {
    let key = key.map_or("null".to_string(), |k| format!("{k:?}"));
    format!(
        r#"{{"seq":{seq},"service":"pay","route":"create","method":"POST","path":"/t","received_at":"2026-01-01T00:00:00.000Z","idempotency_key":{key},"fingerprint":"00ff","intent":{intent},"work_id":"w-{seq}","revision":{rev},"body":{{"to":"a","n":{seq},"deep":[1,{{"x":null}},-2.5e3]}},"body_truncated":false,"disposition":"executed","replay_of":null,"executed_after_expiry":false,"fate":"{fate}","action_id":"act_{seq}","applied":true,"applied_at":"2026-01-01T00:00:00.000Z","response":{{"delivery":"{delivery}","status":201,"at":"2026-01-01T00:00:00.000Z"}}}}"#
    )
}

/// A ledger with something for every checker: lost responses, blind and same-key retries,
/// lookups, replays, keys reused, revisions declared and implied, agents' messages, canaries,
/// tasks, and a claims declaration; intents written with keys out of order, escapes and
/// floats. Over 1 MiB, so that it is parsed in pieces on several threads.
fn busy_ledger() -> (String, Claims) {
    let mut lines = Vec::new();
    let mut rev = 1;
    let mut seq = 0u64;
    let mut next = || {
        seq += 1;
        seq
    };
    for i in 0..2500u64 {
        let n = next();
        let intent = match i % 4 {
            0 => format!(r#"{{"/to":"a-{i}","/n":{i}}}"#),
            1 => format!(r#"{{ "/n" : {i}, "/to" : "a\u002d{i}", "/n": {i} }}"#),
            2 => format!(r#"{{"/to":"a-{i}\n","/n":{i}.0,"/z":[1,-0,1e2,{{"b":1,"a":2}}]}}"#),
            _ => format!(r#"{{"/to":"a-{i}","/n":{i},"/w":"\"q\" é"}}"#),
        };
        let uncertain = i % 5 == 1;
        let (fate, delivery) = match i % 15 {
            1 => ("respond", "dropped"),
            6 => ("error-after-apply:500", "sent"),
            11 => ("respond", "hung"),
            _ => ("respond", "sent"),
        };
        let r = if i % 40 == 13 { rev - 1 } else { rev };
        let key = format!("k-{i}");
        lines.push(executed(n, Some(&key), &intent, r, fate, delivery));
        if uncertain {
            match i % 4 {
                // A blind retry with a new key, or none.
                0 => lines.push(executed(next(), None, &intent, rev, "respond", "sent")),
                1 => lines.push(executed(next(), Some(&format!("{key}-r")), &intent, rev, "respond", "sent")),
                // A lookup first.
                2 => lines.push(format!(
                    r#"{{"seq":{},"service":"pay","route":"get","method":"GET","path":"/t/{key}","received_at":"2026-01-01T00:00:00.000Z","disposition":"lookup","detail":{{"id":"{key}","target":{n},"answer":"applied"}},"response":{{"delivery":"sent","status":200}}}}"#,
                    next()
                )),
                // The same key: replayed.
                _ => lines.push(format!(
                    r#"{{"seq":{},"service":"pay","route":"create","method":"POST","path":"/t","received_at":"2026-01-01T00:00:00.000Z","idempotency_key":"{key}","intent":{intent},"disposition":"replayed","replay_of":{n},"revision":{rev}}}"#,
                    next()
                )),
            }
        }
        if i % 50 == 7 {
            // The key again, for another intent.
            for other in [
                r#"{"/to":"other","/n":0.0}"#,
                r#"{"/to":"other","/n":-0.0}"#,
            ] {
                lines.push(executed(next(), Some(&key), other, rev, "respond", "sent"));
            }
        }
        if i % 100 == 99 {
            rev += 1;
            lines.push(format!(
                r#"{{"seq":{},"service":"_admin","method":"POST","path":"/revision","received_at":"2026-01-01T00:00:00.000Z","disposition":"declaration","event":"revision","detail":{{"revision":{rev}}},"revision":{rev}}}"#,
                next()
            ));
        }
        if i % 70 == 3 {
            task_lines(&mut lines, i, rev, &mut next);
        }
        if i % 10 == 0 {
            lines.push(String::new()); // blank lines are skipped
        }
    }
    let claims: Claims = serde_json::from_value(serde_json::json!({
        "actions": [
            {"key": "k-1", "claim": "succeeded"},
            {"key": "k-6", "claim": "failed"},
            {"key": "nope", "claim": "succeeded"},
            {"work_id": "w-12", "claim": "unknown"},
            {"intent": {"to": "a-8", "n": 8}, "claim": "succeeded"},
            {"intent": {"/to": "a-16", "/n": 16}, "claim": "failed"},
        ],
        "tasks": [
            {"task_id": "t-3", "claim": "cancelled"},
            {"task_id": "t-73", "claim": "completed"},
            {"task_id": "t-none", "claim": "completed"},
        ],
        "adopted": ["t-3", "t-143"],
    }))
    .unwrap();
    let declared = serde_json::json!({"actions": [{"key": "k-21", "claim": "unknown"}], "tasks": [], "adopted": ["t-213"]});
    lines.push(format!(
        r#"{{"seq":{},"service":"_admin","method":"POST","path":"/claims","received_at":"2026-01-01T00:00:00.000Z","disposition":"declaration","event":"claims","detail":{declared}}}"#,
        next()
    ));
    let mut text = lines.join("\n");
    text.push('\n');
    (text, claims)
}

/// An agent's task in the busy ledger: created with a canary, a message and its resend, a cancel
/// acknowledged, a result anyway, and an error for a message to the finished task.
fn task_lines(lines: &mut Vec<String>, i: u64, rev: i64, next: &mut impl FnMut() -> u64) {
    let t = format!("t-{i}");
    let events = [
        (
            "task-created",
            format!(r#"{{"task_id":"{t}","revision":{rev}}}"#),
        ),
        (
            "canary",
            format!(r#"{{"task_id":"{t}","canary":"cny-{i:016x}","revision":{rev}}}"#),
        ),
        (
            "message",
            format!(
                r#"{{"message_id":"m-{i}","task_id":"{t}","repeat_of":null,"text":"use cny-{:016x}"}}"#,
                i.saturating_sub(70)
            ),
        ),
        (
            "message",
            format!(r#"{{"message_id":"m-{i}","task_id":"{t}","repeat_of":"m-{i}"}}"#),
        ),
        (
            "cancel",
            format!(r#"{{"task_id":"{t}","outcome":"acknowledged"}}"#),
        ),
        (
            "result",
            format!(r#"{{"task_id":"{t}","state":"TASK_STATE_COMPLETED"}}"#),
        ),
        (
            "rpc-error",
            format!(r#"{{"code":-32004,"message":"Task {t} is in terminal state completed"}}"#),
        ),
    ];
    for (event, detail) in events {
        lines.push(format!(
            r#"{{"seq":{},"service":"researcher","received_at":"2026-01-01T00:00:00.000Z","disposition":"agent","actor":"agent:researcher","event":"{event}","detail":{detail},"work_id":"{t}"}}"#,
            next()
        ));
    }
}

#[test]
fn a_file_a_text_and_their_entries_give_the_same_report() {
    let (text, claims) = busy_ledger();
    assert!(text.len() > 1 << 20);
    let report = every_way(&text, None);
    let rules: HashSet<&str> = report.findings.iter().map(|f| f.rule.as_str()).collect();
    for rule in ["ACC-1", "ACC-2", "ACC-3", "REC-2", "REC-4", "REC-6"] {
        assert!(rules.contains(rule), "{rule} missing from {rules:?}");
    }
    let with_claims = every_way(&text, Some(&claims));
    assert!(with_claims.findings.len() > report.findings.len());
    assert!(with_claims.findings.iter().any(|f| f.rule == "REC-3"));
    // Evicted entries: the ledger starts later.
    let tail: String = text.lines().skip(100).map(|l| format!("{l}\n")).collect();
    let r = every_way(&tail, None);
    assert!(
        r.notes.iter().any(|n| n.contains("incomplete")),
        "{:?}",
        r.notes
    );
}

#[test]
fn every_fixture_gives_the_same_report_every_way() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/verify");
    let mut n = 0;
    for f in std::fs::read_dir(dir).unwrap() {
        let path = f.unwrap().path();
        if path.extension().is_some_and(|x| x == "jsonl") {
            let text = std::fs::read_to_string(&path).unwrap();
            every_way(&text, None);
            let claims: Claims = serde_json::from_value(serde_json::json!({
                "actions": [{"key": "k-1", "claim": "unknown"}, {"intent": {"to": "a"}, "claim": "failed"}],
                "tasks": [{"task_id": "t-1", "claim": "cancelled"}],
                "adopted": ["t-1"],
            }))
            .unwrap();
            every_way(&text, Some(&claims));
            n += 1;
        }
    }
    assert!(n > 20, "{n} fixtures");
}

#[test]
fn a_bad_line_is_named_by_its_number_every_way() {
    let (text, _) = busy_ledger();
    let lines: Vec<&str> = text.lines().collect();
    let bad = lines.len() - 321;
    assert!(!lines[bad - 1].is_empty());
    for (from, to) in [
        (r#""fingerprint":"00ff""#, r#""fingerprint":7"#),
        (r#""status":201"#, r#""status":70000"#),
        (r#""deep":[1"#, r#""deep":[1e999"#),
        (r#""revision":"#, r#""revision":[1e999],"x":"#),
        (r#""seq":"#, r#""seq":1,"seq":"#),
        (r#""disposition":"executed""#, r#""disposition":"done""#),
        (r#""method":"POST""#, r#""method":null"#),
        (r#""intent":{"#, r#""intent":{"x":tru,"#),
        ("}", "} x"),
    ] {
        let broken: String = lines
            .iter()
            .enumerate()
            .map(|(i, l)| {
                if i + 1 == bad {
                    format!("{}\n", l.replacen(from, to, 1))
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        assert_ne!(broken, text, "{to}");
        let e1 = parse_jsonl_with(&broken, "f.jsonl", &SMALL).unwrap_err();
        let Err(LeanError::Entry(e2)) = LeanLedger::parse_with(broken.as_bytes(), "f.jsonl", SMALL)
        else {
            panic!("{to}: accepted");
        };
        let file = temp_file(broken.as_bytes());
        let Err(LeanError::Entry(e3)) = LeanLedger::read_with(&file, "f.jsonl", SMALL) else {
            panic!("{to}: accepted from a file");
        };
        assert_eq!(e2, e3);
        assert!(
            e1.starts_with(&format!("f.jsonl:{bad}: not a ledger entry")),
            "{e1}"
        );
        assert_eq!(e1, e2);
    }
    let mut bytes = text.into_bytes();
    bytes[1 << 19] = 0xff;
    assert!(matches!(
        LeanLedger::parse_with(&bytes, "f.jsonl", SMALL).err(),
        Some(LeanError::NotUtf8)
    ));
    let file = temp_file(&bytes);
    assert!(matches!(
        LeanLedger::read_with(&file, "f.jsonl", SMALL).err(),
        Some(LeanError::NotUtf8)
    ));
}

#[test]
fn lines_longer_than_a_piece_and_pieces_cut_anywhere_are_read_whole() {
    // Pieces are 64 KiB in tests: lines of 200 KiB span several, and the cuts fall in
    // every kind of place over a couple of MiB.
    let (text, _) = busy_ledger();
    // In the place (and with the seq) of an entry: seqs increase line by line.
    let long = |seq: u64| {
        format!(
            r#"{{"seq":{seq},"service":"pay","received_at":"2026-01-01T00:00:00.000Z","disposition":"agent","event":"message","detail":{{"message_id":"m","text":"{}"}}}}"#,
            "x".repeat(200 << 10)
        )
    };
    let seq_of = |l: &str| {
        serde_json::from_str::<Value>(l).unwrap()["seq"]
            .as_u64()
            .unwrap()
    };
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    lines[3] = long(seq_of(&lines[3]));
    lines[1000] = long(seq_of(&lines[1000]));
    lines.push(long(seq_of(lines.last().unwrap()) + 1));
    for sep in ["\n", "\r\n"] {
        for end in ["", sep] {
            every_way(&(lines.join(sep) + end), None);
        }
    }
    every_way("", None);
    every_way("\n\n", None);
}

#[test]
fn intents_are_the_same_exactly_when_their_json_text_is() {
    let v = |s: &str| serde_json::from_str::<Value>(s).unwrap();
    let entry = |seq: u64, intent: &str| Entry {
        seq,
        service: "pay".into(),
        route: Some("create".into()),
        disposition: Disposition::Executed,
        applied: true,
        intent: Some(v(intent)),
        ..Entry::default()
    };
    let ledger = [
        entry(1, r#"{"/to":"a","/n":1}"#),
        entry(2, r#"{"/n":1,"/to":"a"}"#),
        entry(3, r#"{"/to":"a","/n":1.0}"#),
        entry(4, r#"{"/to":"b","/n":0.0}"#),
        entry(5, r#"{"/to":"b","/n":-0.0}"#),
    ];
    let report = verify_with(&ledger, None, &SMALL);
    let acc1: Vec<&Finding> = report
        .findings
        .iter()
        .filter(|f| f.rule == "ACC-1")
        .collect();
    assert_eq!(acc1.len(), 1);
    assert_eq!(
        acc1[0].entries,
        vec![1, 2],
        "1.0 is another intent, as in its text, and so is -0.0"
    );
    let text: String = ledger
        .iter()
        .map(|e| format!("{}\n", serde_json::to_string(e).unwrap()))
        .collect();
    assert_eq!(every_way(&text, None), report);
}

#[test]
fn acc1_a_repeated_line_is_named_every_way_wherever_the_pieces_are_cut() {
    let (text, _) = busy_ledger();
    let lines: Vec<&str> = text.lines().collect();
    // Where each line starts; a line belongs to the piece it starts in.
    let starts: Vec<usize> = lines
        .iter()
        .scan(0, |at, l| {
            let s = *at;
            *at += l.len() + 1;
            Some(s)
        })
        .collect();
    // The first line of each of the first pieces (64 KiB), and a few others.
    let mut at: Vec<usize> = (1..4)
        .map(|m| {
            starts
                .iter()
                .position(|s| *s >= m * SMALL.piece as usize)
                .unwrap()
        })
        .collect();
    at.extend([1, 2, lines.len() / 2, lines.len()]);
    for j in at {
        // The last entry before `j` again at `j`: the copy starts where line `j` did.
        let k = (0..j).rev().find(|k| !lines[*k].is_empty()).unwrap();
        let mut twice = lines.clone();
        twice.insert(j, lines[k]);
        let twice = twice.join("\n");
        let e1 = parse_jsonl_with(&twice, "f.jsonl", &SMALL).unwrap_err();
        let Err(LeanError::Entry(e2)) = LeanLedger::parse_with(twice.as_bytes(), "f.jsonl", SMALL)
        else {
            panic!("{j}: accepted");
        };
        let file = temp_file(twice.as_bytes());
        let Err(LeanError::Entry(e3)) = LeanLedger::read_with(&file, "f.jsonl", SMALL) else {
            panic!("{j}: accepted from a file");
        };
        let expect = format!("f.jsonl:{}: not a ledger entry: seq ", j + 1);
        assert!(e1.starts_with(&expect), "{e1}");
        assert!(e1.contains(&format!("(line {})", k + 1)), "{e1}");
        assert_eq!(e1, e2);
        assert_eq!(e2, e3);
    }
}

#[test]
fn acc1_a_verdict_over_entries_on_different_days_shows_their_dates() {
    let intent = r#"{"/to":"a"}"#;
    let first = executed(1, Some("k-1"), intent, 1, "respond", "sent");
    let next_day = |seq: u64| {
        executed(seq, Some(&format!("k-{seq}")), intent, 1, "respond", "sent")
            .replace("2026-01-01T00:00:00.000Z", "2026-01-02T00:00:04.000Z")
    };
    // The same action a day apart: the dates tell them from 4 seconds apart.
    let text = format!("{first}\n{}\n", next_day(2));
    let full = parse_jsonl_with(&text, "t", &SMALL).unwrap();
    let report = every_way(&text, None);
    assert_eq!(report.findings[0].rule, "ACC-1");
    let human = report.human(&full);
    assert!(
        human.contains("    #1 2026-01-01 00:00:00.000 POST"),
        "{human}"
    );
    assert!(
        human.contains("    #2 2026-01-02 00:00:04.000 POST"),
        "{human}"
    );
    // On one day, the time alone.
    let text = format!("{}\n{}\n", next_day(1), next_day(2));
    let full = parse_jsonl_with(&text, "t", &SMALL).unwrap();
    let human = every_way(&text, None).human(&full);
    assert!(human.contains("    #1 00:00:04.000 POST"), "{human}");
    assert!(human.contains("    #2 00:00:04.000 POST"), "{human}");
}
