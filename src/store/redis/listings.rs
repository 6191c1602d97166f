//! [`RedisListingStore`]: the listings lazy servers start from, shared by
//! replicas, so a replica started after another has reached a server lists
//! that server's tools without connecting to it.
//!
//! One Redis hash, `PREFIX:listings`, a field per server (its target
//! fingerprint), each value sealed like the tokens with the field as its
//! associated data (a listing a server gave one principal is that
//! principal's): read whole with one `HGETALL` when the listings are made,
//! written with one `HSET` per change.

use std::fmt;

use futures_util::future::BoxFuture;

use super::connection::Connection;
use crate::store::StoreError;
use crate::store::{ListingStore, StoredListings};

/// Remembered listings shared through Redis.
///
/// ```no_run
/// use mcp_connect::store::redis::{RedisStores, SealingKey};
/// use mcp_connect::group::{RememberedListings, ServerGroup};
///
/// # async fn run(key: &[u8]) -> Result<(), Box<dyn std::error::Error>> {
/// let redis = RedisStores::new(&std::env::var("REDIS_URL")?, "billing", SealingKey::from_bytes(key)?)?;
/// let group = ServerGroup::builder()
///     .with_remembered_listings(RememberedListings::from_store(redis.listings()).await?)
///     .build();
/// # drop(group); Ok(()) }
/// ```
pub struct RedisListingStore {
    redis: Connection,
}

impl RedisListingStore {
    /// The store over `redis` ([`RedisStores::listings`](super::RedisStores::listings)).
    pub(super) fn over(redis: Connection) -> Self {
        RedisListingStore { redis }
    }

    fn hash(&self) -> String {
        self.redis.key_of("listings", &[])
    }
}

/// A field's place, for sealing: the hash and the field.
fn place(hash: &str, field: &str) -> String {
    format!("{hash}:{field}")
}

impl ListingStore for RedisListingStore {
    fn load(&self) -> BoxFuture<'_, Result<StoredListings, StoreError>> {
        Box::pin(async move {
            let hash = self.hash();
            let fields: Vec<(String, Vec<u8>)> = self
                .redis
                .query(redis::cmd("HGETALL").arg(&hash).clone())
                .await?;
            // A value that does not open (another key's, or tampered) is
            // left out, as an entry that does not read as a listing is.
            Ok((fields.into_iter())
                .filter_map(|(field, value)| {
                    let json = self.redis.unseal(&place(&hash, &field), &value).ok()?;
                    Some((field, json))
                })
                .collect())
        })
    }

    fn put<'a>(&'a self, key: &'a str, listing: Vec<u8>) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            let hash = self.hash();
            let sealed = self.redis.seal(&place(&hash, key), &listing);
            self.redis
                .query(redis::cmd("HSET").arg(&hash).arg(key).arg(sealed).clone())
                .await
        })
    }
}

impl fmt::Debug for RedisListingStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisListingStore")
            .field("redis", &self.redis)
            .finish()
    }
}
