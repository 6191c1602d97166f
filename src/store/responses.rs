//! The response cache's store ([`ResponseStore`]): what it keeps, by
//! which key, and what a notification makes stale. The cache itself (which
//! requests it answers, the hints it reads) is
//! [`response_cache`](crate::response_cache); the default in-memory store
//! is [`MemoryResponseStore`](super::MemoryResponseStore), one shared
//! through Redis [`RedisResponseStore`](super::redis::RedisResponseStore)
//! (feature `redis`).

use std::sync::Arc;
use std::time::SystemTime;

use futures_util::future::BoxFuture;
use serde_json::Value;

use crate::protocol::{methods, RequestKind};

/// The longest a result is kept fresh, whatever its `ttlMs`: a day.
pub const MAX_TTL: std::time::Duration = std::time::Duration::from_secs(24 * 60 * 60);

/// The key of one cached result. Holds no secret: the authorization
/// context is a fingerprint.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct CacheKey {
    /// The server ([`EraCache::key`](crate::era_cache::EraCache::key)).
    pub server: Arc<str>,
    /// The authorization context of a private result (a hex fingerprint);
    /// `None` for a public one.
    pub context: Option<Arc<str>>,
    /// The method.
    pub method: Arc<str>,
    /// The params that shape the result, as canonical JSON.
    pub params: Arc<str>,
}

impl CacheKey {
    /// A key, for a store's own tests (the cache makes the keys it uses).
    pub fn new(
        server: impl Into<Arc<str>>,
        context: Option<&str>,
        method: impl Into<Arc<str>>,
        params: impl Into<Arc<str>>,
    ) -> Self {
        CacheKey {
            server: server.into(),
            context: context.map(Arc::from),
            method: method.into(),
            params: params.into(),
        }
    }
}

/// One cached result.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CachedResult {
    /// The result as the server sent it (JSON).
    pub result: Arc<str>,
    /// When it stops being fresh.
    pub expires: SystemTime,
}

impl CachedResult {
    /// A result fresh until `expires`.
    pub fn new(result: Arc<str>, expires: SystemTime) -> Self {
        CachedResult { result, expires }
    }

    /// Whether it is still fresh.
    pub fn is_fresh(&self) -> bool {
        SystemTime::now() < self.expires
    }
}

/// What a notification makes stale.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Invalidation {
    /// Every entry of this method, every context and params.
    Method(&'static str),
    /// The `resources/read` of this uri, every context.
    Resource(String),
}

/// Where cached results live. Implementations must be cheap to call from
/// every request; a failing store behaves as a miss, never as an error of
/// the request.
pub trait ResponseStore: Send + Sync + 'static {
    /// The entry under `key`, fresh or not.
    fn get<'a>(&'a self, key: &'a CacheKey) -> BoxFuture<'a, Option<CachedResult>>;
    /// Stores `value` under `key`, replacing any entry.
    fn put(&self, key: CacheKey, value: CachedResult) -> BoxFuture<'_, ()>;
    /// Drops what `what` makes stale for `server`.
    fn invalidate<'a>(&'a self, server: &'a str, what: &'a Invalidation) -> BoxFuture<'a, ()>;
}

impl Invalidation {
    /// Whether the entry under `key` (of the invalidated server) is one
    /// this makes stale: for store implementations. A store checking many
    /// keys takes [`matcher`](Self::matcher) once instead.
    pub fn matches(&self, key: &CacheKey) -> bool {
        self.matcher()(key)
    }

    /// The method an invalidation covers, and the canonical params it is
    /// limited to (for a resource), every context: for stores that find
    /// entries by key prefix instead of testing each.
    pub fn scope(&self) -> (&'static str, Option<String>) {
        match self {
            Invalidation::Method(method) => (method, None),
            Invalidation::Resource(uri) => (
                methods::RESOURCES_READ,
                canonical(Some(&serde_json::json!({ "uri": uri }))),
            ),
        }
    }

    /// [`matches`](Self::matches) with the work that does not depend on
    /// the key done once.
    pub fn matcher(&self) -> impl Fn(&CacheKey) -> bool + '_ {
        let read = match self {
            Invalidation::Method(_) => None,
            Invalidation::Resource(uri) => canonical(Some(&serde_json::json!({ "uri": uri }))),
        };
        move |key: &CacheKey| match self {
            Invalidation::Method(method) => &*key.method == *method,
            Invalidation::Resource(_) => {
                RequestKind::of(&key.method) == RequestKind::ReadResource
                    && read.as_deref() == Some(&*key.params)
            }
        }
    }
}

/// A shared store is a store: keep an `Arc` to read it while a cache
/// uses it.
impl<S: ResponseStore> ResponseStore for Arc<S> {
    fn get<'a>(&'a self, key: &'a CacheKey) -> BoxFuture<'a, Option<CachedResult>> {
        (**self).get(key)
    }

    fn put(&self, key: CacheKey, value: CachedResult) -> BoxFuture<'_, ()> {
        (**self).put(key, value)
    }

    fn invalidate<'a>(&'a self, server: &'a str, what: &'a Invalidation) -> BoxFuture<'a, ()> {
        (**self).invalidate(server, what)
    }
}

/// Params as canonical JSON (keys sorted, as `serde_json`'s map keeps
/// them), `None` and `{}` alike; `None` when the params disqualify (a
/// `_meta`, `inputResponses` or `requestState`: the answer would depend on
/// what is not in the key).
pub(crate) fn canonical(params: Option<&Value>) -> Option<String> {
    let Some(params) = params else {
        return Some("{}".to_owned());
    };
    let object = params.as_object()?;
    let disqualified = ["_meta", "inputResponses", "requestState"];
    if disqualified.iter().any(|key| object.contains_key(*key)) {
        return None;
    }
    let sorted: std::collections::BTreeMap<&String, &Value> = object.iter().collect();
    Some(serde_json::to_string(&sorted).expect("JSON values serialize"))
}
