//! [`RedisBucketStore`]: token buckets shared by the replicas of a
//! gateway, so a caller's quota is one quota whichever replica answers.
//!
//! One value per bucket, `PREFIX:bucket:SHA256(key, rate)` (no principal
//! or tool in clear), holding the Unix millisecond at which the bucket is
//! full again (the generic cell rate algorithm: a take moves it one
//! token's time later). Each take is one Lua script reading Redis's own
//! clock, so two replicas never race a read against a write and their
//! clocks never disagree; the value expires when the bucket is full.

use std::fmt;
use std::time::Duration;

use futures_util::future::BoxFuture;

use super::connection::Connection;
use crate::store::{BucketStore, Rate, StoreError, Taken};

/// KEYS[1] the bucket; ARGV[1] one token's milliseconds, ARGV[2] the
/// period's. Returns 0 when a token was taken, else the milliseconds until
/// one is back.
const TAKE: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local per = tonumber(ARGV[1])
local period = tonumber(ARGV[2])
local full_at = tonumber(redis.call('GET', KEYS[1]) or now)
if full_at < now then full_at = now end
local spent = full_at + per - now
if spent > period then return spent - period end
redis.call('SET', KEYS[1], full_at + per, 'PX', spent)
return 0
";

/// Token buckets shared through Redis
/// ([`RedisStores::buckets`](super::RedisStores::buckets)).
pub struct RedisBucketStore {
    redis: Connection,
}

impl RedisBucketStore {
    pub(super) fn over(redis: Connection) -> Self {
        RedisBucketStore { redis }
    }
}

impl BucketStore for RedisBucketStore {
    fn take<'a>(&'a self, key: &'a str, rate: Rate) -> BoxFuture<'a, Result<Taken, StoreError>> {
        Box::pin(async move {
            let place = self.redis.key("bucket", &format!("{key}\0{rate}"));
            let period = u64::try_from(rate.period().as_millis()).unwrap_or(u64::MAX);
            let per = (period / u64::from(rate.count())).max(1);
            let (per, period) = (per.to_string(), period.to_string());
            let args: [&[u8]; 2] = [per.as_bytes(), period.as_bytes()];
            let wait: u64 = self.redis.script(TAKE, &place, &args).await?;
            Ok(match wait {
                0 => Taken::Granted,
                ms => Taken::Refused {
                    retry_after: Duration::from_millis(ms),
                },
            })
        })
    }
}

impl fmt::Debug for RedisBucketStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisBucketStore")
            .field("redis", &self.redis)
            .finish()
    }
}
