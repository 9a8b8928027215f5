//! Fates: what happens to one action attempt, as small values (in the manner of Toxiproxy's toxics).
//!
//! A [`Fate`] says two independent things, which is the point of the tool: whether the effect
//! takes place (now, later or not at all) and what becomes of the response (sent, delayed,
//! dropped, reset, held open, or a lie). A route's [`FateSchedule`] picks the n-th attempt's
//! fate: a sequence whose last element repeats, or weighted draws keyed on (seed, counter,
//! ordinal), so the same seed and requests give the same fates however routes interleave.
//! Imports nothing from the crate.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use rand::{RngExt, SeedableRng};
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::clock::{format_duration, parse_duration};

/// The fate of one action attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Applied; the response is sent at once.
    Respond,
    /// Applied; the response is sent after the duration.
    Delay(Duration),
    /// Applied; the connection is closed with no response.
    DropAfterApply,
    /// Applied; the connection is held open with no response.
    HangAfterApply,
    /// Applied; the connection is reset (TCP RST).
    ResetAfterApply,
    /// Lost on the way in: nothing applied, connection closed with no response.
    DropBeforeApply,
    /// Refused before applying, with this status (503, 429 with `Retry-After`, ...).
    ErrorBeforeApply(u16),
    /// Applied, then answered with this error status: a lie.
    ErrorAfterApply(u16),
    /// Not applied, yet answered with the route's success: the other lie.
    RespondWithoutApply,
    /// Accepted with 202; the effect happens after the duration (pending until then).
    ApplyLater(Duration),
}

impl Fate {
    /// Whether the attempt's effect takes place at all (possibly later).
    pub fn applies(self) -> bool {
        !matches!(
            self,
            Fate::DropBeforeApply | Fate::ErrorBeforeApply(_) | Fate::RespondWithoutApply
        )
    }

    /// The name of a fate without parameters (`None` for those with one), without formatting.
    pub fn plain_name(self) -> Option<&'static str> {
        Some(match self {
            Fate::Respond => "respond",
            Fate::DropAfterApply => "drop-after-apply",
            Fate::HangAfterApply => "hang-after-apply",
            Fate::ResetAfterApply => "reset-after-apply",
            Fate::DropBeforeApply => "drop-before-apply",
            Fate::RespondWithoutApply => "respond-without-apply",
            Fate::Delay(_)
            | Fate::ErrorBeforeApply(_)
            | Fate::ErrorAfterApply(_)
            | Fate::ApplyLater(_) => return None,
        })
    }
}

/// The fate names, for "did you mean" hints.
pub const NAMES: &[&str] = &[
    "respond",
    "delay",
    "drop-after-apply",
    "hang-after-apply",
    "reset-after-apply",
    "drop-before-apply",
    "error-before-apply",
    "error-after-apply",
    "respond-without-apply",
    "apply-later",
];

const FATE_FORMS: &str = "respond, delay:<dur>, drop-after-apply, hang-after-apply, \
reset-after-apply, drop-before-apply, error-before-apply:<status>, error-after-apply:<status>, \
respond-without-apply, apply-later:<dur>";

/// Why a fate string was rejected.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0}")]
pub struct FateError(String);

impl FromStr for Fate {
    type Err = FateError;
    fn from_str(s: &str) -> Result<Fate, FateError> {
        let (name, arg) = match s.split_once(':') {
            Some((n, a)) => (n, Some(a)),
            None => (s, None),
        };
        let dur = |a: Option<&str>| -> Result<Duration, FateError> {
            let a =
                a.ok_or_else(|| FateError(format!("{name} needs a duration, e.g. \"{name}:2s\"")))?;
            parse_duration(a).map_err(|e| FateError(format!("{name}: {e}")))
        };
        let status = |a: Option<&str>| -> Result<u16, FateError> {
            let a =
                a.ok_or_else(|| FateError(format!("{name} needs a status, e.g. \"{name}:503\"")))?;
            match a.parse::<u16>() {
                Ok(s) if (400..=599).contains(&s) => Ok(s),
                _ => Err(FateError(format!(
                    "{name} needs an HTTP error status 400..=599, found \"{a}\""
                ))),
            }
        };
        let no_arg = |f: Fate| match arg {
            None => Ok(f),
            Some(_) => Err(FateError(format!("{name} takes no argument"))),
        };
        match name {
            "respond" => no_arg(Fate::Respond),
            "delay" => Ok(Fate::Delay(dur(arg)?)),
            "drop-after-apply" => no_arg(Fate::DropAfterApply),
            "hang-after-apply" => no_arg(Fate::HangAfterApply),
            "reset-after-apply" => no_arg(Fate::ResetAfterApply),
            "drop-before-apply" => no_arg(Fate::DropBeforeApply),
            "error-before-apply" => Ok(Fate::ErrorBeforeApply(status(arg)?)),
            "error-after-apply" => Ok(Fate::ErrorAfterApply(status(arg)?)),
            "respond-without-apply" => no_arg(Fate::RespondWithoutApply),
            "apply-later" => Ok(Fate::ApplyLater(dur(arg)?)),
            _ => Err(FateError(format!(
                "unknown fate \"{s}\"; expected one of: {FATE_FORMS}"
            ))),
        }
    }
}

