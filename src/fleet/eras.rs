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
use std::time::Duration;

use futures_util::future::BoxFuture;

use super::connection::Connection;
use super::seal::SealingKey;
use crate::auth::StoreError;
use crate::era_cache::{EraStore, Verdict};

/// Verdicts shared through Redis.
///
/// ```no_run
/// use mcp_connect::era_cache::EraCache;
/// use mcp_connect::fleet::{RedisEraStore, SealingKey};
///
/// # fn run(key: &[u8]) -> Result<(), Box<dyn std::error::Error>> {
/// let eras = EraCache::new().with_store(RedisEraStore::new(
///     &std::env::var("REDIS_URL")?,
///     "billing",
///     SealingKey::from_bytes(key)?,
/// )?);
/// # drop(eras); Ok(()) }
/// ```
pub struct RedisEraStore {
    redis: Connection,
}

impl RedisEraStore {
    /// A store at `url`, its keys under `prefix`, its values sealed with
    /// `key` (see [`RedisTokenStore::new`](super::RedisTokenStore::new)).
    pub fn new(url: &str, prefix: impl Into<String>, key: SealingKey) -> Result<Self, StoreError> {
        Connection::open(url, prefix.into(), Some(key)).map(|redis| RedisEraStore { redis })
    }

    /// A store whose values are kept in clear.
    pub fn in_clear(url: &str, prefix: impl Into<String>) -> Result<Self, StoreError> {
        Connection::open(url, prefix.into(), None).map(|redis| RedisEraStore { redis })
    }

    /// How long one Redis operation may take (500 ms by default).
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.redis.timeout = timeout;
        self
    }

    /// Connects to Redis (logging in, and checking that the sealing key is
    /// the one the other replicas under this prefix use) and pings it: at
    /// start-up, a store that cannot work as configured is found before
    /// anything needs it ([`StoreError::is_configuration`]); a Redis that
    /// is down is an error that is not.
    pub async fn check(&self) -> Result<(), StoreError> {
        self.redis.check().await
    }

    /// Also trusts the CAs in `pem` (a private CA) for a `rediss://` URL,
    /// beside the default roots (Mozilla's; with `native-roots` the
    /// platform's), as [`HttpClientBuilder::add_root_certificates_pem`](crate::transport::HttpClientBuilder::add_root_certificates_pem)
    /// does for servers.
    #[cfg(feature = "rustls")]
    pub fn with_root_certificates_pem(
        mut self,
        pem: &[u8],
    ) -> Result<Self, crate::transport::TlsConfigError> {
        self.redis.add_root_certificates_pem(pem)?;
        Ok(self)
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
