//! Reading an exported JSONL ledger: one [`Entry`] a line through serde, blank lines skipped,
//! seqs increasing line by line; the first bad line named by its number.
//!
//! - [`parse_jsonl`]: the entries themselves (`doubleagent report`).
//! - [`LeanLedger`]: for verification only (`verify --ledger/--url`): each entry becomes a
//!   [`Row`] as soon as it is read, so a million entries never exist at once.
//!
//! The text is cut into pieces of a few MB that the cores take in turn (a core busy elsewhere
//! holds up one small piece, not half the work); a piece holds the lines that start in it.

use std::io;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::report::{Described, Report};
use super::rows::{Ledger, Row, Rows};
use super::{run, Claims, Limits};
use crate::hash::{FastMap as HashMap, FastSet as HashSet, FastState};
use crate::ledger::Entry;

/// How much more is read at a time to find where a piece's last line ends.
const MORE: u64 = 64 << 10;

/// Where a ledger's JSONL text is.
#[derive(Clone, Copy)]
pub(super) enum Source<'a> {
    Text(&'a [u8]),
    /// A file and its length when it was opened.
    #[cfg(unix)]
    File(&'a std::fs::File, u64),
}

impl Source<'_> {
    pub(super) fn len(&self) -> u64 {
        match self {
            Source::Text(t) => t.len() as u64,
            #[cfg(unix)]
            Source::File(_, len) => *len,
        }
    }

    /// Append bytes `at..to` (up to the end) to `buf`.
    fn append(&self, buf: &mut Vec<u8>, at: u64, to: u64) -> io::Result<()> {
        let to = to.min(self.len());
        if at >= to {
            return Ok(());
        }
        match self {
            // Offsets within a text in memory fit a usize.
            Source::Text(t) => buf.extend_from_slice(&t[at as usize..to as usize]),
            #[cfg(unix)]
            Source::File(f, _) => {
                use std::os::unix::fs::FileExt;
                let n = buf.len();
                buf.resize(n + usize::try_from(to - at).map_err(io::Error::other)?, 0);
                f.read_exact_at(&mut buf[n..], at)?;
            }
        }
        Ok(())
    }

    /// Read on into `buf` (which holds the bytes from `lo`) until it holds a newline at or after
    /// index `i`, or the text ends.
    fn read_line_end(&self, buf: &mut Vec<u8>, lo: u64, i: usize) -> io::Result<()> {
        let mut search = i;
        while !buf.get(search..).is_some_and(|b| b.contains(&b'\n')) {
            let at = lo + buf.len() as u64;
            if at >= self.len() {
                break;
            }
            search = search.max(buf.len());
            self.append(buf, at, at + MORE)?;
        }
        Ok(())
    }

    /// Read into `buf` the lines that start in bytes `from..to`: the offset in the text of
    /// `buf`'s first byte, and where the lines are in `buf`. (The byte before `from` says
    /// whether a line starts at `from`; the last line is read to its end, past `to`.)
    pub(super) fn piece(
        &self,
        from: u64,
        to: u64,
        buf: &mut Vec<u8>,
    ) -> io::Result<(u64, Range<usize>)> {
        buf.clear();
        if to <= from {
            return Ok((from, 0..0));
        }
        let lo = from.saturating_sub(1);
        self.append(buf, lo, to)?;
        let last = (to - 1 - lo) as usize; // the index of the piece's last byte
        self.read_line_end(buf, lo, last)?;
        let start = if from == 0 { 0 } else { line_after(buf, 0) };
        let end = line_after(buf, last);
        Ok((lo, start.min(end)..end))
    }

    /// The line starting at byte `at`, as `str::lines` gives it.
    pub(super) fn line(&self, at: u64) -> Option<String> {
        let mut buf = Vec::new();
        self.read_line_end(&mut buf, at, 0).ok()?;
        if let Some(end) = buf.iter().position(|b| *b == b'\n') {
            buf.truncate(end);
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
        }
        String::from_utf8(buf).ok()
    }
}

/// The index just after the first newline at or after `i` (the end if there is none).
fn line_after(buf: &[u8], i: usize) -> usize {
    buf.get(i..)
        .and_then(|b| b.iter().position(|c| *c == b'\n'))
        .map_or(buf.len(), |p| i + p + 1)
}

