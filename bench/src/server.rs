//! The rmcp 3.11 Streamable HTTP server both clients talk to: stateful
//! sessions, one `add` tool. Optionally legacy-only (refuses
//! `server/discover`). Counts HTTP requests and TCP connections.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::service::TowerToHyperService;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{DiscoverResult, ErrorCode, ErrorData, ServerCapabilities, ServerConfig};
use rmcp::service::{MaybeSendFuture, RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{schemars, tool, tool_handler, tool_router, ServerHandler};

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct AddRequest {
    pub a: i64,
    pub b: i64,
}

#[derive(Debug, Clone)]
pub struct Adder {
    tool_router: ToolRouter<Self>,
    legacy_only: bool,
}

#[tool_router]
impl Adder {
    #[tool(description = "Adds two integers")]
    fn add(&self, Parameters(AddRequest { a, b }): Parameters<AddRequest>) -> String {
        (a + b).to_string()
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Adder {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    fn discover(
        &self,
        _context: RequestContext<RoleServer>,
    ) -> impl Future<Output = Result<DiscoverResult, ErrorData>> + MaybeSendFuture + '_ {
        // As rmcp's default, unless this server plays a legacy-only one.
        std::future::ready(if self.legacy_only {
            Err(ErrorData::new(
                ErrorCode::METHOD_NOT_FOUND,
                "Method not found",
                None,
            ))
        } else {
            Ok(DiscoverResult::from_server_info(
                self.supported_protocol_versions().into_owned(),
                self.get_info(),
            ))
        })
    }
}

/// Request and connection counters of a running server.
#[derive(Debug, Default)]
pub struct Counters {
    pub requests: AtomicU64,
    pub connections: AtomicU64,
}

impl Counters {
    pub fn snapshot(&self) -> (u64, u64) {
        (
            self.requests.load(Ordering::Relaxed),
            self.connections.load(Ordering::Relaxed),
        )
    }
}

/// Starts the server on 127.0.0.1 with a large listen backlog.
pub async fn start(legacy_only: bool) -> (SocketAddr, Arc<Counters>) {
    let socket = tokio::net::TcpSocket::new_v4().expect("socket");
    socket.set_reuseaddr(true).expect("reuseaddr");
    socket.bind("127.0.0.1:0".parse().unwrap()).expect("bind");
    let listener = socket.listen(4096).expect("listen");
    let addr = listener.local_addr().expect("addr");
    let counters = Arc::new(Counters::default());
    let service: StreamableHttpService<Adder, LocalSessionManager> = StreamableHttpService::new(
        move || {
            Ok(Adder {
                tool_router: Adder::tool_router(),
                legacy_only,
            })
        },
        Default::default(),
        StreamableHttpServerConfig::default().with_sse_keep_alive(None),
    );
    let counting = Arc::clone(&counters);
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            counting.connections.fetch_add(1, Ordering::Relaxed);
            let service = service.clone();
            let counting = Arc::clone(&counting);
            tokio::spawn(async move {
                let counted = tower_service_fn(service, counting);
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), TowerToHyperService::new(counted))
                    .await;
            });
        }
    });
    (addr, counters)
}

/// Wraps the rmcp service so every request is counted.
fn tower_service_fn<S>(inner: S, counters: Arc<Counters>) -> Counting<S> {
    Counting { inner, counters }
}

#[derive(Clone)]
pub struct Counting<S> {
    inner: S,
    counters: Arc<Counters>,
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
        self.counters.requests.fetch_add(1, Ordering::Relaxed);
        self.inner.call(request)
    }
}
