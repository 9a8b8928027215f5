//! Simple request bodies read without building a JSON tree.
//!
//! An action's body is kept in the ledger, fingerprinted and picked for its intent as the
//! compact text `serde_json` writes for the parsed body (object keys in byte order, each once).
//! Most bodies an orchestrator sends are one flat object of short strings, integers, booleans
//! and nulls; for those [`Flat::read`] finds the same text from the bytes themselves: the
//! members, sorted by key, each written as it was received (for these values serde_json writes
//! exactly the bytes it read). Anything else — nesting, escapes, fractions, exponents, very
//! long integers, duplicate keys, more than [`MAX_MEMBERS`] members, trailing text — is
//! declined (`None`), and the caller parses the body as before. `service` is the caller; the
//! tests compare every answer with serde_json's.

/// The most members a body read here may have (they are kept on the stack).
pub const MAX_MEMBERS: usize = 16;

/// The longest body read here: its members are kept as 16-bit offsets into it (a larger one is
/// declined, and parsed).
pub const MAX_BYTES: usize = u16::MAX as usize;

/// A flat JSON object, its members sorted by key: each key without its quotes, each value as
/// its JSON text (strings with their quotes).
pub struct Flat<'a> {
    body: &'a [u8],
    /// Each member as offsets into `body`: its key's start and end, its value's start and end.
    /// Small, so that making, moving and returning a `Flat` costs little.
    members: [[u16; 4]; MAX_MEMBERS],
    len: usize,
}

impl<'a> Flat<'a> {
    /// The members of `body` if it is a flat object this module reads exactly like serde_json.
    pub fn read(body: &'a [u8]) -> Option<Flat<'a>> {
        if body.len() > MAX_BYTES {
            return None;
        }
        let mut flat = Flat {
            body,
            members: [[0; 4]; MAX_MEMBERS],
            len: 0,
        };
        let mut i = ws(body, 0);
        if body.get(i) != Some(&b'{') {
            return None;
        }
        i = ws(body, i + 1);
        if body.get(i) == Some(&b'}') {
            return (ws(body, i + 1) == body.len()).then_some(flat);
        }
        loop {
            let (key_at, key_end) = string(body, i)?;
            i = ws(body, key_end);
            if body.get(i) != Some(&b':') {
                return None;
            }
            i = ws(body, i + 1);
            let (value_at, end) = scalar(body, i)?;
            // Offsets below `MAX_BYTES`: they fit.
            flat.insert([key_at + 1, key_end - 1, value_at, end].map(|o| o as u16))?;
            i = ws(body, end);
            match body.get(i) {
                Some(b',') => i = ws(body, i + 1),
                Some(b'}') => return (ws(body, i + 1) == body.len()).then_some(flat),
                _ => return None,
            }
        }
    }

    fn key(&self, m: [u16; 4]) -> &'a [u8] {
        self.body
            .get(m[0] as usize..m[1] as usize)
            .unwrap_or_default()
    }

    fn value(&self, m: [u16; 4]) -> &'a [u8] {
        self.body
            .get(m[2] as usize..m[3] as usize)
            .unwrap_or_default()
    }

    /// Keeps the members in key order as they come (an insertion: bodies have a few members);
    /// `None` for a repeated key (serde_json keeps the last one: rare enough to leave to it) or
    /// one member too many.
    fn insert(&mut self, m: [u16; 4]) -> Option<()> {
        if self.len == MAX_MEMBERS {
            return None;
        }
        let key = self.key(m);
        let mut at = self.len;
        while at > 0 {
            let before = self.members[at - 1];
            match self.key(before).cmp(key) {
                std::cmp::Ordering::Greater => {
                    self.members[at] = before;
                    at -= 1;
                }
                // The whole object is declined: what was moved no longer matters.
                std::cmp::Ordering::Equal => return None,
                std::cmp::Ordering::Less => break,
            }
        }
        self.members[at] = m;
        self.len += 1;
        Some(())
    }

    /// The object as serde_json writes it compactly.
    pub fn write(&self, out: &mut Vec<u8>) {
        out.push(b'{');
        for (n, &m) in self.members[..self.len].iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            out.push(b'"');
            out.extend_from_slice(self.key(m));
            out.extend_from_slice(b"\":");
            out.extend_from_slice(self.value(m));
        }
        out.push(b'}');
    }

    /// The JSON text of the value at an RFC 6901 pointer, `None` where there is none (as
    /// `Value::pointer` finds). The whole object (`""`) is not asked for here.
    pub fn at(&self, pointer: &str) -> Option<&'a [u8]> {
        self.member(pointer_member(pointer)?.as_bytes())
    }

    /// The JSON text of the member named `key` (unescaped, without quotes).
    pub fn member(&self, key: &[u8]) -> Option<&'a [u8]> {
        // A few members: a scan is cheaper than a search.
        self.members[..self.len]
            .iter()
            .find(|&&m| self.key(m) == key)
            .map(|&m| self.value(m))
    }
}