/// Run `work(state, k)` for every piece `k` in `0..pieces`, the pieces taken in turn by one
/// thread per core, each thread with its own `state`. Results come back in piece order.
fn run_pieces<S, T: Send>(
    pieces: usize,
    state: impl Fn() -> S + Sync,
    work: impl Fn(&mut S, usize) -> T + Sync,
) -> Vec<T> {
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(pieces);
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
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    done.sort_unstable_by_key(|(k, _)| *k);
    done.into_iter().map(|(_, t)| t).collect()
}

/// Why a ledger was not read.
#[derive(Debug, thiserror::Error)]
pub enum LeanError {
    /// The text is not UTF-8.
    #[error("the ledger is not UTF-8")]
    NotUtf8,
    /// A line is not a ledger entry: `ORIGIN:LINE: not a ledger entry: ...`.
    #[error("{0}")]
    Entry(String),
    /// Reading the file failed.
    #[error("{0}")]
    Io(io::Error),
}

enum PieceError {
    NotUtf8,
    Io(io::Error),
}

/// Why a line is not a ledger entry.
enum LineError {
    /// serde's message.
    Json(serde_json::Error),
    /// The admin API's `{"entries": [...]}` document, not its JSONL export.
    Document,
    /// A seq not above the one before it: `seq`, and the previous entry's line and seq (the line
    /// from 0 in the piece while in a piece, from 1 in the text after).
    Order { seq: u64, after: (usize, u64) },
}

/// What a piece became: one `T` per entry, its line count (to number a later bad line), its
/// first and last entries' (line from 0, seq), and its first bad line, if any.
struct Piece<T> {
    items: Vec<T>,
    lines: usize,
    first: Option<(usize, u64)>,
    last: Option<(usize, u64)>,
    bad: Option<(usize, LineError)>,
}

type Parsed<T> = Result<T, serde_json::Error>;

/// The admin API's ledger document (`GET /_admin/ledger`), recognised to say what to read instead.
#[derive(serde::Deserialize)]
struct Document {
    #[serde(rename = "entries")]
    _entries: Vec<serde::de::IgnoredAny>,
}

/// The entries of the piece at offset `at`, each line read by `read_line` with its offset; `seq`
/// gives an entry's seq, which must increase line by line.
fn parse_piece<T>(
    bytes: &[u8],
    at: u64,
    read_line: &impl Fn(&str, u64) -> Parsed<T>,
    seq: impl Fn(&T) -> u64,
) -> Result<Piece<T>, PieceError> {
    let text = std::str::from_utf8(bytes).map_err(|_| PieceError::NotUtf8)?;
    let base = text.as_ptr() as usize;
    let mut p = Piece {
        // Exported entries are ~600 bytes; a hand-made ledger is small anyway.
        items: Vec::with_capacity(text.len() / 512 + 1),
        lines: 0,
        first: None,
        last: None,
        bad: None,
    };
    for (i, l) in text.lines().enumerate() {
        p.lines = i + 1;
        if l.trim().is_empty() {
            continue;
        }
        let offset = at + (l.as_ptr() as usize - base) as u64;
        let item = match read_line(l, offset) {
            Ok(item) => item,
            // Read again only when it is not an entry, to say what it is instead.
            Err(_) if serde_json::from_str::<Document>(l).is_ok() => {
                p.bad = Some((i, LineError::Document));
                break;
            }
            Err(e) => {
                p.bad = Some((i, LineError::Json(e)));
                break;
            }
        };
        let s = seq(&item);
        if let Some(after) = p.last.filter(|(_, last)| s <= *last) {
            p.bad = Some((i, LineError::Order { seq: s, after }));
            break;
        }
        p.first = p.first.or(Some((i, s)));
        p.last = Some((i, s));
        p.items.push(item);
    }
    Ok(p)
}

/// `ORIGIN:LINE: not a ledger entry: WHY`, lines numbered from 1.
fn bad_line(origin: &str, n: usize, e: LineError) -> LeanError {
    let why = match e {
        LineError::Json(e) => e.to_string(),
        LineError::Document => "this is the admin API's {\"entries\": [...]} document; verify \
             and report read the ledger as JSON lines, one entry a line: export it with \
             GET /_admin/ledger.jsonl"
            .to_string(),
        LineError::Order { seq, after } => format!(
            "seq {seq} after seq {} (line {}): a ledger's seqs are increasing (a line repeated, \
             or ledgers joined?)",
            after.1, after.0
        ),
    };
    LeanError::Entry(format!("{origin}:{n}: not a ledger entry: {why}"))
}

