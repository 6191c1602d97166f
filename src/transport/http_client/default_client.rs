//! The default client's stack, erased once.
//!
//! hyper-util's pool over the TCP, proxy and TLS connectors; above it, the
//! proxy request layer only when some `http://` target goes through a
//! proxy. The redirect policy goes beside it, followed by the client
//! (follow.rs) only when it follows anything.
//! The whole stack is one [`BoxCloneSyncService`](tower::util::BoxCloneSyncService):
//! a request pays for one boxed service and one boxed future, where
//! wrapping an already erased client in each optional layer would pay for
//! one per layer (issue 46).

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::connect::dns::Name;
use hyper_util::client::legacy::connect::HttpConnector;
use tower::{Service, ServiceBuilder};

use super::super::connect_error::{tag_tcp, DnsError};
#[cfg(feature = "rustls")]
use super::super::connect_error::{tag_tls, TlsError};
use super::super::error::BoxError;
use super::super::proxy::{ForwardLayer, ProxyConnector, SharedRoutes};
use super::super::redirect::RedirectPolicy;
use super::HttpClient;

/// How long a pooled connection may sit idle before the kernel starts
/// probing it. A NAT or load balancer that forgets an idle connection
/// drops it silently; without probes the next request would find out, by
/// waiting. With them the kernel sees the loss first (Linux: the probes'
/// own interval and count decide how soon) and the pool discards the
/// connection.
const TCP_KEEPALIVE: Duration = Duration::from_secs(30);
/// Between unanswered keepalive probes (Linux's own default is 75 s).
const TCP_KEEPALIVE_INTERVAL: Duration = Duration::from_secs(10);
/// Unanswered probes before the connection counts as lost (Linux: 9): a
/// dropped idle connection is noticed about 60 s after its last traffic.
const TCP_KEEPALIVE_PROBES: u32 = 3;

/// The default client over `resolver`, with TLS when built with it,
/// through `routes`' proxies, following redirects as `redirects` says.
pub(super) fn tls<R>(
    resolver: R,
    routes: SharedRoutes,
    #[cfg(feature = "rustls")] tls: &super::super::tls_config::TlsSettings,
    redirects: &RedirectPolicy,
) -> HttpClient
where
    R: Service<Name> + Clone + Send + Sync + 'static,
    R::Response: Iterator<Item = SocketAddr>,
    R::Error: Into<BoxError>,
    R::Future: Send,
{
    #[cfg(feature = "rustls")]
    {
        use super::super::tls_alerts::{ExplainAlerts, TlsAlerts, WatchAlerts};
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
        let alerts = std::sync::Arc::new(TlsAlerts::default());
        let watched = WatchAlerts::new(https, alerts.clone());
        let tagged = ServiceBuilder::new().map_err(tag_tls).service(watched);
        let pooled = ExplainAlerts::new(pooled().build(tagged), alerts, |met| {
            Box::new(TlsError(met))
        });
        finish(pooled, Some(routes), true, redirects)
    }
    #[cfg(not(feature = "rustls"))]
    {
        plain(resolver, routes, redirects)
    }
}

/// The plain-`http://` client over `resolver`, through `routes`' proxies.
pub(super) fn plain<R>(resolver: R, routes: SharedRoutes, redirects: &RedirectPolicy) -> HttpClient
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
    finish(pooled().build(routed), Some(routes), false, redirects)
}

/// `pooled` under the proxy request layer when some `http://` target goes
/// through a proxy, erased once, with `redirects` when it follows any
/// (with following off a redirect reaches the transport as the status it
/// is).
pub(super) fn finish<S, B>(
    pooled: S,
    routes: Option<SharedRoutes>,
    tls: bool,
    redirects: &RedirectPolicy,
) -> HttpClient
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
    let forward = routes
        .as_ref()
        .filter(|routes| routes.proxies_http())
        .map(|routes| ForwardLayer::new(routes.clone()));
    let service = ServiceBuilder::new()
        .option_layer(forward)
        .map_err(Into::<BoxError>::into)
        .service(pooled);
    HttpClient {
        redirects: (redirects.max_hops() > 0).then(|| std::sync::Arc::new(redirects.clone())),
        tls,
        routes,
        ..HttpClient::new(service)
    }
}

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

/// How many idle connections to one host the pool keeps. A burst (a
/// gateway's 2,000 sessions each with its own member session, found by
/// issue 66's hygiene test) opens hundreds; keeping them all for the idle
/// timeout held about 14 MB after the burst was over. The next burst past
/// this many connects again, which on the paths this crate serves costs
/// far less than the memory.
pub(crate) const MAX_IDLE_PER_HOST: usize = 32;

/// hyper-util's pooled client, idle connections kept 90 s, at most
/// [`MAX_IDLE_PER_HOST`] a host. The pool needs a timer to evict them:
/// without one, an idle connection the server closed stays in the pool
/// until the next request to the same host, so a client that meets many
/// hosts grows without bound (found by the soak: about 7 KiB per host).
pub(super) fn pooled() -> hyper_util::client::legacy::Builder {
    let mut builder =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new());
    builder
        .pool_idle_timeout(Duration::from_secs(90))
        .pool_max_idle_per_host(MAX_IDLE_PER_HOST)
        .pool_timer(hyper_util::rt::TokioTimer::new());
    builder
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper_util::client::legacy::connect::dns::GaiResolver;

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
