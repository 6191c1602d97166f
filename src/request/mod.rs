//! What one establishment is asked to do: the value that flows down the stack.
//!
//! A [`ConnectRequest`] is small and cheap to clone, so that middleware (a
//! recovery layer, a deadline layer) can hand a fresh copy to every attempt.
//! It carries the target, the transport mode, the version policy, the
//! limits, the absolute deadline and the caller's cancellation token. Its
//! `Debug` never shows header values, URL queries or userinfo.

pub(crate) mod clock;
mod endpoint;
mod establishment;
mod options;
mod settings;
#[cfg(feature = "otel")]
mod telemetry;
pub(crate) mod uri;
mod validate;
mod version_policy;

use std::fmt;
use std::sync::Arc;

use http::header::{HeaderName, HeaderValue};
use mcp_connect_layers::StageObserver;
use serde_json::Value;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::era_cache::EraCache;
use crate::error::{ConfigError, Error};
use crate::inbound::{ClientHandler, Inbound, NotificationSender};
use crate::protocol::{ClientInfo, ProtocolVersion};
use crate::session::ClientIdentity;
pub use crate::transport::target::Target;
use crate::transport::StdioCommand;
pub(crate) use options::Strategy;
pub use options::{Limits, TransportMode};
use settings::Settings;
pub use version_policy::VersionPolicy;

/// One establishment request.
///
/// ```
/// use std::time::Duration;
/// use mcp_connect::protocol::ProtocolVersion;
/// use mcp_connect::request::Limits;
/// use mcp_connect::ConnectRequest;
///
/// let request = ConnectRequest::http("https://mcp.example.com/mcp")?
///     .with_pin(ProtocolVersion::V2025_11_25)
///     .with_header("X-Api-Key", "from-the-environment")?
///     .with_limits(Limits::default().with_request_timeout(Duration::from_secs(30)));
/// // `Debug` shows no header value, userinfo or query.
/// assert!(!format!("{request:?}").contains("from-the-environment"));
/// # Ok::<(), mcp_connect::Error>(())
/// ```
#[derive(Clone)]
pub struct ConnectRequest {
    /// Shared like the settings: every attempt's request is a clone.
    target: Arc<Target>,
    /// Everything long-lived, built once and shared: cloning a request
    /// (per attempt, per reconnect of a long-lived client) copies none of
    /// it. A builder method on a shared value copies it once
    /// (`Arc::make_mut`).
    settings: Arc<Settings>,
    attempt: u32,
    started: Option<Instant>,
    deadline: Option<Instant>,
    cancel: Option<CancellationToken>,
    observers: Vec<Arc<dyn StageObserver>>,
    strategy: Strategy,
    /// Time spent waiting for a person (the authorization page), which
    /// does not count against the deadline.
    pause: mcp_connect_layers::deadline::DeadlinePause,
    /// The failed request that lost the session this one replaces.
    cause: crate::telemetry::establish::Cause,
}

impl ConnectRequest {
    /// A request for an HTTP endpoint. Fails with a configuration error if
    /// `url` is not an absolute `http://` or `https://` URL
    /// ([`ConfigError::Url`]) or names a port outside 1 to 65535
    /// ([`ConfigError::Port`]; `http::Uri` would otherwise read it as the
    /// default port).
    ///
    /// Userinfo in the URL (`https://user:password@host/`) is taken out of
    /// the URL and sent as HTTP Basic `Authorization` (marked sensitive), so
    /// it never travels inside the URL where clients and proxies log it.
    /// The user and the password are percent-decoded first (RFC 3986), as
    /// curl does: `p%40ss` is the password `p@ss`.
    pub fn http(url: &str) -> Result<Self, Error> {
        Ok(Self::new(endpoint::http(url)?))
    }

    /// A request for a stdio server.
    pub fn stdio(command: StdioCommand) -> Self {
        Self::new(Target::Stdio(command))
    }

