//! Request counts by labels (service, route, disposition, fate), kept as records are appended so
//! that they survive eviction: what the Prometheus metrics report.

use std::hash::BuildHasher;

use super::{Disposition, Record};

/// The labels requests are counted by, for metrics.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CountKey {
    pub service: String,
    pub route: String,
    pub disposition: Disposition,
    pub fate: String,
}

impl CountKey {
    fn is(&self, service: &str, route: &str, d: Disposition, fate: &str) -> bool {
        self.disposition == d && self.route == route && self.service == service && self.fate == fate
    }
}

/// Request counts by label set, found by a hash of the borrowed labels (no allocation per request).
#[derive(Clone, Debug, Default)]
pub struct Counts {
    /// Label-set hash → index in `sets`.
    map: crate::hash::FastMap<u64, usize>,
    sets: Vec<(CountKey, u64)>,
}

impl Counts {
    fn hash(service: &str, route: &str, d: Disposition, fate: &str) -> u64 {
        crate::hash::FastState::default().hash_one((service, route, d, fate))
    }

    /// Counts `by` more of a label set.
    #[doc(hidden)]
    pub fn bump(&mut self, service: &str, route: &str, d: Disposition, fate: &str, by: u64) {
        let mut h = Counts::hash(service, route, d, fate);
        let at = loop {
            match self.map.get(&h) {
                Some(&at) if self.sets[at].0.is(service, route, d, fate) => break at,
                // A 64-bit collision between label sets: probe the next number.
                Some(_) => h = h.wrapping_add(1),
                None => {
                    let key = CountKey {
                        service: service.into(),
                        route: route.into(),
                        disposition: d,
                        fate: fate.into(),
                    };
                    self.sets.push((key, 0));
                    self.map.insert(h, self.sets.len() - 1);
                    break self.sets.len() - 1;
                }
            }
        };
        self.sets[at].1 += by;
    }

    pub(super) fn add(&mut self, r: &Record) {
        let route = r.route.as_deref().unwrap_or("");
        match r.fate.map(|f| (f, f.plain_name())) {
            None => self.bump(&r.service, route, r.disposition, "", 1),
            Some((_, Some(name))) => self.bump(&r.service, route, r.disposition, name, 1),
            Some((f, None)) => self.bump(&r.service, route, r.disposition, &f.to_string(), 1),
        }
    }

    /// Add another set of counts to these (a retired world's, into the server's totals).
    pub fn merge(&mut self, other: &Counts) {
        for (k, n) in &other.sets {
            self.bump(&k.service, &k.route, k.disposition, &k.fate, *n);
        }
    }

    /// Every label set with its count, sorted by labels.
    pub fn sorted(&self) -> Vec<(CountKey, u64)> {
        let mut v: Vec<(CountKey, u64)> = self.sets.clone();
        v.sort();
        v
    }
}
