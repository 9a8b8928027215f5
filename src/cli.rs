//! The command line: `serve` and `check`, their flags, and their exit codes
//! (0 ok, 1 runtime failure, 2 bad input — clap's own usage errors exit 2 as well; a verdict of
//! `verify`/`run`: 0 clean, 1 findings, [`INCOMPLETE`] incomplete).
//!
//! `serve` binds the listener itself, prints the ready line as the first line on stdout, and
//! owns shutdown (SIGINT/SIGTERM), handing both to [`crate::server::serve`].

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};

use crate::client;
use crate::journal::{self, Fsync, Journal};
use crate::ledger::Filter;
use crate::scenario::Scenario;
use crate::server::{serve, App};
use crate::verify::{parse_jsonl, verify, Claims, LeanError, LeanLedger, Report, State};
use crate::world::{Host, Limits};

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
    /// Check a ledger for broken rules: a running server's (--url) or an exported one (--ledger).
    Verify(VerifyArgs),
    /// Serve a scenario on a free port, run CMD against it, then verify what happened.
    Run(RunArgs),
    /// Write the HTML timeline of a ledger: a running server's (--url) or an exported one.
    Report {
        #[command(flatten)]
        source: VerifyArgs,
        /// Where to write the page (`-`: stdout).
        #[arg(short = 'o', long = "output", default_value = "report.html")]
        output: PathBuf,
    },
    /// Exit 0 when a doubleagent answers its health check (for container HEALTHCHECKs).
    Probe {
        /// Base URL of the doubleagent to probe.
        #[arg(long, default_value = "http://127.0.0.1:7070")]
        url: String,
        /// Give up after this long.
        #[arg(long, default_value = "2s", value_parser = crate::clock::parse_duration)]
        timeout: Duration,
    },
}

#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["url", "ledger"])))]
pub struct VerifyArgs {
    /// Base URL of a running doubleagent (its ledger is read from /_admin/ledger.jsonl).
    #[arg(long)]
    pub url: Option<String>,
    /// An exported ledger (JSON lines, as from GET /_admin/ledger.jsonl).
    #[arg(long)]
    pub ledger: Option<PathBuf>,
    /// The orchestrator's claims (JSON), in addition to any it declared to the server.
    #[arg(long)]
    pub claims: Option<PathBuf>,
    /// Print the report as JSON instead of text.
    #[arg(long)]
    pub json: bool,
    /// With --url: the session whose ledger to verify.
    #[arg(long)]
    pub session: Option<String>,
    /// With --url: the server's admin token.
    #[arg(long, env = "DOUBLEAGENT_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
    /// Exit 0, not 3, when the verdict has no findings but could not judge everything.
    #[arg(long)]
    pub allow_incomplete: bool,
}

#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// The scenario TOML file.
    pub scenario: PathBuf,
    /// The orchestrator's claims (JSON), read after CMD finishes (so CMD may write it).
    #[arg(long)]
    pub claims: Option<PathBuf>,
    /// Override the scenario's seed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Print the report as JSON instead of text; CMD's stdout then goes to stderr.
    #[arg(long)]
    pub json: bool,
    /// Exit 0, not 3, when the verdict has no findings but could not judge everything.
    #[arg(long)]
    pub allow_incomplete: bool,
    /// The command to run, after `--`.
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}

