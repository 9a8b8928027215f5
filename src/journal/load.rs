//! Reading a journal back at start: every line checked against its checksum, a torn last line
//! cut off the file (so the next line appended cannot merge with it), and a damaged line
//! anywhere else, or a record missing between others, refused, or with `--journal-recover`
//! left out (a placeholder in its place) and reported.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use super::{encode, io_err, Framed, JournalError, Line};
use crate::ledger::{Delivery, Record, ResponsePlan};

/// What a start resumes from.
#[derive(Default)]
pub struct Loaded {
    pub lines: Vec<Line>,
    /// What `--journal-recover` left out, for the operator; `None` when nothing was.
    pub lost: Option<String>,
}

type Damage = (String, Option<u64>);

/// One line's fact, and whether it carried a checksum. Lines written before checksums existed
/// are accepted as long as no checksummed line came before them (an upgraded server keeps its
/// journal); after one, a line without a checksum is damage.
fn parse(text: &[u8], framed_seen: bool) -> Result<(Line, bool), Damage> {
    let text = std::str::from_utf8(text).map_err(|_| ("not UTF-8".to_string(), None))?;
    match serde_json::from_str::<Framed>(text) {
        Ok(f) => {
            let line = serde_json::from_str::<Line>(f.line.get());
            if crc32fast::hash(f.line.get().as_bytes()) != f.crc32 {
                let claimed = line.ok().and_then(|l| seq_of(&l));
                return Err(("its checksum does not match its content".into(), claimed));
            }
            line.map(|l| (l, true)).map_err(|e| (e.to_string(), None))
        }
        Err(framing) => match serde_json::from_str::<Line>(text) {
            Ok(l) if !framed_seen => Ok((l, false)),
            Ok(l) => Err((
                "a line without a checksum after checksummed ones".into(),
                seq_of(&l),
            )),
            Err(e) if !framed_seen => Err((e.to_string(), None)),
            Err(_) => Err((framing.to_string(), None)),
        },
    }
}

fn seq_of(line: &Line) -> Option<u64> {
    match line {
        Line::Record { record, .. } => Some(record.seq),
        _ => None,
    }
}

fn session_name(s: &Option<String>) -> String {
    match s {
        None => "the default session".into(),
        Some(n) => format!("session {n}"),
    }
}

/// Which seq a damaged line held, as far as can be told.
fn describe(claimed: Option<u64>, last: &Option<(Option<String>, u64)>) -> String {
    match (claimed, last) {
        (Some(seq), _) => format!("it claims seq {seq}"),
        (None, Some((session, seq))) => {
            format!("it follows seq {seq} of {}", session_name(session))
        }
        (None, None) => "it comes before any ledger entry".into(),
    }
}

/// The longest line a journal may hold: far above any the server writes (bodies are cut to
/// the scenario's caps), so a file that is not a journal (`/dev/zero`) is refused, not read
/// without end.
const MAX_LINE: u64 = 256 << 20;

