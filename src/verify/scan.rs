//! A strict scanner for ledger lines written the way the exporter writes them: compact JSON
//! (no whitespace), strings without escapes, integers where numbers are read. It yields the same
//! [`Wire`] serde would, several times faster, or nothing: anything it is not sure of (an
//! escape, a float, whitespace, a repeated field, deep nesting, a value of an unexpected type)
//! sends the line to serde, which decides. So it accepts a subset of what serde accepts, with
//! the same result, and never rejects a line serde would read.
//!
//! A million lines are ~600 MB of JSON: serde's generic machinery (a visitor call per token,
//! field names matched one by one) was most of `verify`'s time once entries were no longer
//! built.

use std::borrow::Cow;

use serde_json::Value;

use super::jsonl::{Canonical, Revision, Skipped, Str, Valid, Wire, WireResponse};
use crate::ledger::{Delivery, Disposition};
use crate::template::escape_at;

/// `Entry`'s fields, in the order it serializes them.
const FIELDS: [&str; 25] = [
    "seq",
    "service",
    "route",
    "method",
    "path",
    "received_at",
    "idempotency_key",
    "fingerprint",
    "intent",
    "work_id",
    "revision",
    "body",
    "body_truncated",
    "disposition",
    "replay_of",
    "executed_after_expiry",
    "fate",
    "action_id",
    "applied",
    "applied_at",
    "cancelled_at",
    "response",
    "actor",
    "event",
    "detail",
];

/// Nesting deeper than this goes to serde (whose own limit is 128).
const MAX_DEPTH: usize = 64;

/// The line as serde would read it into a [`Wire`], if it is in the scanner's subset.
pub(super) fn wire(line: &str) -> Option<Wire<'_>> {
    let mut s = Scan {
        text: line,
        b: line.as_bytes(),
        i: 0,
    };
    let w = s.entry()?;
    (s.i == s.b.len()).then_some(w)
}

struct Scan<'a> {
    text: &'a str,
    b: &'a [u8],
    i: usize,
}

/// Which fields were seen (serde rejects a repeated one).
#[derive(Default)]
struct Seen(u32);

impl Seen {
    fn first(&mut self, bit: u32) -> Option<()> {
        let fresh = self.0 & (1 << bit) == 0;
        self.0 |= 1 << bit;
        fresh.then_some(())
    }
}

