//! The physical floor: a raw hyper client that sends the same HTTP requests
//! as ours (the same bodies and headers, the same pooled keep-alive client)
//! and does nothing MCP beyond keeping the session id and recognising the
//! reply. What ours costs above this is the price of its logic.

use bytes::{Bytes, BytesMut};
use http::{HeaderValue, Method, Request};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

use crate::clients::Era;

type Http = Client<HttpConnector, Full<Bytes>>;

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcp-connect","version":"0.1.0"}}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
const DISCOVER: &str = r#"{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"mcp-connect","version":"0.1.0"},"io.modelcontextprotocol/clientCapabilities":{}}}}"#;
const CALL_LEGACY: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}"#;
const CALL_MODERN: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"mcp-connect","version":"0.1.0"},"io.modelcontextprotocol/clientCapabilities":{}}}}"#;

/// The floor client: one pooled hyper client, shared like ours.
#[derive(Clone)]
pub struct Floor {
    http: Http,
}

/// An established floor "session": the URL, era and session id.
pub struct FloorSession {
    floor: Floor,
    url: http::Uri,
    era: Era,
    session: Option<HeaderValue>,
}

impl Floor {
    pub fn new() -> Floor {
        let mut connector = HttpConnector::new();
        connector.set_nodelay(true);
        Floor {
            http: Client::builder(TokioExecutor::new()).build(connector),
        }
    }

    fn request(
        &self,
        method: Method,
        url: &http::Uri,
        body: &'static str,
        version: &'static str,
        session: Option<&HeaderValue>,
        rpc_method: Option<&'static str>,
    ) -> Request<Full<Bytes>> {
        let mut request = Request::builder()
            .method(method)
            .uri(url.clone())
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json");
        if let Some(session) = session {
            request = request.header("mcp-session-id", session.clone());
        }
        if !version.is_empty() {
            request = request.header("mcp-protocol-version", version);
        }
        if let Some(rpc_method) = rpc_method {
            request = request.header("mcp-method", rpc_method);
            if rpc_method == "tools/call" {
                request = request.header("mcp-name", "add");
            }
        }
        request
            .body(Full::new(Bytes::from_static(body.as_bytes())))
            .unwrap()
    }

    /// Sends one request and reads until its reply (JSON body, or the SSE
    /// event carrying a result or error); returns the session id header.
    async fn exchange(&self, request: Request<Full<Bytes>>) -> Option<HeaderValue> {
        let response = self.http.request(request).await.expect("floor request");
        assert!(response.status().is_success(), "{}", response.status());
        let session = response.headers().get("mcp-session-id").cloned();
        let stream = response
            .headers()
            .get("content-type")
            .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
        let mut body = response.into_body();
        let mut seen = BytesMut::new();
        while let Some(frame) = body.frame().await {
            if let Ok(data) = frame.expect("floor body").into_data() {
                seen.extend_from_slice(&data);
            }
            if stream && replied(&seen) {
                break;
            }
        }
        session
    }

    pub async fn establish(&self, url: &str, era: Era) -> FloorSession {
        let url: http::Uri = url.parse().unwrap();
        let session = match era {
            Era::Legacy => {
                let session = self
                    .exchange(self.request(Method::POST, &url, INITIALIZE, "", None, None))
                    .await;
                let initialized = self.request(
                    Method::POST,
                    &url,
                    INITIALIZED,
                    "2025-11-25",
                    session.as_ref(),
                    None,
                );
                let response = self.http.request(initialized).await.expect("initialized");
                let _ = response.into_body().collect().await;
                session
            }
            Era::Modern => {
                self.exchange(self.request(
                    Method::POST,
                    &url,
                    DISCOVER,
                    "2026-07-28",
                    None,
                    Some("server/discover"),
                ))
                .await;
                None
            }
        };
        FloorSession {
            floor: self.clone(),
            url,
            era,
            session,
        }
    }
}

impl FloorSession {
    pub async fn call(&self) {
        let (body, version, method) = match self.era {
            Era::Legacy => (CALL_LEGACY, "2025-11-25", None),
            Era::Modern => (CALL_MODERN, "2026-07-28", Some("tools/call")),
        };
        let request = self.floor.request(
            Method::POST,
            &self.url,
            body,
            version,
            self.session.as_ref(),
            method,
        );
        self.floor.exchange(request).await;
    }

    pub async fn close(self) {
        if let Some(session) = &self.session {
            let request = self.floor.request(
                Method::DELETE,
                &self.url,
                "",
                "2025-11-25",
                Some(session),
                None,
            );
            if let Ok(response) = self.floor.http.request(request).await {
                let _ = response.into_body().collect().await;
            }
        }
    }
}

/// Whether the SSE bytes so far hold a complete event with a result or error.
fn replied(seen: &[u8]) -> bool {
    let Some(end) = seen.windows(2).rposition(|w| w == b"\n\n") else {
        return false;
    };
    let events = &seen[..end];
    events.windows(9).any(|w| w == b"\"result\":") || events.windows(8).any(|w| w == b"\"error\":")
}
