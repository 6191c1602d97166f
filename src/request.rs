//! What one establishment is asked to do: the value that flows down the stack.
//!
//! A [`ConnectRequest`] is small and cheap to clone, so that middleware (a
//! recovery layer, a deadline layer) can hand a fresh copy to every attempt.
//! It carries the target, the transport mode, the version policy, the
//! limits, the absolute deadline and the caller's cancellation token. Its
//! `Debug` never shows header values, URL queries or userinfo.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use http::header::{HeaderMap, HeaderName, HeaderValue};
use http::Uri;
use mcp_connect_layers::Establishment;
use mcp_connect_layers::StageObserver;
use serde_json::Value;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::clock::Clock;
use crate::era_cache::EraCache;
use crate::error::{ConfigError, Error};
use crate::inbound::{ClientHandler, Inbound, NotificationSender};
pub use crate::policy::VersionPolicy;
use crate::protocol::{ClientInfo, ProtocolVersion};
use crate::session::ClientIdentity;
pub use crate::target::Target;
use crate::transport::StdioCommand;

/// Which transport to use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum TransportMode {
    /// Pick from the target: for URLs Streamable HTTP, falling back to
    /// HTTP+SSE when `initialize` is refused with 400, 404 or 405; stdio for
    /// commands.
    #[default]
    Auto,
    /// Streamable HTTP only (no HTTP+SSE fallback).
    StreamableHttp,
    /// Legacy HTTP+SSE only (the 2024-11-05 transport): GET the URL, wait for
    /// its `endpoint` event, POST there.
    Sse,
    /// A child process over stdio.
    Stdio,
}

/// What an attempt does differently from the one before it. Chosen by
/// the ladder's plan (`handshake::plan`) when recovery asks for another
/// attempt; never changes the caller's version policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Strategy {
    /// As the request is configured.
    #[default]
    AsConfigured,
    /// `initialize` first, skipping the modern probe (when the policy allows
    /// a legacy version at all).
    InitializeFirst,
    /// Legacy HTTP+SSE (for HTTP targets in auto mode).
    Sse,
}

/// The limits of one establishment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Limits {
    /// How long the modern probe may take.
    pub probe_timeout: Duration,
    /// How long each handshake request (`initialize`, `initialized`) may take.
    pub handshake_timeout: Duration,
    /// How long each request on the established session may take.
    pub request_timeout: Duration,
    /// How long closing a transport may take per step (stdio: after closing
    /// stdin, and again after SIGTERM).
    pub close_grace: Duration,
    /// The largest message (body, SSE event, stdio line) accepted, in bytes.
    pub max_message_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            probe_timeout: Duration::from_secs(10),
            handshake_timeout: Duration::from_secs(30),
            request_timeout: Duration::from_secs(60),
            close_grace: crate::transport::DEFAULT_CLOSE_GRACE,
            max_message_bytes: 16 * 1024 * 1024,
        }
    }
}

impl Limits {
    /// Sets the probe limit.
    #[must_use]
    pub fn with_probe_timeout(mut self, limit: Duration) -> Self {
        self.probe_timeout = limit;
        self
    }

    /// Sets the per-handshake-request limit.
    #[must_use]
    pub fn with_handshake_timeout(mut self, limit: Duration) -> Self {
        self.handshake_timeout = limit;
        self
    }

    /// Sets the per-request limit of the established session.
    #[must_use]
    pub fn with_request_timeout(mut self, limit: Duration) -> Self {
        self.request_timeout = limit;
        self
    }

    /// Sets the per-step close grace.
    #[must_use]
    pub fn with_close_grace(mut self, grace: Duration) -> Self {
        self.close_grace = grace;
        self
    }

