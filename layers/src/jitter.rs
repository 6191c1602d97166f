//! Where every random choice of this crate and `mcp-connect` comes from:
//! backoff jitter, a breaker's open time, a throttled retry's spread.
//!
//! In a service each source is tower's [`HasherRng`] over a fresh std
//! `RandomState` (no random-number crate), so replicas that failed
//! together spread apart. A deterministic simulation needs the opposite:
//! the same seed must give the same choices, run after run.
//! [`seed_this_thread`] makes every source created on the calling thread
//! from then on draw from that seed, in creation order; the simulator runs
//! every simulated host on one thread, so one seed decides them all.
//! Nothing changes for a thread that never calls it, and the cost of the
//! seam is one thread-local read per source created (never per draw).

use std::cell::Cell;
use std::collections::hash_map::{DefaultHasher, RandomState};
use std::hash::{BuildHasher, Hasher};

use tower::util::rng::HasherRng;

/// A source of jitter: tower's [`HasherRng`] over a [`JitterSeed`].
pub type Jitter = HasherRng<JitterSeed>;

/// The keys of one [`Jitter`]: random per source, or derived from the
/// thread's seed (see [`seed_this_thread`]).
#[derive(Clone, Debug)]
pub struct JitterSeed(Keys);

#[derive(Clone, Debug)]
enum Keys {
    Random(RandomState),
    Seeded(u64),
}

impl BuildHasher for JitterSeed {
    type Hasher = DefaultHasher;

    fn build_hasher(&self) -> DefaultHasher {
        match &self.0 {
            Keys::Random(state) => state.build_hasher(),
            Keys::Seeded(seed) => {
                // `DefaultHasher::new` has fixed keys: the seed decides.
                let mut hasher = DefaultHasher::new();
                hasher.write_u64(*seed);
                hasher
            }
        }
    }
}

thread_local! {
    /// The thread's seed and how many sources it has handed out.
    static SEEDED: Cell<Option<(u64, u64)>> = const { Cell::new(None) };
}

/// A new source of jitter: random, or the next one of this thread's seed.
pub fn jitter() -> Jitter {
    let keys = SEEDED.with(|seeded| match seeded.get() {
        None => Keys::Random(RandomState::new()),
        Some((seed, handed_out)) => {
            seeded.set(Some((seed, handed_out + 1)));
            let mut hasher = DefaultHasher::new();
            hasher.write_u64(seed);
            hasher.write_u64(handed_out);
            Keys::Seeded(hasher.finish())
        }
    });
    HasherRng::with_hasher(JitterSeed(keys))
}

/// Makes every [`jitter`] source created on this thread from now on draw
/// from `seed` (`None`: random again). For deterministic simulation; a
/// service never calls it.
pub fn seed_this_thread(seed: Option<u64>) {
    SEEDED.with(|seeded| seeded.set(seed.map(|seed| (seed, 0))));
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::util::rng::Rng;

    fn draws() -> Vec<u64> {
        let (mut first, mut second) = (jitter(), jitter());
        (0..4)
            .flat_map(|_| [first.next_u64(), second.next_u64()])
            .collect()
    }

    #[test]
    fn a_seeded_thread_draws_the_same_numbers_and_an_unseeded_one_does_not() {
        seed_this_thread(Some(7));
        let seeded = draws();
        seed_this_thread(Some(7));
        assert_eq!(draws(), seeded, "same seed, same draws");
        seed_this_thread(Some(8));
        assert_ne!(draws(), seeded, "another seed, other draws");
        seed_this_thread(None);
        assert_ne!(draws(), draws(), "random sources differ");
        let mut one = jitter();
        assert_ne!(one.next_u64(), one.next_u64());
    }
}
