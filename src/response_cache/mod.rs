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
//! The store is pluggable ([`ResponseStore`]); [`MemoryResponseStore`] is the
//! default, bounded to [`MemoryResponseStore::DEFAULT_CAPACITY`] entries. Where it
//! differs from the TypeScript and Python SDKs' caches: one cache may be
//! shared by many sessions and servers (a group's members, an
//! [`McpClient`](crate::McpClient)'s reconnects), and the `Mcp-Param-*`
//! declarations of a cached tool list are used by a new session's first
//! `tools/call` before it lists anything.

mod context;
mod hints;
mod invalidations;

use crate::protocol::{methods, NotificationKind};
use std::fmt;
use std::sync::Arc;

use crate::store::{CacheKey, CachedResult, Invalidation, MemoryResponseStore, ResponseStore};
pub(crate) use context::Context;
pub(crate) use hints::{cacheable, Hints};

pub use crate::store::MAX_TTL;

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
    /// A cache over a [`MemoryResponseStore`] of the default capacity.
    pub fn new() -> Self {
        Self::with_store(MemoryResponseStore::default())
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

/// A notification marks what it makes stale before the application hears
/// of it; the store drops it on the cache's own worker, coalesced.
impl crate::inbound::Staleness for ResponseCache {
    fn notified(&self, server: &Arc<str>, method: &str, params: Option<&serde_json::Value>) {
        for what in invalidation(method, params) {
            self.invalidate(server, what);
        }
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
