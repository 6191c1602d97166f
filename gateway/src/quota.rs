//! Quotas: token buckets per principal, per principal and tool, and per
//! server, counted in one process ([`Quotas::local`]) or shared by every
//! replica through a [`BucketStore`] (Redis: one atomic script a take).
//!
//! Keyed on the principal, never on a session: a client that opens a new
//! session (or sends 2026-07-28 requests, which have none) is the same
//! caller with the same quota. Without authentication every caller is the
//! one anonymous principal. A call takes from each bucket that applies,
//! the narrowest first (the principal's for the tool, the principal's,
//! the server's); the first refusal ends it (the buckets before it have
//! spent their token: a refused caller pays for trying, and never from a
//! bucket others share). A store
//! that fails lets calls through or refuses them, as configured.

use std::sync::Arc;
use std::time::Duration;

use mcp_connect::store::{BucketStore, MemoryBuckets, Rate, Taken};
use wildmatch::WildMatch;

use crate::Principal;

/// The quotas of a gateway.
#[derive(Clone)]
pub struct Quotas {
    store: Arc<dyn BucketStore>,
    per_principal: Option<Rate>,
    per_tool: Vec<(WildMatch, Rate)>,
    per_server: Vec<(String, Rate)>,
    fail_open: bool,
}

impl std::fmt::Debug for Quotas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Quotas")
            .field("per_principal", &self.per_principal)
            .field("per_tool", &self.per_tool.len())
            .field("per_server", &self.per_server)
            .field("fail_open", &self.fail_open)
            .finish_non_exhaustive()
    }
}

/// What the quotas said of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum QuotaDecision {
    /// No quota applies.
    Unlimited,
    /// Every bucket that applies had a token.
    Granted,
    /// A bucket was empty: the call may come back after this long.
    Refused {
        /// How long until it would be let through.
        retry_after: Duration,
    },
    /// The store failed; the call was let through (fail-open) or not.
    StoreFailed {
        /// Whether it went ahead.
        let_through: bool,
    },
}

impl QuotaDecision {
    /// Its name in records.
    pub fn as_str(self) -> &'static str {
        match self {
            QuotaDecision::Unlimited => "unlimited",
            QuotaDecision::Granted => "granted",
            QuotaDecision::Refused { .. } => "refused",
            QuotaDecision::StoreFailed { let_through: true } => "store_failed_open",
            QuotaDecision::StoreFailed { let_through: false } => "store_failed_closed",
        }
    }

    /// Whether the call goes ahead.
    pub fn lets_through(self) -> bool {
        match self {
            QuotaDecision::Unlimited | QuotaDecision::Granted => true,
            QuotaDecision::Refused { .. } => false,
            QuotaDecision::StoreFailed { let_through } => let_through,
        }
    }
}

impl Quotas {
    /// Quotas counted in this process.
    pub fn local() -> Self {
        Self::shared(MemoryBuckets::new())
    }

    /// Quotas counted in `store`, shared by every replica that uses it
    /// ([`RedisStores::buckets`](mcp_connect::store::redis::RedisStores::buckets)).
    /// A store that fails refuses calls until
    /// [`fail_open`](Self::fail_open) says otherwise.
    pub fn shared(store: impl BucketStore) -> Self {
        Quotas {
            store: Arc::new(store),
            per_principal: None,
            per_tool: Vec::new(),
            per_server: Vec::new(),
            fail_open: false,
        }
    }

    /// Each principal's calls, whatever the tool.
    #[must_use]
    pub fn per_principal(mut self, rate: Rate) -> Self {
        self.per_principal = Some(rate);
        self
    }

    /// Each principal's calls of the tools whose exposed name matches
    /// `pattern` (`*` and `?`), each tool its own bucket; the first
    /// pattern that matches applies.
    #[must_use]
    pub fn per_tool(mut self, pattern: &str, rate: Rate) -> Self {
        self.per_tool.push((WildMatch::new(pattern), rate));
        self
    }

    /// Every principal's calls to `server` together.
    #[must_use]
    pub fn per_server(mut self, server: impl Into<String>, rate: Rate) -> Self {
        self.per_server.push((server.into(), rate));
        self
    }

    /// Lets calls through while the store fails (default: refused).
    #[must_use]
    pub fn fail_open(mut self, open: bool) -> Self {
        self.fail_open = open;
        self
    }

    /// Takes a token from each bucket that applies to `principal` calling
    /// `server`'s `tool`.
    pub(crate) async fn take(
        &self,
        principal: Option<&Principal>,
        server: &str,
        tool: &str,
    ) -> QuotaDecision {
        let who = match principal {
            Some(p) => format!("{}\0{}", p.issuer(), p.subject()),
            None => "\0anonymous".to_owned(),
        };
        let mut buckets: Vec<(String, Rate)> = Vec::with_capacity(3);
        if let Some((_, rate)) = self.per_tool.iter().find(|(p, _)| p.matches(tool)) {
            buckets.push((format!("tool\0{who}\0{tool}"), *rate));
        }
        if let Some(rate) = self.per_principal {
            buckets.push((format!("principal\0{who}"), rate));
        }
        if let Some((_, rate)) = self.per_server.iter().find(|(name, _)| name == server) {
            buckets.push((format!("server\0{server}"), *rate));
        }
        if buckets.is_empty() {
            return QuotaDecision::Unlimited;
        }
        for (key, rate) in &buckets {
            match self.store.take(key, *rate).await {
                Ok(Taken::Granted) => {}
                Ok(Taken::Refused { retry_after }) => {
                    return QuotaDecision::Refused { retry_after }
                }
                Ok(_) | Err(_) => {
                    return QuotaDecision::StoreFailed {
                        let_through: self.fail_open,
                    }
                }
            }
        }
        QuotaDecision::Granted
    }
}
