//! The HTTP client seam: any tower HTTP service, erased once.
//!
//! The transports never build a client per session: they share one
//! [`HttpClient`] (a pooled, keep-alive hyper-util client by default, with
//! the redirect policy, TLS settings and proxies of its
//! [`HttpClientBuilder`]), or the caller's own stack with its TLS, proxy
//! and tower-http layers. A caller-owned client is only ever cloned, never
//! shut down by this crate.

use std::fmt;

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use std::net::SocketAddr;

use hyper_util::client::legacy::connect::dns::{GaiResolver, Name};
use tower::util::BoxCloneSyncService;
use tower::{Service, ServiceBuilder, ServiceExt};

use super::error::BoxError;
use super::proxy::{Proxy, SharedRoutes};
use super::redirect::RedirectPolicy;
#[cfg(feature = "rustls")]
use super::tls_config::TlsConfigError;

mod credentials;
mod default_client;
mod follow;

pub(crate) use credentials::{send_with, Credentials, Presented};

/// The response body type every client is erased to.
pub type HttpBody = UnsyncBoxBody<Bytes, BoxError>;

type Inner = BoxCloneSyncService<http::Request<Full<Bytes>>, http::Response<HttpBody>, BoxError>;

/// A shareable HTTP client: cheap to clone, used by every HTTP transport.
///
/// Build one and share it across every connection, so they share one
/// connection pool:
///
/// ```
/// use mcp_connect::transport::HttpClient;
/// use mcp_connect::Connector;
///
/// let client = HttpClient::default_client();
/// let first = Connector::with_client(client.clone());
/// let second = Connector::with_client(client);
/// # drop((first, second));
/// ```
#[derive(Clone)]
pub struct HttpClient {
    inner: Inner,
    /// The default client's redirect policy, followed around `inner` (none
    /// for a caller's own client, and for a layer over another
    /// `HttpClient`, whose own `call` follows).
    redirects: Option<std::sync::Arc<RedirectPolicy>>,
    /// False only for [`HttpClient::http_only`]: `https://` targets are then
    /// refused before any I/O instead of being sent as cleartext.
    tls: bool,
    /// The default client's proxy routes (none for a caller's own client).
    routes: Option<SharedRoutes>,
    /// An authorized connection's credential, presented around `inner`
    /// and its redirects in [`send`](Self::send): no box of its own.
    credentials: Option<std::sync::Arc<dyn Credentials>>,
}

