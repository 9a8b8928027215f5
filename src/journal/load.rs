//! Reading a journal back at start: every line checked against its checksum, a torn last line
//! cut off the file (so the next line appended cannot merge with it), and a damaged line
//! anywhere else refused, or with `--journal-recover` left out and reported.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::{encode, io_err, Framed, JournalError, Line};
use crate::ledger::{Delivery, ResponsePlan};

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

/// Read and check a journal (a missing file is an empty one). A damaged line other than a torn
/// last one is an error unless `recover`, which keeps every readable line, rewrites the journal
/// with them (the original set aside beside it) and says what was lost.
pub fn load(path: &Path, recover: bool) -> Result<Loaded, JournalError> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Loaded::default()),
        Err(e) => return Err(io_err(path)(e)),
    };
    // Every line the server wrote ends with a newline written in the same call: bytes after the
    // last one are a line the process was killed while writing, and were never acknowledged.
    let whole = bytes.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
    let mut lines = Vec::new();
    let mut damaged = Vec::new();
    let mut framed = false;
    let mut last = None;
    for (i, text) in bytes[..whole].split(|b| *b == b'\n').enumerate() {
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
                        line: i + 1,
                        seq,
                        reason,
                    });
                }
                tracing::warn!(path = %path.display(), line = i + 1, %seq, %reason, "journal: leaving out a damaged line (--journal-recover)");
                damaged.push(format!("line {} ({seq})", i + 1));
            }
        }
    }
    if whole < bytes.len() {
        tracing::warn!(path = %path.display(), bytes = bytes.len() - whole, "journal: cutting off a torn last line (the process was probably killed mid-write)");
        std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|f| f.set_len(whole as u64).and_then(|()| f.sync_all()))
            .map_err(io_err(path))?;
    }
    never_sent(&mut lines);
    let lost = if damaged.is_empty() {
        None
    } else {
        Some(set_aside(path, &bytes, &lines, &damaged)?)
    };
    Ok(Loaded { lines, lost })
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
/// lines, so the next start needs no `--journal-recover`. Returns the report.
fn set_aside(
    path: &Path,
    original: &[u8],
    lines: &[Line],
    damaged: &[String],
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
        std::fs::write(&kept, original)?;
        let mut f = std::fs::File::create(&tmp)?;
        for l in lines {
            f.write_all(&encode(l).map_err(std::io::Error::other)?)?;
        }
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    };
    write().map_err(io_err(path))?;
    let gaps = missing_seqs(lines);
    Ok(format!(
        "journal {}: recovered {} readable line(s); left out {} damaged: {}. Ledger entries lost: {}. \
         Their seqs (and action ids) are not reused. The original file is kept as {}",
        path.display(),
        lines.len(),
        damaged.len(),
        damaged.join(", "),
        if gaps.is_empty() {
            "none (the damaged lines held other facts)".to_string()
        } else {
            gaps.join("; ")
        },
        kept.display()
    ))
}

/// The seqs missing between the records of each world, e.g. `seq 500 of the default session`.
fn missing_seqs(lines: &[Line]) -> Vec<String> {
    let mut next: HashMap<Option<String>, u64> = HashMap::new();
    let mut out = Vec::new();
    for line in lines {
        match line {
            Line::World { session, .. } => {
                next.insert(session.clone(), 1);
            }
            Line::Record {
                session, record, ..
            } => {
                let expected = next.entry(session.clone()).or_insert(1);
                if record.seq > *expected {
                    let range = if record.seq - 1 == *expected {
                        format!("seq {expected}")
                    } else {
                        format!("seqs {expected}-{}", record.seq - 1)
                    };
                    out.push(format!("{range} of {}", session_name(session)));
                }
                *expected = (*expected).max(record.seq + 1);
            }
            _ => {}
        }
    }
    out
}
