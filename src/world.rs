//! The world: one scenario's simulated state, owned in one place.
//!
//! A [`World`] holds the compiled scenario, its clock, and behind one mutex the mutable state
//! (ledger, idempotency keys, fate counters, key → execution index). Every step that must be
//! atomic (check and reserve a key, pick a fate, append) runs in one short critical section that
//! never spans an `.await`. Reset or replacement builds a fresh world and closes the old one,
//! waking its sleepers and releasing its hung connections.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::clock::Clock;
use crate::hash::FastMap;
use crate::idempotency::{KeyIndex, KeyStore};
use crate::journal::{Journal, Line, RecordSink};
use crate::ledger::{Counts, Entry, Filter, Ledger, Record};
use crate::scenario::Scenario;
use crate::sync::unpoisoned;

#[derive(Default)]
pub struct State {
    pub ledger: Ledger,
    pub keys: KeyStore,
    /// Attempts counted so far per fate stream (`service/route`, `.../intent:..`, `.../key:..`).
    pub counters: FastMap<String, u64>,
    /// Where a stream's name is written before it is looked up (no allocation per action).
    pub stream_buf: String,
    /// Latest execution per (service, idempotency key): lookups and cancels accept a key as an id.
    pub by_key: KeyIndex,
    /// Latest execution (seq) per (service, the action's own id from its response).
    pub by_object: KeyIndex,
}

pub struct World {
    pub scenario: Arc<Scenario>,
    pub clock: Clock,
    /// The scenario's seed, or the one given on the command line.
    pub seed: u64,
    /// The session this world belongs to (`None`: the default session).
    pub session: Option<String>,
    state: Mutex<State>,
    /// State owned by modules above the world (an agent protocol's tasks or runs), one value per
    /// type, created on first use. It lives and dies with the world, so reset covers it.
    extensions: Extensions,
    journal: Option<Arc<Journal>>,
    /// Set when the world closes because the server stops (not reset or replaced): what a call
    /// the close cut short tells its client.
    server_stopped: std::sync::atomic::AtomicBool,
}

/// A world's extensions, one value per type; an append-only map, so references stay valid.
type Extensions = elsa::sync::FrozenMap<TypeId, Box<dyn Any + Send + Sync>>;

impl World {
    /// The root URL of this world on a server at `base_url`: a named session's carries its
    /// `/_s/NAME` prefix, so every URL handed out inside the session leads back into it even
    /// from a client that sends no session header.
    pub fn url(&self, base_url: &str) -> String {
        match &self.session {
            Some(name) => format!("{base_url}/_s/{name}"),
            None => base_url.to_string(),
        }
    }

    pub fn new(scenario: Arc<Scenario>, seed: Option<u64>) -> World {
        // A bare world (tools, benchmarks) keeps every entry; servers bound theirs.
        let limits = Limits {
            seed,
            max_entries: None,
            ..Limits::default()
        };
        World::build(scenario, &limits, None, None, None)
    }

    /// A world whose facts go to `journal`, if any. With `resume`, it continues an earlier run
    /// (journal replay) on that clock; otherwise it is a fresh world and the journal says so.
    fn build(
        scenario: Arc<Scenario>,
        limits: &Limits,
        session: Option<String>,
        journal: Option<&Arc<Journal>>,
        resume: Option<Clock>,
    ) -> World {
        let mut ledger = Ledger::bounded(limits.max_entries);
        let clock = resume.clone().unwrap_or_else(|| Clock::new(scenario.clock));
        if let Some(j) = journal {
            ledger.set_sink(Box::new(RecordSink::new(j.clone(), session.clone())));
            if resume.is_none() {
                j.write(&Line::World {
                    session: session.clone(),
                    scenario: scenario.source.clone(),
                    clock: scenario.clock,
                    epoch_ms: clock.epoch_ms(),
                });
            }
        }
        World {
            clock,
            seed: limits.seed.unwrap_or(scenario.seed),
            scenario,
            session,
            state: Mutex::new(State {
                ledger,
                keys: KeyStore::bounded(limits.max_keys),
                ..State::default()
            }),
            extensions: Extensions::default(),
            journal: journal.cloned(),
            server_stopped: Default::default(),
        }
    }

    pub fn journaled(&self) -> bool {
        self.journal.is_some()
    }

    /// Journal a fact about this world (no-op without a journal); false if the write failed.
    pub fn note(&self, line: impl FnOnce(Option<String>) -> Line) -> bool {
        self.journal
            .as_ref()
            .is_none_or(|j| j.write(&line(self.session.clone())))
    }

