//! [`RedisOwnerStore`]: which replica holds each session, shared by the
//! replicas, so one that receives a request for a session another gave out
//! hands it to that one.
//!
//! One value per session, `PREFIX:owner:SHA256(session id)` (the id, a
//! bearer secret, is never in Redis), holding the owner's address sealed
//! like the tokens: a replica hands requests and their credentials to the
//! address it reads, so whoever may write to Redis without the key cannot
//! pick it. Each entry expires with the claim's `PX`.

use std::fmt;
use std::time::Duration;

use futures_util::future::BoxFuture;

use super::connection::Connection;
use crate::store::{OwnerStore, StoreError};

/// Session owners shared through Redis.
///
/// ```no_run
/// use mcp_connect::store::redis::{RedisStores, SealingKey};
///
/// # fn run(key: &[u8]) -> Result<(), Box<dyn std::error::Error>> {
/// let redis = RedisStores::new(&std::env::var("REDIS_URL")?, "gateway", SealingKey::from_bytes(key)?)?;
/// let owners = redis.owners();
/// # drop(owners); Ok(()) }
/// ```
pub struct RedisOwnerStore {
    redis: Connection,
}

impl RedisOwnerStore {
    /// The store over `redis` ([`RedisStores::owners`](super::RedisStores::owners)).
    pub(super) fn over(redis: Connection) -> Self {
        RedisOwnerStore { redis }
    }
}

impl OwnerStore for RedisOwnerStore {
    fn claim<'a>(
        &'a self,
        session: &'a str,
        owner: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let place = self.redis.key("owner", session);
            let ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1);
            let sealed = self.redis.seal(&place, owner.as_bytes());
            let set = redis::cmd("SET")
                .arg(&place)
                .arg(sealed)
                .arg("PX")
                .arg(ms)
                .clone();
            self.redis.query(set).await
        })
    }

    fn owner<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        Box::pin(async move {
            let place = self.redis.key("owner", session);
            let value: Option<Vec<u8>> = self
                .redis
                .query(redis::cmd("GET").arg(&place).clone())
                .await?;
            value
                .map(|v| String::from_utf8(self.redis.unseal(&place, &v)?).map_err(StoreError::new))
                .transpose()
        })
    }

    fn release<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let place = self.redis.key("owner", session);
            self.redis
                .query(redis::cmd("DEL").arg(&place).clone())
                .await
        })
    }
}

impl fmt::Debug for RedisOwnerStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisOwnerStore")
            .field("redis", &self.redis)
            .finish()
    }
}
