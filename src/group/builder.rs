//! [`ServerGroupBuilder`]: what a group is configured with before its
//! first server (naming, how many establish at once, keepalive, the
//! listener, the caches and telemetry its servers share).

use mcp_connect_layers::recovery::Backoff;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{broadcast, watch, Semaphore};

use super::{Catalogue, Keepalive, Naming, ServerGroup, Shared};
use crate::inbound::NotificationSender;

/// Health changes kept for a slow reader of [`ServerGroup::health_changes`].
const HEALTH_CAPACITY: usize = 1024;

/// Configures a [`ServerGroup`].
#[derive(Default)]
pub struct ServerGroupBuilder {
    naming: Naming,
    max_establishing: Option<usize>,
    keepalive: Option<Keepalive>,
    notifications: Option<NotificationSender>,
    caches: Caches,
    /// The pace of trying a member again after an outage.
    retry: Option<Backoff>,
    remembered: Option<super::RememberedListings>,
    ranker: Option<Arc<dyn super::Ranker>>,
    discovery: super::Discovery,
    always_loaded: Vec<String>,
    /// The telemetry of servers added without their own (feature `otel`).
    pub(crate) telemetry: Option<crate::telemetry::Telemetry>,
}

impl std::fmt::Debug for ServerGroupBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerGroupBuilder")
            .field("naming", &self.naming)
            .field("max_establishing", &self.max_establishing)
            .field("keepalive", &self.keepalive)
            .field("retry", &self.retry)
            .field("ranker", &self.ranker.is_some())
            .field("discovery", &self.discovery)
            .field("always_loaded", &self.always_loaded)
            .finish_non_exhaustive()
    }
}

/// The default pace of trying a member again after an outage: full
/// jitter under a ceiling doubling from 1 s to 60 s.
const RETRY: Backoff = Backoff::new(Duration::from_secs(1), Duration::from_secs(60));

/// The caches every server of a group shares unless its request has its
/// own.
#[derive(Debug, Clone, Default)]
pub(super) struct Caches {
    era: Option<crate::era_cache::EraCache>,
    responses: Option<crate::response_cache::ResponseCache>,
}

impl Caches {
    pub(super) fn apply(&self, mut request: crate::ConnectRequest) -> crate::ConnectRequest {
        if let (Some(cache), None) = (&self.era, request.era_cache()) {
            request = request.with_era_cache(cache.clone());
        }
        if let (Some(cache), None) = (&self.responses, request.response_cache()) {
            request = request.with_response_cache(cache.clone());
        }
        request
    }
}

impl ServerGroupBuilder {
    /// How tools and prompts are named in the catalogue (default:
    /// [`Naming::OnCollision`]).
    #[must_use]
    pub fn with_naming(mut self, naming: Naming) -> Self {
        self.naming = naming;
        self
    }

    /// At most `limit` servers establishing at once (at least 1); the
    /// others wait their turn, their deadline not yet started. Without it,
    /// every server starts at once.
    #[must_use]
    pub fn with_max_establishing(mut self, limit: usize) -> Self {
        self.max_establishing = Some(limit.max(1));
        self
    }

    /// Pings idle legacy sessions (off by default; see [`Keepalive`]).
    #[must_use]
    pub fn with_keepalive(mut self, keepalive: Keepalive) -> Self {
        self.keepalive = Some(keepalive);
        self
    }

    /// Sends every server's notifications to `listener` too, each carrying
    /// its server's name. A request's own listener keeps getting its
    /// server's.
    #[must_use]
    pub fn with_notifications(mut self, listener: NotificationSender) -> Self {
        self.notifications = Some(listener);
        self
    }

    /// Shares `cache` between every server added whose request has no era
    /// cache of its own: each reconnect starts where the last one ended,
    /// and a 2026-07-28 server's remembered discover saves its probe.
    #[must_use]
    pub fn with_era_cache(mut self, cache: crate::era_cache::EraCache) -> Self {
        self.caches.era = Some(cache);
        self
    }

