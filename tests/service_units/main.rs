//! Unit-level tests of the fake services' error bodies and form decoding, through the crate's
//! hidden `service` modules.

mod errors;
mod form;
