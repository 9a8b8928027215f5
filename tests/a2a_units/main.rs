//! Unit-level tests of the A2A agent's wire vocabulary, JSON-RPC reading and framing, and its
//! handler's future, through the crate's hidden `agent::a2a` modules.

mod card;
mod detail;
mod errors;
mod handle;
mod params;
mod rpc;
mod types;
