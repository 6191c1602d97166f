//! The gateway as a tower `Service`: one HTTP exchange in, one response
//! out. POST carries JSON-RPC: a request routed to a member is answered
//! as a stream of events (`crate::streamed`; in the 2026-07-28 era only
//! when it asked for progress), any other as JSON; a notification or a
//! client's answer to a member's question gets 202. GET opens a 2025
//! session's own stream, DELETE ends the session.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use http_body::Body;
use http_body_util::{BodyExt, Limited};
use mcp_connect::group::ServerGroup;
use mcp_connect::protocol::{codes, meta_keys, Incoming, ProtocolVersion, RequestKind};
use serde_json::Value;
use tokio::sync::mpsc;

use crate::answer::{answer, discovered, initialized};
use crate::body::ReplyBody;
use crate::checks;
use crate::downstream::{level_rank, Downstream};
use crate::governance::Caller;
use crate::inner::Inner;
use crate::modern;
use crate::reply::{self, Reply, RpcFailure};
use crate::sessions::Refused;
use crate::streamed::{streamed, Era};

/// A [`ServerGroup`] served as one MCP server; cheap to clone (clones
/// share the sessions). See the crate's docs.
#[derive(Debug, Clone)]
pub struct Gateway {
    pub(crate) inner: Arc<Inner>,
}

impl Gateway {
    /// The group it serves.
    pub fn group(&self) -> &ServerGroup {
        &self.inner.group
    }

    /// How many 2025 sessions are open, and how many upstream clients
    /// they hold between them (each a session with one member).
    pub fn sessions(&self) -> (usize, usize) {
        self.inner.sessions.counts()
    }
}

/// The gateway's response future.
pub type ResponseFuture =
    Pin<Box<dyn Future<Output = Result<Response<ReplyBody>, Infallible>> + Send>>;

impl<B> tower_service::Service<Request<B>> for Gateway
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Response<ReplyBody>;
    type Error = Infallible;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> ResponseFuture {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move { Ok(inner.exchange(request).await) })
    }
}

