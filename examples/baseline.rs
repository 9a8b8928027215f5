//! The benchmark's yardstick: a minimal hyper server with doubleagent's runtime, allocator and
//! connection setup and the same response bodies, that records nothing. `bench/run.sh` measures
//! it and doubleagent alternately and reports doubleagent/baseline ratios (see BENCHMARKS.md).
//!
//! ```text
//! cargo run --release --example baseline -- --listen 127.0.0.1:0 [--canned /agents/a2a=FILE[:TYPE]]...
//! ```
//!
//! Like `doubleagent serve`, it prints one JSON ready line on stdout
//! (`{"event":"ready","url":"http://127.0.0.1:PORT",...}`) once it accepts connections, and
//! stops on SIGINT/SIGTERM. Routes mirror `bench/bench.toml`:
//!
//! | path | answer (as doubleagent's scenario would) |
//! |---|---|
//! | `/pay/...` | `201 {"id":"act_N","status":"succeeded"}`, N counting up (a fresh execution) |
//! | `/rep/...` | `201 {"id":"act_1","status":"succeeded"}` + `idempotent-replayed: true` (a replay) |
//! | `/slow/...` | the same as `/pay/` after a 100 ms sleep (fate `delay:100ms`) |
//! | `--canned PATH=FILE` | the file's bytes (captured from doubleagent's own answer, e.g. an agent's) |
//! | `/_admin/health` | `{"status":"ok","entries":N}` (N = requests served) |
//!
//! Request bodies are read in full, as doubleagent reads them.

use std::collections::HashMap;
use std::convert::Infallible;
use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

// doubleagent's allocator too (see `src/main.rs`): the yardstick differs from it only in what it
// does per request.
#[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
#[global_allocator]
static ALLOC: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

// And its options: the same sweeps of the threads' caches as doubleagent's.
#[cfg(all(feature = "jemalloc", not(target_env = "msvc")))]
#[export_name = "_rjem_malloc_conf"]
static MALLOC_CONF: &u8 = &b"tcache_gc_incr_bytes:1048576\0"[0];

struct Canned {
    content_type: String,
    body: Bytes,
}

struct App {
    served: AtomicU64,
    executed: AtomicU64,
    canned: HashMap<String, Canned>,
}

fn main() {
    let mut listen = "127.0.0.1:7071".to_string();
    let mut canned = HashMap::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--listen" => listen = args.next().expect("--listen ADDR"),
            "--canned" => {
                let spec = args.next().expect("--canned PATH=FILE[:TYPE]");
                let (path, rest) = spec.split_once('=').expect("--canned PATH=FILE[:TYPE]");
                let (file, ty) = match rest.rsplit_once(':') {
                    Some((f, t)) if t.contains('/') => (f, t),
                    _ => (rest, "application/json"),
                };
                let body = std::fs::read(file).unwrap_or_else(|e| panic!("{file}: {e}"));
                canned.insert(
                    path.to_string(),
                    Canned {
                        content_type: ty.to_string(),
                        body: Bytes::from(body),
                    },
                );
            }
            other => {
                eprintln!("baseline: unknown argument {other}");
                std::process::exit(2);
            }
        }
    }
    // The same runtime doubleagent's binary builds (`Runtime::new()`: multi-threaded, one worker
    // per core).
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    runtime.block_on(serve(listen, canned));
}

async fn serve(listen: String, canned: HashMap<String, Canned>) {
    let listener = TcpListener::bind(&listen).await.expect("bind");
    let addr = listener.local_addr().expect("local addr");
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(
            out,
            "{{\"event\":\"ready\",\"url\":\"http://{addr}\",\"scenario\":\"baseline\",\"services\":{{}}}}"
        );
        let _ = out.flush();
    }
    let app = Arc::new(App {
        served: AtomicU64::new(0),
        executed: AtomicU64::new(0),
        canned,
    });
    let stop = shutdown_signal();
    tokio::pin!(stop);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, _)) = accepted else {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let app = app.clone();
                let svc = service_fn(move |req| {
                    let app = app.clone();
                    async move { Ok::<_, Infallible>(handle(&app, req).await) }
                });
                tokio::spawn(async move {
                    let _ = http1::Builder::new()
                        .keep_alive(true)
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
            _ = &mut stop => break,
        }
    }
}

async fn handle(app: &App, req: hyper::Request<Incoming>) -> hyper::Response<Full<Bytes>> {
    let path = req.uri().path().to_string();
    let _body = req.into_body().collect().await.map(|b| b.to_bytes());
    let served = app.served.fetch_add(1, Ordering::Relaxed) + 1;
    if let Some(c) = app.canned.get(&path) {
        return respond(200, &c.content_type, c.body.clone(), None);
    }
    if path == "/_admin/health" {
        let body = format!("{{\"status\":\"ok\",\"entries\":{served}}}");
        return respond(200, "application/json", body.into(), None);
    }
    if path.starts_with("/rep/") {
        let body = Bytes::from_static(br#"{"id":"act_1","status":"succeeded"}"#);
        return respond(
            201,
            "application/json",
            body,
            Some(("idempotent-replayed", "true")),
        );
    }
    if path.starts_with("/slow/") {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    if path.starts_with("/pay/") || path.starts_with("/slow/") {
        let n = app.executed.fetch_add(1, Ordering::Relaxed) + 1;
        let body = format!("{{\"id\":\"act_{n}\",\"status\":\"succeeded\"}}");
        return respond(201, "application/json", body.into(), None);
    }
    respond(
        404,
        "application/json",
        Bytes::from_static(br#"{"error":"not found","status":404}"#),
        None,
    )
}

fn respond(
    status: u16,
    content_type: &str,
    body: Bytes,
    extra: Option<(&str, &str)>,
) -> hyper::Response<Full<Bytes>> {
    let mut b = hyper::Response::builder()
        .status(status)
        .header("content-type", content_type);
    if let Some((k, v)) = extra {
        b = b.header(k, v);
    }
    b.body(Full::new(body)).expect("static response parts")
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = ctrl_c => {}
        _ = term => {}
    }
}
