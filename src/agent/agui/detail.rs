//! Ledger details written straight as JSON text.
//!
//! Every run records at least two entries (`run-started`, `run-finished`) whose details were
//! built as `serde_json::Value` trees only to be serialized into the ledger and dropped: a
//! String per member name, a node per value, all allocated and freed per request. A [`Detail`]
//! writes each member's value as compact JSON text as it is given and, at the end, puts the
//! members in name order: the same bytes as serializing the equivalent `Value` (whose maps keep
//! their members sorted, serde_json's `preserve_order` being off), which is what
//! [`crate::ledger::Ledger::append_with_detail`] expects.

use serde_json::Value;

use super::wire::write_json_str;

/// A JSON object whose members may be given in any order; member names are plain ASCII
/// literals (nothing to escape), each given once (a second value for a name replaces the first).
pub(crate) struct Detail {
    bufs: Bufs,
}

/// A detail's buffers, kept per thread between details (a run writes two): no allocation per
/// detail once they have grown.
#[derive(Default)]
struct Bufs {
    /// The members' values, back to back.
    values: Vec<u8>,
    /// The name's first eight bytes as a number that sorts as they do (see [`prefix`]), the
    /// name, and where its value lies in `values`.
    members: Vec<(u64, &'static str, usize, usize)>,
    /// The finished text.
    out: Vec<u8>,
}

thread_local! {
    static SPARE: std::cell::Cell<Option<Bufs>> = const { std::cell::Cell::new(None) };
}

impl Detail {
    pub(crate) fn new() -> Detail {
        // A detail begun while another is open on this thread (none is) gets buffers of its own.
        let mut bufs = SPARE.with(|s| s.take()).unwrap_or_default();
        bufs.values.clear();
        bufs.members.clear();
        bufs.out.clear();
        Detail { bufs }
    }

    /// Write a member's value with `f`.
    pub(crate) fn raw(&mut self, name: &'static str, f: impl FnOnce(&mut Vec<u8>)) {
        let start = self.bufs.values.len();
        f(&mut self.bufs.values);
        let end = self.bufs.values.len();
        let member = (prefix(name), name, start, end);
        // The prefixes first: an integer comparison settles most names without their bytes.
        match self
            .bufs
            .members
            .iter_mut()
            .find(|m| m.0 == member.0 && m.1 == name)
        {
            Some(m) => *m = member,
            None => self.bufs.members.push(member),
        }
    }

    pub(crate) fn str(&mut self, name: &'static str, v: &str) {
        self.raw(name, |out| write_json_str(out, v));
    }

    /// A string, or `null`.
    pub(crate) fn opt_str(&mut self, name: &'static str, v: Option<&str>) {
        match v {
            Some(v) => self.str(name, v),
            None => self.raw(name, |out| out.extend_from_slice(b"null")),
        }
    }

    pub(crate) fn bool(&mut self, name: &'static str, v: bool) {
        self.raw(name, |out| {
            out.extend_from_slice(if v { b"true" } else { b"false" })
        });
    }

    pub(crate) fn u64(&mut self, name: &'static str, v: u64) {
        self.raw(name, |out| write_u64(out, v));
    }

    /// An array of strings.
    pub(crate) fn strs<'s>(
        &mut self,
        name: &'static str,
        items: impl IntoIterator<Item = &'s str>,
    ) {
        self.raw(name, |out| write_strs(out, items));
    }

    /// An array of the protocol's literal names (event types): plain ASCII, nothing to escape.
    pub(crate) fn names(&mut self, name: &'static str, items: &[&'static str]) {
        self.raw(name, |out| {
            out.push(b'[');
            for (k, s) in items.iter().enumerate() {
                debug_assert!(s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'));
                if k > 0 {
                    out.push(b',');
                }
                out.push(b'"');
                out.extend_from_slice(s.as_bytes());
                out.push(b'"');
            }
            out.push(b']');
        });
    }

    /// A value as serde_json writes it.
    pub(crate) fn value(&mut self, name: &'static str, v: &Value) {
        self.raw(name, |out| {
            let _ = serde_json::to_writer(out, v);
        });
    }

    /// The object's text, members in name order, handed to `f`.
    pub(crate) fn finish<R>(mut self, f: impl FnOnce(&[u8]) -> R) -> R {
        let Bufs {
            values,
            members,
            out,
        } = &mut self.bufs;
        // Byte order of the names, as `String`'s `Ord` sorts a `Value`'s map; most names differ
        // within their first eight bytes.
        members.sort_unstable_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)));
        out.reserve(values.len() + 16 * members.len() + 2);
        out.push(b'{');
        for (k, (_, name, start, end)) in members.iter().enumerate() {
            if k > 0 {
                out.push(b',');
            }
            out.push(b'"');
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b"\":");
            out.extend_from_slice(&values[*start..*end]);
        }
        out.push(b'}');
        f(out)
    }

    /// [`Self::finish`] as a string.
    #[cfg(test)]
    pub(crate) fn finish_string(self) -> String {
        // Names are ASCII literals, values JSON text written from `&str`s and by serde.
        self.finish(|b| String::from_utf8_lossy(b).into_owned())
    }
}

