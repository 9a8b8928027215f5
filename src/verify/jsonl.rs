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

use super::rows::{text_hash, Field, Interner, Ledger, Row, Rows, Store, Symbols};
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

/// How a text is cut into pieces: about `PIECE` bytes each, at least one per core when there
/// is enough of it (1 MiB), for cores to take in turn (a core the machine lends elsewhere for a
/// while then holds up one small piece, not half the work).
const PIECE: usize = if cfg!(test) { 64 << 10 } else { 8 << 20 };

fn text_bounds(bytes: &[u8]) -> Vec<usize> {
    let threads = threads();
    let pieces = if bytes.len() < (1 << 20) || threads < 2 {
        1
    } else {
        (bytes.len() / PIECE).clamp(threads, 4096)
    };
    cut(bytes, pieces)
}

/// Run `work(state, k)` for every piece `k` in `0..pieces`, the pieces taken in turn by one
/// thread per core, each thread with its own `state`. Results come back in piece order.
fn run_pieces<S, T: Send>(
    pieces: usize,
    state: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, usize) -> T + Sync,
) -> Vec<T> {
    let threads = threads().min(pieces);
    if threads < 2 {
        let mut st = state();
        return (0..pieces).map(|k| work(&mut st, k)).collect();
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
                        out.push((k, work(&mut st, k)));
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
            None => all.push(work(st.get_or_insert_with(&state), k)),
        }
    }
    all
}

/// The number of the line that is line `i` (from 0) of the piece starting at `start`.
fn line_number(bytes: &[u8], start: usize, i: usize) -> usize {
    bytes[..start].iter().filter(|b| **b == b'\n').count() + i + 1
}

