//! Reading an exported JSONL ledger (one [`Entry`] a line, blank lines skipped), two ways:
//!
//! - [`parse_jsonl`]: full entries, for whatever needs them all (`doubleagent report`).
//! - [`LeanLedger::parse`]: for verification only (`doubleagent verify --ledger/--url`). Each line
//!   becomes a [`Row`] straight from the text: strings borrowed from it, the fields no checker
//!   reads (`body`, `fingerprint`, times, `method`, `path`) checked exactly as the full parse
//!   checks them but not kept, the intent written out as its canonical text while it is parsed.
//!   No per-entry tree is built, which is what made a million entries take seconds.
//!
//! Both accept and reject the same lines with the same message: the lean parse mirrors
//! [`Entry`]'s fields and types one for one, and the message of a line it rejects is the full
//! parse's. A million entries are a few hundred MB of JSON, so the text is cut at line boundaries
//! into pieces that the cores take in turn (a core the machine lends elsewhere for a while holds
//! up one small piece, not half the work).

use std::borrow::Cow;
use std::cell::Cell;
use std::fmt;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use super::rows::{text_hash, Field, Interner, Ledger, Row, Rows, Symbols};
use super::{checks, describe, Claims, Report};
use crate::hash::{FastMap as HashMap, FastSet as HashSet, FastState};
use crate::ledger::{Delivery, Disposition, Entry};

// ---------------------------------------------------------------------------------------------
// Reading the file

/// Read a whole file, its parts on as many threads as there are cores: most of the cost of
/// reading a few hundred MB is the kernel copying into (and faulting in) fresh pages, which
/// parallelizes.
pub fn read_file(path: &Path) -> std::io::Result<Vec<u8>> {
    #[cfg(unix)]
    {
        use std::io::{Read, Seek, SeekFrom};
        use std::os::unix::fs::FileExt;
        let mut file = std::fs::File::open(path)?;
        let len = usize::try_from(file.metadata()?.len()).unwrap_or(usize::MAX);
        let threads = threads();
        if len < (64 << 20) || threads < 2 {
            let mut buf = Vec::with_capacity(len);
            file.read_to_end(&mut buf)?;
            return Ok(buf);
        }
        // Zeroed by the allocator from fresh pages: nothing is touched before the reads.
        let mut buf = vec![0u8; len];
        let part = len.div_ceil(threads);
        let read = std::thread::scope(|s| {
            let file = &file;
            let handles: Vec<_> = buf
                .chunks_mut(part)
                .enumerate()
                .map(|(k, chunk)| s.spawn(move || file.read_exact_at(chunk, (k * part) as u64)))
                .collect();
            handles.into_iter().try_for_each(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(std::io::Error::other("panicked")))
            })
        });
        if read.is_err() {
            // The file shrank meanwhile, or a read failed: read it the plain way.
            return std::fs::read(path);
        }
        // Anything appended meanwhile.
        file.seek(SeekFrom::Start(len as u64))?;
        file.read_to_end(&mut buf)?;
        Ok(buf)
    }
    #[cfg(not(unix))]
    {
        std::fs::read(path)
    }
}

fn threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(16)
}

// ---------------------------------------------------------------------------------------------
// Pieces

/// Piece boundaries: `pieces` cuts of about equal size, each just after a newline.
fn cut(bytes: &[u8], pieces: usize) -> Vec<usize> {
    let mut bounds = vec![0usize];
    for k in 1..pieces {
        let at = (bytes.len() / pieces * k).max(*bounds.last().unwrap_or(&0));
        let cut = bytes[at..]
            .iter()
            .position(|b| *b == b'\n')
            .map_or(bytes.len(), |i| at + i + 1);
        bounds.push(cut);
    }
    bounds.push(bytes.len());
    bounds
}

