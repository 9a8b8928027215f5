//! Helpers for `bench/run.sh` (see BENCHMARKS.md). Each subcommand prints one result line that
//! starts with an upper-case tag and carries JSON, so the script can pick it out of the output.
//!
//! ```text
//! benchkit startup --runs N --a 'CMD ARGS' --b 'CMD ARGS'   STARTUP {"a_ms":[..],"b_ms":[..]}
//!     process start → first stdout line (the ready line), A and B alternately
//! benchkit load URL --conns C --secs S [--method M] [--body B] [--key-header H]
//!     [--key-mode unique|same|none] [--headers 'A: b|C: d'] [--run TOKEN]
//!                                                            WRK {"requests":..,"rps":..,"p99_us":..}
//!     a small keep-alive HTTP/1.1 load loop, used when wrk is not installed (same output as
//!     bench/wrk.lua, same request shapes)
//! benchkit clock --n N                                       CLOCK {"n":..,"delivered_ms":..}
//!     in process: N delayed responses pending on a manual clock, one advance, time until all
//!     are delivered (the pipeline and clock the server uses, without sockets)
//! benchkit clock-http URL --n N                              CLOCKHTTP {"n":..,"delivered_ms":..}
//!     the same over N real connections to a running `serve bench/clock.toml`
//! benchkit genledger --n N --out FILE                        GENLEDGER {"entries":..}
//!     a realistic JSONL ledger made by the real pipeline (keys, replays, retries with new keys,
//!     lookups, lost responses, revisions, claims), for timing `doubleagent verify --ledger`
//! ```
//!
//! benchkit admit --n N                                       ADMIT {"unique_ns":..,"same_ns":..}
//!     the action pipeline alone, in process on one thread: N unique-key transfers, then N
//!     replays of one key (bench/bench.toml): nanoseconds and allocations per `service::admit`
//!     (best of 3)
//! benchkit admit-shared --n N --work W --runs R [--only same]
//!                                                            ADMITSHARED {"shared_ns":..,"apart_ns":..}
//!     the same on two threads, each with W steps of work of its own between admissions, on one
//!     world they share and on a world each: CPU time per admission, and the difference, what
//!     sharing the world costs (its lock and the cache lines of its state)
//!
//! benchkit pertest DA_URL --base BASE_URL [--n N]
//!                                  PERTEST {"n":..,"test_us":..,"bare_us":..,"overhead_us":..}
//!     N tests in a row as the packages run them (a fresh session, one action, the verdict, the
//!     session dropped), against N bare requests to the baseline (see `pertest.rs`)
//!
//! benchkit probe URL [--method M] [--body B] [--headers 'A: b|C: d'] [--out FILE]
//!                                                            PROBE {"status":..,"content_type":..,"bytes":..}
//!     one request; the body goes to FILE (bench/run.sh checks agents with it, captures their
//!     answers for the baseline, reads /_admin/health and resets between soak cycles)
//!
//! Every network operation targets the loopback URL it is given and is bounded in time.

mod pertest;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write as _};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use doubleagent::scenario::Scenario;
use doubleagent::service::{self, Request};
use doubleagent::world::World;
use hyper::HeaderMap;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader as TokioBufReader};
use tokio::net::TcpStream;

/// Counts allocations, so `benchkit admit` can say how many a request costs (one increment per
/// allocation, on the allocating thread's own counter: threads that allocate at once share no
/// counter, which `admit-shared` relies on). Allocates with the binary's allocator.
struct Counting;

#[cfg(not(feature = "jemalloc"))]
use std::alloc::System as Inner;
#[cfg(feature = "jemalloc")]
use tikv_jemallocator::Jemalloc as Inner;

