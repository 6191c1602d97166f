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
use tower::util::BoxCloneSyncService;
use tower::{Service, ServiceExt};

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
    /// HTTP/2, with rustls (ring) and the Mozilla roots for `https://`.
    pub fn default_client() -> Self {
        let executor = hyper_util::rt::TokioExecutor::new();
        let mut builder = hyper_util::client::legacy::Client::builder(executor);
        builder.pool_idle_timeout(std::time::Duration::from_secs(90));
        #[cfg(feature = "rustls")]
        {
            let mut http = hyper_util::client::legacy::connect::HttpConnector::new();
            http.enforce_http(false);
            http.set_nodelay(true);
            // ring is named explicitly so that another crate enabling a second
            // rustls provider cannot make the builder ambiguous.
            let connector = hyper_rustls::HttpsConnectorBuilder::new()
                .with_provider_and_webpki_roots(std::sync::Arc::new(
                    rustls::crypto::ring::default_provider(),
                ))
                .expect("ring supports the default TLS versions")
                .https_or_http()
                .enable_http1()
                .enable_http2()
                .wrap_connector(http);
            HttpClient::new(builder.build(connector))
        }
        #[cfg(not(feature = "rustls"))]
        {
            let mut http = hyper_util::client::legacy::connect::HttpConnector::new();
            http.set_nodelay(true);
            HttpClient::new(builder.build(http))
        }
    }

    /// Sends one request once the client is ready.
    pub(crate) fn send(
        &self,
        request: http::Request<Full<Bytes>>,
    ) -> tower::util::Oneshot<Inner, http::Request<Full<Bytes>>> {
        self.inner.clone().oneshot(request)
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
