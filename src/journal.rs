//! The journal: an append-only JSON-lines file from which a restarted server rebuilds its worlds.
//!
//! Each [`Line`] is one fact: a world began (session, scenario text, clock epoch), a record was
//! appended, an action was cancelled, a key was remembered, a manual clock moved, a session
//! ended. Records reach the journal through the ledger's [`Sink`], so no code path that appends
//! can forget to persist; a line is written (to the OS) before the response it describes is
//! sent, so a process killed with SIGKILL loses no entry a client saw answered. `--fsync` decides
//! how often the OS is also told to put the bytes on disk: every line, in batches, or never.
//!
//! Replaying is the other half: [`read`] parses the file, skipping a torn last line (and any
//! other unreadable line) with a warning, and the world module applies the lines in order.
//! Agents' state is not journaled apart from their ledger entries: after the worlds are rebuilt,
//! `agent::restore` derives it from them (A2A tasks, those in flight failed; AG-UI threads, runs
//! streaming at the crash ended as if their client had gone away).
//!
//! Sits above `ledger`, `idempotency`, `clock` and `scenario`; `world` owns the handle.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::clock::ClockKind;
use crate::idempotency::KeyRecord;
use crate::ledger::{Record, Sink};
use crate::sync::unpoisoned;

/// When the journal asks the OS to make its bytes durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Fsync {
    /// After every line: survives power loss, costs a disk flush per request.
    Always,
    /// Every 100 ms from a background thread.
    Batch,
    /// Never: survives a killed process (the OS has the bytes), not a crashed machine.
    Never,
}

/// One journaled fact. `session` is `None` for the default session.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "kebab-case")]
pub enum Line {
    /// A fresh world began (at start, reset, scenario replacement or a new session).
    World {
        session: Option<String>,
        scenario: String,
        clock: ClockKind,
        epoch_ms: u64,
    },
    Record {
        session: Option<String>,
        record: Box<Record>,
    },
    Cancel {
        session: Option<String>,
        seq: u64,
        at: Duration,
    },
    /// The client of `seq` went away at `at`, before its response was written.
    Abandoned {
        session: Option<String>,
        seq: u64,
        at: Duration,
    },
    Key {
        session: Option<String>,
        service: String,
        key: String,
        record: Box<KeyRecord>,
    },
    Clock {
        session: Option<String>,
        now: Duration,
    },
    /// A named session ended.
    Drop { session: String },
}

#[derive(Debug, thiserror::Error)]
#[error("journal {path}: {source}")]
pub struct JournalError {
    pub path: PathBuf,
    pub source: std::io::Error,
}

/// The open journal file.
pub struct Journal {
    path: PathBuf,
    file: Mutex<File>,
    fsync: Fsync,
    dirty: AtomicBool,
}

impl Journal {
    /// Open (creating if needed) for appending. With `Fsync::Batch`, a background thread syncs.
    pub fn open(path: &Path, fsync: Fsync) -> Result<Arc<Journal>, JournalError> {
        let err = |source| JournalError {
            path: path.to_path_buf(),
            source,
        };
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(err)?;
        let j = Arc::new(Journal {
            path: path.to_path_buf(),
            file: Mutex::new(file),
            fsync,
            dirty: AtomicBool::new(false),
        });
        if fsync == Fsync::Batch {
            let weak = Arc::downgrade(&j);
            std::thread::spawn(move || loop {
                std::thread::sleep(Duration::from_millis(100));
                match weak.upgrade() {
                    Some(j) => j.sync_if_dirty(),
                    None => return,
                }
            });
        }
        Ok(j)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Append one line. Errors are logged, not returned: a full disk must not take the fake
    /// services down with it.
    pub fn write(&self, line: &Line) {
        let mut buf = match serde_json::to_vec(line) {
            Ok(b) => b,
            Err(e) => {
                tracing::error!(error = %e, "journal: cannot encode a line");
                return;
            }
        };
        buf.push(b'\n');
        let mut f = unpoisoned(self.file.lock());
        // One write call per line, so a crash tears at most the last line.
        if let Err(e) = f.write_all(&buf) {
            tracing::error!(error = %e, path = %self.path.display(), "journal: write failed");
            return;
        }
        match self.fsync {
            Fsync::Always => {
                if let Err(e) = f.sync_data() {
                    tracing::error!(error = %e, "journal: fsync failed");
                }
            }
            Fsync::Batch => self.dirty.store(true, Ordering::Release),
            Fsync::Never => {}
        }
    }

    fn sync_if_dirty(&self) {
        if self.dirty.swap(false, Ordering::AcqRel) {
            let f = unpoisoned(self.file.lock());
            let _ = f.sync_data();
        }
    }

    /// Make everything written so far durable (at shutdown).
    pub fn flush(&self) {
        let f = unpoisoned(self.file.lock());
        let _ = f.sync_data();
        self.dirty.store(false, Ordering::Release);
    }
}

/// The ledger sink of one world: its appended records go to the journal.
pub struct RecordSink {
    pub journal: Arc<Journal>,
    pub session: Option<String>,
}

impl Sink for RecordSink {
    fn appended(&self, record: &Record) {
        self.journal.write(&Line::Record {
            session: self.session.clone(),
            record: Box::new(record.clone()),
        });
    }
}

/// Read every readable line of a journal (a missing file is an empty journal). Unreadable lines
/// are skipped with a warning; a torn last line is the expected case after a kill.
pub fn read(path: &Path) -> Result<Vec<Line>, JournalError> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(JournalError {
                path: path.to_path_buf(),
                source,
            })
        }
    };
    let mut lines = Vec::new();
    let raw: Vec<String> = BufReader::new(file)
        .split(b'\n')
        .map(|l| l.map(|b| String::from_utf8_lossy(&b).into_owned()))
        .collect::<Result<_, _>>()
        .map_err(|source| JournalError {
            path: path.to_path_buf(),
            source,
        })?;
    let last = raw.len().saturating_sub(1);
    for (i, text) in raw.iter().enumerate() {
        if text.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Line>(text) {
            Ok(l) => lines.push(l),
            Err(e) if i == last => {
                tracing::warn!(path = %path.display(), line = i + 1, error = %e, "journal: skipping a torn last line (the process was probably killed mid-write)");
            }
            Err(e) => {
                tracing::warn!(path = %path.display(), line = i + 1, error = %e, "journal: skipping an unreadable line");
            }
        }
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_torn_last_line_is_skipped_and_the_rest_is_read() {
        let dir = std::env::temp_dir().join(format!("da-journal-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("j.jsonl");
        let _ = std::fs::remove_file(&path);
        let j = Journal::open(&path, Fsync::Never).unwrap();
        j.write(&Line::Clock {
            session: None,
            now: Duration::from_secs(5),
        });
        j.write(&Line::Drop {
            session: "s".into(),
        });
        drop(j);
        let mut f = OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(b"{\"t\":\"clock\",\"sess").unwrap();
        let lines = read(&path).unwrap();
        assert_eq!(lines.len(), 2);
        assert!(matches!(lines[0], Line::Clock { now, .. } if now == Duration::from_secs(5)));
        assert!(read(&dir.join("missing.jsonl")).unwrap().is_empty());
    }
}