impl HttpClient {
    /// Wraps any tower HTTP client service.
    ///
    /// Errors of the service (including the application's own error types
    /// raised inside its stack) are kept as the source of the resulting
    /// [`TransportError`](crate::error::TransportError), so a classifier can
    /// downcast them.
    pub fn new<S, B>(service: S) -> Self
    where
        S: Service<http::Request<Full<Bytes>>, Response = http::Response<B>>
            + Clone
            + Send
            + Sync
            + 'static,
        S::Error: Into<BoxError>,
        S::Future: Send + 'static,
        B: http_body::Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        let service = service
            .map_response(|response: http::Response<B>| {
                response.map(|body| body.map_err(Into::into).boxed_unsync())
            })
            .map_err(Into::into);
        HttpClient {
            inner: BoxCloneSyncService::new(service),
            redirects: None,
            tls: true,
            routes: None,
            credentials: None,
        }
    }

    /// This client presenting `credentials` on every request (to their
    /// origin only), its pool and everything else shared.
    pub(crate) fn with_credentials(&self, credentials: std::sync::Arc<dyn Credentials>) -> Self {
        HttpClient {
            credentials: Some(credentials),
            ..self.clone()
        }
    }

    /// `self` (a layer over `under`) with `under`'s TLS and proxy facts.
    pub(crate) fn keeping(self, under: &HttpClient) -> Self {
        HttpClient {
            tls: under.tls,
            routes: under.routes.clone(),
            ..self
        }
    }

    /// The default client: hyper-util's pooled client over HTTP/1.1 and
    /// HTTP/2, with rustls (ring) and the Mozilla roots for `https://`, the
    /// system resolver, the environment's proxies ([`Proxy::from_env`]),
    /// and the default [`RedirectPolicy`] (307 and 308 on the same origin,
    /// at most 3 hops). Built without the `rustls` feature it is
    /// [`http_only`](Self::http_only). [`builder`](Self::builder) changes
    /// any of it.
    pub fn default_client() -> Self {
        Self::builder().build()
    }

    /// The default client without TLS: plain `http://` only. An `https://`
    /// target is refused with
    /// [`ConfigError::TlsUnavailable`](crate::error::ConfigError::TlsUnavailable)
    /// before any byte is sent, and the connector underneath refuses any
    /// non-`http` URI too, so nothing meant for TLS ever travels in the
    /// clear.
    pub fn http_only() -> Self {
        Self::builder().http_only().build()
    }

    /// Configures a default client.
    pub fn builder() -> HttpClientBuilder {
        HttpClientBuilder::default()
    }

    /// Whether this client can reach `https://` targets. True for every
    /// caller-supplied client (its TLS is its own business); false for
    /// [`http_only`](Self::http_only).
    pub fn speaks_tls(&self) -> bool {
        self.tls
    }

    /// The proxy a request to `url` goes through: its scheme, host and
    /// port, never its credentials. `None` for a direct connection, an
    /// unusable proxy setting (the request fails with
    /// [`ProxyError::Setting`](super::ProxyError::Setting)), and a caller's own client (whose proxies
    /// are its own business).
    pub fn proxy_for(&self, url: &http::Uri) -> Option<http::Uri> {
        let route = self.routes.as_ref()?.route(url).ok()??;
        Some(route.uri().clone())
    }

    /// The default client with another resolver (any
    /// `tower::Service<Name>` returning socket addresses).
    ///
    /// Connection failures are tagged where they happen, so nothing later
    /// has to guess from a message: resolver errors become [`DnsError`](super::DnsError),
    /// TCP connect errors [`TcpConnectError`](super::TcpConnectError), and every other failure of
    /// the connector (the TLS handshake, certificates) [`TlsError`](super::TlsError).
    pub fn with_resolver<R>(resolver: R) -> Self
    where
        R: Service<Name> + Clone + Send + Sync + 'static,
        R::Response: Iterator<Item = SocketAddr>,
        R::Error: Into<BoxError>,
        R::Future: Send,
    {
        Self::builder().build_with_resolver(resolver)
    }

    /// [`http_only`](Self::http_only) with another resolver.
    pub fn http_only_with_resolver<R>(resolver: R) -> Self
    where
        R: Service<Name> + Clone + Send + Sync + 'static,
        R::Response: Iterator<Item = SocketAddr>,
        R::Error: Into<BoxError>,
        R::Future: Send,
    {
        Self::builder().http_only().build_with_resolver(resolver)
    }

    /// This client, counting every request it sends into `counter` (for
    /// reports such as the command's `http_requests`).
    #[must_use]
    pub fn counting(self, counter: std::sync::Arc<std::sync::atomic::AtomicU64>) -> Self {
        HttpClient::new(
            ServiceBuilder::new()
                .map_request(move |request: http::Request<Full<Bytes>>| {
                    counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    request
                })
                .service(self.clone()),
        )
        .keeping(&self)
    }

    /// Sends one request once the client is ready, following redirects
    /// when this is a default client that does.
    pub(crate) fn send(
        &self,
        request: http::Request<Full<Bytes>>,
    ) -> impl std::future::Future<Output = Result<http::Response<HttpBody>, BoxError>> + Send + 'static
    {
        let inner = self.inner.clone();
        let redirects = self.redirects.clone();
        let credentials = self.credentials.clone();
        async move {
            let send = |request| {
                let inner = inner.clone();
                let redirects = redirects.clone();
                async move {
                    match redirects {
                        None => inner.oneshot(request).await,
                        Some(policy) => follow::send(inner, &policy, request).await,
                    }
                }
            };
            match credentials {
                None => send(request).await,
                Some(credentials) => send_with(credentials.as_ref(), request, send).await,
            }
        }
    }
}

/// Configures a default client: its redirect policy, whether it speaks
/// TLS, its resolver. A caller's own client ([`HttpClient::new`]) keeps its
/// own behaviour.
#[derive(Debug, Clone, Default)]
pub struct HttpClientBuilder {
    redirects: RedirectPolicy,
    proxy: Proxy,
    http_only: bool,
    unix_socket: Option<std::path::PathBuf>,
    #[cfg(feature = "rustls")]
    tls: super::tls_config::TlsSettings,
}

impl HttpClientBuilder {
    /// Which redirects are followed (default: [`RedirectPolicy::new`]).
    #[must_use]
    pub fn redirects(mut self, policy: RedirectPolicy) -> Self {
        self.redirects = policy;
        self
    }

    /// Which proxy requests go through (default: [`Proxy::from_env`], read
    /// when the client is built).
    #[must_use]
    pub fn proxy(mut self, proxy: Proxy) -> Self {
        self.proxy = proxy;
        self
    }

