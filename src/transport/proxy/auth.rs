//! The request layer for `http://` targets through a proxy: the proxy's
//! credentials on each request, and its 407 as a typed failure.
//!
//! An `https://` target needs neither: its credentials ride on the
//! `CONNECT` (see `connector.rs`) and nothing of them enters the tunnel.

use std::task::{Context, Poll};

use futures_util::future::BoxFuture;
use http::header::PROXY_AUTHORIZATION;
use http::StatusCode;
use tower::{Layer, Service};

use super::super::error::BoxError;
use super::{ProxyError, SharedRoutes};

/// Adds [`ProxyAuth`] under a client.
#[derive(Clone)]
pub(crate) struct ProxyAuthLayer {
    routes: SharedRoutes,
}

impl ProxyAuthLayer {
    pub(crate) fn new(routes: SharedRoutes) -> Self {
        ProxyAuthLayer { routes }
    }
}

impl<S> Layer<S> for ProxyAuthLayer {
    type Service = ProxyAuth<S>;

    fn layer(&self, inner: S) -> ProxyAuth<S> {
        ProxyAuth {
            routes: self.routes.clone(),
            inner,
        }
    }
}

/// See the module docs.
#[derive(Clone)]
pub(crate) struct ProxyAuth<S> {
    routes: SharedRoutes,
    inner: S,
}

impl<S, B, R> Service<http::Request<B>> for ProxyAuth<S>
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
        if let Some(auth) = proxy.as_ref().and_then(|p| p.basic_auth()) {
            request
                .headers_mut()
                .insert(PROXY_AUTHORIZATION, auth.clone());
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
