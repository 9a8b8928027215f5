//! Scenario time: the one clock every delay, expiry, lag and timeout in a world runs on.
//!
//! A [`Clock`] is *real* (follows the wall clock from the world's start) or *manual* (stands
//! still until [`Clock::advance`]). Scenario time is a [`Duration`] since the world started.
//!
//! Most timed behaviour is *derived* from the clock, not scheduled (`apply-later` applies when
//! `now >= applied_at`; a key expires when `now >= created + retention`); only socket work and
//! agent steps sleep. On a manual clock sleepers wake in deadline order: one that records
//! something ([`Clock::sleep_until`]) runs at its deadline, and its [`Tick`] holds `advance`
//! until it is done, so an advance replays time deterministically; one that only delivers what
//! is already recorded ([`Clock::wait_until`]) skips that handshake, so many pending responses
//! are released in one sweep. Imports nothing from the crate.

use crate::sync::unpoisoned;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::sync::{oneshot, watch};

/// Which kind of time a world runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClockKind {
    Real,
    Manual,
}

/// How far a manual clock may be moved: far beyond any scenario, and far enough below the
/// limits of `Duration` and of epoch milliseconds that no time arithmetic can overflow.
pub const MAX_ELAPSED: Duration = Duration::from_secs(1000 * 365 * 86_400);

/// Returned by [`Clock::advance`].
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ClockError {
    #[error("the scenario runs on the real clock; set clock = \"manual\" to move time by hand")]
    NotManual,
    #[error("the manual clock cannot be moved more than 365000d past the scenario's start")]
    TooFar,
}

/// A cheap, cloneable handle to one world's clock.
#[derive(Clone)]
pub struct Clock {
    inner: Arc<Inner>,
}

struct Inner {
    kind: ClockKind,
    /// Wall-clock milliseconds since the Unix epoch at scenario time zero.
    epoch_ms: u64,
    /// For the real clock: the instant of scenario time zero.
    origin: tokio::time::Instant,
    state: Mutex<State>,
    /// Flips to true when the world is closed (reset, scenario replaced, shutdown).
    closed: watch::Sender<bool>,
    /// Held for a whole advance: one that overlaps another (waiting on an ordered sleeper's
    /// step) starts from where that one ends, so no acknowledged advance is lost.
    advancing: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct State {
    now: Duration,
    next_id: u64,
    waiters: BTreeMap<(Duration, u64), Waiter>,
}

/// A sleeper on a manual clock, by what it needs when woken.
enum Waiter {
    /// Gets a [`Tick`]: `advance` waits until the sleeper drops it.
    Ordered(oneshot::Sender<oneshot::Sender<()>>),
    /// Only woken, in deadline order; `advance` does not wait for it.
    Unordered(oneshot::Sender<()>),
}

/// Unordered sleepers `advance` wakes per hold of the clock's lock (the longest `now` waits).
const WAKE_BATCH: usize = 1024;

/// Held by a woken sleeper on a manual clock: while it lives, `advance` waits (so whatever the
/// sleeper records happens at its deadline, before later deadlines). Drop it before awaiting
/// anything else.
pub struct Tick {
    _done: Option<oneshot::Sender<()>>,
}

impl Clock {
    pub fn new(kind: ClockKind) -> Clock {
        Clock::start(
            kind,
            wall_now_ms(),
            tokio::time::Instant::now(),
            Duration::ZERO,
        )
    }

    /// A clock continuing an earlier run (after a restart): the same epoch and, if manual, time.
    pub fn resume(kind: ClockKind, epoch_ms: u64, now: Duration) -> Clock {
        let elapsed = Duration::from_millis(wall_now_ms().saturating_sub(epoch_ms));
        let instant_now = tokio::time::Instant::now();
        let origin = instant_now.checked_sub(elapsed).unwrap_or(instant_now);
        Clock::start(kind, epoch_ms, origin, now)
    }

    fn start(kind: ClockKind, epoch_ms: u64, origin: tokio::time::Instant, now: Duration) -> Clock {
        let inner = Inner {
            kind,
            epoch_ms,
            origin,
            state: Mutex::new(State {
                now,
                ..State::default()
            }),
            closed: watch::channel(false).0,
            advancing: tokio::sync::Mutex::new(()),
        };
        Clock {
            inner: Arc::new(inner),
        }
    }

    pub fn epoch_ms(&self) -> u64 {
        self.inner.epoch_ms
    }

    /// Move a manual clock forward to `now` without waking anyone (journal replay).
    pub fn restore_now(&self, now: Duration) {
        let mut st = self.state();
        st.now = st.now.max(now);
    }

