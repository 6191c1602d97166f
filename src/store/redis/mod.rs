//! What replicas share (feature `redis`): stores that implement this
//! crate's store traits over Redis, so a fleet of services authorizes
//! once, refreshes once, and learns each server once.
//!
//! - [`RedisTokenStore`]: tokens per protected resource, sealed
//!   (XChaCha20-Poly1305 under the application's [`SealingKey`]; never in
//!   clear unless the application says so), with the refresh lease and the
//!   compare-and-set that [`TokenStore`](crate::store::TokenStore) asks for,
//!   each one Redis command or script, so one replica refreshes and the
//!   others use its tokens.
//! - [`RedisEraStore`]: what each server speaks, and its remembered
//!   `server/discover`, for [`EraCache::with_store`](crate::era_cache::EraCache::with_store):
//!   a replica started after another learnt a server sends it no probe.
//! - [`RedisResponseStore`]: the SEP-2549 response cache's entries, for
//!   [`ResponseCache::with_store`](crate::response_cache::ResponseCache::with_store):
//!   a listing one replica fetched serves the others while it is fresh.
//! - [`RedisListingStore`]: the listings lazy servers start from, for
//!   [`RememberedListings::from_store`](crate::group::RememberedListings::from_store):
//!   a replica lists a server another replica reached, without connecting.
//! - [`RedisOwnerStore`]: which replica holds each session a gateway gave
//!   out, so the one a load balancer picks hands the request to it.
//!
//! Every Redis operation is bounded ([`RedisStores::with_timeout`]): a
//! Redis that is down or slow is a [`StoreError`]
//! after at most that long, and the authorization stage then goes on with
//! the tokens its process holds. An outage is one warning per store when
//! it starts and one info event when it ends (target `mcp_connect::store`),
//! and tokens obtained during it are written to Redis once it answers,
//! never over newer ones. A Redis that answers something else than
//! what was stored (another type, a value that does not open) is a
//! `StoreError` too, never a panic.
//!
//! The `redis` crate speaks RESP over one multiplexed connection per store,
//! replaced when it breaks. `rediss://` (with the `rustls` feature) is TLS
//! made here with the HTTP client's rustls settings, ring and its roots
//! (Mozilla's, the platform's with `native-roots`, a private CA through
//! `with_root_certificates_pem`), the stream then handed to the redis
//! crate: its own TLS features would bring a second root policy.

mod buckets;
mod connection;
mod eras;
mod listings;
mod owners;
mod responses;
mod seal;
mod token_writes;
mod tokens;

use std::time::Duration;

pub use buckets::RedisBucketStore;
pub use connection::StoreConfigError;
pub use eras::RedisEraStore;
pub use listings::RedisListingStore;
pub use owners::RedisOwnerStore;
pub use responses::RedisResponseStore;
pub use seal::{SealError, SealingKey};
pub use tokens::RedisTokenStore;

use crate::store::StoreError;
use connection::Connection;

/// Opens the Redis stores of one application: where Redis is, the prefix
/// its keys go under, the key that seals values, how long one operation may
/// take, and a private CA for `rediss://`.
///
/// ```no_run
/// use std::time::Duration;
/// use mcp_connect::store::redis::{RedisStores, SealingKey};
///
/// # async fn run(key: &[u8]) -> Result<(), Box<dyn std::error::Error>> {
/// // The password comes in the URL (or REDIS_URL); it is never printed.
/// let redis = RedisStores::new(&std::env::var("REDIS_URL")?, "billing", SealingKey::from_bytes(key)?)?
///     .with_timeout(Duration::from_millis(250));
/// redis.check().await?; // at start-up: a wrong password or key is found now
/// let (tokens, eras) = (redis.tokens(), redis.eras());
/// # drop((tokens, eras)); Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisStores {
    url: String,
    prefix: String,
    sealing: Option<SealingKey>,
    timeout: Option<Duration>,
    /// Private CAs for `rediss://`, checked when given.
    #[cfg(feature = "rustls")]
    roots: Vec<Vec<u8>>,
}