#[derive(clap::Args, Debug)]
pub struct ServeArgs {
    /// The scenario TOML file; without it, the built-in quickstart.
    pub scenario: Option<PathBuf>,
    /// Address to listen on; port 0 picks a free port (reported on the ready line).
    #[arg(long, default_value = "127.0.0.1:7070")]
    pub listen: String,
    /// Address of the A2A gRPC listener (default: when an A2A agent serves gRPC, the --listen
    /// host at a free port); the ready line's `grpc` says where it is.
    #[arg(long)]
    pub grpc_listen: Option<String>,
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
    #[arg(long, default_value = "5s", value_parser = crate::clock::parse_duration)]
    pub drain_timeout: Duration,
    /// Close a connection whose client takes longer than this to send a request's head, or
    /// that waits longer for its next request (wall clock; hung fates are not affected).
    #[arg(long, default_value = "30s", value_parser = crate::clock::parse_duration)]
    pub header_read_timeout: Duration,
    /// Connections open at once; more wait in the listen queue until one closes.
    #[arg(long, default_value_t = 4096)]
    pub max_connections: usize,
    /// Require `Authorization: Bearer TOKEN` on /_admin/* (health stays open).
    #[arg(long, env = "DOUBLEAGENT_ADMIN_TOKEN", hide_env_values = true)]
    pub admin_token: Option<String>,
    /// Allow serving on a non-loopback address without an admin token.
    #[arg(long)]
    pub insecure_admin: bool,
    /// Named sessions (X-Doubleagent-Session) alive at once.
    #[arg(long, default_value_t = 1000)]
    pub max_sessions: usize,
    /// Drop a named session unused for this long (wall clock).
    #[arg(long, default_value = "30m", value_parser = crate::clock::parse_duration)]
    pub session_ttl: Duration,
    /// Ledger entries kept per session; the oldest are evicted (and counted) beyond it.
    /// `0`: unbounded (memory grows with every request).
    #[arg(long, default_value_t = crate::world::DEFAULT_MAX_ENTRIES)]
    pub max_entries: usize,
    /// Idempotency keys kept per session; the oldest are forgotten beyond it (0 keeps one). A
    /// retry whose key was forgotten executes again, its entry marked `key_forgotten`.
    #[arg(long, default_value_t = 100_000)]
    pub max_keys: usize,
    /// Append ledger entries and resumable state to this file, and restore from it at start.
    #[arg(long)]
    pub journal: Option<PathBuf>,
    /// Start even if the journal has damaged lines: keep every readable entry, set the damaged
    /// file aside, and report what was lost (seqs are never reused).
    #[arg(long, requires = "journal")]
    pub journal_recover: bool,
    /// How often the journal is made durable on disk.
    #[arg(long, value_enum, default_value_t = Fsync::Batch)]
    pub fsync: Fsync,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum LogFormat {
    Pretty,
    Json,
}

impl Cli {
    pub fn log_format(&self) -> LogFormat {
        match &self.command {
            Command::Serve(a) => a.log_format,
            _ => LogFormat::Pretty,
        }
    }
}

/// A command's exit code; `Err` for one it stopped early with (its error already printed).
type Exit = Result<ExitCode, ExitCode>;

/// Run a parsed command to completion.
pub async fn run(cli: Cli) -> ExitCode {
    let exit = match cli.command {
        Command::Check { files } => Ok(check(&files)),
        Command::Serve(args) => serve_cmd(args).await,
        Command::Verify(args) => verify_cmd(args).await,
        Command::Run(args) => run_cmd(args).await,
        Command::Probe { url, timeout } => Ok(probe(&url, timeout).await),
        Command::Report { source, output } => report_cmd(source, &output).await,
    };
    exit.unwrap_or_else(|code| code)
}

async fn probe(url: &str, timeout: Duration) -> ExitCode {
    let url = format!("{}/_admin/health", url.trim_end_matches('/'));
    let problem = match client::send("GET", &url, &[], Vec::new(), timeout).await {
        Ok(r) if r.status == 200 => {
            let ok = serde_json::from_slice::<serde_json::Value>(&r.body)
                .is_ok_and(|v| v["status"] == "ok");
            if ok {
                return ExitCode::SUCCESS;
            }
            format!("{url} answered 200 but not ok")
        }
        Ok(r) => format!("{url} answered {}", r.status),
        Err(e) => e.to_string(),
    };
    eprintln!("probe: {problem}");
    ExitCode::from(1)
}

/// Write to stdout. A reader that went away (`| head -1`) only ends the output: the command still
/// runs to its end and exits with its own code (no panic, no 101).
fn say(text: &str) {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("error: cannot write to stdout: {e}");
        }
        _ => {}
    }
}

