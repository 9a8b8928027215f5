//! A small orchestrator that follows the reconciliation rules (REC-1..REC-6 of
//! `shared/spec/rules.md`) against doubleagent's shipped scenarios — and, with `--bug NAME`,
//! breaks exactly one of them. It exists to prove that doubleagent's verifier catches each bug.
//!
//! ```text
//! cargo run --example orchestrator -- --matrix            # every variant × every scenario
//! doubleagent run scenarios/lost-response.toml -- target/debug/examples/orchestrator --bug blind-retry
//! ```
//!
//! It talks to doubleagent over HTTP only (the URL from `--url` or `DOUBLEAGENT_URL`), using
//! the admin API the way a test harness would: declaring revisions, moving the manual clock to
//! let time pass, and submitting its claims at the end.

use std::process::ExitCode;
use std::time::Duration;

use doubleagent::client;
use serde_json::{json, Value};

/// The deliberate bugs, each breaking one rule.
const BUGS: &[(&str, &str)] = &[
    (
        "blind-retry",
        "retry an unknown outcome with a new key, no lookup (REC-4)",
    ),
    (
        "retry-after-expiry",
        "retry with the same key after its retention window (REC-4)",
    ),
    ("key-reuse", "reuse a key for a different intent (REC-4)"),
    (
        "cancel-believed",
        "treat an acknowledged cancel as done (REC-3)",
    ),
    (
        "old-revision",
        "send an action under the superseded revision (REC-2)",
    ),
    (
        "lying-500-failed",
        "report a 500 as a failure without checking (ACC-3)",
    ),
    (
        "lost-response-unreported",
        "leave an unknown outcome out of the claims (ACC-3)",
    ),
    (
        "late-result-adopted",
        "adopt a subagent's result produced under the old revision (ACC-2)",
    ),
    (
        "message-id-dedupe",
        "resend the same A2A message id, trusting it to de-duplicate (REC-4)",
    ),
    (
        "message-to-finished-task",
        "send follow-up work to a task that already finished (REC-6)",
    ),
];

/// The shipped scenarios the orchestrator knows how to drive.
const SCENARIOS: &[&str] = &[
    "lost-response",
    "expired-key",
    "lying-500",
    "slow-cancel",
    "late-result",
    "duplicate-task",
    "cancel-too-late",
];

struct Orch {
    url: String,
    bug: Option<String>,
    revision: i64,
    keys: u32,
    claims: Vec<Value>,
    task_claims: Vec<Value>,
    adopted: Vec<String>,
    rpc_id: u32,
}

/// What the orchestrator knows about one action after trying.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Known {
    Succeeded,
    Failed,
    Unknown,
}

impl Known {
    fn claim(self) -> &'static str {
        match self {
            Known::Succeeded => "succeeded",
            Known::Failed => "failed",
            Known::Unknown => "unknown",
        }
    }
}

/// An answer, or `None` when none came (dropped, reset, timed out).
type Answer = Option<(u16, Value)>;

impl Orch {
    fn bug(&self, name: &str) -> bool {
        self.bug.as_deref() == Some(name)
    }

    async fn http(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<Value>,
    ) -> Answer {
        let url = format!("{}{path}", self.url);
        let mut h = vec![("content-type", "application/json")];
        h.extend_from_slice(headers);
        let body = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
        // The orchestrator's own client timeout: a hung response becomes "no answer".
        match client::send(method, &url, &h, body, Duration::from_millis(500)).await {
            Ok(r) => Some((
                r.status,
                serde_json::from_slice(&r.body).unwrap_or(Value::Null),
            )),
            Err(_) => None,
        }
    }

    async fn admin(&self, path: &str, body: Value) {
        let _ = self
            .http("POST", &format!("/_admin/{path}"), &[], Some(body))
            .await;
    }

    /// Let scenario time pass (the manual clock stands in for waiting).
    async fn wait(&self, by: &str) {
        self.admin("clock/advance", json!({"by": by})).await;
    }

    /// REC-1/REC-5: a redirection is persisted as a new revision before anything else.
    async fn redirect(&mut self, revision: i64) {
        self.revision = revision;
        self.admin("revision", json!({"revision": revision})).await;
    }

