//! Verification: checkers that read a ledger (and the orchestrator's own claims) and name every
//! broken rule of `shared/spec/rules.md`.
//!
//! Everything here reads the ledger in its serialized form ([`Entry`]), so the same code
//! verifies a live world (`GET /_admin/verify`), a ledger fetched over HTTP (`doubleagent verify
//! --url`) and an exported JSONL file (`doubleagent verify --ledger`). Declarations made through
//! the admin API (revisions taking over, claims) are ledger entries too, so an export carries them.
//!
//! The checkers (`checks`) read compact rows (`rows`), made either from entries
//! ([`verify`]) or straight from JSONL text without building entries ([`LeanLedger`], `jsonl`):
//! both give the same report. Each checker is a function from the indexed ledger to
//! [`Finding`]s; each finding names its rule, says what happened in one line, lists the ledger
//! seqs involved and what the orchestrator should have done. The checkers are linear or
//! `n log n` in the ledger: a million entries verify in a second or two.

use std::fmt::Write as _;

use crate::hash::FastMap as HashMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ledger::{Delivery, Disposition, Entry};

mod checks;
mod jsonl;
mod rows;
mod scan;

// ---------------------------------------------------------------------------------------------
// Claims

/// The orchestrator's own account of what happened (`POST /_admin/claims`, `--claims FILE`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Claims {
    #[serde(default)]
    pub actions: Vec<ActionClaim>,
    #[serde(default)]
    pub tasks: Vec<TaskClaim>,
    /// Ids of tasks whose results the orchestrator adopted.
    #[serde(default)]
    pub adopted: Vec<String>,
}

/// A claim about an action, naming it by exactly one of `key`, `intent` or `work_id`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionClaim {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work_id: Option<String>,
    pub claim: ActionOutcome,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ActionOutcome {
    Succeeded,
    Failed,
    Unknown,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskClaim {
    pub task_id: String,
    pub claim: TaskOutcome,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TaskOutcome {
    Completed,
    Cancelled,
    StopRequested,
    Unknown,
}

/// Why a claims document was rejected.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0}")]
pub struct ClaimsError(pub String);

impl Claims {
    /// Parse and validate a claims document, with the JSON path of the first problem.
    pub fn parse(json: &[u8]) -> Result<Claims, ClaimsError> {
        let mut de = serde_json::Deserializer::from_slice(json);
        let claims: Claims = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let path = e.path().to_string();
            let inner = e.into_inner();
            let msg = inner.to_string();
            // serde_json appends " at line L column C"; keep it, it helps in files.
            if path == "." || path.is_empty() {
                ClaimsError(format!("invalid claims: {msg}"))
            } else {
                ClaimsError(format!("invalid claims: {path}: {msg}"))
            }
        })?;
        for (i, a) in claims.actions.iter().enumerate() {
            let named = [a.key.is_some(), a.intent.is_some(), a.work_id.is_some()];
            if named.iter().filter(|b| **b).count() != 1 {
                return Err(ClaimsError(format!(
                    "invalid claims: actions[{i}]: name the action by exactly one of `key`, `intent` or `work_id`"
                )));
            }
        }
        Ok(claims)
    }

    fn merge(&mut self, other: Claims) {
        self.actions.extend(other.actions);
        self.tasks.extend(other.tasks);
        self.adopted.extend(other.adopted);
    }
}

// ---------------------------------------------------------------------------------------------
// Reading an exported ledger

pub use jsonl::{parse_jsonl, read_file, LeanError, LeanLedger};

// ---------------------------------------------------------------------------------------------
// Verification

/// Verify a ledger, with optional extra claims (from a file) on top of any declared in it.
pub fn verify(entries: &[Entry], extra: Option<&Claims>) -> Report {
    checks::verify(&rows::Ledger::of_entries(entries), extra)
}

// ---------------------------------------------------------------------------------------------
// Findings and the report

/// One broken rule.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub rule: String,
    pub summary: String,
    /// Ledger seqs involved, in order.
    pub entries: Vec<u64>,
    /// What the orchestrator should have done.
    pub hint: String,
}

/// The verdict over a ledger.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub clean: bool,
    pub findings: Vec<Finding>,
    /// Number of ledger entries read.
    pub entries: usize,
    /// Whether any claims were submitted (the claim-based ACC-3 checks need them).
    pub claims: bool,
    /// Caveats about the verdict (skipped checks, an incomplete ledger).
    pub notes: Vec<String>,
}

impl Report {
    /// Readable without the docs: rule, what happened in order, what was expected.
    pub fn human(&self, entries: &[Entry]) -> String {
        let by_seq: HashMap<u64, &Entry> = entries.iter().map(|e| (e.seq, e)).collect();
        self.human_by(|seq| by_seq.get(&seq).map(|e| describe(e)))
    }

