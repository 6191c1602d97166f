//! The 2026-07-28 response cache (SEP-2549): results the server marked
//! fresh for a while are served again without a round trip.
//!
//! A 2026-07-28 server puts `ttlMs` and `cacheScope` on the results of
//! `tools/list`, `prompts/list`, `resources/list`,
//! `resources/templates/list` and `resources/read` (and `server/discover`,
//! which the [era cache](crate::era_cache) remembers instead). A session
//! given a [`ResponseCache`] (see
//! [`ConnectRequest::with_response_cache`](crate::ConnectRequest::with_response_cache))
//! answers such a request from the cache while its entry is fresh, and
//! stores every complete result with a positive `ttlMs`. What it keeps to:
//!
//! - **Modern sessions only.** Hints on a legacy result are ignored (the
//!   spec defines them for 2026-07-28), so a legacy session never reads or
//!   writes the cache.
//! - **The key is exact**: the server ([`EraCache::key`](crate::era_cache::EraCache::key):
//!   scheme, host, port and path, or the stdio command's fingerprint), the
//!   method and the params that shape the result (the cursor, the uri),
//!   with `None` and `{}` the same. A request whose params carry a `_meta`
//!   of their own, `inputResponses` or `requestState` is never cached, nor
//!   is an `input_required` result or one that took input rounds.
//! - **Private stays private.** A `"private"` result is stored under the
//!   authorization context that fetched it: a fingerprint (SHA-256, never
//!   the secret itself) of the access token and of the target's own
//!   headers. Another token, or other headers, is another context and never
//!   sees it. A modern result without `cacheScope` is treated as private,
//!   the one guess that cannot leak. `"public"` results are shared by every
//!   context of the same server.
//! - **Notifications invalidate**: `notifications/tools/list_changed` drops
//!   the server's `tools/list` pages in every context,
//!   `prompts/list_changed` its `prompts/list`, `resources/list_changed` its
//!   `resources/list` and `resources/templates/list`, and
//!   `notifications/resources/updated` the `resources/read` of that uri.
//!   They arrive only where the session receives them (a reply stream, or
//!   the subscription a notification listener opens).
//! - **Per call**: [`CacheMode`] on
//!   [`RequestOptions`](crate::session::RequestOptions) uses the cache (the
//!   default), refreshes it (always asks the server, stores the answer) or
//!   bypasses it.
//! - **Freshness** is `now < received + ttlMs` in wall-clock time, so an
//!   entry means the same in a shared store; `ttlMs` of 0, negative or
//!   absent is never stored.
//!
//! The store is pluggable ([`ResponseStore`]); [`MemoryStore`] is the
//! default, bounded to [`MemoryStore::DEFAULT_CAPACITY`] entries. Where it
//! differs from the TypeScript and Python SDKs' caches: one cache may be
//! shared by many sessions and servers (a group's members, an
//! [`McpClient`](crate::McpClient)'s reconnects), and the `Mcp-Param-*`
//! declarations of a cached tool list are used by a new session's first
//! `tools/call` before it lists anything.

mod context;
mod hints;
mod invalidations;
mod memory;

use crate::protocol::{methods, NotificationKind, RequestKind};
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use futures_util::future::BoxFuture;

pub(crate) use context::Context;
pub(crate) use hints::{cacheable, Hints};
pub use memory::MemoryStore;

/// The longest a result is kept fresh, whatever its `ttlMs`: a day.
pub const MAX_TTL: Duration = Duration::from_secs(24 * 60 * 60);

/// How one request uses the response cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum CacheMode {
    /// A fresh entry answers; otherwise the server does, and its answer is
    /// stored.
    #[default]
    Use,
    /// The server answers, and its answer replaces the entry.
    Refresh,
    /// The cache is neither read nor written.
    Bypass,
}

/// Who may be served a cached result (`cacheScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CacheScope {
    /// Any authorization context of the same server.
    Public,
    /// Only the authorization context that fetched it.
    Private,
}

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

/// A shareable response cache: clones share one store.
#[derive(Clone)]
pub struct ResponseCache {
    store: Arc<dyn ResponseStore>,
    invalidations: Arc<invalidations::Invalidations>,
}