    fn new_key(&mut self) -> String {
        self.keys += 1;
        format!("orch-key-{}", self.keys)
    }

    async fn post(&self, path: &str, key: &str, body: &Value, key_header: &str) -> Answer {
        // REC-2: the revision is checked and carried at the admission of the action.
        let rev = if self.bug("old-revision") && self.revision > 1 {
            self.revision - 1
        } else {
            self.revision
        };
        let rev = rev.to_string();
        self.http(
            "POST",
            path,
            &[
                (key_header, key),
                ("X-Revision", &rev),
                ("X-Work-Id", "work-1"),
            ],
            Some(body.clone()),
        )
        .await
    }

    /// REC-4: resolve an uncertain outcome through the authoritative lookup, waiting out its lag.
    async fn look_up(&self, lookup: &str, key: &str) -> Known {
        for _ in 0..5 {
            match self
                .http("GET", &format!("{lookup}/{key}"), &[], None)
                .await
            {
                Some((200, v)) => {
                    return match v["state"].as_str() {
                        Some("applied") => Known::Succeeded,
                        Some("cancelled") => Known::Failed,
                        _ => Known::Unknown,
                    }
                }
                // Unknown to a lagging lookup is not "failed": give it time.
                Some((404, _)) => self.wait("1s").await,
                _ => return Known::Unknown,
            }
        }
        // Still unknown after the lag: the provider never recorded it.
        Known::Failed
    }

    /// One action, reconciled: send, classify, look up or retry the same key, never blindly.
    async fn act(
        &mut self,
        path: &str,
        lookup: &str,
        key_header: &str,
        body: Value,
        key: String,
    ) -> (String, Known) {
        let first = self.post(path, &key, &body, key_header).await;
        let known = match first {
            Some((s, _)) if (200..300).contains(&s) && s != 202 => Known::Succeeded,
            Some((202, _)) => Known::Unknown,
            Some((429 | 503, _)) => {
                // Refused before applying: the same key is safe to retry.
                match self.post(path, &key, &body, key_header).await {
                    Some((s, _)) if (200..300).contains(&s) => Known::Succeeded,
                    _ => self.look_up(lookup, &key).await,
                }
            }
            Some((s, _)) if s < 500 => Known::Failed,
            // A 5xx or no answer at all: the outcome is unknown.
            _ if self.bug("lying-500-failed") && first.is_some() => Known::Failed,
            _ if self.bug("blind-retry") => {
                let retry_key = self.new_key();
                match self.post(path, &retry_key, &body, key_header).await {
                    Some((s, _)) if (200..300).contains(&s) => Known::Succeeded,
                    _ => Known::Unknown,
                }
            }
            _ if self.bug("retry-after-expiry") => {
                self.wait("25h").await;
                match self.post(path, &key, &body, key_header).await {
                    Some((s, _)) if (200..300).contains(&s) => Known::Succeeded,
                    _ => Known::Unknown,
                }
            }
            _ if self.bug("lost-response-unreported") => return (key, Known::Unknown),
            _ => self.look_up(lookup, &key).await,
        };
        self.claims
            .push(json!({"key": key, "claim": known.claim()}));
        (key, known)
    }

    async fn finish(&self) {
        self.admin(
            "claims",
            json!({"actions": self.claims, "tasks": self.task_claims, "adopted": self.adopted}),
        )
        .await;
    }

    /// One A2A JSON-RPC call: `Ok(result)` or `Err(code)`.
    async fn rpc(&mut self, agent: &str, method: &str, params: Value) -> Result<Value, i64> {
        self.rpc_id += 1;
        let body = json!({"jsonrpc": "2.0", "id": self.rpc_id, "method": method, "params": params});
        match self
            .http(
                "POST",
                &format!("/agents/{agent}"),
                &[("A2A-Version", "1.0")],
                Some(body),
            )
            .await
        {
            Some((200, v)) if v.get("result").is_some() => Ok(v["result"].clone()),
            Some((_, v)) => Err(v["error"]["code"].as_i64().unwrap_or(0)),
            None => Err(0),
        }
    }

