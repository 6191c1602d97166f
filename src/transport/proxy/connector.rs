//! The default client's connector: straight to the origin, or to the proxy.
//!
//! For an `http://` target through a proxy the connection goes to the proxy
//! and is marked as proxied, so hyper-util's client sends absolute-form
//! requests on it. For an `https://` target it goes to the proxy, which is
//! asked for a `CONNECT` tunnel; the TLS connector above then speaks TLS to
//! the origin inside the tunnel, so the proxy sees only ciphertext.
//!
//! The `CONNECT` is sent with hyper's own HTTP/1 client connection and its
//! upgrade, not hyper-util's `Tunnel`: that one's error type is not
//! exported and folds every status but 407 into "unsuccessful", so a
//! policy refusal (403) could not be told from an unreachable origin (502)
//! without reading a message. hyper parses the proxy's answer here, and the
//! tunnel is handed back as the same TCP stream.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::future::{self, BoxFuture, Either};
use http::header::{HeaderValue, HOST, PROXY_AUTHORIZATION};
use http::{StatusCode, Uri};
use http_body_util::Empty;
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tower::Service;

use super::super::error::BoxError;
use super::{ProxyError, SharedRoutes};

/// Connects directly or through the proxy [`Routes`](super::Routes) name.
#[derive(Clone)]
pub(crate) struct ProxyConnector<C> {
    routes: SharedRoutes,
    tcp: C,
    /// Whether TLS is layered above, so `https://` targets may be
    /// tunnelled. Without it they go to `tcp` as they are, which refuses
    /// them: nothing meant for TLS travels in the clear.
    tunnels: bool,
}

impl<C> ProxyConnector<C> {
    pub(crate) fn new(routes: SharedRoutes, tcp: C, tunnels: bool) -> Self {
        ProxyConnector {
            routes,
            tcp,
            tunnels,
        }
    }
}

impl<C> Service<Uri> for ProxyConnector<C>
where
    C: Service<Uri, Response = TokioIo<TcpStream>> + Clone + Send + 'static,
    C::Future: Send + 'static,
    C::Error: Into<BoxError>,
{
    type Response = ProxyStream;
    type Error = BoxError;
    type Future = BoxFuture<'static, Result<ProxyStream, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.tcp.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, dst: Uri) -> Self::Future {
        let https = dst.scheme_str() == Some("https");
        let route = if https && !self.tunnels {
            Ok(None)
        } else {
            self.routes.route(&dst)
        };
        // The ready connector goes into the future; a clone stays.
        let clone = self.tcp.clone();
        let mut tcp = std::mem::replace(&mut self.tcp, clone);
        Box::pin(async move {
            let Some(proxy) = route? else {
                let io = tcp.call(dst).await.map_err(Into::into)?;
                return Ok(ProxyStream::new(io, false));
            };
            let io = tcp
                .call(proxy.uri().clone())
                .await
                .map_err(|e| ProxyError::Unreachable(e.into()))?;
            if https {
                let io = tunnel(io, &dst, proxy.basic_auth()).await?;
                Ok(ProxyStream::new(io, false))
            } else {
                Ok(ProxyStream::new(io, true))
            }
        })
    }
}

/// Asks the proxy on `io` for a tunnel to `dst`'s host and port.
async fn tunnel(
    io: TokioIo<TcpStream>,
    dst: &Uri,
    auth: Option<&HeaderValue>,
) -> Result<TokioIo<TcpStream>, ProxyError> {
    let broken = |e: BoxError| ProxyError::Broken(e);
    let host = dst
        .host()
        .ok_or_else(|| broken("no host to tunnel to".into()))?;
    let authority = format!("{host}:{}", dst.port_u16().unwrap_or(443));
    let mut request = http::Request::connect(authority.as_str())
        .header(HOST, authority.as_str())
        .body(Empty::<Bytes>::new())
        .map_err(|e| broken(e.into()))?;
    if let Some(auth) = auth {
        request
            .headers_mut()
            .insert(PROXY_AUTHORIZATION, auth.clone());
    }
    let (mut sender, connection) = hyper::client::conn::http1::handshake(io)
        .await
        .map_err(|e| broken(e.into()))?;
    let connection = connection.with_upgrades();
    futures_util::pin_mut!(connection);
    // The connection may finish in the same poll that hands the response
    // over (a refusal with `Connection: close`, or a 2xx handed to the
    // upgrade): the response is then still to be taken from the sender.
    let mut ended = false;
    let response = {
        let sent = sender.send_request(request);
        futures_util::pin_mut!(sent);
        match future::select(sent, connection.as_mut()).await {
            Either::Left((response, _)) => response,
            Either::Right((Ok(()), sent)) => {
                ended = true;
                sent.await
            }
            Either::Right((Err(e), _)) => return Err(broken(e.into())),
        }
        .map_err(|e| broken(e.into()))?
    };
    match response.status() {
        status if status.is_success() => {}
        // Only the proxy answers a CONNECT: a 401 here is its refusal of
        // the credentials too (tinyproxy answers a wrong password so).
        status @ (StatusCode::PROXY_AUTHENTICATION_REQUIRED | StatusCode::UNAUTHORIZED) => {
            return Err(ProxyError::AuthenticationRequired {
                status: status.as_u16(),
            })
        }
        status => {
            return Err(ProxyError::Refused {
                status: status.as_u16(),
            })
        }
    }
    // A connection that finished with the 2xx handed itself over to the
    // upgrade; one still running is driven until it does.
    let upgraded = if ended {
        hyper::upgrade::on(response).await
    } else {
        let (upgraded, driven) = future::join(hyper::upgrade::on(response), connection).await;
        driven.map_err(|e| broken(e.into()))?;
        upgraded
    };
    let parts = upgraded
        .map_err(|e| broken(e.into()))?
        .downcast::<TokioIo<TcpStream>>()
        .map_err(|_| broken("the tunnel is not the proxy's TCP stream".into()))?;
    if !parts.read_buf.is_empty() {
        // TLS speaks first; a proxy that sends bytes of its own into the
        // tunnel is not relaying.
        return Err(broken("the proxy sent bytes into the tunnel".into()));
    }
    Ok(parts.io)
}

/// A connection to the origin or to a proxy.
pub(crate) struct ProxyStream {
    io: TokioIo<TcpStream>,
    /// To a proxy that forwards absolute-form requests (an `http://`
    /// target); a tunnel is not, since requests inside it are the origin's.
    forwarding: bool,
}

impl ProxyStream {
    fn new(io: TokioIo<TcpStream>, forwarding: bool) -> Self {
        ProxyStream { io, forwarding }
    }
}

/// Without hyper-util's `HttpInfo` (the socket's two addresses): nothing
/// here reads it, and the pool would copy it into an extension map on
/// every response (two allocations per request) after asking the kernel
/// for both addresses on every connection.
impl Connection for ProxyStream {
    fn connected(&self) -> Connected {
        Connected::new().proxy(self.forwarding)
    }
}

impl hyper::rt::Read for ProxyStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for ProxyStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }
}