/// Every line of a JSONL text read by `read_line` (given the line and its offset), in the
/// pieces read; `origin` names the text in the error, which gives the first bad line's number
/// (a line that is no entry, or whose seq, given by `seq`, is not above the one before).
fn read_all<T: Send>(
    src: Source<'_>,
    origin: &str,
    piece: u64,
    read_line: impl Fn(&str, u64) -> Parsed<T> + Sync,
    seq: impl Fn(&T) -> u64 + Sync,
) -> Result<Vec<Vec<T>>, LeanError> {
    let pieces = usize::try_from(src.len().div_ceil(piece)).unwrap_or(usize::MAX);
    let results = run_pieces(pieces, Vec::new, |buf, k| {
        let from = k as u64 * piece;
        let (at, range) = src
            .piece(from, (from + piece).min(src.len()), buf)
            .map_err(PieceError::Io)?;
        parse_piece(
            &buf[range.clone()],
            at + range.start as u64,
            &read_line,
            &seq,
        )
    });
    // A text not UTF-8 anywhere is refused first, as when it is read whole as a string.
    if results
        .iter()
        .any(|r| matches!(r, Err(PieceError::NotUtf8)))
    {
        return Err(LeanError::NotUtf8);
    }
    let mut chunks = Vec::with_capacity(results.len());
    let mut lines_before = 0;
    // The last entry so far: its line (from 1) and seq.
    let mut last: Option<(usize, u64)> = None;
    for r in results {
        let p = match r {
            Ok(p) => p,
            Err(PieceError::Io(e)) => return Err(LeanError::Io(e)),
            Err(PieceError::NotUtf8) => return Err(LeanError::NotUtf8),
        };
        // Where the piece's first entry follows the previous piece's last.
        if let (Some((n, seq)), Some(after)) = (p.first, last) {
            if seq <= after.1 {
                let e = LineError::Order { seq, after };
                return Err(bad_line(origin, lines_before + n + 1, e));
            }
        }
        if let Some((i, e)) = p.bad {
            let e = match e {
                LineError::Order { seq, after } => LineError::Order {
                    seq,
                    after: (lines_before + after.0 + 1, after.1),
                },
                e => e,
            };
            return Err(bad_line(origin, lines_before + i + 1, e));
        }
        last = p.last.map(|(i, s)| (lines_before + i + 1, s)).or(last);
        lines_before += p.lines;
        chunks.push(p.items);
    }
    Ok(chunks)
}

/// Parse a JSONL ledger; `origin` names it in the error, which gives the first bad line's number.
pub fn parse_jsonl(text: &str, origin: &str) -> Result<Vec<Entry>, String> {
    parse_jsonl_with(text, origin, &Limits::default())
}

/// [`parse_jsonl`] with other [`Limits`] (the tests' small pieces).
#[doc(hidden)]
pub fn parse_jsonl_with(text: &str, origin: &str, limits: &Limits) -> Result<Vec<Entry>, String> {
    let chunks = read_all(
        Source::Text(text.as_bytes()),
        origin,
        limits.piece,
        |l, _| serde_json::from_str::<Entry>(l),
        |e| e.seq,
    );
    chunks
        .map(|c| c.into_iter().flatten().collect())
        .map_err(|e| e.to_string())
}

/// A JSONL ledger read for verification only: its rows, and its text to describe findings' entries.
pub struct LeanLedger<'a> {
    source: Source<'a>,
    ledger: Ledger,
    limits: Limits,
}

impl<'a> LeanLedger<'a> {
    /// Read a JSONL ledger from its text; `origin` names it in the error.
    pub fn parse(text: &'a [u8], origin: &str) -> Result<LeanLedger<'a>, LeanError> {
        LeanLedger::parse_with(text, origin, Limits::default())
    }

    /// [`LeanLedger::parse`] with other [`Limits`] (the tests' small ones).
    #[doc(hidden)]
    pub fn parse_with(
        text: &'a [u8],
        origin: &str,
        limits: Limits,
    ) -> Result<LeanLedger<'a>, LeanError> {
        LeanLedger::of(Source::Text(text), origin, limits)
    }