/// Exit code of a verdict that found nothing but could not judge everything (see
/// [`crate::verify::State`]); `--allow-incomplete` makes it 0.
pub const INCOMPLETE: u8 = 3;

/// Print a verdict; its exit code: 0 clean, 1 findings, [`INCOMPLETE`] (or 0 when allowed).
/// `human`: the report as text, if asked for.
fn verdict(
    report: &Report,
    human: impl FnOnce() -> String,
    json: bool,
    allow_incomplete: bool,
) -> ExitCode {
    if json {
        let mut text = serde_json::to_string_pretty(report).unwrap_or_default();
        text.push('\n');
        say(&text);
    } else {
        say(&human());
    }
    match report.state {
        State::Clean => ExitCode::SUCCESS,
        State::Findings => ExitCode::from(1),
        State::Incomplete if allow_incomplete => ExitCode::SUCCESS,
        State::Incomplete => ExitCode::from(INCOMPLETE),
    }
}

fn read_claims(path: Option<&PathBuf>) -> Result<Option<Claims>, String> {
    let Some(path) = path else { return Ok(None) };
    let bytes = std::fs::read(path)
        .map_err(|e| format!("cannot read the claims file {}: {e}", path.display()))?;
    Claims::parse(&bytes)
        .map(Some)
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Why a `verify` or `report` has no ledger to read.
#[derive(Debug, thiserror::Error)]
enum LoadError {
    /// The file named is not there or cannot be read: bad input (exit 2).
    #[error("{0}")]
    File(String),
    /// The server could not be reached or did not give its ledger: a runtime failure (exit 1),
    /// as for `probe`.
    #[error("{0}")]
    Server(String),
}

impl LoadError {
    fn exit(&self) -> ExitCode {
        let code = match self {
            LoadError::File(_) => 2,
            LoadError::Server(_) => 1,
        };
        error(code, self)
    }
}

/// The ledger's JSONL text for a `verify` or `report`, and the name errors give it. Text fetched
/// over HTTP that is not UTF-8 is read with replacement characters; a file that is not is an
/// error (see [`not_utf8`]).
async fn load(args: &VerifyArgs) -> Result<(Vec<u8>, String), LoadError> {
    if let Some(path) = &args.ledger {
        let text = std::fs::read(path).map_err(|e| {
            LoadError::File(format!("cannot read the ledger {}: {e}", path.display()))
        })?;
        return Ok((text, path.display().to_string()));
    }
    // The running server's ledger, with its token and session.
    let base = args.url.as_deref().unwrap_or_default();
    let mut url = format!("{}/_admin/ledger.jsonl", base.trim_end_matches('/'));
    if let Some(s) = &args.session {
        url.push_str(&format!("?session={s}"));
    }
    let auth = args.admin_token.as_ref().map(|t| format!("Bearer {t}"));
    let headers: Vec<(&str, &str)> = auth.iter().map(|a| ("authorization", a.as_str())).collect();
    let timeout = Duration::from_secs(30);
    let body = match client::send("GET", &url, &headers, Vec::new(), timeout).await {
        Ok(r) if r.status == 200 => r.body.to_vec(),
        Ok(r) => {
            let why = String::from_utf8_lossy(&r.body);
            return Err(LoadError::Server(format!(
                "{url} answered {}: {why}",
                r.status
            )));
        }
        Err(e) => return Err(LoadError::Server(e.to_string())),
    };
    let text = String::from_utf8(body)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    Ok((text.into_bytes(), base.to_string()))
}

/// The error for a ledger file that is not UTF-8: the one reading it as text gives.
fn not_utf8(args: &VerifyArgs, origin: &str) -> String {
    let why = args
        .ledger
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).err())
        .map_or_else(
            || "stream did not contain valid UTF-8".to_string(),
            |e| e.to_string(),
        );
    format!("cannot read the ledger {origin}: {why}")
}

