//! [`Server`]: a doubleagent server inside the caller's tokio runtime, for Rust tests — start
//! on port 0, read URLs and the ledger, move the clock, stop on drop.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::watch;

use super::{bind, serve, App};
use crate::ledger::{Entry, Filter};
use crate::scenario::{Scenario, ScenarioError};
use crate::world::{Host, Limits, World};

/// Errors from starting a server in process.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Scenario(#[from] ScenarioError),
    #[error("cannot listen: {0}")]
    Io(#[from] io::Error),
}

/// A doubleagent server running inside the current tokio runtime, for Rust tests.
///
/// ```no_run
/// # async fn demo() -> Result<(), doubleagent::StartError> {
/// let server = doubleagent::Server::start_toml(doubleagent::QUICKSTART).await?;
/// let payments = server.service_url("payments").unwrap();
/// // ... point the code under test at `payments`, then:
/// let applied = server.ledger().iter().filter(|e| e.applied).count();
/// # let _ = (payments, applied); Ok(()) }
/// ```
pub struct Server {
    app: Arc<App>,
    stop: Option<watch::Sender<bool>>,
}

impl Server {
    /// Serve a validated scenario on `127.0.0.1:0`.
    pub async fn start(scenario: Scenario) -> Result<Server, StartError> {
        Server::start_on("127.0.0.1:0", scenario, None).await
    }

    /// Validate and serve a scenario given as TOML text.
    pub async fn start_toml(toml: &str) -> Result<Server, StartError> {
        Server::start(Scenario::from_toml(toml, "<inline scenario>")?).await
    }

    /// Serve on a given address with an optional seed override.
    pub async fn start_on(
        addr: &str,
        scenario: Scenario,
        seed: Option<u64>,
    ) -> Result<Server, StartError> {
        let listener = bind(addr).await?;
        let (app, stop) = Server::run(listener, scenario, seed, Duration::from_secs(5))?;
        Ok(Server {
            app,
            stop: Some(stop),
        })
    }

    /// Spawn `serve` on an already-bound listener (and the gRPC service on a free port of its
    /// host, if an A2A agent serves gRPC); sending `true` stops them.
    pub fn run(
        listener: TcpListener,
        scenario: Scenario,
        seed: Option<u64>,
        drain: Duration,
    ) -> io::Result<(Arc<App>, watch::Sender<bool>)> {
        let addr = listener.local_addr()?;
        let limits = Limits {
            seed,
            ..Limits::default()
        };
        let host = Host::new(scenario, limits, None, Vec::new());
        let grpc = if host.world().scenario.serves_grpc() {
            let l = std::net::TcpListener::bind((addr.ip(), 0))?;
            l.set_nonblocking(true)?;
            Some(TcpListener::from_std(l)?)
        } else {
            None
        };
        let app = Arc::new(App {
            drain,
            grpc: grpc
                .as_ref()
                .map(TcpListener::local_addr)
                .transpose()?
                .map(|a| a.to_string()),
            ..App::new(host, format!("http://{addr}"))
        });
        let (tx, rx) = watch::channel(false);
        let stopped = |mut rx: watch::Receiver<bool>| async move {
            let _ = rx.wait_for(|s| *s).await;
        };
        if let Some(l) = grpc {
            tokio::spawn(super::grpc::serve(l, app.clone(), stopped(rx.clone())));
        }
        tokio::spawn(serve(listener, app.clone(), stopped(rx)));
        Ok((app, tx))
    }

    pub fn url(&self) -> &str {
        &self.app.base_url
    }

    /// The base URL of a fake service (`http://127.0.0.1:PORT/payments`).
    pub fn service_url(&self, name: &str) -> Option<String> {
        self.world()
            .scenario
            .service(name)
            .map(|s| format!("{}/{}", self.app.base_url, s.name))
    }

    /// The gRPC listener's `host:port`, when an A2A agent serves gRPC.
    pub fn grpc_addr(&self) -> Option<&str> {
        self.app.grpc.as_deref()
    }

    /// The ready line's JSON object.
    pub fn ready(&self) -> Value {
        serde_json::to_value(self.app.ready(&self.world())).unwrap_or(Value::Null)
    }

    /// Every ledger entry so far.
    pub fn ledger(&self) -> Vec<Entry> {
        self.world().entries(&Filter::default())
    }

    /// Ledger entries matching a filter.
    pub fn entries(&self, filter: &Filter) -> Vec<Entry> {
        self.world().entries(filter)
    }

    /// Move a manual clock forward.
    pub async fn advance(&self, by: Duration) -> Result<Duration, crate::clock::ClockError> {
        self.world().clock.advance(by).await
    }

    /// Back to the start (same as `POST /_admin/reset`).
    pub fn reset(&self) {
        // The default session always exists: resetting it cannot fail.
        let _ = self.app.host.reset(None);
    }

    pub fn world(&self) -> Arc<World> {
        self.app.host.world()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(true);
        }
        self.app.host.stop();
        self.app.host.close_all();
    }
}