thread_local! {
    static ALLOCATIONS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Allocations made so far on this thread.
fn allocations() -> u64 {
    ALLOCATIONS.with(|a| a.get())
}

fn count_allocation() {
    // `try_with`: a thread being torn down may still free and allocate.
    let _ = ALLOCATIONS.try_with(|a| a.set(a.get() + 1));
}

unsafe impl std::alloc::GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        count_allocation();
        unsafe { Inner.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        unsafe { Inner.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, size: usize) -> *mut u8 {
        count_allocation();
        unsafe { Inner.realloc(ptr, layout, size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(cmd) = args.first() else {
        usage();
    };
    let opts = Opts::parse(&args[1..]);
    match cmd.as_str() {
        "startup" => startup(&opts),
        "load" => runtime().block_on(load(&opts)),
        "clock" => runtime().block_on(clock_in_process(&opts)),
        "clock-http" => runtime().block_on(clock_http(&opts)),
        "genledger" => genledger(&opts),
        "probe" => runtime().block_on(probe(&opts)),
        "pertest" => runtime().block_on(pertest::pertest(&opts)),
        "verify-parts" => verify_parts(&opts),
        "admit" => admit(&opts),
        "admit-shared" => admit_shared(&opts),
        _ => usage(),
    }
}

fn usage() -> ! {
    eprintln!("usage: benchkit startup|load|clock|clock-http|genledger ... (see the source)");
    std::process::exit(2);
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Runtime::new().expect("runtime")
}

/// `--name value` options plus positional arguments.
struct Opts {
    named: HashMap<String, String>,
    positional: Vec<String>,
}

impl Opts {
    fn parse(args: &[String]) -> Opts {
        let mut named = HashMap::new();
        let mut positional = Vec::new();
        let mut it = args.iter();
        while let Some(a) = it.next() {
            if let Some(name) = a.strip_prefix("--") {
                let v = it.next().cloned().unwrap_or_default();
                named.insert(name.to_string(), v);
            } else {
                positional.push(a.clone());
            }
        }
        Opts { named, positional }
    }
    fn get(&self, name: &str) -> Option<&str> {
        self.named.get(name).map(String::as_str)
    }
    fn num(&self, name: &str, default: u64) -> u64 {
        self.get(name)
            .map(|v| {
                v.parse()
                    .unwrap_or_else(|_| panic!("--{name}: not a number"))
            })
            .unwrap_or(default)
    }
    fn url(&self) -> &str {
        self.positional
            .first()
            .map(String::as_str)
            .unwrap_or_else(|| usage())
    }
}

// ---------------------------------------------------------------------------------------------
// startup

fn startup(opts: &Opts) {
    let runs = opts.num("runs", 10);
    let a: Vec<&str> = opts
        .get("a")
        .unwrap_or_else(|| usage())
        .split_whitespace()
        .collect();
    let b: Vec<&str> = opts
        .get("b")
        .unwrap_or_else(|| usage())
        .split_whitespace()
        .collect();
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    for i in 0..runs {
        // Alternate which goes first, so neither always runs on a warmer cache.
        if i % 2 == 0 {
            ta.push(time_to_ready(&a));
            tb.push(time_to_ready(&b));
        } else {
            tb.push(time_to_ready(&b));
            ta.push(time_to_ready(&a));
        }
    }
    println!(
        "STARTUP {{\"a_ms\":{},\"b_ms\":{}}}",
        json_list(&ta),
        json_list(&tb)
    );
}

fn json_list(v: &[f64]) -> String {
    let parts: Vec<String> = v.iter().map(|x| format!("{x:.3}")).collect();
    format!("[{}]", parts.join(","))
}

/// Milliseconds from spawning `cmd` to reading its first stdout line; the process is then killed.
fn time_to_ready(cmd: &[&str]) -> f64 {
    let t0 = Instant::now();
    let mut child = Command::new(cmd[0])
        .args(&cmd[1..])
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {}: {e}", cmd[0]));
    let mut line = String::new();
    let _ = BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line);
    let ms = t0.elapsed().as_secs_f64() * 1000.0;
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        line.contains("\"ready\""),
        "{} printed no ready line",
        cmd.join(" ")
    );
    ms
}

// ---------------------------------------------------------------------------------------------
// load: a fallback for wrk

struct Shape {
    host: String,
    path: String,
    method: String,
    body: String,
    key_header: String,
    key_mode: String,
    headers: Vec<(String, String)>,
    run: String,
}

impl Shape {
    fn request(&self, key: &str) -> Vec<u8> {
        let body = self.body.replace("$K", key);
        let mut r = format!(
            "{} {} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n",
            self.method,
            self.path,
            self.host,
            body.len()
        );
        for (k, v) in &self.headers {
            r.push_str(&format!("{k}: {v}\r\n"));
        }
        if !self.key_header.is_empty() && self.key_mode != "none" {
            r.push_str(&format!("{}: {key}\r\n", self.key_header));
        }
        r.push_str("\r\n");
        r.push_str(&body);
        r.into_bytes()
    }
}

fn split_url(url: &str) -> (String, String) {
    let rest = url.strip_prefix("http://").unwrap_or_else(|| usage());
    match rest.find('/') {
        Some(i) => (rest[..i].to_string(), rest[i..].to_string()),
        None => (rest.to_string(), "/".to_string()),
    }
}

async fn load(opts: &Opts) {
    let (host, path) = split_url(opts.url());
    let shape = Arc::new(Shape {
        host,
        path,
        method: opts.get("method").unwrap_or("POST").to_string(),
        body: opts.get("body").unwrap_or("").to_string(),
        key_header: opts.get("key-header").unwrap_or("").to_string(),
        key_mode: opts.get("key-mode").unwrap_or("none").to_string(),
        headers: opts
            .get("headers")
            .unwrap_or("")
            .split('|')
            .filter_map(|h| h.split_once(':'))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect(),
        run: opts.get("run").unwrap_or("r").to_string(),
    });
    let conns = opts.num("conns", 16);
    let secs = opts.num("secs", 2);
    let started = Instant::now();
    let deadline = started + Duration::from_millis(secs * 1000);
    let errors = Arc::new(AtomicU64::new(0));
    let non2xx = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for c in 0..conns {
        let (shape, errors, non2xx) = (shape.clone(), errors.clone(), non2xx.clone());
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            let mut n = 0u64;
            let mut conn: Option<TokioBufReader<TcpStream>> = None;
            while Instant::now() < deadline {
                n += 1;
                let key = if shape.key_mode == "same" {
                    "same-key".to_string()
                } else {
                    format!("{}-{c}-{n}", shape.run)
                };
                let req = shape.request(&key);
                let t = Instant::now();
                if conn.is_none() {
                    match tokio::time::timeout(
                        Duration::from_secs(2),
                        TcpStream::connect(&shape.host),
                    )
                    .await
                    {
                        Ok(Ok(s)) => {
                            let _ = s.set_nodelay(true);
                            conn = Some(TokioBufReader::new(s));
                        }
                        _ => {
                            errors.fetch_add(1, Ordering::Relaxed);
                            tokio::time::sleep(Duration::from_millis(10)).await;
                            continue;
                        }
                    }
                }
                let Some(s) = conn.as_mut() else { continue };
                let res = tokio::time::timeout(Duration::from_secs(5), async {
                    s.get_mut().write_all(&req).await?;
                    read_response(s).await
                })
                .await;
                match res {
                    Ok(Ok((status, close))) => {
                        lat.push(t.elapsed().as_micros() as u64);
                        if status >= 400 {
                            non2xx.fetch_add(1, Ordering::Relaxed);
                        }
                        if close {
                            conn = None;
                        }
                    }
                    _ => {
                        errors.fetch_add(1, Ordering::Relaxed);
                        conn = None;
                    }
                }
            }
            lat
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap_or_default());
    }
    let secs = started.elapsed().as_secs_f64();
    all.sort_unstable();
    let pct = |p: f64| {
        if all.is_empty() {
            0
        } else {
            all[((all.len() as f64 * p) as usize).min(all.len() - 1)]
        }
    };
    println!(
        "WRK {{\"requests\":{},\"seconds\":{secs:.3},\"rps\":{:.1},\"p50_us\":{},\"p99_us\":{},\"errors\":{},\"non2xx\":{}}}",
        all.len(),
        all.len() as f64 / secs,
        pct(0.50),
        pct(0.99),
        errors.load(Ordering::Relaxed),
        non2xx.load(Ordering::Relaxed)
    );
}

/// Read one HTTP/1.1 response (content-length or chunked body). Returns the status and whether
/// the server will close the connection.
async fn read_response(s: &mut TokioBufReader<TcpStream>) -> std::io::Result<(u16, bool)> {
    let eof = || std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "closed");
    let mut line = String::new();
    if s.read_line(&mut line).await? == 0 {
        return Err(eof());
    }
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|x| x.parse().ok())
        .ok_or_else(eof)?;
    let (mut len, mut chunked, mut close) = (None, false, false);
    loop {
        line.clear();
        if s.read_line(&mut line).await? == 0 {
            return Err(eof());
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        let lower = l.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            len = v.trim().parse::<usize>().ok();
        } else if lower.starts_with("transfer-encoding:") && lower.contains("chunked") {
            chunked = true;
        } else if lower.starts_with("connection:") && lower.contains("close") {
            close = true;
        }
    }
    if chunked {
        loop {
            line.clear();
            if s.read_line(&mut line).await? == 0 {
                return Err(eof());
            }
            let size = usize::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
                .map_err(|_| eof())?;
            let mut buf = vec![0u8; size + 2];
            s.read_exact(&mut buf).await?;
            if size == 0 {
                break;
            }
        }
    } else if let Some(n) = len {
        let mut buf = vec![0u8; n];
        s.read_exact(&mut buf).await?;
    } else {
        let mut rest = Vec::new();
        s.read_to_end(&mut rest).await?;
        close = true;
    }
    Ok((status, close))
}

