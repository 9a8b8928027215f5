//! Emptied: request bodies are read by serde_json alone (see `service`). This module is to be
//! removed with its `pub mod compact;` line in `lib.rs`.
