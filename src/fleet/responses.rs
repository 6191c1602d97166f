//! [`RedisResponseStore`]: the SEP-2549 response cache shared by replicas,
//! so a listing one replica fetched serves the others for as long as the
//! server said it is fresh.
//!
//! Each entry is `PREFIX:resp:S:M:P:C` (S, M, P the SHA-256 of the server,
//! the method and the canonical params; C the authorization context's
//! fingerprint, or `-` for a public result), sealed, and expires from Redis
//! when the server said it goes stale. An invalidation deletes the keys
//! under its server, method and (for a resource) params, every context, by
//! `SCAN`. Every failure is a miss, as the trait asks.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

use super::connection::{hex, unix_ms, Connection};
use super::seal::SealingKey;
use crate::auth::StoreError;
use crate::response_cache::{CacheKey, CachedResult, Invalidation, ResponseStore};
use crate::store_health::StoreHealth;

/// Keys one invalidation looks at, at most: past it the rest expire by
/// their own time.
const SCAN_LIMIT: usize = 100_000;

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
    /// A store at `url`, its keys under `prefix`, its values sealed with
    /// `key` (see [`RedisTokenStore::new`](super::RedisTokenStore::new)).
    pub fn new(url: &str, prefix: impl Into<String>, key: SealingKey) -> Result<Self, StoreError> {
        Self::open(url, prefix.into(), Some(key))
    }

    /// A store whose values are kept in clear.
    pub fn in_clear(url: &str, prefix: impl Into<String>) -> Result<Self, StoreError> {
        Self::open(url, prefix.into(), None)
    }

    fn open(url: &str, prefix: String, key: Option<SealingKey>) -> Result<Self, StoreError> {
        Ok(RedisResponseStore {
            redis: Connection::open(url, prefix.clone(), key)?,
            prefix,
            health: StoreHealth::new("responses"),
        })
    }

    /// How long one Redis operation may take (500 ms by default).
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.redis.timeout = timeout;
        self
    }

    /// `PREFIX:resp:S:M:` and what follows it.
    fn scope(&self, server: &str, method: &str) -> String {
        format!(
            "{}:resp:{}:{}:",
            self.prefix,
            hex(&Sha256::digest(server)),
            hex(&Sha256::digest(method))
        )
    }

    fn key(&self, key: &CacheKey) -> String {
        format!(
            "{}{}:{}",
            self.scope(&key.server, &key.method),
            hex(&Sha256::digest(key.params.as_bytes())),
            key.context.as_deref().unwrap_or("-")
        )
    }

    async fn fetch(&self, key: &CacheKey) -> Result<Option<CachedResult>, StoreError> {
        let entry: Option<Entry> = self.redis.get_json(&self.key(key)).await?;
        Ok(entry.map(|entry| {
            CachedResult::new(
                Arc::from(entry.result),
                UNIX_EPOCH + Duration::from_millis(entry.expires_ms),
            )
        }))
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
        self.redis
            .set_json(&self.key(key), &entry, Some(expires_ms))
            .await
    }

    async fn drop_matching(&self, pattern: String) -> Result<(), StoreError> {
        let mut cursor: u64 = 0;
        let mut seen = 0;
        loop {
            let (next, keys): (u64, Vec<String>) = self
                .redis
                .query(
                    redis::cmd("SCAN")
                        .arg(cursor)
                        .arg("MATCH")
                        .arg(&pattern)
                        .arg("COUNT")
                        .arg(500)
                        .clone(),
                )
                .await?;
            seen += keys.len();
            if !keys.is_empty() {
                let _: u64 = self
                    .redis
                    .query(redis::cmd("DEL").arg(&keys).clone())
                    .await?;
            }
            if next == 0 || seen >= SCAN_LIMIT {
                return Ok(());
            }
            cursor = next;
        }
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
            let mut pattern = self.scope(server, method);
            match params {
                Some(params) => {
                    pattern.push_str(&hex(&Sha256::digest(params.as_bytes())));
                    pattern.push_str(":*");
                }
                None => pattern.push('*'),
            }
            let _ = self
                .health
                .observe("invalidate", self.drop_matching(pattern).await);
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