    /// Sets the largest accepted message in bytes.
    #[must_use]
    pub fn with_max_message_bytes(mut self, bytes: usize) -> Self {
        self.max_message_bytes = bytes;
        self
    }
}

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
    target: Target,
    mode: TransportMode,
    versions: VersionPolicy,
    client: Arc<ClientIdentity>,
    limits: Limits,
    probe_timeout_is_legacy: bool,
    attempt: u32,
    started: Option<Instant>,
    deadline: Option<Instant>,
    cancel: Option<CancellationToken>,
    observers: Vec<Arc<dyn StageObserver>>,
    era_cache: Option<EraCache>,
    strategy: Strategy,
    /// The capabilities the caller set, before the handler's are added.
    declared: Value,
    handler: ClientHandler,
    listener: Option<NotificationSender>,
    /// The server's name for the application (notifications carry it).
    name: Arc<str>,
    /// Made from `handler` and `listener`; shared by every attempt and
    /// every session made from this request.
    inbound: Arc<Inbound>,
    /// How to authorize when the server asks (HTTP targets).
    auth: Option<crate::auth::Authorization>,
    /// Time spent waiting for a person (the authorization page), which
    /// does not count against the deadline.
    pause: mcp_connect_layers::deadline::DeadlinePause,
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
        let url: Uri = url.parse().map_err(|_| Error::config(ConfigError::Url))?;
        match (url.scheme_str(), url.host()) {
            (Some("http" | "https"), Some(host)) if !host.is_empty() => {}
            _ => return Err(Error::config(ConfigError::Url)),
        }
        if !crate::uri::port_is_valid(&url) {
            return Err(Error::config(ConfigError::Port));
        }
        let mut headers = HeaderMap::new();
        let split = url
            .authority()
            .and_then(|a| a.as_str().rsplit_once('@'))
            .map(|(userinfo, host)| (userinfo.to_owned(), host.to_owned()));
        let url = match split {
            None => url,
            Some((userinfo, host)) => {
                use base64::Engine as _;
                let encoded =
                    base64::engine::general_purpose::STANDARD.encode(basic_credentials(&userinfo));
                let mut value = HeaderValue::from_str(&format!("Basic {encoded}"))
                    .map_err(|_| Error::config(ConfigError::Header))?;
                value.set_sensitive(true);
                headers.insert(http::header::AUTHORIZATION, value);
                let mut parts = url.into_parts();
                parts.authority = Some(host.parse().map_err(|_| Error::config(ConfigError::Url))?);
                Uri::from_parts(parts).map_err(|_| Error::config(ConfigError::Url))?
            }
        };
        Ok(Self::new(Target::Http { url, headers }))
    }

    /// A request for a stdio server.
    pub fn stdio(command: StdioCommand) -> Self {
        Self::new(Target::Stdio(command))
    }

    fn new(target: Target) -> Self {
        ConnectRequest {
            name: target.to_string().into(),
            target,
            mode: TransportMode::Auto,
            versions: VersionPolicy::Auto,
            client: Arc::new(ClientIdentity {
                info: ClientInfo::default(),
                capabilities: Value::Object(Default::default()),
            }),
            limits: Limits::default(),
            probe_timeout_is_legacy: false,
            attempt: 1,
            started: None,
            deadline: None,
            cancel: None,
            observers: Vec::new(),
            era_cache: None,
            strategy: Strategy::AsConfigured,
            declared: Value::Object(Default::default()),
            handler: ClientHandler::new(),
            listener: None,
            inbound: Inbound::none(),
            auth: None,
            pause: Default::default(),
        }
    }

    /// Rebuilds the inbound seam and the capabilities after a change to the
    /// handler, the listener or the declared capabilities: the handler's
    /// kinds are added to what the caller declared, and nothing else is.
    fn refresh_inbound(&mut self) {
        self.inbound = Inbound::new(
            self.handler.clone(),
            self.listener.clone(),
            Arc::clone(&self.name),
        );
        let mut capabilities = self.declared.clone();
        if let (Value::Object(all), Value::Object(handled)) =
            (&mut capabilities, self.handler.capabilities())
        {
            all.extend(handled);
        }
        Arc::make_mut(&mut self.client).capabilities = capabilities;
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
        if is_reserved(&name) {
            return Err(Error::config(ConfigError::ReservedHeader));
        }
        let mut value =
            HeaderValue::from_str(value).map_err(|_| Error::config(ConfigError::Header))?;
        value.set_sensitive(true);
        if let Target::Http { headers, .. } = &mut self.target {
            headers.insert(name, value);
        }
        Ok(self)
    }

    /// Chooses the transport.
    #[must_use]
    pub fn with_mode(mut self, mode: TransportMode) -> Self {
        self.mode = mode;
        self
    }

    /// Sets the version policy.
    #[must_use]
    pub fn with_versions(mut self, versions: VersionPolicy) -> Self {
        self.versions = versions;
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
        Arc::make_mut(&mut self.client).info = info;
        self
    }

    /// Sets the client's capabilities object (the handler's kinds are
    /// added to it; see [`with_handler`](Self::with_handler)).
    #[must_use]
    pub fn with_capabilities(mut self, capabilities: Value) -> Self {
        self.declared = capabilities;
        self.refresh_inbound();
        self
    }

    /// Answers server requests (sampling, elicitation, roots) with
    /// `handler`, and declares exactly the kinds it answers. Requests from
    /// a POST reply stream, the standalone GET stream, the legacy SSE stream
    /// and a stdio server's stdout all reach it.
    #[must_use]
    pub fn with_handler(mut self, handler: ClientHandler) -> Self {
        self.handler = handler;
        self.refresh_inbound();
        self
    }

    /// Sends every server notification (progress, logging, list changes,
    /// resource updates, cancellations, unknown methods) to `listener`.
    #[must_use]
    pub fn with_notifications(mut self, listener: NotificationSender) -> Self {
        self.listener = Some(listener);
        self.refresh_inbound();
        self
    }

    /// Names the server for the application: every notification from it
    /// carries the name ([`ServerNotification::server`](crate::inbound::ServerNotification::server)).
    /// By default it is the target as printed (the URL without userinfo or
    /// query, or the stdio program).
    #[must_use]
    pub fn with_name(mut self, name: impl Into<Arc<str>>) -> Self {
        self.name = name.into();
        self.refresh_inbound();
        self
    }

    /// The server's name (see [`with_name`](Self::with_name)).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Authorizes with `auth` when the server answers 401 (or 403
    /// `insufficient_scope`): the authorization stage runs, then the
    /// establishment again with the token. See [`crate::auth`].
    #[must_use]
    pub fn with_authorization(mut self, auth: crate::auth::Authorization) -> Self {
        self.auth = Some(auth);
        self
    }

    /// Sets the limits.
    #[must_use]
    pub fn with_limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Over HTTP, treat a probe that times out as legacy evidence instead of
    /// an outage. (Over stdio it always is: old servers ignore unknown
    /// requests.)
    #[must_use]
    pub fn with_probe_timeout_as_legacy(mut self, legacy: bool) -> Self {
        self.probe_timeout_is_legacy = legacy;
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

    /// Consults and updates this era cache (unpinned, uncapped, auto-mode
    /// connections only).
    #[must_use]
    pub fn with_era_cache(mut self, cache: EraCache) -> Self {
        self.era_cache = Some(cache);
        self
    }

    /// Checks what can be checked before any I/O: the version policy, that
    /// the transport fits the target, a non-empty stdio command and non-zero
    /// limits. Every establishment runs this first; a command-line tool can
    /// run it to report a usage error before connecting.
    pub fn validate(&self) -> Result<(), Error> {
        self.versions.validate().map_err(Error::config)?;
        let fits = matches!(
            (&self.target, self.mode),
            (_, TransportMode::Auto)
                | (
                    Target::Http { .. },
                    TransportMode::StreamableHttp | TransportMode::Sse
                )
                | (Target::Stdio(_), TransportMode::Stdio)
        );
        if !fits {
            return Err(Error::config(ConfigError::TransportMismatch {
                // Never `auto` here: auto fits every target.
                transport: self.label(),
            }));
        }
        if let Target::Stdio(command) = &self.target {
            if command.program().is_empty() {
                return Err(Error::config(ConfigError::EmptyCommand));
            }
        }
        let limits = &self.limits;
        for (name, value) in [
            ("probe_timeout", limits.probe_timeout),
            ("handshake_timeout", limits.handshake_timeout),
            ("request_timeout", limits.request_timeout),
        ] {
            if value.is_zero() {
                return Err(Error::config(ConfigError::ZeroLimit { limit: name }));
            }
        }
        if limits.max_message_bytes == 0 {
            return Err(Error::config(ConfigError::ZeroLimit {
                limit: "max_message_bytes",
            }));
        }
        Ok(())
    }

    /// The caller's cancellation token, if linked.
    pub fn cancellation(&self) -> Option<&CancellationToken> {
        self.cancel.as_ref()
    }

    /// The target.
    pub fn target(&self) -> &Target {
        &self.target
    }

    /// The version policy.
    pub fn versions(&self) -> &VersionPolicy {
        &self.versions
    }

    /// The limits.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The attempt number.
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// The absolute deadline, if any, moved later by any time spent
    /// waiting for a person (the same value as
    /// [`Establishment::deadline`]).
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline.map(|d| self.pause.extend(d))
    }

    /// The transport mode.
    pub fn mode(&self) -> TransportMode {
        self.mode
    }
}