    /// Record and journal that the client of `seq` left before its response (REC-4).
    pub fn abandon(&self, seq: u64) {
        let at = self.clock.now();
        if self.lock().ledger.update(seq, |r| r.abandon(at)) {
            self.note(|session| Line::Abandoned { session, seq, at });
        }
    }

    /// This world's instance of `T`, created with `T::default()` on first use. Lock order: an
    /// extension's own lock may be taken before [`World::lock`], never the other way round.
    pub fn extension<T: Default + Send + Sync + 'static>(&self) -> &T {
        let id = TypeId::of::<T>();
        let any = match self.extensions.get(&id) {
            Some(any) => any,
            None => self.extensions.insert_with(id, || Box::new(T::default())),
        };
        // Kept under its own type's id, so the downcast holds; a fresh value would do otherwise.
        any.downcast_ref::<T>()
            .unwrap_or_else(|| Box::leak(Box::new(T::default())))
    }

    /// Append an entry that happens now. Its time is read under the lock, as an admission's is,
    /// so the ledger's times follow its seqs.
    pub fn append_now(&self, mut rec: Record) -> u64 {
        let mut st = self.lock();
        let now = self.clock.now();
        rec.received_at = now;
        rec.response.at = rec.response.at.map(|_| now);
        st.ledger.append(rec)
    }

    /// Lock the state. Keep the guard out of any `.await`.
    pub fn lock(&self) -> MutexGuard<'_, State> {
        unpoisoned(self.state.lock())
    }

    /// Close the world: sleepers wake, hung connections are released.
    pub fn close(&self) {
        self.clock.close();
    }

    /// Whether the world was closed because the server stopped.
    pub fn server_stopped(&self) -> bool {
        self.server_stopped
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Ledger entries matching a filter, as of now.
    pub fn entries(&self, filter: &Filter) -> Vec<Entry> {
        let st = self.lock();
        st.ledger
            .matching(filter)
            .map(|r| r.view(&self.clock))
            .collect()
    }

    pub fn count(&self, filter: &Filter) -> usize {
        self.lock().ledger.count_matching(filter)
    }

    pub fn record(&self, seq: u64) -> Option<Record> {
        self.lock().ledger.get(seq)
    }
}

/// Ledger entries kept per world unless told otherwise: a sidecar left running under load keeps
/// flat memory (an unbounded ledger also holds every A2A task it describes).
pub const DEFAULT_MAX_ENTRIES: usize = 100_000;

/// How a server's worlds are bounded.
#[derive(Clone, Debug)]
pub struct Limits {
    /// `--seed`, which outlives scenario replacements and applies to every session.
    pub seed: Option<u64>,
    /// Named sessions alive at once (the default session is not counted).
    pub max_sessions: usize,
    /// A named session unused this long (wall clock) is dropped.
    pub session_ttl: Duration,
    /// Ledger entries kept per world; the oldest are evicted first.
    pub max_entries: Option<usize>,
    /// Idempotency keys kept per world, beyond those already expired.
    pub max_keys: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            seed: None,
            max_sessions: 1000,
            session_ttl: Duration::from_secs(30 * 60),
            max_entries: Some(DEFAULT_MAX_ENTRIES),
            max_keys: 100_000,
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SessionError {
    #[error("bad session name \"{0}\": use 1 to 64 letters, digits, '-', '_' or '.'")]
    BadName(String),
    #[error("too many sessions ({0} alive); end some with POST /_admin/reset?session=NAME&drop=true or wait for idle ones to expire")]
    TooMany(usize),
}

struct Session {
    world: Arc<World>,
    last_used: std::time::Instant,
}

impl Session {
    fn new(world: Arc<World>) -> Session {
        let last_used = std::time::Instant::now();
        Session { world, last_used }
    }
}

/// The worlds of a running server: the default session's and one per named session
/// (`X-Doubleagent-Session: NAME`). Each request takes an `Arc` of its world at arrival, so a
/// reset or scenario swap never tears a request in half; a replaced world is closed, releasing
/// anything waiting on it. Sessions are created on first use and dropped when idle.
pub struct Host {
    /// The scenario served at start: what new sessions begin with.
    base: Arc<Scenario>,
    default: std::sync::RwLock<Arc<World>>,
    sessions: Mutex<HashMap<String, Session>>,
    limits: Limits,
    /// Set when the server stops accepting: hung connections let go at once.
    stopping: tokio::sync::watch::Sender<bool>,
    /// Counts of worlds that were reset, replaced or dropped, so metrics never go backwards.
    retired: Mutex<Retired>,
    /// Findings per rule from the most recent verification (for metrics).
    last_findings: Mutex<std::collections::BTreeMap<String, u64>>,
    journal: Option<Arc<Journal>>,
}

/// What retired worlds contribute to the server's metrics.
#[derive(Default)]
pub struct Retired {
    pub counts: Counts,
    pub evicted: u64,
    pub sessions_dropped: u64,
}

impl Host {
    /// A host whose worlds go to `journal`, if any, first rebuilt from its earlier `lines`.
    pub fn new(
        scenario: Scenario,
        limits: Limits,
        journal: Option<Arc<Journal>>,
        lines: Vec<Line>,
    ) -> Host {
        let base = Arc::new(scenario);
        let mut worlds = replay(&base, &limits, journal.as_ref(), lines);
        let default = worlds.remove(&None).unwrap_or_else(|| {
            Arc::new(World::build(
                base.clone(),
                &limits,
                None,
                journal.as_ref(),
                None,
            ))
        });
        if default.scenario.source != base.source {
            tracing::warn!("the journal holds a different scenario than the one given; resuming the journal's (delete the journal to start afresh)");
        }
        let sessions = worlds
            .into_iter()
            .filter_map(|(name, world)| Some((name?, Session::new(world))))
            .collect();
        Host {
            base,
            default: std::sync::RwLock::new(default),
            sessions: Mutex::new(sessions),
            limits,
            stopping: tokio::sync::watch::channel(false).0,
            retired: Mutex::new(Retired::default()),
            last_findings: Mutex::new(Default::default()),
            journal,
        }
    }

