//! Unit-level tests of the fake services' error bodies, form decoding and admission order,
//! through the crate's hidden `service` modules.

mod errors;
mod form;
mod order;