impl Default for ResponseCache {
    fn default() -> Self {
        Self::new()
    }
}

impl ResponseCache {
    /// A cache over a [`MemoryStore`] of the default capacity.
    pub fn new() -> Self {
        Self::with_store(MemoryStore::default())
    }

    /// A cache over `store`.
    pub fn with_store(store: impl ResponseStore) -> Self {
        ResponseCache {
            store: Arc::new(store),
            invalidations: Arc::default(),
        }
    }

    /// How many invalidations `server` has had: a lookup takes it, and
    /// the answer is stored only if none came since.
    pub(crate) fn epoch(&self, server: &str) -> u64 {
        self.invalidations.epoch(server)
    }

    /// The fresh entry for `method` and `params` of `server` in `context`:
    /// the private entry of the context first, then the public one.
    pub(crate) async fn lookup(
        &self,
        server: &Arc<str>,
        context: &Context,
        method: &Arc<str>,
        params: &Arc<str>,
    ) -> Option<CachedResult> {
        let private = key(server, Some(context), method, params);
        // A change notification heard and not yet applied by the store:
        // the entry is stale already.
        if self.invalidations.covers(&private) {
            return None;
        }
        if let Some(hit) = self
            .store
            .get(&private)
            .await
            .filter(CachedResult::is_fresh)
        {
            return Some(hit);
        }
        let public = key(server, None, method, params);
        self.store.get(&public).await.filter(CachedResult::is_fresh)
    }

    /// Stores a result under the scope its hints name.
    pub(crate) async fn store(
        &self,
        server: &Arc<str>,
        context: &Context,
        method: &Arc<str>,
        params: &Arc<str>,
        result: &str,
        hints: Hints,
    ) {
        let Some(expires) = hints.expires() else {
            return;
        };
        let context = (hints.scope == CacheScope::Private).then_some(context);
        let key = key(server, context, method, params);
        if self.invalidations.covers(&key) {
            return;
        }
        self.store
            .put(key, CachedResult::new(Arc::from(result), expires))
            .await;
    }

    /// Marks what a notification from `server` makes stale at once (a
    /// lookup it covers misses from now on) and has the store drop it
    /// soon, on this cache's one invalidation worker, coalesced.
    pub(crate) fn invalidate(&self, server: &Arc<str>, what: Invalidation) {
        self.invalidations.add(&self.store, server, what);
    }
}

fn key(
    server: &Arc<str>,
    context: Option<&Context>,
    method: &Arc<str>,
    params: &Arc<str>,
) -> CacheKey {
    CacheKey {
        server: Arc::clone(server),
        context: context.map(Context::as_key),
        method: Arc::clone(method),
        params: Arc::clone(params),
    }
}

impl fmt::Debug for ResponseCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseCache").finish_non_exhaustive()
    }
}

/// What a server notification makes stale, if anything.
pub(crate) fn invalidation(method: &str, params: Option<&serde_json::Value>) -> Vec<Invalidation> {
    match NotificationKind::of(method) {
        NotificationKind::ToolsListChanged => vec![Invalidation::Method(methods::TOOLS_LIST)],
        NotificationKind::PromptsListChanged => vec![Invalidation::Method(methods::PROMPTS_LIST)],
        NotificationKind::ResourcesListChanged => vec![
            Invalidation::Method(methods::RESOURCES_LIST),
            Invalidation::Method(methods::RESOURCES_TEMPLATES_LIST),
        ],
        NotificationKind::ResourceUpdated => params
            .and_then(|p| p.get("uri"))
            .and_then(serde_json::Value::as_str)
            .map(|uri| vec![Invalidation::Resource(uri.to_owned())])
            .unwrap_or_default(),
        _ => Vec::new(),
    }
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
                hints::canonical(Some(&serde_json::json!({ "uri": uri }))),
            ),
        }
    }

    /// [`matches`](Self::matches) with the work that does not depend on
    /// the key done once.
    pub fn matcher(&self) -> impl Fn(&CacheKey) -> bool + '_ {
        let read = match self {
            Invalidation::Method(_) => None,
            Invalidation::Resource(uri) => {
                hints::canonical(Some(&serde_json::json!({ "uri": uri })))
            }
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
