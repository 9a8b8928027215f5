//! The ledger (`doubleagent::ledger`): record states and views, eviction, filters and updates,
//! and the in-memory encoding round-tripping every field.

use std::time::Duration;

use serde_json::{json, Value};

use doubleagent::clock::{Clock, ClockKind};
use doubleagent::fate::Fate;
use doubleagent::ledger::*;

#[test]
fn action_ids_are_act_and_the_seq() {
    for seq in [0, 1, 9, 10, 12345, u64::MAX] {
        assert_eq!(action_id(seq), format!("act_{seq}"));
        assert_eq!(parse_action_id(&action_id(seq)), Some(seq));
    }
}

fn action(applies_at: Option<u64>, cancelled_at: Option<u64>) -> Record {
    Record {
        seq: 1,
        service: "pay".into(),
        route: Some("create".into()),
        method: "POST".into(),
        path: "/v1/t".into(),
        received_at: Duration::from_secs(1),
        disposition: Disposition::Executed,
        fate: Some(Fate::ApplyLater(Duration::from_secs(4))),
        applies_at: applies_at.map(Duration::from_secs),
        cancelled_at: cancelled_at.map(Duration::from_secs),
        response: ResponsePlan {
            delivery: Delivery::Sent,
            status: Some(202),
            at: Some(Duration::from_secs(1)),
        },
        ..Record::default()
    }
}

#[test]
fn effect_state_is_derived_from_time() {
    let s = |secs| Duration::from_secs(secs);
    let r = action(Some(5), None);
    assert_eq!(r.state_at(s(0)), None, "not received yet");
    assert_eq!(r.state_at(s(1)), Some(ActionState::Pending));
    assert_eq!(r.state_at(s(5)), Some(ActionState::Applied));
    let c = action(Some(5), Some(3));
    assert_eq!(c.state_at(s(2)), Some(ActionState::Pending));
    assert_eq!(c.state_at(s(9)), Some(ActionState::Cancelled));
    let late_cancel = action(Some(5), Some(7));
    assert_eq!(late_cancel.state_at(s(9)), Some(ActionState::Applied));
    assert_eq!(
        action(None, None).state_at(s(9)),
        None,
        "never applied: unknown"
    );
}

#[test]
fn spellings_match_the_serialized_form() {
    for d in [
        Disposition::Executed,
        Disposition::MissingKey,
        Disposition::TooLarge,
        Disposition::Declaration,
    ] {
        assert_eq!(serde_json::to_value(d).unwrap(), d.as_str());
    }
    for d in [Delivery::Sent, Delivery::Hung, Delivery::Pending] {
        assert_eq!(serde_json::to_value(d).unwrap(), d.as_str());
    }
}

#[test]
fn a_bounded_ledger_evicts_the_oldest_and_counts_them() {
    let mut l = Ledger::bounded(Some(2));
    for _ in 0..5 {
        l.append(action(Some(1), None));
    }
    assert_eq!(l.len(), 2);
    assert_eq!(l.evicted(), 3);
    assert!(l.get(3).is_none());
    assert_eq!(l.get(4).map(|r| r.seq), Some(4));
    assert_eq!(l.next_seq(), 6);
}

#[tokio::test]
async fn view_reports_pending_delivery_until_its_time() {
    let clock = Clock::new(ClockKind::Manual);
    let mut r = action(Some(1), None);
    r.response.at = Some(Duration::from_secs(3));
    assert_eq!(r.view(&clock).response.delivery, Delivery::Pending);
    clock.advance(Duration::from_secs(3)).await.unwrap();
    let v = r.view(&clock);
    assert_eq!(v.response.delivery, Delivery::Sent);
    assert_eq!(v.response.status, Some(202));
    assert!(v.applied);
    assert_eq!(v.action_id.as_deref(), Some("act_1"));
}

