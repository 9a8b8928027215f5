//! The fault suite's kill cycles (issue 30 item 7, ACC-1): the real binary under concurrent
//! load with `--journal --fsync always`, SIGKILLed at a random (seeded) moment, restarted on the
//! same journal, many times over. After every restart each request a client saw acknowledged is
//! in the ledger with the action id it was told, a same-key retry of it replays instead of
//! executing again, and a key whose request was in flight at the kill has executed at most once
//! (exactly once after its retry).
//!
//! `DOUBLEAGENT_KILL_SEED` and `DOUBLEAGENT_KILL_CYCLES` change the seed (default 30) and the
//! number of cycles (default 20); a failure names the seed and cycle that found it.

mod common;

use common::*;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

const WORKERS: usize = 4;

/// splitmix64: a seeded sequence without a dependency (the moments only need to vary and be
/// reproducible from the seed, not to be good randomness).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn env_or(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn serve(scenario: &Path, journal: &Path) -> Da {
    Da::start_args(&[
        scenario.to_str().unwrap(),
        "--journal",
        journal.to_str().unwrap(),
        "--fsync",
        "always",
    ])
}

/// One transfer; `key` adds an Idempotency-Key. `to` is unique per request, so no two requests
/// share an intent.
fn transfer_to(url: &str, to: &str, key: Option<&str>) -> std::io::Result<Resp> {
    let body = format!("{{\"to\":\"{to}\",\"amount\":1}}");
    let mut headers = vec![("content-type", "application/json")];
    if let Some(k) = key {
        headers.push(("Idempotency-Key", k));
    }
    request(
        url,
        "POST",
        "/payments/v1/transfers",
        &headers,
        body.as_bytes(),
    )
}

/// What one worker saw: acknowledged (to, key, action id), and the keyed request in flight when
/// the server died (no answer: it may or may not have been recorded).
#[derive(Default)]
struct Seen {
    acked: Vec<(String, Option<String>, String)>,
    in_flight: Option<(String, String)>,
}

/// Send transfers (every other one keyed) until the server stops answering.
fn worker(url: String, cycle: u64, w: usize, stop: Arc<AtomicBool>) -> Seen {
    let mut seen = Seen::default();
    for i in 0.. {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let to = format!("c{cycle}-w{w}-{i}");
        let key = (i % 2 == 0).then(|| format!("key-{to}"));
        match transfer_to(&url, &to, key.as_deref()) {
            Ok(r) if (200..300).contains(&r.status) => {
                let id = r.json()["id"].as_str().unwrap().to_string();
                seen.acked.push((to, key, id));
            }
            Ok(r) => panic!("{to}: unexpected {}: {}", r.status, r.text()),
            Err(_) => {
                seen.in_flight = key.map(|k| (to, k));
                break;
            }
        }
    }
    seen
}

/// Executed entries per idempotency key, and every action id the ledger holds.
fn executions(ledger: &[serde_json::Value]) -> (HashMap<String, usize>, HashSet<String>) {
    let mut per_key = HashMap::new();
    let mut ids = HashSet::new();
    for e in ledger {
        if e["disposition"] == "executed" {
            if let Some(k) = e["idempotency_key"].as_str() {
                *per_key.entry(k.to_string()).or_insert(0) += 1;
            }
        }
        if let Some(id) = e["action_id"].as_str() {
            ids.insert(id.to_string());
        }
    }
    (per_key, ids)
}

