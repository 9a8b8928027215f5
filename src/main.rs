//! The `doubleagent` binary: parse the command line, set up logging on stderr, run.

use std::process::ExitCode;

use clap::Parser;
use doubleagent::cli::{self, Cli, LogFormat};
use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
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
