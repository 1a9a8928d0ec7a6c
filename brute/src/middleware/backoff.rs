//! Exponential backoff with jitter, shared by [`Retry`](super::Retry) (model calls)
//! and `ToolRetry` (tool calls).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The wait after failed attempt `attempt` (1 for the first): `base * 2^(attempt-1)`,
/// at most `max`; with a `jitter` draw, between half of that and all of it.
pub(crate) fn backoff(
    base: Duration,
    max: Duration,
    attempt: u32,
    jitter: Option<u64>,
) -> Duration {
    let factor = 1u32
        .checked_shl(attempt.saturating_sub(1))
        .unwrap_or(u32::MAX);
    let delay = base.saturating_mul(factor).min(max);
    let Some(draw) = jitter else {
        return delay;
    };
    let half = delay / 2;
    let spread = u64::try_from((delay - half).as_nanos()).unwrap_or(u64::MAX);
    half + Duration::from_nanos(draw % spread.saturating_add(1))
}

/// Where jitter comes from: with a seed, a SplitMix64 sequence from it (the same seed
/// gives the same waits, so tests are deterministic); without one, a fresh random
/// number per draw. A layer keeps it as state: the count of draws so far.
#[derive(Default)]
pub(crate) struct Draws(AtomicU64);

/// SplitMix64's increment.
const GAMMA: u64 = 0x9e37_79b9_7f4a_7c15;

impl Draws {
    /// The next number of `seed`'s sequence, or a random one without a seed.
    pub(crate) fn next(&self, seed: Option<u64>) -> u64 {
        let Some(seed) = seed else {
            return random();
        };
        let n = self.0.fetch_add(1, Ordering::Relaxed).wrapping_add(1);
        mix(seed.wrapping_add(n.wrapping_mul(GAMMA)))
    }
}

impl Clone for Draws {
    /// A clone goes on from where this sequence is.
    fn clone(&self) -> Self {
        Draws(AtomicU64::new(self.0.load(Ordering::Relaxed)))
    }
}

impl fmt::Debug for Draws {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Draws")
            .field(&self.0.load(Ordering::Relaxed))
            .finish()
    }
}

/// SplitMix64's output function.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A cheap pseudo-random number: jitter needs spread, not quality. std's
/// `RandomState` is seeded randomly per thread and differs on every call, so no state
/// of brute's own is kept.
fn random() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{Draws, backoff};

    const BASE: Duration = Duration::from_secs(1);
    const MAX: Duration = Duration::from_secs(10);

    #[test]
    fn without_jitter_the_wait_doubles_up_to_the_cap() {
        let secs: Vec<_> = (1..=6)
            .map(|n| backoff(BASE, MAX, n, None).as_secs())
            .collect();
        assert_eq!(secs, [1, 2, 4, 8, 10, 10]);
        assert_eq!(backoff(BASE, MAX, 200, None), MAX);
    }

    #[test]
    fn jitter_stays_between_half_and_all_and_a_seed_repeats_it() {
        let (a, b, other) = (Draws::default(), Draws::default(), Draws::default());
        let mut differs = false;
        for n in 1..=5 {
            let full = backoff(BASE, MAX, n, None);
            let wait = backoff(BASE, MAX, n, Some(a.next(Some(7))));
            assert!(wait >= full / 2 && wait <= full, "{wait:?} of {full:?}");
            assert_eq!(wait, backoff(BASE, MAX, n, Some(b.next(Some(7)))));
            differs |= wait != backoff(BASE, MAX, n, Some(other.next(Some(8))));
        }
        assert!(differs, "another seed gives other waits");
    }
}