    fn note_drop(&self, session: &str) {
        if let Some(j) = &self.journal {
            j.write(&Line::Drop {
                session: session.to_string(),
            });
        }
    }

    /// Whether the journal is keeping up (`None` without a journal).
    pub fn journal_status(&self) -> Option<crate::journal::Status> {
        self.journal.as_ref().map(|j| j.status())
    }

    /// Make the journal durable (at shutdown).
    pub fn flush_journal(&self) {
        if let Some(j) = &self.journal {
            j.flush();
        }
    }

    pub fn record_findings<'a>(&self, rules: impl Iterator<Item = &'a str>) {
        let mut m = unpoisoned(self.last_findings.lock());
        m.clear();
        for r in rules {
            *m.entry(r.to_string()).or_insert(0) += 1;
        }
    }

    pub fn last_findings(&self) -> std::collections::BTreeMap<String, u64> {
        unpoisoned(self.last_findings.lock()).clone()
    }

    /// Fold a world's counts into the retired totals and close it.
    fn retire(&self, world: &World, dropped_session: bool) {
        {
            let st = world.lock();
            let mut r = unpoisoned(self.retired.lock());
            r.counts.merge(st.ledger.counts());
            r.evicted += st.ledger.evicted();
            r.sessions_dropped += u64::from(dropped_session);
        }
        world.close();
    }

    /// Totals over live and retired worlds: (counts, evicted entries, sessions dropped).
    pub fn totals(&self) -> (Counts, u64, u64) {
        let (mut counts, mut evicted, dropped) = {
            let r = unpoisoned(self.retired.lock());
            (r.counts.clone(), r.evicted, r.sessions_dropped)
        };
        for w in self.worlds() {
            let st = w.lock();
            counts.merge(st.ledger.counts());
            evicted += st.ledger.evicted();
        }
        (counts, evicted, dropped)
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    pub fn world(&self) -> Arc<World> {
        unpoisoned(self.default.read()).clone()
    }

    /// The world of a session (`None` or `"default"`: the default one), created on first use.
    pub fn world_for(&self, session: Option<&str>) -> Result<Arc<World>, SessionError> {
        self.session_world(session, true)
    }

    /// A session's world to read from: its own if it exists, else a blank one that is not kept.
    /// A read creates no session, so reads (and unauthenticated health checks) cannot use up
    /// the session slots; at the cap an unknown session is refused as [`Host::world_for`] does.
    pub fn view_of(&self, session: Option<&str>) -> Result<Arc<World>, SessionError> {
        self.session_world(session, false)
    }

    /// A session's world; an unknown session's is made fresh, and kept only if `keep`.
    fn session_world(&self, session: Option<&str>, keep: bool) -> Result<Arc<World>, SessionError> {
        let Some(name) = named(session)? else {
            return Ok(self.world());
        };
        let mut sessions = self.lock_sessions();
        if let Some(s) = sessions.get_mut(name) {
            s.last_used = std::time::Instant::now();
            return Ok(s.world.clone());
        }
        if sessions.len() >= self.limits.max_sessions {
            return Err(SessionError::TooMany(sessions.len()));
        }
        // A view's blank world is not kept: the lock is released before it is made.
        let mut kept = keep.then_some(sessions);
        let journal = self.journal.as_ref().filter(|_| keep);
        let session = Some(name.to_string());
        let world = Arc::new(World::build(
            self.base.clone(),
            &self.limits,
            session,
            journal,
            None,
        ));
        if let Some(sessions) = kept.as_mut() {
            sessions.insert(name.to_string(), Session::new(world.clone()));
        }
        Ok(world)
    }

    fn lock_sessions(&self) -> MutexGuard<'_, HashMap<String, Session>> {
        unpoisoned(self.sessions.lock())
    }

