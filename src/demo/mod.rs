//! A small, correct, dual-era MCP server on loopback: the command's default
//! target and a peer for tests that need no installed server.
//!
//! It speaks Streamable HTTP at `/mcp` with JSON replies: `server/discover`
//! (modern, 2026-07-28, stateless) and `initialize` with sessions (legacy,
//! 2024-11-05 to 2025-11-25), with two tools, `add` and `echo`. Unknown
//! session ids get 404, as the specification says.

use crate::protocol::RequestKind;
use std::collections::HashSet;
use std::convert::Infallible;
use std::hash::{BuildHasher, RandomState};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use http::{Method, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming as IncomingBody;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::protocol::{codes, meta_keys};

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

type Reply = Response<Full<Bytes>>;

fn status(code: StatusCode) -> Reply {
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = code;
    response
}

fn json_reply(code: StatusCode, body: &Value) -> Reply {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() = code;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

fn rpc_result(id: &Value, result: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "result": result })
}

fn rpc_error(id: &Value, code: i64, message: &str, data: Option<Value>) -> Value {
    let mut error = json!({ "code": code, "message": message });
    if let Some(data) = data {
        error["data"] = data;
    }
    json!({ "jsonrpc": "2.0", "id": id, "error": error })
}

const LEGACY: [&str; 4] = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
const MODERN: &str = "2026-07-28";

async fn handle(state: &State, request: http::Request<IncomingBody>) -> Reply {
    state.requests.fetch_add(1, Ordering::Relaxed);
    state
        .header_names
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .extend(request.headers().keys().cloned());
    if request.uri().path() != "/mcp" {
        return status(StatusCode::NOT_FOUND);
    }
    let session = request
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    match *request.method() {
        Method::GET => return status(StatusCode::METHOD_NOT_ALLOWED),
        Method::DELETE => {
            let removed = session
                .map(|id| {
                    state
                        .sessions
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .remove(&id)
                })
                .unwrap_or(false);
            return status(if removed {
                StatusCode::OK
            } else {
                StatusCode::NOT_FOUND
            });
        }
        Method::POST => {}
        _ => return status(StatusCode::METHOD_NOT_ALLOWED),
    }
    let Ok(body) = request.into_body().collect().await else {
        return status(StatusCode::BAD_REQUEST);
    };
    let Ok(message) = serde_json::from_slice::<Value>(&body.to_bytes()) else {
        return json_reply(
            StatusCode::BAD_REQUEST,
            &rpc_error(&Value::Null, codes::PARSE_ERROR, "Parse error", None),
        );
    };
    let method = message
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let id = message.get("id").cloned();
    let params = message.get("params").cloned().unwrap_or(Value::Null);
    let Some(id) = id else {
        // Notifications and responses.
        return status(StatusCode::ACCEPTED);
    };
    let modern_version = params
        .get("_meta")
        .and_then(|m| m.get(meta_keys::PROTOCOL_VERSION))
        .and_then(Value::as_str);
    if let Some(version) = modern_version {
        if version != MODERN {
            let data = json!({ "supported": [MODERN] });
            return json_reply(
                StatusCode::BAD_REQUEST,
                &rpc_error(
                    &id,
                    codes::UNSUPPORTED_PROTOCOL_VERSION,
                    "Unsupported protocol version",
                    Some(data),
                ),
            );
        }
        return json_reply(StatusCode::OK, &modern(&id, method, &params));
    }
    if RequestKind::of(method) == RequestKind::Initialize {
        return initialize(state, &id, &params);
    }
    match session {
        None => json_reply(
            StatusCode::BAD_REQUEST,
            &rpc_error(&id, codes::INVALID_REQUEST, "Missing session id", None),
        ),
        Some(session)
            if !state
                .sessions
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .contains(&session) =>
        {
            json_reply(
                StatusCode::NOT_FOUND,
                &rpc_error(&id, codes::INVALID_REQUEST, "Session not found", None),
            )
        }
        Some(_) => json_reply(StatusCode::OK, &common(&id, method, &params)),
    }
}

fn server_info() -> Value {
    json!({ "name": "mcp-connect-demo", "version": env!("CARGO_PKG_VERSION") })
}

fn capabilities() -> Value {
    json!({ "tools": { "listChanged": false } })
}

fn modern(id: &Value, method: &str, params: &Value) -> Value {
    if RequestKind::of(method) == RequestKind::Discover {
        let mut meta = serde_json::Map::new();
        meta.insert(meta_keys::SERVER_INFO.into(), server_info());
        return rpc_result(
            id,
            json!({
                "supportedVersions": [MODERN],
                "capabilities": capabilities(),
                "instructions": "A demo server with two tools: add and echo.",
                "resultType": "complete",
                "_meta": meta,
            }),
        );
    }
    common(id, method, params)
}

fn initialize(state: &State, id: &Value, params: &Value) -> Reply {
    let requested = params
        .get("protocolVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let version = if LEGACY.contains(&requested) {
        requested
    } else {
        LEGACY[LEGACY.len() - 1]
    };
    let n = state.sessions_created.fetch_add(1, Ordering::Relaxed);
    let session = format!(
        "{:016x}{:016x}",
        state.seed.hash_one(n),
        state.seed.hash_one(!n)
    );
    state
        .sessions
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(session.clone());
    let body = rpc_result(
        id,
        json!({
            "protocolVersion": version,
            "capabilities": capabilities(),
            "serverInfo": server_info(),
            "instructions": "A demo server with two tools: add and echo.",
        }),
    );
    let mut reply = json_reply(StatusCode::OK, &body);
    reply.headers_mut().insert(
        "mcp-session-id",
        http::HeaderValue::from_str(&session).expect("hex is a valid header"),
    );
    reply
}

fn common(id: &Value, method: &str, params: &Value) -> Value {
    match RequestKind::of(method) {
        RequestKind::Ping => rpc_result(id, json!({})),
        RequestKind::ListTools => rpc_result(
            id,
            json!({ "tools": [
                {
                    "name": "add",
                    "description": "Adds two numbers.",
                    "inputSchema": {
                        "type": "object",
                        "properties": { "a": { "type": "number" }, "b": { "type": "number" } },
                        "required": ["a", "b"]
                    }
                },
                {
                    "name": "echo",
                    "description": "Returns its message.",
                    "inputSchema": {
                        "type": "object",
                        "properties": { "message": { "type": "string" } },
                        "required": ["message"]
                    }
                }
            ]}),
        ),
        RequestKind::CallTool => call_tool(id, params),
        _ => rpc_error(id, codes::METHOD_NOT_FOUND, "Method not found", None),
    }
}

fn call_tool(id: &Value, params: &Value) -> Value {
    let arguments = params.get("arguments").cloned().unwrap_or(Value::Null);
    let text = match params.get("name").and_then(Value::as_str) {
        Some("add") => match (
            arguments.get("a").and_then(Value::as_f64),
            arguments.get("b").and_then(Value::as_f64),
        ) {
            (Some(a), Some(b)) => format_number(a + b),
            _ => return rpc_error(id, codes::INVALID_PARAMS, "add takes numbers a and b", None),
        },
        Some("echo") => match arguments.get("message").and_then(Value::as_str) {
            Some(message) => message.to_owned(),
            None => return rpc_error(id, codes::INVALID_PARAMS, "echo takes a message", None),
        },
        _ => return rpc_error(id, codes::INVALID_PARAMS, "Unknown tool", None),
    };
    rpc_result(
        id,
        json!({ "content": [{ "type": "text", "text": text }], "isError": false }),
    )
}

fn format_number(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}