    /// Shares `cache` ([`crate::response_cache`]) between every server
    /// added whose request has no response cache of its own.
    #[must_use]
    pub fn with_response_cache(mut self, cache: crate::response_cache::ResponseCache) -> Self {
        self.caches.responses = Some(cache);
        self
    }

    /// The pace of trying a member again on its own after it failed in a
    /// way an outage explains (the connection, a timeout, 5xx; never
    /// authorization, configuration, DNS, TLS or another 4xx): full jitter
    /// under a ceiling doubling from `backoff`'s base to its max (default
    /// 1 s to 60 s). A server's own ([`Server::with_retry`](super::Server::with_retry)) wins.
    #[must_use]
    pub fn with_retry(mut self, backoff: Backoff) -> Self {
        self.retry = Some(backoff);
        self
    }

    /// Remembers every server's listing in `listings` and starts a lazy
    /// server ([`Server::lazy`](super::Server::lazy)) from what it holds:
    /// its tools are in the catalogue before it is connected.
    #[must_use]
    pub fn with_remembered_listings(mut self, listings: super::RememberedListings) -> Self {
        self.remembered = Some(listings);
        self
    }

    /// Ranks [`ServerGroup::search_tools`]'s results with `ranker` (by
    /// default, BM25 alone).
    #[must_use]
    pub fn with_ranker(mut self, ranker: impl super::Ranker) -> Self {
        self.ranker = Some(Arc::new(ranker));
        self
    }

    /// When the group shows its three meta-tools instead of its catalogue
    /// ([`ServerGroup::shown_tools`]; default: above
    /// [`AUTO_TOKENS`](super::AUTO_TOKENS) estimated tokens).
    #[must_use]
    pub fn with_discovery(mut self, discovery: super::Discovery) -> Self {
        self.discovery = discovery;
        self
    }

    /// Tools shown beside the meta-tools while discovery is on: catalogue
    /// names or globs (`*`, `?`).
    #[must_use]
    pub fn with_always_loaded<I, S>(mut self, patterns: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.always_loaded
            .extend(patterns.into_iter().map(Into::into));
        self
    }

    /// Instruments every server added whose request has no telemetry of
    /// its own (a config file's servers, say) with `telemetry` (feature
    /// `otel`).
    #[cfg(feature = "otel")]
    #[must_use]
    pub fn with_telemetry(mut self, telemetry: crate::telemetry::Telemetry) -> Self {
        self.telemetry = Some(telemetry);
        self
    }

    /// The group, empty.
    pub fn build(self) -> ServerGroup {
        ServerGroup {
            shared: Arc::new_cyclic(|this| Shared {
                naming: self.naming,
                permits: self.max_establishing.map(|n| Arc::new(Semaphore::new(n))),
                keepalive: self.keepalive,
                notifications: self.notifications,
                caches: self.caches,
                telemetry: self.telemetry,
                remembered: self.remembered,
                storm: Default::default(),
                retry: self.retry.unwrap_or(RETRY),
                members: Mutex::new(BTreeMap::new()),
                catalogue: watch::channel(Arc::new(Catalogue::default())).0,
                health: broadcast::channel(HEALTH_CAPACITY).0,
                changes: watch::channel(0).0,
                listings_changed: AtomicU64::new(0),
                started: std::sync::atomic::AtomicBool::new(false),
                starting: std::sync::atomic::AtomicUsize::new(0),
                counts: Default::default(),
                built: AtomicU64::new(0),
                publish_scheduled: AtomicBool::new(false),
                index: Mutex::default(),
                search: super::search::Search::new(self.ranker),
                discovery: self.discovery,
                always_loaded: (self.always_loaded.iter())
                    .map(|pattern| wildmatch::WildMatch::new(pattern))
                    .collect(),
                this: this.clone(),
            }),
        }
    }
}
