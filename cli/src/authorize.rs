//! The command's part of an interactive authorization: it prints the
//! authorization URL on stderr (the person opens it) and receives the
//! redirect back on a loopback port. Any local process can reach that
//! port: a request that does not carry this authorization's `state` is
//! answered 400 and the wait goes on (until the person's limit), so it
//! cannot cancel the login.
//!
//! Where it listens follows the redirect URI: `127.0.0.1` on IPv4, `[::1]`
//! on IPv6, `localhost` on both (it may resolve to either). A URI without
//! a port gets an ephemeral one, bound when the server's request is made
//! (the URI sent names it); a URI with a port is bound only while a person
//! is asked, so a reload that makes the member again, while the old one
//! still lives, takes nobody's port.

use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
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

/// Waits for the browser's redirect on `127.0.0.1:PORT/callback` (or on
/// the hosts, port and path of a configured redirect URI).
pub(crate) struct LoopbackRedirect {
    /// Bound now (an ephemeral port, which the URI sent names), else bound
    /// at each authorization.
    bound: Option<Arc<Mutex<Vec<TcpListener>>>>,
    hosts: Vec<IpAddr>,
    port: u16,
    /// The redirect URI as sent: the browser comes back to it.
    uri: String,
    /// Its scheme, host and port, which the callback's target follows.
    origin: String,
    /// The path the browser comes back to.
    path: Arc<str>,
}

impl LoopbackRedirect {
    /// Binds an ephemeral port on 127.0.0.1.
    pub(crate) fn bind() -> io::Result<Self> {
        Self::bind_for("http://127.0.0.1/callback")
    }

    /// The redirect for `uri`, a config file's `redirectUri`: it must be
    /// `http` on a loopback host (`localhost`, `127.0.0.1`, `[::1]`), as
    /// RFC 8252 has native clients do; without a port, an ephemeral one is
    /// bound now, which the URI sent then names.
    pub(crate) fn bind_for(uri: &str) -> io::Result<Self> {
        let refused = || io::Error::other("the redirect URI is not http on a loopback host");
        let parsed = url::Url::parse(uri).map_err(|_| refused())?;
        let hosts: Vec<IpAddr> = match parsed.host_str() {
            Some("127.0.0.1") => vec![Ipv4Addr::LOCALHOST.into()],
            Some("[::1]") => vec![Ipv6Addr::LOCALHOST.into()],
            Some("localhost") => vec![Ipv4Addr::LOCALHOST.into(), Ipv6Addr::LOCALHOST.into()],
            _ => return Err(refused()),
        };
        if parsed.scheme() != "http" {
            return Err(refused());
        }
        let path: Arc<str> = parsed.path().into();
        let host = parsed.host_str().unwrap_or_default().to_owned();
        let origin = |port: u16| format!("http://{host}:{port}");
        if let Some(port) = parsed.port() {
            return Ok(LoopbackRedirect {
                bound: None,
                hosts,
                port,
                uri: uri.to_owned(),
                origin: origin(port),
                path,
            });
        }
        let listeners = listen(&hosts, 0)?;
        let port = listeners[0].local_addr()?.port();
        let mut sent = parsed;
        let _ = sent.set_port(Some(port));
        Ok(LoopbackRedirect {
            bound: Some(Arc::new(Mutex::new(listeners))),
            hosts,
            port,
            uri: sent.to_string(),
            origin: origin(port),
            path,
        })
    }

    /// The redirect URI to register and send.
    pub(crate) fn redirect_uri(&self) -> String {
        self.uri.clone()
    }
}

/// Listeners on `port` of each host (an ephemeral port: the first one's,
/// then the same on the others where it is free). A host that has no
/// address here (IPv6 off) is passed over when another is bound.
fn listen(hosts: &[IpAddr], port: u16) -> io::Result<Vec<TcpListener>> {
    let mut listeners = Vec::new();
    let mut port = port;
    let mut first_error = None;
    for host in hosts {
        match std::net::TcpListener::bind(SocketAddr::new(*host, port)) {
            Ok(listener) => {
                listener.set_nonblocking(true)?;
                port = listener.local_addr()?.port();
                listeners.push(TcpListener::from_std(listener)?);
            }
            Err(error) => {
                first_error.get_or_insert(error);
            }
        }
    }
    match (listeners.is_empty(), first_error) {
        (true, Some(error)) => Err(error),
        _ => Ok(listeners),
    }
}

