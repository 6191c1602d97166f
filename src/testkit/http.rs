//! A scriptable loopback HTTP server: it records every request
//! ([`Recorded`]) and answers each as the test's function says ([`Script`]).

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use http::{Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub use super::script::{error, result, Recorded, Script};

type Body = BoxBody<Bytes, io::Error>;
type Responder = dyn Fn(&Recorded) -> Script + Send + Sync;

#[derive(Default)]
struct Counters {
    recorded: Mutex<Vec<Recorded>>,
    connections: AtomicU64,
    requests: AtomicU64,
}

/// A loopback HTTP server whose answers a closure chooses. Dropping it
/// stops it as a killed process would stop: the port is closed and every
/// open connection with it.
pub struct ScriptServer {
    addr: SocketAddr,
    counters: Arc<Counters>,
    task: Option<JoinHandle<()>>,
    stopped: CancellationToken,
}

impl ScriptServer {
    /// Starts the server on an ephemeral port; `script` answers every
    /// request.
    pub async fn start<F>(script: F) -> ScriptServer
    where
        F: Fn(&Recorded) -> Script + Send + Sync + 'static,
    {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .expect("bind 127.0.0.1");
        Self::serve(listener, script)
    }

    /// Starts the server on `addr`, for instance the address of one that
    /// was stopped, to restart it; fails when the address is taken.
    pub async fn start_on<F>(addr: SocketAddr, script: F) -> io::Result<ScriptServer>
    where
        F: Fn(&Recorded) -> Script + Send + Sync + 'static,
    {
        Ok(Self::serve(TcpListener::bind(addr).await?, script))
    }

    fn serve<F>(listener: TcpListener, script: F) -> ScriptServer
    where
        F: Fn(&Recorded) -> Script + Send + Sync + 'static,
    {
        let addr = listener.local_addr().expect("bound address");
        let counters = Arc::new(Counters::default());
        let script: Arc<Responder> = Arc::new(script);
        let stopped = CancellationToken::new();
        let task = tokio::spawn(accept(
            listener,
            Arc::clone(&counters),
            script,
            stopped.clone(),
        ));
        ScriptServer {
            addr,
            counters,
            task: Some(task),
            stopped,
        }
    }

    /// Stops the server and waits until its port is closed, so that
    /// [`start_on`](Self::start_on) can take the address again at once.
    /// Its connections are closed too (promptly, though not awaited).
    pub async fn stop(mut self) {
        self.stopped.cancel();
        if let Some(task) = self.task.take() {
            task.abort();
            let _ = task.await;
        }
    }

    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT/mcp`.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// `http://127.0.0.1:PORT` followed by `path`.
    pub fn url_for(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// Every request received so far, in order.
    pub fn recorded(&self) -> Vec<Recorded> {
        self.counters
            .recorded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The JSON-RPC method of every request (the HTTP method for bodiless
    /// ones), in order.
    pub fn methods(&self) -> Vec<String> {
        self.recorded()
            .iter()
            .map(|r| match r.rpc_method() {
                "" => r.method.to_string(),
                m => m.to_owned(),
            })
            .collect()
    }

    /// Every request that carried this JSON-RPC method, in order.
    pub fn recorded_for(&self, rpc_method: &str) -> Vec<Recorded> {
        self.recorded()
            .into_iter()
            .filter(|r| r.rpc_method() == rpc_method)
            .collect()
    }

    /// How many requests carried this JSON-RPC method.
    pub fn count(&self, rpc_method: &str) -> usize {
        self.recorded()
            .iter()
            .filter(|r| r.rpc_method() == rpc_method)
            .count()
    }

    /// TCP connections accepted so far.
    pub fn connections(&self) -> u64 {
        self.counters.connections.load(Ordering::Relaxed)
    }
}

impl std::fmt::Debug for ScriptServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Drop for ScriptServer {
    fn drop(&mut self) {
        self.stopped.cancel();
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

async fn accept(
    listener: TcpListener,
    counters: Arc<Counters>,
    script: Arc<Responder>,
    stopped: CancellationToken,
) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let connection = counters.connections.fetch_add(1, Ordering::Relaxed) + 1;
        let reset = Arc::new(AtomicBool::new(false));
        let io = FaultIo {
            stream,
            reset: Arc::clone(&reset),
        };
        let (counters, script) = (Arc::clone(&counters), Arc::clone(&script));
        let stopped = stopped.clone();
        tokio::spawn(async move {
            let service = service_fn(move |request: http::Request<hyper::body::Incoming>| {
                let (counters, script, reset) = (
                    Arc::clone(&counters),
                    Arc::clone(&script),
                    Arc::clone(&reset),
                );
                async move {
                    let (parts, body) = request.into_parts();
                    let bytes = body
                        .collect()
                        .await
                        .map(|b| b.to_bytes())
                        .unwrap_or_default();
                    let recorded = Recorded {
                        seq: counters.requests.fetch_add(1, Ordering::Relaxed) + 1,
                        connection,
                        path: parts
                            .uri
                            .path_and_query()
                            .map(|p| p.to_string())
                            .unwrap_or_default(),
                        method: parts.method,
                        headers: parts.headers,
                        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
                        raw: bytes,
                    };
                    counters
                        .recorded
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push(recorded.clone());
                    respond(script(&recorded), &reset).await
                }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(io), service);
            // A stopped server drops its connections, open streams included.
            tokio::select! {
                _ = connection => {}
                _ = stopped.cancelled() => {}
            }
        });
    }
}

fn build(
    status: u16,
    content_type: Option<&str>,
    body: Body,
    extra: Vec<(&'static str, String)>,
) -> Response<Body> {
    let mut response = Response::new(body);
    *response.status_mut() = StatusCode::from_u16(status).expect("a valid status");
    if let Some(content_type) = content_type {
        response.headers_mut().insert(
            "content-type",
            content_type.parse().expect("a valid content type"),
        );
    }
    for (name, value) in extra {
        response
            .headers_mut()
            .insert(name, value.parse().expect("a valid header value"));
    }
    response
}

fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never: Infallible| match never {})
        .boxed()
}

/// A body of `chunks`, then either its end or, with `then`, that outcome.
fn chunks(chunks: Vec<String>, then: Option<io::Result<()>>) -> Body {
    let frames = chunks.into_iter().map(|c| Ok(Frame::data(Bytes::from(c))));
    let tail = futures_util::stream::iter(then).filter_map(|end| async move {
        match end {
            Err(e) => Some(Err(e)),
            Ok(()) => {
                std::future::pending::<()>().await;
                None
            }
        }
    });
    BodyExt::boxed(StreamBody::new(
        futures_util::stream::iter(frames).chain(tail),
    ))
}

async fn respond(script: Script, reset: &AtomicBool) -> Result<Response<Body>, io::Error> {
    let broken = || io::Error::new(io::ErrorKind::ConnectionAborted, "scripted break");
    let script = match script {
        Script::Delayed(delay, script) => {
            tokio::time::sleep(delay).await;
            *script
        }
        script => script,
    };
    Ok(match script {
        Script::Json(status, body) => build(
            status,
            Some("application/json"),
            full(body.to_string()),
            vec![],
        ),
        Script::JsonWith(status, body, extra) => build(
            status,
            Some("application/json"),
            full(body.to_string()),
            extra,
        ),
        Script::JsonWithBytes(status, body, extra) => {
            let mut response = build(
                status,
                Some("application/json"),
                full(body.to_string()),
                vec![],
            );
            for (name, value) in extra {
                let value = http::HeaderValue::from_bytes(&value).expect("a valid header value");
                response.headers_mut().insert(name, value);
            }
            response
        }
        Script::Raw(status, content_type, body) => {
            build(status, Some(content_type), full(body), vec![])
        }
        Script::Sse(events) => build(200, Some("text/event-stream"), chunks(events, None), vec![]),
        Script::SseThenStall(events) => build(
            200,
            Some("text/event-stream"),
            chunks(events, Some(Ok(()))),
            vec![],
        ),
        Script::SseLive(receiver) => {
            let live = futures_util::stream::unfold(receiver, |mut receiver| async move {
                let chunk = receiver.recv().await?;
                Some((Ok(Frame::data(Bytes::from(chunk))), receiver))
            });
            build(
                200,
                Some("text/event-stream"),
                BodyExt::boxed(StreamBody::new(live)),
                vec![],
            )
        }
        Script::SsePaced(events) => {
            let paced = futures_util::stream::iter(events).then(|(delay, chunk)| async move {
                tokio::time::sleep(delay).await;
                Ok(Frame::data(Bytes::from(chunk)))
            });
            build(
                200,
                Some("text/event-stream"),
                BodyExt::boxed(StreamBody::new(paced)),
                vec![],
            )
        }
        Script::Status(status) => build(status, None, full(Bytes::new()), vec![]),
        Script::StatusWith(status, extra) => build(status, None, full(Bytes::new()), extra),
        Script::Chunked(parts) => build(200, Some("application/json"), chunks(parts, None), vec![]),
        Script::Stall => std::future::pending().await,
        nested @ Script::Delayed(..) => return Box::pin(respond(nested, reset)).await,
        Script::CloseBeforeHeaders => return Err(broken()),
        Script::ResetBeforeHeaders => {
            reset.store(true, Ordering::Relaxed);
            return Err(broken());
        }
        Script::SseThenBreak(events) => {
            let sent = futures_util::stream::iter(events)
                .map(|chunk| Ok(Frame::data(Bytes::from(chunk))))
                .chain(futures_util::stream::once(async move {
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    Err(broken())
                }));
            build(
                200,
                Some("text/event-stream"),
                BodyExt::boxed(StreamBody::new(sent)),
                vec![],
            )
        }
        Script::BreakMidBody(content_type, partial) => build(
            200,
            Some(content_type),
            chunks(vec![partial], Some(Err(broken()))),
            vec![],
        ),
    })
}

/// The server side of one connection: a TCP stream that resets (SO_LINGER
/// 0, then close) instead of closing cleanly when its flag is set.
struct FaultIo {
    stream: TcpStream,
    reset: Arc<AtomicBool>,
}

impl Drop for FaultIo {
    fn drop(&mut self) {
        if self.reset.load(Ordering::Relaxed) {
            let _ = socket2::SockRef::from(&self.stream).set_linger(Some(Duration::ZERO));
        }
    }
}

impl AsyncRead for FaultIo {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for FaultIo {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.reset.load(Ordering::Relaxed) {
            // No FIN: the drop resets the connection.
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}
