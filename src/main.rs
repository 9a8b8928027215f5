//! The `doubleagent` binary: parse the command line, set up logging on stderr, run.

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;
use doubleagent::cli::{self, Cli, LogFormat};
use tracing_subscriber::EnvFilter;

// jemalloc: a connection's task moves between worker threads, so a worker often frees what
// another allocated; glibc's malloc then waits on that thread's arena lock, jemalloc frees into
// the freeing thread's cache (see BENCHMARKS.md).
#[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

// jemalloc's options (`_RJEM_MALLOC_CONF` still adds to them): a thread's cache is swept every
// 1 MB allocated, not every 64 KB, whose sweeps were a measurable part of every request; what a
// cache holds stays bounded by its own limits.
#[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
#[export_name = "_rjem_malloc_conf"]
static MALLOC_CONF: &u8 = &b"tcache_gc_incr_bytes:1048576\0"[0];

fn main() -> ExitCode {
    let cli = Cli::parse();
    // A file-size limit (`ulimit -f`) would kill the process at the journal's next write; ignored,
    // the write fails with EFBIG and is answered 503 like any journal that cannot write.
    #[cfg(unix)]
    // SAFETY: setting a signal's disposition to "ignore" before any thread is started.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    // By default, a line per request only in the JSON format (one object per request, for
    // machines); in the pretty format it would cost a formatted line per request for a person
    // to scroll past. RUST_LOG, when set, decides alone (RUST_LOG=info shows them again).
    let default = match cli.log_format() {
        LogFormat::Json => "info",
        LogFormat::Pretty => "info,doubleagent::request=warn",
    };
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    // Lines go to stderr from a thread of their own (a request that logs only queues its line);
    // not lossy: if stderr is not read, loggers wait rather than lines being dropped. The guard
    // writes out what is queued when it goes, at the end of `main`.
    let (stderr, _written) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .lossy(false)
        .thread_name("log-writer")
        .finish(std::io::stderr());
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        // Colours only for a person at a terminal, not in a log file or a pipe.
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(stderr);
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
    runtime.block_on(cli::run(cli))
}
