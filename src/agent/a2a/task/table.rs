//! The task table's maps: tasks by id, and what each agent's message ids first produced.
//!
//! Both are keyed so that growing them under the table's lock moves numbers, not strings: the
//! lock is what every send waits on (see the parent module's header for the lock order).

use std::sync::Arc;

use super::Shared;
use crate::agent::a2a::types::Message;
use crate::hash::FastMap;

/// A map by string id whose table holds a 64-bit hash of each id (and the id beside its
/// value): growing it rehashes numbers, where a map keyed by the strings would read every key's
/// text, one cache miss each, under the task table's lock — 100 000 tasks and messages took
/// tens of milliseconds, which every call waiting on the lock then saw (the A2A figure's p99).
/// Ids whose hashes collide probe the next number; nothing is ever removed, so a probe ends at
/// the first free number. Every number has the bits of `mark` set (see [`TaskMap`]).
pub(super) struct IdMap<V> {
    map: FastMap<u64, (String, V)>,
    mark: u64,
}

impl<V> Default for IdMap<V> {
    fn default() -> Self {
        IdMap {
            map: FastMap::default(),
            mark: 0,
        }
    }
}

impl<V> IdMap<V> {
    pub(super) fn hash(id: &str) -> u64 {
        use std::hash::BuildHasher;
        crate::hash::FastState::default().hash_one(id)
    }

    /// Where `id` is, or the free number it would go to.
    pub(super) fn slot(&self, id: &str) -> (u64, bool) {
        let mut h = Self::hash(id) | self.mark;
        loop {
            match self.map.get(&h) {
                Some((k, _)) if k == id => return (h, true),
                Some(_) => h = h.wrapping_add(1) | self.mark,
                None => return (h, false),
            }
        }
    }

    /// The number `id` is kept under, if it is there: it stays its own, since nothing is
    /// removed.
    pub(super) fn key(&self, id: &str) -> Option<u64> {
        match self.slot(id) {
            (h, true) => Some(h),
            _ => None,
        }
    }