async fn verify_cmd(args: VerifyArgs) -> Exit {
    let fail = |e: String| error(2, e);
    let claims = read_claims(args.claims.as_ref()).map_err(fail)?;
    // Rows straight from the JSONL text, no full entries (see `verify::LeanLedger`): a file is
    // read a piece at a time, a ledger fetched over HTTP is in memory already.
    #[cfg(unix)]
    let file;
    let fetched;
    let (parsed, origin) = match &args.ledger {
        // Read in pieces by position: only a regular file can be (a pipe, `/dev/stdin` or
        // `<(curl …)` would read as empty), so anything else is read whole.
        #[cfg(unix)]
        Some(path) if std::fs::metadata(path).is_ok_and(|m| m.is_file()) => {
            let origin = path.display().to_string();
            file = std::fs::File::open(path)
                .map_err(|e| fail(format!("cannot read the ledger {origin}: {e}")))?;
            (LeanLedger::read(&file, &origin), origin)
        }
        _ => {
            fetched = load(&args).await.map_err(|e| e.exit())?;
            (LeanLedger::parse(&fetched.0, &fetched.1), fetched.1.clone())
        }
    };
    let ledger = parsed.map_err(|e| {
        fail(match e {
            LeanError::Io(e) => format!("cannot read the ledger {origin}: {e}"),
            LeanError::NotUtf8 => not_utf8(&args, &origin),
            LeanError::Entry(e) => e,
        })
    })?;
    let report = ledger.verify(claims.as_ref());
    let human = || ledger.human(&report);
    let code = verdict(&report, human, args.json, args.allow_incomplete);
    // The process ends next: freeing a million rows one by one would only delay it.
    std::mem::forget(ledger);
    Ok(code)
}

async fn report_cmd(args: VerifyArgs, output: &std::path::Path) -> Exit {
    let fail = |e: String| error(2, e);
    let claims = read_claims(args.claims.as_ref()).map_err(fail)?;
    let (bytes, origin) = load(&args).await.map_err(|e| e.exit())?;
    let text = std::str::from_utf8(&bytes).map_err(|_| fail(not_utf8(&args, &origin)))?;
    let entries = parse_jsonl(text, &origin).map_err(fail)?;
    let report = verify(&entries, claims.as_ref());
    let title = args
        .ledger
        .as_ref()
        .map(|p| p.display().to_string())
        .or(args.url.clone())
        .unwrap_or_default();
    let page = crate::report::render(&title, &entries, &report);
    if output == std::path::Path::new("-") {
        say(&page);
    } else if let Err(e) = std::fs::write(output, page) {
        return Err(error(
            1,
            format_args!("cannot write {}: {e}", output.display()),
        ));
    }
    let state = serde_json::to_value(report.state).unwrap_or_default();
    eprintln!(
        "wrote {} ({} entries, {} finding(s), {})",
        output.display(),
        entries.len(),
        report.findings.len(),
        state.as_str().unwrap_or_default()
    );
    Ok(ExitCode::SUCCESS)
}

/// `DOUBLEAGENT_<NAME>_URL`: upper case, anything but letters and digits becomes `_`.
pub fn env_name(name: &str) -> String {
    let up = name
        .to_ascii_uppercase()
        .replace(|c: char| !c.is_ascii_alphanumeric(), "_");
    format!("DOUBLEAGENT_{up}_URL")
}