/// Run `work` over line-aligned pieces of `bytes` (with the piece's offset in `bytes`), the
/// pieces taken in turn by one thread per core, each thread with its own `state`. Results come
/// back in piece order, with the piece bounds.
fn in_pieces<'b, S, T: Send>(
    bytes: &'b [u8],
    state: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, &'b [u8], usize) -> T + Sync,
) -> (Vec<T>, Vec<usize>) {
    const PIECE: usize = 8 << 20;
    let threads = threads();
    let pieces = if bytes.len() < (1 << 20) || threads < 2 {
        1
    } else {
        (bytes.len() / PIECE).clamp(threads, 256)
    };
    let bounds = cut(bytes, pieces);
    let piece = |k: usize| (&bytes[bounds[k]..bounds[k + 1]], bounds[k]);
    if pieces == 1 {
        let (p, at) = piece(0);
        return (vec![work(&mut state(), p, at)], bounds);
    }
    let next = AtomicUsize::new(0);
    let mut done: Vec<(usize, T)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut st = state();
                    let mut out = Vec::new();
                    loop {
                        let k = next.fetch_add(1, Ordering::Relaxed);
                        if k >= pieces {
                            break out;
                        }
                        let (p, at) = piece(k);
                        out.push((k, work(&mut st, p, at)));
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_default())
            .collect()
    });
    done.sort_unstable_by_key(|(k, _)| *k);
    // A thread that panicked lost its pieces: do them again here.
    let mut all = Vec::with_capacity(pieces);
    let mut done = done.into_iter().peekable();
    let mut st = None;
    for k in 0..pieces {
        match done.next_if(|(j, _)| *j == k) {
            Some((_, t)) => all.push(t),
            None => {
                let (p, at) = piece(k);
                all.push(work(st.get_or_insert_with(&state), p, at));
            }
        }
    }
    (all, bounds)
}

/// The number of the line that is line `i` (from 0) of the piece starting at `start`.
fn line_number(bytes: &[u8], start: usize, i: usize) -> usize {
    bytes[..start].iter().filter(|b| **b == b'\n').count() + i + 1
}

/// Parse a JSONL ledger (one [`Entry`] a line, blank lines skipped); `origin` names it in the
/// error, which gives the first bad line's number.
pub fn parse_jsonl(text: &str, origin: &str) -> Result<Vec<Entry>, String> {
    let (results, bounds) = in_pieces(
        text.as_bytes(),
        || (),
        |_, piece, _| -> Result<Vec<Entry>, (usize, String)> {
            // Cut just after newlines, so on character boundaries.
            let piece = std::str::from_utf8(piece).map_err(|e| (0, e.to_string()))?;
            piece
                .lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
                .map(|(i, l)| serde_json::from_str::<Entry>(l).map_err(|e| (i, e.to_string())))
                .collect()
        },
    );
    let total = results.iter().map(|r| r.as_ref().map_or(0, Vec::len)).sum();
    let mut entries = Vec::with_capacity(total);
    for (k, r) in results.into_iter().enumerate() {
        match r {
            Ok(v) => entries.extend(v),
            Err((i, e)) => {
                let n = line_number(text.as_bytes(), bounds[k], i);
                return Err(format!("{origin}:{n}: not a ledger entry: {e}"));
            }
        }
    }
    Ok(entries)
}

// ---------------------------------------------------------------------------------------------
// The lean parse

/// A JSONL ledger read for verification only, borrowing from its text.
pub struct LeanLedger<'a> {
    text: &'a [u8],
    ledger: Ledger<'a>,
}

/// Why [`LeanLedger::parse`] did not read a text.
#[derive(Debug, PartialEq, Eq)]
pub enum LeanError {
    /// The text is not UTF-8.
    NotUtf8,
    /// A line is not a ledger entry: `ORIGIN:LINE: not a ledger entry: ...`, as
    /// [`parse_jsonl`] says it.
    Entry(String),
    /// A line that the full parse reads but the lean one does not. They read the same lines, so
    /// this is a bug; the caller can still verify through [`parse_jsonl`] and [`super::verify`].
    NeedsFullParse,
}

enum PieceError {
    NotUtf8,
    /// The line (from 0 in its piece) and the full parse's message.
    Line(usize, String),
    NeedsFullParse,
}

