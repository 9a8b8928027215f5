//! Chunks (`doubleagent::chunks`): places stay valid while older chunks go.

use doubleagent::chunks::Chunks;

#[test]
fn places_stay_valid_while_older_chunks_go_and_a_full_chunk_is_reused() {
    let mut c = Chunks::new(64, 16);
    let a = c.place(&[b"0123456789", b"ab"]);
    assert_eq!(c.from(a).map(|b| &b[..12]), Some(&b"0123456789ab"[..]));
    // Doubling: 16, 32, 64, 64.
    let places: Vec<u64> = (0..20).map(|i| c.place(&[&[i as u8; 10]])).collect();
    let sizes: Vec<usize> = c.iter().map(Vec::capacity).collect();
    assert_eq!(&sizes[..3], &[16, 32, 64]);
    assert!(sizes[3..].iter().all(|&s| s == 64));
    // A text larger than a chunk gets one of its own.
    let big = c.place(&[&[7u8; 100]]);
    assert_eq!(c.from(big).map(<[u8]>::len), Some(100));
    let last = *places.last().unwrap();
    c.release_before(Some(last));
    assert_eq!(c.from(a), None, "its chunk is gone");
    assert_eq!(c.from(last).map(|b| b[0]), Some(19));
    c.release_before(None);
    assert_eq!(c.len(), 1, "the last chunk stays, to write on");
    // A full-size chunk let go is reused for the next one.
    let reused = c.place(&[&[1u8; 60]]);
    assert_eq!(c.iter().last().map(Vec::capacity), Some(64));
    assert_eq!(c.from(reused).map(|b| b.len()), Some(60));
}
