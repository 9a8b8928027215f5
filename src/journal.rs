//! The journal: an append-only JSON-lines file from which a restarted server rebuilds its worlds.
//!
//! Each [`Line`] is one fact (a world began, a record was appended, …). Records reach it through
//! the ledger's [`Sink`], so no path that appends can forget to persist, and a line reaches the
//! OS before the response it describes is sent: a SIGKILL loses no entry a client saw answered.
//! `--fsync` decides how often the bytes are also put on disk. Each line carries the CRC-32 of
//! its content; a write that fails is cut back off the file and answered 503 (see [`scope`]).
//!
//! `load` checks the file at start and the world module applies its lines in order; agents'
//! state is derived from the rebuilt ledgers (`agent::restore`), not journaled.
//!
//! Sits above `ledger`, `idempotency`, `clock` and `scenario`; `world` owns the handle.

use std::cell::Cell;
use std::fs::{File, OpenOptions};
use std::future::Future;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use crate::clock::ClockKind;
use crate::idempotency::KeyRecord;
use crate::ledger::{Record, Sink};
use crate::sync::unpoisoned;

mod load;
pub use load::{load, Loaded};

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
    /// An appended record; an execution that a key store remembers carries its key record in
    /// the same line, so the two are durable together or not at all.
    Record {
        session: Option<String>,
        record: Box<Record>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        key: Option<Box<KeyRecord>>,
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
    /// The delayed answer of `seq` was due and is being sent. A delayed answer with neither this
    /// nor `Abandoned` was cut by the end of its process: loading restores it abandoned (REC-4).
    Delivered { session: Option<String>, seq: u64 },
    /// The records `from..=to` could not be written (answered 503): not missing by damage.
    Unwritten {
        session: Option<String>,
        from: u64,
        to: u64,
    },
    /// A key record on its own line (journals written before keys rode on their record).
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
pub enum JournalError {
    #[error("journal {}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A line other than the last one cannot be trusted: starting would silently lose it and
    /// every seq after it could be handed out again.
    #[error(
        "journal {}: line {line} is damaged ({reason}); {seq}.\n\
         Nothing was served. Fix the file, or start with --journal-recover to keep every readable \
         entry (the damaged lines are set aside in a copy of the file, their seqs are not reused)",
        path.display()
    )]
    Damaged {
        path: PathBuf,
        line: usize,
        /// Which seq it was (as far as can be told).
        seq: String,
        reason: String,
    },
    /// Whole records are missing (lines removed): the keys they held would execute again.
    #[error(
        "journal {}: ledger entries are missing: {seqs} (their lines are not in the file, though \
         every line in it is whole).\n\
         Nothing was served. Fix the file, or start with --journal-recover to keep every entry \
         left (the missing ones become journal-lost entries, their seqs are not reused)",
        path.display()
    )]
    Missing { path: PathBuf, seqs: String },
    #[error(
        "journal {}: line {line} is longer than {max_mib} MiB without ending: this is not a \
         journal doubleagent wrote. Nothing was served",
        path.display()
    )]
    TooLong {
        path: PathBuf,
        line: usize,
        max_mib: u64,
    },
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> JournalError + '_ {
    move |source| JournalError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// A line as it is on disk: the fact's JSON and the CRC-32 of exactly those bytes, so a changed
/// byte is detected instead of loaded.
#[derive(Serialize, Deserialize)]
struct Framed<'a> {
    #[serde(borrow)]
    line: &'a RawValue,
    crc32: u32,
}

/// One line's bytes, newline included.
fn encode(line: &Line) -> Result<Vec<u8>, serde_json::Error> {
    let raw = serde_json::value::to_raw_value(line)?;
    let crc32 = crc32fast::hash(raw.get().as_bytes());
    let mut buf = serde_json::to_vec(&Framed { line: &raw, crc32 })?;
    buf.push(b'\n');
    Ok(buf)
}

tokio::task_local! {
    /// Set when a journal write made while handling one request failed (see [`scope`]).
    static WRITE_FAILED: Cell<bool>;
}

/// Run `f` (one request's handling) with its own record of journal failures, read inside it by
/// [`write_failed`]: an answer must not claim what the journal does not hold.
pub fn scope<F: Future>(f: F) -> impl Future<Output = F::Output> {
    WRITE_FAILED.scope(Cell::new(false), f)
}

/// Whether a journal write made so far by the request being handled (see [`scope`]) failed.
pub fn write_failed() -> bool {
    WRITE_FAILED.try_with(Cell::get).unwrap_or(false)
}

/// The file and how many bytes of it are whole lines.
struct Tail {
    file: File,
    len: u64,
    /// A failed write left bytes past `len` that could not be cut yet.
    ragged: bool,
}

