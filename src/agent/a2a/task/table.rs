//! The task table: every task of a world's A2A agents by id, in creation order, and what each
//! agent's message ids first produced (for de-duplication and for the `repeat_of` of the
//! ledger). The parent module's header gives the lock order.

use std::sync::Arc;

use super::Shared;
use crate::agent::a2a::types::Message;
use crate::hash::FastMap;

pub(crate) struct Slot {
    /// Its place in creation order (see [`Table::insert`]), for stable listing.
    pub(crate) created: u64,
    pub(crate) entry: Shared,
}

/// What a message id first produced.
#[derive(Clone)]
pub(crate) enum Seen {
    Task(String),
    /// A direct reply (boxed: one of these is kept per message, and most name a task).
    Message(Box<Message>),
}

#[derive(Default)]
pub(crate) struct Table {
    pub(crate) tasks: FastMap<String, Slot>,
    /// How many tasks were ever put in: the next one's [`Slot::created`].
    created: u64,
    /// What each agent's messages (by messageId) first produced. By agent first, so that a
    /// message is looked up without copying its id; the agent's name here is the one tasks
    /// restored from the ledger share.
    pub(crate) seen: FastMap<Arc<str>, FastMap<String, Seen>>,
    /// The last number handed out (`task-N`, `ctx-N`, `msg-N`).
    pub(crate) next_id: u64,
}

impl Table {
    /// What the message `message_id` to `agent` first produced, if it came before.
    pub(crate) fn look(&self, agent: &str, message_id: &str) -> Option<&Seen> {
        self.seen.get(agent)?.get(message_id)
    }

    /// Notes what the message `message_id` to `agent` produced, unless one with that id came
    /// before (or always, with `replace`).
    pub(crate) fn note_seen(
        &mut self,
        agent: &str,
        message_id: &str,
        replace: bool,
        seen: impl FnOnce() -> Seen,
    ) {
        let of_agent = match self.seen.get_mut(agent) {
            Some(m) => m,
            None => self.seen.entry(agent.into()).or_default(),
        };
        match of_agent.get_mut(message_id) {
            Some(s) if replace => *s = seen(),
            Some(_) => {}
            None => {
                of_agent.insert(message_id.to_string(), seen());
            }
        }
    }

    /// `agent`'s name, as the tasks restored from the ledger share it (a task made by a call
    /// shares the scenario's).
    pub(crate) fn agent(&mut self, agent: &str) -> Arc<str> {
        if let Some((name, _)) = self.seen.get_key_value(agent) {
            return name.clone();
        }
        let name: Arc<str> = agent.into();
        self.seen.insert(name.clone(), FastMap::default());
        name
    }

    /// The task `id`, to lock once the table's lock is released.
    pub(crate) fn entry(&self, id: &str) -> Option<Shared> {
        self.tasks.get(id).map(|s| s.entry.clone())
    }

    /// Puts a task in, numbered in creation order (a task already there is replaced and keeps
    /// its place).
    pub(crate) fn insert(&mut self, id: &str, entry: Shared) {
        if let Some(old) = self.tasks.get_mut(id) {
            old.entry = entry;
            return;
        }
        let created = self.created;
        self.created += 1;
        self.tasks.insert(id.to_string(), Slot { created, entry });
    }

    pub(crate) fn ids_in_order(&self) -> Vec<String> {
        let mut ids: Vec<(u64, &String)> =
            self.tasks.iter().map(|(id, s)| (s.created, id)).collect();
        ids.sort_unstable();
        ids.into_iter().map(|(_, id)| id.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::agent::a2a::task::{lock_entry, Entry};
    use crate::agent::a2a::types::{Task, TaskState, TaskStatus};

    fn entry(id: &str) -> Shared {
        let task = Task {
            id: id.to_string(),
            status: TaskStatus::new(TaskState::Submitted, ""),
            ..Task::default()
        };
        let e = Entry {
            agent: "a".into(),
            task,
            revision_key: "revision".into(),
            capacity: 32,
            ..Entry::default()
        };
        Arc::new(Mutex::new(e))
    }

    #[test]
    fn tasks_keep_their_place_in_creation_order_and_messages_their_first_answer() {
        let mut table = Table::default();
        let ids = ["task-2", "task-07", "other", "task-1"];
        for id in ids {
            table.insert(id, entry(id));
        }
        // Put in again: replaced in place, its place in creation order kept.
        table.insert("task-2", entry("task-2"));
        assert_eq!(table.tasks.len(), 4);
        assert_eq!(table.ids_in_order(), ids);
        assert_eq!(lock_entry(&table.entry("other").unwrap()).task.id, "other");
        assert!(table.entry("task-3").is_none());

        table.note_seen("a", "m-1", false, || Seen::Task("task-1".into()));
        table.note_seen("a", "m-1", false, || Seen::Task("task-2".into()));
        assert!(matches!(table.look("a", "m-1"), Some(Seen::Task(t)) if t == "task-1"));
        table.note_seen("a", "m-1", true, || Seen::Task("task-2".into()));
        assert!(matches!(table.look("a", "m-1"), Some(Seen::Task(t)) if t == "task-2"));
        assert!(table.look("b", "m-1").is_none());
        assert!(Arc::ptr_eq(&table.agent("a"), &table.agent("a")));
    }
}