/// The variables `run` gives the command, each with the URL it names; two names that would
/// share a variable (`a-b` and `a_b`) are refused, as one would silently hide the other.
fn run_env(scenario: &Scenario, base_url: &str) -> Result<Vec<(String, String)>, String> {
    let services = scenario
        .services
        .iter()
        .map(|s| (s.name.to_string(), format!("{base_url}/{}", s.name)));
    let agents = scenario
        .agents
        .iter()
        .map(|a| (a.name.to_string(), format!("{base_url}/agents/{}", a.name)));
    // Prefixed: an MCP server often shares its name with the service its tools call.
    let mcp = scenario.mcp.iter().map(|m| {
        (
            format!("mcp_{}", m.name),
            format!("{base_url}/mcp/{}", m.name),
        )
    });
    let mut named: std::collections::BTreeMap<String, (String, String)> = Default::default();
    for (name, url) in services.chain(agents).chain(mcp) {
        let var = env_name(&name);
        if let Some((other, _)) = named.insert(var.clone(), (name.clone(), url)) {
            return Err(format!(
                "\"{other}\" and \"{name}\" would both be {var}: rename one of them"
            ));
        }
    }
    Ok(named
        .into_iter()
        .map(|(var, (_, url))| (var, url))
        .collect())
}

async fn run_cmd(args: RunArgs) -> Exit {
    let scenario = scenario_of(&args.scenario)?;
    run_env(&scenario, "").map_err(|e| error(2, e))?;
    let listener = crate::server::bind("127.0.0.1:0")
        .await
        .map_err(|e| error(1, format_args!("cannot listen on 127.0.0.1:0: {e}")))?;
    let (app, stop) =
        crate::server::Server::run(listener, scenario, args.seed, Duration::from_secs(1))
            .map_err(|e| error(1, e))?;
    let world = app.host.world();
    let mut cmd = tokio::process::Command::new(&args.command[0]);
    cmd.args(&args.command[1..])
        .env("DOUBLEAGENT_URL", &app.base_url);
    if args.json {
        // The verdict alone on stdout, so `run --json -- CMD | jq` reads one JSON document.
        cmd.stdout(std::process::Stdio::from(std::io::stderr()));
    }
    cmd.envs(run_env(&world.scenario, &app.base_url).unwrap_or_default());
    eprintln!(
        "doubleagent: serving \"{}\" at {} (DOUBLEAGENT_URL) for: {}",
        world.scenario.name,
        app.base_url,
        args.command.join(" ")
    );
    let status = match cmd.status().await {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: cannot run {}: {e}", args.command[0]);
            let _ = stop.send(true);
            return Err(ExitCode::from(2));
        }
    };
    // Read claims only now: the command under test may have written them.
    let claims = read_claims(args.claims.as_ref());
    let entries = app.host.world().entries(&Filter::default());
    let _ = stop.send(true);
    let claims = claims.map_err(|e| error(2, e))?;
    let report = verify(&entries, claims.as_ref());
    let code = verdict(
        &report,
        || report.human(&entries),
        args.json,
        args.allow_incomplete,
    );
    if !status.success() {
        eprintln!("doubleagent: the command failed ({status})");
        let failed = status.code().and_then(|c| u8::try_from(c).ok());
        return Ok(ExitCode::from(failed.filter(|c| *c != 0).unwrap_or(1)));
    }
    Ok(code)
}

/// A scenario file, validated; its errors printed (exit 2).
fn scenario_of(path: &std::path::Path) -> Result<Scenario, ExitCode> {
    Scenario::from_file(path).map_err(|e| {
        eprintln!("{e}");
        ExitCode::from(2)
    })
}

/// A listener at `addr` could not be bound: exit 2 for an address that is not one, else 1.
fn listen_failed(addr: impl std::fmt::Display, e: &std::io::Error) -> ExitCode {
    let code = if e.kind() == std::io::ErrorKind::InvalidInput {
        2
    } else {
        1
    };
    error(code, format_args!("cannot listen on {addr}: {e}"))
}

/// Print `error: MESSAGE` on stderr; exit `code`.
fn error(code: u8, message: impl std::fmt::Display) -> ExitCode {
    eprintln!("error: {message}");
    ExitCode::from(code)
}