    /// Replace a session's world with a fresh one from `scenario` and close the old one.
    pub fn replace(
        &self,
        session: Option<&str>,
        scenario: Arc<Scenario>,
    ) -> Result<Arc<World>, SessionError> {
        let name = named(session)?;
        let fresh = Arc::new(World::build(
            scenario,
            &self.limits,
            name.map(str::to_string),
            self.journal.as_ref(),
            None,
        ));
        let old = match name {
            None => Some(std::mem::replace(
                &mut *unpoisoned(self.default.write()),
                fresh.clone(),
            )),
            Some(n) => {
                let mut sessions = self.lock_sessions();
                if !sessions.contains_key(n) && sessions.len() >= self.limits.max_sessions {
                    return Err(SessionError::TooMany(sessions.len()));
                }
                let old = sessions.insert(n.to_string(), Session::new(fresh.clone()));
                old.map(|s| s.world)
            }
        };
        if let Some(old) = old {
            self.retire(&old, false);
        }
        Ok(fresh)
    }

    /// Back to the start: same scenario, empty ledger, no keys, counters and clock at zero.
    pub fn reset(&self, session: Option<&str>) -> Result<Arc<World>, SessionError> {
        let scenario = self.world_for(session)?.scenario.clone();
        self.replace(session, scenario)
    }

    /// End a named session now. Returns whether it existed.
    pub fn drop_session(&self, session: &str) -> bool {
        let removed = self.lock_sessions().remove(session);
        if removed.is_some() {
            self.note_drop(session);
        }
        removed.map(|s| self.retire(&s.world, true)).is_some()
    }

    /// Drop sessions idle for longer than the TTL; returns how many went.
    pub fn sweep(&self) -> usize {
        let ttl = self.limits.session_ttl;
        let mut gone = Vec::new();
        self.lock_sessions().retain(|_, s| {
            let keep = s.last_used.elapsed() < ttl;
            if !keep {
                gone.push(s.world.clone());
            }
            keep
        });
        for w in &gone {
            if let Some(name) = &w.session {
                self.note_drop(name);
            }
            self.retire(w, true);
        }
        gone.len()
    }

    pub fn session_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.lock_sessions().keys().cloned().collect();
        names.sort();
        names
    }

    /// Every live world: the default one first, then the sessions'.
    pub fn worlds(&self) -> Vec<Arc<World>> {
        let mut all = vec![self.world()];
        all.extend(self.lock_sessions().values().map(|s| s.world.clone()));
        all
    }

    /// Mark the server as stopping (releases hung connections).
    pub fn stop(&self) {
        self.stopping.send_replace(true);
    }

    pub fn is_stopping(&self) -> bool {
        *self.stopping.borrow()
    }

    pub async fn stopping(&self) {
        let mut rx = self.stopping.subscribe();
        let _ = rx.wait_for(|s| *s).await;
    }

    /// Close every world (at shutdown).
    pub fn close_all(&self) {
        for w in self.worlds() {
            w.server_stopped
                .store(true, std::sync::atomic::Ordering::Relaxed);
            w.close();
        }
    }
}

/// Whether two session selectors (a header's, a URL prefix's, a query's) name the same session.
pub fn same_session(a: Option<&str>, b: Option<&str>) -> bool {
    a.filter(|n| *n != "default") == b.filter(|n| *n != "default")
}

/// `None` and `"default"` mean the default session; anything else must be a valid name.
fn named(session: Option<&str>) -> Result<Option<&str>, SessionError> {
    match session {
        None | Some("default") => Ok(None),
        Some(n)
            if !n.is_empty()
                && n.len() <= 64
                && n.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) =>
        {
            Ok(Some(n))
        }
        Some(n) => Err(SessionError::BadName(n.chars().take(80).collect())),
    }
}

