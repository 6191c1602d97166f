//! The HTTP client seam: any tower HTTP service, erased once.
//!
//! The transports never build a client per session: they share one
//! [`HttpClient`] (a pooled, keep-alive hyper-util client by default), or the
//! caller's own stack with its TLS, proxy and tower-http layers. A
//! caller-owned client is only ever cloned, never shut down by this crate.

use std::fmt;

use bytes::Bytes;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use std::net::SocketAddr;

use hyper_util::client::legacy::connect::dns::{GaiResolver, Name};
use hyper_util::client::legacy::connect::HttpConnector;
use tower::util::BoxCloneSyncService;
use tower::{Service, ServiceBuilder, ServiceExt};

use crate::error::BoxError;

/// The response body type every client is erased to.
pub type HttpBody = UnsyncBoxBody<Bytes, BoxError>;

type Inner = BoxCloneSyncService<http::Request<Full<Bytes>>, http::Response<HttpBody>, BoxError>;

/// A shareable HTTP client: cheap to clone, used by every HTTP transport.
#[derive(Clone)]
pub struct HttpClient {
    inner: Inner,
}

impl HttpClient {
    /// Wraps any tower HTTP client service.
    ///
    /// Errors of the service (including the application's own error types
    /// raised inside its stack) are kept as the source of the resulting
    /// [`TransportError`](crate::TransportError), so a classifier can
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
        }
    }

    /// The default client: hyper-util's pooled client over HTTP/1.1 and
    /// HTTP/2, with rustls (ring) and the Mozilla roots for `https://`, and
    /// the system resolver.
    pub fn default_client() -> Self {
        Self::with_resolver(GaiResolver::new())
    }

    /// The default client with another resolver (any
    /// `tower::Service<Name>` returning socket addresses).
    ///
    /// Connection failures are tagged where they happen, so nothing later
    /// has to guess from a message: resolver errors become [`DnsError`],
    /// TCP connect errors [`TcpConnectError`], and every other failure of
    /// the connector (the TLS handshake, certificates) [`TlsError`].
    pub fn with_resolver<R>(resolver: R) -> Self
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
        http.enforce_http(false);
        http.set_nodelay(true);
        let tcp = ServiceBuilder::new().map_err(tag_tcp).service(http);
        let executor = hyper_util::rt::TokioExecutor::new();
        let mut builder = hyper_util::client::legacy::Client::builder(executor);
        builder.pool_idle_timeout(std::time::Duration::from_secs(90));
        #[cfg(feature = "rustls")]
        {
            // ring is named explicitly so that another crate enabling a second
            // rustls provider cannot make the builder ambiguous.
            let https = hyper_rustls::HttpsConnectorBuilder::new()
                .with_provider_and_webpki_roots(std::sync::Arc::new(
                    rustls::crypto::ring::default_provider(),
                ))
                .expect("ring supports the default TLS versions")
                .https_or_http()
                .enable_http1()
                .enable_http2()
                .wrap_connector(tcp);
            let tagged = ServiceBuilder::new().map_err(tag_tls).service(https);
            HttpClient::new(builder.build(tagged))
        }
        #[cfg(not(feature = "rustls"))]
        {
            HttpClient::new(builder.build(tcp))
        }
    }

    /// This client, counting every request it sends into `counter` (for
    /// reports such as the command's `http_requests`).
    pub fn counting(self, counter: std::sync::Arc<std::sync::atomic::AtomicU64>) -> Self {
        HttpClient::new(
            ServiceBuilder::new()
                .map_request(move |request: http::Request<Full<Bytes>>| {
                    counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    request
                })
                .service(self),
        )
    }

    /// Sends one request once the client is ready.
    pub(crate) fn send(
        &self,
        request: http::Request<Full<Bytes>>,
    ) -> tower::util::Oneshot<Inner, http::Request<Full<Bytes>>> {
        self.inner.clone().oneshot(request)
    }
}

/// The resolver of the default client failed.
#[derive(Debug, thiserror::Error)]
#[error("DNS resolution failed")]
pub struct DnsError(#[source] pub BoxError);

/// The default client could not open a TCP connection.
#[derive(Debug, thiserror::Error)]
#[error("TCP connection failed")]
pub struct TcpConnectError(#[source] pub BoxError);

/// The default client's TLS handshake failed.
#[derive(Debug, thiserror::Error)]
#[error("TLS handshake failed")]
pub struct TlsError(#[source] pub BoxError);

/// Whether `error` or anything in its source chain is a `T`.
pub(crate) fn chain_has<T: std::error::Error + 'static>(
    error: &(dyn std::error::Error + 'static),
) -> bool {
    let mut current = Some(error);
    while let Some(e) = current {
        if e.is::<T>() {
            return true;
        }
        current = e.source();
    }
    false
}

fn tag_tcp<E: Into<BoxError>>(error: E) -> TcpConnectError {
    TcpConnectError(error.into())
}

/// Everything the HTTPS connector fails with that the resolver and the TCP
/// connector did not tag is the TLS layer's.
#[cfg(feature = "rustls")]
fn tag_tls(error: BoxError) -> BoxError {
    if chain_has::<DnsError>(error.as_ref()) || chain_has::<TcpConnectError>(error.as_ref()) {
        error
    } else {
        Box::new(TlsError(error))
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
        self.inner.call(request)
    }
}

impl fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpClient").finish_non_exhaustive()
    }
}
