//! mcp-connect's establishment under rmcp's client.
//!
//! rmcp 3.11 is what Rust services use for MCP: its typed client (`Peer`)
//! and its [`ClientHandler`]. Its establishment is where it is weakest: no
//! overall deadline, no fresh-session recovery, no HTTP+SSE client. This
//! crate establishes with mcp-connect's four-layer stack, then hands the
//! owned, established [`Session`] to rmcp, which
//! starts without a handshake of its own (`rmcp::service::serve_directly`)
//! and keeps its whole API:
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use mcp_connect::{ConnectRequest, Connector, EstablishBuilder};
//! use rmcp::model::{CallToolRequestParams, ClientConfig};
//!
//! let stack = EstablishBuilder::new(Connector::new()).build();
//! let request = ConnectRequest::http("https://mcp.example.com/mcp")?;
//! let client = mcp_connect_rmcp::connect(&stack, request, ClientConfig::default()).await?;
//! let tools = client.list_all_tools().await?;
//! let result = client.call_tool(CallToolRequestParams::new("add")).await?;
//! # Ok(()) }
//! ```
//!
//! Every message rmcp sends goes through the session (Streamable HTTP,
//! HTTP+SSE or stdio, either era), with the session's request limits,
//! stream resumption and headers; everything the server sends (replies,
//! its requests, notifications) reaches rmcp. The handler's capabilities
//! are the ones declared in the handshake. Closing rmcp's service closes the
//! session once (one `DELETE` over Streamable HTTP).
//!
//! When the session is lost (the server restarted, the process exited),
//! rmcp sees its transport closed: calls in flight fail and the service
//! stops. Nothing is replayed. A failure that is not the server's answer
//! reaches rmcp as JSON-RPC `-32603` whose `data` says what it was:
//! `{"sessionLost": true|false, "failure": KIND}` ([`SESSION_LOST`]), so a
//! lost session is never taken for the server's internal error. [`Reconnecting::service`] gives the current
//! service, or establishes the next generation through the same stack when
//! the last one is closed.
//!
//! Where this differs from rmcp alone: the handshake is mcp-connect's
//! (deadline, recovery, classification, era choice, authorization), and
//! rmcp's `initialize`-time options (its own client lifecycle, its
//! transports' settings) are not used. Requests are renumbered on the way
//! through (rmcp never sees the session's ids, nor the server the bridge's).
#![forbid(unsafe_code)]
#![warn(
    missing_docs,
    missing_debug_implementations,
    unreachable_pub,
    rust_2018_idioms
)]
// A builder whose result is dropped configures nothing: say so.
#![warn(clippy::return_self_not_must_use)]

mod transport;

use std::sync::Arc;

use mcp_connect::inbound::{notification_channel, ClientHandler as Handled, RequestKind};
use mcp_connect::{ConnectRequest, Establish, EstablishError, Session};
use rmcp::model::ServerPeerInfo;
use rmcp::service::{RoleClient, RunningService};
use rmcp::ClientHandler;
use tokio::sync::Mutex;

use transport::Shared;
pub use transport::{BridgeError, SessionTransport};

/// The key in an rmcp error's `data` that says whether the session was
/// lost (a `bool`; `failure` beside it names the failure's kind).
pub const SESSION_LOST: &str = "sessionLost";

/// Notifications queued for rmcp before the bridge drops (and counts)
/// newer ones; rmcp reads them as they come.
const NOTIFICATION_CAPACITY: usize = 1024;

/// Establishes through `stack` and starts rmcp's client over the session,
/// with `handler` answering the server's requests. The handler's declared
/// capabilities (sampling, elicitation, roots) are the ones offered in the
/// handshake.
pub async fn connect<H: ClientHandler>(
    stack: &Establish,
    request: ConnectRequest,
    handler: H,
) -> Result<RunningService<RoleClient, H>, EstablishError> {
    let (shared, from_session) = Shared::new();
    let (listener, notifications) = notification_channel(NOTIFICATION_CAPACITY);
    let capabilities = serde_json::to_value(&handler.get_info().capabilities)
        .unwrap_or_else(|_| serde_json::json!({}));
    let request = request
        .with_capabilities(capabilities.clone())
        .with_handler(forwarding(&capabilities, &shared))
        .with_notifications(listener);
    let session = stack.connect(request).await?;
    let peer = peer_info(&session);
    let transport = SessionTransport::new(session, shared, from_session, notifications);
    Ok(rmcp::service::serve_directly(
        handler,
        transport,
        Some(peer),
    ))
}