    fn new(target: Target) -> Self {
        ConnectRequest {
            settings: Arc::new(Settings {
                name: target.to_string().into(),
                mode: TransportMode::Auto,
                versions: VersionPolicy::Auto,
                client: Arc::new(ClientIdentity::new(
                    ClientInfo::default(),
                    Value::Object(Default::default()),
                )),
                limits: Limits::default(),
                probe_timeout_is_legacy: false,
                era_cache: None,
                response_cache: None,
                declared: Value::Object(Default::default()),
                handler: ClientHandler::new(),
                listener: None,
                inbound: Inbound::none(),
                auth: None,
                http: None,
                telemetry: None,
            }),
            target: Arc::new(target),
            attempt: 1,
            started: None,
            deadline: None,
            cancel: None,
            observers: Vec::new(),
            strategy: Strategy::AsConfigured,
            pause: Default::default(),
            cause: Default::default(),
        }
    }

    /// The configuration, to change: copied first when shared.
    fn settings_mut(&mut self) -> &mut Settings {
        Arc::make_mut(&mut self.settings)
    }

    /// Whether two requests share one configuration (nothing was copied
    /// between them): what a long-lived client's reconnects rely on.
    #[cfg(test)]
    pub(crate) fn shares_settings_with(&self, other: &ConnectRequest) -> bool {
        Arc::ptr_eq(&self.settings, &other.settings)
    }

    /// Rebuilds the inbound seam and the capabilities after a change to the
    /// handler, the listener or the declared capabilities: the handler's
    /// kinds are added to what the caller declared, and nothing else is.
    fn refresh_inbound(&mut self) {
        let mut inbound = Inbound::new(
            self.settings.handler.clone(),
            self.settings.listener.clone(),
            Arc::clone(&self.settings.name),
        );
        if let Some(cache) = &self.settings.response_cache {
            let cache = std::sync::Arc::new(cache.clone());
            inbound = inbound.invalidating(cache, EraCache::key(&self.target).into());
        }
        let inbound = inbound.instrumented(self.settings.telemetry.clone());
        self.settings_mut().inbound = inbound;
        let mut capabilities = self.settings.declared.clone();
        if let (Value::Object(all), Value::Object(handled)) =
            (&mut capabilities, self.settings.handler.capabilities())
        {
            all.extend(handled);
        }
        Arc::make_mut(&mut self.settings_mut().client).set_capabilities(capabilities);
    }