/// Read and check a journal (a missing file is an empty one). A damaged line other than a torn
/// last one, or a record missing between two others, is an error unless `recover`, which keeps
/// every readable line, puts a placeholder where each lost record was, rewrites the journal with
/// them (the original set aside beside it) and says what was lost.
pub fn load(path: &Path, recover: bool) -> Result<Loaded, JournalError> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Loaded::default()),
        Err(e) => return Err(io_err(path)(e)),
    };
    let mut reader = BufReader::new(file);
    let mut lines = Vec::new();
    let mut damaged = Vec::new();
    let mut framed = false;
    let mut last = None;
    // Bytes of whole lines read, and what a torn last line was.
    let (mut whole, mut torn) = (0u64, None);
    let mut text = Vec::new();
    for n in 1.. {
        text.clear();
        let read = (&mut reader)
            .take(MAX_LINE + 1)
            .read_until(b'\n', &mut text)
            .map_err(io_err(path))?;
        if text.last() != Some(&b'\n') {
            if read as u64 > MAX_LINE {
                return Err(JournalError::TooLong {
                    path: path.to_path_buf(),
                    line: n,
                    max_mib: MAX_LINE >> 20,
                });
            }
            // Every line the server wrote ends with a newline written in the same call: bytes
            // after the last one are a line the process was killed while writing, never
            // acknowledged.
            torn = (read > 0).then(|| (read, describe(None, &last)));
            break;
        }
        whole += read as u64;
        let text = &text[..read - 1];
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match parse(text, framed) {
            Ok((line, f)) => {
                framed |= f;
                if let Line::Record {
                    session, record, ..
                } = &line
                {
                    last = Some((session.clone(), record.seq));
                }
                lines.push(line);
            }
            Err((reason, claimed)) => {
                let seq = describe(claimed, &last);
                if !recover {
                    return Err(JournalError::Damaged {
                        path: path.to_path_buf(),
                        line: n,
                        seq,
                        reason,
                    });
                }
                tracing::warn!(path = %path.display(), line = n, %reason, "journal: leaving out a damaged line ({seq}) (--journal-recover)");
                damaged.push(format!("line {n} ({seq})"));
            }
        }
    }
    never_sent(&mut lines);
    let gaps = missing_seqs(&lines);
    if !gaps.is_empty() && !recover {
        return Err(JournalError::Missing {
            path: path.to_path_buf(),
            seqs: gaps
                .iter()
                .map(Gap::to_string)
                .collect::<Vec<_>>()
                .join("; "),
        });
    }
    if let Some((bytes, after)) = &torn {
        tracing::warn!(path = %path.display(), bytes, "journal: cutting off a torn last line, 1 line ({after}; the process was probably killed mid-write, before it was acknowledged)");
    }
    if damaged.is_empty() && gaps.is_empty() {
        if torn.is_some() {
            std::fs::OpenOptions::new()
                .write(true)
                .open(path)
                .and_then(|f| f.set_len(whole).and_then(|()| f.sync_all()))
                .map_err(io_err(path))?;
        }
        return Ok(Loaded { lines, lost: None });
    }
    let readable = lines.len();
    let lines = fill(lines, &gaps);
    let lost = set_aside(path, (&lines, readable), &damaged, &gaps)?;
    Ok(Loaded {
        lines,
        lost: Some(lost),
    })
}

/// Mark abandoned each delayed answer to an outside client that the journal never saw sent
/// (`Delivered`) nor given up (`Abandoned`): its process ended (killed, or its drain cut it)
/// first, so the client got nothing (REC-4). When is not known: no `at`.
fn never_sent(lines: &mut [Line]) {
    let mut waiting: HashMap<(Option<String>, u64), usize> = HashMap::new();
    for (i, line) in lines.iter().enumerate() {
        match line {
            Line::Record {
                session, record, ..
            } if record.actor.is_none()
                && record.response.delivery == Delivery::Sent
                && record.response.at > Some(record.received_at) =>
            {
                waiting.insert((session.clone(), record.seq), i);
            }
            Line::Delivered { session, seq } | Line::Abandoned { session, seq, .. } => {
                waiting.remove(&(session.clone(), *seq));
            }
            // A world begun again (or ended) takes its entries with it.
            Line::World { session, .. } => waiting.retain(|(s, _), _| s != session),
            Line::Drop { session } => waiting.retain(|(s, _), _| s.as_ref() != Some(session)),
            _ => {}
        }
    }
    for i in waiting.into_values() {
        if let Line::Record { record, .. } = &mut lines[i] {
            record.response = ResponsePlan {
                delivery: Delivery::Abandoned,
                status: None,
                at: None,
            };
        }
    }
}

