//! Instants plus caller-chosen durations, without overflow: the one place
//! this workspace adds a duration it did not choose to an instant.
//!
//! A budget of `Duration::MAX` (meaning "no limit") must not panic when it
//! is added to `Instant::now()`: such sums saturate at a far future instant,
//! as tokio's own `timeout` does.

use std::time::Duration;

use tokio::time::Instant;

/// About thirty years: far enough to mean "never", small enough to add.
const FAR: Duration = Duration::from_secs(86_400 * 365 * 30);

/// `start + by`, or a far-future instant when that would overflow.
pub fn after(start: Instant, by: Duration) -> Instant {
    start.checked_add(by).unwrap_or_else(|| start + FAR.min(by))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_durations_saturate_instead_of_panicking() {
        let now = Instant::now();
        assert_eq!(
            after(now, Duration::from_secs(1)),
            now + Duration::from_secs(1)
        );
        assert!(after(now, Duration::MAX) > now + Duration::from_secs(86_400 * 365));
    }
}
