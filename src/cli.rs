//! The command line: `serve` and `check`, their flags, and their exit codes
//! (0 ok, 1 runtime failure, 2 bad input — clap's own usage errors exit 2 as well).
//!
//! `serve` binds the listener itself, prints the ready line as the first line on stdout, and
//! owns shutdown (SIGINT/SIGTERM), handing both to [`crate::server::serve`].

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};

use crate::admin::Ready;
use crate::scenario::Scenario;
use crate::server::{serve, App};
use crate::world::Host;

#[derive(Parser, Debug)]
#[command(
    name = "doubleagent",
    version,
    about = "Plays the outside world for AI-agent orchestrators under test."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Serve a scenario's fake services (the built-in quickstart without a file).
    Serve(ServeArgs),
    /// Validate scenario files without serving them.
    Check {
        /// Scenario files to validate.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// The scenario TOML file; without it, the built-in quickstart.
    pub scenario: Option<PathBuf>,
    /// Address to listen on; port 0 picks a free port (reported on the ready line).
    #[arg(long, default_value = "127.0.0.1:7070")]
    pub listen: String,
    /// Also write the ready line's JSON to this file.
    #[arg(long)]
    pub ready_file: Option<PathBuf>,
    /// Override the scenario's seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Log format on stderr.
    #[arg(long, value_enum, default_value_t = LogFormat::Pretty)]
    pub log_format: LogFormat,
    /// On shutdown, how long delayed responses may still be sent.
    #[arg(long, default_value = "5s", value_parser = parse_dur)]
    pub drain_timeout: Duration,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum LogFormat {
    Pretty,
    Json,
}

fn parse_dur(s: &str) -> Result<Duration, String> {
    crate::clock::parse_duration(s)
}

impl Cli {
    pub fn log_format(&self) -> LogFormat {
        match &self.command {
            Command::Serve(a) => a.log_format,
            Command::Check { .. } => LogFormat::Pretty,
        }
    }
}

/// Run a parsed command to completion.
pub async fn run(cli: Cli) -> ExitCode {
    match cli.command {
        Command::Check { files } => check(&files),
        Command::Serve(args) => serve_cmd(args).await,
    }
}

fn check(files: &[PathBuf]) -> ExitCode {
    let mut bad = false;
    for f in files {
        match Scenario::from_file(f) {
            Ok(s) => println!(
                "{}: ok (scenario \"{}\", {} service(s))",
                f.display(),
                s.name,
                s.services.len()
            ),
            Err(e) => {
                eprintln!("{e}");
                bad = true;
            }
        }
    }
    if bad {
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}

async fn serve_cmd(args: ServeArgs) -> ExitCode {
    let quickstart = args.scenario.is_none();
    let scenario = match &args.scenario {
        Some(path) => match Scenario::from_file(path) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::from(2);
            }
        },
        None => Scenario::quickstart(),
    };
    let listener = match tokio::net::TcpListener::bind(&args.listen).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("error: cannot listen on {}: {e}", args.listen);
            return ExitCode::from(if e.kind() == std::io::ErrorKind::InvalidInput {
                2
            } else {
                1
            });
        }
    };
    let addr = match listener.local_addr() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(1);
        }
    };
    let app = Arc::new(App {
        host: Host::new(scenario, args.seed),
        base_url: format!("http://{addr}"),
        drain: args.drain_timeout,
    });
    let ready = Ready::of(&app.host.world(), &app.base_url).line();
    if let Some(path) = &args.ready_file {
        if let Err(e) = std::fs::write(path, format!("{ready}\n")) {
            eprintln!("error: cannot write the ready file {}: {e}", path.display());
            return ExitCode::from(1);
        }
    }
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{ready}");
        let _ = out.flush();
    }
    if quickstart {
        eprintln!("{}", quickstart_hints(&app.base_url));
    }
    tracing::info!(url = %app.base_url, "serving");
    serve(listener, app, shutdown_signal()).await;
    tracing::info!("stopped");
    ExitCode::SUCCESS
}

fn quickstart_hints(url: &str) -> String {
    format!(
        "doubleagent is serving the built-in quickstart (a payments API whose first transfer is applied but its response lost).\n\
         Try:\n  \
         curl -i -X POST {url}/payments/v1/transfers -H 'Idempotency-Key: k-1' -H 'content-type: application/json' -d '{{\"to\":\"acct-9\",\"amount\":100}}'   # connection closes, no answer\n  \
         curl -s {url}/_admin/ledger                              # ...yet the ledger says applied: true\n  \
         curl -s -X POST {url}/payments/v1/transfers -H 'Idempotency-Key: k-1' -H 'content-type: application/json' -d '{{\"to\":\"acct-9\",\"amount\":100}}'   # replayed, Idempotent-Replayed: true\n  \
         curl -s {url}/payments/v1/transfers/k-1                  # authoritative lookup by key\n\
         Stop with Ctrl-C. Write your own scenario: see README.md."
    )
}

/// Resolves on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}