    /// Also trusts the certificates in `pem` (a private CA), beside the
    /// default roots.
    #[cfg(feature = "rustls")]
    pub fn add_root_certificates_pem(mut self, pem: &[u8]) -> Result<Self, TlsConfigError> {
        self.tls.add_roots(pem, false)?;
        Ok(self)
    }

    /// Trusts only the certificates in `pem` (and any added after), not
    /// the default roots.
    #[cfg(feature = "rustls")]
    pub fn only_root_certificates_pem(mut self, pem: &[u8]) -> Result<Self, TlsConfigError> {
        self.tls.add_roots(pem, true)?;
        Ok(self)
    }

    /// Presents this client certificate (a PEM chain, leaf first) with its
    /// private key (PEM: PKCS #8, PKCS #1 or SEC1) to servers that ask:
    /// mutual TLS.
    #[cfg(feature = "rustls")]
    pub fn client_certificate_pem(
        mut self,
        chain: &[u8],
        key: &[u8],
    ) -> Result<Self, TlsConfigError> {
        self.tls.set_identity(chain, key)?;
        Ok(self)
    }

    /// Plain `http://` only (see [`HttpClient::http_only`]).
    #[must_use]
    pub fn http_only(mut self) -> Self {
        self.http_only = true;
        self
    }

    /// Opens every connection to the Unix socket at `path` instead of the
    /// URL's host, as curl's `--unix-socket` (the URL still gives the path
    /// and `Host`). No proxy and no TLS apply; an `https://` URL fails
    /// before anything is sent. Usually set through
    /// [`ConnectRequest::with_unix_socket`](crate::ConnectRequest::with_unix_socket),
    /// which also makes the socket part of the server's identity.
    #[must_use]
    pub fn unix_socket(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.unix_socket = Some(path.into());
        self
    }

    /// The client, over the system resolver.
    pub fn build(self) -> HttpClient {
        self.build_with_resolver(GaiResolver::new())
    }

    /// The client over `resolver` (any `tower::Service<Name>` returning
    /// socket addresses).
    pub fn build_with_resolver<R>(self, resolver: R) -> HttpClient
    where
        R: Service<Name> + Clone + Send + Sync + 'static,
        R::Response: Iterator<Item = SocketAddr>,
        R::Error: Into<BoxError>,
        R::Future: Send,
    {
        let routes = std::sync::Arc::new(self.proxy.routes());
        if let Some(path) = self.unix_socket {
            let connector = super::unix_socket::UnixConnector::new(path);
            let pooled = default_client::pooled().build(connector);
            return default_client::finish(pooled, None, false, &self.redirects);
        }
        if self.http_only {
            return default_client::plain(resolver, routes, &self.redirects);
        }
        default_client::tls(
            resolver,
            routes,
            #[cfg(feature = "rustls")]
            &self.tls,
            &self.redirects,
        )
    }

    /// The client over `connector`, which opens every connection itself:
    /// any `tower::Service<http::Uri>` returning a hyper connection (a
    /// simulated network, an in-process pipe, a socket the application
    /// prepares). The pool and the redirect policy stay this client's;
    /// the connector's errors become
    /// [`TcpConnectError`](super::TcpConnectError)s, as failures to open a
    /// connection. No proxy applies (the connector decides where a
    /// connection goes) and TLS is the connector's business: `https://`
    /// targets reach it like any other. The default client does not go
    /// through this: it costs nothing unless used.
    pub fn build_with_connector<C>(self, connector: C) -> HttpClient
    where
        C: Service<http::Uri> + Clone + Send + Sync + 'static,
        C::Response: hyper::rt::Read
            + hyper::rt::Write
            + hyper_util::client::legacy::connect::Connection
            + Unpin
            + Send
            + 'static,
        C::Error: Into<BoxError>,
        C::Future: Unpin + Send + 'static,
    {
        let tagged = ServiceBuilder::new()
            .map_err(super::connect_error::tag_tcp)
            .service(connector);
        let pooled = default_client::pooled().build(tagged);
        default_client::finish(pooled, None, true, &self.redirects)
    }
}

impl Service<http::Request<Full<Bytes>>> for HttpClient {
    type Response = http::Response<HttpBody>;
    type Error = BoxError;
    type Future = <Inner as Service<http::Request<Full<Bytes>>>>::Future;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<Full<Bytes>>) -> Self::Future {
        match (&self.redirects, &self.credentials) {
            (None, None) => self.inner.call(request),
            // The hops go through clones of the inner service.
            _ => Box::pin(self.send(request)),
        }
    }
}

impl fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClient").finish_non_exhaustive()
    }
}