/// What the rest of the crate reads of a request; its fields stay private
/// so that every reader goes through one meaning per name.
impl ConnectRequest {
    /// This attempt's strategy (chosen by the ladder's plan).
    pub(crate) fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// A copy for attempt number `attempt`, run with `strategy`.
    pub(crate) fn for_attempt(&self, attempt: u32, strategy: Strategy) -> Self {
        let mut next = self.clone();
        next.attempt = attempt;
        next.strategy = strategy;
        next
    }

    /// The clock of one establishment of this request: its start (the
    /// deadline layer's, or now), deadline, pause, cancellation and
    /// observers.
    pub(crate) fn clock(&self) -> Clock {
        Clock::new(
            self.started.unwrap_or_else(Instant::now),
            self.deadline,
            self.cancel.clone(),
            self.attempt,
            self.observers.clone(),
            self.pause.clone(),
        )
    }

    pub(crate) fn client(&self) -> &Arc<ClientIdentity> {
        &self.client
    }

    pub(crate) fn inbound(&self) -> &Arc<Inbound> {
        &self.inbound
    }

    pub(crate) fn auth(&self) -> Option<&crate::auth::Authorization> {
        self.auth.as_ref()
    }

    pub(crate) fn era_cache(&self) -> Option<&EraCache> {
        self.era_cache.as_ref()
    }

