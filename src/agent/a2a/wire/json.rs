//! The JSON text of a task, written by hand: the same bytes as the `Serialize` impls of
//! [`Task`], [`Message`], [`Part`], [`Artifact`] and [`TaskStatus`] give through serde_json (keys
//! in sorted order; a test compares them), for the answer to a blocking SendMessage.
//!
//! serde_json escapes strings a byte at a time through a table; here a string is checked eight
//! bytes at a time for anything to escape ([`crate::template::write_json_str`]) and copied whole
//! when there is nothing (almost always), else handed to serde_json. `Value`s (metadata, data parts) always
//! go through serde_json.

use serde::Serialize;

use super::{Artifact, Message, Part, PartContent, Task, TaskStatus};

/// `s` as a JSON string, escaped exactly as serde_json escapes it (shared with the fake
/// services' templates).
pub(in crate::agent::a2a) use crate::template::write_json_str as write_str;

/// An object being written, members in the order given.
struct Obj<'a> {
    out: &'a mut Vec<u8>,
    empty: bool,
}

impl<'a> Obj<'a> {
    fn new(out: &'a mut Vec<u8>) -> Obj<'a> {
        out.push(b'{');
        Obj { out, empty: true }
    }

    fn key(&mut self, key: &str) -> &mut Vec<u8> {
        if !self.empty {
            self.out.push(b',');
        }
        self.empty = false;
        // Keys here are plain identifiers.
        self.out.push(b'"');
        self.out.extend_from_slice(key.as_bytes());
        self.out.extend_from_slice(b"\":");
        self.out
    }

    fn str(&mut self, key: &str, v: &str) {
        write_str(self.key(key), v);
    }

    fn opt_str(&mut self, key: &str, v: Option<&String>) {
        if let Some(v) = v {
            self.str(key, v);
        }
    }

    fn strs(&mut self, key: &str, v: &[String]) {
        if !v.is_empty() {
            array(self.key(key), v, |out, s| write_str(out, s));
        }
    }

    /// Anything else, through serde_json.
    fn ser(&mut self, key: &str, v: &impl Serialize) {
        let _ = serde_json::to_writer(self.key(key), v);
    }

    fn list<T>(&mut self, key: &str, items: &[T], write: impl Fn(&mut Vec<u8>, &T)) {
        array(self.key(key), items, write);
    }

    fn end(self) {
        self.out.push(b'}');
    }
}

fn part(out: &mut Vec<u8>, p: &Part) {
    let mut o = Obj::new(out);
    if let PartContent::Data(d) = &p.content {
        o.ser("data", d);
    }
    o.opt_str("filename", p.filename());
    o.opt_str("mediaType", p.media_type());
    if let Some(md) = p.metadata() {
        o.ser("metadata", md);
    }
    match &p.content {
        PartContent::Raw(r) => o.str("raw", r),
        PartContent::Text(t) => o.str("text", t),
        PartContent::Url(u) => o.str("url", u),
        PartContent::Data(_) => {}
    }
    o.end();
}

/// What serde_json writes for a list of parts (an artifact's, in its ledger entry).
pub(in crate::agent::a2a) fn parts(out: &mut Vec<u8>, parts: &[Part]) {
    array(out, parts, part);
}

fn array<T>(out: &mut Vec<u8>, items: &[T], write: impl Fn(&mut Vec<u8>, &T)) {
    crate::template::write_json_array(out, items, write);
}

fn message(out: &mut Vec<u8>, m: &Message) {
    let mut o = Obj::new(out);
    o.opt_str("contextId", m.context_id.as_ref());
    o.strs("extensions", &m.extensions);
    o.str("messageId", &m.message_id);
    if let Some(md) = &m.metadata {
        o.ser("metadata", md);
    }
    o.list("parts", &m.parts, part);
    o.strs("referenceTaskIds", &m.reference_task_ids);
    o.str("role", m.role.as_str());
    o.opt_str("taskId", m.task_id.as_ref());
    o.end();
}

fn status(out: &mut Vec<u8>, s: &TaskStatus) {
    let mut o = Obj::new(out);
    if let Some(m) = &s.message {
        message(o.key("message"), m);
    }
    o.str("state", s.state.as_str());
    o.opt_str("timestamp", s.timestamp.as_ref());
    o.end();
}

fn artifact(out: &mut Vec<u8>, a: &Artifact) {
    let mut o = Obj::new(out);
    o.str("artifactId", &a.artifact_id);
    o.opt_str("description", a.description.as_ref());
    o.strs("extensions", &a.extensions);
    if let Some(md) = &a.metadata {
        o.ser("metadata", md);
    }
    o.opt_str("name", a.name.as_ref());
    o.list("parts", &a.parts, part);
    o.end();
}

/// What `serialize_task(t, history)` writes.
pub(super) fn task(out: &mut Vec<u8>, t: &Task, history: &[Message]) {
    let mut o = Obj::new(out);
    if !t.artifacts.is_empty() {
        o.list("artifacts", &t.artifacts, artifact);
    }
    o.str("contextId", &t.context_id);
    if !history.is_empty() {
        o.list("history", history, message);
    }
    o.str("id", &t.id);
    if let Some(md) = &t.metadata {
        o.ser("metadata", md);
    }
    status(o.key("status"), &t.status);
    o.end();
}