    /// The id and value kept under the number `key` (see [`IdMap::key`]).
    pub(super) fn at(&self, key: u64) -> Option<(&String, &V)> {
        self.map.get(&key).map(|(k, v)| (k, v))
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (&String, &V)> {
        self.map.values().map(|(k, v)| (k, v))
    }

    pub(super) fn len(&self) -> usize {
        self.map.len()
    }
}

/// The tasks by id. The ids the table hands out, `task-N`, index a vector by
/// N: no hashing, no copy of the id (it is written again when needed), 16 bytes a task, and
/// growing it moves no ids. Any other id (a journal's, which doubleagent did not write, or an N
/// far beyond the others) goes in an [`IdMap`] whose keys have the top bit set, so a key names
/// a task either way (N, or the map's number).
pub(super) struct TaskMap {
    dense: Vec<Option<Slot>>,
    dense_len: usize,
    other: IdMap<Slot>,
}

/// Keys of [`TaskMap::other`] have it set; a `task-N` key is N, below it.
pub(super) const OTHER: u64 = 1 << 63;

/// How far past the vector's end a `task-N` may land and still go in it (the numbers between are
/// left empty): direct replies take numbers too, and a journal may skip some.
const DENSE_SLACK: usize = 4096;

impl Default for TaskMap {
    fn default() -> Self {
        TaskMap {
            dense: Vec::new(),
            dense_len: 0,
            other: IdMap {
                map: FastMap::default(),
                mark: OTHER,
            },
        }
    }
}

/// N of `task-N` as the table writes it (no sign, no leading zero), if `id` is one.
pub(super) fn task_number(id: &str) -> Option<u64> {
    let digits = id.strip_prefix("task-")?;
    let canonical = !digits.is_empty()
        && digits.len() <= 18
        && digits.bytes().all(|b| b.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    canonical.then(|| digits.parse().ok()).flatten()
}

impl TaskMap {
    /// The task's key, if it is there: it stays its own, since nothing is removed.
    pub(super) fn key(&self, id: &str) -> Option<u64> {
        if let Some(n) = task_number(id) {
            if self.dense.get(n as usize).is_some_and(Option::is_some) {
                return Some(n);
            }
        }
        self.other.key(id)
    }

    pub(super) fn at(&self, key: u64) -> Option<&Slot> {
        if key & OTHER == 0 {
            self.dense.get(key as usize)?.as_ref()
        } else {
            self.other.at(key).map(|(_, s)| s)
        }
    }

    /// The id of the task under `key`.
    pub(super) fn id_at(&self, key: u64) -> Option<String> {
        if key & OTHER == 0 {
            self.at(key).map(|_| format!("task-{key}"))
        } else {
            self.other.at(key).map(|(id, _)| id.clone())
        }
    }

    pub(super) fn get(&self, id: &str) -> Option<&Slot> {
        self.at(self.key(id)?)
    }

    pub(super) fn get_mut(&mut self, key: u64) -> Option<&mut Slot> {
        if key & OTHER == 0 {
            self.dense.get_mut(key as usize)?.as_mut()
        } else {
            self.other.map.get_mut(&key).map(|(_, s)| s)
        }
    }

    /// Puts in a task that is not there yet; returns its key.
    pub(super) fn put(&mut self, id: &str, slot: Slot) -> u64 {
        if let Some(n) = task_number(id).filter(|&n| (n as usize) < self.dense.len() + DENSE_SLACK)
        {
            let i = n as usize;
            if i >= self.dense.len() {
                self.dense.resize_with(i + 1, || None);
            }
            if self.dense[i].is_none() {
                self.dense[i] = Some(slot);
                self.dense_len += 1;
                return n;
            }
        }
        let (h, _) = self.other.slot(id);
        self.other.map.insert(h, (id.to_string(), slot));
        h
    }

    /// Every task with its id (written again for `task-N`).
    pub(super) fn iter(&self) -> impl Iterator<Item = (String, &Slot)> {
        let dense = self
            .dense
            .iter()
            .enumerate()
            .filter_map(|(n, s)| s.as_ref().map(|s| (format!("task-{n}"), s)));
        dense.chain(self.other.iter().map(|(id, s)| (id.clone(), s)))
    }

    pub(super) fn values(&self) -> impl Iterator<Item = &Slot> {
        let dense = self.dense.iter().flatten();
        dense.chain(self.other.map.values().map(|(_, s)| s))
    }

    pub(super) fn len(&self) -> usize {
        self.dense_len + self.other.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A task's place in the table.
pub(super) struct Slot {
    /// Its place in creation order (see [`Table::insert`]), for stable listing.
    pub(super) created: u64,
    pub(super) entry: Shared,
}

#[derive(Default)]
pub(super) struct Table {
    pub(super) tasks: TaskMap,
    /// How many tasks were ever put in: the next one's [`Entry::created`].
    pub(super) created: u64,
    /// What each agent's messages (by messageId) first produced, for de-duplication and for
    /// the ledger. By agent first, so that a message is looked up without copying its id; the
    /// agent's name here is the one tasks restored from the ledger share.
    pub(super) seen: FastMap<Arc<str>, IdMap<Seen>>,
    pub(super) next_id: u64,
}

impl Table {
    /// What the message `message_id` to `agent` first produced, if it came before, and the
    /// number the message id is kept under or would go to, for
    /// [`Table::note_seen`] to use instead of hashing and probing again (it checks the number
    /// still fits: the lock may have been released in between).
    pub(super) fn look(&self, agent: &str, message_id: &str) -> (Option<&Seen>, Option<u64>) {
        let Some(of_agent) = self.seen.get(agent) else {
            return (None, None);
        };
        let (h, found) = of_agent.slot(message_id);
        let seen = found.then(|| of_agent.map.get(&h).map(|(_, s)| s));
        (seen.flatten(), Some(h))
    }

    /// Notes what the message `message_id` to `agent` produced, unless one with that id came
    /// before (or always, with `replace`). The id is copied only if it is new (an owned one,
    /// made before the table's lock was taken, is moved in).
    /// `at` is what [`Table::look`] gave, if anything.
    pub(super) fn note_seen(
        &mut self,
        agent: &str,
        message_id: impl AsRef<str> + Into<String>,
        at: Option<u64>,
        replace: bool,
        seen: impl FnOnce() -> Seen,
    ) {
        let id = message_id.as_ref();
        let of_agent = match self.seen.get_mut(agent) {
            Some(m) => m,
            None => self.seen.entry(agent.into()).or_default(),
        };
        let slot = match at.map(|h| (h, of_agent.map.get(&h))) {
            Some((h, Some((k, _)))) if k == id => (h, true),
            Some((h, None)) => (h, false),
            _ => of_agent.slot(id),
        };
        match slot {
            (h, true) if replace => {
                if let Some((_, s)) = of_agent.map.get_mut(&h) {
                    *s = seen();
                }
            }
            (_, true) => {}
            (h, false) => {
                of_agent.map.insert(h, (message_id.into(), seen()));
            }
        }
    }

    /// `agent`'s name, as the tasks restored from the ledger share it (a task made by a call
    /// shares the scenario's).
    pub(super) fn agent(&mut self, agent: &str) -> Arc<str> {
        if let Some((name, _)) = self.seen.get_key_value(agent) {
            return name.clone();
        }
        let name: Arc<str> = agent.into();
        self.seen.insert(name.clone(), IdMap::default());
        name
    }

    /// The task `id`, to lock once the table's lock is released.
    pub(super) fn entry(&self, id: &str) -> Option<Shared> {
        self.tasks.get(id).map(|s| s.entry.clone())
    }

    /// Puts a task in, numbered in creation order (a task already there is replaced and keeps
    /// its place). Returns its key (see [`TaskMap`]).
    pub(super) fn insert(&mut self, id: &str, entry: Shared) -> u64 {
        if let Some(key) = self.tasks.key(id) {
            if let Some(old) = self.tasks.get_mut(key) {
                old.entry = entry;
            }
            return key;
        }
        let created = self.created;
        self.created += 1;
        self.tasks.put(id, Slot { created, entry })
    }

    /// The task kept under `key` (see [`TaskMap`]).
    pub(super) fn task_at(&self, key: u64) -> Option<&Shared> {
        self.tasks.at(key).map(|s| &s.entry)
    }

    /// The tasks' ids in creation order.
    pub(super) fn ids_in_order(&self) -> Vec<String> {
        let mut ids: Vec<(u64, String)> =
            self.tasks.iter().map(|(id, s)| (s.created, id)).collect();
        ids.sort_unstable();
        ids.into_iter().map(|(_, id)| id).collect()
    }
}

#[derive(Clone)]
pub(super) enum Seen {
    /// The task's key in the table (see [`TaskMap`]), not a copy of its id.
    Task(u64),
    /// Boxed: one of these is kept per message, and most name a task.
    Message(Box<Message>),
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::agent::a2a::task::{lock_entry, Entry};
    use crate::agent::a2a::types::{Task, TaskState, TaskStatus};
    use crate::scenario::a2a::CancelPolicy;

    #[test]
    fn the_task_map_keeps_handed_out_ids_by_number_and_any_other_by_hash() {
        for (id, n) in [
            ("task-0", Some(0)),
            ("task-7", Some(7)),
            ("task-123", Some(123)),
        ] {
            assert_eq!(task_number(id), n, "{id}");
        }
        for id in [
            "task-",
            "task-07",
            "task--1",
            "task-+1",
            "task-1x",
            "Task-1",
            "msg-3",
            "task-1234567890123456789",
        ] {
            assert_eq!(task_number(id), None, "{id}");
        }
        let mut table = Table::default();
        let entry = |id: &str| {
            Arc::new(std::sync::Mutex::new(Entry {
                agent: "a".into(),
                task: Task {
                    artifacts: Vec::new(),
                    context_id: String::new(),
                    history: Vec::new(),
                    id: id.to_string(),
                    metadata: None,
                    status: TaskStatus::new(TaskState::Submitted, ""),
                },
                revision: None,
                revision_key: "revision".into(),
                canary: String::new(),
                canary_issued: false,
                start: Duration::ZERO,
                script: None,
                timeline: Vec::new(),
                cursor: 0,
                generation: 0,
                cancel: CancelPolicy::Honor,
                text: String::new(),
                events: None,
                capacity: 32,
                push: Vec::new(),
            }))
        };
        let ids = ["task-2", "task-07", "task-99999", "other", "task-1"];
        let keys: Vec<u64> = ids.iter().map(|id| table.insert(id, entry(id))).collect();
        assert_eq!(keys[0], 2);
        assert_eq!(keys[4], 1);
        assert!(keys[1..4].iter().all(|k| k & OTHER != 0), "{keys:?}");
        for (id, key) in ids.iter().zip(&keys) {
            assert_eq!(table.tasks.key(id), Some(*key));
            assert_eq!(table.tasks.id_at(*key).as_deref(), Some(*id));
            let cell = table.entry(id).unwrap();
            assert_eq!(lock_entry(&cell).task.id, *id);
        }
        assert_eq!(table.tasks.key("task-3"), None);
        assert_eq!(table.tasks.len(), 5);
        // Put in again: replaced in place, its key and place in creation order kept.
        assert_eq!(table.insert("task-2", entry("task-2")), 2);
        assert_eq!(table.insert("other", entry("other")), keys[3]);
        assert_eq!(table.tasks.len(), 5);
        assert_eq!(table.ids_in_order(), ids);
    }
}