impl Tail {
    fn append(&mut self, buf: &[u8], fsync: Fsync) -> std::io::Result<()> {
        if self.ragged {
            self.file.set_len(self.len)?;
            self.ragged = false;
        }
        // One write call per line, so a crash tears at most the last line.
        if let Err(e) = self.file.write_all(buf) {
            // A short write (a full disk) must not leave half a line for the next one to merge
            // with: cut back to the last whole line, now or before the next write.
            self.ragged = self.file.set_len(self.len).is_err();
            return Err(e);
        }
        self.len += buf.len() as u64;
        if fsync == Fsync::Always {
            self.file.sync_data()?;
        }
        Ok(())
    }
}

/// Whether the journal is keeping up (for health and metrics).
#[derive(Clone, Debug, Default, Serialize)]
pub struct Status {
    /// The last write failed: answers are 503 until one succeeds.
    pub failing: bool,
    pub failed_writes: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// The open journal file.
pub struct Journal {
    path: PathBuf,
    tail: Mutex<Tail>,
    fsync: Fsync,
    dirty: AtomicBool,
    failing: AtomicBool,
    failed_writes: AtomicU64,
    last_error: Mutex<Option<String>>,
}

impl Journal {
    /// Open (creating if needed) for appending. With `Fsync::Batch`, a background thread syncs.
    pub fn open(path: &Path, fsync: Fsync) -> Result<Arc<Journal>, JournalError> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(io_err(path))?;
        let len = file.metadata().map_err(io_err(path))?.len();
        let j = Arc::new(Journal {
            path: path.to_path_buf(),
            tail: Mutex::new(Tail {
                file,
                len,
                ragged: false,
            }),
            fsync,
            dirty: AtomicBool::new(false),
            failing: AtomicBool::new(false),
            failed_writes: AtomicU64::new(0),
            last_error: Mutex::new(None),
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

    /// Append one line. A failure (a full disk, an I/O error) is logged, counted, shown by
    /// [`Journal::status`] and flagged to the request being handled (see [`scope`]), which
    /// then answers 503 instead of acknowledging what was not written.
    pub fn write(&self, line: &Line) -> bool {
        let written = encode(line)
            .map_err(std::io::Error::other)
            .and_then(|buf| unpoisoned(self.tail.lock()).append(&buf, self.fsync));
        match written {
            Ok(()) => {
                if self.fsync == Fsync::Batch {
                    self.dirty.store(true, Ordering::Release);
                }
                self.failing.store(false, Ordering::Release);
                true
            }
            Err(e) => {
                self.failed(&e);
                let _ = WRITE_FAILED.try_with(|f| f.set(true));
                false
            }
        }
    }

    fn failed(&self, e: &std::io::Error) {
        tracing::error!(error = %e, path = %self.path.display(), "journal: write failed");
        self.failing.store(true, Ordering::Release);
        self.failed_writes.fetch_add(1, Ordering::Relaxed);
        *unpoisoned(self.last_error.lock()) = Some(e.to_string());
    }

    /// Whether writes are failing, and how many have.
    pub fn status(&self) -> Status {
        Status {
            failing: self.failing.load(Ordering::Acquire),
            failed_writes: self.failed_writes.load(Ordering::Relaxed),
            last_error: unpoisoned(self.last_error.lock()).clone(),
        }
    }

    fn sync_if_dirty(&self) {
        if self.dirty.swap(false, Ordering::AcqRel) {
            let t = unpoisoned(self.tail.lock());
            if let Err(e) = t.file.sync_data() {
                drop(t);
                self.failed(&e);
            }
        }
    }

    /// Make everything written so far durable (at shutdown).
    pub fn flush(&self) {
        let t = unpoisoned(self.tail.lock());
        let _ = t.file.sync_data();
        self.dirty.store(false, Ordering::Release);
    }
}

/// The ledger sink of one world: its appended records go to the journal.
pub struct RecordSink {
    journal: Arc<Journal>,
    session: Option<String>,
    /// The seqs whose records could not be written (answered 503), until a line says so.
    unwritten: Mutex<Option<(u64, u64)>>,
}

impl RecordSink {
    pub fn new(journal: Arc<Journal>, session: Option<String>) -> RecordSink {
        RecordSink {
            journal,
            session,
            unwritten: Mutex::new(None),
        }
    }
}

impl Sink for RecordSink {
    fn appended(&self, record: &Record, key: Option<&KeyRecord>) -> bool {
        let session = self.session.clone();
        let mut unwritten = unpoisoned(self.unwritten.lock());
        // Said before the next record, so a seq missing from the journal is damage.
        if let Some((from, to)) = *unwritten {
            let said = self.journal.write(&Line::Unwritten {
                session: session.clone(),
                from,
                to,
            });
            if !said {
                *unwritten = Some((from, record.seq));
                return false;
            }
        }
        let written = self.journal.write(&Line::Record {
            session,
            record: Box::new(record.clone()),
            key: key.map(|k| Box::new(k.clone())),
        });
        *unwritten = match (written, *unwritten) {
            (true, _) => None,
            (false, Some((from, _))) => Some((from, record.seq)),
            (false, None) => Some((record.seq, record.seq)),
        };
        written
    }
}