fn check(files: &[PathBuf]) -> ExitCode {
    let mut code = ExitCode::SUCCESS;
    for f in files {
        match Scenario::from_file(f) {
            Ok(s) => say(&format!(
                "{}: ok (scenario \"{}\", {} service(s))\n",
                f.display(),
                s.name,
                s.services.len()
            )),
            Err(e) => {
                eprintln!("{e}");
                code = ExitCode::from(2);
            }
        }
    }
    code
}

async fn serve_cmd(args: ServeArgs) -> Exit {
    let quickstart = args.scenario.is_none();
    let scenario = match &args.scenario {
        Some(path) => scenario_of(path)?,
        None => Scenario::quickstart(),
    };
    let listener = crate::server::bind(&args.listen)
        .await
        .map_err(|e| listen_failed(&args.listen, &e))?;
    let addr = listener.local_addr().map_err(|e| error(1, e))?;
    admin_guard(&args, addr)?;
    let host = open_host(&args, scenario)?;
    let grpc = bind_grpc(&args, addr, host.world().scenario.serves_grpc()).await?;
    let app = Arc::new(App {
        grpc: grpc
            .as_ref()
            .and_then(|l| l.local_addr().ok())
            .map(|a| a.to_string()),
        drain: args.drain_timeout,
        header_read_timeout: args.header_read_timeout,
        max_connections: args.max_connections,
        admin_token: args.admin_token.clone(),
        ..App::new(host, format!("http://{addr}"))
    });
    let signals = shutdown_signal();
    let ready = app.ready(&app.host.world()).line();
    if let Some(path) = &args.ready_file {
        std::fs::write(path, format!("{ready}\n")).map_err(|e| {
            let path = path.display();
            error(1, format_args!("cannot write the ready file {path}: {e}"))
        })?;
    }
    {
        // Whoever started the server may not read its stdout (the ready line is also in the
        // log): serving goes on either way.
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{ready}");
        let _ = out.flush();
    }
    if quickstart {
        eprintln!("{}", quickstart_hints(&app.base_url));
    }
    tracing::info!(url = %app.base_url, "serving");
    // One signal stops both listeners.
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let grpc = grpc.map(|l| {
        let mut stopped = stopped.clone();
        let wait = async move {
            let _ = stopped.wait_for(|s| *s).await;
        };
        tokio::spawn(crate::server::grpc::serve(l, app.clone(), wait))
    });
    serve(listener, app.clone(), async move {
        signals.await;
        let _ = stop.send(true);
    })
    .await;
    if let Some(grpc) = grpc {
        // Streams a client keeps open (a subscription) end with the drain, as over HTTP.
        if tokio::time::timeout(app.drain, grpc).await.is_err() {
            tracing::info!("gRPC calls still open after the drain were cut");
        }
    }
    app.host.flush_journal();
    tracing::info!("stopped");
    Ok(ExitCode::SUCCESS)
}

/// The admin API is never served open by accident: an empty token, or none off loopback
/// without `--insecure-admin`, refuses to start (exit 2).
fn admin_guard(args: &ServeArgs, addr: std::net::SocketAddr) -> Result<(), ExitCode> {
    if args
        .admin_token
        .as_deref()
        .is_some_and(|t| t.trim().is_empty())
    {
        // An empty Kubernetes secret must not quietly turn auth off.
        eprintln!(
            "error: the admin token is empty (--admin-token or DOUBLEAGENT_ADMIN_TOKEN): \
             refusing to start with auth silently off.\n\
             fix: give a non-empty token, or unset it (and pass --insecure-admin off loopback)"
        );
        return Err(ExitCode::from(2));
    }
    if !addr.ip().is_loopback() && args.admin_token.is_none() && !args.insecure_admin {
        eprintln!(
            "error: refusing to serve the admin API on non-loopback address {addr} without a token: \
             anyone who can reach it could reset the world or read the ledger.\n\
             fix: pass --admin-token TOKEN (or set DOUBLEAGENT_ADMIN_TOKEN), or --insecure-admin if the network is private"
        );
        return Err(ExitCode::from(2));
    }
    Ok(())
}