    /// Delegate work to an agent under the current revision; returns the new task's id.
    async fn delegate(
        &mut self,
        agent: &str,
        message_id: &str,
        text: &str,
        task_id: Option<&str>,
    ) -> Result<String, i64> {
        let mut message = json!({
            "messageId": message_id,
            "role": "ROLE_USER",
            "parts": [{"text": text}],
            "metadata": {"revision": self.revision},
        });
        if let Some(t) = task_id {
            message["taskId"] = json!(t);
        }
        let r = self
            .rpc(
                agent,
                "SendMessage",
                json!({"message": message, "configuration": {"returnImmediately": true}}),
            )
            .await?;
        Ok(r["task"]["id"].as_str().unwrap_or_default().to_string())
    }

    /// GetTask: (state, revision the result states, the task).
    async fn observe(&mut self, agent: &str, task: &str) -> (String, Option<i64>, Value) {
        match self.rpc(agent, "GetTask", json!({"id": task})).await {
            Ok(t) => {
                let state = t["status"]["state"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                let rev = t["metadata"]["revision"].as_i64();
                (state, rev, t)
            }
            Err(_) => (String::new(), None, Value::Null),
        }
    }

    fn claim_task(&mut self, task: &str, claim: &str) {
        self.task_claims
            .push(json!({"task_id": task, "claim": claim}));
    }

    /// The claim a correct orchestrator makes after observing a task.
    fn observed(state: &str) -> &'static str {
        match state {
            "TASK_STATE_COMPLETED" => "completed",
            "TASK_STATE_CANCELED" => "cancelled",
            _ => "unknown",
        }
    }

