pub mod clock;
pub mod fate;
pub mod idempotency;
pub mod ledger;
pub mod scenario;