    pub(crate) fn probe_timeout_is_legacy(&self) -> bool {
        self.probe_timeout_is_legacy
    }
}

/// Headers the caller may not set (see [`ConnectRequest::with_header`]).
fn is_reserved(name: &HeaderName) -> bool {
    const RESERVED: &[&str] = &[
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "proxy-connection",
        "te",
        "trailer",
        "upgrade",
        "content-type",
        "accept",
        "mcp-session-id",
        "mcp-protocol-version",
        "last-event-id",
    ];
    RESERVED.contains(&name.as_str())
}

impl Establishment for ConnectRequest {
    /// The deadline, moved later by any time spent waiting for a person.
    fn deadline(&self) -> Option<Instant> {
        ConnectRequest::deadline(self)
    }

    fn deadline_pause(&self) -> Option<&mcp_connect_layers::deadline::DeadlinePause> {
        Some(&self.pause)
    }

    fn set_deadline_pause(&mut self, pause: mcp_connect_layers::deadline::DeadlinePause) {
        self.pause = pause;
    }

    fn set_deadline(&mut self, started: Instant, deadline: Instant) {
        self.started = Some(started);
        self.deadline = Some(deadline);
    }

    fn started(&self) -> Option<Instant> {
        self.started
    }

    fn cancellation(&self) -> Option<&CancellationToken> {
        self.cancel.as_ref()
    }

    fn add_observer(&mut self, observer: Arc<dyn StageObserver>) {
        self.observers.push(observer);
    }

    fn observers(&self) -> &[Arc<dyn StageObserver>] {
        &self.observers
    }

    fn attempt(&self) -> u32 {
        self.attempt
    }

    fn label(&self) -> &'static str {
        match (self.mode, &self.target) {
            (TransportMode::Auto, Target::Http { .. }) => "auto",
            (TransportMode::Auto, Target::Stdio(_)) | (TransportMode::Stdio, _) => "stdio",
            (TransportMode::StreamableHttp, _) => "streamable-http",
            (TransportMode::Sse, _) => "sse",
        }
    }

    /// Every attempt opens a new transport and session: nothing of an
    /// earlier attempt is reused, so sending it again is always safe.
    fn is_replay_safe(&self) -> bool {
        true
    }

    /// The handshake reports its stages (probe, initialize, ...) itself.
    fn reports_stages(&self) -> bool {
        true
    }

    /// The stdio close ladder: stdin EOF, SIGTERM, SIGKILL, each given the
    /// close grace; an HTTP session's DELETE fits well inside.
    fn cleanup_bound(&self) -> Duration {
        self.limits.close_grace.saturating_mul(3)
    }
}

impl fmt::Debug for ConnectRequest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectRequest")
            .field("target", &self.target)
            .field("mode", &self.mode)
            .field("versions", &self.versions)
            .field("attempt", &self.attempt)
            .field("strategy", &self.strategy)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// The `user:password` bytes of HTTP Basic credentials from URL userinfo:
/// split at the first `:` (a user cannot hold one unencoded), each part
/// percent-decoded (RFC 3986 section 3.2.1).
fn basic_credentials(userinfo: &str) -> Vec<u8> {
    use percent_encoding::percent_decode_str;
    let (user, password) = match userinfo.split_once(':') {
        Some((user, password)) => (user, Some(password)),
        None => (userinfo, None),
    };
    let mut credentials: Vec<u8> = percent_decode_str(user).collect();
    credentials.push(b':');
    if let Some(password) = password {
        credentials.extend(percent_decode_str(password));
    }
    credentials
}