// ---------------------------------------------------------------------------------------------
// clock

fn clock_scenario() -> Scenario {
    let toml = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/bench/clock.toml"))
        .expect("bench/clock.toml");
    Scenario::from_toml(&toml, "bench/clock.toml").expect("valid bench scenario")
}

fn transfer(service: &str, i: u64) -> Request<'_> {
    Request {
        service: service.into(),
        method: "POST".into(),
        path: "/v1/transfers".into(),
        body: format!("{{\"to\":\"acct-{i}\",\"amount\":100}}").into(),
        ..Request::default()
    }
}

/// The benchmark scenario, as the server loads it.
fn bench_scenario() -> Arc<Scenario> {
    let toml = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/bench/bench.toml"))
        .expect("bench/bench.toml");
    Arc::new(Scenario::from_toml(&toml, "bench/bench.toml").expect("valid"))
}

/// N transfers to `service` as the HTTP side hands them to `admit`: each with a key of its own
/// (`k-TAG-i`), or all with the same one.
fn transfers(service: &'static str, same: bool, n: u64, tag: usize) -> Vec<Request<'static>> {
    (0..n)
        .map(|i| {
            let mut headers = HeaderMap::new();
            let key = if same {
                "same-key".to_string()
            } else {
                format!("k-{tag}-{i}")
            };
            headers.insert("idempotency-key", key.parse().expect("header"));
            headers.insert("content-type", "application/json".parse().expect("header"));
            Request {
                service: service.into(),
                method: "POST".into(),
                path: "/v1/transfers".into(),
                headers,
                body: hyper::body::Bytes::from_static(b"{\"to\":\"acct-9\",\"amount\":100}"),
                ..Request::default()
            }
        })
        .collect()
}

/// The cost of `service::admit` alone: what recording costs a request, without HTTP.
fn admit(opts: &Opts) {
    let n = opts.num("n", 200_000);
    let scenario = bench_scenario();
    let requests = |service: &'static str, same: bool| transfers(service, same, n, 0);
    let best = |service: &'static str, same: bool| {
        (0..opts.num("runs", 3))
            .map(|_| {
                let world = World::new(scenario.clone(), None);
                let reqs = requests(service, same);
                let a0 = allocations();
                let t0 = Instant::now();
                for r in reqs {
                    // The outcome is dropped inside the loop, as the server drops its response.
                    std::hint::black_box(service::admit(&world, r));
                }
                let ns = t0.elapsed().as_nanos() as f64 / n as f64;
                let allocs = (allocations() - a0) as f64 / n as f64;
                (ns, allocs)
            })
            .fold((f64::INFINITY, 0.0), |a, b| if b.0 < a.0 { b } else { a })
    };
    let rt = runtime();
    let _guard = rt.enter();
    let only = opts.get("only").unwrap_or("");
    let unique = if only == "same" {
        (0.0, 0.0)
    } else {
        best("pay", false)
    };
    let same = if only == "unique" {
        (0.0, 0.0)
    } else {
        best("rep", true)
    };
    println!(
        "ADMIT {{\"n\":{n},\"unique_ns\":{:.0},\"unique_allocs\":{:.1},\"same_ns\":{:.0},\"same_allocs\":{:.1}}}",
        unique.0, unique.1, same.0, same.1
    );
}

