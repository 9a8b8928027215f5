//! Admission order on a real clock: many clients at once with one key.

use std::sync::Arc;
use std::time::Duration;

use doubleagent::ledger::{Filter, Record};
use doubleagent::service::{admit, Request};
use doubleagent::world::World;
use doubleagent::{Disposition, Scenario};
use hyper::HeaderMap;
use serde_json::Value;

const SCENARIO: &str = r#"
name = "order"
seed = 1
clock = "real"

[services.pay]
idempotency = { preset = "stripe", retention = "24h" }

[[services.pay.routes]]
name = "create-transfer"
method = "POST"
path = "/v1/transfers"
kind = "action"
fates = ["respond"]
respond = { status = 201, json = { id = "{{action.id}}" } }
"#;

fn transfer() -> Request<'static> {
    let mut headers = HeaderMap::new();
    headers.insert("content-type", "application/json".parse().unwrap());
    headers.insert("idempotency-key", "same".parse().unwrap());
    Request {
        service: "pay".into(),
        method: "POST".into(),
        path: "/v1/transfers".into(),
        headers,
        body: r#"{"to":"acct-9","amount":100}"#.into(),
        ..Request::default()
    }
}

fn world() -> Arc<World> {
    let scenario = Scenario::from_toml(SCENARIO, "order.toml").unwrap();
    Arc::new(World::new(Arc::new(scenario), None))
}

/// Entries in seq order are in time order too.
fn assert_times_follow_seqs(entries: &[doubleagent::Entry]) {
    // RFC 3339 with milliseconds, all on one day: text order is time order.
    for pair in entries.windows(2) {
        assert!(
            pair[0].received_at <= pair[1].received_at,
            "seq {} received at {}, after seq {} at {}",
            pair[0].seq,
            pair[0].received_at,
            pair[1].seq,
            pair[1].received_at
        );
    }
}

/// REC-4: a retry with the key of an action that has completed is a replay, whoever raced whom
/// to the world's lock. A request's time is read when it is admitted, so the ledger's times
/// follow its seqs and no request admitted after the execution sees it still in progress (409).
#[test]
fn rec4_concurrent_retries_of_a_completed_action_all_replay_and_times_follow_seqs() {
    let world = world();
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let world = world.clone();
            std::thread::spawn(move || {
                (0..2_000)
                    .map(|_| admit(&world, transfer()).response.status)
                    .filter(|s| *s != 201)
                    .count()
            })
        })
        .collect();
    let refused: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
    assert_eq!(refused, 0, "requests answered other than 201");
    let entries = world.entries(&Filter::default());
    assert_eq!(entries.len(), 16_000);
    let executed = entries
        .iter()
        .filter(|e| e.disposition == Disposition::Executed)
        .count();
    assert_eq!(executed, 1);
    assert_times_follow_seqs(&entries);
}

/// The same for entries of the world's own (an agent's step, an MCP server's task poll) appended
/// among admissions: their time is read when they are appended, so times follow seqs across both
/// (the verifier orders what happened by them: ACC-2, REC-3).
#[test]
fn acc2_agent_entries_among_admissions_are_timed_in_seq_order() {
    let world = world();
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let world = world.clone();
            std::thread::spawn(move || {
                for _ in 0..2_000 {
                    match t % 2 {
                        0 => drop(admit(&world, transfer())),
                        _ => drop(world.append_now(Record::agent_event(
                            "worker",
                            "message",
                            Duration::ZERO,
                            Value::Null,
                        ))),
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let entries = world.entries(&Filter::default());
    assert_eq!(entries.len(), 16_000);
    assert_times_follow_seqs(&entries);
}
