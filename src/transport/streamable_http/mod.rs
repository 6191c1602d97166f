//! Streamable HTTP (2025-03-26 and later): one POST per message, replies as a
//! JSON body or an SSE stream on that POST.
//!
//! A request awaits its own POST: no task, no channel, no standalone GET
//! stream per session. The session id the server assigns is kept and sent on
//! every later request; a 404 to a request that carried it ends the session
//! for good (it is never silently reused). JSON-RPC error bodies are read on
//! any status and any content type, because real servers and proxies send
//! them as `text/plain`, with 400 or 404, or inside a 200 stream.
//!
//! This file sends (requests, notifications, responses, the `DELETE`) and
//! keeps the session id; [`reply`] reads what a POST got back; [`resume`]
//! continues cut streams and opens the standalone GET stream.

mod reply;
mod resume;
mod version_cell;

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use http::header::{HeaderMap, HeaderValue, ACCEPT, CONTENT_TYPE};
use http::{Method, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use mcp_connect_layers::Closure;

use super::error::{BoxError, ResumeError, TransportError};
use super::http_shared::{
    client_error, collect, finish_if_ended, is_event_stream, is_json, retry_after, ERROR_BODY_LIMIT,
};
use super::mcp_headers::{
    encode_header_value, param_headers, version_header, Rpc, ACCEPT_BOTH, JSON, MCP_METHOD,
    MCP_NAME, MCP_PROTOCOL_VERSION, MCP_SESSION_ID,
};
use super::resume::Resumption;
use super::waiters::Skipped;
use super::{
    HttpBody, HttpClient, Listen, Reply, ServerStream, SseParser, Transport, TransportKind,
    TransportStats,
};
use crate::inbound::Inbound;
use crate::protocol::{Era, Incoming, Notification, ProtocolVersion, Request, RequestId};
use crate::transport::redact::SafeUri;
use resume::Cut;
use version_cell::VersionCell;

/// A Streamable HTTP connection to one MCP endpoint.
///
/// What it learns is set once (the session id, the closure) or kept in an
/// atomic (the last version): a POST takes no lock.
pub struct StreamableHttp {
    client: HttpClient,
    endpoint: Uri,
    headers: HeaderMap,
    max_message: usize,
    /// How long the `DELETE` that ends the session may take.
    close_timeout: Duration,
    /// Assigned by a successful `initialize`, at most once.
    session_id: OnceLock<HeaderValue>,
    last_version: VersionCell,
    /// How the transport ended: the first closure wins.
    closed: OnceLock<Closure>,
    requests: AtomicU64,
    /// Messages skipped (see the [transport module docs](super)).
    skipped: Skipped,
    inbound: Arc<Inbound>,
}

impl StreamableHttp {
    /// A transport to `endpoint` over `client`. `headers` go on every request
    /// (their values are marked sensitive and never printed); `max_message`
    /// bounds one reply body or SSE event in bytes.
    pub(crate) fn new(
        client: HttpClient,
        endpoint: Uri,
        mut headers: HeaderMap,
        max_message: usize,
    ) -> Self {
        for value in headers.values_mut() {
            value.set_sensitive(true);
        }
        StreamableHttp {
            client,
            endpoint,
            headers,
            max_message,
            close_timeout: super::DEFAULT_CLOSE_GRACE,
            session_id: OnceLock::new(),
            last_version: VersionCell::default(),
            closed: OnceLock::new(),
            requests: AtomicU64::new(0),
            skipped: Skipped::default(),
            inbound: Inbound::none(),
        }
    }

    /// Bounds the `DELETE` that ends the session (default: the default
    /// [`Limits::close_grace`](crate::request::Limits::close_grace), 2 s). A server
    /// that does not answer in time is left to expire the session itself:
    /// the transport is closed here all the same, and `close` reports
    /// [`TransportError::CloseTimedOut`](crate::error::TransportError::CloseTimedOut).
    #[must_use]
    pub(crate) fn with_close_timeout(mut self, timeout: Duration) -> Self {
        self.close_timeout = timeout;
        self
    }

    /// What the server says on its own goes to `inbound`.
    pub(crate) fn with_inbound(mut self, inbound: Arc<Inbound>) -> Self {
        self.inbound = inbound;
        self
    }

    /// Whether the server assigned a session id.
    pub fn has_session(&self) -> bool {
        self.session_id.get().is_some()
    }

    fn check_open(&self) -> Result<(), TransportError> {
        match self.closed.get() {
            Some(closure) => Err(TransportError::Closed(*closure)),
            None => Ok(()),
        }
    }

    fn end(&self, closure: Closure) {
        let _ = self.closed.set(closure);
    }

    fn build(
        &self,
        method: Method,
        body: Bytes,
        rpc: Option<&Rpc<'_>>,
        version: Option<&ProtocolVersion>,
        session: Option<&HeaderValue>,
    ) -> http::Request<Full<Bytes>> {
        let mut request = http::Request::new(Full::new(body));
        *request.method_mut() = method;
        *request.uri_mut() = self.endpoint.clone();
        let headers = request.headers_mut();
        headers.extend(self.headers.iter().map(|(k, v)| (k.clone(), v.clone())));
        headers.insert(ACCEPT, ACCEPT_BOTH);
        headers.insert(CONTENT_TYPE, JSON);
        if let Some(session) = session {
            headers.insert(MCP_SESSION_ID, session.clone());
        }
        if let Some(version) = version {
            if let Some(value) = version_header(version) {
                headers.insert(MCP_PROTOCOL_VERSION, value);
            }
            if let Some(rpc) = rpc.filter(|_| version.era() == Era::Modern) {
                if let Some(value) = rpc.method.clone() {
                    headers.insert(MCP_METHOD, value);
                }
                if let Some(value) = rpc.name.map(encode_header_value) {
                    headers.insert(MCP_NAME, value);
                }
            }
        }
        request
    }

    async fn send(
        &self,
        request: http::Request<Full<Bytes>>,
    ) -> Result<http::Response<HttpBody>, TransportError> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.client.send(request).await.map_err(client_error)
    }

    async fn post(
        &self,
        body: Vec<u8>,
        rpc: Rpc<'_>,
        version: Option<&ProtocolVersion>,
        params: &[(String, String)],
    ) -> Result<(http::Response<HttpBody>, bool), TransportError> {
        self.check_open()?;
        if let Some(version) = version {
            if self.last_version.get() != Some(version) {
                self.last_version.set(version);
            }
        }
        let session = self.session_id.get();
        let mut request = self.build(
            Method::POST,
            Bytes::from(body),
            Some(&rpc),
            version,
            session,
        );
        if version.is_some_and(|v| v.era() == Era::Modern) {
            request.headers_mut().extend(param_headers(params));
        }
        let response = self.send(request).await?;
        // Only a successful `initialize` starts a session: an id on a
        // refused probe, or on any later answer, is not this session's.
        if session.is_none() && rpc.starts_session && response.status().is_success() {
            if let Some(assigned) = response.headers().get(&MCP_SESSION_ID) {
                let assigned = valid_session_id(assigned)?;
                let _ = self.session_id.set(assigned);
            }
        }
        Ok((response, session.is_some()))
    }

    async fn exchange(
        &self,
        request: &Request,
        version: Option<&ProtocolVersion>,
    ) -> Result<Reply, TransportError> {
        let (response, sent_session) = self
            .post(
                request.to_bytes(),
                Rpc::request(request),
                version,
                &request.param_headers,
            )
            .await?;
        let (parts, body) = response.into_parts();
        if !parts.status.is_success() {
            return self
                .failed_status(parts.status, &parts.headers, body, sent_session)
                .await;
        }
        if parts.status == StatusCode::ACCEPTED {
            return Err(TransportError::NoReply);
        }
        if is_event_stream(&parts.headers) {
            return self.reply_from_stream(body, &request.id, version).await;
        }
        self.reply_from_json(&parts.headers, body, &request.id, version)
            .await
    }

    async fn failed_status(
        &self,
        status: StatusCode,
        headers: &HeaderMap,
        body: HttpBody,
        sent_session: bool,
    ) -> Result<Reply, TransportError> {
        // A body that cannot be read or is too large simply carries no JSON-RPC error.
        let error = collect(body, ERROR_BODY_LIMIT)
            .await
            .ok()
            .and_then(|bytes| Incoming::error_in(&bytes));
        if status == StatusCode::NOT_FOUND && sent_session {
            self.end(Closure::SessionExpired);
            return Err(TransportError::SessionExpired {
                jsonrpc_code: error.map(|e| e.code()),
                request_refused: true,
            });
        }
        match error {
            Some(error) => Ok(Err(error
                .with_http_status(status.as_u16())
                .with_session_request(sent_session))),
            None => Err(TransportError::Status {
                status: status.as_u16(),
                retry_after: retry_after(headers),
            }),
        }
    }

    async fn send_notification(
        &self,
        notification: &Notification,
        version: Option<&ProtocolVersion>,
    ) -> Result<(), TransportError> {
        let (response, sent_session) = self
            .post(
                notification.to_bytes(),
                Rpc::notification(notification),
                version,
                &[],
            )
            .await?;
        let status = response.status();
        if status.is_success() {
            // 202 is the rule; some servers answer 200 with a body, which is read and dropped
            // so the connection can go back to the pool.
            let _ = collect(response.into_body(), ERROR_BODY_LIMIT).await;
            return Ok(());
        }
        let (parts, body) = response.into_parts();
        match self
            .failed_status(status, &parts.headers, body, sent_session)
            .await
        {
            Err(e) => Err(e),
            Ok(_) => Err(TransportError::Status {
                status: status.as_u16(),
                retry_after: retry_after(&parts.headers),
            }),
        }
    }

    async fn shut_down(&self) -> Result<(), TransportError> {
        if self.closed.set(Closure::Local).is_err() {
            // Already ended (expired or closed): keep the first closure, send nothing.
            return Ok(());
        }
        let Some(session) = self.session_id.get() else {
            return Ok(());
        };
        let request = self.build(
            Method::DELETE,
            Bytes::new(),
            None,
            self.last_version.get(),
            Some(session),
        );
        let deleted = tokio::time::timeout(self.close_timeout, async {
            let response = self.send(request).await?;
            let status = response.status();
            let _ = collect(response.into_body(), ERROR_BODY_LIMIT).await;
            Ok::<_, TransportError>(status)
        });
        let status = deleted.await.map_err(|_| TransportError::CloseTimedOut)??;
        // 405: the server does not let clients end sessions; 404: already gone.
        if status.is_success()
            || status == StatusCode::METHOD_NOT_ALLOWED
            || status == StatusCode::NOT_FOUND
        {
            Ok(())
        } else {
            Err(TransportError::Status {
                status: status.as_u16(),
                retry_after: None,
            })
        }
    }
}

