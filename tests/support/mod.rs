//! A scriptable loopback HTTP server for tests: each request is recorded and
//! answered by a closure, so a test states exactly how its server misbehaves.
#![allow(dead_code)]

pub mod sse_server;

use std::convert::Infallible;
use std::future::Future;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// One request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: Method,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Recorded {
    /// The JSON-RPC method, or "" for DELETE/GET and responses.
    pub fn rpc_method(&self) -> &str {
        self.body
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// The JSON-RPC id as sent.
    pub fn id(&self) -> Value {
        self.body.get("id").cloned().unwrap_or(Value::Null)
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// How to answer one request.
pub enum Script {
    /// A JSON body with this status.
    Json(u16, Value),
    /// Any body with this status and content type.
    Raw(u16, &'static str, Bytes),
    /// `text/event-stream` with these raw chunks.
    Sse(Vec<String>),
    /// A status with no body.
    Status(u16),
    /// Like `Status`, with extra headers.
    StatusWith(u16, Vec<(&'static str, String)>),
    /// JSON with extra headers.
    JsonWith(u16, Value, Vec<(&'static str, String)>),
    /// A 200 `application/json` body sent in these chunks (chunked encoding).
    Chunked(Vec<String>),
    /// Never answer.
    Stall,
}

pub struct ScriptServer {
    addr: SocketAddr,
    recorded: Arc<Mutex<Vec<Recorded>>>,
    connections: Arc<Mutex<u64>>,
    task: JoinHandle<()>,
}

impl ScriptServer {
    pub async fn start<F>(script: F) -> ScriptServer
    where
        F: Fn(&Recorded) -> Script + Send + Sync + 'static,
    {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let recorded = Arc::new(Mutex::new(Vec::new()));
        let connections = Arc::new(Mutex::new(0));
        let script = Arc::new(script);
        let (rec, conns) = (Arc::clone(&recorded), Arc::clone(&connections));
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                *conns.lock().unwrap() += 1;
                let (rec, script) = (Arc::clone(&rec), Arc::clone(&script));
                tokio::spawn(async move {
                    let service =
                        service_fn(move |request: http::Request<hyper::body::Incoming>| {
                            let (rec, script) = (Arc::clone(&rec), Arc::clone(&script));
                            async move {
                                let (parts, body) = request.into_parts();
                                let bytes = body
                                    .collect()
                                    .await
                                    .map(|b| b.to_bytes())
                                    .unwrap_or_default();
                                let recorded = Recorded {
                                    method: parts.method,
                                    headers: parts.headers,
                                    body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
                                };
                                rec.lock().unwrap().push(recorded.clone());
                                let answer = script(&recorded);
                                Ok::<_, Infallible>(respond(answer).await)
                            }
                        });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        ScriptServer {
            addr,
            recorded,
            connections,
            task,
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    pub fn recorded(&self) -> Vec<Recorded> {
        self.recorded.lock().unwrap().clone()
    }

    /// The JSON-RPC methods (or HTTP method for bodiless requests) in order.
    pub fn methods(&self) -> Vec<String> {
        self.recorded()
            .iter()
            .map(|r| match r.rpc_method() {
                "" => r.method.to_string(),
                m => m.to_owned(),
            })
            .collect()
    }

    pub fn connections(&self) -> u64 {
        *self.connections.lock().unwrap()
    }
}

impl Drop for ScriptServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

async fn respond(script: Script) -> Response<Body> {
    let build = |status: u16,
                 content_type: Option<&str>,
                 body: Bytes,
                 extra: Vec<(&'static str, String)>| {
        let mut response = Response::new(Full::new(body).boxed());
        *response.status_mut() = StatusCode::from_u16(status).unwrap();
        if let Some(ct) = content_type {
            response
                .headers_mut()
                .insert("content-type", ct.parse().unwrap());
        }
        for (name, value) in extra {
            response.headers_mut().insert(name, value.parse().unwrap());
        }
        response
    };
    match script {
        Script::Json(status, body) => build(
            status,
            Some("application/json"),
            body.to_string().into(),
            vec![],
        ),
        Script::JsonWith(status, body, extra) => build(
            status,
            Some("application/json"),
            body.to_string().into(),
            extra,
        ),
        Script::Raw(status, ct, body) => build(status, Some(ct), body, vec![]),
        Script::Sse(chunks) => build(
            200,
            Some("text/event-stream"),
            chunks.concat().into(),
            vec![],
        ),
        Script::Status(status) => build(status, None, Bytes::new(), vec![]),
        Script::StatusWith(status, extra) => build(status, None, Bytes::new(), extra),
        Script::Chunked(chunks) => {
            let frames = chunks
                .into_iter()
                .map(|c| Ok::<_, Infallible>(hyper::body::Frame::data(Bytes::from(c))));
            let body = http_body_util::StreamBody::new(futures_util::stream::iter(frames));
            let mut response = Response::new(body.boxed());
            response
                .headers_mut()
                .insert("content-type", "application/json".parse().unwrap());
            response
        }
        Script::Stall => std::future::pending().await,
    }
}

/// A JSON-RPC result for the request.
pub fn result(request: &Recorded, result: Value) -> Value {
    serde_json::json!({ "jsonrpc": "2.0", "id": request.id(), "result": result })
}

/// A JSON-RPC error for the request.
pub fn error(request: &Recorded, code: i64, data: Option<Value>) -> Value {
    let mut error = serde_json::json!({ "code": code, "message": "scripted error" });
    if let Some(data) = data {
        error["data"] = data;
    }
    serde_json::json!({ "jsonrpc": "2.0", "id": request.id(), "error": error })
}

/// A legacy server's normal answers: initialize (with a session id),
/// initialized, tools, DELETE.
pub fn legacy(request: &Recorded) -> Script {
    match request.rpc_method() {
        "initialize" => Script::JsonWith(
            200,
            result(
                request,
                serde_json::json!({
                    "protocolVersion": request.body["params"]["protocolVersion"],
                    "capabilities": {},
                    "serverInfo": { "name": "scripted", "version": "1" }
                }),
            ),
            vec![("mcp-session-id", "session-canary-0001".to_owned())],
        ),
        "notifications/initialized" => Script::Status(202),
        "tools/call" => Script::Json(
            200,
            result(
                request,
                serde_json::json!({ "content": [{ "type": "text", "text": "ok" }] }),
            ),
        ),
        "" if request.method == Method::DELETE => Script::Status(200),
        _ => Script::Json(200, error(request, -32601, None)),
    }
}

/// Runs a test body with a watchdog so a regression fails instead of hanging.
pub async fn watchdog<F: Future<Output = T>, T>(limit: Duration, body: F) -> T {
    tokio::time::timeout(limit, body)
        .await
        .expect("watchdog: the test did not finish in time")
}