/// Parse a JSONL ledger (one [`Entry`] a line, blank lines skipped); `origin` names it in the
/// error, which gives the first bad line's number.
pub fn parse_jsonl(text: &str, origin: &str) -> Result<Vec<Entry>, String> {
    let bounds = text_bounds(text.as_bytes());
    let results = run_pieces(
        bounds.len() - 1,
        || (),
        |_, k| -> Result<Vec<Entry>, (usize, String)> {
            // Cut just after newlines, so on character boundaries.
            let piece = &text.as_bytes()[bounds[k]..bounds[k + 1]];
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

/// A JSONL ledger read for verification only.
pub struct LeanLedger<'a> {
    source: Source<'a>,
    ledger: Ledger<'static>,
}

/// Where a lean ledger's lines are, to describe the entries findings name.
enum Source<'a> {
    Text(&'a [u8]),
    #[cfg(unix)]
    File(&'a std::fs::File),
}

/// Why [`LeanLedger::parse`] or [`LeanLedger::read`] did not read a ledger.
#[derive(Debug)]
pub enum LeanError {
    /// The text is not UTF-8.
    NotUtf8,
    /// A line is not a ledger entry: `ORIGIN:LINE: not a ledger entry: ...`, as
    /// [`parse_jsonl`] says it.
    Entry(String),
    /// A line that the full parse reads but the lean one does not. They read the same lines, so
    /// this is a bug; the caller can still verify through [`parse_jsonl`] and [`super::verify`].
    NeedsFullParse,
    /// Reading the file failed.
    Io(std::io::Error),
}

enum PieceError {
    NotUtf8,
    /// The line (from 0 in its piece) and the full parse's message.
    Line(usize, String),
    NeedsFullParse,
    Io(std::io::Error),
}

/// What a piece of the text became: its rows, the store of their strings, and how many lines
/// it has (for the number of a bad line in a later piece).
struct Piece {
    rows: Vec<Row<'static>>,
    store: Store,
    lines: usize,
}

impl<'a> LeanLedger<'a> {
    /// Read a JSONL ledger from its text; `origin` names it in the error, which gives the first
    /// bad line's number.
    pub fn parse(text: &'a [u8], origin: &str) -> Result<LeanLedger<'a>, LeanError> {
        let shared = Mutex::new(Symbols::default());
        let hash = FastState::default();
        let bounds = text_bounds(text);
        let results = run_pieces(
            bounds.len() - 1,
            || Interner::new(&shared),
            |syms, k| {
                let piece = &text[bounds[k]..bounds[k + 1]];
                parse_piece(piece, bounds[k] as u64, k, syms, &hash)
            },
        );
        let ledger = assemble(results, shared, origin)?;
        Ok(LeanLedger {
            source: Source::Text(text),
            ledger,
        })
    }

    /// Read a JSONL ledger file a piece at a time (one reused buffer per core: the whole text
    /// is never held); `origin` names it in the error.
    #[cfg(unix)]
    pub fn read(file: &'a std::fs::File, origin: &str) -> Result<LeanLedger<'a>, LeanError> {
        let len = file.metadata().map_err(LeanError::Io)?.len();
        let pieces = usize::try_from(len.div_ceil(PIECE as u64))
            .unwrap_or(usize::MAX)
            .max(1);
        let shared = Mutex::new(Symbols::default());
        let hash = FastState::default();
        let results = run_pieces(
            pieces,
            || (Interner::new(&shared), Vec::new()),
            |(syms, buf), k| {
                let from = k as u64 * PIECE as u64;
                let to = (from + PIECE as u64).min(len);
                let (at, range) = read_piece(file, len, from, to, buf).map_err(PieceError::Io)?;
                parse_piece(&buf[range.clone()], at + range.start as u64, k, syms, &hash)
            },
        );
        let ledger = assemble(results, shared, origin)?;
        Ok(LeanLedger {
            source: Source::File(file),
            ledger,
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

    /// [`Report::human`] for this ledger: the entries that findings name are read and parsed
    /// in full again (a few thousand lines, not a million) and described.
    pub fn human(&self, report: &Report) -> String {
        let wanted: HashSet<u64> = report
            .findings
            .iter()
            .flat_map(|f| f.entries.iter().copied())
            .collect();
        // seq → line; a later entry with the same seq wins, as in `Report::human`.
        let mut lines: HashMap<u64, u64> = HashMap::default();
        if !wanted.is_empty() {
            for r in self.ledger.rows.iter() {
                if wanted.contains(&r.seq) {
                    lines.insert(r.seq, r.at);
                }
            }
        }
        let mut lines: Vec<(u64, u64)> = lines.into_iter().collect();
        // In file order, so that reading them back goes forward.
        lines.sort_unstable_by_key(|(_, at)| *at);
        let describe_all = |part: &[(u64, u64)]| -> Vec<(u64, String)> {
            part.iter()
                .filter_map(|&(seq, at)| {
                    let e = serde_json::from_str::<Entry>(&self.line(at)?).ok()?;
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
    fn line(&self, at: u64) -> Option<String> {
        let strip = |mut l: Vec<u8>, ended: bool| {
            if ended && l.last() == Some(&b'\r') {
                l.pop();
            }
            String::from_utf8(l).ok()
        };
        match self.source {
            Source::Text(text) => {
                let rest = text.get(usize::try_from(at).ok()?..)?;
                match rest.iter().position(|b| *b == b'\n') {
                    Some(end) => strip(rest[..end].to_vec(), true),
                    None => strip(rest.to_vec(), false),
                }
            }
            #[cfg(unix)]
            Source::File(file) => {
                use std::os::unix::fs::FileExt;
                let mut line = Vec::new();
                let mut chunk = [0u8; 4096];
                let mut pos = at;
                loop {
                    let n = file.read_at(&mut chunk, pos).ok()?;
                    if n == 0 {
                        return strip(line, false);
                    }
                    if let Some(end) = chunk[..n].iter().position(|b| *b == b'\n') {
                        line.extend_from_slice(&chunk[..end]);
                        return strip(line, true);
                    }
                    line.extend_from_slice(&chunk[..n]);
                    pos += n as u64;
                }
            }
        }
    }
}

/// The ledger from the pieces' results, or the error of the first piece that failed (a text
/// that is not UTF-8 anywhere first, as when it was read whole as a string).
fn assemble(
    results: Vec<Result<Piece, PieceError>>,
    shared: Mutex<Symbols>,
    origin: &str,
) -> Result<Ledger<'static>, LeanError> {
    if results
        .iter()
        .any(|r| matches!(r, Err(PieceError::NotUtf8)))
    {
        return Err(LeanError::NotUtf8);
    }
    let mut chunks = Vec::with_capacity(results.len());
    let mut stores = Vec::with_capacity(results.len());
    let mut lines_before = 0;
    let mut needs_full = false;
    for r in results {
        match r {
            Ok(p) => {
                lines_before += p.lines;
                chunks.push(p.rows);
                stores.push(p.store);
            }
            Err(PieceError::Io(e)) => return Err(LeanError::Io(e)),
            Err(PieceError::Line(i, e)) => {
                if needs_full {
                    break;
                }
                let n = lines_before + i + 1;
                return Err(LeanError::Entry(format!(
                    "{origin}:{n}: not a ledger entry: {e}"
                )));
            }
            Err(PieceError::NeedsFullParse) => needs_full = true,
            Err(PieceError::NotUtf8) => {}
        }
    }
    if needs_full {
        return Err(LeanError::NeedsFullParse);
    }
    let syms = shared.into_inner().unwrap_or_else(PoisonError::into_inner);
    Ok(Ledger::new(Rows::new(chunks), syms, stores))
}

/// Read into `buf` the lines of `file` (`len` bytes long) that start in `from..to`: the offset
/// in the file of `buf`'s first byte, and where the lines are in `buf`. (The byte before `from`
/// says whether a line starts at `from`; the last line is read to its end, past `to`.)
#[cfg(unix)]
fn read_piece(
    file: &std::fs::File,
    len: u64,
    from: u64,
    to: u64,
    buf: &mut Vec<u8>,
) -> std::io::Result<(u64, std::ops::Range<usize>)> {
    use std::os::unix::fs::FileExt;
    if to <= from {
        return Ok((from, 0..0));
    }
    // `buf` keeps its length between pieces: only its growth is zeroed, not each piece.
    let mut used = 0usize;
    let append = |buf: &mut Vec<u8>, used: &mut usize, at: u64, end: u64| {
        let n = usize::try_from(end - at).unwrap_or(usize::MAX);
        if buf.len() < *used + n {
            buf.resize(*used + n, 0);
        }
        let r = file.read_exact_at(&mut buf[*used..*used + n], at);
        *used += n;
        r
    };
    let lo = from.saturating_sub(1);
    append(buf, &mut used, lo, to)?;
    let newline_from = |buf: &[u8], used: usize, i: usize| {
        buf[i.min(used)..used]
            .iter()
            .position(|b| *b == b'\n')
            .map(|p| i + p)
    };
    let last = (to - 1 - lo) as usize; // the index of the piece's last byte
    let start = if from == 0 {
        0
    } else {
        match newline_from(buf, used, 0) {
            Some(p) if p < last => p + 1,
            // No line starts in this piece.
            _ => return Ok((lo, 0..0)),
        }
    };
    let mut search = last;
    let end = loop {
        if let Some(p) = newline_from(buf, used, search) {
            break p + 1;
        }
        let at = lo + used as u64;
        if at >= len {
            break used;
        }
        search = used;
        append(buf, &mut used, at, (at + (64 << 10)).min(len))?;
    };
    Ok((lo, start..end))
}

/// Rows of one piece of text (store number `id`); `at` is the piece's offset in the text.
fn parse_piece(
    piece: &[u8],
    at: u64,
    id: usize,
    syms: &mut Interner<'_>,
    hash: &FastState,
) -> Result<Piece, PieceError> {
    let text = std::str::from_utf8(piece).map_err(|_| PieceError::NotUtf8)?;
    // Exported entries are ~600 bytes; a hand-made ledger is small anyway.
    let mut rows = Vec::with_capacity(text.len() / 512 + 1);
    let mut store = Store::new(
        u32::try_from(id).map_err(|_| PieceError::Io(std::io::Error::other("too many pieces")))?,
    );
    store.buf.reserve(text.len() / 8);
    let base = text.as_ptr() as usize;
    let mut lines = 0;
    for (i, l) in text.lines().enumerate() {
        lines = i + 1;
        if l.trim().is_empty() {
            continue;
        }
        let offset = at + (l.as_ptr() as usize - base) as u64;
        // The scanner reads what the exporter writes; serde has the last word on the rest.
        let wire = match super::scan::wire(l) {
            Some(w) => Ok(w),
            None => serde_json::from_str::<Wire>(l),
        };
        match wire {
            Ok(w) => rows.push(w.into_row(offset, syms, &mut store, hash)),
            Err(_) => {
                return Err(match serde_json::from_str::<Entry>(l) {
                    Err(e) => PieceError::Line(i, e.to_string()),
                    Ok(_) => PieceError::NeedsFullParse,
                })
            }
        }
    }
    Ok(Piece { rows, store, lines })
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
        at: u64,
        syms: &mut Interner<'_>,
        store: &mut Store,
        hash: &FastState,
    ) -> Row<'static> {
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
        let intent = intent.as_ref().map(|c| &*c.0);
        let key = idempotency_key.as_ref().map(|s| &*s.0);
        Row {
            seq,
            replay_of,
            revision: revision.and_then(|r| r.0),
            key_hash: key.map_or(0, |k| text_hash(hash, k)),
            key: store.put_opt(key),
            work_id: store.put_opt(name(&work_id)),
            action_id: store.put_opt(name(&action_id)),
            intent_hash: intent.map_or(0, |t| text_hash(hash, t)),
            intent: store.put_opt(intent),
            detail: detail.map(Cow::Owned),
            at,
            service: syms.intern(Field::Service, &service.0),
            route: syms.intern_opt(Field::Route, name(&route)),
            actor: syms.intern_opt(Field::Actor, name(&actor)),
            event: syms.intern_opt(Field::Event, name(&event)),
            fate: syms.intern_opt(Field::Fate, name(&fate)),
            disposition,
            delivery,
            applied,
            executed_after_expiry,
        }
    }
}

fn name<'s>(s: &'s Option<Str<'_>>) -> Option<&'s str> {
    s.as_ref().map(|s| &*s.0)
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
