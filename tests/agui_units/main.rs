//! Unit-level tests of the AG-UI agent's protocol types and resume judging, through the
//! crate's hidden `agent::agui` modules.

mod event;
mod input;
mod interrupt;
mod resume;
mod sse;
mod support;
mod tanstack;