impl<'a> LeanLedger<'a> {
    /// Read a JSONL ledger; `origin` names it in the error, which gives the first bad line's
    /// number.
    pub fn parse(text: &'a [u8], origin: &str) -> Result<LeanLedger<'a>, LeanError> {
        let shared = Mutex::new(Symbols::default());
        let hash = FastState::default();
        let (results, bounds) = in_pieces(
            text,
            || Interner::new(&shared),
            |syms, piece, at| parse_piece(piece, at, syms, &hash),
        );
        if results
            .iter()
            .any(|r| matches!(r, Err(PieceError::NotUtf8)))
        {
            return Err(LeanError::NotUtf8);
        }
        if results
            .iter()
            .any(|r| matches!(r, Err(PieceError::NeedsFullParse)))
        {
            return Err(LeanError::NeedsFullParse);
        }
        let mut chunks = Vec::with_capacity(results.len());
        for (k, r) in results.into_iter().enumerate() {
            match r {
                Ok(rows) => chunks.push(rows),
                Err(PieceError::Line(i, e)) => {
                    let n = line_number(text, bounds[k], i);
                    return Err(LeanError::Entry(format!(
                        "{origin}:{n}: not a ledger entry: {e}"
                    )));
                }
                Err(PieceError::NotUtf8 | PieceError::NeedsFullParse) => {}
            }
        }
        let syms = shared.into_inner().unwrap_or_else(PoisonError::into_inner);
        Ok(LeanLedger {
            text,
            ledger: Ledger::new(Rows::new(chunks), syms),
        })
    }

    /// Number of entries read.
    pub fn len(&self) -> usize {
        self.ledger.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Verify the ledger, with optional extra claims on top of any declared in it; the same
    /// report as [`super::verify`] gives for the same entries.
    pub fn verify(&self, extra: Option<&Claims>) -> Report {
        checks::verify(&self.ledger, extra)
    }

    /// [`Report::human`] for this ledger: the entries that findings name are parsed in full
    /// again (a few thousand lines, not a million) and described.
    pub fn human(&self, report: &Report) -> String {
        let wanted: HashSet<u64> = report
            .findings
            .iter()
            .flat_map(|f| f.entries.iter().copied())
            .collect();
        // seq → line; a later entry with the same seq wins, as in `Report::human`.
        let mut lines: HashMap<u64, usize> = HashMap::default();
        if !wanted.is_empty() {
            for r in self.ledger.rows.iter() {
                if wanted.contains(&r.seq) {
                    lines.insert(r.seq, r.at);
                }
            }
        }
        let lines: Vec<(u64, usize)> = lines.into_iter().collect();
        let describe_all = |part: &[(u64, usize)]| -> Vec<(u64, String)> {
            part.iter()
                .filter_map(|&(seq, at)| {
                    let e = serde_json::from_str::<Entry>(self.line(at)?).ok()?;
                    Some((seq, describe(&e)))
                })
                .collect()
        };
        let described: HashMap<u64, String> = if lines.len() < 2000 {
            describe_all(&lines).into_iter().collect()
        } else {
            let part = lines.len().div_ceil(threads());
            std::thread::scope(|s| {
                let handles: Vec<_> = lines
                    .chunks(part)
                    .map(|p| s.spawn(move || describe_all(p)))
                    .collect();
                handles
                    .into_iter()
                    .zip(lines.chunks(part))
                    .flat_map(|(h, p)| h.join().unwrap_or_else(|_| describe_all(p)))
                    .collect()
            })
        };
        report.human_by(|seq| described.get(&seq).cloned())
    }

    /// The line starting at byte `at`, as `str::lines` gives it.
    fn line(&self, at: usize) -> Option<&'a str> {
        let rest = self.text.get(at..)?;
        let line = match rest.iter().position(|b| *b == b'\n') {
            Some(end) => rest[..end].strip_suffix(b"\r").unwrap_or(&rest[..end]),
            None => rest,
        };
        std::str::from_utf8(line).ok()
    }
}

/// Rows of one piece; `at` is the piece's offset in the whole text.
fn parse_piece<'a>(
    piece: &'a [u8],
    at: usize,
    syms: &mut Interner<'a, '_>,
    hash: &FastState,
) -> Result<Vec<Row<'a>>, PieceError> {
    let text = std::str::from_utf8(piece).map_err(|_| PieceError::NotUtf8)?;
    // Exported entries are ~600 bytes; a hand-made ledger is small anyway.
    let mut rows = Vec::with_capacity(text.len() / 512 + 1);
    let base = text.as_ptr() as usize;
    for (i, l) in text.lines().enumerate() {
        if l.trim().is_empty() {
            continue;
        }
        let offset = at + (l.as_ptr() as usize - base);
        // The scanner reads what the exporter writes; serde has the last word on the rest.
        let wire = match super::scan::wire(l) {
            Some(w) => Ok(w),
            None => serde_json::from_str::<Wire>(l),
        };
        match wire {
            Ok(w) => rows.push(w.into_row(offset, syms, hash)),
            Err(_) => {
                return Err(match serde_json::from_str::<Entry>(l) {
                    Err(e) => PieceError::Line(i, e.to_string()),
                    Ok(_) => PieceError::NeedsFullParse,
                })
            }
        }
    }
    Ok(rows)
}

