//! Legacy-era sessions (`Mcp-Session-Id`): opened by `initialize`, ended by `DELETE`, one table
//! per world (a world extension, so reset and named sessions cover it). Ids are counted, not
//! drawn: the same run gives the same ids, and a fake has nothing to protect with unguessable
//! ones. Not journaled themselves: after a restart they are rebuilt from the ledger
//! (`super::restore`).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::sync::unpoisoned;

#[derive(Default)]
pub(crate) struct Sessions(Mutex<Table>);

#[derive(Default)]
struct Table {
    opened: u64,
    open: HashMap<String, Open>,
}

impl Table {
    /// Open session `id`, if it is `server`'s.
    fn of(&self, server: &str, id: &str) -> Option<&Open> {
        self.open.get(id).filter(|o| &*o.server == server)
    }
}

#[derive(Default)]
struct Open {
    server: Arc<str>,
    /// The version `initialize` settled on.
    version: &'static str,
    /// The latest tool calls' JSON-RPC ids (as JSON text) and action seqs, for a
    /// `notifications/cancelled` to name.
    calls: VecDeque<(String, u64)>,
    /// Tool calls admitted in this session so far.
    made: u64,
    /// The answers of resumable streams that were cut or delayed, by action seq, with the
    /// scenario time each is due, for a `GET` with `Last-Event-ID` to replay.
    streams: VecDeque<(u64, Duration, Vec<u8>)>,
}

/// Calls (and streams) a session remembers, the oldest forgotten past it: a client cancels
/// what it has in flight, which is never more than a few.
const CALLS_KEPT: usize = 256;

fn keep<T>(queue: &mut VecDeque<T>, item: T) {
    if queue.len() == CALLS_KEPT {
        queue.pop_front();
    }
    queue.push_back(item);
}

impl Sessions {
    /// A new session of `server`; its id.
    pub(crate) fn open(&self, server: &Arc<str>, version: &'static str) -> String {
        let mut t = unpoisoned(self.0.lock());
        t.opened += 1;
        let id = format!("{server}-{}", t.opened);
        let open = Open {
            server: server.clone(),
            version,
            ..Open::default()
        };
        t.open.insert(id.clone(), open);
        id
    }

    /// Session `id` of `server`, opened before a restart, open again (the count of sessions
    /// opened goes past its number).
    pub(crate) fn reopen(&self, server: &Arc<str>, id: &str, version: &'static str) {
        let mut t = unpoisoned(self.0.lock());
        let n = id.rsplit('-').next().and_then(|n| n.parse().ok());
        t.opened = t.opened.max(n.unwrap_or(0));
        let open = Open {
            server: server.clone(),
            version,
            ..Open::default()
        };
        t.open.insert(id.to_string(), open);
    }

    /// Remember that call `request_id` (JSON text) of session `id` is action `seq`.
    pub(crate) fn note_call(&self, id: &str, request_id: String, seq: u64) {
        let mut t = unpoisoned(self.0.lock());
        if let Some(o) = t.open.get_mut(id) {
            keep(&mut o.calls, (request_id, seq));
            o.made += 1;
        }
    }

    /// How many tool calls session `id` has made.
    pub(crate) fn calls_made(&self, id: &str) -> u64 {
        unpoisoned(self.0.lock()).open.get(id).map_or(0, |o| o.made)
    }

    /// Keep the answer of action `seq`'s stream in session `id`, for a resumption.
    pub(crate) fn keep_stream(&self, id: &str, seq: u64, due: Duration, answer: Vec<u8>) {
        let mut t = unpoisoned(self.0.lock());
        if let Some(o) = t.open.get_mut(id) {
            keep(&mut o.streams, (seq, due, answer));
        }
    }

    /// The kept answer of action `seq`'s stream in session `id` of `server`, and when it is due.
    pub(crate) fn stream_of(
        &self,
        server: &str,
        id: &str,
        seq: u64,
    ) -> Option<(Duration, Vec<u8>)> {
        let t = unpoisoned(self.0.lock());
        let o = t.of(server, id)?;
        o.streams
            .iter()
            .find(|(s, _, _)| *s == seq)
            .map(|(_, due, a)| (*due, a.clone()))
    }

    /// The action of call `request_id` (JSON text) in session `id` of `server`, latest first.
    pub(crate) fn call_of(&self, server: &str, id: &str, request_id: &str) -> Option<u64> {
        let t = unpoisoned(self.0.lock());
        let o = t.of(server, id)?;
        o.calls
            .iter()
            .rev()
            .find(|(r, _)| r == request_id)
            .map(|(_, seq)| *seq)
    }

    /// Whether session `id` of `server` made the call that became action `seq` (among those
    /// it remembers).
    pub(crate) fn made(&self, server: &str, id: &str, seq: u64) -> bool {
        let t = unpoisoned(self.0.lock());
        t.of(server, id)
            .is_some_and(|o| o.calls.iter().any(|(_, s)| *s == seq))
    }

    /// The version open session `id` of `server` speaks (another server's is unknown here).
    pub(crate) fn version(&self, server: &str, id: &str) -> Option<&'static str> {
        unpoisoned(self.0.lock()).of(server, id).map(|o| o.version)
    }

    /// End session `id` of `server`; whether it was open.
    pub(crate) fn close(&self, server: &str, id: &str) -> bool {
        let mut t = unpoisoned(self.0.lock());
        t.of(server, id).is_some() && t.open.remove(id).is_some()
    }
}
