//! The process's hash (`doubleagent::hash`): alike everywhere in one process.

use std::hash::BuildHasher;

use doubleagent::hash::{hex16, FastMap, FastState};

#[test]
fn one_process_hashes_alike_everywhere_and_maps_work() {
    let (a, b) = (FastState::default(), FastState::default());
    assert_eq!(a.hash_one(("pay", "k-1")), b.hash_one(("pay", "k-1")));
    assert_ne!(a.hash_one("ab"), a.hash_one("ab\0"));
    let mut m: FastMap<String, u64> = FastMap::default();
    for i in 0..10_000u64 {
        m.insert(format!("k-{i}"), i);
    }
    assert!((0..10_000u64).all(|i| m[&format!("k-{i}")] == i));
    assert_eq!(hex16(0xabc), "0000000000000abc");
}
