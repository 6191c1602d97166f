//! Token buckets ([`BucketStore`]): how a gateway counts what each caller
//! may still do. A bucket holds up to its [`Rate`]'s count and refills at
//! that count per period; a take either finds a token or says how long
//! until one is back. [`MemoryBuckets`] counts for one process; shared
//! through Redis ([`RedisBucketStore`](super::redis::RedisBucketStore),
//! feature `redis`), each take is one atomic script, so replicas never
//! race a read against a write.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::time::Instant;

use super::StoreError;

/// `count` per `period`: a bucket of `count` tokens refilled evenly over
/// the period (`10/min` lets 10 through at once, then one every 6 s).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rate {
    count: u32,
    period: Duration,
}

/// A rate could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a rate is COUNT/PERIOD with a count above 0 and a period of s, sec, m, min, h or hour (10/min)")]
pub struct RateError;

impl Rate {
    /// `count` per `period` (both at least 1).
    pub fn new(count: u32, period: Duration) -> Self {
        Rate {
            count: count.max(1),
            period: period.max(Duration::from_millis(1)),
        }
    }

    /// How many at once.
    pub fn count(&self) -> u32 {
        self.count
    }

    /// Over how long they refill.
    pub fn period(&self) -> Duration {
        self.period
    }

    /// The time one token takes to come back.
    fn per_token(&self) -> Duration {
        self.period / self.count
    }
}

impl std::str::FromStr for Rate {
    type Err = RateError;

    /// `10/min`, `5/s`, `100/hour`, `3/10s`.
    fn from_str(text: &str) -> Result<Self, RateError> {
        let (count, period) = text.trim().split_once('/').ok_or(RateError)?;
        let count: u32 = count.trim().parse().map_err(|_| RateError)?;
        let period = period.trim();
        let split = period
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(period.len());
        let (times, unit) = period.split_at(split);
        let times: u64 = if times.is_empty() {
            1
        } else {
            times.parse().map_err(|_| RateError)?
        };
        let unit = match unit {
            "s" | "sec" | "second" => 1,
            "m" | "min" | "minute" => 60,
            "h" | "hour" => 3600,
            _ => return Err(RateError),
        };
        if count == 0 || times == 0 {
            return Err(RateError);
        }
        Ok(Rate::new(count, Duration::from_secs(times * unit)))
    }
}

impl fmt::Display for Rate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}s", self.count, self.period.as_secs_f64())
    }
}

/// What a take found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Taken {
    /// A token: go ahead.
    Granted,
    /// None left: the next is back after this long.
    Refused {
        /// How long until a take would succeed.
        retry_after: Duration,
    },
}

/// Buckets by key. A key names what is counted (a principal, a principal
/// and a tool, a server); a store keeps it hashed when it shares it. Each
/// take must be bounded by the store itself.
pub trait BucketStore: Send + Sync + 'static {
    /// Takes a token from `key`'s bucket of `rate` (a full one when it is
    /// new).
    fn take<'a>(&'a self, key: &'a str, rate: Rate) -> BoxFuture<'a, Result<Taken, StoreError>>;
}

impl<S: BucketStore + ?Sized> BucketStore for std::sync::Arc<S> {
    fn take<'a>(&'a self, key: &'a str, rate: Rate) -> BoxFuture<'a, Result<Taken, StoreError>> {
        (**self).take(key, rate)
    }
}

/// The buckets of one process. A bucket that has refilled is forgotten
/// once the map grows past its bound, so callers that come once cost
/// nothing for long.
#[derive(Debug, Default)]
pub struct MemoryBuckets {
    buckets: Mutex<HashMap<(String, Rate), Bucket>>,
}

/// How many buckets a map holds before the full ones are dropped.
const FORGET_ABOVE: usize = 10_000;

#[derive(Debug, Clone, Copy)]
struct Bucket {
    /// When the bucket will be full again: a token is spent by moving it
    /// one token's time later (the generic cell rate algorithm).
    full_at: Instant,
}

impl MemoryBuckets {
    /// No buckets yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The take, decided now.
    pub fn take_now(&self, key: &str, rate: Rate) -> Taken {
        let now = Instant::now();
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        if buckets.len() >= FORGET_ABOVE {
            buckets.retain(|_, bucket| bucket.full_at > now);
        }
        let bucket = (buckets.entry((key.to_owned(), rate))).or_insert(Bucket { full_at: now });
        let per = rate.per_token();
        // Full at `full_at`: the bucket holds `period - (full_at - now)`
        // worth of tokens; one more spends `per` of it.
        let from = bucket.full_at.max(now);
        let spent = from + per - now;
        if spent > rate.period {
            let retry_after = spent - rate.period;
            return Taken::Refused { retry_after };
        }
        bucket.full_at = from + per;
        Taken::Granted
    }
}

impl BucketStore for MemoryBuckets {
    fn take<'a>(&'a self, key: &'a str, rate: Rate) -> BoxFuture<'a, Result<Taken, StoreError>> {
        let taken = self.take_now(key, rate);
        Box::pin(async move { Ok(taken) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_are_read_as_users_write_them() {
        let rate = |text: &str| text.parse::<Rate>();
        assert_eq!(rate("10/min"), Ok(Rate::new(10, Duration::from_secs(60))));
        assert_eq!(rate("5/s"), Ok(Rate::new(5, Duration::from_secs(1))));
        assert_eq!(rate("3/10s"), Ok(Rate::new(3, Duration::from_secs(10))));
        assert_eq!(
            rate("100/hour"),
            Ok(Rate::new(100, Duration::from_secs(3600)))
        );
        for bad in [
            "",
            "10",
            "0/min",
            "10/0s",
            "ten/min",
            "10/fortnight",
            "10/-1s",
        ] {
            assert_eq!(rate(bad), Err(RateError), "{bad}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_bucket_lets_its_count_through_then_one_per_token_time() {
        let buckets = MemoryBuckets::new();
        let rate = Rate::new(3, Duration::from_secs(60));
        for _ in 0..3 {
            assert_eq!(buckets.take_now("alice", rate), Taken::Granted);
        }
        let refused = buckets.take_now("alice", rate);
        assert_eq!(
            refused,
            Taken::Refused {
                retry_after: Duration::from_secs(20)
            }
        );
        // Another key has its own bucket.
        assert_eq!(buckets.take_now("bob", rate), Taken::Granted);
        tokio::time::advance(Duration::from_secs(19)).await;
        assert!(matches!(
            buckets.take_now("alice", rate),
            Taken::Refused { .. }
        ));
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(buckets.take_now("alice", rate), Taken::Granted);
        assert!(matches!(
            buckets.take_now("alice", rate),
            Taken::Refused { .. }
        ));
        // A full minute refills it whole, never more.
        tokio::time::advance(Duration::from_secs(600)).await;
        for _ in 0..3 {
            assert_eq!(buckets.take_now("alice", rate), Taken::Granted);
        }
        assert!(matches!(
            buckets.take_now("alice", rate),
            Taken::Refused { .. }
        ));
    }
}
