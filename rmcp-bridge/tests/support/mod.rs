//! rmcp's own server for the bridge's tests, and an rmcp client handler
//! that answers sampling and counts progress.
#![allow(dead_code, deprecated)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ErrorData, ProgressNotificationParam,
    RequestMetaObject, ServerCapabilities, ServerConfig,
};
use rmcp::service::{NotificationContext, Peer, RequestContext, RoleClient, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{schemars, tool, tool_handler, tool_router, ServerHandler};
use serde_json::json;

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct AddRequest {
    pub a: i64,
    pub b: i64,
}

#[derive(Debug, Clone)]
pub struct Server {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Server {
    #[tool(description = "Adds two integers")]
    fn add(&self, Parameters(AddRequest { a, b }): Parameters<AddRequest>) -> String {
        (a + b).to_string()
    }

    #[tool(description = "Reports progress 1..=3, then answers")]
    async fn slow(
        &self,
        meta: RequestMetaObject,
        client: Peer<RoleServer>,
    ) -> Result<String, ErrorData> {
        let token = meta.get_progress_token().ok_or(ErrorData::invalid_params(
            "a progress token is required",
            None,
        ))?;
        for step in 1..=3 {
            let _ = client
                .notify_progress(
                    ProgressNotificationParam::new(token.clone(), step as f64).with_total(3.0),
                )
                .await;
        }
        Ok("done".into())
    }

    #[tool(description = "Asks the client's model")]
    async fn ask(&self, context: RequestContext<RoleServer>) -> Result<String, ErrorData> {
        let params: CreateMessageRequestParams = serde_json::from_value(json!({
            "messages": [{ "role": "user", "content": { "type": "text", "text": "hello?" } }],
            "maxTokens": 10
        }))
        .expect("sampling params");
        let result = context
            .peer
            .create_message(params)
            .await
            .map_err(|e| ErrorData::internal_error(format!("sampling failed: {e:?}"), None))?;
        let value = serde_json::to_value(&result).expect("a result");
        Ok(value["content"]["text"]
            .as_str()
            .or(value["message"]["content"]["text"].as_str())
            .unwrap_or_default()
            .to_owned())
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

/// What the server saw.
#[derive(Debug, Default)]
pub struct Seen {
    pub requests: AtomicU64,
    pub deletes: AtomicU64,
}

/// rmcp's Streamable HTTP server on 127.0.0.1.
pub async fn start() -> (String, Arc<Seen>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr: SocketAddr = listener.local_addr().unwrap();
    let seen = Arc::new(Seen::default());
    let service: StreamableHttpService<Server, LocalSessionManager> = StreamableHttpService::new(
        || {
            Ok(Server {
                tool_router: Server::tool_router(),
            })
        },
        Default::default(),
        StreamableHttpServerConfig::default().with_sse_keep_alive(None),
    );
    let counting = Arc::clone(&seen);
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let service = Counting {
                inner: service.clone(),
                seen: Arc::clone(&counting),
            };
            tokio::spawn(async move {
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), TowerToHyperService::new(service))
                    .await;
            });
        }
    });
    (format!("http://{addr}/mcp"), seen)
}

#[derive(Clone)]
struct Counting<S> {
    inner: S,
    seen: Arc<Seen>,
}

impl<S, B> tower_service::Service<http::Request<B>> for Counting<S>
where
    S: tower_service::Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> S::Future {
        self.seen.requests.fetch_add(1, Ordering::Relaxed);
        if request.method() == http::Method::DELETE {
            self.seen.deletes.fetch_add(1, Ordering::Relaxed);
        }
        self.inner.call(request)
    }
}

/// An rmcp client handler: answers sampling with "from the model",
/// answers elicitation by accepting, records progress.
#[derive(Debug, Clone, Default)]
pub struct Handler {
    pub progress: Arc<Mutex<Vec<f64>>>,
    pub sampled: Arc<AtomicU64>,
}

impl rmcp::ClientHandler for Handler {
    fn get_info(&self) -> rmcp::model::ClientConfig {
        serde_json::from_value(json!({
            "protocolVersion": "2025-11-25",
            "capabilities": { "sampling": {}, "elicitation": {} },
            "clientInfo": { "name": "bridge-test", "version": "1" }
        }))
        .expect("a client config")
    }

    async fn create_message(
        &self,
        _params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.sampled.fetch_add(1, Ordering::Relaxed);
        Ok(serde_json::from_value(json!({
            "role": "assistant",
            "model": "test-model",
            "content": { "type": "text", "text": "from the model" }
        }))
        .expect("a sampling result"))
    }

    async fn create_elicitation(
        &self,
        _params: rmcp::model::ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<rmcp::model::ElicitResult, ErrorData> {
        Ok(
            serde_json::from_value(json!({ "action": "accept", "content": { "name": "Ada" } }))
                .expect("an elicitation result"),
        )
    }

    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.progress.lock().unwrap().push(params.progress);
    }
}
