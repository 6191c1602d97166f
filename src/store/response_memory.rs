//! The response cache's default store: a bounded map in this process.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use futures_util::future::{self, BoxFuture, FutureExt};

use super::{CacheKey, CachedResult, Invalidation, ResponseStore};

/// Cached results in memory, at most a fixed number: when full, expired
/// entries go first, then the one that expires soonest.
#[derive(Debug)]
pub struct MemoryResponseStore {
    entries: Mutex<HashMap<CacheKey, CachedResult>>,
    capacity: usize,
}

impl Default for MemoryResponseStore {
    fn default() -> Self {
        Self::with_capacity(Self::DEFAULT_CAPACITY)
    }
}

impl MemoryResponseStore {
    /// Entries a default store holds.
    pub const DEFAULT_CAPACITY: usize = 4096;

    /// A store holding at most `capacity` entries (at least one).
    pub fn with_capacity(capacity: usize) -> Self {
        MemoryResponseStore {
            entries: Mutex::new(HashMap::new()),
            capacity: capacity.max(1),
        }
    }

    /// How many entries it holds, fresh or not.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<CacheKey, CachedResult>> {
        // Held for map operations that cannot panic: never poisoned.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl ResponseStore for MemoryResponseStore {
    fn get<'a>(&'a self, key: &'a CacheKey) -> BoxFuture<'a, Option<CachedResult>> {
        future::ready(self.lock().get(key).cloned()).boxed()
    }

    fn put(&self, key: CacheKey, value: CachedResult) -> BoxFuture<'_, ()> {
        let mut entries = self.lock();
        if entries.len() >= self.capacity && !entries.contains_key(&key) {
            let now = SystemTime::now();
            entries.retain(|_, entry| entry.expires > now);
            if entries.len() >= self.capacity {
                let soonest = entries
                    .iter()
                    .min_by_key(|(_, entry)| entry.expires)
                    .map(|(key, _)| key.clone());
                if let Some(soonest) = soonest {
                    entries.remove(&soonest);
                }
            }
        }
        entries.insert(key, value);
        future::ready(()).boxed()
    }

    fn invalidate<'a>(&'a self, server: &'a str, what: &'a Invalidation) -> BoxFuture<'a, ()> {
        let stale = what.matcher();
        self.lock()
            .retain(|key, _| &*key.server != server || !stale(key));
        future::ready(()).boxed()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::protocol::methods;

    fn key(server: &str, method: &str, params: &str) -> CacheKey {
        CacheKey {
            server: server.into(),
            context: None,
            method: method.into(),
            params: params.into(),
        }
    }

    fn entry(ttl: Duration) -> CachedResult {
        CachedResult::new(Arc::from("{}"), SystemTime::now() + ttl)
    }

    #[tokio::test]
    async fn full_stores_drop_the_soonest_expiry_and_invalidation_is_per_server() {
        let store = MemoryResponseStore::with_capacity(2);
        let long = Duration::from_secs(60);
        store
            .put(key("a", methods::TOOLS_LIST, "{}"), entry(long))
            .await;
        store
            .put(
                key("a", methods::PROMPTS_LIST, "{}"),
                entry(Duration::from_secs(1)),
            )
            .await;
        store
            .put(key("b", methods::TOOLS_LIST, "{}"), entry(long))
            .await;
        assert_eq!(store.len(), 2);
        assert!(store
            .get(&key("a", methods::PROMPTS_LIST, "{}"))
            .await
            .is_none());
        store
            .invalidate("a", &Invalidation::Method(methods::TOOLS_LIST))
            .await;
        assert!(store
            .get(&key("a", methods::TOOLS_LIST, "{}"))
            .await
            .is_none());
        assert!(store
            .get(&key("b", methods::TOOLS_LIST, "{}"))
            .await
            .is_some());
        let read = key("b", methods::RESOURCES_READ, r#"{"uri":"x://1"}"#);
        store.put(read.clone(), entry(long)).await;
        store
            .invalidate("b", &Invalidation::Resource("x://2".into()))
            .await;
        assert!(store.get(&read).await.is_some());
        store
            .invalidate("b", &Invalidation::Resource("x://1".into()))
            .await;
        assert!(store.get(&read).await.is_none());
    }
}