impl Drop for Detail {
    fn drop(&mut self) {
        let bufs = std::mem::take(&mut self.bufs);
        // Only modest buffers are kept: a detail holding a large state should not pin it.
        if bufs.values.capacity() <= 1 << 16 && bufs.out.capacity() <= 1 << 16 {
            SPARE.with(|s| s.set(Some(bufs)));
        }
    }
}

/// A name's first eight bytes, big-endian, zero-padded: numbers that order as the names'
/// prefixes do (a shorter name is a prefix of a longer one only if it sorts first).
fn prefix(name: &str) -> u64 {
    let mut b = [0u8; 8];
    let n = name.len().min(8);
    b[..n].copy_from_slice(&name.as_bytes()[..n]);
    u64::from_be_bytes(b)
}

/// A number as serde_json writes it (no sign, no exponent: plain digits).
pub(crate) fn write_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(digits(v, &mut [0; 20]));
}

/// `v`'s decimal digits, written at the end of `buf`: two at a time (every frame carries a
/// thirteen-digit timestamp).
pub(crate) fn digits(mut v: u64, buf: &mut [u8; 20]) -> &[u8] {
    const PAIRS: &[u8; 200] = b"0001020304050607080910111213141516171819\
        2021222324252627282930313233343536373839\
        4041424344454647484950515253545556575859\
        6061626364656667686970717273747576777879\
        8081828384858687888990919293949596979899";
    let mut i = buf.len();
    while v >= 100 {
        let p = (v % 100) as usize * 2;
        v /= 100;
        i -= 2;
        buf[i..i + 2].copy_from_slice(&PAIRS[p..p + 2]);
    }
    if v >= 10 {
        let p = v as usize * 2;
        i -= 2;
        buf[i..i + 2].copy_from_slice(&PAIRS[p..p + 2]);
    } else {
        i -= 1;
        buf[i] = b'0' + v as u8;
    }
    &buf[i..]
}

/// `["a","b",...]`.
pub(crate) fn write_strs<'s>(out: &mut Vec<u8>, items: impl IntoIterator<Item = &'s str>) {
    crate::template::write_json_array(out, items, write_json_str);
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn digits_are_the_numbers_decimal_text() {
        let mut n = 1u64;
        for _ in 0..20 {
            for v in [
                n - 1,
                n,
                n + 1,
                n.wrapping_mul(7),
                n.wrapping_mul(10).wrapping_sub(1),
            ] {
                assert_eq!(digits(v, &mut [0; 20]), v.to_string().as_bytes());
            }
            n = n.saturating_mul(10);
        }
        assert_eq!(
            digits(u64::MAX, &mut [0; 20]),
            u64::MAX.to_string().as_bytes()
        );
    }

    #[test]
    fn a_detail_is_the_text_of_the_same_value() {
        let mut d = Detail::new();
        d.str("thread_id", "t-\"1\"\n");
        d.opt_str("parent_run_id", None);
        d.bool("continuation", false);
        d.u64("messages", 1234567890123);
        d.u64("zero", 0);
        d.strs("events", ["RUN_STARTED", "é\u{1}"]);
        d.strs("none", []);
        d.names("types", &["RUN_STARTED", "TEXT_MESSAGE_START"]);
        d.names("no_types", &[]);
        d.value("state", &json!({"b": 1, "a": [1.5, null]}));
        d.str("cause", "first");
        d.str("cause", "second");
        d.str("Upper", "sorts before lower case");
        d.str("cause_", "a longer name sorts after its prefix");
        d.str("continuation_id", "differs after eight bytes");
        let want = json!({
            "thread_id": "t-\"1\"\n",
            "parent_run_id": null,
            "continuation": false,
            "messages": 1234567890123u64,
            "zero": 0,
            "events": ["RUN_STARTED", "é\u{1}"],
            "none": [],
            "types": ["RUN_STARTED", "TEXT_MESSAGE_START"],
            "no_types": [],
            "state": {"b": 1, "a": [1.5, null]},
            "cause": "second",
            "Upper": "sorts before lower case",
            "cause_": "a longer name sorts after its prefix",
            "continuation_id": "differs after eight bytes",
        });
        assert_eq!(d.finish_string(), serde_json::to_string(&want).unwrap());
        assert_eq!(Detail::new().finish_string(), "{}");
    }
}
