//! doubleagent plays the outside world for AI-agent orchestrators under test: fake services
//! that record every action in a ledger and then deliver, delay, drop, reset or lie about the
//! response; idempotency keys with retention windows; fake A2A and AG-UI subagents; a manual
//! clock; and a verifier that names every broken rule.
//!
//! The same engine runs as the `doubleagent` binary (a server or a CI sidecar, see the README)
//! and inside a Rust test, as here.
//!
//! # A test in five steps
//!
//! 1. Start a [`Server`] from a scenario on `127.0.0.1:0` ([`Server::start_toml`], or
//!    [`Server::start`] with a [`Scenario`] read by [`Scenario::from_file`]). The built-in
//!    [`QUICKSTART`] scenario is a Stripe-like payments API whose first transfer is applied but
//!    its response lost.
//! 2. Point the code under test at [`Server::service_url`].
//! 3. Move a manual clock with [`Server::advance`] (a 24 h retention window passes at once).
//! 4. Read the ledger — every request, what took effect and what the client was told — with
//!    [`Server::ledger`] or [`Server::entries`] and a [`Filter`].
//! 5. Judge it with [`verify`]: a [`Report`] of [`Finding`]s, one per broken rule, with notes on
//!    what could not be judged.
//!
//! ```no_run
//! use doubleagent::{Filter, Server, QUICKSTART};
//!
//! # async fn demo() -> Result<(), doubleagent::StartError> {
//! let server = Server::start_toml(QUICKSTART).await?;
//! let payments = server.service_url("payments").expect("the quickstart has a payments service");
//! // ... run the orchestrator against `payments` ...
//! # let _ = payments;
//!
//! let transfers = Filter { route: Some("create-transfer".into()), ..Filter::default() };
//! let applied = server.entries(&transfers).iter().filter(|e| e.applied).count();
//! assert!(applied <= 1, "a lost response must not turn into a second transfer");
//!
//! let entries = server.ledger();
//! let report = doubleagent::verify(&entries, None);
//! assert!(report.clean, "{}", report.human(&entries));
//! # Ok(()) }
//! ```
//!
//! The scenario format, the rules and the admin API are described in the repository's `docs/`;
//! the modules and how a request flows through them in `ARCHITECTURE.md`.

// The engine's module docs name their private parts for readers of
// `cargo doc --document-private-items`; the public pages above never link there.
#![allow(rustdoc::private_intra_doc_links)]

pub use ledger::{Delivery, Disposition, Entry, EntryResponse, Filter};
pub use scenario::{Scenario, ScenarioError, QUICKSTART};
pub use server::{Server, StartError};
pub use verify::{
    verify, ActionClaim, ActionOutcome, Claims, Finding, Report, TaskClaim, TaskOutcome,
};

// The engine's modules, bottom up (imports point down; see ARCHITECTURE.md). They are public
// for the binary, the benchmarks and the examples, not as a stable API.
#[doc(hidden)]
pub mod admin;
#[doc(hidden)]
pub mod agent;
#[doc(hidden)]
pub mod chunks;
#[doc(hidden)]
pub mod cli;
#[doc(hidden)]
pub mod client;
#[doc(hidden)]
pub mod clock;
#[doc(hidden)]
pub mod fate;
#[doc(hidden)]
pub mod hash;
#[doc(hidden)]
pub mod idempotency;
#[doc(hidden)]
pub mod journal;
#[doc(hidden)]
pub mod ledger;
#[doc(hidden)]
pub mod mcp;
#[doc(hidden)]
pub mod report;
#[doc(hidden)]
pub mod revision;
#[doc(hidden)]
pub mod scenario;
#[doc(hidden)]
pub mod server;
#[doc(hidden)]
pub mod service;
#[doc(hidden)]
pub mod sync;
#[doc(hidden)]
pub mod template;
#[doc(hidden)]
pub mod verify;
#[doc(hidden)]
pub mod world;
