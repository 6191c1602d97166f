//! How many fresh attempts, how far apart, and from which budget.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tower::retry::budget::Budget;
use tower::util::rng::Rng;

/// Exponential backoff, with full jitter unless turned off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The base delay before the second attempt.
    base: Duration,
    /// The largest delay.
    max: Duration,
    /// Whether each delay is drawn uniformly below its ceiling (full
    /// jitter, the default) or is the ceiling itself. Without jitter,
    /// clients that failed together retry together, in lock-step; it exists
    /// to measure what jitter saves and for deterministic tests.
    jitter: bool,
}

impl Backoff {
    /// No delay between attempts.
    pub const NONE: Backoff = Backoff::new(Duration::ZERO, Duration::ZERO);

    /// Full-jitter backoff from `base`, doubling up to `max`.
    pub const fn new(base: Duration, max: Duration) -> Backoff {
        Backoff {
            base,
            max,
            jitter: true,
        }
    }

    /// This backoff with jitter off: every delay is its ceiling.
    #[must_use]
    pub const fn without_jitter(self) -> Backoff {
        Backoff {
            jitter: false,
            ..self
        }
    }

    /// The base delay before the second attempt.
    pub const fn base(&self) -> Duration {
        self.base
    }

    /// The largest delay.
    pub const fn max(&self) -> Duration {
        self.max
    }

    /// Whether delays are drawn below their ceiling (full jitter).
    pub const fn jitter(&self) -> bool {
        self.jitter
    }

    /// The delay before the attempt that follows `failed` failed attempts:
    /// uniform in `[0, min(max, base * 2^(failed - 1))]`, or that ceiling
    /// without jitter.
    pub fn delay(&self, failed: u32, rng: &mut impl Rng) -> Duration {
        let ceiling = self
            .base
            .checked_mul(1u32 << failed.saturating_sub(1).min(20))
            .unwrap_or(self.max)
            .min(self.max);
        match self.jitter {
            true => ceiling.mul_f64(rng.next_f64()),
            false => ceiling,
        }
    }
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff::new(Duration::from_millis(100), Duration::from_secs(2))
    }
}

/// The recovery policy.
///
/// Cloning a policy shares its budget but never its randomness: every
/// establishment draws its backoff from a generator of its own
/// ([`jitter`](crate::jitter::jitter)), so connections that failed
/// together, even through one cloned policy, wait different delays instead
/// of returning in lock-step.
#[derive(Clone)]
pub struct RecoveryPolicy {
    pub(crate) max_attempts: u32,
    pub(crate) backoff: Backoff,
    pub(crate) budget: Option<Arc<dyn Budget + Send + Sync>>,
}

impl RecoveryPolicy {
    /// Up to three attempts (as configured, then two fresh ones), the default
    /// backoff, no shared budget.
    pub fn new() -> Self {
        RecoveryPolicy {
            max_attempts: 3,
            backoff: Backoff::default(),
            budget: None,
        }
    }

    /// Exactly one attempt.
    pub fn disabled() -> Self {
        RecoveryPolicy::new().with_max_attempts(1)
    }

    /// At most `attempts` attempts in all (at least 1).
    #[must_use]
    pub fn with_max_attempts(mut self, attempts: u32) -> Self {
        self.max_attempts = attempts.max(1);
        self
    }

    /// The backoff between attempts.
    #[must_use]
    pub fn with_backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// A budget shared by every connection using this policy (for example
    /// `tower::retry::budget::TpsBudget`): each establishment deposits, each
    /// fresh attempt withdraws, and an empty budget stops recovery.
    #[must_use]
    pub fn with_budget(mut self, budget: Arc<dyn Budget + Send + Sync>) -> Self {
        self.budget = Some(budget);
        self
    }

    /// The attempt cap.
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }
}

impl Default for RecoveryPolicy {
    fn default() -> Self {
        RecoveryPolicy::new()
    }
}

impl fmt::Debug for RecoveryPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecoveryPolicy")
            .field("max_attempts", &self.max_attempts)
            .field("backoff", &self.backoff)
            .field("budget", &self.budget.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tower::util::rng::HasherRng;

    #[test]
    fn full_jitter_stays_within_the_growing_ceiling() {
        let backoff = Backoff::new(Duration::from_millis(100), Duration::from_millis(350));
        let mut rng = HasherRng::default();
        for _ in 0..200 {
            assert!(backoff.delay(1, &mut rng) <= Duration::from_millis(100));
            assert!(backoff.delay(2, &mut rng) <= Duration::from_millis(200));
            assert!(backoff.delay(3, &mut rng) <= Duration::from_millis(350));
            assert!(backoff.delay(60, &mut rng) <= Duration::from_millis(350));
        }
        assert_eq!(Backoff::NONE.delay(3, &mut rng), Duration::ZERO);
        let fixed = backoff.without_jitter();
        assert_eq!(fixed.delay(1, &mut rng), Duration::from_millis(100));
        assert_eq!(fixed.delay(2, &mut rng), Duration::from_millis(200));
        assert_eq!(fixed.delay(9, &mut rng), Duration::from_millis(350));
    }
}
