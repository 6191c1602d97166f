//! HTTP over a Unix domain socket, as curl's `--unix-socket`: the URL
//! still gives the path and the `Host`, and every connection is opened to
//! the socket instead of the URL's host. This is how the transports
//! working group suggests reaching a local server without a TCP port
//! (nothing else on the machine can connect unless the socket's
//! permissions allow it). No proxy and no TLS apply: an `https://` URL is
//! refused before anything is sent rather than sent in clear.

use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_util::future::BoxFuture;
use http::Uri;
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::TokioIo;
use tokio::net::UnixStream;

/// Connecting to the Unix socket failed (no socket there, nothing
/// listening, no permission), or the URL asked for TLS.
#[derive(Debug, thiserror::Error)]
#[error("connecting to the Unix socket failed")]
pub struct UnixSocketError(#[source] pub io::Error);

/// Opens every connection to one socket, whatever the URL's host.
#[derive(Clone, Debug)]
pub(super) struct UnixConnector {
    path: Arc<Path>,
}

impl UnixConnector {
    pub(super) fn new(path: PathBuf) -> Self {
        UnixConnector { path: path.into() }
    }
}

impl tower::Service<Uri> for UnixConnector {
    type Response = UnixIo;
    type Error = UnixSocketError;
    type Future = BoxFuture<'static, Result<UnixIo, UnixSocketError>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let path = Arc::clone(&self.path);
        Box::pin(async move {
            if uri.scheme_str() != Some("http") {
                return Err(UnixSocketError(io::Error::new(
                    io::ErrorKind::Unsupported,
                    "only http:// URLs go over a Unix socket",
                )));
            }
            let stream = UnixStream::connect(&*path).await.map_err(UnixSocketError)?;
            Ok(UnixIo(TokioIo::new(stream)))
        })
    }
}

/// A connection to the socket, as hyper reads and writes it.
#[derive(Debug)]
pub(super) struct UnixIo(TokioIo<UnixStream>);

impl Connection for UnixIo {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

impl hyper::rt::Read for UnixIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for UnixIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().0).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_shutdown(cx)
    }
}
