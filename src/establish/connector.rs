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
use tower_service::Service;

use crate::error::{ConfigError, Error};
use crate::establish::handshake;
use crate::request::ConnectRequest;
use crate::request::Target;
use crate::session::Session;
use crate::transport::HttpClient;

/// Makes a new, established [`Session`] for every [`ConnectRequest`].
#[derive(Clone)]
pub struct Connector {
    /// Shared: the connector is cloned for every establishment (by the
    /// stack's erased service, the recovery layer and its own `call`), and
    /// an `HttpClient` clone is a boxed service's.
    http: Arc<HttpClient>,
}

impl Connector {
    /// A connector with its own default HTTP client (pooled, keep-alive,
    /// rustls), shared by every session it makes.
    pub fn new() -> Self {
        Connector {
            http: Arc::new(HttpClient::default_client()),
        }
    }

    /// A connector over the caller's HTTP client stack.
    pub fn with_client(http: HttpClient) -> Self {
        Connector {
            http: Arc::new(http),
        }
    }

    /// The HTTP client (a request's own, set with
    /// [`ConnectRequest::with_http_client`], takes its place for that
    /// request).
    pub fn http_client(&self) -> &HttpClient {
        &self.http
    }

    /// Checks, before any I/O, that this connector can serve `request`:
    /// everything [`ConnectRequest::validate`] checks, and that an
    /// `https://` target has a client that speaks TLS
    /// ([`ConfigError::TlsUnavailable`] otherwise), and that authorization
    /// can read the URL of an HTTP target it protects ([`ConfigError::Url`]).
    pub fn validate(&self, request: &ConnectRequest) -> Result<(), Error> {
        self.checked(request)?;
        // Built only to see that it can be; the establishment builds its own.
        handshake::authorizer(request, self.client_for(request)).map(drop)
    }

    /// Establishes one session (the same as calling the service).
    pub async fn connect(&self, request: ConnectRequest) -> Result<Session, Error> {
        if let Some(telemetry) = request.instruments().cloned() {
            let attempt = request.attempt();
            let peer = request.peer().owned();
            return crate::telemetry::establish::attempt(
                &telemetry,
                peer.borrowed(),
                attempt,
                |stages| {
                    let request = request.with_observer(stages);
                    async move { self.connect_checked(&request).await }
                },
                |made| made.as_ref().err().map(Error::failure),
            )
            .await;
        }
        self.connect_checked(&request).await
    }

    /// Checks `request`, then establishes it. By reference: an async
    /// function that takes the request by value keeps two copies of it in
    /// its future, which every establishment moves into its box.
    async fn connect_checked(&self, request: &ConnectRequest) -> Result<Session, Error> {
        self.checked(request)?;
        handshake::establish(request, self.client_for(request)).await
    }

    /// The request's own client, or this connector's.
    fn client_for<'a>(&'a self, request: &'a ConnectRequest) -> &'a HttpClient {
        request.http_client().unwrap_or(&self.http)
    }

    /// What [`validate`](Self::validate) checks but the authorization URL,
    /// which the establishment checks as it builds its authorizer (the URL
    /// converted once).
    fn checked(&self, request: &ConnectRequest) -> Result<(), Error> {
        request.validate()?;
        let http = self.client_for(request);
        match request.target() {
            Target::Http { url, .. }
                if url.scheme() == Some(&http::uri::Scheme::HTTPS) && !http.speaks_tls() =>
            {
                Err(Error::config(ConfigError::TlsUnavailable))
            }
            _ => Ok(()),
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

    fn classify_error(error: Error) -> Error {
        error
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 46: an establishment's future is moved whole into the box that
    /// serves it (the copy was 21k of a lifecycle's 250k instructions at
    /// 18 KB). The cold branches (authorizing after a 401, the HTTP+SSE
    /// endpoint wait, the start-up subscription) are boxed where they are
    /// awaited, so the future every establishment pays for stays small.
    #[test]
    fn an_establishments_future_carries_no_cold_branch() {
        let connector = Connector::with_client(HttpClient::http_only());
        let request = ConnectRequest::http("http://127.0.0.1:9/mcp").expect("request");
        let future = connector.connect(request);
        let size = std::mem::size_of_val(&future);
        eprintln!("establishment future: {size} bytes");
        assert!(size <= 8 * 1024, "{size} bytes");
    }
}
