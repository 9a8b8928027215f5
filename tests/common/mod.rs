//! Test harness: start the real `doubleagent` binary on port 0, read its ready line, and talk to
//! it with a deliberately dumb HTTP/1.1 client that can *see* dropped, reset and hung responses
//! (a full client library would retry or hide them).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::Value;

/// Safety net only: no test waits on it to make progress.
const IO_TIMEOUT: Duration = Duration::from_secs(20);

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_doubleagent")
}

/// Write `contents` to a fresh temporary file and return its path.
pub fn temp_file(name: &str, contents: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    static SWEPT: std::sync::Once = std::sync::Once::new();
    SWEPT.call_once(sweep_earlier_runs);
    let dir = std::env::temp_dir().join(format!(
        "doubleagent-test-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    // Fresh: an earlier run whose process had the same id left its files here (a journal a
    // test appends to would otherwise hold that run's entries too).
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, contents).unwrap();
    path
}

/// Remove the directories [`temp_file`] made in earlier test processes that have ended: a test
/// process cannot clean up after itself when it exits (a test's files are in use until then),
/// so each one clears what its finished predecessors left, instead of leaving a directory per
/// test run behind for good. Only where a process's liveness can be read (`/proc`).
fn sweep_earlier_runs() {
    let proc = std::path::Path::new("/proc");
    if !proc.join("self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(rest) = name
            .to_str()
            .and_then(|n| n.strip_prefix("doubleagent-test-"))
        else {
            continue;
        };
        let Some(pid) = rest.split('-').next().filter(|p| p.parse::<u32>().is_ok()) else {
            continue;
        };
        if !proc.join(pid).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// The ready line of a `doubleagent serve` the test spawned itself (with its own env or
/// streams): the first stdout line, parsed.
pub fn ready_of(child: &mut Child) -> Value {
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout piped"))
        .read_line(&mut line)
        .unwrap();
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("ready line is not JSON ({e}): {line:?}"))
}

/// A journal line with its content changed by `edit` and its checksum made to match again: a
/// test that means to rewrite history (not to damage it) writes lines the server accepts.
pub fn rewrite_journal_line(line: &str, edit: impl Fn(&str) -> String) -> String {
    let framed: Value = serde_json::from_str(line).expect("a journal line is JSON");
    let content = edit(&framed["line"].to_string());
    let crc = crc32fast::hash(content.as_bytes());
    format!("{{\"line\":{content},\"crc32\":{crc}}}")
}

/// A running `doubleagent serve`.
pub struct Da {
    pub child: Child,
    pub url: String,
    pub ready: Value,
    pub ready_line: String,
}

impl Da {
    /// Serve a scenario given as TOML text.
    pub fn start(toml: &str) -> Da {
        let path = temp_file("scenario.toml", toml);
        Da::start_args(&[path.to_str().unwrap()])
    }

    /// Serve a shipped scenario file from `scenarios/`.
    pub fn start_file(name: &str) -> Da {
        let path = format!("{}/scenarios/{name}", env!("CARGO_MANIFEST_DIR"));
        Da::start_args(&[&path])
    }

    /// `doubleagent serve ARGS... --listen 127.0.0.1:0`, waiting for the ready line.
    pub fn start_args(args: &[&str]) -> Da {
        let mut child = Command::new(bin())
            .arg("serve")
            .args(args)
            .args(["--listen", "127.0.0.1:0"])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn doubleagent");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        if line.is_empty() {
            let mut err = String::new();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            panic!("doubleagent exited before its ready line: {err}");
        }
        let ready: Value = serde_json::from_str(&line).expect("ready line is JSON");
        let url = ready["url"].as_str().unwrap().to_string();
        Da {
            child,
            url,
            ready,
            ready_line: line,
        }
    }

    pub fn req(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Result<Resp, std::io::Error> {
        request(&self.url, method, path, headers, body.as_bytes())
    }

    /// A request that must get a response.
    pub fn call(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Resp {
        self.req(method, path, headers, body)
            .unwrap_or_else(|e| panic!("{method} {path}: no response: {e}"))
    }

    pub fn get(&self, path: &str) -> Resp {
        self.call("GET", path, &[], "")
    }

    pub fn post_json(
        &self,
        path: &str,
        headers: &[(&str, &str)],
        body: &Value,
    ) -> Result<Resp, std::io::Error> {
        let mut h = vec![("content-type", "application/json")];
        h.extend_from_slice(headers);
        self.req("POST", path, &h, &body.to_string())
    }

    pub fn ledger(&self) -> Vec<Value> {
        self.get("/_admin/ledger").json()["entries"]
            .as_array()
            .unwrap()
            .clone()
    }

    /// Wait (long-poll) until `count` entries match `query` (e.g. `service=payments`).
    pub fn wait_for(&self, query: &str, count: usize) -> Vec<Value> {
        let r = self.get(&format!(
            "/_admin/ledger/wait?count={count}&timeout=15s&{query}"
        ));
        assert_eq!(
            r.status,
            200,
            "waiting for {count} entries matching {query}: {}",
            r.text()
        );
        r.json()["entries"].as_array().unwrap().clone()
    }

    pub fn advance(&self, by: &str) -> Value {
        let r = self.call(
            "POST",
            "/_admin/clock/advance",
            &[("content-type", "application/json")],
            &format!("{{\"by\":\"{by}\"}}"),
        );
        assert_eq!(r.status, 200, "advance: {}", r.text());
        r.json()
    }

    /// Send SIGTERM and wait for the exit status.
    pub fn terminate(mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        self.child.wait().unwrap()
    }
}

impl Drop for Da {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A parsed response.
#[derive(Debug, Clone)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
}

/// Open a connection and send one request (`Connection: close`), without reading.
pub fn send(
    base: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> TcpStream {
    try_send(base, method, path, headers, body).unwrap()
}

/// Like [`send`], but a refused connection or a failed write is an error, not a panic (for
/// load that outlives the server, e.g. around a kill).
pub fn try_send(
    base: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<TcpStream, std::io::Error> {
    let hostport = base.trim_start_matches("http://");
    let mut s = TcpStream::connect(hostport)?;
    s.set_read_timeout(Some(IO_TIMEOUT))?;
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {hostport}\r\nConnection: close\r\nContent-Length: {}\r\n", body.len());
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes())?;
    s.write_all(body)?;
    Ok(s)
}

/// `doubleagent check bad.toml` on `toml`, run in the file's directory: its exit code and stderr.
pub fn check_scenario(toml: &str) -> (Option<i32>, String) {
    let path = temp_file("bad.toml", toml);
    let out = Command::new(bin())
        .args(["check", "bad.toml"])
        .current_dir(path.parent().unwrap())
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Read a whole response. A connection closed with no bytes is `UnexpectedEof`; a reset is
/// `ConnectionReset`.
pub fn read_response(mut s: TcpStream) -> Result<Resp, std::io::Error> {
    let mut raw = Vec::new();
    s.read_to_end(&mut raw)?;
    if raw.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "connection closed without a response",
        ));
    }
    let text_end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("header end");
    let head = String::from_utf8_lossy(&raw[..text_end]).into_owned();
    let mut lines = head.split("\r\n");
    let status: u16 = lines
        .next()
        .unwrap()
        .split(' ')
        .nth(1)
        .unwrap()
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let body = raw[text_end + 4..].to_vec();
    Ok(Resp {
        status,
        headers,
        body,
    })
}

pub fn request(
    base: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Result<Resp, std::io::Error> {
    read_response(try_send(base, method, path, headers, body)?)
}

/// The lost-response scenario from the core issue, verbatim.
pub const LOST_RESPONSE: &str = r#"
name = "lost-response"
seed = 7
clock = "manual"            # "real" (default) or "manual"

[services.payments]
idempotency = { preset = "stripe", retention = "24h" }

[[services.payments.routes]]
name = "create-transfer"
method = "POST"
path = "/v1/transfers"
kind = "action"             # a side effect: recorded, then applied or not according to its fate
intent = ["/to", "/amount"] # JSON pointers: requests with equal values are the same intent
fates = ["drop-after-apply", "respond"]   # 1st attempt: applied, response lost; later ones: normal (last repeats)
respond = { status = 201, json = { id = "{{action.id}}", status = "succeeded" } }

[[services.payments.routes]]
name = "get-transfer"
method = "GET"
path = "/v1/transfers/{id}"  # id = action id or idempotency key
kind = "lookup"              # authoritative state of the action: applied / pending / cancelled / 404 unknown
"#;

/// A one-route payments scenario with the given route and service extras spliced in.
pub fn payments(service_extra: &str, route_extra: &str) -> String {
    format!(
        r#"
name = "t"
seed = 7
clock = "manual"

[services.payments]
{service_extra}

[[services.payments.routes]]
name = "create-transfer"
method = "POST"
path = "/v1/transfers"
kind = "action"
intent = ["/to", "/amount"]
respond = {{ status = 201, json = {{ id = "{{{{action.id}}}}", status = "succeeded" }} }}
{route_extra}

[[services.payments.routes]]
name = "get-transfer"
method = "GET"
path = "/v1/transfers/{{id}}"
kind = "lookup"

[[services.payments.routes]]
name = "cancel-transfer"
method = "POST"
path = "/v1/transfers/{{id}}/cancel"
kind = "cancel"
"#
    )
}

pub fn transfer() -> Value {
    serde_json::json!({"to": "acct-9", "amount": 100})
}

/// Open a connection and write `bytes` verbatim (a hand-made request, possibly malformed).
pub fn send_raw(base: &str, bytes: &[u8]) -> TcpStream {
    let mut s = TcpStream::connect(base.trim_start_matches("http://")).unwrap();
    s.set_read_timeout(Some(IO_TIMEOUT)).unwrap();
    s.write_all(bytes).unwrap();
    s
}

/// Read from an open connection until what has arrived contains `marker`; what arrived. Panics
/// if the connection closes first.
pub fn read_until(s: &mut TcpStream, marker: &str) -> Vec<u8> {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains(marker) {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "closed before {marker:?} arrived");
        seen.extend_from_slice(&buf[..n]);
    }
    seen
}

/// Send a hand-made request and read the whole response.
pub fn raw_request(base: &str, bytes: &[u8]) -> Result<Resp, std::io::Error> {
    read_response(send_raw(base, bytes))
}

/// Undo HTTP/1.1 chunked transfer encoding (chunk extensions ignored).
pub fn dechunk(mut body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(eol) = body.windows(2).position(|w| w == b"\r\n") {
        let head = std::str::from_utf8(&body[..eol]).unwrap();
        let size = usize::from_str_radix(head.split(';').next().unwrap().trim(), 16).unwrap();
        if size == 0 {
            break;
        }
        let start = eol + 2;
        out.extend_from_slice(&body[start..start + size]);
        body = &body[start + size + 2..];
    }
    out
}