impl<'a> Scan<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        (self.peek()? == c).then(|| self.i += 1)
    }

    fn eat_word(&mut self, w: &[u8]) -> Option<()> {
        self.b[self.i..].starts_with(w).then(|| self.i += w.len())
    }

    fn null(&mut self) -> bool {
        self.eat_word(b"null").is_some()
    }

    /// A string without escapes or control characters (which serde refuses unescaped).
    fn string(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.i;
        let end = start + escape_at(&self.b[start..])?;
        if self.b[end] != b'"' {
            return None;
        }
        self.i = end + 1;
        // Quotes are ASCII: both ends are character boundaries.
        self.text.get(start..end)
    }

    fn opt_string(&mut self) -> Option<Option<&'a str>> {
        if self.null() {
            return Some(None);
        }
        self.string().map(Some)
    }

    fn bool(&mut self) -> Option<bool> {
        if self.eat_word(b"true").is_some() {
            Some(true)
        } else {
            self.eat_word(b"false").map(|()| false)
        }
    }

    /// An integer (JSON's grammar, no fraction or exponent) of at most 20 digits, as text;
    /// anything else that is a number goes to serde.
    fn integer(&mut self) -> Option<&'a str> {
        let start = self.i;
        self.eat(b'-');
        let digits = self.b[self.i..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        let first = self.peek()?;
        if digits == 0 || digits > 20 || (first == b'0' && digits > 1) {
            return None;
        }
        self.i += digits;
        if matches!(self.peek(), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        self.text.get(start..self.i)
    }

    fn u64(&mut self) -> Option<u64> {
        self.integer()?.parse().ok()
    }

    fn opt_u64(&mut self) -> Option<Option<u64>> {
        if self.null() {
            return Some(None);
        }
        self.u64().map(Some)
    }

    /// Any value, checked and skipped; its text.
    fn value(&mut self, depth: usize) -> Option<&'a str> {
        let start = self.i;
        match self.peek()? {
            b'"' => {
                self.string()?;
            }
            b'{' => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                self.i += 1;
                if self.eat(b'}').is_none() {
                    loop {
                        self.string()?;
                        self.eat(b':')?;
                        self.value(depth + 1)?;
                        if self.eat(b',').is_none() {
                            break;
                        }
                    }
                    self.eat(b'}')?;
                }
            }
            b'[' => {
                if depth >= MAX_DEPTH {
                    return None;
                }
                self.i += 1;
                if self.eat(b']').is_none() {
                    loop {
                        self.value(depth + 1)?;
                        if self.eat(b',').is_none() {
                            break;
                        }
                    }
                    self.eat(b']')?;
                }
            }
            b't' | b'f' => {
                self.bool()?;
            }
            b'n' => {
                if !self.null() {
                    return None;
                }
            }
            _ => {
                self.integer()?;
            }
        }
        self.text.get(start..self.i)
    }

    fn entry(&mut self) -> Option<Wire<'a>> {
        let mut w = Wire::default();
        let mut seen = Seen::default();
        let mut next = 0;
        self.eat(b'{')?;
        if self.eat(b'}').is_some() {
            return Some(w);
        }
        loop {
            let key = self.string()?;
            self.eat(b':')?;
            let str = |s: &'a str| Str(Cow::Borrowed(s));
            // Fields mostly come in `Entry`'s order: try the one expected next first.
            let field = if FIELDS.get(next) == Some(&key) {
                next
            } else {
                FIELDS
                    .iter()
                    .position(|f| *f == key)
                    .unwrap_or(FIELDS.len())
            };
            if field < FIELDS.len() {
                seen.first(field as u32)?;
                next = field + 1;
            }
            match field {
                0 => {
                    // seq
                    w.seq = self.u64()?;
                }
                1 => {
                    // service
                    w.service = str(self.string()?);
                }
                2 => {
                    // route
                    w.route = self.opt_string()?.map(str);
                }
                3 => {
                    // method
                    self.string()?;
                }
                4 => {
                    // path
                    self.string()?;
                }
                5 => {
                    // received_at
                    self.string()?;
                }
                6 => {
                    // idempotency_key
                    w.idempotency_key = self.opt_string()?.map(str);
                }
                7 => {
                    // fingerprint
                    w.fingerprint = self.opt_string()?.map(|_| Skipped);
                }
                8 => {
                    // intent
                    w.intent = if self.null() {
                        None
                    } else {
                        let raw = self.value(1)?;
                        Some(if canonical(raw.as_bytes()) {
                            Canonical(Cow::Borrowed(raw))
                        } else {
                            serde_json::from_str::<Canonical>(raw).ok()?
                        })
                    };
                }
                9 => {
                    // work_id
                    w.work_id = self.opt_string()?.map(str);
                }
                10 => {
                    // revision
                    w.revision = if self.null() {
                        None
                    } else {
                        let start = self.i;
                        let raw = self.value(1)?;
                        let int = self.b[start] == b'-' || self.b[start].is_ascii_digit();
                        // An integer that is not an i64 (a u64 above i64::MAX) reads as none,
                        // and so does `-0`, a float (-0.0) to serde.
                        Some(Revision(if int && raw != "-0" {
                            raw.parse().ok()
                        } else {
                            None
                        }))
                    };
                }
                11 => {
                    // body
                    self.value(1)?;
                    w.body = Valid;
                }
                12 => {
                    // body_truncated
                    w.body_truncated = self.bool()?;
                }
                13 => {
                    // disposition
                    w.disposition = disposition(self.string()?)?;
                }
                14 => {
                    // replay_of
                    w.replay_of = self.opt_u64()?;
                }
                15 => {
                    // executed_after_expiry
                    w.executed_after_expiry = self.bool()?;
                }
                16 => {
                    // fate
                    w.fate = self.opt_string()?.map(str);
                }
                17 => {
                    // action_id
                    w.action_id = self.opt_string()?.map(str);
                }
                18 => {
                    // applied
                    w.applied = self.bool()?;
                }
                19 => {
                    // applied_at
                    w.applied_at = self.opt_string()?.map(|_| Skipped);
                }
                20 => {
                    // cancelled_at
                    w.cancelled_at = self.opt_string()?.map(|_| Skipped);
                }
                21 => {
                    // response
                    w.response = self.response()?;
                }
                22 => {
                    // actor
                    w.actor = self.opt_string()?.map(str);
                }
                23 => {
                    // event
                    w.event = self.opt_string()?.map(str);
                }
                24 => {
                    // detail
                    w.detail = if self.null() {
                        None
                    } else {
                        Some(serde_json::from_str::<Value>(self.value(1)?).ok()?)
                    };
                }
                _ => {
                    // A field Entry does not have: skipped, as serde does (repeats included).
                    self.value(1)?;
                }
            }
            if self.eat(b',').is_none() {
                break;
            }
        }
        self.eat(b'}')?;
        Some(w)
    }

    fn response(&mut self) -> Option<WireResponse> {
        let mut r = WireResponse::default();
        let mut seen = Seen::default();
        self.eat(b'{')?;
        if self.eat(b'}').is_some() {
            return Some(r);
        }
        loop {
            let key = self.string()?;
            self.eat(b':')?;
            match key {
                "delivery" => {
                    seen.first(0)?;
                    r.delivery = delivery(self.string()?)?;
                }
                "status" => {
                    seen.first(1)?;
                    r.status = match self.opt_u64()? {
                        None => None,
                        Some(n) => Some(u16::try_from(n).ok()?),
                    };
                }
                "at" => {
                    seen.first(2)?;
                    r.at = self.opt_string()?.map(|_| Skipped);
                }
                _ => {
                    self.value(2)?;
                }
            }
            if self.eat(b',').is_none() {
                break;
            }
        }
        self.eat(b'}')?;
        Some(r)
    }
}