/// The top-level member an RFC 6901 pointer names (its one token, unescaped), if it names one:
/// a flat object has nothing deeper, and nothing at `""` but itself.
pub fn pointer_member(pointer: &str) -> Option<std::borrow::Cow<'_, str>> {
    let token = pointer.strip_prefix('/')?;
    if token.contains('/') {
        // Below a member: every member is a scalar, which has nothing below it.
        return None;
    }
    Some(if token.contains('~') {
        token.replace("~1", "/").replace("~0", "~").into()
    } else {
        token.into()
    })
}

/// Past JSON whitespace.
fn ws(b: &[u8], mut i: usize) -> usize {
    while matches!(b.get(i), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        i += 1;
    }
    i
}

/// A string without escapes at `i` (the range of its text with its quotes). Only escapes and
/// control characters are declined: serde_json writes every other character as it read it, and
/// the text is checked to be UTF-8 (as serde_json requires) only where it is not ASCII.
fn string(b: &[u8], i: usize) -> Option<(usize, usize)> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    // Plain ASCII up to the closing quote in one pass, a byte at a time (keys and values are
    // short: a word-at-a-time search, `template::escape_at`, costs more here); anything else
    // is looked at again.
    let len = b[i + 1..]
        .iter()
        .position(|&c| c == b'"' || c == b'\\' || !(0x20..0x80).contains(&c))?;
    let mut end = i + 1 + len;
    if b[end] != b'"' {
        if b[end] < 0x80 {
            return None;
        }
        end = i + 1 + crate::template::escape_at(&b[i + 1..])?;
        if b[end] != b'"' || std::str::from_utf8(&b[i + 1..end]).is_err() {
            return None;
        }
    }
    Some((i, end + 1))
}

