//! The command's part of an interactive authorization: it prints the
//! authorization URL on stderr (the person opens it) and receives the
//! redirect back on a loopback port it bound beforehand, so the redirect
//! URI is known when the flow starts.

use std::io;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use mcp_connect::auth::Authorize;
use mcp_connect::BoxError;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::Mutex;

/// The longest request line and headers read from the browser.
const REQUEST_LIMIT: usize = 16 * 1024;

/// Waits for the browser's redirect on `127.0.0.1:PORT/callback`.
pub(crate) struct LoopbackRedirect {
    listener: Arc<Mutex<TcpListener>>,
    port: u16,
}

impl LoopbackRedirect {
    /// Binds an ephemeral loopback port.
    pub(crate) fn bind() -> io::Result<Self> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        Ok(LoopbackRedirect {
            listener: Arc::new(Mutex::new(TcpListener::from_std(listener)?)),
            port,
        })
    }

    /// The redirect URI to register and send.
    pub(crate) fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}/callback", self.port)
    }
}

impl Authorize for LoopbackRedirect {
    fn authorize(&self, url: String) -> BoxFuture<'static, Result<String, BoxError>> {
        let listener = Arc::clone(&self.listener);
        let port = self.port;
        Box::pin(async move {
            eprintln!("mcp-connect: open this URL to authorize:\n  {url}");
            let listener = listener.lock().await;
            loop {
                let (mut stream, _) = listener.accept().await?;
                let mut request = Vec::new();
                let mut chunk = [0u8; 2048];
                while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < REQUEST_LIMIT
                {
                    let read = stream.read(&mut chunk).await?;
                    if read == 0 {
                        break;
                    }
                    request.extend_from_slice(&chunk[..read]);
                }
                let line = String::from_utf8_lossy(&request);
                let target = line
                    .lines()
                    .next()
                    .and_then(|l| l.strip_prefix("GET "))
                    .and_then(|l| l.split(' ').next())
                    .unwrap_or_default()
                    .to_owned();
                if !target.starts_with("/callback?") {
                    let _ = stream
                        .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                        .await;
                    continue;
                }
                let page = "Authorization received. You can close this window.";
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
                    page.len()
                );
                let _ = stream.write_all(answer.as_bytes()).await;
                return Ok(format!("http://127.0.0.1:{port}{target}"));
            }
        })
    }
}
