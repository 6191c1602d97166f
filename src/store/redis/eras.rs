//! [`RedisEraStore`]: what each server turned out to speak, shared by
//! replicas, so a replica started after another has learnt a server's era
//! (or its remembered `server/discover`) sends no probe for it.
//!
//! One value per server, `PREFIX:era:SHA256(EraCache key)`, sealed like
//! the tokens (a remembered private discover result is the server's word
//! for one principal). Entries do not expire: a remembered discover carries
//! its own expiry, and a verdict that turns out stale is dropped by the
//! connection that found it so.

use std::fmt;

use futures_util::future::BoxFuture;

use super::connection::Connection;
use crate::store::StoreError;
use crate::store::{EraStore, Verdict};

/// Verdicts shared through Redis.
///
/// ```no_run
/// use mcp_connect::era_cache::EraCache;
/// use mcp_connect::store::redis::{RedisStores, SealingKey};
///
/// # fn run(key: &[u8]) -> Result<(), Box<dyn std::error::Error>> {
/// let redis = RedisStores::new(&std::env::var("REDIS_URL")?, "billing", SealingKey::from_bytes(key)?)?;
/// let eras = EraCache::new().with_store(redis.eras());
/// # drop(eras); Ok(()) }
/// ```
pub struct RedisEraStore {
    redis: Connection,
}

impl RedisEraStore {
    /// The store over `redis` ([`RedisStores::eras`](super::RedisStores::eras)).
    pub(super) fn over(redis: Connection) -> Self {
        RedisEraStore { redis }
    }
}

impl EraStore for RedisEraStore {
    fn get<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<Option<Verdict>, StoreError>> {
        Box::pin(async move { self.redis.get_json(&self.redis.key("era", key)).await })
    }

    fn put<'a>(
        &'a self,
        key: &'a str,
        verdict: &'a Verdict,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            self.redis
                .set_json(&self.redis.key("era", key), verdict, None)
                .await
        })
    }

    fn remove<'a>(&'a self, key: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let place = self.redis.key("era", key);
            self.redis
                .query(redis::cmd("DEL").arg(&place).clone())
                .await
        })
    }
}

impl fmt::Debug for RedisEraStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisEraStore")
            .field("redis", &self.redis)
            .finish()
    }
}