/// Every field of `r` set to something other than its default.
fn full(seq: u64) -> Record {
    Record {
        seq,
        service: "pay".into(),
        route: Some("create".into()),
        method: "POST".into(),
        path: format!("/v1/t/{seq}"),
        received_at: Duration::new(12, 345_678_901),
        idempotency_key: Some(format!("k-{seq}")),
        fingerprint: Some("00ff00ff00ff00ff".into()),
        intent: Some(json!({"/to": "a", "/n": seq}).into()),
        work_id: Some("w".into()),
        revision: Some(doubleagent::revision::Revision::Number(2)),
        body: json!({"to": "a", "n": seq, "f": 1.5, "neg": -3, "big": u64::MAX, "l": [null, true]})
            .into(),
        body_truncated: true,
        raw_body: None,
        object_id: None,
        disposition: Disposition::Replayed,
        replay_of: Some(0),
        executed_after_expiry: true,
        fate: Some("apply-later:2s".parse().unwrap()),
        applies_at: Some(Duration::new(14, 345_678_901)),
        cancelled_at: Some(Duration::new(12, 345_678_901)),
        response: ResponsePlan {
            delivery: Delivery::Pending,
            status: Some(202),
            at: None,
        },
        actor: Some("agent:x".into()),
        event: Some("message".into()),
        detail: Some(json!({"a": {"b": 1}}).into()),
        key_forgotten: true,
    }
}

/// The journal's form of a record: equal records, equal text.
fn text(r: &Record) -> String {
    serde_json::to_string(r).unwrap()
}

#[test]
fn every_field_round_trips_through_the_encoding() {
    let mut l = Ledger::bounded(None);
    let mut bare = Record::agent_event("x", "e", Duration::ZERO, Value::Null);
    bare.detail = None;
    bare.actor = None;
    bare.event = None;
    bare.method = "M\u{e9}".into();
    for d in [
        Disposition::Executed,
        Disposition::MissingKey,
        Disposition::TooLarge,
        Disposition::Declaration,
    ] {
        let mut r = full(0);
        r.disposition = d;
        let seq = l.append(r.clone());
        r.seq = seq;
        assert_eq!(text(&l.get(seq).unwrap()), text(&r));
    }
    let seq = l.append(bare.clone());
    bare.seq = seq;
    assert_eq!(text(&l.get(seq).unwrap()), text(&bare));
}

#[test]
fn filters_and_updates_work_on_stored_records() {
    let mut l = Ledger::bounded(Some(30));
    for i in 0..40u64 {
        let mut r = full(0);
        r.service = ["pay", "bank"][(i % 2) as usize].into();
        r.idempotency_key = (i % 4 != 0).then(|| format!("k-{}", i % 5));
        l.append(r);
    }
    let f = Filter {
        service: Some("pay".into()),
        key: Some("k-2".into()),
        since: Some(20),
        ..Filter::default()
    };
    let seqs: Vec<u64> = l.matching(&f).map(|r| r.seq).collect();
    let want: Vec<u64> = l.iter().filter(|r| f.matches(r)).map(|r| r.seq).collect();
    assert_eq!(seqs, want);
    assert_eq!(l.count_matching(&f), want.len());
    assert!(!want.is_empty());
    assert!(l.update(35, |r| r.cancelled_at = Some(Duration::from_secs(99))));
    assert_eq!(
        l.get(35).unwrap().cancelled_at,
        Some(Duration::from_secs(99))
    );
    assert!(!l.update(5, |_| {}), "evicted");
}

#[test]
fn counts_add_up_whatever_the_order_of_label_sets() {
    let mut c = Counts::default();
    let mut want = std::collections::BTreeMap::new();
    let labels = ["a", "b", "c", "d", "e", "f"];
    for i in 0..500usize {
        let (s, r) = (labels[(i / 3) % 6], labels[(i * 7) % 5]);
        let d = [Disposition::Executed, Disposition::Replayed][i % 2];
        c.bump(s, r, d, "", 1);
        *want.entry((s, r, d)).or_insert(0u64) += 1;
    }
    let got: Vec<_> = c
        .sorted()
        .into_iter()
        .map(|(k, n)| ((k.service, k.route, k.disposition), n))
        .collect();
    let want: Vec<_> = want
        .into_iter()
        .map(|((s, r, d), n)| ((s.to_string(), r.to_string(), d), n))
        .collect();
    assert_eq!(got, want);
}