impl RedisStores {
    /// The stores at `url` (`redis://[:PASSWORD@]HOST:PORT[/DB]`, or
    /// `rediss://`), their keys under `prefix`, their values sealed with
    /// `key`. Nothing is sent until a store is first used, so a Redis that
    /// is down at start costs nothing but a warning then.
    pub fn new(url: &str, prefix: impl Into<String>, key: SealingKey) -> Result<Self, StoreError> {
        Self::open(url, prefix.into(), Some(key))
    }

    /// Stores whose values are kept in clear: only for a Redis the
    /// application trusts with its tokens as they are.
    pub fn in_clear(url: &str, prefix: impl Into<String>) -> Result<Self, StoreError> {
        Self::open(url, prefix.into(), None)
    }

    fn open(url: &str, prefix: String, sealing: Option<SealingKey>) -> Result<Self, StoreError> {
        // The URL is checked here, once: each store opened later reads it
        // the same way.
        Connection::open(url, prefix.clone(), None)?;
        Ok(RedisStores {
            url: url.to_owned(),
            prefix,
            sealing,
            timeout: None,
            #[cfg(feature = "rustls")]
            roots: Vec::new(),
        })
    }

    /// How long one Redis operation may take (500 ms by default): past it
    /// the operation is a `StoreError`, and what uses the store goes on
    /// without it.
    #[must_use]
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
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
        crate::transport::tls_config::TlsSettings::default().add_roots(pem, false)?;
        self.roots.push(pem.to_vec());
        Ok(self)
    }

    /// A connection as configured.
    fn connection(&self) -> Connection {
        let mut redis = Connection::open(&self.url, self.prefix.clone(), self.sealing.clone())
            .expect("the URL was read when the stores were opened");
        if let Some(timeout) = self.timeout {
            redis.timeout = timeout;
        }
        #[cfg(feature = "rustls")]
        for pem in &self.roots {
            redis
                .add_root_certificates_pem(pem)
                .expect("the CA was read when it was given");
        }
        redis
    }

    /// Tokens per protected resource, for
    /// [`Authorization::with_token_store`](crate::auth::Authorization::with_token_store).
    pub fn tokens(&self) -> RedisTokenStore {
        RedisTokenStore::over(self.connection())
    }

    /// What each server speaks, for
    /// [`EraCache::with_store`](crate::era_cache::EraCache::with_store).
    pub fn eras(&self) -> RedisEraStore {
        RedisEraStore::over(self.connection())
    }

    /// Remembered listings, for
    /// [`RememberedListings::from_store`](crate::group::RememberedListings::from_store).
    pub fn listings(&self) -> RedisListingStore {
        RedisListingStore::over(self.connection())
    }

    /// Which replica holds each session (a gateway's), for
    /// [`OwnerStore`](crate::store::OwnerStore).
    pub fn owners(&self) -> RedisOwnerStore {
        RedisOwnerStore::over(self.connection())
    }

    /// Token buckets (a gateway's quotas), for
    /// [`BucketStore`](crate::store::BucketStore).
    pub fn buckets(&self) -> RedisBucketStore {
        RedisBucketStore::over(self.connection())
    }

    /// Cached results, for
    /// [`ResponseCache::with_store`](crate::response_cache::ResponseCache::with_store).
    pub fn responses(&self) -> RedisResponseStore {
        RedisResponseStore::over(self.connection(), self.prefix.clone())
    }

    /// Connects to Redis (logging in, and checking that the sealing key is
    /// the one the other replicas under this prefix use) and pings it: at
    /// start-up, a store that cannot work as configured is found before
    /// anything needs it ([`StoreError::is_configuration`]); a Redis that
    /// is down is an error that is not.
    pub async fn check(&self) -> Result<(), StoreError> {
        self.connection().check().await
    }
}

impl std::fmt::Debug for RedisStores {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The URL may hold a password: never shown.
        f.debug_struct("RedisStores")
            .field("prefix", &self.prefix)
            .field("sealed", &self.sealing.is_some())
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}
