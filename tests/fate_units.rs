//! Fates (`doubleagent::fate`): each spelling round-trips, a sequence repeats its last fate,
//! weighted draws depend only on the seed, the stream and the ordinal.

use doubleagent::fate::{Fate, FateSchedule};

#[test]
fn every_fate_round_trips_through_its_spelling() {
    for s in [
        "respond",
        "delay:100ms",
        "drop-after-apply",
        "hang-after-apply",
        "reset-after-apply",
        "drop-before-apply",
        "error-before-apply:503",
        "error-after-apply:500",
        "respond-without-apply",
        "apply-later:2s",
    ] {
        assert_eq!(s.parse::<Fate>().unwrap().to_string(), s);
    }
    assert!("delay".parse::<Fate>().is_err());
    assert!("error-after-apply:200".parse::<Fate>().is_err());
    assert!("respond:1s".parse::<Fate>().is_err());
    assert!("explode"
        .parse::<Fate>()
        .unwrap_err()
        .to_string()
        .contains("expected one of"));
}

#[test]
fn sequence_repeats_its_last_fate() {
    let s = FateSchedule::Sequence(vec![Fate::DropAfterApply, Fate::Respond]);
    assert_eq!(s.pick(0, "r", 0), Fate::DropAfterApply);
    assert_eq!(s.pick(0, "r", 1), Fate::Respond);
    assert_eq!(s.pick(0, "r", 99), Fate::Respond);
}

#[test]
fn weighted_draws_depend_only_on_seed_stream_and_ordinal() {
    let s = FateSchedule::Weighted(vec![(Fate::Respond, 1), (Fate::DropAfterApply, 1)]);
    let run = |seed| {
        (0..64)
            .map(|i| s.pick(seed, "payments/create", i))
            .collect::<Vec<_>>()
    };
    assert_eq!(run(7), run(7));
    assert_ne!(run(7), run(8));
    let drops = run(7)
        .iter()
        .filter(|f| **f == Fate::DropAfterApply)
        .count();
    assert!((10..54).contains(&drops), "both fates drawn: {drops}");
}