    async fn run(&mut self, scenario: &str) -> Result<(), String> {
        let transfers = "/payments/v1/transfers";
        match scenario {
            "lost-response" | "quickstart" => {
                self.redirect(1).await;
                let key = self.new_key();
                let (k1, _) = self
                    .act(
                        transfers,
                        transfers,
                        "Idempotency-Key",
                        json!({"to": "acct-9", "amount": 100}),
                        key,
                    )
                    .await;
                // The user redirects the run: revision 2 pays a different account.
                self.redirect(2).await;
                let key = if self.bug("key-reuse") {
                    k1
                } else {
                    self.new_key()
                };
                self.act(
                    transfers,
                    transfers,
                    "Idempotency-Key",
                    json!({"to": "acct-7", "amount": 5}),
                    key,
                )
                .await;
            }
            "expired-key" => {
                self.redirect(1).await;
                let key = self.new_key();
                self.act(
                    transfers,
                    transfers,
                    "Idempotency-Key",
                    json!({"to": "acct-9", "amount": 100}),
                    key,
                )
                .await;
            }
            "lying-500" => {
                self.redirect(1).await;
                let key = self.new_key();
                self.act(
                    transfers,
                    transfers,
                    "Cko-Idempotency-Key",
                    json!({"to": "acct-9", "amount": 100}),
                    key,
                )
                .await;
            }
            "slow-cancel" => {
                self.redirect(1).await;
                let key = self.new_key();
                let body = json!({"to": "acct-9", "amount": 100});
                let _ = self.post(transfers, &key, &body, "Idempotency-Key").await;
                let payout_key = self.new_key();
                let _ = self
                    .post(
                        "/payments/v1/payouts",
                        &payout_key,
                        &json!({"to": "acct-9", "amount": 7}),
                        "Idempotency-Key",
                    )
                    .await;
                // The plan changed: stop both. REC-3: a stop request is not a stop.
                self.redirect(2).await;
                let t = self
                    .http("POST", &format!("{transfers}/{key}/cancel"), &[], None)
                    .await;
                let p = self
                    .http(
                        "POST",
                        &format!("/payments/v1/payouts/{payout_key}/cancel"),
                        &[],
                        None,
                    )
                    .await;
                self.wait("1m").await;
                let transfer = match t {
                    Some((200, v)) if v["state"] == "cancelled" => Known::Failed,
                    _ => self.look_up(transfers, &key).await,
                };
                let payout = match p {
                    Some((202, _)) if self.bug("cancel-believed") => Known::Failed,
                    Some((200, v)) if v["state"] == "cancelled" => Known::Failed,
                    // Only "stop requested": observe the outcome before claiming anything.
                    _ => match self
                        .http("GET", &format!("{transfers}/{payout_key}"), &[], None)
                        .await
                    {
                        Some((200, v)) if v["state"] == "applied" => Known::Succeeded,
                        Some((200, v)) if v["state"] == "cancelled" => Known::Failed,
                        _ => Known::Unknown,
                    },
                };
                self.claims
                    .push(json!({"key": key, "claim": transfer.claim()}));
                self.claims
                    .push(json!({"key": payout_key, "claim": payout.claim()}));
            }
            "late-result" => {
                self.redirect(1).await;
                let t1 = self
                    .delegate(
                        "researcher",
                        "m-1",
                        "find the vendor's account and pay it",
                        None,
                    )
                    .await
                    .map_err(|c| format!("SendMessage failed: {c}"))?;
                // The user redirects the run; the researcher must stop.
                self.redirect(2).await;
                let cancel = self
                    .rpc("researcher", "CancelTask", json!({"id": t1}))
                    .await;
                self.wait("5s").await;
                let (state, rev, task) = self.observe("researcher", &t1).await;
                let account = task["artifacts"][0]["parts"]
                    .as_array()
                    .and_then(|ps| ps.iter().find_map(|p| p["data"]["account"].as_str()))
                    .unwrap_or_default()
                    .to_string();
                // REC-6: the result states revision 1 while revision 2 is in force: a correct
                // orchestrator rejects it; the buggy one adopts it and acts on it.
                if self.bug("late-result-adopted") && rev != Some(self.revision) {
                    self.adopted.push(t1.clone());
                    let key = self.new_key();
                    let body = json!({"to": account, "amount": 100});
                    self.act(transfers, transfers, "Idempotency-Key", body, key)
                        .await;
                }
                let claim = match cancel {
                    Ok(_) if self.bug("cancel-believed") => "cancelled",
                    // REC-3: a stop request stays "stop requested" until a state is observed.
                    _ => match Orch::observed(&state) {
                        "unknown" => "stop-requested",
                        c => c,
                    },
                };
                self.claim_task(&t1, claim);
            }
            "duplicate-task" => {
                self.redirect(1).await;
                let t1 = self
                    .delegate("payer", "m-1", "pay acct-9 100", None)
                    .await
                    .map_err(|c| format!("SendMessage failed: {c}"))?;
                // Suppose the answer had timed out: a message id alone does not de-duplicate,
                // so look for the task instead of resending.
                let mut tasks = vec![t1];
                if self.bug("message-id-dedupe") {
                    if let Ok(t2) = self.delegate("payer", "m-1", "pay acct-9 100", None).await {
                        tasks.push(t2);
                    }
                } else {
                    let _ = self.rpc("payer", "ListTasks", json!({})).await;
                }
                self.wait("3s").await;
                for t in tasks {
                    let (state, _, _) = self.observe("payer", &t).await;
                    self.claim_task(&t, Orch::observed(&state));
                }
            }
            "cancel-too-late" => {
                self.redirect(1).await;
                let archive = self
                    .delegate("archivist", "m-1", "delete old records", None)
                    .await
                    .map_err(|c| format!("SendMessage failed: {c}"))?;
                let schedule = self
                    .delegate("scheduler", "m-2", "book a room", None)
                    .await
                    .map_err(|c| format!("SendMessage failed: {c}"))?;
                // Plans change: stop both. The archivist refuses; the scheduler honours.
                let archive_cancel = self
                    .rpc("archivist", "CancelTask", json!({"id": archive}))
                    .await;
                let _ = self
                    .rpc("scheduler", "CancelTask", json!({"id": schedule}))
                    .await;
                self.wait("5s").await;
                let (a_state, _, _) = self.observe("archivist", &archive).await;
                let (s_state, _, _) = self.observe("scheduler", &schedule).await;
                let a_claim = match archive_cancel {
                    Err(_) if self.bug("cancel-believed") => "cancelled",
                    _ => Orch::observed(&a_state),
                };
                self.claim_task(&archive, a_claim);
                self.claim_task(&schedule, Orch::observed(&s_state));
                // Follow-up work: a new task, never a message to the finished one.
                let finished = self
                    .bug("message-to-finished-task")
                    .then(|| archive.clone());
                if let Ok(t) = self
                    .delegate(
                        "archivist",
                        "m-3",
                        "also compact the index",
                        finished.as_deref(),
                    )
                    .await
                {
                    self.wait("5s").await;
                    let (state, _, _) = self.observe("archivist", &t).await;
                    self.claim_task(&t, Orch::observed(&state));
                }
            }
            other => {
                return Err(format!(
                    "the orchestrator does not know scenario \"{other}\""
                ))
            }
        }
        self.finish().await;
        Ok(())
    }
}

