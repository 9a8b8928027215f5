//! A fast hasher for the hash maps on hot paths (the verifier's indexes over a million entries,
//! the per-request key indexes): the multiply-rotate scheme of rustc's `FxHasher`, seeded once
//! per process so that crafted keys cannot be aimed at a known function. Not cryptographic; std's
//! SipHash costs several times more per key and showed up first in profiles.
//!
//! Imports nothing from the crate.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, Hasher};
use std::sync::OnceLock;

const K: u64 = 0xf135_7aea_2e62_a9c5;

/// The hasher state.
#[derive(Clone, Copy)]
pub struct FastHasher(u64);

impl FastHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(26) ^ word).wrapping_mul(K);
    }
}

impl Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        // The length first: a zero-padded last word alone would let "k-10000" and "k-100008"
        // (whose eighth byte is the padding's length marker) hash alike, and the key index
        // takes a hash for its key.
        self.add(bytes.len() as u64);
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes([
                c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7],
            ]));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut buf = [0u8; 8];
            buf[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(buf));
        }
    }
    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(i as u64);
    }
    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.add(i as u64);
    }
    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(i as u64);
    }
    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }
    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }
    #[inline]
    fn finish(&self) -> u64 {
        // A final avalanche so that the low bits hashbrown buckets by depend on every input bit.
        let mut h = self.0;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h
    }
}

/// Builds [`FastHasher`]s from the process seed.
#[derive(Clone, Copy, Debug)]
pub struct FastState(u64);

impl Default for FastState {
    fn default() -> Self {
        static SEED: OnceLock<u64> = OnceLock::new();
        FastState(*SEED.get_or_init(|| {
            // std's RandomState is seeded from the OS; borrow one of its outputs.
            std::collections::hash_map::RandomState::new().hash_one(0x5eed_u64)
        }))
    }
}

impl BuildHasher for FastState {
    type Hasher = FastHasher;
    #[inline]
    fn build_hasher(&self) -> FastHasher {
        FastHasher(self.0)
    }
}

pub type FastMap<K, V> = HashMap<K, V, FastState>;
pub type FastSet<K> = HashSet<K, FastState>;

/// `format!("{:016x}", v)` without the formatting machinery (once per keyed request).
pub fn hex16(v: u64) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(16);
    for i in (0..16).rev() {
        out.push(DIGITS[((v >> (i * 4)) & 0xf) as usize] as char);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex16_is_lower_case_zero_padded_hex() {
        for v in [0, 1, 0xabc, u64::MAX, 0x0123_4567_89ab_cdef] {
            assert_eq!(hex16(v), format!("{v:016x}"));
        }
    }

    #[test]
    fn equal_keys_hash_equal_and_maps_work() {
        let s = FastState::default();
        assert_eq!(s.hash_one(("pay", "k-1")), s.hash_one(("pay", "k-1")));
        assert_ne!(s.hash_one(("pay", "k-1")), s.hash_one(("pay", "k-2")));
        assert_ne!(s.hash_one("ab"), s.hash_one("ab\0"));
        assert_ne!(s.hash_one("k-10000"), s.hash_one("k-100008"));
        assert_ne!(
            s.hash_one(("pay", "k-10000")),
            s.hash_one(("pay", "k-100008"))
        );
        // No two of a run of keys like a load generator's collide.
        let hashes: FastSet<u64> = (0..200_000u64)
            .map(|i| s.hash_one(("pay", format!("r-1-{i}").as_str())))
            .collect();
        assert_eq!(hashes.len(), 200_000);
        let mut m: FastMap<String, u64> = FastMap::default();
        for i in 0..10_000u64 {
            m.insert(format!("k-{i}"), i);
        }
        assert!((0..10_000u64).all(|i| m[&format!("k-{i}")] == i));
    }
}