/// What sharing one world costs the two threads of a 2-core server. Two threads each admit N
/// transfers, with `--work` steps of arithmetic of their own before each (standing in for the
/// HTTP work a server's worker does between admissions: 20 000 steps are ~4 µs here), once on
/// a world they share and once on a world each, alternately, `--runs` times. Each thread's CPU
/// time per admission (its work included) is read from Linux's schedstat; the difference
/// between the two halves of a run (the median over the runs) is what the shared world costs:
/// its lock, and the cache lines of its state that move between the cores.
fn admit_shared(opts: &Opts) {
    let n = opts.num("n", 100_000).max(1);
    let work = opts.num("work", 20_000);
    let runs = opts.num("runs", 5).max(1);
    let same = opts.get("only") == Some("same");
    let service = if same { "rep" } else { "pay" };
    let scenario = bench_scenario();
    let rt = runtime();
    let (mut shared, mut apart) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        for together in [true, false] {
            let one = together.then(|| Arc::new(World::new(scenario.clone(), None)));
            let barrier = Arc::new(std::sync::Barrier::new(2));
            let threads: Vec<_> = (0..2)
                .map(|tag| {
                    let world = one
                        .clone()
                        .unwrap_or_else(|| Arc::new(World::new(scenario.clone(), None)));
                    let requests = transfers(service, same, n, tag);
                    let (barrier, handle) = (barrier.clone(), rt.handle().clone());
                    std::thread::spawn(move || {
                        let _rt = handle.enter();
                        barrier.wait();
                        let t0 = thread_cpu_ns();
                        let mut acc = 0u64;
                        for r in requests {
                            for j in 0..work {
                                acc = acc.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(j);
                            }
                            std::hint::black_box(acc);
                            std::hint::black_box(service::admit(&world, r));
                        }
                        thread_cpu_ns().saturating_sub(t0) as f64 / n as f64
                    })
                })
                .collect();
            let per = threads
                .into_iter()
                .map(|t| t.join().expect("admitting thread"))
                .sum::<f64>()
                / 2.0;
            if together {
                shared.push(per);
            } else {
                apart.push(per);
            }
        }
    }
    // The penalty of each run (its two halves measured back to back), then their median: the
    // machine's speed drifts less within a run than across runs.
    let mut penalty: Vec<f64> = shared.iter().zip(&apart).map(|(s, a)| s - a).collect();
    let (s, a, p) = (
        median(&mut shared),
        median(&mut apart),
        median(&mut penalty),
    );
    println!(
        "ADMITSHARED {{\"n\":{n},\"work\":{work},\"runs\":{runs},\"shared_ns\":{s:.0},\"apart_ns\":{a:.0},\"penalty_ns\":{p:.0}}}"
    );
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// CPU time this thread has run, in nanoseconds (Linux's schedstat; 0 where there is none).
fn thread_cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// N delayed responses pending in process, one advance, all delivered.
async fn clock_in_process(opts: &Opts) {
    let n = opts.num("n", 100_000);
    let world = Arc::new(World::new(Arc::new(clock_scenario()), None));
    let delivered = Arc::new(AtomicU64::new(0));
    let last = Arc::new(std::sync::Mutex::new(None::<Instant>));
    let mut tasks = Vec::with_capacity(n as usize);
    for i in 0..n {
        let (world, delivered, last) = (world.clone(), delivered.clone(), last.clone());
        tasks.push(tokio::spawn(async move {
            let (_, resp) = service::call(&world, transfer("slow", i)).await;
            if resp.is_some_and(|r| r.status == 201) {
                delivered.fetch_add(1, Ordering::Relaxed);
                let now = Instant::now();
                let mut l = last.lock().unwrap();
                if l.is_none_or(|t| t < now) {
                    *l = Some(now);
                }
            }
        }));
    }
    let wait_start = Instant::now();
    while world.clock.pending_sleepers() < n as usize {
        assert!(
            wait_start.elapsed() < Duration::from_secs(60),
            "only {} of {n} pending after 60 s",
            world.clock.pending_sleepers()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let pending_ms = wait_start.elapsed().as_secs_f64() * 1000.0;
    let t0 = Instant::now();
    world
        .clock
        .advance(Duration::from_millis(100))
        .await
        .expect("manual clock");
    let advance_ms = t0.elapsed().as_secs_f64() * 1000.0;
    let all = tokio::time::timeout(Duration::from_secs(60), async {
        for t in tasks {
            let _ = t.await;
        }
    })
    .await;
    let done = delivered.load(Ordering::Relaxed);
    let delivered_ms = last
        .lock()
        .unwrap()
        .map(|t| t.saturating_duration_since(t0).as_secs_f64() * 1000.0)
        .unwrap_or(f64::NAN);
    println!(
        "CLOCK {{\"n\":{n},\"delivered\":{done},\"complete\":{},\"pending_ms\":{pending_ms:.1},\"advance_ms\":{advance_ms:.1},\"delivered_ms\":{delivered_ms:.1}}}",
        all.is_ok() && done == n
    );
}

/// N delayed responses pending on N connections to a running server, one advance over HTTP.
async fn clock_http(opts: &Opts) {
    let base = opts.url().trim_end_matches('/').to_string();
    let (host, _) = split_url(&base);
    let n = opts.num("n", 10_000);
    let sent = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let connect_slots = Arc::new(tokio::sync::Semaphore::new(128));
    let mut tasks = Vec::with_capacity(n as usize);
    let shape = Arc::new(Shape {
        host: host.clone(),
        path: "/slow/v1/transfers".into(),
        method: "POST".into(),
        body: "{\"to\":\"acct-9\",\"amount\":$K}".into(),
        key_header: String::new(),
        key_mode: "none".into(),
        headers: Vec::new(),
        run: String::new(),
    });
    for i in 0..n {
        let (shape, sent, failed, slots) = (
            shape.clone(),
            sent.clone(),
            failed.clone(),
            connect_slots.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let stream = {
                let _slot = slots.acquire().await;
                tokio::time::timeout(Duration::from_secs(10), TcpStream::connect(&shape.host)).await
            };
            let Ok(Ok(stream)) = stream else {
                failed.fetch_add(1, Ordering::Relaxed);
                return None;
            };
            let _ = stream.set_nodelay(true);
            let mut s = TokioBufReader::new(stream);
            if s.get_mut()
                .write_all(&shape.request(&i.to_string()))
                .await
                .is_err()
            {
                failed.fetch_add(1, Ordering::Relaxed);
                return None;
            }
            sent.fetch_add(1, Ordering::Relaxed);
            match tokio::time::timeout(Duration::from_secs(60), read_response(&mut s)).await {
                Ok(Ok((201, _))) => Some(Instant::now()),
                _ => {
                    failed.fetch_add(1, Ordering::Relaxed);
                    None
                }
            }
        }));
    }
    // Wait until the server has admitted every request (they are all pending on its clock).
    let t_wait = Instant::now();
    loop {
        let entries = health_entries(&base).await;
        if entries >= n {
            break;
        }
        if t_wait.elapsed() > Duration::from_secs(60) || failed.load(Ordering::Relaxed) > 0 {
            println!(
                "CLOCKHTTP {{\"n\":{n},\"complete\":false,\"error\":\"only {entries} admitted, {} failed\"}}",
                failed.load(Ordering::Relaxed)
            );
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let pending_ms = t_wait.elapsed().as_secs_f64() * 1000.0;
    let t0 = Instant::now();
    let adv = doubleagent::client::send(
        "POST",
        &format!("{base}/_admin/clock/advance"),
        &[("content-type", "application/json")],
        br#"{"by":"100ms"}"#.to_vec(),
        Duration::from_secs(60),
    )
    .await;
    let advance_ms = t0.elapsed().as_secs_f64() * 1000.0;
    let mut last = None::<Instant>;
    let mut delivered = 0u64;
    for t in tasks {
        if let Ok(Some(at)) = t.await {
            delivered += 1;
            last = Some(last.map_or(at, |l: Instant| l.max(at)));
        }
    }
    let delivered_ms = last
        .map(|t| t.saturating_duration_since(t0).as_secs_f64() * 1000.0)
        .unwrap_or(f64::NAN);
    println!(
        "CLOCKHTTP {{\"n\":{n},\"delivered\":{delivered},\"complete\":{},\"advance_status\":{},\"pending_ms\":{pending_ms:.1},\"advance_ms\":{advance_ms:.1},\"delivered_ms\":{delivered_ms:.1}}}",
        delivered == n,
        adv.map(|r| r.status).unwrap_or(0)
    );
}

async fn health_entries(base: &str) -> u64 {
    let r = doubleagent::client::send(
        "GET",
        &format!("{base}/_admin/health"),
        &[],
        Vec::new(),
        Duration::from_secs(10),
    )
    .await;
    r.ok()
        .and_then(|r| serde_json::from_slice::<serde_json::Value>(&r.body).ok())
        .and_then(|v| v["entries"].as_u64())
        .unwrap_or(0)
}

// ---------------------------------------------------------------------------------------------
// genledger

const LEDGER_SCENARIO: &str = r#"
name = "bench-ledger"
seed = 7
clock = "manual"

[services.payments]
idempotency = { preset = "stripe", retention = "24h" }

[[services.payments.routes]]
name = "create-transfer"
method = "POST"
path = "/v1/transfers"
kind = "action"
intent = ["/to", "/amount"]
fates = { random = { respond = 90, "drop-after-apply" = 4, "error-after-apply:500" = 3, "error-before-apply:503" = 3 } }
respond = { status = 201, json = { id = "{{action.id}}", to = "{{body./to}}", amount = "{{body./amount}}", status = "succeeded" } }

[[services.payments.routes]]
name = "get-transfer"
method = "GET"
path = "/v1/transfers/{id}"
kind = "lookup"
"#;

/// A ledger of `n` entries from the real pipeline: mostly fresh transfers with their own keys and
/// work ids; a retry of every unanswered one (mostly the same key, sometimes a lookup first,
/// sometimes — a bug — a new key); replays; revisions moving on; claims at the end.
fn genledger(opts: &Opts) {
    let n = opts.num("n", 1_000_000);
    let out = opts.get("out").unwrap_or_else(|| usage()).to_string();
    let scenario = Scenario::from_toml(LEDGER_SCENARIO, "genledger").expect("scenario");
    let rt = runtime();
    let _guard = rt.enter();
    let world = World::new(Arc::new(scenario), None);
    let mut rng: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut revision = 1u64;
    let mut i = 0u64;
    let mut claims = Vec::new();
    let send = |key: Option<&str>, work: &str, rev: u64, to: u64, amount: u64| {
        let mut headers = HeaderMap::new();
        if let Some(k) = key {
            headers.insert("idempotency-key", k.parse().unwrap());
        }
        headers.insert("x-work-id", work.parse().unwrap());
        headers.insert("x-revision", rev.to_string().parse().unwrap());
        let out = service::admit(
            &world,
            Request {
                service: "payments".into(),
                method: "POST".into(),
                path: "/v1/transfers".into(),
                headers,
                body: format!("{{\"to\":\"acct-{to}\",\"amount\":{amount}}}").into(),
                ..Request::default()
            },
        );
        (out.plan, out.response.status)
    };
    while world.lock().ledger.len() < n as usize {
        i += 1;
        if i % 50_000 == 0 {
            revision += 1;
        }
        let work = format!("w-{i}");
        let key = format!("k-{i}");
        // A distinct payee per transfer: equal intents come only from retries.
        let (to, amount) = (i, 1 + next() % 1000);
        let (plan, status) = send(Some(&key), &work, revision, to, amount);
        let r = next() % 100;
        let unknown = plan != service::Plan::Now || status >= 500;
        if unknown {
            if r < 70 {
                send(Some(&key), &work, revision, to, amount); // same key: replay or re-execute
            } else if r < 90 {
                let look = Request {
                    service: "payments".into(),
                    method: "GET".into(),
                    path: format!("/v1/transfers/{key}").into(),
                    ..Request::default()
                };
                service::admit(&world, look);
            } else {
                let k2 = format!("k-{i}-retry");
                send(Some(&k2), &work, revision, to, amount); // a blind retry (REC-4)
            }
        } else if r < 5 {
            send(Some(&key), &work, revision, to, amount); // a harmless duplicate: replayed
        }
        if i % 1000 == 0 {
            claims.push(serde_json::json!({"key": key, "claim": "succeeded"}));
        }
    }
    let mut st = world.lock();
    let detail = serde_json::json!({"actions": claims, "tasks": [], "adopted": []});
    st.ledger.append(doubleagent::ledger::Record::declaration(
        "claims",
        world.clock.now(),
        detail,
    ));
    let file = std::fs::File::create(&out).unwrap_or_else(|e| panic!("{out}: {e}"));
    let mut w = std::io::BufWriter::new(file);
    for r in st.ledger.iter() {
        serde_json::to_writer(&mut w, &r.view(&world.clock)).expect("write");
        w.write_all(b"\n").expect("write");
    }
    w.flush().expect("write");
    println!(
        "GENLEDGER {{\"entries\":{},\"file\":\"{out}\"}}",
        st.ledger.len()
    );
}

// ---------------------------------------------------------------------------------------------
// probe

async fn probe(opts: &Opts) {
    let headers: Vec<(String, String)> = opts
        .get("headers")
        .unwrap_or("")
        .split('|')
        .filter_map(|h| h.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let mut hs: Vec<(&str, &str)> = headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let body = opts.get("body").unwrap_or("").replace("$K", "probe");
    if !body.is_empty() {
        hs.push(("content-type", "application/json"));
    }
    let r = doubleagent::client::send(
        opts.get("method").unwrap_or("GET"),
        opts.url(),
        &hs,
        body.into_bytes(),
        Duration::from_secs(20),
    )
    .await;
    match r {
        Ok(r) => {
            if let Some(out) = opts.get("out") {
                std::fs::write(out, &r.body).unwrap_or_else(|e| panic!("{out}: {e}"));
            }
            let ct = r
                .headers
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            println!(
                "PROBE {{\"status\":{},\"content_type\":{},\"bytes\":{}}}",
                r.status,
                serde_json::Value::from(ct),
                r.body.len()
            );
        }
        Err(e) => {
            println!(
                "PROBE {{\"status\":0,\"error\":{}}}",
                serde_json::Value::from(e.to_string())
            );
        }
    }
}

// ---------------------------------------------------------------------------------------------
// verify-parts: where `verify --ledger` spends its time

fn verify_parts(opts: &Opts) {
    let path = opts.url();
    let t = Instant::now();
    let file = std::fs::File::open(path).expect("ledger");
    let ledger = doubleagent::verify::LeanLedger::read(&file, path).expect("ledger");
    let parse = t.elapsed();
    let t = Instant::now();
    let report = ledger.verify(None);
    let check = t.elapsed();
    let t = Instant::now();
    let human = ledger.human(&report);
    let text_out = t.elapsed();
    let t = Instant::now();
    drop(ledger);
    let free = t.elapsed();
    // The file is read a piece at a time while it is parsed: one figure for both.
    println!(
        "VERIFYPARTS {{\"read_parse_ms\":{},\"verify_ms\":{},\"human_ms\":{},\"free_ms\":{},\"findings\":{},\"bytes\":{}}}",
        parse.as_millis(),
        check.as_millis(),
        text_out.as_millis(),
        free.as_millis(),
        report.findings.len(),
        human.len()
    );
}
