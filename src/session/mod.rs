//! An established session, owned by the caller.
//!
//! A `Session` is what establishment returns: it was open when it was handed
//! over, and from then on it is the caller's. It never reconnects by itself.
//! When its transport ends (EOF, reset, child exit, HTTP 404 on the session)
//! it is terminal: every waiting request fails at once with the closure
//! category, and later requests fail fast with the same category.

use std::fmt;
use std::sync::atomic::AtomicI64;
use std::sync::Arc;
use std::time::Duration;

use mcp_connect_layers::{CancelSource, Closure, Stage};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::error::{Error, ErrorKind};
use crate::inbound::Inbound;
use crate::protocol::{error_bytes, result_bytes};
use crate::protocol::{Era, Notification, ProtocolVersion, RequestId, RpcError, ServerInfo};
use crate::transport::{ServerStream, Transport, TransportKind, TransportStats};

mod cached;
mod call;
mod identity;
mod listen;
mod options;
mod path;
#[cfg(feature = "skills")]
mod skills;
mod subscriptions;
mod tasks;
mod tool_headers;
mod typed;

pub use call::Call;
pub(crate) use identity::ClientIdentity;
pub use options::RequestOptions;
pub use path::MAX_INPUT_ROUNDS;
pub use typed::MAX_PAGES;
pub(crate) use typed::{more_pages, shape};

/// Whether a session can still be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionState {
    /// Requests can be sent.
    Open,
    /// The session ended; it will never be usable again.
    Closed(Closure),
}

/// What the handshake learnt, handed to [`Session`].
#[derive(Debug)]
pub(crate) struct Negotiated {
    pub(crate) version: ProtocolVersion,
    pub(crate) server_info: ServerInfo,
    pub(crate) capabilities: Value,
    pub(crate) instructions: Option<String>,
    /// The modern `_meta` envelope the probe already encoded.
    pub(crate) meta: Option<Arc<RawValue>>,
    /// The discover result the era cache may remember.
    pub(crate) discovered: Option<crate::era_cache::RememberedDiscover>,
    /// Whether the session starts from a remembered discover result (no
    /// probe was sent), so the server has not yet confirmed the version.
    pub(crate) from_memory: bool,
}

/// An established MCP session.
pub struct Session {
    transport: Arc<dyn Transport>,
    negotiated: Negotiated,
    client: Arc<ClientIdentity>,
    next_id: AtomicI64,
    request_timeout: Duration,
    inbound: Arc<Inbound>,
    /// Reads the standalone server stream, when the session owns one.
    listener: Option<listen::Listener>,
    /// The modern era's `_meta` envelope, encoded once.
    meta: Option<Arc<RawValue>>,
    /// The tools' `x-mcp-header` declarations (modern era).
    tool_headers: tool_headers::ToolHeaders,
    /// The 2026-07-28 subscription (`subscriptions/listen`).
    subscriptions: subscriptions::Subscriptions,
    /// How to authorize again when a request is refused. Boxed, like the
    /// cache: most sessions have neither, and a session is moved whole
    /// through every layer of the establishment.
    auth: Option<Box<crate::auth::Authorizer>>,
    /// The response cache (modern era).
    cache: Option<Box<cached::SessionCache>>,
    /// Set when the session started from a remembered discover.
    remembered: Option<cached::Remembered>,
    /// Spans and metrics for this session's requests (feature `otel`).
    telemetry: Option<crate::telemetry::call::SessionTelemetry>,
}

/// Everything a session is made of: what the handshake negotiated and
/// opened, and the configuration it serves with. The handshake fills it
/// in one place.
pub(crate) struct Parts<'a> {
    pub(crate) transport: Box<dyn Transport>,
    pub(crate) negotiated: Negotiated,
    /// The first id the session's own requests take (the handshake used
    /// those before it).
    pub(crate) first_id: i64,
    /// The GET stream opened during establishment, when one was.
    pub(crate) server_stream: Option<ServerStream>,
    pub(crate) client: Arc<ClientIdentity>,
    pub(crate) request_timeout: Duration,
    pub(crate) inbound: Arc<Inbound>,
    /// How to authorize again when a request is refused.
    pub(crate) auth: Option<crate::auth::Authorizer>,
    pub(crate) response_cache: Option<&'a crate::response_cache::ResponseCache>,
    pub(crate) target: &'a crate::request::Target,
    pub(crate) telemetry: Option<&'a crate::telemetry::Telemetry>,
    pub(crate) peer: crate::telemetry::establish::Peer<'a>,
}

