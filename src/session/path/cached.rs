//! The response cache's step: a fresh cached answer ends the request
//! before anything is sent; a complete answer the server marks reusable
//! is kept (the cache itself, its keys and freshness, are
//! [`crate::response_cache`] and `session/cached.rs`).

use serde_json::value::RawValue;

use crate::protocol::Request;
use crate::response_cache::CacheMode;
use crate::session::cached::Lookup;
use crate::session::Session;

/// One request's view of the cache: nothing when the cache may not see it.
pub(super) struct Cached(Option<Lookup>);

impl Cached {
    pub(super) fn look(session: &Session, request: &Request, mode: CacheMode) -> Self {
        Cached(session.lookup(request.body(), mode))
    }

    /// The fresh cached answer, when there is one the request may use.
    pub(super) async fn hit(&self, session: &Session) -> Option<Box<RawValue>> {
        session.cached(self.0.as_ref()?).await
    }

    /// Keeps a complete answer (one that took no input rounds: such an
    /// answer depends on the inputs) when its hints allow it.
    pub(super) async fn keep(&self, session: &Session, raw: &RawValue) {
        if let Some(lookup) = &self.0 {
            session.remember(lookup, raw).await;
        }
    }
}