/// The session's handler: each kind rmcp's handler declares goes to rmcp.
fn forwarding(capabilities: &serde_json::Value, shared: &Shared) -> Handled {
    let mut handled = Handled::new();
    let forward = |method: &'static str| {
        let shared = shared.clone();
        move |params: serde_json::Value| {
            let shared = shared.clone();
            async move { shared.ask(method, params).await }
        }
    };
    if capabilities.get("sampling").is_some() {
        handled = handled.on_raw(RequestKind::Sampling, forward("sampling/createMessage"));
    }
    if capabilities.get("elicitation").is_some() {
        handled = handled.on_raw(RequestKind::Elicitation, forward("elicitation/create"));
        if capabilities["elicitation"].get("url").is_some() {
            handled = handled.with_url_elicitation();
        }
    }
    if capabilities.get("roots").is_some() {
        handled = handled.on_raw(RequestKind::Roots, forward("roots/list"));
    }
    handled
}

/// What rmcp is told about the server: what the handshake negotiated.
fn peer_info(session: &Session) -> ServerPeerInfo {
    let mut info = serde_json::json!({
        "protocolVersion": session.protocol_version().as_str(),
        "capabilities": session.capabilities(),
        "serverInfo": session.server_info(),
    });
    if let Some(instructions) = session.instructions() {
        info["instructions"] = instructions.into();
    }
    serde_json::from_value(info).unwrap_or_else(|_| {
        // Capabilities rmcp cannot model: the version, and no more.
        let version =
            serde_json::from_value(session.protocol_version().as_str().into()).unwrap_or_default();
        ServerPeerInfo::new(version, Default::default())
    })
}

/// One generation's running service, shared.
type Service<H> = Arc<RunningService<RoleClient, H>>;

/// rmcp's client over mcp-connect's sessions, one generation at a time:
/// when a session is lost, the next [`service`](Self::service) call
/// establishes a new one through the same stack and request. Calls that
/// failed with the old session are not replayed.
pub struct Reconnecting<H: ClientHandler + Clone> {
    stack: Establish,
    request: ConnectRequest,
    handler: H,
    /// The last generation made (0 before the first), and its service
    /// while it runs. The number outlives a failed reconnect, so the next
    /// session is always a new generation.
    current: Mutex<(u64, Option<Service<H>>)>,
}

impl<H: ClientHandler + Clone> Reconnecting<H> {
    /// Nothing is established until the first [`service`](Self::service).
    pub fn new(stack: Establish, request: ConnectRequest, handler: H) -> Self {
        Reconnecting {
            stack,
            request,
            handler,
            current: Mutex::new((0, None)),
        }
    }

    /// The running service and its generation (1 for the first), after
    /// establishing a new one if there is none or the last one's transport
    /// closed. Concurrent callers share one establishment.
    pub async fn service(
        &self,
    ) -> Result<(Arc<RunningService<RoleClient, H>>, u64), EstablishError> {
        let mut current = self.current.lock().await;
        let (generation, running) = &mut *current;
        if let Some(service) = running {
            if !service.is_transport_closed() && !service.is_closed() {
                return Ok((Arc::clone(service), *generation));
            }
        }
        if let Some(old) = running.take() {
            old.cancellation_token().cancel();
        }
        let service =
            Arc::new(connect(&self.stack, self.request.clone(), self.handler.clone()).await?);
        *generation += 1;
        *running = Some(Arc::clone(&service));
        Ok((service, *generation))
    }

    /// Stops the current service, which closes its session.
    pub async fn close(&self) {
        let running = self.current.lock().await.1.take();
        if let Some(service) = running {
            service.cancellation_token().cancel();
            // The service's loop closes the transport as it stops; wait
            // for it when this is the last handle.
            if let Ok(service) = Arc::try_unwrap(service) {
                let _ = service.waiting().await;
            }
        }
    }
}

impl<H: ClientHandler + Clone> std::fmt::Debug for Reconnecting<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reconnecting")
            .field("request", &self.request)
            .finish_non_exhaustive()
    }
}
