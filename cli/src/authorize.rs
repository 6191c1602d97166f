//! The command's part of an interactive authorization: it prints the
//! authorization URL on stderr (the person opens it) and receives the
//! redirect back on a loopback port it bound beforehand, so the redirect
//! URI is known when the flow starts. Any local process can reach that
//! port: a request that does not carry this authorization's `state` is
//! answered 400 and the wait goes on (until the person's limit), so it
//! cannot cancel the login.

use std::io;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use mcp_connect::auth::Authorize;
use mcp_connect::error::BoxError;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, Mutex};

/// The longest request line and headers read from the browser.
const REQUEST_LIMIT: usize = 16 * 1024;

/// How long one connection may take to send its request.
const READ_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);

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
        // The redirect that answers this authorization carries its `state`;
        // anything else reaching the port is not the browser's answer.
        let expected = url::Url::parse(&url).ok().and_then(|url| {
            url.query_pairs()
                .find(|(key, _)| key == "state")
                .map(|(_, value)| value.into_owned())
        });
        Box::pin(async move {
            eprintln!("mcp-connect: open this URL to authorize:\n  {url}");
            let listener = listener.lock().await;
            let (found, mut answers) = mpsc::channel::<String>(1);
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let (stream, _) = accepted?;
                        // Each connection on its own task: a browser's idle
                        // preconnection, or a local process that connects
                        // and waits, holds up no other.
                        let found = found.clone();
                        let expected = expected.clone();
                        tokio::spawn(async move {
                            if let Some(target) = callback(stream, expected.as_deref()).await {
                                let _ = found.send(target).await;
                            }
                        });
                    }
                    Some(target) = answers.recv() => {
                        return Ok(format!("http://127.0.0.1:{port}{target}"));
                    }
                }
            }
        })
    }
}

/// Reads one request on the callback port and answers it: the callback
/// target when it carries this authorization's `state` (or when the URL
/// had none to compare), else a 404 (another path) or a 400 (another
/// `state`), and the wait goes on.
async fn callback(mut stream: TcpStream, expected: Option<&str>) -> Option<String> {
    let mut request = Vec::new();
    let mut chunk = [0u8; 2048];
    let read = async {
        while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < REQUEST_LIMIT {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => break,
                Ok(read) => request.extend_from_slice(&chunk[..read]),
            }
        }
    };
    if tokio::time::timeout(READ_LIMIT, read).await.is_err() {
        return None;
    }
    let line = String::from_utf8_lossy(&request);
    let target = line
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("GET "))
        .and_then(|l| l.split(' ').next())
        .unwrap_or_default()
        .to_owned();
    let Some(query) = target.strip_prefix("/callback?") else {
        let _ = stream
            .write_all(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            .await;
        return None;
    };
    let state = url::form_urlencoded::parse(query.as_bytes())
        .find(|(key, _)| key == "state")
        .map(|(_, value)| value.into_owned());
    if expected.is_some() && state.as_deref() != expected {
        let page = "This is not the answer to the authorization in progress.";
        let answer = format!(
            "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
            page.len()
        );
        let _ = stream.write_all(answer.as_bytes()).await;
        return None;
    }
    let page = "Authorization received. You can close this window.";
    let answer = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{page}",
        page.len()
    );
    let _ = stream.write_all(answer.as_bytes()).await;
    Some(target)
}
