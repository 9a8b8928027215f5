//! The world: one scenario's simulated state, owned in one place.
//!
//! A [`World`] holds the compiled scenario, its clock, and behind a single mutex the mutable
//! state: ledger, idempotency keys, fate counters and the key → execution index. Every pipeline
//! step that must be atomic (check a key and reserve it, pick a fate, append to the ledger) runs
//! inside one short critical section that never spans an `.await`.
//!
//! Resetting or replacing the scenario builds a fresh world; the old one is closed, which wakes
//! its sleepers and releases its hung connections. Callers above (`service`, `admin`, `server`)
//! reach the state only through here.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::clock::Clock;
use crate::idempotency::KeyStore;
use crate::ledger::{Entry, Filter, Ledger, Record};
use crate::scenario::Scenario;

/// The mutable part of a world.
#[derive(Default)]
pub struct State {
    pub ledger: Ledger,
    pub keys: KeyStore,
    /// Attempts counted so far per fate stream (`service/route`, `.../intent:..`, `.../key:..`).
    pub counters: HashMap<String, u64>,
    /// Latest execution (seq) per (service, idempotency key), whatever the idempotency mode:
    /// lookups and cancels accept a key as the action's id.
    pub by_key: HashMap<(String, String), u64>,
}

pub struct World {
    pub scenario: Arc<Scenario>,
    pub clock: Clock,
    /// The scenario's seed, or the one given on the command line.
    pub seed: u64,
    state: Mutex<State>,
    /// State owned by modules above the world (an agent protocol's tasks or runs), one value per
    /// type, created on first use. It lives and dies with the world, so reset covers it.
    extensions: Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

impl World {
    pub fn new(scenario: Arc<Scenario>, seed: Option<u64>) -> World {
        World {
            clock: Clock::new(scenario.clock),
            seed: seed.unwrap_or(scenario.seed),
            scenario,
            state: Mutex::new(State::default()),
            extensions: Mutex::new(HashMap::new()),
        }
    }

    /// This world's instance of `T`, created with `T::default()` on first use. Lock order: an
    /// extension's own lock may be taken before [`World::lock`], never the other way round.
    pub fn extension<T: Default + Send + Sync + 'static>(&self) -> Arc<T> {
        let mut map = self.extensions.lock().unwrap_or_else(|e| e.into_inner());
        let any = map
            .entry(TypeId::of::<T>())
            .or_insert_with(|| Arc::new(T::default()))
            .clone();
        drop(map);
        // The map is keyed by the type's own id, so the downcast cannot fail.
        any.downcast::<T>()
            .unwrap_or_else(|_| Arc::new(T::default()))
    }

    /// Lock the state. Keep the guard out of any `.await`.
    pub fn lock(&self) -> MutexGuard<'_, State> {
        // The state stays consistent across a panic in a reader, so poison is not fatal here.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Close the world: sleepers wake, hung connections are released.
    pub fn close(&self) {
        self.clock.close();
    }

    /// Ledger entries matching a filter, as of now.
    pub fn entries(&self, filter: &Filter) -> Vec<Entry> {
        let st = self.lock();
        st.ledger
            .records()
            .iter()
            .filter(|r| filter.matches(r))
            .map(|r| r.view(&self.clock))
            .collect()
    }

    /// Number of entries matching a filter.
    pub fn count(&self, filter: &Filter) -> usize {
        self.lock()
            .ledger
            .records()
            .iter()
            .filter(|r| filter.matches(r))
            .count()
    }

    /// A copy of one record.
    pub fn record(&self, seq: u64) -> Option<Record> {
        self.lock().ledger.get(seq).cloned()
    }
}

/// Holds the current world of a running server and swaps it on reset or scenario replacement.
/// Every request takes an `Arc` of the world current at its arrival, so a swap never tears a
/// request in half; the old world is closed, releasing anything waiting on it.
pub struct Host {
    current: std::sync::RwLock<Arc<World>>,
    /// `--seed` from the command line, which outlives scenario replacements.
    seed: Option<u64>,
    /// Set when the server stops accepting: hung connections let go at once.
    stopping: tokio::sync::watch::Sender<bool>,
}

impl Host {
    pub fn new(scenario: Scenario, seed: Option<u64>) -> Host {
        Host {
            current: std::sync::RwLock::new(Arc::new(World::new(Arc::new(scenario), seed))),
            seed,
            stopping: tokio::sync::watch::channel(false).0,
        }
    }

    pub fn world(&self) -> Arc<World> {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Replace the world with a fresh one from `scenario` and close the old one.
    pub fn replace(&self, scenario: Arc<Scenario>) -> Arc<World> {
        let fresh = Arc::new(World::new(scenario, self.seed));
        let old = std::mem::replace(
            &mut *self.current.write().unwrap_or_else(|e| e.into_inner()),
            fresh.clone(),
        );
        old.close();
        fresh
    }

    /// Back to the start: same scenario, empty ledger, no keys, counters and clock at zero.
    pub fn reset(&self) -> Arc<World> {
        let scenario = self.world().scenario.clone();
        self.replace(scenario)
    }

    /// Mark the server as stopping (releases hung connections).
    pub fn stop(&self) {
        self.stopping.send_replace(true);
    }

    /// Resolves once the server is stopping.
    pub async fn stopping(&self) {
        let mut rx = self.stopping.subscribe();
        let _ = rx.wait_for(|s| *s).await;
    }
}
