//! Lock poison, handled in one place: [`unpoisoned`].
//!
//! Imports nothing from the crate, so every module may use it.

/// A lock's guard whether or not a thread panicked while holding it. Every lock in the crate
/// guards state that each critical section leaves whole (a panic in one, itself a bug, leaves
/// nothing half-written that the next holder could misread), so poison carries no information.
pub fn unpoisoned<G>(r: std::sync::LockResult<G>) -> G {
    r.unwrap_or_else(std::sync::PoisonError::into_inner)
}