    pub fn kind(&self) -> ClockKind {
        self.inner.kind
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A poisoned clock only means a panic elsewhere; the time value itself is still valid.
        unpoisoned(self.inner.state.lock())
    }

    /// Scenario time elapsed since the world started.
    pub fn now(&self) -> Duration {
        match self.inner.kind {
            ClockKind::Real => self.inner.origin.elapsed(),
            ClockKind::Manual => self.state().now,
        }
    }

    /// Wall-clock milliseconds since the Unix epoch for a scenario time.
    pub fn wall_ms(&self, t: Duration) -> u64 {
        self.inner.epoch_ms + t.as_millis() as u64
    }

    /// RFC 3339 UTC timestamp, millisecond precision, for a scenario time.
    pub fn rfc3339(&self, t: Duration) -> String {
        format_rfc3339_ms(self.wall_ms(t))
    }

    /// Sleep until scenario time `deadline`; `None` if the world closed first. On a manual clock
    /// the [`Tick`] holds `advance` until dropped: for a sleeper that records at its deadline.
    pub async fn sleep_until(&self, deadline: Duration) -> Option<Tick> {
        let mut closed = self.inner.closed.subscribe();
        if *closed.borrow() {
            return None;
        }
        match self.inner.kind {
            ClockKind::Real => {
                let at = self.inner.origin + deadline;
                tokio::select! {
                    _ = tokio::time::sleep_until(at) => Some(Tick { _done: None }),
                    _ = closed.wait_for(|c| *c) => None,
                }
            }
            ClockKind::Manual => match self.enqueue(deadline, Waiter::Ordered) {
                Err(due) => due.then_some(Tick { _done: None }),
                // Closing drops every waiter's sender, so `rx` resolves with an error.
                Ok(rx) => rx.await.ok().map(|done| Tick { _done: Some(done) }),
            },
        }
    }

    /// Wait until scenario time `deadline`; `false` if the world closed first. Woken in deadline
    /// order, but `advance` does not wait for it: for delivering what is already recorded.
    pub async fn wait_until(&self, deadline: Duration) -> bool {
        match self.inner.kind {
            ClockKind::Real => self.sleep_until(deadline).await.is_some(),
            ClockKind::Manual => match self.enqueue(deadline, Waiter::Unordered) {
                Err(due) => due,
                Ok(rx) => rx.await.is_ok(),
            },
        }
    }

    /// Queue a sleeper on a manual clock; `Err(true)` if `deadline` is already due, `Err(false)`
    /// if the clock is closed.
    fn enqueue<T>(
        &self,
        deadline: Duration,
        waiter: impl FnOnce(oneshot::Sender<T>) -> Waiter,
    ) -> Result<oneshot::Receiver<T>, bool> {
        let mut st = self.state();
        // Checked under the lock `close` takes the waiters under: no sleeper slips in after it.
        if self.is_closed() {
            return Err(false);
        }
        if deadline <= st.now {
            return Err(true);
        }
        let (tx, rx) = oneshot::channel();
        let id = st.next_id;
        st.next_id += 1;
        st.waiters.insert((deadline, id), waiter(tx));
        Ok(rx)
    }

    pub async fn sleep(&self, d: Duration) -> Option<Tick> {
        self.sleep_until(self.now() + d).await
    }

    /// Resolves when the world closes; used to release hung connections.
    pub async fn closed(&self) {
        let mut closed = self.inner.closed.subscribe();
        let _ = closed.wait_for(|c| *c).await;
    }

    pub fn is_closed(&self) -> bool {
        *self.inner.closed.borrow()
    }

    /// Close the clock: every sleeper wakes with `None`, later sleeps return `None` at once.
    pub fn close(&self) {
        self.inner.closed.send_replace(true);
        let waiters = std::mem::take(&mut self.state().waiters);
        drop(waiters);
    }

