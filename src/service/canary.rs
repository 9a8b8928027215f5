//! Canaries: the `cny-` tokens agents issue in their results, found in an outside request (its
//! path, headers or body) and noted in its ledger entry as the verifier's evidence that a result
//! was used (ACC-2).

use hyper::HeaderMap;
use serde_json::json;

use crate::ledger::Record;

/// The canaries (`cny-` + 16 hex digits) an outside request carries in its path, its headers'
/// values or its body. The ledger may keep only part of a body, so the request itself is
/// scanned, all of it: callers run this before they lock the world.
pub(super) fn canaries_in(path: &str, headers: &HeaderMap, body: &[u8]) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let mut scan = |bytes: &[u8]| {
        // Too short for one, or no "cny-" in it (the usual case).
        if bytes.len() < 20 || !may_hold_canary(bytes) {
            return;
        }
        let mut i = 0;
        while let Some(at) = bytes[i..].windows(4).position(|w| w == b"cny-") {
            let start = i + at;
            let token = bytes.get(start..start + 20);
            if let Some(t) = token.filter(|t| t[4..].iter().all(u8::is_ascii_hexdigit)) {
                let t = String::from_utf8_lossy(t).into_owned();
                if !found.contains(&t) {
                    found.push(t);
                }
            }
            i = start + 4;
        }
    };
    std::iter::once(path.as_bytes())
        .chain(headers.values().map(|v| v.as_bytes()))
        .chain(std::iter::once(body))
        .for_each(&mut scan);
    found
}

/// Notes the canaries [`canaries_in`] found in the record's `detail.canaries`.
pub(super) fn note_canaries(found: Vec<String>, record: &mut Record) {
    if found.is_empty() {
        return;
    }
    let mut detail = record
        .detail
        .as_ref()
        .map_or_else(|| json!({}), |d| d.value());
    if let Some(m) = detail.as_object_mut() {
        m.insert("canaries".into(), json!(found));
    }
    record.detail = Some(detail.into());
}

/// Whether `bytes` contains "cny-" (usually not): eight bytes at a time are tested for '-', and
/// only where one is are the three bytes before it compared.
fn may_hold_canary(bytes: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let after_cny = |at: usize| at >= 3 && bytes[at] == b'-' && &bytes[at - 3..at] == b"cny";
    let mut i = 0;
    while let Some(word) = bytes.get(i..i + 8) {
        let x = u64::from_le_bytes(word.try_into().unwrap_or_default()) ^ (ONES * b'-' as u64);
        // A high bit for each byte that was '-' (and, rarely, a byte above one: checked anyway).
        let mut dashes = x.wrapping_sub(ONES) & !x & (ONES << 7);
        while dashes != 0 {
            if after_cny(i + (dashes.trailing_zeros() / 8) as usize) {
                return true;
            }
            dashes &= dashes - 1;
        }
        i += 8;
    }
    (i..bytes.len()).any(after_cny)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canaries_are_found_wherever_they_sit_in_a_word() {
        let canary = "cny-0123456789abcdef";
        for pad in 0..20 {
            let text = format!("{}{canary}{}", "x".repeat(pad), "y".repeat(pad % 5));
            assert!(may_hold_canary(text.as_bytes()), "{text}");
            let none = text.replace('-', "_");
            assert!(!may_hold_canary(none.as_bytes()), "{none}");
            let dashes = text.replace("cny", "cn-");
            assert!(!may_hold_canary(dashes.as_bytes()), "{dashes}");
        }
        assert!(!may_hold_canary(b""));
        assert!(may_hold_canary(b"cny-"));
        // Against the plain search, on pseudo-random strings up to 39 bytes long of the letters
        // that matter and one that does not.
        let letters = b"cny-x";
        let mut seed = 1u64;
        for len in 0..40 {
            for _ in 0..400 {
                let text: Vec<u8> = (0..len)
                    .map(|_| {
                        seed = seed
                            .wrapping_mul(6364136223846793005)
                            .wrapping_add(1442695040888963407);
                        letters[(seed >> 33) as usize % letters.len()]
                    })
                    .collect();
                let plain = text.windows(4).any(|w| w == b"cny-");
                assert_eq!(
                    may_hold_canary(&text),
                    plain,
                    "{:?}",
                    String::from_utf8_lossy(&text)
                );
            }
        }
    }
}
