//! The request layer for `http://` targets through a forwarding proxy: the
//! proxy's credentials on each request, `Connection: close`, and its 407 as
//! a typed failure.
//!
//! `Connection: close`, because a forward proxy's connection is not reused:
//! proxies commonly close a client connection after each response without
//! saying so (tinyproxy 1.11 forwards the origin's HTTP/1.1 response and
//! then closes), and the next request written onto that connection fails
//! with no way to know whether it was delivered, so it could not be sent
//! again. The price is one TCP handshake to the proxy per request of an
//! `http://` target. An `https://` target needs none of this: its
//! credentials ride on the `CONNECT` (see `connector.rs`), nothing of them
//! enters the tunnel, and the tunnel is reused as any connection is.

use std::task::{Context, Poll};

use futures_util::future::BoxFuture;
use http::header::{HeaderValue, CONNECTION, PROXY_AUTHORIZATION};
use http::StatusCode;
use tower::{Layer, Service};

use super::super::error::BoxError;
use super::{ProxyError, SharedRoutes};

/// Adds [`Forward`] under a client.
#[derive(Clone)]
pub(crate) struct ForwardLayer {
    routes: SharedRoutes,
}

impl ForwardLayer {
    pub(crate) fn new(routes: SharedRoutes) -> Self {
        ForwardLayer { routes }
    }
}

impl<S> Layer<S> for ForwardLayer {
    type Service = Forward<S>;

    fn layer(&self, inner: S) -> Forward<S> {
        Forward {
            routes: self.routes.clone(),
            inner,
        }
    }
}

/// See the module docs.
#[derive(Clone)]
pub(crate) struct Forward<S> {
    routes: SharedRoutes,
    inner: S,
}

impl<S, B, R> Service<http::Request<B>> for Forward<S>
where
    S: Service<http::Request<B>, Response = http::Response<R>>,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    type Response = http::Response<R>;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<http::Response<R>, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, mut request: http::Request<B>) -> Self::Future {
        let proxy = match request.uri().scheme_str() {
            // An unusable setting fails in the connector, before any I/O.
            Some("http") => self.routes.route(request.uri()).ok().flatten(),
            _ => None,
        };
        let proxied = proxy.is_some();
        if let Some(proxy) = &proxy {
            let headers = request.headers_mut();
            headers.insert(CONNECTION, HeaderValue::from_static("close"));
            if let Some(auth) = proxy.basic_auth() {
                headers.insert(PROXY_AUTHORIZATION, auth.clone());
            }
        }
        let sent = self.inner.call(request);
        Box::pin(async move {
            let response = sent.await.map_err(Into::into)?;
            if proxied && response.status() == StatusCode::PROXY_AUTHENTICATION_REQUIRED {
                return Err(ProxyError::AuthenticationRequired { status: 407 }.into());
            }
            Ok(response)
        })
    }
}