impl Inner {
    async fn exchange<B>(self: &Arc<Self>, request: Request<B>) -> Reply
    where
        B: Body<Data = Bytes>,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (parts, body) = request.into_parts();
        let refused = |(status, failure): checks::Refusal| reply::error(status, None, &failure);
        if let Err(refusal) =
            checks::host_and_origin(&parts.headers, &parts.uri, &self.hosts, &self.origins)
        {
            return refused(refusal);
        }
        let principal = match self.admit(&parts).await {
            Ok(principal) => principal,
            Err(reply) => return reply,
        };
        // A 2025 session another replica holds is served there.
        let (parts, body) = match self.held_elsewhere(parts, body).await {
            Ok(reply) => return reply,
            Err(request) => request,
        };
        match parts.method {
            Method::POST => {}
            Method::DELETE => return self.delete(&parts.headers).await,
            Method::GET => return self.listen(&parts.headers),
            _ => return not_allowed(),
        }
        if let Err(refusal) = checks::post_headers(&parts.headers) {
            return refused(refusal);
        }
        let bytes = match Limited::new(body, self.max_body).collect().await {
            Ok(collected) => collected.to_bytes(),
            Err(_) => {
                let failure = RpcFailure::new(codes::INVALID_REQUEST, "the body is too large");
                return reply::error(StatusCode::PAYLOAD_TOO_LARGE, None, &failure);
            }
        };
        if bytes.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[') {
            let failure = RpcFailure::new(codes::INVALID_REQUEST, "batches are not supported");
            return reply::error(StatusCode::BAD_REQUEST, None, &failure);
        }
        let message = match Incoming::parse(&bytes) {
            Ok(message) => message,
            Err(_) => {
                let failure = RpcFailure::new(codes::PARSE_ERROR, "not a JSON-RPC message");
                return reply::error(StatusCode::BAD_REQUEST, None, &failure);
            }
        };
        let session = checks::session_id(&parts.headers);
        let (id, method, params) = match message {
            Incoming::Request { id, method, params } => (id, method, params),
            other => return self.taken(session, other),
        };
        let id = serde_json::to_value(&id).unwrap_or(Value::Null);
        let exchange = Exchange {
            id: &id,
            method: &method,
            headers: &parts.headers,
            session,
            principal,
        };
        self.request(exchange, params).await
    }

    /// A notification or a client's answer: 202 (404 for a session that
    /// is gone). A cancellation cancels the session's request it names; an
    /// answer goes to the member that asked.
    fn taken(&self, session: Option<&str>, message: Incoming) -> Reply {
        let down = match session {
            Some(session) => match self.sessions.touch(session) {
                Some((_, down)) => Some(down),
                None => return reply::session_not_found(None),
            },
            None => None,
        };
        if let Some(down) = down {
            down.take(message);
        }
        reply::status(StatusCode::ACCEPTED)
    }

    /// A request, in its era (see [`modern::is_modern`]).
    async fn request(self: &Arc<Self>, exchange: Exchange<'_>, params: Option<Value>) -> Reply {
        let kind = RequestKind::of(exchange.method);
        let id = Some(exchange.id);
        let header_version = exchange
            .headers
            .get("mcp-protocol-version")
            .map(|v| v.to_str().unwrap_or("?"));
        if modern::is_modern(params.as_ref(), header_version) {
            if let Err((status, failure)) =
                modern::check(exchange.headers, exchange.method, params.as_ref())
            {
                return reply::error(status, id, &failure);
            }
            if kind == RequestKind::CallTool {
                let catalogue = self.group.catalogue();
                if let Err((status, failure)) =
                    modern::check_params(exchange.headers, params.as_ref(), &catalogue)
                {
                    return reply::error(status, id, &failure);
                }
            }
            if !modern::has_method(kind) {
                let failure = RpcFailure::new(codes::METHOD_NOT_FOUND, "Method not found");
                return reply::error(StatusCode::NOT_FOUND, id, &failure);
            }
            if kind == RequestKind::Listen {
                self.background();
                let members = (self.session_clients.as_ref()).map(|make| (&self.group, make));
                let (id, keepalive) = (exchange.id, self.keepalive);
                return (self.listeners)
                    .listen(id, params.as_ref(), keepalive, members)
                    .await;
            }
            // Progress and log messages need a stream to go out on.
            let meta = (params.as_ref()).and_then(|p| p.get("_meta"));
            let progress = meta.and_then(|m| m.get("progressToken")).is_some();
            let logs = meta.and_then(|m| m.get(meta_keys::LOG_LEVEL)).is_some();
            if routed(kind) && (progress || logs) {
                let (id, method) = (exchange.id.clone(), exchange.method.to_owned());
                let principal = exchange.principal.clone();
                return streamed(self, (id, method, principal), params, Era::Modern);
            }
            let answer = match kind {
                RequestKind::Discover => discovered(&self.name, &self.version),
                _ => {
                    let (mut params, method) = (params, exchange.method);
                    let caller = Caller {
                        principal: exchange.principal.as_ref(),
                        approver: None,
                    };
                    let answering = |params| {
                        self.modern_answer(kind, method, params, Default::default(), None, caller)
                    };
                    (self.traced(
                        exchange.id,
                        method,
                        &mut params,
                        ProtocolVersion::LATEST_MODERN.as_str(),
                        answering,
                    ))
                    .await
                    .map(|result| modern::dressed(result, kind, self.cache_hints))
                }
            };
            if let Err(failure) = &answer {
                if failure.code == codes::MISSING_REQUIRED_CAPABILITY {
                    return reply::error(StatusCode::BAD_REQUEST, id, failure);
                }
            }
            return exchange.answered(answer, None);
        }
        if let Err((status, failure)) = checks::version_header(exchange.headers) {
            return reply::error(status, id, &failure);
        }
        if kind == RequestKind::Initialize {
            return self.initialize(&exchange, params.as_ref()).await;
        }
        let Some(session) = exchange.session else {
            let failure = RpcFailure::new(codes::INVALID_REQUEST, "Missing session id");
            return reply::error(StatusCode::BAD_REQUEST, id, &failure);
        };
        let Some((version, down)) = self.sessions.touch(session) else {
            return reply::session_not_found(id);
        };
        if down.principal.is_some() {
            down.set_caller_token(checks::bearer_token(exchange.headers));
        }
        if routed(kind) {
            let (id, method) = (exchange.id.clone(), exchange.method.to_owned());
            let principal = exchange.principal.clone();
            return streamed(self, (id, method, principal), params, Era::Session(down));
        }
        if kind == RequestKind::SetLoggingLevel {
            let level = params
                .as_ref()
                .and_then(|p| p.get("level"))
                .and_then(Value::as_str);
            match level.and_then(level_rank) {
                Some(rank) => down.set_level(rank),
                None => {
                    let failure = RpcFailure::new(codes::INVALID_PARAMS, "Unknown level");
                    return exchange.answered(Err(failure), None);
                }
            }
        }
        // A subscription is the session's own, made in its member session.
        let caller = Caller {
            principal: exchange.principal.as_ref(),
            approver: Some(&down),
        };
        let upstream = self.upstream(Some(&down), caller);
        let (mut params, method) = (params, exchange.method);
        let answering = |params| answer(upstream, method, params, Default::default());
        let answer = (self.traced(exchange.id, method, &mut params, &version, answering)).await;
        exchange.answered(answer, None)
    }

    /// `initialize`: the version asked for when this gateway speaks it
    /// (else its latest 2025 one), and a new session that keeps what the
    /// client declared it can do.
    async fn initialize(
        self: &Arc<Self>,
        exchange: &Exchange<'_>,
        params: Option<&Value>,
    ) -> Reply {
        self.background();
        let version = crate::answer::negotiated(params);
        let capabilities = (params.and_then(|p| p.get("capabilities")))
            .cloned()
            .unwrap_or(Value::Null);
        let mut downstream = Downstream::new(capabilities, version.clone());
        downstream.principal = exchange.principal.clone();
        if downstream.principal.is_some() {
            downstream.set_caller_token(checks::bearer_token(exchange.headers));
        }
        match self.sessions.open(version.as_str(), downstream) {
            Ok(session) => {
                // Claimed before the client can name it to another replica.
                if let Some(replicas) = self.sessions.replicas() {
                    replicas.claim(&session, self.sessions.claim_ttl()).await;
                }
                let answer = initialized(version.as_str(), &self.name, &self.version);
                exchange.answered(answer, Some(session))
            }
            Err(refused) => {
                let message = match refused {
                    Refused::Full => "too many sessions; try again later",
                    Refused::NoRandomness => "no session could be made",
                };
                let failure = RpcFailure::new(codes::INTERNAL_ERROR, message);
                reply::error(StatusCode::SERVICE_UNAVAILABLE, Some(exchange.id), &failure)
            }
        }
    }

    /// GET: a 2025 session's own stream, for what its members say outside
    /// a request; 405 without a session (the 2026-07-28 era has none).
    fn listen(&self, headers: &HeaderMap) -> Reply {
        let Some(session) = checks::session_id(headers) else {
            return not_allowed();
        };
        if !checks::accepts(headers, "text/event-stream") {
            let failure =
                RpcFailure::new(codes::INVALID_REQUEST, "Accept must name text/event-stream");
            return reply::error(StatusCode::NOT_ACCEPTABLE, None, &failure);
        }
        let Some((_, down)) = self.sessions.touch(session) else {
            return reply::session_not_found(None);
        };
        let (sender, events) = mpsc::channel(64);
        // A client back for a request stream it lost gets the rest of it.
        let resumed = (headers.get("last-event-id"))
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse().ok())
            .is_some_and(|no| down.resume(no, sender.clone()));
        if !resumed {
            down.open_listening(sender);
        }
        reply::events(events, self.keepalive)
    }

    /// DELETE: the session named ends (200), its upstream sessions closed
    /// first, or there is none (404).
    async fn delete(&self, headers: &HeaderMap) -> Reply {
        match checks::session_id(headers) {
            Some(session) if self.sessions.close(session).await => reply::status(StatusCode::OK),
            Some(_) => reply::session_not_found(None),
            None => {
                let failure = RpcFailure::new(codes::INVALID_REQUEST, "Missing session id");
                reply::error(StatusCode::BAD_REQUEST, None, &failure)
            }
        }
    }
}

