//! Legacy-era sessions (`Mcp-Session-Id`): opened by `initialize`, ended by `DELETE`, one table
//! per world (a world extension, so reset and named sessions cover it). Ids are counted, not
//! drawn: the same run gives the same ids, and a fake has nothing to protect with unguessable
//! ones. Not journaled: after a restart a client gets 404 and re-initializes, as the spec says a
//! client of an expired session must.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::sync::unpoisoned;

/// One open session.
#[derive(Clone, Debug)]
pub(crate) struct Session {
    pub(crate) server: Arc<str>,
    /// The version `initialize` settled on.
    pub(crate) version: &'static str,
}

#[derive(Default)]
pub(crate) struct Sessions(Mutex<Table>);

#[derive(Default)]
struct Table {
    opened: u64,
    open: HashMap<String, Session>,
}

impl Sessions {
    /// A new session of `server`; its id.
    pub(crate) fn open(&self, server: &Arc<str>, version: &'static str) -> String {
        let mut t = unpoisoned(self.0.lock());
        t.opened += 1;
        let id = format!("{server}-{}", t.opened);
        let s = Session {
            server: server.clone(),
            version,
        };
        t.open.insert(id.clone(), s);
        id
    }

    /// The open session `id` of `server` (another server's is unknown here).
    pub(crate) fn get(&self, server: &str, id: &str) -> Option<Session> {
        let t = unpoisoned(self.0.lock());
        t.open.get(id).filter(|s| &*s.server == server).cloned()
    }

    /// End session `id` of `server`; whether it was open.
    pub(crate) fn close(&self, server: &str, id: &str) -> bool {
        let mut t = unpoisoned(self.0.lock());
        let known = t.open.get(id).is_some_and(|s| &*s.server == server);
        if known {
            t.open.remove(id);
        }
        known
    }
}
