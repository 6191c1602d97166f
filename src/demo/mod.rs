//! A small, correct, dual-era MCP server on loopback: the command's default
//! target and a peer for tests that need no installed server.
//!
//! It speaks Streamable HTTP at `/mcp` with JSON replies: `server/discover`
//! (modern, 2026-07-28, stateless) and `initialize` with sessions (legacy,
//! 2024-11-05 to 2025-11-25), with two tools, `add` and `echo`. Unknown
//! session ids get 404, as the specification says.

use std::collections::HashSet;
use std::convert::Infallible;
use std::hash::RandomState;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

mod answer;

use answer::handle;

/// A running demo server. Dropping it stops it as a killed server stops:
/// no new connection is accepted and every open one is closed.
#[derive(Debug)]
pub struct DemoServer {
    addr: SocketAddr,
    state: Arc<State>,
    accept: JoinHandle<()>,
    stopped: CancellationToken,
}

#[derive(Debug, Default)]
struct State {
    sessions: Mutex<HashSet<String>>,
    requests: AtomicU64,
    tool_calls: AtomicU64,
    sessions_created: AtomicU64,
    /// The name of every request header seen (never a value).
    header_names: Mutex<HashSet<http::HeaderName>>,
    seed: RandomState,
}

impl DemoServer {
    /// Starts the server on `127.0.0.1` with an ephemeral port.
    pub async fn start() -> std::io::Result<DemoServer> {
        Self::start_on(SocketAddr::from(([127, 0, 0, 1], 0))).await
    }

    /// Starts the server on `addr` (a restarted server on its old port,
    /// say), with no sessions.
    pub async fn start_on(addr: SocketAddr) -> std::io::Result<DemoServer> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(State::default());
        let stopped = CancellationToken::new();
        let accept = tokio::spawn(accept_loop(listener, Arc::clone(&state), stopped.clone()));
        Ok(DemoServer {
            addr,
            state,
            accept,
            stopped,
        })
    }

    /// Starts the server on a Unix socket at `path` (created; removed
    /// first if a stale one is there). Reach it with
    /// [`ConnectRequest::with_unix_socket`](crate::ConnectRequest::with_unix_socket)
    /// and any `http://` URL with the path `/mcp`; [`addr`](Self::addr)
    /// is then `127.0.0.1:0`.
    pub async fn start_on_unix_socket(path: &std::path::Path) -> std::io::Result<DemoServer> {
        let _ = std::fs::remove_file(path);
        let listener = tokio::net::UnixListener::bind(path)?;
        let state = Arc::new(State::default());
        let stopped = CancellationToken::new();
        let accept = {
            let (state, stopped) = (Arc::clone(&state), stopped.clone());
            tokio::spawn(async move {
                loop {
                    let Ok((stream, _)) = listener.accept().await else {
                        continue;
                    };
                    tokio::spawn(serve(stream, Arc::clone(&state), stopped.clone()));
                }
            })
        };
        Ok(DemoServer {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            state,
            accept,
            stopped,
        })
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The MCP endpoint, `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// HTTP requests received so far.
    pub fn requests(&self) -> u64 {
        self.state.requests.load(Ordering::Relaxed)
    }

    /// `tools/call` requests received so far (answered or not).
    pub fn tool_calls(&self) -> u64 {
        self.state.tool_calls.load(Ordering::Relaxed)
    }

    /// Whether any request so far carried the header `name` (only names
    /// are kept, never values): a test's check that, say,
    /// `Proxy-Authorization` never reached the origin.
    pub fn saw_header(&self, name: &str) -> bool {
        http::HeaderName::try_from(name).is_ok_and(|name| {
            self.state
                .header_names
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .contains(&name)
        })
    }

    /// Legacy sessions created so far.
    pub fn sessions_created(&self) -> u64 {
        self.state.sessions_created.load(Ordering::Relaxed)
    }

    /// Legacy sessions currently open.
    pub fn open_sessions(&self) -> usize {
        self.state
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Forgets every session, as a restarted server would: later requests on
    /// them get 404.
    pub fn expire_sessions(&self) {
        self.state
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

impl Drop for DemoServer {
    fn drop(&mut self) {
        self.accept.abort();
        self.stopped.cancel();
    }
}

async fn accept_loop(listener: TcpListener, state: Arc<State>, stopped: CancellationToken) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(serve(stream, Arc::clone(&state), stopped.clone()));
    }
}

/// Serves one accepted connection, HTTP/1.1 or HTTP/2 (by its preface),
/// until it ends or the server is stopped (then the connection is dropped,
/// closing its socket).
async fn serve<I>(io: I, state: Arc<State>, stopped: CancellationToken)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |request| {
        let state = Arc::clone(&state);
        async move { Ok::<_, Infallible>(handle(&state, request).await) }
    });
    let builder =
        hyper_util::server::conn::auto::Builder::new(hyper_util::rt::TokioExecutor::new());
    let connection = builder.serve_connection(TokioIo::new(io), service);
    tokio::select! {
        _ = connection => {}
        () = stopped.cancelled() => {}
    }
}

/// Told the ALPN protocol of each completed TLS handshake.
#[cfg(all(feature = "testkit", feature = "rustls"))]
pub(crate) type OnHandshake = Arc<dyn Fn(Option<&[u8]>) + Send + Sync>;

/// The demo server over TLS on `addr`: each connection's handshake
/// through `acceptor`, then `on_handshake` with the negotiated ALPN
/// protocol (for the testkit's TLS fixture).
#[cfg(all(feature = "testkit", feature = "rustls"))]
pub(crate) async fn start_tls(
    addr: SocketAddr,
    acceptor: tokio_rustls::TlsAcceptor,
    on_handshake: OnHandshake,
) -> std::io::Result<DemoServer> {
    let listener = TcpListener::bind(addr).await?;
    let addr = listener.local_addr()?;
    let state = Arc::new(State::default());
    let stopped = CancellationToken::new();
    let accept = {
        let (state, stopped) = (Arc::clone(&state), stopped.clone());
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let (acceptor, state, stopped) =
                    (acceptor.clone(), Arc::clone(&state), stopped.clone());
                let on_handshake = Arc::clone(&on_handshake);
                tokio::spawn(async move {
                    // A failed handshake (a client that distrusts us, or
                    // sends no certificate when one is required) ends here.
                    if let Ok(tls) = acceptor.accept(stream).await {
                        on_handshake(tls.get_ref().1.alpn_protocol());
                        serve(tls, state, stopped).await;
                    }
                });
            }
        })
    };
    Ok(DemoServer {
        addr,
        state,
        accept,
        stopped,
    })
}