/// Keep the damaged original beside the journal and rewrite the journal with the readable
/// lines and the placeholders, so the next start needs no `--journal-recover` (a torn last line
/// is left out too). Returns the report.
fn set_aside(
    path: &Path,
    (lines, readable): (&[Line], usize),
    damaged: &[String],
    gaps: &[Gap],
) -> Result<String, JournalError> {
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let with_suffix = |suffix: &str| {
        let mut p = path.as_os_str().to_owned();
        p.push(suffix);
        PathBuf::from(p)
    };
    let kept = with_suffix(&format!(".damaged-{stamp}"));
    let tmp = with_suffix(".recovering");
    let write = || -> std::io::Result<()> {
        std::fs::copy(path, &kept)?;
        let mut f = std::io::BufWriter::new(File::create(&tmp)?);
        for l in lines {
            f.write_all(&encode(l).map_err(std::io::Error::other)?)?;
        }
        f.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().map_err(io_err(path))?;
    let lost: Vec<String> = gaps.iter().map(Gap::to_string).collect();
    Ok(format!(
        "journal {}: recovered {} readable line(s); left out {} damaged{}{}. Ledger entries lost: {}. \
         They are journal-lost entries now; their seqs (and action ids) are not reused. The \
         original file is kept as {}",
        path.display(),
        readable,
        damaged.len(),
        if damaged.is_empty() { "" } else { ": " },
        damaged.join(", "),
        if lost.is_empty() {
            "none (the damaged lines held other facts)".to_string()
        } else {
            lost.join("; ")
        },
        kept.display()
    ))
}

/// Seqs `from..=to` of `session` missing before the line at `before` (whose record is at `at`).
struct Gap {
    before: usize,
    session: Option<String>,
    from: u64,
    to: u64,
    at: std::time::Duration,
}

impl Gap {
    fn count(&self) -> usize {
        (self.to - self.from + 1) as usize
    }
}

impl std::fmt::Display for Gap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.from == self.to {
            true => write!(f, "seq {}", self.from)?,
            false => write!(f, "seqs {}-{}", self.from, self.to)?,
        }
        write!(f, " of {}", session_name(&self.session))
    }
}

/// The seqs missing between the records of each world (each begins at 1).
fn missing_seqs(lines: &[Line]) -> Vec<Gap> {
    let mut next: HashMap<Option<String>, u64> = HashMap::new();
    let mut out = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        match line {
            Line::World { session, .. } => {
                next.insert(session.clone(), 1);
            }
            Line::Record {
                session, record, ..
            } => {
                let expected = next.entry(session.clone()).or_insert(1);
                if record.seq > *expected {
                    out.push(Gap {
                        before: i,
                        session: session.clone(),
                        from: *expected,
                        to: record.seq - 1,
                        at: record.received_at,
                    });
                }
                *expected = (*expected).max(record.seq + 1);
            }
            Line::Unwritten { session, to, .. } => {
                let expected = next.entry(session.clone()).or_insert(1);
                *expected = (*expected).max(to + 1);
            }
            _ => {}
        }
    }
    out
}

/// Put a `journal-lost` placeholder where each missing record was, so the ledger keeps every
/// seq taken and the rewritten journal has no gap. Past [`MAX_PLACEHOLDERS`] in all, the
/// ledger leaves the rest out as it does evicted entries.
fn fill(lines: Vec<Line>, gaps: &[Gap]) -> Vec<Line> {
    const MAX_PLACEHOLDERS: usize = 1_000_000;
    let lost: usize = gaps.iter().map(Gap::count).sum();
    if lost > MAX_PLACEHOLDERS {
        return lines;
    }
    let mut out = Vec::with_capacity(lines.len() + lost);
    let mut gaps = gaps.iter().peekable();
    for (i, line) in lines.into_iter().enumerate() {
        while let Some(g) = gaps.next_if(|g| g.before == i) {
            out.extend((g.from..=g.to).map(|seq| Line::Record {
                session: g.session.clone(),
                record: Box::new(Record::journal_lost(seq, g.at)),
                key: None,
            }));
        }
        out.push(line);
    }
    out
}
