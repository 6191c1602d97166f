//! Where a group's remembered listings are shared beyond one process
//! ([`ListingStore`]): bytes by key, the group's
//! [`RememberedListings`](crate::group::RememberedListings) deciding what
//! they mean; one shared through Redis is
//! [`RedisListingStore`](super::redis::RedisListingStore) (feature
//! `redis`).

use futures_util::future::BoxFuture;

use super::StoreError;

/// Where remembered listings are shared beyond one process: read whole
/// when [`RememberedListings::from_store`](crate::group::RememberedListings::from_store) makes them, written one listing
/// at a time as it changes. A listing travels as JSON; keys are the
/// servers' target fingerprints (no URL, header or secret in clear). Each
/// operation must be bounded by the store itself.
pub trait ListingStore: Send + Sync + 'static {
    /// Every listing the store holds, by key.
    fn load(&self) -> BoxFuture<'_, Result<StoredListings, StoreError>>;

    /// Keeps `listing` under `key`, replacing what was there.
    fn put<'a>(&'a self, key: &'a str, listing: Vec<u8>) -> BoxFuture<'a, Result<(), StoreError>>;
}

/// What a [`ListingStore`] holds: each listing's key and its JSON.
pub type StoredListings = Vec<(String, Vec<u8>)>;
