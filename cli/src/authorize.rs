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

/// Waits for the browser's redirect on `127.0.0.1:PORT/callback` (or the
/// port and path of a configured redirect URI).
pub(crate) struct LoopbackRedirect {
    listener: Arc<Mutex<TcpListener>>,
    port: u16,
    /// The redirect URI a config file gave, sent as written.
    configured: Option<String>,
    /// The path the browser comes back to.
    path: Arc<str>,
}

impl LoopbackRedirect {
    /// Binds an ephemeral loopback port.
    pub(crate) fn bind() -> io::Result<Self> {
        Self::bind_port(0, None, "/callback".to_owned())
    }

    /// Binds the port of `uri`, a config file's `redirectUri`: it must be
    /// `http` on a loopback host (`localhost`, `127.0.0.1`, `[::1]`), as
    /// RFC 8252 has native clients do; without a port, an ephemeral one,
    /// which the URI sent then names.
    pub(crate) fn bind_for(uri: &str) -> io::Result<Self> {
        let refused = || io::Error::other("the redirect URI is not http on a loopback host");
        let parsed = url::Url::parse(uri).map_err(|_| refused())?;
        let loopback = matches!(parsed.host_str(), Some("localhost" | "127.0.0.1" | "[::1]"));
        if parsed.scheme() != "http" || !loopback {
            return Err(refused());
        }
        let path = parsed.path().to_owned();
        let given = parsed.port();
        let mut redirect = Self::bind_port(given.unwrap_or(0), None, path)?;
        redirect.configured = Some(match given {
            Some(_) => uri.to_owned(),
            // Without a port the browser must still come back to the one bound.
            None => {
                let mut sent = parsed;
                let _ = sent.set_port(Some(redirect.port));
                sent.to_string()
            }
        });
        Ok(redirect)
    }

    fn bind_port(port: u16, configured: Option<String>, path: String) -> io::Result<Self> {
        let listener = std::net::TcpListener::bind(("127.0.0.1", port))?;
        listener.set_nonblocking(true)?;
        let port = listener.local_addr()?.port();
        Ok(LoopbackRedirect {
            listener: Arc::new(Mutex::new(TcpListener::from_std(listener)?)),
            port,
            configured,
            path: path.into(),
        })
    }

    /// The redirect URI to register and send.
    pub(crate) fn redirect_uri(&self) -> String {
        match &self.configured {
            Some(uri) => uri.clone(),
            None => format!("http://127.0.0.1:{}/callback", self.port),
        }
    }
}

impl Authorize for LoopbackRedirect {
    fn authorize(&self, url: String) -> BoxFuture<'static, Result<String, BoxError>> {
        let listener = Arc::clone(&self.listener);
        let port = self.port;
        let path = Arc::clone(&self.path);
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
                        let path = Arc::clone(&path);
                        tokio::spawn(async move {
                            if let Some(target) = callback(stream, expected.as_deref(), &path).await {
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
async fn callback(mut stream: TcpStream, expected: Option<&str>, path: &str) -> Option<String> {
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
    let query = target
        .strip_prefix(path)
        .and_then(|rest| rest.strip_prefix('?'));
    let Some(query) = query else {
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

/// `request` authorized as the entry's `oauth` block says, the person
/// asked through the command's loopback redirect (on the block's
/// `redirectUri` port when it gives one). A redirect that cannot be
/// listened for leaves the server unauthorized, said once on stderr.
pub(crate) fn with_oauth(
    request: mcp_connect::ConnectRequest,
    name: &str,
    oauth: &mcp_connect::config::OAuthSettings,
) -> mcp_connect::ConnectRequest {
    let redirect = match &oauth.redirect_uri {
        Some(uri) => LoopbackRedirect::bind_for(uri),
        None => LoopbackRedirect::bind(),
    };
    match redirect {
        Ok(redirect) => {
            let uri = redirect.redirect_uri();
            let mut settings = oauth.clone();
            settings.redirect_uri = Some(uri);
            request.with_authorization(settings.authorization(redirect))
        }
        Err(error) => {
            eprintln!(
                "mcp-connect: {}: cannot listen for the OAuth redirect: {error}",
                super::output::shown(name)
            );
            request
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A configured redirect URI is bound where it says, and only on a
    /// loopback host over http.
    #[tokio::test]
    async fn a_configured_redirect_uri_is_bound_on_its_port_and_path() {
        let free = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let port = free.local_addr().unwrap().port();
        drop(free);
        let uri = format!("http://localhost:{port}/oauth/back");
        let redirect = LoopbackRedirect::bind_for(&uri).unwrap();
        assert_eq!(redirect.redirect_uri(), uri);
        assert_eq!(redirect.port, port);
        assert_eq!(&*redirect.path, "/oauth/back");
        for refused in [
            "https://localhost:1/cb",
            "http://example.com/cb",
            "not a url",
        ] {
            assert!(LoopbackRedirect::bind_for(refused).is_err(), "{refused}");
        }
        let ephemeral = LoopbackRedirect::bind_for("http://127.0.0.1/cb").unwrap();
        assert_ne!(ephemeral.port, 0);
        let sent = format!("http://127.0.0.1:{}/cb", ephemeral.port);
        assert_eq!(ephemeral.redirect_uri(), sent, "the bound port is sent");
    }
}
