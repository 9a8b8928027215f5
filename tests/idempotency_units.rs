//! The idempotency key store, key index and fingerprints (`doubleagent::idempotency`): what a
//! key decides, what the store keeps and forgets, and how a body is fingerprinted.

use std::borrow::Cow;
use std::time::Duration;

use doubleagent::idempotency::*;
use serde_json::Value;

fn record(seq: u64, fp: &str, created: u64, completes: u64) -> KeyRecord {
    KeyRecord {
        fingerprint: Some(fp.into()),
        seq,
        created_at: Duration::from_secs(created),
        completes_at: Duration::from_secs(completes),
        response: StoredResponse {
            status: 201,
            headers: Cow::Borrowed(&[]),
            body: b"{}".to_vec(),
        },
    }
}

#[test]
fn honour_replays_conflicts_mismatches_and_expires() {
    let p = Preset::Stripe.policy();
    let mut s = KeyStore::default();
    let at = Duration::from_secs;
    assert_eq!(
        s.decide(&p, "pay", Some("k"), Some("a"), at(0)),
        Decision::Execute {
            after_expiry: false
        }
    );
    s.remember("pay", "k", record(1, "a", 0, 5));
    assert_eq!(
        s.decide(&p, "pay", Some("k"), Some("a"), at(1)),
        Decision::Conflict { of: 1 }
    );
    assert!(matches!(
        s.decide(&p, "pay", Some("k"), Some("a"), at(5)),
        Decision::Replay { of: 1, .. }
    ));
    assert_eq!(
        s.decide(&p, "pay", Some("k"), Some("b"), at(5)),
        Decision::Mismatch { of: 1 }
    );
    assert_eq!(
        s.decide(&p, "other", Some("k"), Some("b"), at(5)),
        Decision::Execute {
            after_expiry: false
        },
        "keys are scoped per service"
    );
    assert_eq!(
        s.decide(&p, "pay", Some("k"), Some("a"), at(24 * 3600)),
        Decision::Execute { after_expiry: true }
    );
}

#[test]
fn the_store_forgets_its_oldest_keys_beyond_its_bound() {
    let mut s = KeyStore::bounded(2);
    for (i, k) in ["a", "b", "c"].iter().enumerate() {
        s.remember("pay", k, record(i as u64 + 1, "f", i as u64, i as u64));
    }
    assert_eq!(s.len(), 2);
    assert!(s.get("pay", "a").is_none());
    assert!(s.get("pay", "c").is_some());
}

#[test]
fn a_key_remembered_again_keeps_one_record_and_its_new_place_in_the_order() {
    let mut s = KeyStore::bounded(3);
    s.remember("pay", "a", record(1, "f", 0, 0));
    s.remember("pay", "b", record(2, "f", 1, 1));
    // `a` again (a retry after its retention passed): its newer record counts once.
    s.remember("pay", "a", record(3, "f", 2, 2));
    assert_eq!(s.len(), 2);
    assert_eq!(s.get("pay", "a").map(|r| r.seq), Some(3));
    s.remember("pay", "c", record(4, "f", 3, 3));
    s.remember("pay", "d", record(5, "f", 4, 4));
    // The oldest record was `b`'s: `a` moved behind it when it was remembered again.
    assert_eq!(s.len(), 3);
    assert!(s.get("pay", "b").is_none());
    assert_eq!(s.get("pay", "a").map(|r| r.seq), Some(3));
    assert_eq!(s.get("pay", "d").map(|r| r.seq), Some(5));
}

#[test]
fn a_store_whose_keys_are_reused_over_and_over_stays_small_and_right() {
    let mut s = KeyStore::bounded(10);
    for i in 0..10_000u64 {
        let k = format!("k{}", i % 7);
        s.remember("pay", &k, record(i + 1, "f", i, i));
    }
    assert_eq!(s.len(), 7);
    assert!(s.slot_count() <= 2 * 7 + 64, "{} slots", s.slot_count());
    for i in 9_993..10_000u64 {
        let k = format!("k{}", i % 7);
        assert_eq!(s.get("pay", &k).map(|r| r.seq), Some(i + 1));
    }
    assert!(s.get("pay", "k7").is_none());
    assert!(s.get("bank", "k1").is_none(), "keys are per service");
    assert!(s.get("pay\u{1f}k", "1").is_none());
}

