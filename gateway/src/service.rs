//! The gateway as a tower `Service`: one HTTP exchange in, one response
//! out. POST carries JSON-RPC (each request answered as JSON, each
//! notification or response with 202), DELETE ends a 2025 session, GET is
//! 405 (no standalone stream yet, which the specification allows).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use http_body::Body;
use http_body_util::{BodyExt, Full, Limited};
use mcp_connect::group::ServerGroup;
use mcp_connect::protocol::{codes, Incoming, RequestKind};
use serde_json::Value;

use crate::answer::{answer, discovered, initialized};
use crate::checks::{self, Allowed, BearerTokens};
use crate::modern::{self, CacheHints};
use crate::reply::{self, Reply, RpcFailure};
use crate::sessions::{Refused, Sessions};

/// A [`ServerGroup`] served as one MCP server; cheap to clone (clones
/// share the sessions). See the crate's docs.
#[derive(Debug, Clone)]
pub struct Gateway {
    pub(crate) inner: Arc<Inner>,
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) group: ServerGroup,
    pub(crate) sessions: Sessions,
    pub(crate) max_body: usize,
    pub(crate) hosts: Allowed,
    pub(crate) origins: Allowed,
    pub(crate) tokens: BearerTokens,
    pub(crate) cache_hints: CacheHints,
    pub(crate) name: String,
    pub(crate) version: String,
}

impl Gateway {
    /// The group it serves.
    pub fn group(&self) -> &ServerGroup {
        &self.inner.group
    }
}

/// The gateway's response future.
pub type ResponseFuture =
    Pin<Box<dyn Future<Output = Result<Response<Full<Bytes>>, Infallible>> + Send>>;

impl<B> tower_service::Service<Request<B>> for Gateway
where
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Response<Full<Bytes>>;
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
    async fn exchange<B>(&self, request: Request<B>) -> Reply
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
        if let Err(refusal) = checks::bearer(&parts.headers, &self.tokens) {
            let mut response = refused(refusal);
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return response;
        }
        match parts.method {
            Method::POST => {}
            Method::DELETE => return self.delete(&parts.headers),
            Method::GET => return not_allowed(),
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
        let Incoming::Request { id, method, params } = message else {
            // A notification or a client's response: taken, nothing to say.
            return match session {
                Some(session) if self.sessions.touch(session).is_none() => session_not_found(None),
                _ => reply::status(StatusCode::ACCEPTED),
            };
        };
        let id = serde_json::to_value(&id).unwrap_or(Value::Null);
        let exchange = Exchange {
            id: &id,
            method: &method,
            headers: &parts.headers,
            session,
        };
        self.request(exchange, params).await
    }

    /// A request, in its era (see [`modern::is_modern`]).
    async fn request(&self, exchange: Exchange<'_>, params: Option<Value>) -> Reply {
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
            if !modern::has_method(kind) {
                let failure = RpcFailure::new(codes::METHOD_NOT_FOUND, "Method not found");
                return reply::error(StatusCode::NOT_FOUND, id, &failure);
            }
            let answer = match kind {
                RequestKind::Discover => discovered(&self.name, &self.version),
                _ => answer(&self.group, exchange.method, params)
                    .await
                    .map(|result| modern::dressed(result, kind, self.cache_hints)),
            };
            return exchange.answered(answer, None);
        }
        if let Err((status, failure)) = checks::version_header(exchange.headers) {
            return reply::error(status, id, &failure);
        }
        if kind == RequestKind::Initialize {
            return self.initialize(&exchange, params.as_ref());
        }
        let Some(session) = exchange.session else {
            let failure = RpcFailure::new(codes::INVALID_REQUEST, "Missing session id");
            return reply::error(StatusCode::BAD_REQUEST, id, &failure);
        };
        if self.sessions.touch(session).is_none() {
            return session_not_found(id);
        }
        let answer = answer(&self.group, exchange.method, params).await;
        exchange.answered(answer, None)
    }

    /// `initialize`: the version asked for when this gateway speaks it
    /// (else its latest 2025 one), and a new session.
    fn initialize(&self, exchange: &Exchange<'_>, params: Option<&Value>) -> Reply {
        let version = crate::answer::negotiated(params);
        match self.sessions.open(version.as_str()) {
            Ok(session) => {
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

    /// DELETE: the session named ends (200), or there is none (404).
    fn delete(&self, headers: &HeaderMap) -> Reply {
        match checks::session_id(headers) {
            Some(session) if self.sessions.close(session) => reply::status(StatusCode::OK),
            Some(_) => session_not_found(None),
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

fn session_not_found(id: Option<&Value>) -> Reply {
    let failure = RpcFailure::new(codes::INVALID_REQUEST, "Session not found");
    reply::error(StatusCode::NOT_FOUND, id, &failure)
}

fn not_allowed() -> Reply {
    let mut response = reply::status(StatusCode::METHOD_NOT_ALLOWED);
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static("POST, DELETE"));
    response
}
