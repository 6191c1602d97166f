//! The reconnect-capable make-service: every call builds a fresh transport
//! and runs the handshake on it.
//!
//! [`Connector`] is a `tower::Service<ConnectRequest>` whose response is an
//! owned [`Session`]. Nothing survives from one call to the next except the
//! shared HTTP client (which belongs to whoever built it and is never shut
//! down here), so middleware above it can retry establishment and be sure
//! each attempt starts from nothing: a new HTTP session, a new process.

use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_util::future::BoxFuture;
use mcp_connect_layers::classify::ClassifyOutcome;
use mcp_connect_layers::Establishment;
use mcp_connect_layers::Stage;
use tokio::time::Instant;
use tower_service::Service;

use crate::clock::Clock;
use crate::error::{ConfigError, Error, TransportError};
use crate::handshake::{establish, Open};
use crate::request::{ConnectRequest, TransportMode};
use crate::session::Session;
use crate::target::Target;
use crate::transport::{HttpClient, LegacySse, StdioTransport, StreamableHttp, Transport};

/// Makes a new, established [`Session`] for every [`ConnectRequest`].
#[derive(Clone)]
pub struct Connector {
    http: HttpClient,
}

impl Connector {
    /// A connector with its own default HTTP client (pooled, keep-alive,
    /// rustls), shared by every session it makes.
    pub fn new() -> Self {
        Connector {
            http: HttpClient::default_client(),
        }
    }

    /// A connector over the caller's HTTP client stack.
    pub fn with_client(http: HttpClient) -> Self {
        Connector { http }
    }

    /// The HTTP client.
    pub fn http_client(&self) -> &HttpClient {
        &self.http
    }

    /// Checks, before any I/O, that this connector can serve `request`:
    /// everything [`ConnectRequest::validate`] checks, and that an
    /// `https://` target has a client that speaks TLS
    /// ([`ConfigError::TlsUnavailable`] otherwise).
    pub fn validate(&self, request: &ConnectRequest) -> Result<(), Error> {
        request.validate()?;
        match &request.target {
            Target::Http { url, .. }
                if url.scheme() == Some(&http::uri::Scheme::HTTPS) && !self.http.speaks_tls() =>
            {
                Err(Error::config(ConfigError::TlsUnavailable))
            }
            _ => Ok(()),
        }
    }

    /// Establishes one session (the same as calling the service).
    pub async fn connect(&self, request: ConnectRequest) -> Result<Session, Error> {
        self.validate(&request)?;
        let started = request.started.unwrap_or_else(Instant::now);
        let clock = Clock::new(
            started,
            request.deadline,
            request.cancel.clone(),
            request.attempt,
            request.observers.clone(),
            request.pause.clone(),
        );
        establish(&request, &clock, self).await
    }
}

impl Connector {
    /// The HTTP client for `request`'s transport: with the bearer layer
    /// when it authorizes.
    fn client_for(&self, request: &ConnectRequest) -> HttpClient {
        match (&request.auth, &request.target) {
            (Some(auth), Target::Http { url, .. }) => match url::Url::parse(&url.to_string()) {
                Ok(server) => auth.bearer(self.http.clone(), &server),
                Err(_) => self.http.clone(),
            },
            _ => self.http.clone(),
        }
    }
}

impl Open for Connector {
    fn http_client(&self) -> &HttpClient {
        &self.http
    }

    fn open_sse<'a>(
        &'a self,
        request: &'a ConnectRequest,
    ) -> BoxFuture<'a, Result<Box<dyn Transport>, TransportError>> {
        Box::pin(async move {
            let Target::Http { url, headers } = &request.target else {
                unreachable!("establish checks that SSE has an HTTP target")
            };
            let transport = LegacySse::connect_with(
                self.client_for(request),
                url.clone(),
                headers.clone(),
                request.limits.max_message_bytes,
                Arc::clone(&request.inbound),
            )
            .await?;
            Ok(Box::new(transport) as Box<dyn Transport>)
        })
    }

    fn open(&self, request: &ConnectRequest) -> Result<Box<dyn Transport>, Error> {
        let limits = &request.limits;
        match (&request.target, request.mode) {
            (
                Target::Http { url, headers },
                TransportMode::Auto | TransportMode::StreamableHttp,
            ) => Ok(Box::new(
                StreamableHttp::new(
                    self.client_for(request),
                    url.clone(),
                    headers.clone(),
                    limits.max_message_bytes,
                )
                .with_close_timeout(limits.close_grace)
                .with_inbound(Arc::clone(&request.inbound)),
            )),
            (Target::Stdio(command), TransportMode::Auto | TransportMode::Stdio) => {
                let transport = StdioTransport::spawn_with(
                    command,
                    limits.max_message_bytes,
                    limits.close_grace,
                    Arc::clone(&request.inbound),
                )
                .map_err(|e: TransportError| Error::transport(Stage::CONNECT, e))?;
                Ok(Box::new(transport))
            }
            // `ConnectRequest::validate` refuses these before any transport is opened.
            _ => Err(Error::config(ConfigError::TransportMismatch {
                transport: request.label(),
            })),
        }
    }
}

impl Default for Connector {
    fn default() -> Self {
        Connector::new()
    }
}

impl fmt::Debug for Connector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connector").finish_non_exhaustive()
    }
}

impl Service<ConnectRequest> for Connector {
    type Response = Session;
    type Error = Error;
    type Future = BoxFuture<'static, Result<Session, Error>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: ConnectRequest) -> Self::Future {
        let connector = self.clone();
        Box::pin(async move { connector.connect(request).await })
    }
}

/// Every failure of an establishment is already an [`Error`]: a session is
/// never a failure.
impl ClassifyOutcome<Error> for Session {
    type Error = Error;

    fn classify_outcome(outcome: Result<Session, Error>) -> Result<Session, Error> {
        outcome
    }
}