    /// Move a manual clock forward by `by`, waking each sleeper due at its own deadline, in order.
    pub async fn advance(&self, by: Duration) -> Result<Duration, ClockError> {
        if self.inner.kind != ClockKind::Manual {
            return Err(ClockError::NotManual);
        }
        let _one_at_a_time = self.inner.advancing.lock().await;
        let target = self
            .state()
            .now
            .checked_add(by)
            .filter(|t| *t <= MAX_ELAPSED)
            .ok_or(ClockError::TooFar)?;
        let mut woken: Vec<oneshot::Sender<()>> = Vec::new();
        loop {
            // Under one hold of the lock: every unordered sleeper due next (at most a batch),
            // then stop at the first ordered one, which runs alone at its own deadline.
            let ordered = {
                let mut guard = self.state();
                let st = &mut *guard;
                let mut ordered = None;
                while let Some(entry) = st.waiters.first_entry() {
                    let deadline = entry.key().0;
                    if deadline > target || woken.len() >= WAKE_BATCH {
                        break;
                    }
                    st.now = st.now.max(deadline);
                    match entry.remove() {
                        Waiter::Unordered(tx) => woken.push(tx),
                        Waiter::Ordered(tx) => {
                            ordered = Some(tx);
                            break;
                        }
                    }
                }
                let due = st
                    .waiters
                    .first_key_value()
                    .is_some_and(|(&(d, _), _)| d <= target);
                if ordered.is_none() && woken.is_empty() && !due {
                    st.now = st.now.max(target);
                    break;
                }
                ordered
            };
            // Wake outside the lock: woken tasks may read the clock at once.
            for tx in woken.drain(..) {
                let _ = tx.send(());
            }
            if let Some(waiter) = ordered {
                let (done_tx, done_rx) = oneshot::channel();
                if waiter.send(done_tx).is_ok() {
                    // Resolves when the sleeper drops its Tick (or is itself dropped).
                    let _ = done_rx.await;
                }
            }
        }
        Ok(self.now())
    }

    /// Number of sleepers waiting on a manual clock (for health and tests).
    pub fn pending_sleepers(&self) -> usize {
        self.state().waiters.len()
    }
}

fn wall_now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Formats Unix milliseconds as `YYYY-MM-DDTHH:MM:SS.mmmZ` (jiff's RFC 3339 printer).
pub fn format_rfc3339_ms(ms: u64) -> String {
    // Past jiff's range (the year 9999) only a corrupt journal or a clock advanced by centuries
    // can go; the last instant it can print stands for them.
    let ts = i64::try_from(ms)
        .ok()
        .and_then(|ms| jiff::Timestamp::from_millisecond(ms).ok())
        .unwrap_or(jiff::Timestamp::MAX);
    jiff::fmt::temporal::DateTimePrinter::new()
        .precision(Some(3))
        .timestamp_to_string(&ts)
}

/// Parses an RFC 3339 timestamp (`2026-01-02T03:04:05(.fff)?(Z|±hh:mm)`) into Unix milliseconds,
/// with jiff: a date that does not exist (February 31) is refused. `None` for anything else.
pub fn parse_rfc3339_ms(s: &str) -> Option<i64> {
    s.parse::<jiff::Timestamp>()
        .ok()
        .map(|ts| ts.as_millisecond())
}

/// Parses a scenario duration: an integer with a unit (`ms`, `s`, `m`, `h`, `d`), optionally
/// compound (`1h30m`). Whitespace and bare numbers are rejected so a typo never means "zero".
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let expected = || {
        format!("expected a duration like \"250ms\", \"3s\", \"10m\", \"24h\" or \"1h30m\", found \"{s}\"")
    };
    if s.is_empty() {
        return Err(expected());
    }
    let mut total = Duration::ZERO;
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest.bytes().take_while(|c| c.is_ascii_digit()).count();
        if digits == 0 {
            return Err(expected());
        }
        let n: u64 = rest[..digits].parse().map_err(|_| expected())?;
        rest = &rest[digits..];
        let unit_len = rest.bytes().take_while(|c| c.is_ascii_alphabetic()).count();
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        let ms_per = match unit {
            "ms" => 1,
            "s" => 1_000,
            "m" => 60_000,
            "h" => 3_600_000,
            "d" => 86_400_000,
            _ => return Err(expected()),
        };
        let ms = n.checked_mul(ms_per).ok_or_else(expected)?;
        total = total
            .checked_add(Duration::from_millis(ms))
            .ok_or_else(expected)?;
    }
    Ok(total)
}

/// The shortest scenario spelling of a duration (`90000ms` → `1m30s`).
pub fn format_duration(d: Duration) -> String {
    let mut ms = d.as_millis() as u64;
    if ms == 0 {
        return "0ms".into();
    }
    let mut out = String::new();
    for (unit, size) in [
        ("d", 86_400_000),
        ("h", 3_600_000),
        ("m", 60_000),
        ("s", 1_000),
        ("ms", 1),
    ] {
        if ms >= size {
            out.push_str(&format!("{}{unit}", ms / size));
            ms %= size;
        }
    }
    out
}
