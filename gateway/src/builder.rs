//! The gateway's configuration: fixed when it is built, as every
//! configuration of this project is.

use std::sync::Arc;
use std::time::Duration;

use mcp_connect::group::ServerGroup;
use mcp_connect::store::OwnerStore;
use mcp_connect::transport::HttpClient;
use mcp_connect::McpClient;

use crate::checks::{Allowed, BearerTokens};
use crate::inner::Inner;
use crate::modern::CacheHints;
use crate::replicas::Replicas;
use crate::service::Gateway;
use crate::sessions::Sessions;
use crate::{SessionClients, SessionRelay};

/// Builds a [`Gateway`].
#[must_use]
pub struct GatewayBuilder {
    group: ServerGroup,
    idle: Duration,
    max_sessions: usize,
    max_body: usize,
    hosts: Allowed,
    origins: Allowed,
    tokens: BearerTokens,
    #[cfg(feature = "oauth")]
    resource_server: Option<crate::ResourceServer>,
    listing_ttl: Duration,
    keepalive: Duration,
    session_clients: Option<SessionClients>,
    governance: crate::governance::Governance,
    replicas: Option<Replicas>,
    #[cfg(feature = "otel")]
    telemetry: Option<crate::ServerTelemetry>,
    name: String,
    version: String,
}

impl std::fmt::Debug for GatewayBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewayBuilder")
            .field("idle", &self.idle)
            .field("max_sessions", &self.max_sessions)
            .field("session_clients", &self.session_clients.is_some())
            .finish_non_exhaustive()
    }
}

impl Gateway {
    /// A gateway over `group`, set up by the builder's methods.
    pub fn builder(group: ServerGroup) -> GatewayBuilder {
        GatewayBuilder::new(group)
    }
}

impl GatewayBuilder {
    fn new(group: ServerGroup) -> Self {
        GatewayBuilder {
            group,
            idle: Duration::from_secs(600),
            max_sessions: 10_000,
            max_body: 4 << 20,
            hosts: Allowed::Loopback,
            origins: Allowed::Loopback,
            tokens: BearerTokens::default(),
            #[cfg(feature = "oauth")]
            resource_server: None,
            listing_ttl: Duration::from_secs(60),
            keepalive: Duration::from_secs(15),
            session_clients: None,
            governance: Default::default(),
            replicas: None,
            #[cfg(feature = "otel")]
            telemetry: None,
            name: "mcp-connect-gateway".into(),
            version: env!("CARGO_PKG_VERSION").into(),
        }
    }

    /// How long a 2025 session may go unused before it is gone (default
    /// 10 minutes).
    pub fn session_idle_timeout(mut self, idle: Duration) -> Self {
        self.idle = idle;
        self
    }

    /// How many 2025 sessions may be open at once (default 10,000); one
    /// more `initialize` gets 503 until one ends or idles out.
    pub fn max_sessions(mut self, max: usize) -> Self {
        self.max_sessions = max.max(1);
        self
    }

    /// The largest request body read (default 4 MiB); a larger one gets 413.
    pub fn max_body(mut self, bytes: usize) -> Self {
        self.max_body = bytes;
        self
    }

    /// The `Host` names answered (default [`Allowed::Loopback`]).
    pub fn allowed_hosts(mut self, hosts: Allowed) -> Self {
        self.hosts = hosts;
        self
    }

    /// The `Origin`s answered when a request has one (default
    /// [`Allowed::Loopback`]); a request without one (not from a browser)
    /// is answered.
    pub fn allowed_origins(mut self, origins: Allowed) -> Self {
        self.origins = origins;
        self
    }

    /// Requests must carry `Authorization: Bearer` with one of `tokens`
    /// (else 401); none by default. A static list until the gateway is a
    /// full OAuth resource server; the tokens are compared in constant
    /// time and never reach a member.
    pub fn bearer_tokens<T: Into<String>>(mut self, tokens: impl IntoIterator<Item = T>) -> Self {
        self.tokens = BearerTokens(tokens.into_iter().map(|t| t.into().into_bytes()).collect());
        self
    }

    /// Makes the gateway an OAuth 2.1 resource server (feature `oauth`):
    /// every request needs a token `server` accepts, and carries its
    /// principal; a GET of the Protected Resource Metadata's path (when
    /// the application routes it here) is answered with the document.
    #[cfg(feature = "oauth")]
    pub fn resource_server(mut self, server: crate::ResourceServer) -> Self {
        self.resource_server = Some(server);
        self
    }

    /// How long a 2026-07-28 client may keep a listing (its `ttlMs`;
    /// default a minute). The scope is `private` when the gateway asks for
    /// bearer tokens, else `public`.
    pub fn listing_ttl(mut self, ttl: Duration) -> Self {
        self.listing_ttl = ttl;
        self
    }