/// [`Entry`] as the lean parse reads it: the same fields, with types that accept exactly the
/// same JSON, keeping only what [`Row`] needs.
#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct Wire<'a> {
    pub(super) seq: u64,
    #[serde(borrow)]
    pub(super) service: Str<'a>,
    #[serde(borrow)]
    pub(super) route: Option<Str<'a>>,
    pub(super) method: Skipped,
    pub(super) path: Skipped,
    pub(super) received_at: Skipped,
    #[serde(borrow)]
    pub(super) idempotency_key: Option<Str<'a>>,
    pub(super) fingerprint: Option<Skipped>,
    pub(super) intent: Option<Canonical<'a>>,
    #[serde(borrow)]
    pub(super) work_id: Option<Str<'a>>,
    pub(super) revision: Option<Revision>,
    pub(super) body: Valid,
    pub(super) body_truncated: bool,
    pub(super) disposition: Disposition,
    pub(super) replay_of: Option<u64>,
    pub(super) executed_after_expiry: bool,
    #[serde(borrow)]
    pub(super) fate: Option<Str<'a>>,
    #[serde(borrow)]
    pub(super) action_id: Option<Str<'a>>,
    pub(super) applied: bool,
    pub(super) applied_at: Option<Skipped>,
    pub(super) cancelled_at: Option<Skipped>,
    pub(super) response: WireResponse,
    #[serde(borrow)]
    pub(super) actor: Option<Str<'a>>,
    #[serde(borrow)]
    pub(super) event: Option<Str<'a>>,
    pub(super) detail: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
pub(super) struct WireResponse {
    pub(super) delivery: Delivery,
    pub(super) status: Option<u16>,
    pub(super) at: Option<Skipped>,
}

impl<'a> Wire<'a> {
    pub(super) fn into_row(
        self,
        at: usize,
        syms: &mut Interner<'a, '_>,
        hash: &FastState,
    ) -> Row<'a> {
        let Wire {
            seq,
            service,
            route,
            method: _,
            path: _,
            received_at: _,
            idempotency_key,
            fingerprint: _,
            intent,
            work_id,
            revision,
            body: _,
            body_truncated: _,
            disposition,
            replay_of,
            executed_after_expiry,
            fate,
            action_id,
            applied,
            applied_at: _,
            cancelled_at: _,
            response,
            actor,
            event,
            detail,
        } = self;
        // Read for their types only: a status that is not a u16 is not an entry.
        let WireResponse {
            delivery,
            status: _,
            at: _,
        } = response;
        let intent = intent.map(|c| c.0);
        let key = idempotency_key.map(|s| s.0);
        Row {
            seq,
            replay_of,
            revision: revision.and_then(|r| r.0),
            key_hash: key.as_deref().map_or(0, |k| text_hash(hash, k)),
            key,
            work_id: work_id.map(|s| s.0),
            action_id: action_id.map(|s| s.0),
            intent_hash: intent.as_deref().map_or(0, |t| text_hash(hash, t)),
            intent,
            detail: detail.map(Cow::Owned),
            at,
            service: syms.intern(Field::Service, service.0),
            route: syms.intern_opt(Field::Route, route.map(|s| s.0)),
            actor: syms.intern_opt(Field::Actor, actor.map(|s| s.0)),
            event: syms.intern_opt(Field::Event, event.map(|s| s.0)),
            fate: syms.intern_opt(Field::Fate, fate.map(|s| s.0)),
            disposition,
            delivery,
            applied,
            executed_after_expiry,
        }
    }
}