impl Session {
    /// The session made of `parts`.
    pub(crate) fn new(parts: Parts<'_>) -> Self {
        let Parts {
            transport,
            mut negotiated,
            first_id,
            server_stream,
            client,
            request_timeout,
            inbound,
            auth,
            response_cache,
            target,
            telemetry,
            peer,
        } = parts;
        let transport: Arc<dyn Transport> = Arc::from(transport);
        // The legacy era over Streamable HTTP sends what is not tied to a
        // request on the GET stream, opened during establishment when the
        // application listens, and read here.
        let listener = server_stream.map(|stream| {
            listen::Listener::start(
                stream,
                Arc::clone(&transport),
                Arc::clone(&inbound),
                negotiated.version.clone(),
            )
        });
        let meta = match negotiated.meta.take() {
            Some(meta) => Some(meta),
            None => (negotiated.version.era() == Era::Modern)
                .then(|| client.encoded_meta(&negotiated.version)),
        };
        Session {
            meta,
            transport,
            negotiated,
            client,
            next_id: AtomicI64::new(first_id),
            request_timeout,
            inbound,
            listener,
            tool_headers: Default::default(),
            subscriptions: Default::default(),
            auth: auth.map(Box::new),
            cache: None,
            remembered: None,
            telemetry: None,
        }
        .with_cache(response_cache, target)
        .with_telemetry(telemetry, peer)
    }