    /// Sets a header on every HTTP request (ignored for stdio), replacing any
    /// earlier value of the same name. Its value is marked sensitive and
    /// never printed.
    ///
    /// Headers that belong to the HTTP framing or to the transport itself
    /// (`Host`, `Content-Length`, `Transfer-Encoding`, the hop-by-hop
    /// headers, `Content-Type`, `Accept`, `Mcp-Session-Id`,
    /// `MCP-Protocol-Version`, `Last-Event-ID`) are refused with
    /// [`ConfigError::ReservedHeader`]: a caller's value there would corrupt
    /// the message framing or the session.
    pub fn with_header(mut self, name: &str, value: &str) -> Result<Self, Error> {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| Error::config(ConfigError::Header))?;
        if endpoint::is_reserved(&name) {
            return Err(Error::config(ConfigError::ReservedHeader));
        }
        let mut value =
            HeaderValue::from_str(value).map_err(|_| Error::config(ConfigError::Header))?;
        value.set_sensitive(true);
        if let Target::Http { headers, .. } = Arc::make_mut(&mut self.target) {
            headers.insert(name, value);
        }
        Ok(self)
    }

    /// Chooses the transport.
    #[must_use]
    pub fn with_mode(mut self, mode: TransportMode) -> Self {
        self.settings_mut().mode = mode;
        self
    }

    /// Sets the version policy.
    #[must_use]
    pub fn with_versions(mut self, versions: VersionPolicy) -> Self {
        self.settings_mut().versions = versions;
        self
    }

    /// Pins one exact version.
    #[must_use]
    pub fn with_pin(self, version: ProtocolVersion) -> Self {
        self.with_versions(VersionPolicy::Pin(version))
    }

    /// Caps the versions offered.
    #[must_use]
    pub fn with_ceiling(self, version: ProtocolVersion) -> Self {
        self.with_versions(VersionPolicy::Ceiling(version))
    }

    /// Sets the client's name and version.
    #[must_use]
    pub fn with_client_info(mut self, info: ClientInfo) -> Self {
        Arc::make_mut(&mut self.settings_mut().client).set_info(info);
        self
    }

    /// Sets the client's capabilities object (the handler's kinds are
    /// added to it; see [`with_handler`](Self::with_handler)).
    #[must_use]
    pub fn with_capabilities(mut self, capabilities: Value) -> Self {
        self.settings_mut().declared = capabilities;
        self.refresh_inbound();
        self
    }

    /// Answers server requests (sampling, elicitation, roots) with
    /// `handler`, and declares exactly the kinds it answers. Requests from
    /// a POST reply stream, the standalone GET stream, the legacy SSE stream
    /// and a stdio server's stdout all reach it.
    #[must_use]
    pub fn with_handler(mut self, handler: ClientHandler) -> Self {
        self.settings_mut().handler = handler;
        self.refresh_inbound();
        self
    }

    /// Sends every server notification (progress, logging, list changes,
    /// resource updates, cancellations, unknown methods) to `listener`.
    #[must_use]
    pub fn with_notifications(mut self, listener: NotificationSender) -> Self {
        self.settings_mut().listener = Some(listener);
        self.refresh_inbound();
        self
    }

    /// Names the server for the application: every notification from it
    /// carries the name ([`ServerNotification::server`](crate::inbound::ServerNotification::server)).
    /// By default it is the target as printed (the URL without userinfo or
    /// query, or the stdio program).
    #[must_use]
    pub fn with_name(mut self, name: impl Into<Arc<str>>) -> Self {
        self.settings_mut().name = name.into();
        self.refresh_inbound();
        self
    }

    /// The listener given to [`with_notifications`](Self::with_notifications).
    pub(crate) fn listener(&self) -> Option<&NotificationSender> {
        self.settings.listener.as_ref()
    }

    /// The server's name (see [`with_name`](Self::with_name)).
    pub fn name(&self) -> &str {
        &self.settings.name
    }

    /// Authorizes with `auth` when the server answers 401 (or 403
    /// `insufficient_scope`): the authorization stage runs, then the
    /// establishment again with the token. See [`crate::auth`].
    #[must_use]
    pub fn with_authorization(mut self, auth: crate::auth::Authorization) -> Self {
        self.settings_mut().auth = Some(auth);
        self
    }

    /// Sets the limits.
    #[must_use]
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.settings_mut().limits = limits;
        self
    }

    /// Over HTTP, treat a probe that times out as legacy evidence instead of
    /// an outage. (Over stdio it always is: old servers ignore unknown
    /// requests.)
    #[must_use]
    pub fn with_probe_timeout_as_legacy(mut self, legacy: bool) -> Self {
        self.settings_mut().probe_timeout_is_legacy = legacy;
        self
    }

    /// Sets the absolute deadline of the whole establishment.
    #[must_use]
    pub fn with_deadline(mut self, deadline: Instant) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Links the caller's cancellation.
    #[must_use]
    pub fn with_cancellation(mut self, token: CancellationToken) -> Self {
        self.cancel = Some(token);
        self
    }

    /// Receives every stage event of the establishment (in addition to any
    /// observer already added).
    #[must_use]
    pub fn with_observer(mut self, observer: Arc<dyn StageObserver>) -> Self {
        self.observers.push(observer);
        self
    }

    /// Sends this request's HTTP (every transport and the authorization
    /// stage) through `client` instead of the connector's: one server with
    /// its own TLS settings (a private CA, a client certificate), proxy or
    /// redirect policy among many that share the connector's client.
    #[must_use]
    pub fn with_http_client(mut self, client: crate::transport::HttpClient) -> Self {
        self.settings_mut().http = Some(client);
        self
    }

    /// This request with `telemetry` in place of any it had (the `otel`
    /// feature's `with_telemetry`).
    pub(crate) fn with_instruments(
        mut self,
        telemetry: Option<crate::telemetry::Telemetry>,
    ) -> Self {
        self.settings_mut().telemetry = telemetry;
        self.refresh_inbound();
        self
    }

    /// Which server this request is for, as telemetry names it.
    pub(crate) fn peer(&self) -> crate::telemetry::establish::Peer<'_> {
        crate::telemetry::establish::Peer {
            name: self.name(),
            http: self.target().http_url(),
            program: self.target().program(),
        }
    }

    /// The request's telemetry, when it has one.
    pub(crate) fn instruments(&self) -> Option<&crate::telemetry::Telemetry> {
        self.settings.telemetry.as_ref()
    }

    /// This establishment replaces a session lost after `cause` failed.
    pub(crate) fn caused_by(mut self, cause: crate::telemetry::establish::Cause) -> Self {
        self.cause = cause;
        self
    }

    /// What the establishment's span links to.
    pub(crate) fn cause(&self) -> &crate::telemetry::establish::Cause {
        &self.cause
    }

    /// The request's own HTTP client, when it has one
    /// ([`with_http_client`](Self::with_http_client)).
    pub fn http_client(&self) -> Option<&crate::transport::HttpClient> {
        self.settings.http.as_ref()
    }

    /// Consults and updates this era cache (unpinned, uncapped, auto-mode
    /// connections only).
    #[must_use]
    pub fn with_era_cache(mut self, cache: EraCache) -> Self {
        self.settings_mut().era_cache = Some(cache);
        self
    }

    /// Answers the cacheable requests of 2026-07-28 sessions from `cache`
    /// while the server says they are fresh, and invalidates them on the
    /// server's change notifications (see [`crate::response_cache`]). One
    /// cache may serve many requests and servers: keys hold the server.
    #[must_use]
    pub fn with_response_cache(mut self, cache: crate::response_cache::ResponseCache) -> Self {
        self.settings_mut().response_cache = Some(cache);
        self.refresh_inbound();
        self
    }

    /// The response cache given to
    /// [`with_response_cache`](Self::with_response_cache).
    pub fn response_cache(&self) -> Option<&crate::response_cache::ResponseCache> {
        self.settings.response_cache.as_ref()
    }

    /// The caller's cancellation token, if linked.
    pub fn cancellation(&self) -> Option<&CancellationToken> {
        self.cancel.as_ref()
    }

    /// This request without its absolute deadline and cancellation, and
    /// them: what one connect was given, kept apart from what every later
    /// connect of a long-lived client reuses.
    pub(crate) fn split_per_connect(
        mut self,
    ) -> (Self, Option<Instant>, Option<CancellationToken>) {
        let (deadline, cancel) = (self.deadline.take(), self.cancel.take());
        (self, deadline, cancel)
    }

    /// The target.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The version policy.
    pub fn versions(&self) -> &VersionPolicy {
        &self.settings.versions
    }

    /// The limits.
    pub fn limits(&self) -> &Limits {
        &self.settings.limits
    }

    /// The attempt number.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The absolute deadline, if any, moved later by any time spent
    /// waiting for a person (the same value as
    /// [`Establishment::deadline`](mcp_connect_layers::Establishment::deadline)).
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline.map(|d| self.pause.extend(d))
    }

    /// The transport mode.
    pub fn mode(&self) -> TransportMode {
        self.settings.mode
    }
}

impl fmt::Debug for ConnectRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectRequest")
            .field("target", &self.target)
            .field("mode", &self.settings.mode)
            .field("versions", &self.settings.versions)
            .field("attempt", &self.attempt)
            .field("strategy", &self.strategy)
            .field("limits", &self.settings.limits)
            .finish_non_exhaustive()
    }
}