/// A string, borrowed from the text unless it had escapes.
#[derive(Default)]
pub(super) struct Str<'a>(pub(super) Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V)
    }
}

/// A string whose value is not kept (its type is still checked).
#[derive(Default)]
pub(super) struct Skipped;

impl<'de> Deserialize<'de> for Skipped {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Skipped;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Skipped, E> {
                Ok(Skipped)
            }
        }
        d.deserialize_str(V)
    }
}

/// Any JSON value that a `Value` would accept, not kept. (`IgnoredAny` skips numbers without
/// reading them, so it takes `1e999`, which `Value` refuses.)
#[derive(Default)]
pub(super) struct Valid;

struct ValidVisitor;

impl<'de> Deserialize<'de> for Valid {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ValidVisitor).map(|()| Valid)
    }
}

impl<'de> Visitor<'de> for ValidVisitor {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any valid JSON value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(ValidVisitor)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element::<Valid>()?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_key::<Skipped>()?.is_some() {
            map.next_value::<Valid>()?;
        }
        Ok(())
    }
}

/// A revision as the checkers read it: the integer `Value::as_i64` would give, else `None`
/// (the value is still checked as a `Value` would be).
pub(super) struct Revision(pub(super) Option<i64>);

impl<'de> Deserialize<'de> for Revision {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Revision;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("any valid JSON value")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Revision, E> {
                Ok(Revision(Some(v)))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Revision, E> {
                Ok(Revision(i64::try_from(v).ok()))
            }
            fn visit_bool<E: de::Error>(self, _: bool) -> Result<Revision, E> {
                Ok(Revision(None))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<Revision, E> {
                Ok(Revision(None))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Revision, E> {
                Ok(Revision(None))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Revision, E> {
                Ok(Revision(None))
            }
            fn visit_none<E: de::Error>(self) -> Result<Revision, E> {
                Ok(Revision(None))
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Revision, D::Error> {
                Revision::deserialize(d)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Revision, A::Error> {
                ValidVisitor.visit_seq(seq).map(|()| Revision(None))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Revision, A::Error> {
                ValidVisitor.visit_map(map).map(|()| Revision(None))
            }
        }
        d.deserialize_any(V)
    }
}

/// A JSON value as its canonical text: what `Value::to_string` writes for the value parsed
/// (object keys sorted, duplicates keeping the last, numbers and strings written serde_json's
/// way), produced while parsing, without building the tree.
pub(super) struct Canonical<'a>(pub(super) Cow<'a, str>);

thread_local! {
    /// Where canonical texts are written before they are copied out at their exact size.
    static SCRATCH: Cell<String> = const { Cell::new(String::new()) };
}

impl<'de> Deserialize<'de> for Canonical<'_> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let mut out = SCRATCH.with(Cell::take);
        out.clear();
        let r = Canon { out: &mut out }.deserialize(d);
        let text = Cow::Owned(out.as_str().to_owned());
        SCRATCH.with(|s| s.set(out));
        r.map(|()| Canonical(text))
    }
}

/// Writes the canonical text of the value it deserializes to `out`.
struct Canon<'s> {
    out: &'s mut String,
}

impl<'de> DeserializeSeed<'de> for Canon<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

/// A JSON string as serde_json writes it.
fn push_json_str(out: &mut String, s: &str) {
    if s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        out.push_str(&serde_json::to_string(s).unwrap_or_default());
    } else {
        out.push('"');
        out.push_str(s);
        out.push('"');
    }
}