    /// `work` inside the session's `establish` span, when telemetry is on:
    /// the listings a new session makes belong to its establishment.
    pub(crate) fn within_establishment<'a, T: 'a>(
        &self,
        work: futures_util::future::BoxFuture<'a, T>,
    ) -> futures_util::future::BoxFuture<'a, T> {
        match &self.telemetry {
            Some(telemetry) => telemetry.within_establishment(work),
            None => work,
        }
    }

    /// The failed request that lost this session, as telemetry links to it
    /// (nothing without telemetry).
    pub(crate) fn loss_cause(&self) -> crate::telemetry::establish::Cause {
        self.telemetry
            .as_ref()
            .map(|telemetry| telemetry.loss_cause())
            .unwrap_or_default()
    }

    /// Instruments this session's requests with `telemetry`.
    fn with_telemetry(
        mut self,
        telemetry: Option<&crate::telemetry::Telemetry>,
        peer: crate::telemetry::establish::Peer<'_>,
    ) -> Self {
        self.telemetry = telemetry.map(|telemetry| {
            crate::telemetry::call::SessionTelemetry::new(
                telemetry,
                peer,
                self.negotiated.version.as_str(),
                || self.transport.session_id_text(),
            )
        });
        self
    }

    /// The negotiated protocol version.
    pub fn protocol_version(&self) -> &ProtocolVersion {
        &self.negotiated.version
    }

    /// The era of the negotiated version.
    pub fn era(&self) -> Era {
        self.negotiated.version.era()
    }

    /// The server's name and version.
    pub fn server_info(&self) -> &ServerInfo {
        &self.negotiated.server_info
    }

    /// The server's capabilities object.
    pub fn capabilities(&self) -> &Value {
        &self.negotiated.capabilities
    }

    /// The server's instructions for the model, if any.
    pub fn instructions(&self) -> Option<&str> {
        self.negotiated.instructions.as_deref()
    }

    /// The kind of transport.
    pub fn transport_kind(&self) -> TransportKind {
        self.transport.kind()
    }

    /// What the transport counted and was given: HTTP requests sent so
    /// far (establishment included), whether the server assigned a
    /// session id.
    pub fn stats(&self) -> TransportStats {
        self.transport.stats()
    }

    /// Whether the server assigned this session an id that every request
    /// carries (Streamable HTTP with a session, legacy HTTP+SSE).
    pub(crate) fn has_session_id(&self) -> bool {
        self.transport.stats().session_id
    }

    /// Whether the session is still usable.
    pub fn state(&self) -> SessionState {
        match self.transport.closed() {
            None => SessionState::Open,
            Some(closure) => SessionState::Closed(closure),
        }
    }

    /// The transport as its concrete type, when it is one: for example the
    /// stdio transport, to read the server's recent stderr or its pid.
    ///
    /// ```no_run
    /// # async fn run(session: mcp_connect::Session) {
    /// use mcp_connect::transport::StdioTransport;
    ///
    /// if let Some(stdio) = session.transport_as::<StdioTransport>() {
    ///     println!("server pid {:?}", stdio.pid());
    ///     for line in stdio.stderr_tail() {
    ///         eprintln!("server: {line}");
    ///     }
    /// }
    /// # }
    /// ```
    pub fn transport_as<T: Transport>(&self) -> Option<&T> {
        let any: &dyn std::any::Any = self.transport.as_ref();
        any.downcast_ref::<T>()
    }

    /// Runs a transport operation within the per-request limit.
    async fn within<T>(
        &self,
        operation: impl std::future::Future<Output = Result<T, crate::error::TransportError>>,
    ) -> Result<T, Error> {
        tokio::time::timeout(self.request_timeout, operation)
            .await
            .map_err(|_| {
                Error::new(
                    Stage::REQUEST,
                    ErrorKind::Timeout(CancelSource::RequestTimeout),
                )
            })?
            .map_err(|e| Error::transport(Stage::REQUEST, e))
    }

    /// Sends a notification. On the modern era over HTTP there are no
    /// client notifications; sending one is the caller's choice.
    pub async fn notify(&self, method: &str, params: Option<Value>) -> Result<(), Error> {
        let notification = Notification {
            method: method.to_owned(),
            params,
        };
        self.within(
            self.transport
                .notify(&notification, Some(&self.negotiated.version)),
        )
        .await
    }

    /// Opens the server-to-client stream, for applications that want the
    /// server's own notifications and requests (the Streamable HTTP GET).
    /// `Ok(None)` when the server offers none (405, or 400 from some
    /// servers), on the modern era, and on transports without one.
    ///
    /// A session whose connection request has a handler or a notification
    /// listener opened that stream during establishment, reads it itself and
    /// answers `Ok(None)` here.
    pub async fn server_stream(&self) -> Result<Option<ServerStream>, Error> {
        if self.listener.is_some() {
            return Ok(None);
        }
        self.within(self.transport.open_server_stream()).await
    }

    /// Continues a [`ServerStream`] the server cut, from its
    /// [`last_event_id`](ServerStream::last_event_id): the same stream, with
    /// the events after that one (and none it already delivered), after the
    /// server's `retry:` delay, at most 3 attempts in a row. A stream
    /// without an event id, or one the server will not resume, is
    /// [`TransportError::NotResumed`](crate::error::TransportError::NotResumed).
    pub async fn resume_server_stream(&self, stream: &mut ServerStream) -> Result<(), Error> {
        self.within(self.transport.resume_server_stream(stream, Closure::Eof))
            .await
    }

    /// Answers a request the server sent (from a [`ServerStream`]).
    pub async fn respond(
        &self,
        id: &RequestId,
        outcome: Result<Value, RpcError>,
    ) -> Result<(), Error> {
        let bytes = match &outcome {
            Ok(result) => result_bytes(id, result),
            Err(error) => error_bytes(id, error.code(), error.message()),
        };
        self.within(
            self.transport
                .respond(bytes, Some(&self.negotiated.version)),
        )
        .await
    }

    /// Closes the session: ends the HTTP session (DELETE) or stops the
    /// process. Idempotent; a close that fails still leaves the session
    /// closed.
    pub async fn close(&self) -> Result<(), Error> {
        if let Some(telemetry) = &self.telemetry {
            telemetry.end();
        }
        if let Some(listener) = &self.listener {
            listener.stop();
        }
        self.subscriptions.stop();
        self.transport
            .close()
            .await
            .map_err(|e| Error::transport(Stage::CLOSE, e))
    }
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("protocol_version", &self.negotiated.version)
            .field("transport", &self.transport)
            .field("state", &self.state())
            .finish_non_exhaustive()
    }
}
