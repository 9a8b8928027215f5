//! What a task's script says, made concrete: placeholders in its texts and JSON expanded for
//! the task (`{{canary}}`, `{{task.id}}`, `{{context.id}}`, `{{revision}}`, `{{agent}}`,
//! `{{message.text}}`), and the canary token itself.

use std::cell::Cell;

use serde_json::Value;

use super::Entry;
use crate::agent::a2a::types::Part;
use crate::revision::Revision;
use crate::scenario::a2a::{PartContent, PartSpec};
use crate::template;
use crate::world::World;

/// The values of one task's placeholders; notes whether the canary was issued.
pub(crate) struct Render<'a> {
    pub(crate) task_id: &'a str,
    pub(crate) context_id: &'a str,
    pub(crate) revision: Option<&'a Value>,
    pub(crate) canary: &'a str,
    pub(crate) agent: &'a str,
    pub(crate) text: &'a str,
    pub(crate) used_canary: Cell<bool>,
}

impl template::Vars for Render<'_> {
    fn var(&self, name: &str) -> Option<Value> {
        Some(match name.trim() {
            "canary" => {
                self.used_canary.set(true);
                Value::from(self.canary)
            }
            "task.id" => Value::from(self.task_id),
            "context.id" => Value::from(self.context_id),
            "revision" => self.revision?.clone(),
            "agent" => Value::from(self.agent),
            "message.text" => Value::from(self.text),
            _ => return None,
        })
    }
}

impl Render<'_> {
    pub(crate) fn text(&self, s: &str) -> String {
        template::text(s, self)
    }

    pub(crate) fn json(&self, v: &Value) -> Value {
        template::json(v, self)
    }

    pub(crate) fn part(&self, p: &PartSpec) -> Part {
        let part = match &p.content {
            PartContent::Text(t) => Part::text(self.text(t)),
            PartContent::Raw(t) => Part::raw(self.text(t).as_bytes()),
            PartContent::Url(u) => Part::url(self.text(u)),
            PartContent::Data(d) => Part::data(self.json(d)),
        };
        part.extras(|e| {
            e.metadata = p
                .metadata
                .as_ref()
                .and_then(|m| self.json(m).as_object().cloned());
            (e.filename, e.media_type) = (p.filename.clone(), p.media_type.clone());
        })
    }
}

impl Entry {
    pub(crate) fn render(&self) -> Render<'_> {
        Render {
            task_id: &self.task.id,
            context_id: &self.task.context_id,
            revision: self.revision.as_ref(),
            canary: &self.canary,
            agent: &self.agent,
            text: &self.text,
            used_canary: Cell::new(false),
        }
    }
}

/// A token unique to (world seed, task, revision), `cny-` and 16 hex digits: it lets a later
/// check tell which task and revision produced a value that shows up somewhere else.
pub(crate) fn canary(world: &World, task_id: &str, revision: Option<&Value>) -> String {
    // The same token for the same revision however it was written (`1`, `1.0`, `"1"`).
    let rev = revision
        .and_then(Revision::of)
        .map(|r| serde_json::to_string(&r).unwrap_or_default())
        .unwrap_or_default();
    let stream = ["canary/", task_id, "/", &rev].concat();
    let h = crate::fate::stream_seed(world.seed, &stream, 0);
    ["cny-", &crate::hash::hex16(h)].concat()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn placeholders_expand_and_note_the_canary() {
        let rev = Value::from(2);
        let r = Render {
            task_id: "task-1",
            context_id: "ctx-1",
            revision: Some(&rev),
            canary: "cny-1",
            agent: "a",
            text: "hi",
            used_canary: Cell::new(false),
        };
        assert_eq!(r.text("t={{task.id}} r={{revision}}"), "t=task-1 r=2");
        assert!(!r.used_canary.get());
        assert_eq!(
            r.json(&json!({"n": "{{revision}}", "c": "x {{canary}}", "u": "{{nope}}"})),
            json!({"n": 2, "c": "x cny-1", "u": "{{nope}}"})
        );
        assert!(r.used_canary.get());
    }
}
