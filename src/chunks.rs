//! Bytes appended back to back in chunks that never move, forgotten from the front: the storage
//! under the ledger and the idempotency key store. A place is `chunk number << 32 | offset`,
//! chunks numbered from the first ever made, so a place stays valid while older chunks go. A
//! store turning over reuses the last full-size chunk it let go rather than the allocator, whose
//! heap would otherwise creep as large blocks come and go. Imports nothing of the crate.

use std::collections::VecDeque;

#[derive(Debug, PartialEq)]
pub struct Chunks {
    chunks: VecDeque<Vec<u8>>,
    /// The number of `chunks[0]`.
    first: u64,
    /// The last full-size chunk let go, for the next one.
    spare: Option<Vec<u8>>,
    /// A chunk's full size (one text larger than this gets a chunk of its own).
    size: usize,
    /// The first chunk's size; each next one is twice the last, up to `size`.
    start: usize,
}

impl Chunks {
    pub fn new(size: usize, start: usize) -> Chunks {
        Chunks {
            chunks: VecDeque::new(),
            first: 0,
            spare: None,
            size,
            start: start.min(size),
        }
    }

    /// Copy `parts` back to back into the last chunk (or a new one); returns where they start.
    #[inline]
    pub fn place(&mut self, parts: &[&[u8]]) -> u64 {
        let len: usize = parts.iter().map(|p| p.len()).sum();
        let fits = self
            .chunks
            .back()
            .is_some_and(|c| c.capacity() - c.len() >= len);
        if !fits {
            let next = self
                .chunks
                .back()
                .map_or(self.start, |c| (2 * c.capacity()).min(self.size));
            let chunk = match self.spare.take() {
                Some(c) if len <= self.size => c,
                _ => Vec::with_capacity(next.max(len)),
            };
            self.chunks.push_back(chunk);
        }
        let number = self.first + self.chunks.len() as u64 - 1;
        let Some(chunk) = self.chunks.back_mut() else {
            return 0;
        };
        let offset = chunk.len() as u64;
        for p in parts {
            chunk.extend_from_slice(p);
        }
        (number << 32) | offset
    }

    /// The bytes from place `at` to the end of its chunk (`None` once its chunk is gone).
    #[inline]
    pub fn from(&self, at: u64) -> Option<&[u8]> {
        let chunk = usize::try_from((at >> 32).checked_sub(self.first)?).ok()?;
        self.chunks.get(chunk)?.get((at & 0xffff_ffff) as usize..)
    }

    /// Let go of the chunks before the one place `oldest` is in (`None`: nothing is kept, so all
    /// but the last, which is written on next).
    pub fn release_before(&mut self, oldest: Option<u64>) {
        let last = self.first + self.chunks.len().saturating_sub(1) as u64;
        let keep_from = oldest.map_or(last, |at| (at >> 32).min(last));
        while self.first < keep_from {
            let Some(mut chunk) = self.chunks.pop_front() else {
                break;
            };
            self.first += 1;
            if chunk.capacity() == self.size {
                chunk.clear();
                self.spare = Some(chunk);
            }
        }
    }

    pub fn len(&self) -> usize {
        self.chunks.len()
    }

    pub fn is_empty(&self) -> bool {
        self.chunks.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Vec<u8>> {
        self.chunks.iter()
    }
}
