//! [`RedisResponseStore`]: the SEP-2549 response cache shared by replicas,
//! so a listing one replica fetched serves the others for as long as the
//! server said it is fresh.
//!
//! Each entry is `PREFIX:resp:S:M:P:C:G1.G2` (S, M, P the SHA-256 of the
//! server, the method and the canonical params; C the authorization
//! context's fingerprint, or `-` for a public result; G1 and G2 the
//! generations of `PREFIX:resp:S:M:gen` and `PREFIX:resp:S:M:P:gen`),
//! sealed, and expires from Redis when the server said it goes stale. An
//! invalidation is one `INCR` of the generation it covers (the method's,
//! or one resource's): the entries under the old generation are never read
//! again and expire by their own time. No keyspace scan, whatever the
//! number of entries or of notifications. A generation key outlives every
//! entry written under it, so it never starts again from 0 while an old
//! entry could answer. Reads and writes are one script each. Every failure
//! is a miss, as the trait asks.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use super::connection::{hex, unix_ms, Connection};
use crate::store::StoreError;
use crate::store::StoreHealth;
use crate::store::{CacheKey, CachedResult, Invalidation, ResponseStore};

/// Reads the entry under the current generations (`ARGV[1]`, `ARGV[2]`
/// the generation keys; `KEYS[1]` the entry's key without them).
const READ: &str = r"
local g1 = redis.call('GET', ARGV[1]) or '0'
local g2 = redis.call('GET', ARGV[2]) or '0'
return redis.call('GET', KEYS[1] .. ':' .. g1 .. '.' .. g2)
";

/// Writes the entry (`ARGV[3]`, expiring at `ARGV[4]` Unix ms) under the
/// current generations, and keeps each existing generation key a minute
/// longer than the entry.
const WRITE: &str = r"
local g1 = redis.call('GET', ARGV[1]) or '0'
local g2 = redis.call('GET', ARGV[2]) or '0'
redis.call('SET', KEYS[1] .. ':' .. g1 .. '.' .. g2, ARGV[3], 'PXAT', ARGV[4])
local keep = tonumber(ARGV[4]) + 60000
for i = 1, 2 do
  if redis.call('PTTL', ARGV[i]) >= 0 then redis.call('PEXPIREAT', ARGV[i], keep, 'GT') end
end
return 1
";

/// Moves a generation on (`KEYS[1]`), kept at least `ARGV[1]` ms.
const INVALIDATE: &str = r"
redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < tonumber(ARGV[1]) then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return 1
";

/// Cached results shared through Redis, for
/// [`ResponseCache::with_store`](crate::response_cache::ResponseCache::with_store).
pub struct RedisResponseStore {
    redis: Connection,
    prefix: String,
    /// The cache sees a failure as a miss: the store says it, once per
    /// outage.
    health: StoreHealth,
}

#[derive(Serialize, Deserialize)]
struct Entry {
    result: String,
    expires_ms: u64,
}

impl RedisResponseStore {
    /// The store over `redis` ([`RedisStores::responses`](super::RedisStores::responses)).
    pub(super) fn over(redis: Connection, prefix: String) -> Self {
        RedisResponseStore {
            redis,
            prefix,
            health: StoreHealth::new("responses"),
        }
    }

    /// `PREFIX:resp:S:M:`.
    fn scope(&self, server: &str, method: &str) -> String {
        format!(
            "{}:resp:{}:{}:",
            self.prefix,
            hex(&Sha256::digest(server)),
            hex(&Sha256::digest(method))
        )
    }

    /// The method's generation key and the params' one.
    fn generations(&self, server: &str, method: &str, params: &str) -> (String, String) {
        let scope = self.scope(server, method);
        let params = hex(&Sha256::digest(params.as_bytes()));
        (format!("{scope}gen"), format!("{scope}{params}:gen"))
    }

    /// The entry's key without its generations (also what its seal is
    /// bound to), and its two generation keys: the server, method and
    /// params hashed once for all three.
    fn places(&self, key: &CacheKey) -> (String, String, String) {
        let scope = self.scope(&key.server, &key.method);
        let params = hex(&Sha256::digest(key.params.as_bytes()));
        let context = key.context.as_deref().unwrap_or("-");
        (
            format!("{scope}{params}:{context}"),
            format!("{scope}gen"),
            format!("{scope}{params}:gen"),
        )
    }

    async fn fetch(&self, key: &CacheKey) -> Result<Option<CachedResult>, StoreError> {
        let (place, method, params) = self.places(key);
        let sealed: Option<Vec<u8>> = self
            .redis
            .script(READ, &place, &[method.as_bytes(), params.as_bytes()])
            .await?;
        let Some(sealed) = sealed else {
            return Ok(None);
        };
        let entry: Entry = serde_json::from_slice(&self.redis.unseal(&place, &sealed)?)
            .map_err(StoreError::new)?;
        Ok(Some(CachedResult::new(
            Arc::from(entry.result),
            UNIX_EPOCH + Duration::from_millis(entry.expires_ms),
        )))
    }

    async fn store(&self, key: &CacheKey, value: &CachedResult) -> Result<(), StoreError> {
        if value.expires <= SystemTime::now() {
            return Ok(());
        }
        let expires_ms = unix_ms(value.expires);
        let entry = Entry {
            result: value.result.to_string(),
            expires_ms,
        };
        let (place, method, params) = self.places(key);
        let json = serde_json::to_vec(&entry).map_err(StoreError::new)?;
        let sealed = self.redis.seal(&place, &json);
        let expires = expires_ms.to_string();
        let _: i64 = self
            .redis
            .script(
                WRITE,
                &place,
                &[
                    method.as_bytes(),
                    params.as_bytes(),
                    &sealed,
                    expires.as_bytes(),
                ],
            )
            .await?;
        Ok(())
    }

    async fn invalidate_generation(&self, generation: &str) -> Result<(), StoreError> {
        let keep = (crate::store::MAX_TTL.as_millis() as u64 + 60_000).to_string();
        let _: i64 = self
            .redis
            .script(INVALIDATE, generation, &[keep.as_bytes()])
            .await?;
        Ok(())
    }
}

impl ResponseStore for RedisResponseStore {
    fn get<'a>(&'a self, key: &'a CacheKey) -> BoxFuture<'a, Option<CachedResult>> {
        Box::pin(async move { self.health.observe("read", self.fetch(key).await).flatten() })
    }

    fn put(&self, key: CacheKey, value: CachedResult) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            let _ = self.health.observe("write", self.store(&key, &value).await);
        })
    }

    fn invalidate<'a>(&'a self, server: &'a str, what: &'a Invalidation) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            let (method, params) = what.scope();
            let (of_method, of_params) =
                self.generations(server, method, params.as_deref().unwrap_or(""));
            let generation = if params.is_some() {
                of_params
            } else {
                of_method
            };
            let _ = self
                .health
                .observe("invalidate", self.invalidate_generation(&generation).await);
        })
    }
}

impl fmt::Debug for RedisResponseStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisResponseStore")
            .field("redis", &self.redis)
            .finish()
    }
}