    /// [`Report::human`], with the entry of each seq described by `describe_seq` (`None`: not
    /// in the ledger).
    fn human_by(&self, mut describe_seq: impl FnMut(u64) -> Option<String>) -> String {
        let mut out = String::new();
        if self.clean {
            let _ = writeln!(
                out,
                "doubleagent verify: no findings over {} ledger entries",
                self.entries
            );
        } else {
            let _ = writeln!(
                out,
                "doubleagent verify: {} finding(s) over {} ledger entries",
                self.findings.len(),
                self.entries
            );
        }
        for f in &self.findings {
            let _ = writeln!(out, "\n{}  {}", f.rule, f.summary);
            for seq in &f.entries {
                match describe_seq(*seq) {
                    Some(d) => {
                        let _ = writeln!(out, "    {d}");
                    }
                    None => {
                        let _ = writeln!(out, "    #{seq}");
                    }
                }
            }
            let _ = writeln!(out, "    expected: {}", f.hint);
        }
        for n in &self.notes {
            let _ = writeln!(out, "\nnote: {n}");
        }
        out
    }
}

/// `#3 12:00:01.250 POST /payments/v1/transfers key=k-2 rev=1 → executed, applied, 201`
pub fn describe(e: &Entry) -> String {
    let time = e.received_at.get(11..23).unwrap_or(&e.received_at);
    let mut s = format!("#{} {time} ", e.seq);
    if e.disposition == Disposition::Agent || e.disposition == Disposition::Declaration {
        let _ = write!(s, "{} {}", e.service, e.event.as_deref().unwrap_or("event"));
        if let Some(d) = &e.detail {
            let _ = write!(s, " {d}");
        }
        return s;
    }
    let _ = write!(s, "{} /{}{}", e.method, e.service, e.path);
    if let Some(a) = &e.actor {
        let _ = write!(s, " by {a}");
    }
    if let Some(k) = &e.idempotency_key {
        let _ = write!(s, " key={k}");
    }
    if let Some(r) = &e.revision {
        let _ = write!(s, " rev={r}");
    }
    let disp = e.disposition.as_str();
    let _ = write!(s, " → {disp}");
    if e.disposition == Disposition::Executed {
        if let Some(f) = &e.fate {
            let _ = write!(s, " ({f})");
        }
        s.push_str(if e.applied {
            ", applied"
        } else {
            ", not applied"
        });
    }
    match (e.response.delivery, e.response.status) {
        (Delivery::Sent, Some(st)) => {
            let _ = write!(s, ", {st}");
        }
        (d, _) => {
            let _ = write!(s, ", response {}", d.as_str());
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

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

    /// Verify `text` three ways, through full entries and through the lean parse of the text
    /// and of a file: the reports and their texts must be the same.
    fn both_ways(text: &str, claims: Option<&Claims>) -> Report {
        let full = parse_jsonl(text, "t").unwrap();
        let expect = verify(&full, claims);
        let human = expect.human(&full);
        let lean = LeanLedger::parse(text.as_bytes(), "t").unwrap();
        assert_eq!(lean.len(), full.len());
        let got = lean.verify(claims);
        assert_eq!(got, expect);
        assert_eq!(lean.human(&got), human);
        let file = temp_file(text.as_bytes());
        let read = LeanLedger::read(&file, "t").unwrap();
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
                lines.push(executed(
                    next(),
                    Some(&key),
                    r#"{"/to":"other","/n":0.0}"#,
                    rev,
                    "respond",
                    "sent",
                ));
                lines.push(executed(
                    next(),
                    Some(&key),
                    r#"{"/to":"other","/n":-0.0}"#,
                    rev,
                    "respond",
                    "sent",
                ));
            }
            if i % 100 == 99 {
                rev += 1;
                lines.push(format!(
                    r#"{{"seq":{},"service":"_admin","method":"POST","path":"/revision","received_at":"2026-01-01T00:00:00.000Z","disposition":"declaration","event":"revision","detail":{{"revision":{rev}}},"revision":{rev}}}"#,
                    next()
                ));
            }
            if i % 70 == 3 {
                let t = format!("t-{i}");
                let agent = |seq: u64, event: &str, detail: String| {
                    format!(
                        r#"{{"seq":{seq},"service":"researcher","received_at":"2026-01-01T00:00:00.000Z","disposition":"agent","actor":"agent:researcher","event":"{event}","detail":{detail},"work_id":"{t}"}}"#
                    )
                };
                lines.push(agent(
                    next(),
                    "task-created",
                    format!(r#"{{"task_id":"{t}","revision":{rev}}}"#),
                ));
                lines.push(agent(
                    next(),
                    "canary",
                    format!(r#"{{"task_id":"{t}","canary":"cny-{i:016x}","revision":{rev}}}"#),
                ));
                lines.push(agent(next(), "message", format!(r#"{{"message_id":"m-{i}","task_id":"{t}","repeat_of":null,"text":"use cny-{:016x}"}}"#, i.saturating_sub(70))));
                lines.push(agent(
                    next(),
                    "message",
                    format!(r#"{{"message_id":"m-{i}","task_id":"{t}","repeat_of":"m-{i}"}}"#),
                ));
                lines.push(agent(
                    next(),
                    "cancel",
                    format!(r#"{{"task_id":"{t}","outcome":"acknowledged"}}"#),
                ));
                lines.push(agent(
                    next(),
                    "result",
                    format!(r#"{{"task_id":"{t}","state":"TASK_STATE_COMPLETED"}}"#),
                ));
                lines.push(agent(
                    next(),
                    "rpc-error",
                    format!(
                        r#"{{"code":-32004,"message":"Task {t} is in terminal state completed"}}"#
                    ),
                ));
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

    #[test]
    fn the_lean_parse_gives_the_same_report_as_full_entries() {
        let (text, claims) = busy_ledger();
        assert!(text.len() > 1 << 20);
        let report = both_ways(&text, None);
        let rules: HashSet<&str> = report.findings.iter().map(|f| f.rule.as_str()).collect();
        for rule in ["ACC-1", "ACC-2", "ACC-3", "REC-2", "REC-4", "REC-6"] {
            assert!(rules.contains(rule), "{rule} missing from {rules:?}");
        }
        let with_claims = both_ways(&text, Some(&claims));
        assert!(with_claims.findings.len() > report.findings.len());
        assert!(with_claims.findings.iter().any(|f| f.rule == "REC-3"));
        // Evicted entries: the ledger starts later.
        let tail: String = text.lines().skip(100).map(|l| format!("{l}\n")).collect();
        let r = both_ways(&tail, None);
        assert!(
            r.notes.iter().any(|n| n.contains("incomplete")),
            "{:?}",
            r.notes
        );
    }

    #[test]
    fn the_lean_parse_gives_the_same_report_on_every_fixture() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/verify");
        let mut n = 0;
        for f in std::fs::read_dir(dir).unwrap() {
            let path = f.unwrap().path();
            if path.extension().is_some_and(|x| x == "jsonl") {
                let text = std::fs::read_to_string(&path).unwrap();
                both_ways(&text, None);
                let claims: Claims = serde_json::from_value(serde_json::json!({
                    "actions": [{"key": "k-1", "claim": "unknown"}, {"intent": {"to": "a"}, "claim": "failed"}],
                    "tasks": [{"task_id": "t-1", "claim": "cancelled"}],
                    "adopted": ["t-1"],
                }))
                .unwrap();
                both_ways(&text, Some(&claims));
                n += 1;
            }
        }
        assert!(n > 20, "{n} fixtures");
    }

    #[test]
    fn the_lean_parse_rejects_the_same_lines_with_the_same_message() {
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
            let e1 = parse_jsonl(&broken, "f.jsonl").unwrap_err();
            let Err(LeanError::Entry(e2)) = LeanLedger::parse(broken.as_bytes(), "f.jsonl") else {
                panic!("{to}: accepted");
            };
            let file = temp_file(broken.as_bytes());
            let Err(LeanError::Entry(e3)) = LeanLedger::read(&file, "f.jsonl") else {
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
            LeanLedger::parse(&bytes, "f.jsonl").err(),
            Some(LeanError::NotUtf8)
        ));
        let file = temp_file(&bytes);
        assert!(matches!(
            LeanLedger::read(&file, "f.jsonl").err(),
            Some(LeanError::NotUtf8)
        ));
    }

    #[test]
    fn lines_longer_than_a_piece_and_pieces_cut_anywhere_are_read_whole() {
        // Pieces are 64 KiB in tests: lines of 200 KiB span several, and the cuts fall in
        // every kind of place over a couple of MiB.
        let (text, _) = busy_ledger();
        let long = format!(
            r#"{{"seq":1,"service":"pay","disposition":"agent","event":"message","detail":{{"message_id":"m","text":"{}"}}}}"#,
            "x".repeat(200 << 10)
        );
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        lines.insert(3, long.clone());
        lines.insert(1000, long.replace(r#""seq":1"#, r#""seq":2"#));
        lines.push(long.replace(r#""seq":1"#, r#""seq":3"#));
        for sep in ["\n", "\r\n"] {
            for end in ["", sep] {
                both_ways(&(lines.join(sep) + end), None);
            }
        }
        both_ways("", None);
        both_ways("\n\n", None);
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
        let report = verify(&ledger, None);
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
        assert_eq!(both_ways(&text, None), report);
    }
}
