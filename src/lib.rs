//! doubleagent plays the outside world for AI-agent orchestrators under test: fake services that
//! record every action in a ledger and then deliver, delay, drop, reset or lie about the
//! response; idempotency keys with retention windows; a manual clock.
//!
//! Modules, bottom up: [`clock`] and [`fate`]; [`ledger`], [`idempotency`] and [`scenario`];
//! [`world`] (the simulated state); [`service`] (the action pipeline); [`admin`] and [`server`]
//! (HTTP); [`cli`]. See ARCHITECTURE.md.

pub mod admin;
pub mod agent;
pub mod chunks;
pub mod cli;
pub mod client;
pub mod clock;
pub mod fate;
pub mod hash;
pub mod idempotency;
pub mod journal;
pub mod ledger;
pub mod report;
pub mod revision;
pub mod scenario;
pub mod server;
pub mod service;
pub mod template;
pub mod verify;
pub mod world;

pub use scenario::Scenario;
pub use server::Server;
