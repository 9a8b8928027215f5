//! The hasher for hash maps on hot paths (the verifier's indexes, the key indexes): foldhash,
//! seeded once per process so crafted keys cannot target a known function, and the same for
//! every map (a hash taken in one place may be looked up in another). Not cryptographic.
//! Imports nothing from the crate.

use std::collections::{HashMap, HashSet};
use std::hash::BuildHasher;

use foldhash::fast::FoldHasher;
use foldhash::SharedSeed;

/// Builds foldhash hashers from the process's random seed.
#[derive(Clone, Copy, Debug)]
pub struct FastState(&'static SharedSeed);

impl Default for FastState {
    fn default() -> Self {
        FastState(SharedSeed::global_random())
    }
}

impl BuildHasher for FastState {
    type Hasher = FoldHasher<'static>;
    #[inline]
    fn build_hasher(&self) -> Self::Hasher {
        FoldHasher::with_seed(0, self.0)
    }
}

pub type FastMap<K, V> = HashMap<K, V, FastState>;
pub type FastSet<K> = HashSet<K, FastState>;

/// A number as exactly 16 lowercase hex digits (fingerprints, ids).
pub fn hex16(v: u64) -> String {
    // The `hex` crate into a stack buffer: cheaper than `format!`, on every keyed request.
    let mut buf = [0u8; 16];
    // 8 bytes always fit 16 hex digits, which are ASCII (so valid UTF-8, checked, not repaired).
    let _ = hex::encode_to_slice(v.to_be_bytes(), &mut buf);
    std::str::from_utf8(&buf).unwrap_or_default().to_owned()
}
