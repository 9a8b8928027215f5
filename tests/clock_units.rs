//! The scenario clock (`doubleagent::clock`): timestamps and durations printed and parsed, and a
//! manual clock waking its sleepers and waiters in deadline order.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use doubleagent::clock::*;

#[test]
fn formats_and_parses_timestamps() {
    assert_eq!(format_rfc3339_ms(0), "1970-01-01T00:00:00.000Z");
    assert_eq!(
        format_rfc3339_ms(951_782_400_000),
        "2000-02-29T00:00:00.000Z"
    );
    assert_eq!(
        format_rfc3339_ms(1_795_000_000_123),
        "2026-11-18T11:06:40.123Z"
    );
    assert_eq!(
        parse_rfc3339_ms("2026-11-18T11:06:40.123Z"),
        Some(1_795_000_000_123)
    );
    assert_eq!(
        parse_rfc3339_ms("2026-11-18T13:06:40.123456+02:00"),
        Some(1_795_000_000_123)
    );
    assert_eq!(parse_rfc3339_ms("2026-11-18"), None);
    assert_eq!(parse_rfc3339_ms("yesterday"), None);
    assert_eq!(parse_rfc3339_ms("2026-13-18T08:26:40Z"), None);
    // Dates that do not exist are not timestamps.
    assert_eq!(parse_rfc3339_ms("2026-02-31T08:26:40Z"), None);
    assert_eq!(parse_rfc3339_ms("2025-02-29T00:00:00Z"), None);
    for odd in [
        "2026-11-18T11:06:40é1234",
        "2026-11-18T11:06:40+0é:00",
        "2026-11-18T11:06:40.5€12",
    ] {
        assert_eq!(parse_rfc3339_ms(odd), None, "{odd}");
    }
}

#[test]
fn durations_parse_and_print() {
    assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
    assert_eq!(parse_duration("24h"), Ok(Duration::from_secs(86_400)));
    assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5_400)));
    for bad in ["", "10", "1.5s", "3 s", "3sec", "-1s", "s"] {
        assert!(parse_duration(bad).is_err(), "{bad:?} should be rejected");
    }
    assert_eq!(format_duration(Duration::from_millis(90_250)), "1m30s250ms");
    assert_eq!(format_duration(Duration::ZERO), "0ms");
}

#[tokio::test]
async fn manual_clock_wakes_sleepers_in_deadline_order_at_their_deadlines() {
    let clock = Clock::new(ClockKind::Manual);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for secs in [3u64, 1, 2] {
        let (clock, seen) = (clock.clone(), seen.clone());
        tasks.push(tokio::spawn(async move {
            let tick = clock.sleep_until(Duration::from_secs(secs)).await;
            assert!(tick.is_some());
            seen.lock().unwrap().push((secs, clock.now()));
        }));
    }
    while clock.pending_sleepers() < 3 {
        tokio::task::yield_now().await;
    }
    let now = clock.advance(Duration::from_secs(10)).await.unwrap();
    assert_eq!(now, Duration::from_secs(10));
    for t in tasks {
        t.await.unwrap();
    }
    let seen = seen.lock().unwrap().clone();
    let expected: Vec<_> = [1u64, 2, 3]
        .iter()
        .map(|s| (*s, Duration::from_secs(*s)))
        .collect();
    assert_eq!(seen, expected);
}