/// The longest session id accepted. The spec sets none; real servers send
/// 32 to 36 characters (hex, UUIDs), and a long one would ride on every
/// request.
pub(crate) const MAX_SESSION_ID: usize = 256;

/// The session id a server assigned, when it is one the spec allows:
/// visible ASCII (0x21 to 0x7E), 1 to `MAX_SESSION_ID` bytes. Marked
/// sensitive; an invalid one is never kept or sent back.
fn valid_session_id(assigned: &HeaderValue) -> Result<HeaderValue, TransportError> {
    let bytes = assigned.as_bytes();
    if bytes.is_empty()
        || bytes.len() > MAX_SESSION_ID
        || !bytes.iter().all(|b| (0x21..=0x7E).contains(b))
    {
        return Err(TransportError::InvalidSessionId);
    }
    let mut assigned = assigned.clone();
    assigned.set_sensitive(true);
    Ok(assigned)
}

impl fmt::Debug for StreamableHttp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StreamableHttp")
            .field("endpoint", &SafeUri(&self.endpoint))
            .field("has_session", &self.has_session())
            .finish_non_exhaustive()
    }
}

impl crate::transport::sealed::Sealed for StreamableHttp {}

impl Transport for StreamableHttp {
    fn request<'a>(
        &'a self,
        request: &'a Request,
        version: Option<&'a ProtocolVersion>,
    ) -> BoxFuture<'a, Result<Reply, TransportError>> {
        self.exchange(request, version).boxed()
    }

    fn notify<'a>(
        &'a self,
        notification: &'a Notification,
        version: Option<&'a ProtocolVersion>,
    ) -> BoxFuture<'a, Result<(), TransportError>> {
        self.send_notification(notification, version).boxed()
    }

    fn respond<'a>(
        &'a self,
        response: Vec<u8>,
        version: Option<&'a ProtocolVersion>,
    ) -> BoxFuture<'a, Result<(), TransportError>> {
        self.post_response(response, version).boxed()
    }

    fn open_server_stream(&self) -> BoxFuture<'_, Result<Option<ServerStream>, TransportError>> {
        self.get_stream().boxed()
    }

    fn listen<'a>(
        &'a self,
        request: &'a Request,
        version: Option<&'a ProtocolVersion>,
    ) -> BoxFuture<'a, Result<Listen, TransportError>> {
        self.post_listen(request, version).boxed()
    }

    fn resume_server_stream<'a>(
        &'a self,
        stream: &'a mut ServerStream,
        cut: Closure,
    ) -> BoxFuture<'a, Result<(), TransportError>> {
        async move {
            let cut = Cut {
                closure: cut,
                source: None,
            };
            let body = self.resume(stream.resumption(), cut).await?;
            stream.continue_on(body);
            Ok(())
        }
        .boxed()
    }

    fn close(&self) -> BoxFuture<'_, Result<(), TransportError>> {
        self.shut_down().boxed()
    }

    fn closed(&self) -> Option<Closure> {
        self.closed.get().copied()
    }

    fn kind(&self) -> TransportKind {
        TransportKind::StreamableHttp
    }

    fn stats(&self) -> TransportStats {
        TransportStats {
            http_requests: self.requests.load(Ordering::Relaxed),
            session_id: self.has_session(),
            skipped: self.skipped.count(),
        }
    }

    fn session_id_text(&self) -> Option<String> {
        (self.session_id.get())
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
    }
}
