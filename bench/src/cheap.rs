//! A server as cheap as possible: canned answers over hyper, so that the
//! client's own cost is visible where the rmcp server's would dominate.
//!
//! The canned results are the rmcp server's own answers, captured once at
//! start (so every client accepts them); only the request id is echoed.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};

/// The `result` objects the server answers with.
#[derive(Debug, Clone)]
pub struct Canned {
    pub initialize: Value,
    pub discover: Value,
    pub call: Value,
}

impl Canned {
    /// Asks the rmcp server at `url` once for each answer.
    pub async fn capture(url: &str) -> Canned {
        let client = reqwest::Client::new();
        let post = |body: Value, version: &'static str, session: Option<String>| {
            let client = client.clone();
            async move {
                let mut request = client
                    .post(url)
                    .header("accept", "application/json, text/event-stream")
                    .header("content-type", "application/json")
                    .header("mcp-protocol-version", version);
                if let Some(session) = session {
                    request = request.header("mcp-session-id", session);
                }
                if let Some(method) = body["method"].as_str() {
                    if version == "2026-07-28" {
                        request = request.header("mcp-method", method);
                    }
                }
                let response = request
                    .body(body.to_string())
                    .send()
                    .await
                    .expect("capture");
                let session = response
                    .headers()
                    .get("mcp-session-id")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                let text = response.text().await.expect("capture body");
                (session, result_of(&text))
            }
        };
        let meta = json!({
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": { "name": "capture", "version": "0" },
            "io.modelcontextprotocol/clientCapabilities": {},
        });
        let (_, discover) = post(
            json!({ "jsonrpc": "2.0", "id": 1, "method": "server/discover",
                    "params": { "_meta": meta } }),
            "2026-07-28",
            None,
        )
        .await;
        let (session, initialize) = post(
            json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": { "name": "capture", "version": "0" } } }),
            "2025-11-25",
            None,
        )
        .await;
        post(
            json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
            "2025-11-25",
            session.clone(),
        )
        .await;
        let (_, call) = post(
            json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": { "name": "add", "arguments": { "a": 2, "b": 3 } } }),
            "2025-11-25",
            session,
        )
        .await;
        Canned {
            initialize,
            discover,
            call,
        }
    }
}

/// The `result` of a JSON body or of the SSE event that carries one.
fn result_of(text: &str) -> Value {
    let json = text
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .map(str::trim)
        .find(|data| data.contains("\"result\""))
        .unwrap_or(text);
    serde_json::from_str::<Value>(json).map_or(Value::Null, |v| v["result"].clone())
}

/// Starts the canned server on 127.0.0.1.
pub async fn start(canned: Canned) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let canned = Arc::new(canned);
    let sessions = Arc::new(AtomicU64::new(0));
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            let (canned, sessions) = (Arc::clone(&canned), Arc::clone(&sessions));
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    answer(request, Arc::clone(&canned), Arc::clone(&sessions))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

async fn answer(
    request: Request<Incoming>,
    canned: Arc<Canned>,
    sessions: Arc<AtomicU64>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let status = |code: StatusCode| {
        let mut response = Response::new(Full::default());
        *response.status_mut() = code;
        Ok(response)
    };
    match *request.method() {
        Method::POST => {}
        Method::DELETE => return status(StatusCode::OK),
        _ => return status(StatusCode::METHOD_NOT_ALLOWED),
    }
    let body = request.into_body().collect().await.map(|b| b.to_bytes());
    let Ok(message) = body.map(|b| serde_json::from_slice::<Value>(&b).unwrap_or_default()) else {
        return status(StatusCode::BAD_REQUEST);
    };
    let result = match message["method"].as_str() {
        Some("initialize") => &canned.initialize,
        Some("server/discover") => &canned.discover,
        Some("tools/call") => &canned.call,
        _ => return status(StatusCode::ACCEPTED),
    };
    let reply = json!({ "jsonrpc": "2.0", "id": message["id"], "result": result });
    let mut response = Response::new(Full::new(Bytes::from(reply.to_string())));
    response
        .headers_mut()
        .insert("content-type", "application/json".parse().unwrap());
    if message["method"] == "initialize" {
        let id = sessions.fetch_add(1, Ordering::Relaxed);
        response
            .headers_mut()
            .insert("mcp-session-id", format!("{id:032x}").parse().unwrap());
    }
    Ok(response)
}