#[tokio::test]
async fn waiters_and_sleepers_wake_in_one_deadline_order() {
    // Unordered waiters (delayed responses) and ordered sleepers (agent steps) interleave:
    // everything due before an ordered sleeper's deadline is woken before it runs, and it
    // runs with `now` at its own deadline.
    let clock = Clock::new(ClockKind::Manual);
    let seen = Arc::new(Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for (secs, ordered) in [(4u64, false), (2, true), (1, false), (3, false), (5, true)] {
        let (clock, seen) = (clock.clone(), seen.clone());
        tasks.push(tokio::spawn(async move {
            let at = Duration::from_secs(secs);
            if ordered {
                let tick = clock.sleep_until(at).await;
                assert!(tick.is_some());
                assert_eq!(clock.now(), at, "an ordered sleeper runs at its deadline");
                seen.lock().unwrap().push(secs);
            } else {
                assert!(clock.wait_until(at).await);
                seen.lock().unwrap().push(secs);
            }
        }));
    }
    while clock.pending_sleepers() < 5 {
        tokio::task::yield_now().await;
    }
    clock.advance(Duration::from_secs(10)).await.unwrap();
    for t in tasks {
        t.await.unwrap();
    }
    let seen = seen.lock().unwrap().clone();
    let pos = |s: u64| seen.iter().position(|x| *x == s).unwrap();
    assert_eq!(seen.len(), 5);
    assert!(
        pos(1) < pos(2),
        "waiter at 1s woken before the sleeper at 2s ran: {seen:?}"
    );
    assert!(
        pos(2) < pos(5) && pos(3) < pos(5) && pos(4) < pos(5),
        "{seen:?}"
    );
}

#[tokio::test]
async fn advance_does_not_wait_for_unordered_waiters_to_run() {
    let clock = Clock::new(ClockKind::Manual);
    let n = 20_000;
    let mut tasks = Vec::new();
    for i in 0..n {
        let clock = clock.clone();
        tasks.push(tokio::spawn(async move {
            clock.wait_until(Duration::from_millis(1 + i % 100)).await
        }));
    }
    while clock.pending_sleepers() < n as usize {
        tokio::task::yield_now().await;
    }
    // On a current-thread runtime no woken task can run before advance returns: if advance
    // waited for any of them, this would never finish.
    let now = clock.advance(Duration::from_millis(100)).await.unwrap();
    assert_eq!(now, Duration::from_millis(100));
    assert_eq!(clock.pending_sleepers(), 0);
    for t in tasks {
        assert!(t.await.unwrap());
    }
    assert!(
        clock.wait_until(Duration::from_millis(50)).await,
        "a past deadline is due"
    );
    let c2 = clock.clone();
    let late = tokio::spawn(async move { c2.wait_until(Duration::from_secs(60)).await });
    while clock.pending_sleepers() < 1 {
        tokio::task::yield_now().await;
    }
    clock.close();
    assert!(!late.await.unwrap(), "closing releases waiters with false");
    assert!(!clock.wait_until(Duration::from_secs(61)).await);
}

#[tokio::test]
async fn closing_releases_sleepers_and_real_clock_refuses_advance() {
    let clock = Clock::new(ClockKind::Manual);
    let c2 = clock.clone();
    let t = tokio::spawn(async move { c2.sleep(Duration::from_secs(60)).await.is_none() });
    while clock.pending_sleepers() < 1 {
        tokio::task::yield_now().await;
    }
    clock.close();
    assert!(t.await.unwrap());
    let real = Clock::new(ClockKind::Real);
    assert_eq!(
        real.advance(Duration::from_secs(1)).await,
        Err(ClockError::NotManual)
    );
}

#[tokio::test]
async fn a_manual_clock_stops_at_its_horizon_instead_of_overflowing() {
    let clock = Clock::new(ClockKind::Manual);
    let huge = Duration::from_millis(u64::MAX);
    assert_eq!(clock.advance(huge).await, Err(ClockError::TooFar));
    assert_eq!(
        clock.now(),
        Duration::ZERO,
        "a refused advance moves nothing"
    );
    assert_eq!(clock.advance(MAX_ELAPSED).await, Ok(MAX_ELAPSED));
    assert_eq!(
        clock.advance(Duration::from_millis(1)).await,
        Err(ClockError::TooFar)
    );
    assert!(clock.rfc3339(clock.now()).ends_with('Z'));
}

#[tokio::test]
async fn concurrent_advances_add_up_while_an_ordered_sleeper_holds_its_tick() {
    // Each acknowledged advance moves the clock by its own amount: two advances that overlap
    // (one waiting for an ordered sleeper to finish its step) must not both start from the same
    // `now` and lose one of them.
    let clock = Clock::new(ClockKind::Manual);
    let (release_tx, release_rx) = tokio::sync::oneshot::channel::<()>();
    let sleeper = {
        let clock = clock.clone();
        tokio::spawn(async move {
            let tick = clock.sleep_until(Duration::from_millis(50)).await;
            assert!(tick.is_some());
            // Hold the tick (the step is running) until told to finish.
            let _ = release_rx.await;
            drop(tick);
        })
    };
    while clock.pending_sleepers() < 1 {
        tokio::task::yield_now().await;
    }
    let first = tokio::spawn({
        let clock = clock.clone();
        async move { clock.advance(Duration::from_millis(100)).await }
    });
    // The first advance is now waiting on the sleeper's step.
    while clock.pending_sleepers() > 0 {
        tokio::task::yield_now().await;
    }
    let second = tokio::spawn({
        let clock = clock.clone();
        async move { clock.advance(Duration::from_millis(100)).await }
    });
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
    release_tx.send(()).unwrap();
    sleeper.await.unwrap();
    first.await.unwrap().unwrap();
    second.await.unwrap().unwrap();
    assert_eq!(clock.now(), Duration::from_millis(200));
}