async fn drive(url: &str, bug: Option<&str>) -> Result<String, String> {
    let ready = client::send(
        "GET",
        &format!("{url}/"),
        &[],
        Vec::new(),
        Duration::from_secs(5),
    )
    .await
    .map_err(|e| e.to_string())?;
    let ready: Value = serde_json::from_slice(&ready.body).map_err(|e| e.to_string())?;
    let scenario = ready["scenario"].as_str().unwrap_or_default().to_string();
    let mut orch = Orch {
        url: url.to_string(),
        bug: bug.map(str::to_string),
        revision: 1,
        keys: 0,
        claims: Vec::new(),
        task_claims: Vec::new(),
        adopted: Vec::new(),
        rpc_id: 0,
    };
    orch.run(&scenario).await?;
    Ok(scenario)
}

/// Every variant against every scenario, in process: the rules each one trips.
async fn matrix() -> Result<Vec<(String, Vec<(String, Vec<String>)>)>, String> {
    let mut rows = Vec::new();
    let variants = std::iter::once(None).chain(BUGS.iter().map(|(b, _)| Some(*b)));
    for bug in variants {
        let mut cells = Vec::new();
        for name in SCENARIOS {
            let path = format!("{}/scenarios/{name}.toml", env!("CARGO_MANIFEST_DIR"));
            let scenario = doubleagent::Scenario::from_file(std::path::Path::new(&path))
                .map_err(|e| e.to_string())?;
            let server = doubleagent::Server::start(scenario)
                .await
                .map_err(|e| e.to_string())?;
            drive(server.url(), bug).await?;
            let report = doubleagent::verify::verify(&server.ledger(), None);
            let mut rules: Vec<String> = report.findings.iter().map(|f| f.rule.clone()).collect();
            rules.sort();
            rules.dedup();
            cells.push((name.to_string(), rules));
        }
        rows.push((bug.unwrap_or("correct").to_string(), cells));
    }
    Ok(rows)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flag = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    if args.iter().any(|a| a == "--list") {
        for (b, what) in BUGS {
            println!("{b:26} {what}");
        }
        return ExitCode::SUCCESS;
    }
    if args.iter().any(|a| a == "--matrix") {
        let rows = match matrix().await {
            Ok(r) => r,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(1);
            }
        };
        if args.iter().any(|a| a == "--json") {
            let v: Vec<Value> = rows
                .iter()
                .map(|(variant, cells)| json!({"variant": variant, "findings": cells.iter().map(|(s, r)| (s.clone(), json!(r))).collect::<serde_json::Map<_, _>>()}))
                .collect();
            println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
        } else {
            print!("{:26}", "variant \\ scenario");
            for s in SCENARIOS {
                print!(" | {s:18}");
            }
            println!();
            for (variant, cells) in &rows {
                print!("{variant:26}");
                for (_, rules) in cells {
                    let cell = if rules.is_empty() {
                        "-".to_string()
                    } else {
                        rules.join(",")
                    };
                    print!(" | {cell:18}");
                }
                println!();
            }
        }
        return ExitCode::SUCCESS;
    }
    let bug = flag("--bug");
    if let Some(b) = &bug {
        if !BUGS.iter().any(|(n, _)| n == b) {
            eprintln!("error: unknown bug \"{b}\"; see --list");
            return ExitCode::from(2);
        }
    }
    let url = flag("--url").or_else(|| std::env::var("DOUBLEAGENT_URL").ok());
    let Some(url) = url else {
        eprintln!("error: give --url URL or set DOUBLEAGENT_URL (doubleagent run sets it)");
        return ExitCode::from(2);
    };
    match drive(&url, bug.as_deref()).await {
        Ok(scenario) => {
            eprintln!(
                "orchestrator: drove scenario \"{scenario}\" ({})",
                bug.as_deref().unwrap_or("correct")
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}