/// A string, an integer of at most 18 digits (no `-0`: serde_json writes it as `0`), `true`,
/// `false` or `null` at `i`: the range of its text.
fn scalar(b: &[u8], i: usize) -> Option<(usize, usize)> {
    match *b.get(i)? {
        b'"' => string(b, i),
        b't' | b'f' | b'n' => {
            let word: &[u8] = match b[i] {
                b't' => b"true",
                b'f' => b"false",
                _ => b"null",
            };
            let end = i + word.len();
            (b.get(i..end) == Some(word) && !b.get(end).is_some_and(u8::is_ascii_alphanumeric))
                .then_some((i, end))
        }
        b'-' | b'0'..=b'9' => {
            let digits_at = i + usize::from(b[i] == b'-');
            let digits = b[digits_at..]
                .iter()
                .take_while(|c| c.is_ascii_digit())
                .count();
            let end = digits_at + digits;
            let ok = (1..=18).contains(&digits)
                && (b[digits_at] != b'0' || (digits == 1 && digits_at == i))
                && !matches!(b.get(end), Some(b'.' | b'e' | b'E'));
            ok.then_some((i, end))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// What serde_json makes of `body`: its compact text, and the text at each pointer.
    fn serde(body: &str, pointers: &[&str]) -> Option<(String, Vec<Option<String>>)> {
        let v: Value = serde_json::from_str(body).ok()?;
        let at = pointers
            .iter()
            .map(|p| v.pointer(p).map(|x| x.to_string()))
            .collect();
        Some((v.to_string(), at))
    }

    fn ours(body: &str, pointers: &[&str]) -> Option<(String, Vec<Option<String>>)> {
        let flat = Flat::read(body.as_bytes())?;
        let mut out = Vec::new();
        flat.write(&mut out);
        let at = pointers
            .iter()
            .map(|p| flat.at(p).map(|t| String::from_utf8(t.to_vec()).unwrap()))
            .collect();
        Some((String::from_utf8(out).unwrap(), at))
    }

    const POINTERS: &[&str] = &[
        "/to", "/amount", "/a~1b", "/c~0d", "/missing", "/to/x", "/", "to", "/0", "/ok",
    ];

    #[test]
    fn flat_bodies_read_as_serde_json_writes_them() {
        let bodies = [
            r#"{"to":"acct-9","amount":100}"#,
            "  {\n\t\"amount\" : -42 ,\r\n \"to\":\"x y\" }  ",
            r#"{}"#,
            " { } ",
            r#"{"z":null,"a":true,"m":false,"b":0,"c":-7,"d":123456789012345678}"#,
            r#"{"a/b":"slash","c~d":"tilde","":"empty key","ok":"ok"}"#,
            "{\"to\":\"caf\u{e9} \u{1F600}\",\"amount\":1}",
            "{\"del\":\"\u{7f}\",\"amount\":1}",
            r#"{"B":1,"a":2,"A":3,"b":4,"aa":5,"_":6}"#,
        ];
        for body in bodies {
            let ours = ours(body, POINTERS);
            assert!(ours.is_some(), "declined: {body}");
            assert_eq!(ours, serde(body, POINTERS), "{body}");
        }
    }

    #[test]
    fn anything_else_is_declined_for_serde_json_to_read() {
        let bodies = [
            r#"{"to":"a\"b"}"#,
            r#"{"to":"\u0041"}"#,
            r#"{"a\/b":1}"#,
            r#"{"amount":1.0}"#,
            r#"{"amount":1e2}"#,
            r#"{"amount":1E2}"#,
            r#"{"amount":-0}"#,
            r#"{"amount":01}"#,
            r#"{"amount":1234567890123456789}"#,
            r#"{"amount":-}"#,
            r#"{"meta":{"a":1}}"#,
            r#"{"list":[1,2]}"#,
            r#"{"a":1,"a":2}"#,
            r#"{"a":1,}"#,
            r#"{"a":1} x"#,
            r#"{"a":1}{}"#,
            r#"{"a":truex}"#,
            r#"{"a":tru}"#,
            r#"{"a":nul}"#,
            r#"{a:1}"#,
            r#"[1]"#,
            r#""s""#,
            "",
            "{",
            r#"{"a":1"#,
            r#"{"a" 1}"#,
            "{\"a\":\"tab\there\"}",
            r#"{"a":1,"b":2,"c":3,"d":4,"e":5,"f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"m":13,"n":14,"o":15,"p":16,"q":17}"#,
        ];
        for body in bodies {
            assert!(ours(body, &[]).is_none(), "read: {body}");
        }
        // Not UTF-8: serde_json refuses it, and so does this.
        assert!(Flat::read(b"{\"a\":\"\xff\"}").is_none());
    }

    #[test]
    fn bodies_up_to_the_offsets_bound_are_read_and_longer_ones_declined() {
        let body = |len: usize| {
            let pad = len - r#"{"b":1,"a":""}"#.len();
            format!(r#"{{"b":1,"a":"{}"}}"#, "x".repeat(pad))
        };
        let longest = body(MAX_BYTES);
        assert_eq!(longest.len(), MAX_BYTES);
        assert_eq!(
            ours(&longest, &["/a", "/b"]),
            serde(&longest, &["/a", "/b"])
        );
        assert!(ours(&body(MAX_BYTES + 1), &[]).is_none());
    }

    #[test]
    fn sixteen_members_are_read_in_order() {
        let body: String = format!(
            "{{{}}}",
            (0..16)
                .rev()
                .map(|i| format!("\"k{i:02}\":{i}"))
                .collect::<Vec<_>>()
                .join(",")
        );
        assert_eq!(ours(&body, &["/k07"]), serde(&body, &["/k07"]));
    }
}
