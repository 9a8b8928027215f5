pub mod clock;
pub mod fate;
