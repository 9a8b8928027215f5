//! The `detail` of the A2A agents' ledger entries, written straight as the compact JSON text
//! `serde_json` would give for the `json!` tree (keys in sorted order, as a `Value` object keeps
//! them), for [`crate::ledger::Ledger::append_agent_event`].
//!
//! A blocking SendMessage round trip appends six agent entries; building each detail as a
//! `Value` tree (a string per key, a node per map), serialising it and dropping it again cost
//! more than the rest of the append. Callers give the keys in sorted order (checked in debug
//! builds); values are escaped exactly as `serde_json` escapes them.

use serde::Serialize;
use serde_json::Value;

use super::wire::json::write_str as escape;
use super::wire::Part;

/// A JSON object being written.
pub(super) struct Detail {
    buf: Vec<u8>,
    #[cfg(debug_assertions)]
    last: String,
}

impl Detail {
    /// An object written into `buf` (cleared), so a caller can reuse one buffer.
    pub(super) fn new(mut buf: Vec<u8>) -> Detail {
        buf.clear();
        buf.push(b'{');
        Detail {
            buf,
            #[cfg(debug_assertions)]
            last: String::new(),
        }
    }

    // Inlined where it is called with a literal: the key's length is then known there and its
    // copy a few stores, not a call to `memcpy` (a round trip writes some 26 keys).
    #[inline(always)]
    fn key(&mut self, key: &'static str) -> &mut Self {
        #[cfg(debug_assertions)]
        {
            assert!(
                self.last.is_empty() || self.last.as_str() < key,
                "detail keys out of order: {key} after {}",
                self.last
            );
            self.last = key.to_string();
        }
        if self.buf.len() > 1 {
            self.buf.push(b',');
        }
        // Keys are plain identifiers: nothing to escape.
        self.buf.push(b'"');
        self.buf.extend_from_slice(key.as_bytes());
        self.buf.extend_from_slice(b"\":");
        self
    }

    #[inline]
    pub(super) fn str(&mut self, key: &'static str, v: &str) -> &mut Self {
        self.key(key);
        escape(&mut self.buf, v);
        self
    }

    /// A string, or `null`.
    #[inline]
    pub(super) fn opt_str(&mut self, key: &'static str, v: Option<&str>) -> &mut Self {
        match v {
            Some(v) => self.str(key, v),
            None => self.null(key),
        }
    }

    #[inline]
    pub(super) fn null(&mut self, key: &'static str) -> &mut Self {
        self.key(key);
        self.buf.extend_from_slice(b"null");
        self
    }

    #[inline]
    pub(super) fn bool(&mut self, key: &'static str, v: bool) -> &mut Self {
        self.key(key);
        self.buf
            .extend_from_slice(if v { b"true" as &[u8] } else { b"false" });
        self
    }

    /// An array of strings.
    pub(super) fn str_seq<'a>(
        &mut self,
        key: &'static str,
        items: impl IntoIterator<Item = &'a str>,
    ) -> &mut Self {
        self.key(key);
        self.buf.push(b'[');
        for (i, s) in items.into_iter().enumerate() {
            if i > 0 {
                self.buf.push(b',');
            }
            escape(&mut self.buf, s);
        }
        self.buf.push(b']');
        self
    }

    /// A value, or `null`.
    pub(super) fn opt_value(&mut self, key: &'static str, v: Option<&Value>) -> &mut Self {
        match v {
            Some(v) => self.ser(key, v),
            None => self.null(key),
        }
    }

    /// Anything that serialises to the same text as its `Value` would (objects with sorted
    /// keys: `Value`s, `Map`s, this module's wire types, numbers, sequences of those).
    pub(super) fn ser(&mut self, key: &'static str, v: &(impl Serialize + ?Sized)) -> &mut Self {
        self.key(key);
        // Writing into a Vec cannot fail, and these types always serialise.
        let _ = serde_json::to_writer(&mut self.buf, v);
        self
    }

    /// A list of parts, the bytes their `Serialize` gives, written by hand
    /// ([`wire::json`](super::wire::json)).
    pub(super) fn parts(&mut self, key: &'static str, parts: &[Part]) -> &mut Self {
        self.key(key);
        super::wire::json::parts(&mut self.buf, parts);
        self
    }

    /// The object's text.
    pub(super) fn finish(&mut self) -> &[u8] {
        self.buf.push(b'}');
        &self.buf
    }

    /// The buffer back, for reuse.
    pub(super) fn into_buf(self) -> Vec<u8> {
        self.buf
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn details_are_the_text_of_their_json_trees() {
        let rev = json!({"b": [1, 2.5, null], "a": "x"});
        let mut d = Detail::new(Vec::new());
        d.str("a", "plain")
            .str("b", "q\"uote \\ \n\t\u{1}\u{7f} \u{e9}\u{1F600}")
            .opt_str("c", None)
            .opt_str("d", Some(""))
            .bool("e", true)
            .bool("f", false)
            .opt_value("g", Some(&rev))
            .opt_value("h", None)
            .ser("i", &[1u64, 2])
            .null("j")
            .str_seq("k", ["x", "\"y"])
            .str_seq("l", []);
        let want = json!({
            "a": "plain",
            "b": "q\"uote \\ \n\t\u{1}\u{7f} \u{e9}\u{1F600}",
            "c": null,
            "d": "",
            "e": true,
            "f": false,
            "g": rev,
            "h": null,
            "i": [1, 2],
            "j": null,
            "k": ["x", "\"y"],
            "l": [],
        });
        assert_eq!(d.finish(), serde_json::to_vec(&want).unwrap());
        let mut empty = Detail::new(d.into_buf());
        assert_eq!(empty.finish(), b"{}");
    }

    #[test]
    fn parts_are_written_as_serde_json_writes_them() {
        let mut md = serde_json::Map::new();
        md.insert("z".into(), json!(1));
        md.insert("a".into(), json!("\u{1}"));
        let every = [
            Part::text("hi \"there\"\n\u{7f}\u{e9}"),
            Part::data(json!({"b": 1, "a": {"d": 2, "c": 3}}))
                .with_filename("f.json")
                .with_media_type("application/json")
                .with_metadata(md),
            Part::raw(b"bytes").with_media_type("application/octet-stream"),
            Part::url("http://x/y").with_filename("y\\z"),
        ];
        for parts in [&every[..], &every[..1], &[]] {
            let mut by_hand = Detail::new(Vec::new());
            by_hand.parts("parts", parts);
            let mut by_serde = Detail::new(Vec::new());
            by_serde.ser("parts", parts);
            assert_eq!(
                String::from_utf8_lossy(by_hand.finish()),
                String::from_utf8_lossy(by_serde.finish())
            );
        }
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "out of order")]
    fn keys_out_of_order_are_caught() {
        Detail::new(Vec::new()).str("b", "").str("a", "");
    }
}