/// ACC-1 across SIGKILL: nothing acknowledged is lost, nothing is executed twice.
#[test]
fn acknowledged_requests_survive_repeated_sigkill_and_replay_by_key_acc_1() {
    let seed = env_or("DOUBLEAGENT_KILL_SEED", 30);
    let cycles = env_or("DOUBLEAGENT_KILL_CYCLES", 20);
    let mut rng = Rng(seed);
    let scenario = temp_file(
        "s.toml",
        &payments("idempotency = { preset = \"stripe\" }", ""),
    );
    let journal = scenario.with_file_name("journal.jsonl");
    // Every acknowledged (to, key, id) so far, across all cycles.
    let mut acked: Vec<(String, Option<String>, String)> = Vec::new();
    let mut in_flight_keys = 0;
    // The ledger's last seq at the end of the previous cycle: where this cycle's requests begin.
    let mut last_seq = 0;
    let mut da = serve(&scenario, &journal);
    for cycle in 0..cycles {
        let at = format!("seed {seed}, cycle {cycle}");
        let stop = Arc::new(AtomicBool::new(false));
        let workers: Vec<_> = (0..WORKERS)
            .map(|w| {
                let (url, stop) = (da.url.clone(), stop.clone());
                std::thread::spawn(move || worker(url, cycle, w, stop))
            })
            .collect();
        // The moment: after a random number of this cycle's requests were recorded, plus a random
        // fraction of a request's time, so the kill lands before, during and after writes.
        da.wait_for(
            &format!("service=payments&since={last_seq}"),
            1 + rng.below(60) as usize,
        );
        std::thread::sleep(Duration::from_micros(rng.below(5_000)));
        da.child.kill().unwrap(); // SIGKILL
        let _ = da.child.wait();
        stop.store(true, Ordering::Relaxed);
        let mut fresh = Vec::new();
        let mut in_flight = Vec::new();
        for w in workers {
            let seen = w.join().unwrap();
            fresh.extend(seen.acked);
            in_flight.extend(seen.in_flight);
        }

        da = serve(&scenario, &journal);
        acked.extend(fresh.iter().cloned());
        let ledger = da.ledger();
        let (per_key, ids) = executions(&ledger);
        for (to, key, id) in &acked {
            assert!(
                ids.contains(id),
                "{at}: {id} ({to}, key {key:?}) was acknowledged, then lost"
            );
            if let Some(k) = key {
                assert_eq!(per_key.get(k), Some(&1), "{at}: key {k} executed twice");
            }
        }
        let seqs: HashSet<u64> = ledger.iter().filter_map(|e| e["seq"].as_u64()).collect();
        assert_eq!(seqs.len(), ledger.len(), "{at}: a seq was handed out twice");
        // This cycle's acknowledged keys replay after the restart: same id, nothing executed.
        for (to, key, id) in fresh.iter().filter(|(_, k, _)| k.is_some()) {
            let r = transfer_to(&da.url, to, key.as_deref()).unwrap();
            assert_eq!(r.status, 201, "{at}: {to}: {}", r.text());
            assert_eq!(
                r.header("Idempotent-Replayed"),
                Some("true"),
                "{at}: {to} executed again: {}",
                r.text()
            );
            assert_eq!(r.json()["id"], id.as_str(), "{at}: {to}");
        }
        // A key in flight at the kill ran at most once; its retry completes it exactly once.
        for (to, key) in &in_flight {
            assert!(
                per_key.get(key).copied().unwrap_or(0) <= 1,
                "{at}: in-flight {key} executed twice"
            );
            let r = transfer_to(&da.url, to, Some(key)).unwrap();
            assert_eq!(r.status, 201, "{at}: {to}: {}", r.text());
            acked.push((
                to.clone(),
                Some(key.clone()),
                r.json()["id"].as_str().unwrap().into(),
            ));
        }
        in_flight_keys += in_flight.len();
        let ledger = da.ledger();
        last_seq = ledger.last().and_then(|e| e["seq"].as_u64()).unwrap_or(0);
        let (per_key, _) = executions(&ledger);
        for (to, key) in &in_flight {
            assert_eq!(per_key.get(key), Some(&1), "{at}: retry of {to}");
        }
    }
    eprintln!(
        "seed {seed}: {cycles} SIGKILL cycles, {} acknowledged requests, {} keys in flight at a kill, 0 lost, 0 executed twice",
        acked.len(),
        in_flight_keys
    );
    assert!(
        acked.len() as u64 >= cycles,
        "too little load to mean anything"
    );
}
