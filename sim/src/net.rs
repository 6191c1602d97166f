//! The simulated network under the real client: the library's own pooled
//! HTTP client (`HttpClientBuilder::build_with_connector`) whose
//! connections are turmoil's simulated TCP streams. Everything above the
//! socket (the pool, the transports, the handshake, the layers) is the code
//! a service runs.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use hyper::rt::ReadBufCursor;
use hyper_util::client::legacy::connect::{Connected, Connection};
use hyper_util::rt::TokioIo;
use mcp_connect::transport::HttpClient;

/// The library's default pooled client over simulated TCP; `open` counts
/// the connections it holds.
pub fn http_client(open: Arc<AtomicUsize>) -> HttpClient {
    HttpClient::builder().build_with_connector(SimConnector { open })
}

/// Opens a simulated TCP connection to the URI's host (a simulated host
/// name) and port.
///
/// It counts the streams it handed out and the client has not dropped:
/// turmoil's own count of a host's streams also keeps every connect that
/// was given up before the server answered (its `connect` registers the
/// socket first and never removes it when cancelled), which a client with
/// timeouts does on every partition.
#[derive(Clone, Debug)]
struct SimConnector {
    open: Arc<AtomicUsize>,
}

impl tower::Service<http::Uri> for SimConnector {
    type Response = SimStream;
    type Error = io::Error;
    type Future = Pin<Box<dyn Future<Output = io::Result<SimStream>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        let open = Arc::clone(&self.open);
        Box::pin(async move {
            let host = uri
                .host()
                .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no host"))?
                .to_owned();
            let address = format!("{host}:{}", uri.port_u16().unwrap_or(80));
            let stream = turmoil::net::TcpStream::connect(address).await?;
            open.fetch_add(1, Ordering::Relaxed);
            Ok(SimStream(TokioIo::new(stream), open))
        })
    }
}

/// A simulated TCP stream as hyper reads and writes it, counted while open.
struct SimStream(TokioIo<turmoil::net::TcpStream>, Arc<AtomicUsize>);

impl Drop for SimStream {
    fn drop(&mut self) {
        self.1.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Connection for SimStream {
    fn connected(&self) -> Connected {
        Connected::new()
    }
}

impl hyper::rt::Read for SimStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().0).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for SimStream {
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