/// Rebuild worlds from journal lines, in order. Sessions map to their worlds (`None`: default).
fn replay(
    base: &Arc<Scenario>,
    limits: &Limits,
    journal: Option<&Arc<Journal>>,
    lines: Vec<Line>,
) -> HashMap<Option<String>, Arc<World>> {
    let mut worlds: HashMap<Option<String>, Arc<World>> = HashMap::new();
    let fresh = |session: &Option<String>, scenario: Arc<Scenario>, clock: Clock| {
        Arc::new(World::build(
            scenario,
            limits,
            session.clone(),
            journal,
            Some(clock),
        ))
    };
    let world_of = |worlds: &mut HashMap<Option<String>, Arc<World>>, session: &Option<String>| {
        worlds
            .entry(session.clone())
            .or_insert_with(|| fresh(session, base.clone(), Clock::new(base.clock)))
            .clone()
    };
    for line in lines {
        match line {
            Line::World {
                session,
                scenario,
                clock,
                epoch_ms,
            } => {
                let sc = match Scenario::from_toml(&scenario, "<journal>") {
                    Ok(s) if s.source == base.source => base.clone(),
                    Ok(s) => Arc::new(s),
                    Err(e) => {
                        tracing::warn!(error = %e, "journal: a journaled scenario no longer validates; using the one given");
                        base.clone()
                    }
                };
                let w = fresh(&session, sc, Clock::resume(clock, epoch_ms, Duration::ZERO));
                if let Some(old) = worlds.insert(session, w) {
                    old.close();
                }
            }
            Line::Record {
                session,
                record,
                key,
            } => {
                let w = world_of(&mut worlds, &session);
                let mut st = w.lock();
                if let (Some(k), Some(kept)) = (&record.idempotency_key, key) {
                    st.keys.remember(&record.service, k, *kept);
                }
                if record.disposition == crate::ledger::Disposition::Executed {
                    let route = w
                        .scenario
                        .service(&record.service)
                        .and_then(|s| record.route.as_deref().and_then(|r| s.route(r)));
                    if let Some(route) = route {
                        let mut stream = String::new();
                        route.write_fate_stream(
                            &mut stream,
                            &record.service,
                            record.intent.as_ref().map(|i| i.text().as_bytes()),
                            record.idempotency_key.as_deref(),
                        );
                        *st.counters.entry(stream).or_insert(0) += 1;
                    }
                    if let (Some(k), Some(_)) = (&record.idempotency_key, record.applies_at) {
                        st.by_key.insert(&record.service, k, record.seq);
                    }
                    if let (Some(id), Some(_)) = (&record.object_id, record.applies_at) {
                        st.by_object.insert(&record.service, id, record.seq);
                    }
                }
                w.clock.restore_now(record.received_at);
                st.ledger.restore(*record);
            }
            Line::Cancel { session, seq, at } => {
                let w = world_of(&mut worlds, &session);
                w.lock().ledger.update(seq, |r| r.cancelled_at = Some(at));
            }
            Line::Abandoned { session, seq, at } => {
                let w = world_of(&mut worlds, &session);
                w.lock().ledger.update(seq, |r| r.abandon(at));
            }
            Line::Key {
                session,
                service,
                key,
                record,
            } => {
                let w = world_of(&mut worlds, &session);
                w.lock().keys.remember(&service, &key, *record);
            }
            Line::Clock { session, now } => world_of(&mut worlds, &session).clock.restore_now(now),
            // Read by `journal::load`, which marks the delayed answers that have none.
            // Read by `journal::load`: the ledger puts placeholders where records are missing.
            Line::Delivered { .. } | Line::Unwritten { .. } => {}
            Line::Drop { session } => {
                if let Some(old) = worlds.remove(&Some(session)) {
                    old.close();
                }
            }
        }
    }
    worlds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_kinds_are_one_instance_each() {
        macro_rules! kinds {
            ($($k:ident),*) => { $( #[derive(Default)] struct $k(u8); )* };
        }
        kinds!(K0, K1, K2, K3, K4, K5, K6, K7, K8);
        let world = World::new(Arc::new(Scenario::quickstart()), None);
        let firsts: Vec<*const u8> = vec![
            &world.extension::<K0>().0,
            &world.extension::<K1>().0,
            &world.extension::<K2>().0,
            &world.extension::<K3>().0,
            &world.extension::<K4>().0,
            &world.extension::<K5>().0,
            &world.extension::<K6>().0,
            &world.extension::<K7>().0,
            &world.extension::<K8>().0,
        ];
        assert_eq!(world.extensions.len(), 9);
        assert_eq!(firsts[8], &world.extension::<K8>().0 as *const u8);
        assert_eq!(firsts[0], &world.extension::<K0>().0 as *const u8);
    }
}