    /// How often an open event stream with nothing to say sends a comment
    /// (default 15 s), so that a proxy does not cut it as idle.
    pub fn keepalive(mut self, every: Duration) -> Self {
        self.keepalive = every;
        self
    }

    /// Gives each 2025 session clients of its own, one per member it uses,
    /// made by `make` from the member's name and the [`SessionRelay`] to
    /// put on its request ([`SessionRelay::apply`]: the handler that asks
    /// the session's client what the member asks, the listener that relays
    /// its log messages, the session's version as the cap): `make` returns
    /// the client, or `None` for a member it does not know.
    ///
    /// Without it, every session's requests go through the group's own
    /// clients: progress and cancellation still reach the client, but a
    /// member's questions have nobody to go to, and no upstream session
    /// ends with a downstream one.
    pub fn session_clients(
        mut self,
        make: impl Fn(&str, SessionRelay) -> Option<McpClient> + Send + Sync + 'static,
    ) -> Self {
        self.session_clients = Some(Arc::new(make));
        self
    }

    /// Decides who may see and call which tool (see [`crate::policy`]):
    /// asked for every listing and every call, in both eras and over
    /// stdio.
    pub fn policy(mut self, policy: impl crate::policy::Policy) -> Self {
        self.governance.policy = Some(Arc::new(policy));
        self
    }

    /// Counts calls against `quotas`; a call past one is answered with
    /// the rate-limit error (-32023, `data.retryAfterMs`) and never sent.
    pub fn quotas(mut self, quotas: crate::Quotas) -> Self {
        self.governance.quotas = Some(quotas);
        self
    }

    /// Writes one [`AuditRecord`](crate::AuditRecord) per tool call to
    /// `sink`.
    pub fn audit(mut self, sink: impl crate::AuditSink) -> Self {
        self.governance.audit = Some(Arc::new(sink));
        self
    }

    /// The argument fields an audit record keeps (none by default: a
    /// record never holds arguments unless told which).
    pub fn audit_arguments<S: Into<String>>(mut self, fields: impl IntoIterator<Item = S>) -> Self {
        self.governance.audit_arguments = fields.into_iter().map(Into::into).collect();
        self
    }

    /// Serves 2025 sessions together with other replicas of this gateway
    /// behind one load balancer: each session this one opens is claimed in
    /// `owners` (shared by every replica: Redis, sealed with the fleet's
    /// key) under `this_replica`, its address as the other replicas reach
    /// it (its `/mcp` URL), and a request for a session another replica
    /// holds is handed to that one through `client` and its answer relayed
    /// (see docs/GATEWAY.md, "Replicas", for the trade-off). 2026-07-28
    /// requests need none of it.
    pub fn replicas(
        mut self,
        owners: impl OwnerStore,
        this_replica: &http::Uri,
        client: HttpClient,
    ) -> Self {
        self.replicas = Some(Replicas::new(Arc::new(owners), this_replica, client));
        self
    }

    /// Instruments the gateway (feature `otel`): a SERVER span per request
    /// it answers, the parent of the member's CLIENT span, and its metrics
    /// (see [`ServerTelemetry`](crate::ServerTelemetry)).
    #[cfg(feature = "otel")]
    pub fn telemetry(mut self, telemetry: crate::ServerTelemetry) -> Self {
        self.telemetry = Some(telemetry);
        self
    }

    /// The name and version the gateway gives itself.
    pub fn server_info(mut self, name: impl Into<String>, version: impl Into<String>) -> Self {
        self.name = name.into();
        self.version = version.into();
        self
    }

    fn authenticates(&self) -> bool {
        #[cfg(feature = "oauth")]
        return self.resource_server.is_some();
        #[cfg(not(feature = "oauth"))]
        false
    }

    /// The gateway.
    pub fn build(self) -> Gateway {
        let private = !self.tokens.0.is_empty() || self.authenticates();
        let inner = Arc::new(Inner {
            group: self.group,
            sessions: Sessions::new(self.idle, self.max_sessions, self.replicas),
            max_body: self.max_body,
            hosts: self.hosts,
            origins: self.origins,
            cache_hints: CacheHints {
                ttl_ms: u64::try_from(self.listing_ttl.as_millis()).unwrap_or(u64::MAX),
                private,
            },
            tokens: self.tokens,
            #[cfg(feature = "oauth")]
            resource_server: self.resource_server,
            name: self.name,
            version: self.version,
            keepalive: self.keepalive,
            session_clients: self.session_clients,
            governance: self.governance,
            rounds: Default::default(),
            listeners: Default::default(),
            sweeping: std::sync::OnceLock::new(),
            #[cfg(feature = "otel")]
            telemetry: self.telemetry,
        });
        #[cfg(feature = "otel")]
        if let Some(telemetry) = &inner.telemetry {
            let weak = Arc::downgrade(&inner);
            let open = move || weak.upgrade().map(|inner| inner.sessions.counts().0 as u64);
            telemetry.observe_sessions(open);
        }
        Gateway { inner }
    }
}