impl<'de> Visitor<'de> for Canon<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any valid JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<(), E> {
        self.out.push_str(if v { "true" } else { "false" });
        Ok(())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<(), E> {
        let _ = write!(self.out, "{v}");
        Ok(())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<(), E> {
        let _ = write!(self.out, "{v}");
        Ok(())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<(), E> {
        // serde_json's own float formatting (and `null` for what is not finite, as `Value`).
        self.out
            .push_str(&serde_json::to_string(&v).unwrap_or_default());
        Ok(())
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        push_json_str(self.out, v);
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.out.push_str("null");
        Ok(())
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.visit_unit()
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.out.push('[');
        let mut first = true;
        loop {
            let mark = self.out.len();
            if !first {
                self.out.push(',');
            }
            if seq
                .next_element_seed(Canon {
                    out: &mut *self.out,
                })?
                .is_none()
            {
                self.out.truncate(mark);
                break;
            }
            first = false;
        }
        self.out.push(']');
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let start = self.out.len();
        self.out.push('{');
        let mut prev: Option<Cow<'de, str>> = None;
        let mut sorted = true;
        while let Some(Str(key)) = map.next_key::<Str<'de>>()? {
            if let Some(p) = &prev {
                self.out.push(',');
                sorted &= **p < *key;
            }
            push_json_str(self.out, &key);
            self.out.push(':');
            map.next_value_seed(Canon {
                out: &mut *self.out,
            })?;
            prev = Some(key);
        }
        self.out.push('}');
        if !sorted {
            // Keys out of order or repeated: let a `Value` order them (and keep the last of
            // each) from the text just written, whose values are already canonical.
            let v: Value = serde_json::from_str(&self.out[start..]).map_err(de::Error::custom)?;
            self.out.truncate(start);
            let _ = write!(self.out, "{v}");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALUES: &[&str] = &[
        "null",
        "true",
        "0",
        "-0",
        "-0.0",
        "0.0",
        "1.0",
        "1.50",
        "1e2",
        "-1E-2",
        "18446744073709551615",
        "-9223372036854775808",
        "18446744073709551616",
        "123456789.123456789e-300",
        r#""""#,
        r#""a\"b\\c\/d\n\t\u0001\u001f\u007f\u00e9 é 😀 \ud83d\ude00""#,
        "[]",
        "{}",
        "[1, [2, [3, []]], {}]",
        r#"{"b": 1, "a": 2}"#,
        r#"{"a": 1, "a": 2, "b": {"d": [], "c": {"f": 1, "e": 2}}}"#,
        r#"{"\u0062": 1, "a": 2}"#,
        r#"{"/to": "acct-1", "/amount": 990}"#,
        r#"{"/amount": 990, "/to": "acct-1"}"#,
        r#"{"": 1, "a\u0000": 2, "a": 3}"#,
        r#" { "x" : [ 1 , 2.5 , "y" ] } "#,
    ];

    #[test]
    fn the_canonical_text_is_what_a_value_writes() {
        for text in VALUES {
            let c: Canonical = serde_json::from_str(text).unwrap();
            let v: Value = serde_json::from_str(text).unwrap();
            assert_eq!(&*c.0, v.to_string(), "{text}");
        }
    }

    #[test]
    fn the_lean_types_accept_what_a_value_accepts() {
        let bad = [
            "1e999",
            "-1e999",
            "[1,]",
            r#"{"a":1e999}"#,
            r#""\x""#,
            "tru",
            "[",
            r#"{"a" 1}"#,
            "01",
        ];
        for text in VALUES.iter().chain(&bad) {
            let value = serde_json::from_str::<Value>(text);
            let rev = serde_json::from_str::<Revision>(text);
            assert_eq!(rev.is_ok(), value.is_ok(), "{text}");
            if let (Ok(r), Ok(v)) = (&rev, &value) {
                assert_eq!(r.0, v.as_i64(), "{text}");
            }
            assert_eq!(
                serde_json::from_str::<Valid>(text).is_ok(),
                value.is_ok(),
                "{text}"
            );
            assert_eq!(
                serde_json::from_str::<Canonical>(text).is_ok(),
                value.is_ok(),
                "{text}"
            );
        }
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        assert!(serde_json::from_str::<Value>(&deep).is_err());
        assert!(serde_json::from_str::<Valid>(&deep).is_err());
        assert!(serde_json::from_str::<Canonical>(&deep).is_err());
    }

    #[test]
    fn pieces_are_cut_after_newlines_whatever_the_text() {
        let text = "é\n".repeat(1000) + "ü";
        for n in 1..40 {
            let b = cut(text.as_bytes(), n);
            assert_eq!((b[0], *b.last().unwrap()), (0, text.len()));
            for w in b.windows(2) {
                assert!(w[0] <= w[1]);
                assert!(w[0] == 0 || text.as_bytes()[w[0] - 1] == b'\n');
            }
        }
    }
}
