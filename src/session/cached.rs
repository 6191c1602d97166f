//! What a session does with the [response cache](crate::response_cache)
//! and with a remembered `server/discover`.
//!
//! The cache answers a modern session's cacheable requests while their
//! entries are fresh, and stores what the server marks reusable. A new
//! session's first `tools/call` reads the cached tool list's `x-mcp-header`
//! declarations, so it sends its `Mcp-Param-*` headers without listing.
//!
//! A session that started from a remembered discover has not heard from
//! the server yet: until a request succeeds, a refusal that says the
//! server does not take the remembered version (`-32022`, or a 400, 404 or
//! 405 refusal of the transport without a request id, which is how a
//! server that went back to sessions answers a stateless request) makes
//! the era cache forget the server and ends the session with
//! [`VersionError::RememberedRefused`].

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use mcp_connect_layers::Stage;
use serde_json::value::RawValue;

use super::Session;
use crate::era_cache::EraCache;
use crate::error::{Error, ErrorKind, TransportError, VersionError};
use crate::protocol::{
    codes, is_era_refusal, EncodedRequest, Era, ListTools, McpRequest, RpcError,
};
use crate::request::Target;
use crate::response_cache::{cacheable, CacheMode, Context, Hints, ResponseCache};
use crate::transport::Reply;

/// The response cache as one session sees it.
pub(crate) struct SessionCache {
    cache: ResponseCache,
    server: Arc<str>,
    target: Target,
}

/// What forgets a remembered discover the server refused: the handshake's
/// (the era cache is written by the handshake alone).
pub(crate) type Forget = Box<dyn Fn() + Send + Sync>;

/// A session from a remembered discover, until the server confirms it.
pub(crate) struct Remembered {
    forget: Forget,
    confirmed: AtomicBool,
}

/// A cacheable request's key parts.
pub(super) struct Lookup {
    method: Arc<str>,
    params: Arc<str>,
    context: Context,
    mode: CacheMode,
    /// The server's invalidation count when the request went out.
    epoch: u64,
}

impl Session {
    /// Uses `cache` for this session's cacheable requests (modern era).
    pub(super) fn with_cache(mut self, cache: Option<&ResponseCache>, target: &Target) -> Self {
        self.cache = cache.filter(|_| self.era() == Era::Modern).map(|cache| {
            Box::new(SessionCache {
                cache: cache.clone(),
                server: EraCache::key(target).into(),
                target: target.clone(),
            })
        });
        self
    }

    /// Whether the session started from a remembered discover result.
    pub(crate) fn started_from_memory(&self) -> bool {
        self.negotiated.from_memory
    }

    /// The discover result the era cache may remember, taken.
    pub(crate) fn take_discovered(&mut self) -> Option<crate::era_cache::RememberedDiscover> {
        self.negotiated.discovered.take()
    }

    /// Makes a refusal of the remembered version call `forget` (the
    /// handshake's: it forgets the entry).
    pub(crate) fn forgetting_on_refusal(mut self, forget: Forget) -> Self {
        self.remembered = Some(Remembered {
            forget,
            confirmed: AtomicBool::new(false),
        });
        self
    }

    /// The cache key parts of a request, when the cache may see it.
    pub(super) fn lookup(&self, request: &EncodedRequest, mode: CacheMode) -> Option<Lookup> {
        let cache = self.cache.as_ref()?;
        if mode == CacheMode::Bypass {
            return None;
        }
        let params = cacheable(request)?;
        let token = self.auth.as_ref().and_then(|auth| auth.access_token());
        Some(Lookup {
            method: request.method().into(),
            params: params.into(),
            context: Context::of(cache.target.headers(), token.as_deref()),
            mode,
            epoch: cache.cache.epoch(&cache.server),
        })
    }

    /// The fresh cached answer, when the lookup may use one.
    pub(super) async fn cached(&self, lookup: &Lookup) -> Option<Box<RawValue>> {
        let cache = self.cache.as_ref()?;
        if lookup.mode != CacheMode::Use {
            return None;
        }
        let hit = cache
            .cache
            .lookup(
                &cache.server,
                &lookup.context,
                &lookup.method,
                &lookup.params,
            )
            .await?;
        RawValue::from_string(hit.result.to_string()).ok()
    }

    /// Stores a complete answer its hints allow to be reused.
    pub(super) async fn remember(&self, lookup: &Lookup, raw: &RawValue) {
        let (Some(cache), Some(hints)) = (self.cache.as_ref(), Hints::of(raw.get())) else {
            return;
        };
        // Fetched before a change the server announced: not stored.
        if cache.cache.epoch(&cache.server) != lookup.epoch {
            return;
        }
        cache
            .cache
            .store(
                &cache.server,
                &lookup.context,
                &lookup.method,
                &lookup.params,
                raw.get(),
                hints,
            )
            .await;
    }

    /// Before a modern `tools/call` on a session that has listed nothing:
    /// the declarations of the cached tool list, every page fresh.
    pub(super) async fn seed_tool_headers(&self) {
        if self.cache.is_none() || self.tool_headers.listed() {
            return;
        }
        let mut tools = Vec::new();
        let mut listing = ListTools::first();
        for _ in 0..super::MAX_PAGES {
            let Some(lookup) = self.lookup(&listing.encode(), CacheMode::Use) else {
                return;
            };
            let Some(raw) = self.cached(&lookup).await else {
                return;
            };
            let Ok(page) = ListTools::read(raw) else {
                return;
            };
            tools.extend(page.items);
            match page.next_cursor {
                None => {
                    self.tool_headers.record(tools, true);
                    return;
                }
                Some(next) if listing == ListTools::page(next.as_str()) => return,
                Some(next) => listing = ListTools::page(next),
            }
        }
    }

    /// Confirms a remembered version on a success, or turns the refusal
    /// of it into [`VersionError::RememberedRefused`] after forgetting the
    /// server and closing the session. A failure that says nothing about
    /// the version (a connection refused, a timeout) does neither.
    pub(super) async fn judge_remembered(
        &self,
        reply: &Result<Reply, TransportError>,
    ) -> Option<Error> {
        let remembered = self.remembered.as_ref()?;
        if remembered.confirmed.load(Ordering::Relaxed) {
            return None;
        }
        let refused = match reply {
            Ok(Ok(_)) => {
                remembered.confirmed.store(true, Ordering::Relaxed);
                return None;
            }
            Ok(Err(rpc)) => refuses_version(rpc),
            Err(TransportError::Status { status, .. }) => is_era_refusal(Some(*status)),
            Err(_) => false,
        };
        if !refused {
            return None;
        }
        (remembered.forget)();
        let _ = self.transport.close().await;
        Some(Error::new(
            Stage::REQUEST,
            ErrorKind::Version(VersionError::RememberedRefused),
        ))
    }
}

/// Whether a JSON-RPC refusal says the server does not take the version:
/// `-32022`, or the transport's refusal (400, 404, 405) without an id.
fn refuses_version(rpc: &RpcError) -> bool {
    rpc.code() == codes::UNSUPPORTED_PROTOCOL_VERSION
        || (is_era_refusal(rpc.http_status()) && rpc.id_is_null())
}
