//! A scriptable legacy HTTP+SSE server (the 2024-11-05 transport).

use crate::protocol::RequestKind;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use http::{Method, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How the SSE server behaves.
#[derive(Debug, Clone)]
pub struct SseBehaviour {
    /// The `endpoint` event's data; `None` never sends one.
    pub endpoint: Option<String>,
    /// What a POST to the SSE URL itself gets (a Streamable HTTP attempt).
    pub post_to_sse_url: u16,
    /// What the GET gets, when not 200.
    pub get_status: u16,
    /// Close the stream right after a `tools/call` arrives, without replying.
    pub close_on_call: bool,
    /// Never reply to `initialize`.
    pub stall_initialize: bool,
}

impl Default for SseBehaviour {
    fn default() -> Self {
        SseBehaviour {
            endpoint: Some("/message?sessionId=sse-session-canary".into()),
            post_to_sse_url: 405,
            get_status: 200,
            close_on_call: false,
            stall_initialize: false,
        }
    }
}

type Body = BoxBody<Bytes, Infallible>;
type Streams = Arc<Mutex<Vec<mpsc::UnboundedSender<Option<String>>>>>;

/// A loopback HTTP+SSE server: `GET /sse` opens the stream and names the
/// endpoint; `POST /message` takes messages and replies on the stream;
/// `POST /sse` (a Streamable HTTP attempt) gets a chosen status.
pub struct SseServer {
    addr: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
    streams: Streams,
    task: JoinHandle<()>,
    /// Cancelled on drop: every connection ends with the server.
    stopped: CancellationToken,
}

impl SseServer {
    /// Starts the server.
    pub async fn start(behaviour: SseBehaviour) -> SseServer {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .expect("testkit server");
        let addr = listener.local_addr().expect("testkit server");
        let log = Arc::new(Mutex::new(Vec::new()));
        let streams: Streams = Arc::default();
        let open = Arc::clone(&streams);
        let shared = (Arc::clone(&log), behaviour);
        let stopped = CancellationToken::new();
        let stopping = stopped.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let (log, behaviour, streams) = (
                    Arc::clone(&shared.0),
                    shared.1.clone(),
                    Arc::clone(&streams),
                );
                let stopping = stopping.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |request| {
                        let (log, behaviour, streams) =
                            (Arc::clone(&log), behaviour.clone(), Arc::clone(&streams));
                        async move {
                            Ok::<_, Infallible>(handle(request, &log, &behaviour, &streams).await)
                        }
                    });
                    let connection = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service);
                    tokio::select! {
                        _ = connection => {}
                        _ = stopping.cancelled() => {}
                    }
                });
            }
        });
        SseServer {
            addr,
            log,
            streams: open,
            task,
            stopped,
        }
    }

    /// The SSE URL.
    pub fn url(&self) -> String {
        format!("http://{}/sse", self.addr)
    }

    /// SSE streams the server opened that a client still holds.
    pub fn open_streams(&self) -> usize {
        self.streams
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|tx| !tx.is_closed())
            .count()
    }

    /// "METHOD path rpc-method" for every request received.
    pub fn log(&self) -> Vec<String> {
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl std::fmt::Debug for SseServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Drop for SseServer {
    fn drop(&mut self) {
        self.stopped.cancel();
        self.task.abort();
    }
}

fn full(status: u16, body: impl Into<Bytes>) -> Response<Body> {
    let mut response = Response::new(Full::new(body.into()).boxed());
    *response.status_mut() = StatusCode::from_u16(status).expect("testkit server");
    response
}

async fn handle(
    request: http::Request<hyper::body::Incoming>,
    log: &Mutex<Vec<String>>,
    behaviour: &SseBehaviour,
    streams: &Streams,
) -> Response<Body> {
    let (parts, body) = request.into_parts();
    let bytes = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let message: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let rpc = message
        .get("method")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    log.lock().unwrap_or_else(PoisonError::into_inner).push(
        format!("{} {} {rpc}", parts.method, parts.uri.path())
            .trim_end()
            .to_owned(),
    );
    match (&parts.method, parts.uri.path()) {
        (&Method::GET, "/sse") => {
            if behaviour.get_status != 200 {
                return full(behaviour.get_status, "no stream here");
            }
            let (tx, rx) = mpsc::unbounded_channel::<Option<String>>();
            if let Some(endpoint) = &behaviour.endpoint {
                tx.send(Some(format!(
                    ": hello\n\nevent: endpoint\ndata: {endpoint}\n\n"
                )))
                .expect("testkit server");
            }
            streams
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(tx);
            let stream = futures_util::stream::unfold(rx, |mut rx| async move {
                match rx.recv().await {
                    Some(Some(chunk)) => {
                        Some((Ok::<_, Infallible>(Frame::data(Bytes::from(chunk))), rx))
                    }
                    _ => None,
                }
            });
            let mut response = Response::new(StreamBody::new(stream).boxed());
            response.headers_mut().insert(
                "content-type",
                "text/event-stream".parse().expect("testkit server"),
            );
            response
        }
        (&Method::POST, "/sse") => full(behaviour.post_to_sse_url, "Method Not Allowed"),
        (&Method::POST, "/message") => {
            let Some(tx) = streams
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .last()
                .cloned()
            else {
                return full(404, "Could not find session");
            };
            let id = message.get("id").cloned();
            let reply = match (RequestKind::of(&rpc), id) {
                (_, None) => None,
                (RequestKind::Initialize, Some(_)) if behaviour.stall_initialize => None,
                (RequestKind::Initialize, Some(id)) => {
                    Some(json!({ "jsonrpc": "2.0", "id": id, "result": {
                        "protocolVersion": message["params"]["protocolVersion"],
                        "capabilities": { "tools": {} },
                        "serverInfo": { "name": "sse-only", "version": "2024" }
                    }}))
                }
                (RequestKind::CallTool, Some(_)) if behaviour.close_on_call => {
                    let _ = tx.send(None);
                    None
                }
                (RequestKind::CallTool, Some(id)) => {
                    Some(json!({ "jsonrpc": "2.0", "id": id, "result": {
                        "content": [{ "type": "text", "text": "over sse" }]
                    }}))
                }
                (RequestKind::ListTools, Some(id)) => {
                    Some(json!({ "jsonrpc": "2.0", "id": id, "result": {
                        "tools": [{ "name": "echo", "inputSchema": { "type": "object" } }]
                    }}))
                }
                (_, Some(id)) => Some(
                    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32601, "message": "nope" } }),
                ),
            };
            if let Some(reply) = reply {
                let _ = tx.send(Some(format!("event: message\ndata: {reply}\n\n")));
            }
            full(202, "Accepted")
        }
        _ => full(404, "Not Found"),
    }
}