/// One request's exchange: what it said besides its params.
struct Exchange<'a> {
    id: &'a Value,
    method: &'a str,
    headers: &'a HeaderMap,
    session: Option<&'a str>,
    principal: Option<crate::Principal>,
}

impl Exchange<'_> {
    /// The answer as the response: 200 with its result or error, and the
    /// new session's id when one was opened.
    fn answered(&self, answer: crate::answer::Answer, session: Option<String>) -> Reply {
        let mut response = match answer {
            Ok(result) => reply::result(self.id, &result),
            Err(failure) => reply::error(StatusCode::OK, Some(self.id), &failure),
        };
        if let Some(value) = session.and_then(|s| HeaderValue::from_str(&s).ok()) {
            response.headers_mut().insert("mcp-session-id", value);
        }
        response
    }
}

/// Whether a request goes to a member (and so may cause what a stream
/// carries before its answer).
pub(crate) fn routed(kind: RequestKind) -> bool {
    matches!(
        kind,
        RequestKind::CallTool
            | RequestKind::GetPrompt
            | RequestKind::ReadResource
            | RequestKind::Complete
    )
}

impl Inner {
    /// Starts, once, what runs beside the requests while the gateway
    /// lives: the idle sweep and the `list_changed` forwarder.
    fn background(self: &Arc<Self>) {
        self.sweeping.get_or_init(|| {
            tokio::spawn(sweep(Arc::downgrade(self)));
            tokio::spawn(crate::changes::forward(Arc::downgrade(self)));
        });
    }
}

/// Ends the sessions idle past their bound, every quarter of it, while
/// the gateway lives.
async fn sweep(inner: Weak<Inner>) {
    let period = match inner.upgrade() {
        Some(inner) => (inner.sessions.idle() / 4).max(Duration::from_millis(100)),
        None => return,
    };
    loop {
        tokio::time::sleep(period).await;
        let Some(inner) = inner.upgrade() else { return };
        inner.sessions.sweep();
    }
}

fn not_allowed() -> Reply {
    let mut response = reply::status(StatusCode::METHOD_NOT_ALLOWED);
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
    response
}