    /// Read a JSONL ledger file a piece at a time (never whole); `origin` names it in the error.
    #[cfg(unix)]
    pub fn read(file: &'a std::fs::File, origin: &str) -> Result<LeanLedger<'a>, LeanError> {
        LeanLedger::read_with(file, origin, Limits::default())
    }

    /// [`LeanLedger::read`] with other [`Limits`] (the tests' small ones).
    #[doc(hidden)]
    #[cfg(unix)]
    pub fn read_with(
        file: &'a std::fs::File,
        origin: &str,
        limits: Limits,
    ) -> Result<LeanLedger<'a>, LeanError> {
        let len = file.metadata().map_err(LeanError::Io)?.len();
        LeanLedger::of(Source::File(file, len), origin, limits)
    }

    fn of(source: Source<'a>, origin: &str, limits: Limits) -> Result<LeanLedger<'a>, LeanError> {
        let hash = FastState::default();
        let chunks = read_all(
            source,
            origin,
            limits.piece,
            |l, at| Ok(Row::new(serde_json::from_str::<Entry>(l)?, at, &hash)),
            |r| r.seq,
        )?;
        let rows = Rows::new(chunks);
        Ok(LeanLedger {
            source,
            ledger: Ledger { rows, hash },
            limits,
        })
    }

    pub fn len(&self) -> usize {
        self.ledger.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Verify the ledger (plus `extra` claims): the same report [`super::verify`] gives.
    pub fn verify(&self, extra: Option<&Claims>) -> Report {
        run(&self.ledger, extra, &self.limits)
    }

    /// [`Report::human`] for this ledger: the entries that findings name are read again (a few
    /// thousand lines, not a million) and described.
    pub fn human(&self, report: &Report) -> String {
        let wanted: HashSet<u64> = report
            .findings
            .iter()
            .flat_map(|f| f.entries.iter().copied())
            .collect();
        // seq → line; a later entry with the same seq wins, as in `Report::human`. No finding
        // names an entry: no row is read.
        let rows = self.ledger.rows.iter().take_while(|_| !wanted.is_empty());
        let lines: HashMap<u64, u64> = rows
            .filter(|r| wanted.contains(&r.seq))
            .map(|r| (r.seq, r.at))
            .collect();
        let mut lines: Vec<(u64, u64)> = lines.into_iter().collect();
        // In text order, so that reading them back goes forward.
        lines.sort_unstable_by_key(|(_, at)| *at);
        let parts: Vec<&[(u64, u64)]> = lines.chunks(1000).collect();
        let described: HashMap<u64, Described> = run_pieces(
            parts.len(),
            || (),
            |_, k| -> Vec<(u64, Described)> {
                parts[k]
                    .iter()
                    .filter_map(|&(seq, at)| {
                        // Read once already: a line that no longer reads (the file changed
                        // meanwhile) is named by its seq alone.
                        let e = serde_json::from_str::<Entry>(&self.source.line(at)?).ok()?;
                        Some((seq, Described::of(&e)))
                    })
                    .collect()
            },
        )
        .into_iter()
        .flatten()
        .collect();
        report.human_by(&described)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pieces_of_a_text_hold_each_of_its_lines_once() {
        let text = "é\n".repeat(1000) + "\n\nab\r\n" + &"x".repeat(300) + "\nü";
        let src = Source::Text(text.as_bytes());
        let mut buf = Vec::new();
        for size in [1u64, 2, 3, 7, 64, 299, 300, 301, 4096, 1 << 20] {
            let mut whole = Vec::new();
            let mut from = 0;
            while from < src.len() {
                let to = (from + size).min(src.len());
                let (at, range) = src.piece(from, to, &mut buf).unwrap();
                assert_eq!(at + range.start as u64, whole.len() as u64, "size {size}");
                whole.extend_from_slice(&buf[range]);
                from = to;
            }
            assert_eq!(whole, text.as_bytes(), "size {size}");
        }
        let at = text.find("ab").unwrap() as u64;
        assert_eq!(src.line(at).as_deref(), Some("ab"));
        assert_eq!(src.line(text.len() as u64 - 2).as_deref(), Some("ü"));
    }
}