impl fmt::Display for Fate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fate::Delay(d) => write!(f, "delay:{}", format_duration(*d)),
            Fate::ErrorBeforeApply(s) => write!(f, "error-before-apply:{s}"),
            Fate::ErrorAfterApply(s) => write!(f, "error-after-apply:{s}"),
            Fate::ApplyLater(d) => write!(f, "apply-later:{}", format_duration(*d)),
            plain => f.write_str(plain.plain_name().unwrap_or_default()),
        }
    }
}

impl serde::Serialize for Fate {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.plain_name() {
            Some(name) => s.serialize_str(name),
            None => s.collect_str(self),
        }
    }
}

impl<'de> serde::Deserialize<'de> for Fate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Fate, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(de::Error::custom)
    }
}

/// How a route chooses the fate of its n-th attempt.
#[derive(Clone, Debug, PartialEq)]
pub enum FateSchedule {
    /// The n-th attempt gets the n-th fate; the last one repeats.
    Sequence(Vec<Fate>),
    /// Each attempt draws from these weights with the scenario's seed.
    Weighted(Vec<(Fate, u32)>),
}

impl Default for FateSchedule {
    fn default() -> Self {
        FateSchedule::Sequence(vec![Fate::Respond])
    }
}

impl FateSchedule {
    /// The fate for attempt `ordinal` (0-based) of the counter named `stream`.
    pub fn pick(&self, seed: u64, stream: &str, ordinal: u64) -> Fate {
        match self {
            FateSchedule::Sequence(seq) => {
                let i = (ordinal as usize).min(seq.len().saturating_sub(1));
                seq.get(i).copied().unwrap_or(Fate::Respond)
            }
            FateSchedule::Weighted(choices) => {
                let total: u64 = choices.iter().map(|(_, w)| *w as u64).sum();
                if total == 0 {
                    return Fate::Respond;
                }
                let mut rng = rand::rngs::StdRng::seed_from_u64(stream_seed(seed, stream, ordinal));
                let mut roll = rng.random_range(0..total);
                for (fate, w) in choices {
                    if roll < *w as u64 {
                        return *fate;
                    }
                    roll -= *w as u64;
                }
                Fate::Respond
            }
        }
    }
}

/// A seed for one draw, independent of every other (stream, ordinal) pair: FNV-1a over the
/// stream name, mixed with seed and ordinal by SplitMix64.
pub fn stream_seed(seed: u64, stream: &str, ordinal: u64) -> u64 {
    let mut h = fnv::FnvHasher::default();
    std::hash::Hasher::write(&mut h, stream.as_bytes());
    splitmix(splitmix(seed ^ std::hash::Hasher::finish(&h)) ^ ordinal)
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl<'de> serde::Deserialize<'de> for FateSchedule {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<FateSchedule, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = FateSchedule;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "a list of fates like [\"drop-after-apply\", \"respond\"] or \
                     { random = { respond = 9, \"reset-after-apply\" = 1 } }",
                )
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<FateSchedule, A::Error> {
                let mut fates = Vec::new();
                while let Some(f) = seq.next_element::<Fate>()? {
                    fates.push(f);
                }
                if fates.is_empty() {
                    return Err(de::Error::custom("a fate sequence needs at least one fate"));
                }
                Ok(FateSchedule::Sequence(fates))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<FateSchedule, A::Error> {
                let mut out = None;
                while let Some(k) = map.next_key::<String>()? {
                    if k != "random" {
                        return Err(de::Error::unknown_field(&k, &["random"]));
                    }
                    let weights: std::collections::BTreeMap<String, u32> = map.next_value()?;
                    let mut choices = Vec::new();
                    for (f, w) in weights {
                        choices.push((f.parse::<Fate>().map_err(de::Error::custom)?, w));
                    }
                    if choices.iter().all(|(_, w)| *w == 0) {
                        return Err(de::Error::custom(
                            "random fates need at least one positive weight",
                        ));
                    }
                    out = Some(FateSchedule::Weighted(choices));
                }
                out.ok_or_else(|| de::Error::missing_field("random"))
            }
        }
        d.deserialize_any(V)
    }
}
