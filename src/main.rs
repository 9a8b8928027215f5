//! The `doubleagent` binary: parse the command line, set up logging on stderr, run.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::Duration;

use clap::Parser;
use doubleagent::cli::{self, Cli, LogFormat};
use tracing_subscriber::EnvFilter;

// jemalloc instead of the system's allocator. A connection's task moves between the worker
// threads, so a worker often frees what the other allocated: glibc's malloc then takes the other
// thread's arena lock (about a fifth of an A2A round trip's `futex` calls under load were those
// waits), and grows its arenas a page at a time with `mprotect`. jemalloc frees into the freeing
// thread's cache. Against the same baseline (BENCHMARKS.md, interleaved runs): 1-9 % more
// requests per second in every load figure, no more memory per ledger entry.
#[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

// jemalloc's options, read when it starts (`_RJEM_MALLOC_CONF` in the environment still adds to
// them). A thread's cache is swept every 64 KB allocated by default: ~1.3 k instructions of an
// A2A round trip (2.5 %) and ~0.3 k of a recorded action went on the sweeps (callgrind). Every
// 1 MB, the sweeps cost a sixteenth of that; what a cache holds stays bounded by its own limits.
#[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
#[export_name = "_rjem_malloc_conf"]
static MALLOC_CONF: &u8 = &b"tcache_gc_incr_bytes:1048576\0"[0];

fn main() -> ExitCode {
    let cli = Cli::parse();
    // By default, a line per request only in the JSON format (one object per request, for
    // machines); in the pretty format it would cost a formatted line per request for a person
    // to scroll past. RUST_LOG, when set, decides alone (RUST_LOG=info shows them again).
    let default = match cli.log_format() {
        LogFormat::Json => "info",
        LogFormat::Pretty => "info,doubleagent::request=warn",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let stderr = LogWriter::start();
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        // Colours only for a person at a terminal, not in a log file or a pipe.
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(stderr.clone());
    match cli.log_format() {
        LogFormat::Json => logs.json().init(),
        LogFormat::Pretty => logs.init(),
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let code = runtime.block_on(cli::run(cli));
    stderr.flush();
    code
}

enum Line {
    Text(Vec<u8>),
    /// Answer once everything sent before has been written.
    Flush(mpsc::Sender<()>),
}

/// Log lines go to stderr from a thread of their own: a request that logs only queues its line
/// (each event arrives as one `write`), and the thread writes whatever has queued up in one
/// go. Under load that is one system call for many lines instead of one per request, made by no
/// thread that serves requests. Bounded: if stderr is not read, loggers wait rather than the
/// queue growing without end.
#[derive(Clone)]
struct LogWriter {
    tx: mpsc::SyncSender<Line>,
}

impl LogWriter {
    fn start() -> LogWriter {
        let (tx, rx) = mpsc::sync_channel::<Line>(65_536);
        // Should the thread not start, the receiver is dropped with it and every write goes
        // straight to stderr instead.
        let _ = std::thread::Builder::new()
            .name("log-writer".into())
            .spawn(move || {
                let mut out = std::io::BufWriter::with_capacity(64 << 10, std::io::stderr());
                while let Ok(first) = rx.recv() {
                    let mut next = Some(first);
                    while let Some(line) = next {
                        match line {
                            Line::Text(t) => {
                                let _ = out.write_all(&t);
                            }
                            Line::Flush(done) => {
                                let _ = out.flush();
                                let _ = done.send(());
                            }
                        }
                        next = rx.try_recv().ok();
                    }
                    let _ = out.flush();
                }
            });
        LogWriter { tx }
    }

    /// Wait (briefly) until every line logged so far is written.
    fn flush(&self) {
        let (done, wait) = mpsc::channel();
        if self.tx.send(Line::Flush(done)).is_ok() {
            let _ = wait.recv_timeout(Duration::from_secs(2));
        }
    }
}

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.tx.send(Line::Text(buf.to_vec())).is_err() {
            // The writer thread is gone: write directly.
            return std::io::stderr().write(buf);
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogWriter {
    type Writer = LogWriter;
    fn make_writer(&'a self) -> LogWriter {
        self.clone()
    }
}