impl Authorize for LoopbackRedirect {
    fn authorize(&self, url: String) -> BoxFuture<'static, Result<String, BoxError>> {
        let bound = self.bound.clone();
        let (hosts, port) = (self.hosts.clone(), self.port);
        let path = Arc::clone(&self.path);
        let base = self.origin.clone();
        // The redirect that answers this authorization carries its `state`;
        // anything else reaching the port is not the browser's answer.
        let expected = url::Url::parse(&url).ok().and_then(|url| {
            url.query_pairs()
                .find(|(key, _)| key == "state")
                .map(|(_, value)| value.into_owned())
        });
        Box::pin(async move {
            // A fixed port is bound for this wait only, and let go after.
            let (held, listeners) = match &bound {
                Some(bound) => (Some(bound.lock().await), None),
                None => (None, Some(listen(&hosts, port)?)),
            };
            let listeners = held.as_deref().or(listeners.as_ref()).expect("one of them");
            eprintln!("mcp-connect: open this URL to authorize:\n  {url}");
            let (found, mut answers) = mpsc::channel::<String>(1);
            loop {
                let next = futures_util::future::select_all(
                    listeners.iter().map(|listener| Box::pin(listener.accept())),
                );
                tokio::select! {
                    (accepted, _, _) = next => {
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
                        return Ok(format!("{base}{target}"));
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

    /// The browser's redirect to `uri` (a GET of `target` on `address`),
    /// and what the waiting authorization returned.
    async fn redirected(redirect: &LoopbackRedirect, address: SocketAddr, target: &str) -> String {
        let waiting = redirect.authorize("https://as.test/authorize?state=s1".to_owned());
        let browser = async {
            let mut stream = loop {
                match TcpStream::connect(address).await {
                    Ok(stream) => break stream,
                    Err(_) => tokio::time::sleep(std::time::Duration::from_millis(10)).await,
                }
            };
            let request = format!("GET {target} HTTP/1.1\r\nhost: x\r\n\r\n");
            stream.write_all(request.as_bytes()).await.unwrap();
            let mut page = String::new();
            let _ = stream.read_to_string(&mut page).await;
        };
        let (answer, ()) = tokio::join!(waiting, browser);
        answer.unwrap()
    }

    /// Issue 63, item 10: a `[::1]` redirect is listened for on ::1 (it was
    /// always 127.0.0.1), `localhost` on both; a fixed port is bound only
    /// while a person is asked, so two members of one URI (a reload's old
    /// and new) both exist and each authorizes in turn.
    #[tokio::test]
    async fn the_redirect_is_listened_for_where_its_host_resolves() {
        let free = std::net::TcpListener::bind(("::1", 0)).unwrap();
        let port = free.local_addr().unwrap().port();
        drop(free);
        let six = LoopbackRedirect::bind_for(&format!("http://[::1]:{port}/cb")).unwrap();
        let at = SocketAddr::new(Ipv6Addr::LOCALHOST.into(), port);
        let answer = redirected(&six, at, "/cb?code=c&state=s1").await;
        assert_eq!(answer, format!("http://[::1]:{port}/cb?code=c&state=s1"));

        let uri = format!("http://localhost:{port}/cb");
        let (old, new) = (
            LoopbackRedirect::bind_for(&uri).unwrap(),
            LoopbackRedirect::bind_for(&uri).unwrap(),
        );
        let four = SocketAddr::new(Ipv4Addr::LOCALHOST.into(), port);
        let answer = redirected(&old, four, "/cb?code=a&state=s1").await;
        assert!(answer.ends_with("code=a&state=s1"), "{answer}");
        let answer = redirected(&new, at, "/cb?code=b&state=s1").await;
        assert!(answer.ends_with("code=b&state=s1"), "{answer}");
        // Let go after each: the port is free again.
        assert!(std::net::TcpListener::bind(four).is_ok());
    }
}