/// The host of the scenario's worlds: fresh, or resumed from `--journal` (each world's
/// ledger replayed, then its agents' state rebuilt from it).
fn open_host(args: &ServeArgs, scenario: Scenario) -> Result<Host, ExitCode> {
    let limits = Limits {
        seed: args.seed,
        max_sessions: args.max_sessions,
        session_ttl: args.session_ttl,
        max_entries: (args.max_entries > 0).then_some(args.max_entries),
        max_keys: args.max_keys,
    };
    let Some(path) = &args.journal else {
        return Ok(Host::new(scenario, limits, None, Vec::new()));
    };
    let (journal::Loaded { lines, lost }, j) = journal::load(path, args.journal_recover)
        .and_then(|loaded| Ok((loaded, Journal::open(path, args.fsync)?)))
        .map_err(|e| error(1, e))?;
    if let Some(lost) = lost {
        tracing::warn!("{lost}");
        eprintln!("doubleagent: {lost}");
    }
    if !lines.is_empty() {
        tracing::info!(path = %path.display(), lines = lines.len(), "resuming from the journal");
    }
    let host = Host::new(scenario, limits, Some(j), lines);
    // The journal rebuilt each world's ledger; the agents rebuild their own state from it
    // (World does not know about agents), before anything is served.
    for world in host.worlds() {
        crate::agent::restore(&world);
        crate::mcp::restore(&world);
    }
    Ok(host)
}

/// The gRPC listener: at `--grpc-listen`, else on the HTTP listener's host at a free port when
/// an A2A agent serves gRPC; none otherwise.
async fn bind_grpc(
    args: &ServeArgs,
    http: std::net::SocketAddr,
    wanted: bool,
) -> Result<Option<tokio::net::TcpListener>, ExitCode> {
    let addr = match &args.grpc_listen {
        Some(a) => a.clone(),
        None if wanted => format!("{}:0", http.ip()),
        None => return Ok(None),
    };
    match crate::server::bind(&addr).await {
        Ok(l) => Ok(Some(l)),
        Err(e) => Err(listen_failed(format_args!("{addr} for gRPC"), &e)),
    }
}

fn quickstart_hints(url: &str) -> String {
    format!(
        "doubleagent is serving the built-in quickstart (a payments API whose first transfer is applied but its response lost).\n\
         Try:\n  \
         curl -i -X POST {url}/payments/v1/transfers -H 'Idempotency-Key: k-1' -H 'content-type: application/json' -d '{{\"to\":\"acct-9\",\"amount\":100}}'   # connection closes, no answer\n  \
         curl -s {url}/_admin/ledger                              # ...yet the ledger says applied: true\n  \
         curl -s -X POST {url}/payments/v1/transfers -H 'Idempotency-Key: k-1' -H 'content-type: application/json' -d '{{\"to\":\"acct-9\",\"amount\":100}}'   # replayed, Idempotent-Replayed: true\n  \
         curl -s {url}/payments/v1/transfers/k-1                  # authoritative lookup by key\n\
         Stop with Ctrl-C. Write your own scenario: see docs/scenarios.md."
    )
}

/// Resolves on SIGINT or SIGTERM. The handlers are installed when this is *called*, not when
/// the future is first polled, so a signal sent right after the ready line is never lost to the
/// default action.
pub fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let int = signal(SignalKind::interrupt()).ok();
        let term = signal(SignalKind::terminate()).ok();
        async move {
            let wait = |s: Option<tokio::signal::unix::Signal>| async move {
                match s {
                    Some(mut s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                _ = wait(int) => {}
                _ = wait(term) => {}
            }
        }
    }
    #[cfg(not(unix))]
    async {
        let _ = tokio::signal::ctrl_c().await;
    }
}