#[test]
fn a_turning_store_keeps_its_texts_exact_and_lets_old_chunks_go() {
    let mut s = KeyStore::bounded(1000);
    let body = |i: u64| {
        format!(
            "{{\"id\":\"act_{i}\",\"pad\":\"{}\"}}",
            "x".repeat((i % 97) as usize)
        )
        .into_bytes()
    };
    for i in 0..20_000u64 {
        let b = body(i);
        let fp = format!("{i:016x}");
        s.remember_parts(
            "pay",
            &format!("key-{i}"),
            Kept {
                // Some without a fingerprint, some with an empty one: not the same.
                fingerprint: match i % 3 {
                    0 => None,
                    1 => Some(""),
                    _ => Some(&fp),
                },
                seq: i + 1,
                created_at: Duration::from_secs(i),
                completes_at: Duration::from_secs(i),
                status: 201,
                headers: Cow::Borrowed(JSON_HEADERS),
                body: &b,
            },
        );
    }
    assert_eq!(s.len(), 1000);
    assert!(s.get("pay", "key-18999").is_none());
    for i in 19_000..20_000u64 {
        let r = s.get("pay", &format!("key-{i}")).expect("kept");
        assert_eq!(r.seq, i + 1);
        assert_eq!(r.response.body, body(i));
        let fp = format!("{i:016x}");
        let want = match i % 3 {
            0 => None,
            1 => Some(""),
            _ => Some(fp.as_str()),
        };
        assert_eq!(r.fingerprint.as_deref(), want);
    }
    // ~1000 records of ~100 bytes: the chunks before the oldest record's were let go.
    assert!(s.chunks().len() <= 2, "{} chunks", s.chunks().len());
    assert!(s.chunks().iter().all(|c| c.capacity() == TEXT_CHUNK));
    let small = {
        let mut k = KeyStore::default();
        k.remember("pay", "a", record(1, "f", 0, 0));
        k.chunks().iter().map(|c| c.capacity()).sum::<usize>()
    };
    assert_eq!(small, 4 << 10, "a store of one key holds 4 KB of text");
    // A body larger than a chunk gets one of its own, and reads back whole.
    let big = vec![b'7'; TEXT_CHUNK + 10];
    let mut r = record(30_000, "f", 30_000, 30_000);
    r.response.body = big.clone();
    s.remember("pay", "big", r);
    assert_eq!(s.get("pay", "big").map(|r| r.response.body), Some(big));
    assert_eq!(s.get("pay", "key-19999").map(|r| r.seq), Some(20_000));
}

#[test]
fn ignore_mode_and_required_keys() {
    let mut s = KeyStore::default();
    s.remember("pay", "k", record(1, "a", 0, 0));
    let ignore = Preset::None.policy();
    assert_eq!(
        s.decide(&ignore, "pay", Some("k"), Some("a"), Duration::ZERO),
        Decision::Execute {
            after_expiry: false
        }
    );
    let required = Policy {
        required: true,
        ..Preset::Ietf.policy()
    };
    assert_eq!(
        s.decide(&required, "pay", None, None, Duration::ZERO),
        Decision::Missing
    );
}

#[test]
fn a_body_fingerprint_hashes_the_canonical_json_text() {
    let v: Value = serde_json::from_str(r#"{"to":"x","amount":1,"n":[1.5,null,"é"]}"#).unwrap();
    assert_eq!(
        fingerprint(&Fingerprint::Body, b"", Some(&v)),
        Some(fingerprint_bytes(v.to_string().as_bytes()))
    );
}

#[test]
fn the_key_index_forgets_evicted_executions_only_when_they_pile_up() {
    let mut ix = KeyIndex::default();
    for seq in 1..=5000u64 {
        ix.insert("pay", &format!("k-{seq}"), seq);
    }
    ix.forget_before(1, 5000);
    assert_eq!(ix.len(), 5000, "an unbounded ledger keeps every key");
    ix.forget_before(4001, 1000);
    assert_eq!(ix.len(), 1000);
    assert_eq!(ix.get("pay", "k-4001"), Some(4001));
    assert_eq!(ix.get("pay", "k-4000"), None);
    assert_eq!(ix.get("bank", "k-4001"), None, "keys are per service");
    // Noted after a lookup folded the earlier ones in, and evicted before the next.
    for seq in 5001..=9000u64 {
        ix.insert("pay", &format!("k-{seq}"), seq);
    }
    ix.insert("pay", "k-4001", 9001);
    ix.forget_before(8001, 1000);
    assert_eq!(ix.len(), 1001);
    assert_eq!(ix.get("pay", "k-4001"), Some(9001), "the latest execution");
    assert_eq!(ix.get("pay", "k-8000"), None);
    assert_eq!(ix.get("pay", "k-8001"), Some(8001));
}

#[test]
fn fingerprints_are_fnv_1a_so_a_journal_from_an_older_build_still_matches() {
    // FNV-1a 64 of "a", the published test vector.
    assert_eq!(fingerprint_bytes(b"a"), "af63dc4c8601ec8c");
}

#[test]
fn fingerprints_ignore_key_order_but_not_values() {
    let a: Value = serde_json::from_str(r#"{"to":"x","amount":1}"#).unwrap();
    let b: Value = serde_json::from_str(r#"{ "amount":1, "to":"x" }"#).unwrap();
    let c: Value = serde_json::from_str(r#"{"to":"x","amount":2}"#).unwrap();
    let f = |v: &Value| fingerprint(&Fingerprint::Body, b"", Some(v));
    assert_eq!(f(&a), f(&b));
    assert_ne!(f(&a), f(&c));
    let only_to = Fingerprint::Pointers(vec!["/to".into()]);
    assert_eq!(
        fingerprint(&only_to, b"", Some(&a)),
        fingerprint(&only_to, b"", Some(&c))
    );
    assert_eq!(fingerprint(&Fingerprint::None, b"x", None), None);
}
