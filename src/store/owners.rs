//! Which replica of a fleet holds a session one of them gave out
//! ([`OwnerStore`]): a server whose sessions live in one process (a 2025
//! Streamable HTTP session with its streams, its pending questions and its
//! upstream sessions) keeps them there, and a replica that receives a
//! request for a session it does not hold asks this store which replica
//! does, and hands the request on. One shared through Redis is
//! [`RedisOwnerStore`](super::redis::RedisOwnerStore) (feature `redis`);
//! [`MemoryOwnerStore`] shares it between the replicas of one process
//! (tests).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use futures_util::future::BoxFuture;
use tokio::time::Instant;

use super::StoreError;

/// Which replica holds each session: its address, as the replicas reach
/// each other, by session id. An entry lasts as long as its `ttl` unless
/// claimed again, so a replica that dies leaves nothing behind for long.
/// A session id is a bearer secret: a store keeps it hashed, never in
/// clear. Each operation must be bounded by the store itself.
pub trait OwnerStore: Send + Sync + 'static {
    /// Says that `owner` holds `session`, for `ttl` from now.
    fn claim<'a>(
        &'a self,
        session: &'a str,
        owner: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// The replica that holds `session`, if one claimed it and the claim
    /// has not expired.
    fn owner<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>>;

    /// Forgets `session` (it ended).
    fn release<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<(), StoreError>>;
}

impl<S: OwnerStore + ?Sized> OwnerStore for std::sync::Arc<S> {
    fn claim<'a>(
        &'a self,
        session: &'a str,
        owner: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        (**self).claim(session, owner, ttl)
    }

    fn owner<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        (**self).owner(session)
    }

    fn release<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        (**self).release(session)
    }
}

/// Owners in memory, for replicas in one process.
#[derive(Debug, Default)]
pub struct MemoryOwnerStore {
    owners: Mutex<HashMap<String, (String, Instant)>>,
}

impl MemoryOwnerStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn owners(&self) -> std::sync::MutexGuard<'_, HashMap<String, (String, Instant)>> {
        self.owners.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl OwnerStore for MemoryOwnerStore {
    fn claim<'a>(
        &'a self,
        session: &'a str,
        owner: &'a str,
        ttl: Duration,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        let until = Instant::now() + ttl;
        self.owners()
            .insert(session.to_owned(), (owner.to_owned(), until));
        Box::pin(async { Ok(()) })
    }

    fn owner<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<Option<String>, StoreError>> {
        let mut owners = self.owners();
        let owner = match owners.get(session) {
            Some((owner, until)) if *until > Instant::now() => Some(owner.clone()),
            Some(_) => {
                owners.remove(session);
                None
            }
            None => None,
        };
        Box::pin(async { Ok(owner) })
    }

    fn release<'a>(&'a self, session: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        self.owners().remove(session);
        Box::pin(async { Ok(()) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_claim_lasts_its_ttl_unless_released() {
        let store = MemoryOwnerStore::new();
        store
            .claim("s1", "http://a/mcp", Duration::from_secs(60))
            .await
            .unwrap();
        store
            .claim("s2", "http://b/mcp", Duration::from_secs(60))
            .await
            .unwrap();
        assert_eq!(
            store.owner("s1").await.unwrap().as_deref(),
            Some("http://a/mcp")
        );
        store.release("s1").await.unwrap();
        assert_eq!(store.owner("s1").await.unwrap(), None);
        tokio::time::sleep(Duration::from_secs(61)).await;
        assert_eq!(store.owner("s2").await.unwrap(), None);
    }
}