fn disposition(s: &str) -> Option<Disposition> {
    Some(match s {
        "executed" => Disposition::Executed,
        "replayed" => Disposition::Replayed,
        "conflict" => Disposition::Conflict,
        "mismatch" => Disposition::Mismatch,
        "missing-key" => Disposition::MissingKey,
        "lookup" => Disposition::Lookup,
        "cancel" => Disposition::Cancel,
        "unmatched" => Disposition::Unmatched,
        "too-large" => Disposition::TooLarge,
        "agent" => Disposition::Agent,
        "declaration" => Disposition::Declaration,
        _ => return None,
    })
}

fn delivery(s: &str) -> Option<Delivery> {
    Some(match s {
        "sent" => Delivery::Sent,
        "dropped" => Delivery::Dropped,
        "reset" => Delivery::Reset,
        "hung" => Delivery::Hung,
        "pending" => Delivery::Pending,
        _ => return None,
    })
}

/// Whether a value's text (checked by [`Scan::value`]) is already what `Value::to_string`
/// would write for it: object keys in strictly increasing order, and every integer one a
/// `Value` keeps as an integer, written as it writes it. (Its strings have no escapes, and it
/// has no whitespace and no float, or the scan would have refused it.)
fn canonical(b: &[u8]) -> bool {
    let mut i = 0;
    // The last key seen at each open object's level.
    let mut keys: Vec<Option<&[u8]>> = Vec::new();
    while i < b.len() {
        match b[i] {
            b'{' => {
                keys.push(None);
                i += 1;
            }
            b'}' => {
                keys.pop();
                i += 1;
            }
            b'"' => {
                // The scan let no escape through: the first stop is the closing quote.
                let len = escape_at(&b[i + 1..]).unwrap_or(0);
                let s = &b[i + 1..i + 1 + len];
                i += len + 2;
                if b.get(i) == Some(&b':') {
                    match keys.last_mut() {
                        Some(last) => {
                            if last.is_some_and(|l| l >= s) {
                                return false;
                            }
                            *last = Some(s);
                        }
                        None => return false,
                    }
                }
            }
            b'-' | b'0'..=b'9' => {
                let len = b[i..]
                    .iter()
                    .position(|c| !(c.is_ascii_digit() || *c == b'-'))
                    .unwrap_or(b.len() - i);
                let n = &b[i..i + len];
                // `-0` is a float (-0.0) to serde; beyond u64 (or below i64) it is a float too.
                let int = if n[0] == b'-' {
                    n != b"-0" && std::str::from_utf8(n).is_ok_and(|t| t.parse::<i64>().is_ok())
                } else {
                    std::str::from_utf8(n).is_ok_and(|t| t.parse::<u64>().is_ok())
                };
                if !int {
                    return false;
                }
                i += len;
            }
            _ => i += 1,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ledger::Entry;

    /// Everything of a [`Wire`] that rows are made of.
    fn kept(w: &Wire) -> String {
        format!(
            "{:?}",
            (
                (
                    w.seq,
                    &w.service.0,
                    w.route.as_ref().map(|s| &s.0),
                    w.idempotency_key.as_ref().map(|s| &s.0),
                    w.fingerprint.is_some(),
                    w.intent.as_ref().map(|c| &c.0),
                    w.work_id.as_ref().map(|s| &s.0),
                    w.revision.as_ref().map(|r| r.0),
                    w.body_truncated,
                    w.disposition,
                    w.replay_of,
                    w.executed_after_expiry,
                ),
                (
                    w.fate.as_ref().map(|s| &s.0),
                    w.action_id.as_ref().map(|s| &s.0),
                    w.applied,
                    w.applied_at.is_some(),
                    w.cancelled_at.is_some(),
                    w.response.delivery,
                    w.response.status,
                    w.response.at.is_some(),
                    w.actor.as_ref().map(|s| &s.0),
                    w.event.as_ref().map(|s| &s.0),
                    &w.detail,
                ),
            )
        )
    }

    /// What the scanner reads, serde reads the same way.
    fn agrees(line: &str) -> bool {
        let Some(fast) = wire(line) else {
            return false;
        };
        match serde_json::from_str::<Wire>(line) {
            Ok(w) => assert_eq!(kept(&fast), kept(&w), "{line}"),
            Err(e) => panic!("the scanner read a line serde refuses ({e}): {line}"),
        }
        true
    }

    /// Lines as the exporter writes them (serde_json from entries), from every fixture.
    fn exported() -> Vec<String> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/verify");
        let mut lines = Vec::new();
        for f in std::fs::read_dir(dir).unwrap() {
            let text = std::fs::read_to_string(f.unwrap().path()).unwrap();
            for l in text.lines().filter(|l| !l.trim().is_empty()) {
                let e: Entry = serde_json::from_str(l).unwrap();
                lines.push(serde_json::to_string(&e).unwrap());
            }
        }
        let mut e: Entry = serde_json::from_str(&lines[0]).unwrap();
        e.intent = Some(
            serde_json::json!({"/to": "a", "/n": [1, -2, {"b": null, "a": true}], "/x": "é😀"}),
        );
        e.body = serde_json::json!({"deep": [[[{"x": [1, 2, {"y": "z"}]}]]], "f": false});
        e.revision = Some(serde_json::json!(9_223_372_036_854_775_807_i64));
        e.replay_of = Some(u64::MAX);
        e.response.status = Some(u16::MAX);
        lines.push(serde_json::to_string(&e).unwrap());
        lines
    }

    #[test]
    fn the_scanner_reads_what_the_exporter_writes_as_serde_does() {
        let lines = exported();
        assert!(lines.len() > 60);
        for l in &lines {
            assert!(agrees(l), "the scanner should read {l}");
        }
    }

    #[test]
    fn the_scanner_leaves_to_serde_what_it_is_not_sure_of() {
        let base = r#"{"seq":1,"service":"pay","route":"create","method":"POST","path":"/t","received_at":"2026-01-01T00:00:00.000Z","idempotency_key":"k-1","fingerprint":null,"intent":{"/n":1,"/to":"a"},"work_id":null,"revision":2,"body":null,"body_truncated":false,"disposition":"executed","replay_of":null,"executed_after_expiry":false,"fate":"respond","action_id":"act_1","applied":true,"applied_at":null,"response":{"delivery":"sent","status":201,"at":null}}"#;
        let with =
            |k: &str, v: &str| base.replacen(r#""seq":1,"#, &format!(r#""seq":1,"{k}":{v},"#,), 1);
        let set = |k: &str, old: &str, new: &str| {
            let line = base.replacen(&format!(r#""{k}":{old}"#), &format!(r#""{k}":{new}"#), 1);
            assert_ne!(line, base, "{k}");
            line
        };
        let cases = [
            (base.to_string(), true),
            ("{}".to_string(), true),
            (with("unknown", r#"{"a":[1,{"b":[]}],"a":null}"#), true),
            (with("unknown", "-0"), true),
            (with("unknown", "12345678901234567890"), true),
            (with("unknown", "1.5"), false),
            (with("unknown", "1e3"), false),
            (with("unknown", "123456789012345678901"), false),
            (with("unknown", r#""a\"b""#), false),
            (with("unknown", "\"\u{1}\""), false),
            (with("unknown", "[1 ]"), false),
            (with("unknown", "nul"), false),
            (with("unknown", "01"), false),
            (
                with("unknown", &format!("{}{}", "[".repeat(80), "]".repeat(80))),
                false,
            ),
            (with("service", r#""twice""#), false),
            (with("se\\u0072vice", r#""escaped""#), false),
            (
                set("disposition", r#""executed""#, r#"{"executed":null}"#),
                false,
            ),
            (set("disposition", r#""executed""#, r#""done""#), false),
            (
                set(
                    "response",
                    r#"{"delivery":"sent","status":201,"at":null}"#,
                    r#"["sent",201,null]"#,
                ),
                false,
            ),
            (
                set(
                    "response",
                    r#"{"delivery":"sent","status":201,"at":null}"#,
                    r#"{"x":{"y":1}}"#,
                ),
                true,
            ),
            (set("status", "201", "70000"), false),
            (set("status", "201", "-0"), false),
            (set("seq", "1", "-0"), false),
            (set("seq", "1", "18446744073709551615"), true),
            (set("seq", "1", "18446744073709551616"), false),
            (set("method", r#""POST""#, "null"), false),
            (set("applied", "true", "null"), false),
            (format!("{base} "), false),
            (format!(" {base}"), false),
            (format!("{base}x"), false),
        ];
        let mut cases = cases.to_vec();
        for v in [
            "-0",
            "1",
            "-1",
            "9223372036854775807",
            "9223372036854775808",
            "-9223372036854775808",
            "-9223372036854775809",
            r#""1""#,
            "[1]",
            "{}",
            "true",
            "null",
        ] {
            cases.push((set("revision", "2", v), true));
        }
        for v in [
            r#"{"b":1,"a":2}"#,
            r#"{"a":1,"a":2}"#,
            "[-0]",
            "-0",
            "[18446744073709551615]",
            "[18446744073709551616]",
            "[-9223372036854775809]",
            r#"{"a":{"c":1,"b":2}}"#,
            r#""é""#,
            "[]",
            "{}",
            r#"{"":0,"a":[true,false,null]}"#,
        ] {
            cases.push((set("intent", r#"{"/n":1,"/to":"a"}"#, v), true));
        }
        for (line, read) in cases {
            assert_eq!(wire(&line).is_some(), read, "{line}");
            if read {
                assert!(agrees(&line));
            }
        }
    }

    #[test]
    fn a_mutated_line_is_read_as_serde_reads_it_or_left_to_it() {
        let lines = exported();
        let marks: &[&str] = &[
            "\"", "\\", "{", "}", "[", "]", ",", ":", "0", "-", ".", "e", " ", "n", "t", "\u{1}",
            "x", "9", "-0", "null", "1.0", "\"a\"", "{}", "[]",
        ];
        let mut rng: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng
        };
        let (mut read, mut left) = (0, 0);
        for l in lines.iter().step_by(3) {
            for _ in 0..300 {
                let at = next() as usize % (l.len() + 1);
                if !l.is_char_boundary(at) {
                    continue;
                }
                let mark = marks[next() as usize % marks.len()];
                let m = match next() % 3 {
                    0 => format!("{}{mark}{}", &l[..at], &l[at..]),
                    1 => {
                        let end = (at + 1..=l.len())
                            .find(|e| l.is_char_boundary(*e))
                            .unwrap_or(l.len());
                        format!("{}{mark}{}", &l[..at], &l[end..])
                    }
                    _ => {
                        let end = (at + 1..=l.len())
                            .find(|e| l.is_char_boundary(*e))
                            .unwrap_or(l.len());
                        format!("{}{}", &l[..at], &l[end..])
                    }
                };
                if agrees(&m) {
                    read += 1;
                } else {
                    left += 1;
                }
            }
        }
        // Both ways are taken.
        assert!(
            read > 100 && left > 100,
            "{read} read, {left} left to serde"
        );
    }
}
