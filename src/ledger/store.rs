//! How the ledger keeps its records in memory: each [`Record`] in its serde form as MessagePack
//! (structs as arrays), back to back in chunks that never move ([`Chunks`]): a few hundred
//! bytes a record instead of ~2.5 KB as a Rust value. Derived from `Record`'s definition, so a
//! new field needs no change here; private to the process (the journal and APIs use `Record`
//! and `Entry`).

use std::collections::VecDeque;

use super::Record;
use crate::chunks::Chunks;

const CHUNK: usize = 1 << 20;

/// The encoded records of one ledger, oldest first.
pub(super) struct Store {
    chunks: Chunks,
    /// Where each record starts (a place in `chunks`).
    index: VecDeque<u64>,
    /// Reused for each record's encoding before it is copied into the chunks.
    scratch: Vec<u8>,
}

impl Default for Store {
    fn default() -> Store {
        Store {
            chunks: Chunks::new(CHUNK, CHUNK),
            index: VecDeque::new(),
            scratch: Vec::new(),
        }
    }
}

impl Store {
    pub(super) fn len(&self) -> usize {
        self.index.len()
    }

    /// Append an encoded copy of `r`.
    pub(super) fn push(&mut self, r: &Record) {
        let at = self.write(r);
        self.index.push_back(at);
    }

    /// Encode `r` again for position `i` (the old bytes stay, unused, until their chunk goes).
    pub(super) fn replace(&mut self, i: usize, r: &Record) {
        let at = self.write(r);
        if let Some(slot) = self.index.get_mut(i) {
            *slot = at;
        }
    }

    /// Forget the oldest record, and the chunks no remaining record starts in.
    pub(super) fn pop_front(&mut self) {
        self.index.pop_front();
        self.chunks.release_before(self.index.front().copied());
    }

    /// The record at position `i`, decoded.
    pub(super) fn get(&self, i: usize) -> Option<Record> {
        let bytes = self.chunks.from(*self.index.get(i)?)?;
        // Only bytes this store encoded from a `Record` are read: a failure would be a bug in
        // the format crate, and the record is then reported missing rather than panicking.
        rmp_serde::from_slice(bytes).ok()
    }

    fn write(&mut self, r: &Record) -> u64 {
        self.scratch.clear();
        // Writing into a `Vec` cannot fail, and every field of a `Record` has a MessagePack form.
        let _ = rmp_serde::encode::write(&mut self.scratch, r);
        self.chunks.place(&[&self.scratch])
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::{json, Value};

    use super::*;
    use crate::fate::Fate;
    use crate::ledger::Disposition;

    #[test]
    fn a_small_request_is_stored_in_a_few_hundred_bytes() {
        let mut s = Store::default();
        let mut r = Record::agent_event("pay", "", Duration::new(3, 1234), Value::Null);
        r.route = Some("create-transfer".into());
        r.method = "POST".into();
        r.path = "/v1/transfers".into();
        r.actor = None;
        r.event = None;
        r.detail = None;
        r.disposition = Disposition::Executed;
        r.idempotency_key = Some("k-0123456789abcdef".into());
        r.fingerprint = Some("0123456789abcdef".into());
        r.body = json!({"amount": 100, "currency": "usd", "to": "acct-42"}).into();
        r.intent = Some(r.body.clone());
        r.fate = Some(Fate::Respond);
        r.applies_at = Some(r.received_at);
        r.seq = 1;
        let mut buf = Vec::new();
        rmp_serde::encode::write(&mut buf, &r).unwrap();
        s.push(&r);
        assert!(buf.len() < 250, "{} bytes", buf.len());
    }
}
