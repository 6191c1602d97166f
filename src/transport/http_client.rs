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
use hyper_util::client::legacy::connect::HttpConnector;
use tower::util::BoxCloneSyncService;
use tower::{Service, ServiceBuilder, ServiceExt};

use super::connect_error::{tag_tcp, DnsError};
#[cfg(feature = "rustls")]
use super::connect_error::{tag_tls, TlsError};
use super::error::BoxError;
use super::proxy::{ForwardLayer, Proxy, ProxyConnector, SharedRoutes};
use super::redirect::RedirectPolicy;
#[cfg(feature = "rustls")]
use super::tls_config::TlsConfigError;
use tower_http::follow_redirect::FollowRedirect;

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
    /// False only for [`HttpClient::http_only`]: `https://` targets are then
    /// refused before any I/O instead of being sent as cleartext.
    tls: bool,
    /// The default client's proxy routes (none for a caller's own client).
    routes: Option<SharedRoutes>,
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
            tls: true,
            routes: None,
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
    /// has to guess from a message: resolver errors become [`DnsError`],
    /// TCP connect errors [`TcpConnectError`](super::TcpConnectError), and every other failure of
    /// the connector (the TLS handshake, certificates) [`TlsError`].
    pub fn with_resolver<R>(resolver: R) -> Self
    where
        R: Service<Name> + Clone + Send + Sync + 'static,
        R::Response: Iterator<Item = SocketAddr>,
        R::Error: Into<BoxError>,
        R::Future: Send,
    {
        Self::builder().build_with_resolver(resolver)
    }

    /// The default client over `resolver`, with TLS when built with it,
    /// through `routes`' proxies, without redirects (the builder adds
    /// them).
    fn tls_with_resolver<R>(
        resolver: R,
        routes: SharedRoutes,
        #[cfg(feature = "rustls")] tls: &super::tls_config::TlsSettings,
    ) -> Self
    where
        R: Service<Name> + Clone + Send + Sync + 'static,
        R::Response: Iterator<Item = SocketAddr>,
        R::Error: Into<BoxError>,
        R::Future: Send,
    {
        #[cfg(feature = "rustls")]
        {
            let mut http = tcp_connector(resolver);
            // The HTTPS connector below decides per scheme.
            http.enforce_http(false);
            let tcp = ServiceBuilder::new().map_err(tag_tcp).service(http);
            let routed = ProxyConnector::new(routes.clone(), tcp, true);
            let https = tls
                .connector()
                .https_or_http()
                .enable_http1()
                .enable_http2()
                .wrap_connector(routed);
            // A TLS 1.3 refusal after the handshake stays typed (see
            // tls_alerts.rs).
            let alerts = std::sync::Arc::new(super::tls_alerts::TlsAlerts::default());
            let watched = super::tls_alerts::WatchAlerts::new(https, alerts.clone());
            let tagged = ServiceBuilder::new().map_err(tag_tls).service(watched);
            let pooled =
                super::tls_alerts::ExplainAlerts::new(pooled().build(tagged), alerts, |met| {
                    Box::new(TlsError(met))
                });
            Self::proxied(HttpClient::new(pooled), routes, true)
        }
        #[cfg(not(feature = "rustls"))]
        {
            Self::plain_with_resolver(resolver, routes)
        }
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

    /// The plain-`http://` client over `resolver`, through `routes`'
    /// proxies, without redirects.
    fn plain_with_resolver<R>(resolver: R, routes: SharedRoutes) -> Self
    where
        R: Service<Name> + Clone + Send + Sync + 'static,
        R::Response: Iterator<Item = SocketAddr>,
        R::Error: Into<BoxError>,
        R::Future: Send,
    {
        // enforce_http stays on (hyper's default): a URI that is not
        // `http://` fails in the connector, before a socket is opened.
        let tcp = ServiceBuilder::new()
            .map_err(tag_tcp)
            .service(tcp_connector(resolver));
        let routed = ProxyConnector::new(routes.clone(), tcp, false);
        Self::proxied(HttpClient::new(pooled().build(routed)), routes, false)
    }

    /// `client` with the proxy request layer when some `http://` target
    /// goes through a proxy (only then: it costs a boxed future per
    /// request).
    fn proxied(client: HttpClient, routes: SharedRoutes, tls: bool) -> Self {
        let client = if routes.proxies_http() {
            HttpClient::new(tower::Layer::layer(
                &ForwardLayer::new(routes.clone()),
                client,
            ))
        } else {
            client
        };
        HttpClient {
            tls,
            routes: Some(routes),
            ..client
        }
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

    /// Sends one request once the client is ready.
    pub(crate) fn send(
        &self,
        request: http::Request<Full<Bytes>>,
    ) -> tower::util::Oneshot<Inner, http::Request<Full<Bytes>>> {
        self.inner.clone().oneshot(request)
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
        let client = if let Some(path) = self.unix_socket {
            let connector = super::unix_socket::UnixConnector::new(path);
            HttpClient {
                tls: false,
                ..HttpClient::new(pooled().build(connector))
            }
        } else if self.http_only {
            HttpClient::plain_with_resolver(resolver, routes)
        } else {
            HttpClient::tls_with_resolver(
                resolver,
                routes,
                #[cfg(feature = "rustls")]
                &self.tls,
            )
        };
        // Following off: no layer at all, and a redirect reaches the
        // transport as the status it is.
        if self.redirects.max_hops() == 0 {
            return client;
        }
        HttpClient::new(FollowRedirect::with_policy(
            client.clone(),
            self.redirects.for_request(),
        ))
        .keeping(&client)
    }
}

/// How long a pooled connection may sit idle before the kernel starts
/// probing it. A NAT or load balancer that forgets an idle connection
/// drops it silently; without probes the next request would find out, by
/// waiting. With them the kernel sees the loss first (Linux: the probes'
/// own interval and count decide how soon) and the pool discards the
/// connection.
pub(crate) const TCP_KEEPALIVE: std::time::Duration = std::time::Duration::from_secs(30);
/// Between unanswered keepalive probes (Linux's own default is 75 s).
const TCP_KEEPALIVE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(10);
/// Unanswered probes before the connection counts as lost (Linux: 9): a
/// dropped idle connection is noticed about 60 s after its last traffic.
const TCP_KEEPALIVE_PROBES: u32 = 3;

/// The system-resolver TCP connector every default client starts from, its
/// resolver errors tagged as [`DnsError`]: no Nagle delay, TCP keepalive
/// after [`TCP_KEEPALIVE`] idle, probing every
/// [`TCP_KEEPALIVE_INTERVAL`] up to [`TCP_KEEPALIVE_PROBES`] times.
fn tcp_connector<R>(
    resolver: R,
) -> HttpConnector<impl Service<Name, Response = R::Response, Error = DnsError, Future: Send> + Clone>
where
    R: Service<Name> + Clone + Send + Sync + 'static,
    R::Response: Iterator<Item = SocketAddr>,
    R::Error: Into<BoxError>,
    R::Future: Send,
{
    let resolver = ServiceBuilder::new()
        .map_err(|e: R::Error| DnsError(e.into()))
        .service(resolver);
    let mut http = HttpConnector::new_with_resolver(resolver);
    http.set_nodelay(true);
    http.set_keepalive(Some(TCP_KEEPALIVE));
    http.set_keepalive_interval(Some(TCP_KEEPALIVE_INTERVAL));
    http.set_keepalive_retries(Some(TCP_KEEPALIVE_PROBES));
    http
}

/// hyper-util's pooled client, idle connections kept 90 s. The pool needs
/// a timer to evict them: without one, an idle connection the server
/// closed stays in the pool until the next request to the same host, so a
/// client that meets many hosts grows without bound (found by the soak:
/// about 7 KiB per host).
fn pooled() -> hyper_util::client::legacy::Builder {
    let mut builder =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new());
    builder
        .pool_idle_timeout(std::time::Duration::from_secs(90))
        .pool_timer(hyper_util::rt::TokioTimer::new());
    builder
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
        self.inner.call(request)
    }
}

impl fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClient").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 26: every socket of the default client probes an idle
    /// connection, so a NAT that dropped it is noticed before a call waits.
    #[tokio::test]
    async fn default_sockets_have_tcp_keepalive() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let uri: http::Uri = format!("http://{}/", listener.local_addr().expect("addr"))
            .parse()
            .expect("uri");
        let mut connector = tcp_connector(GaiResolver::new());
        let stream = connector.call(uri).await.expect("connect");
        let socket = socket2::SockRef::from(stream.inner());
        assert!(socket.keepalive().expect("SO_KEEPALIVE"));
        assert_eq!(socket.tcp_keepalive_time().expect("idle"), TCP_KEEPALIVE);
        assert_eq!(
            socket.tcp_keepalive_interval().expect("interval"),
            TCP_KEEPALIVE_INTERVAL
        );
        assert_eq!(
            socket.tcp_keepalive_retries().expect("probes"),
            TCP_KEEPALIVE_PROBES
        );
    }
}
