//! Every store of this crate in one wing: what a process keeps, or shares
//! with its replicas, beyond one connection.
//!
//! | store | keeps | in memory | in a file | shared (`redis`) |
//! |---|---|---|---|---|
//! | [`TokenStore`] | OAuth tokens, refresh leases, registrations | [`MemoryTokenStore`] | [`FileTokenStore`] | [`RedisTokenStore`](redis::RedisTokenStore) |
//! | [`EraStore`] | what each server speaks ([`Verdict`]) | the [`EraCache`](crate::era_cache::EraCache) itself | [`EraCache::to_json`](crate::era_cache::EraCache::to_json) | [`RedisEraStore`](redis::RedisEraStore) |
//! | [`ResponseStore`] | cached results ([`CacheKey`], [`CachedResult`]) | [`MemoryResponseStore`] | - | [`RedisResponseStore`](redis::RedisResponseStore) |
//! | [`ListingStore`] | a group's remembered listings | the [`RememberedListings`](crate::group::RememberedListings) themselves | [`RememberedListings::file`](crate::group::RememberedListings::file) | [`RedisListingStore`](redis::RedisListingStore) |
//! | [`BucketStore`] | token buckets: what each caller may still do (a gateway's quotas) | [`MemoryBuckets`] | - | [`RedisBucketStore`](redis::RedisBucketStore) |
//! | [`OwnerStore`] | which replica holds a session it gave out (a gateway's) | [`MemoryOwnerStore`] | - | [`RedisOwnerStore`](redis::RedisOwnerStore) |
//!
//! Here too is what they all share: the one error a store fails with
//! ([`StoreError`]), how a failing store is said (once per outage), and
//! how a file of secrets is written. The wing depends on none of the
//! modules that use a store (auth, the caches, the group): what each store
//! keeps is defined here, and what it means stays there.

mod buckets;
mod eras;
mod file;
mod health;
mod listings;
mod owners;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub mod redis;
mod response_memory;
mod responses;
mod token_file;
mod token_key;
mod token_store;
mod tokens;

pub use buckets::{BucketStore, MemoryBuckets, Rate, RateError, Taken};
pub use eras::{EraStore, RememberedDiscover, Verdict};
pub(crate) use file::write_private;
pub(crate) use health::StoreHealth;
pub use listings::{ListingStore, StoredListings};
pub use owners::{MemoryOwnerStore, OwnerStore};
pub use response_memory::MemoryResponseStore;
pub(crate) use responses::canonical;
pub use responses::{CacheKey, CachedResult, Invalidation, ResponseStore, MAX_TTL};
pub use token_file::FileTokenStore;
pub use token_key::{LeaseKind, TokenKey};
pub use token_store::{Lease, MemoryTokenStore, Registration, TokenStore};
pub(crate) use tokens::TokenResponse;
#[cfg(feature = "redis")]
pub(crate) use tokens::LATEST_EXPIRY;
pub use tokens::{Tokens, REFRESH_AHEAD};

/// A store failed. The source says why (for [`FileTokenStore`], the I/O
/// error; for a Redis store, what Redis or TLS said); never a value.
///
/// Two kinds, told apart by [`is_configuration`](Self::is_configuration):
/// a store that is down or slow fails for a while and is passed over (the
/// process goes on with what it holds), while one that cannot work as
/// configured (a refused login, an ACL that denies a command, an
/// untrusted certificate, a sealing key that opens nothing the fleet
/// wrote) fails until someone changes the configuration, and is reported
/// as such: the token store's fails the authorization
/// ([`AuthError::Store`](crate::auth::AuthError::Store), a configuration
/// failure, never retried).
#[derive(Debug, thiserror::Error)]
#[error("{}", if self.configuration { "the store cannot be used as configured" } else { "the token store failed" })]
pub struct StoreError {
    #[source]
    source: crate::transport::error::BoxError,
    configuration: bool,
}

impl StoreError {
    /// A failure that may pass (the store down, slow, or answering
    /// something unexpected).
    pub fn new(source: impl Into<crate::transport::error::BoxError>) -> Self {
        StoreError {
            source: source.into(),
            configuration: false,
        }
    }

    /// A failure that lasts until the configuration changes.
    pub fn configuration(source: impl Into<crate::transport::error::BoxError>) -> Self {
        StoreError {
            source: source.into(),
            configuration: true,
        }
    }

    /// Whether the store cannot work as configured (see the type's docs).
    pub fn is_configuration(&self) -> bool {
        self.configuration
    }
}

impl health::StoreFailure for StoreError {
    fn is_configuration(&self) -> bool {
        self.configuration
    }
}

impl From<std::io::Error> for StoreError {
    fn from(error: std::io::Error) -> Self {
        StoreError::new(error)
    }
}
