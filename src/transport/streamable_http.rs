//! Streamable HTTP (2025-03-26 and later): one POST per message, replies as a
//! JSON body or an SSE stream on that POST.
//!
//! A request awaits its own POST: no task, no channel, no standalone GET
//! stream per session. The session id the server assigns is kept and sent on
//! every later request; a 404 to a request that carried it ends the session
//! for good (it is never silently reused). JSON-RPC error bodies are read on
//! any status and any content type, because real servers and proxies send
//! them as `text/plain`, with 400 or 404, or inside a 200 stream.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
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
    encode_header_value, method_header, name_param, param_headers, version_header, ACCEPT_BOTH,
    JSON, MCP_METHOD, MCP_NAME, MCP_PROTOCOL_VERSION, MCP_SESSION_ID,
};
use super::resume::Resumption;
use super::waiters::Skipped;
use super::{
    HttpBody, HttpClient, Listen, Reply, ServerStream, SseParser, Transport, TransportKind,
};
use crate::inbound::Inbound;
use crate::protocol::{Era, Incoming, Notification, ProtocolVersion, Request, RequestId};
use crate::redact::SafeUri;

/// What a resumption `GET` got.
enum Resumed {
    /// The stream, again.
    Stream(HttpBody),
    /// A status that says the server will not resume it.
    Refused(u16),
}

/// How a stream ended before its reply.
struct Cut {
    /// `Eof` when the stream ended, `Reset` when it broke.
    closure: Closure,
    /// The break, when it broke and the error is at hand.
    source: Option<BoxError>,
}

impl Cut {
    fn ended() -> Self {
        Cut {
            closure: Closure::Eof,
            source: None,
        }
    }

    fn broken(source: BoxError) -> Self {
        Cut {
            closure: Closure::Reset,
            source: Some(source),
        }
    }
}

const LAST_EVENT_ID: http::header::HeaderName =
    http::header::HeaderName::from_static("last-event-id");

/// A Streamable HTTP connection to one MCP endpoint.
///
/// Its std mutexes guard plain values for a few instructions, never across
/// an `.await` or a call that can panic, so their `expect("lock poisoned")`
/// cannot fire.
pub struct StreamableHttp {
    client: HttpClient,
    endpoint: Uri,
    headers: HeaderMap,
    max_message: usize,
    /// How long the `DELETE` that ends the session may take.
    close_timeout: Duration,
    session_id: Mutex<Option<HeaderValue>>,
    last_version: Mutex<Option<ProtocolVersion>>,
    closed: Mutex<Option<Closure>>,
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
            session_id: Mutex::new(None),
            last_version: Mutex::new(None),
            closed: Mutex::new(None),
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
        self.session_id.lock().expect("lock poisoned").is_some()
    }

    fn check_open(&self) -> Result<(), TransportError> {
        match *self.closed.lock().expect("lock poisoned") {
            Some(closure) => Err(TransportError::Closed(closure)),
            None => Ok(()),
        }
    }

    fn end(&self, closure: Closure) {
        self.closed
            .lock()
            .expect("lock poisoned")
            .get_or_insert(closure);
    }

    fn build(
        &self,
        method: Method,
        body: Bytes,
        rpc_method: Option<&str>,
        rpc_name: Option<&str>,
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
            if version.era() == Era::Modern {
                if let Some(value) = rpc_method.and_then(method_header) {
                    headers.insert(MCP_METHOD, value);
                }
                if let Some(value) = rpc_name.map(encode_header_value) {
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
        rpc_method: &str,
        rpc_name: Option<&str>,
        version: Option<&ProtocolVersion>,
        params: &[(String, String)],
    ) -> Result<(http::Response<HttpBody>, bool), TransportError> {
        self.check_open()?;
        if let Some(version) = version {
            let mut last = self.last_version.lock().expect("lock poisoned");
            if last.as_ref() != Some(version) {
                *last = Some(version.clone());
            }
        }
        let session = self.session_id.lock().expect("lock poisoned").clone();
        let mut request = self.build(
            Method::POST,
            Bytes::from(body),
            Some(rpc_method),
            rpc_name,
            version,
            session.as_ref(),
        );
        if version.is_some_and(|v| v.era() == Era::Modern) {
            request.headers_mut().extend(param_headers(params));
        }
        let response = self.send(request).await?;
        // Only a successful `initialize` starts a session: an id on a
        // refused probe, or on any later answer, is not this session's.
        if session.is_none() && rpc_method == "initialize" && response.status().is_success() {
            if let Some(assigned) = response.headers().get(&MCP_SESSION_ID) {
                let assigned = valid_session_id(assigned)?;
                *self.session_id.lock().expect("lock poisoned") = Some(assigned);
            }
        }
        Ok((response, session.is_some()))
    }

    async fn exchange(
        &self,
        request: &Request,
        version: Option<&ProtocolVersion>,
    ) -> Result<Reply, TransportError> {
        let name = name_param(&request.method, request.params.as_ref());
        let (response, sent_session) = self
            .post(
                request.to_bytes(),
                &request.method,
                name,
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

    /// Reads a JSON reply body (one message or a batch) for `id`.
    async fn reply_from_json(
        &self,
        headers: &HeaderMap,
        body: HttpBody,
        id: &RequestId,
        version: Option<&ProtocolVersion>,
    ) -> Result<Reply, TransportError> {
        let bytes = collect(body, self.max_message).await?;
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Err(TransportError::NoReply);
        }
        let messages = Incoming::parse_many(&bytes).map_err(|e| {
            if is_json(headers) {
                TransportError::Malformed(e)
            } else {
                TransportError::ContentType
            }
        })?;
        let mut reply = None;
        for message in messages {
            if let Some(found) = self.handle(message, id, version).await? {
                reply.get_or_insert(found);
            }
        }
        reply.ok_or(TransportError::NoReply)
    }

    /// POSTs `subscriptions/listen` and hands back its reply stream, which
    /// the caller reads for as long as the subscription lives.
    async fn post_listen(
        &self,
        request: &Request,
        version: Option<&ProtocolVersion>,
    ) -> Result<Listen, TransportError> {
        let (response, sent_session) = self
            .post(request.to_bytes(), &request.method, None, version, &[])
            .await?;
        let (parts, body) = response.into_parts();
        if !parts.status.is_success() {
            return self
                .failed_status(parts.status, &parts.headers, body, sent_session)
                .await
                .map(Listen::Reply);
        }
        if is_event_stream(&parts.headers) {
            return Ok(Listen::Stream(Box::new(ServerStream::new(
                body,
                self.max_message,
            ))));
        }
        self.reply_from_json(&parts.headers, body, &request.id, version)
            .await
            .map(Listen::Reply)
    }

    /// Reads an SSE reply stream until the event that answers `id`,
    /// resuming it (see [`resume`](super::resume)) when it is cut first.
    async fn reply_from_stream(
        &self,
        mut body: HttpBody,
        id: &RequestId,
        version: Option<&ProtocolVersion>,
    ) -> Result<Reply, TransportError> {
        let mut parser = SseParser::new(self.max_message);
        let mut resumption = Resumption::default();
        loop {
            while let Some(event) = parser.next_event()? {
                if !resumption.deliver(event.id.as_deref()) {
                    continue;
                }
                // Priming events carry an id and no data; other event types are not MCP.
                if !event.is_message() || event.data.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let Ok(messages) = Incoming::parse_many(&event.data) else {
                    self.skipped.skip("an event that is not a JSON-RPC message");
                    continue;
                };
                let mut reply = None;
                for message in messages {
                    if let Some(found) = self.handle(message, id, version).await? {
                        reply.get_or_insert(found);
                    }
                }
                if let Some(reply) = reply {
                    finish_if_ended(&mut body);
                    return Ok(reply);
                }
            }
            let cut = match body.frame().await {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        parser.push(&data);
                    }
                    continue;
                }
                None => Cut::ended(),
                Some(Err(e)) => Cut::broken(e),
            };
            resumption.absorb(&parser);
            body = self.resume(&mut resumption, cut).await?;
            parser = SseParser::new(self.max_message);
        }
    }

    /// Reopens a cut stream from its last event id, waiting the server's
    /// `retry:` delay before each attempt, within the bounds of
    /// [`resume`](super::resume).
    async fn resume(
        &self,
        resumption: &mut Resumption,
        cut: Cut,
    ) -> Result<HttpBody, TransportError> {
        let closure = cut.closure;
        // An id that cannot be a header value is no id to resume from.
        let Some(mut last_event_id) = resumption
            .last_event_id()
            .and_then(|id| HeaderValue::from_bytes(id.as_bytes()).ok())
        else {
            return Err(TransportError::NotResumed {
                cut: closure,
                reason: ResumeError::NoEventId(cut.source),
            });
        };
        last_event_id.set_sensitive(true);
        let mut last_failure = None;
        loop {
            let Some(attempt) = resumption.next_attempt() else {
                return Err(TransportError::NotResumed {
                    cut: closure,
                    reason: ResumeError::Exhausted {
                        attempts: resumption.attempts() - 1,
                        last: last_failure.map(Box::new),
                    },
                });
            };
            let delay = resumption.delay();
            tokio::time::sleep(delay).await;
            match self.get_from(&last_event_id).await {
                Ok(Resumed::Stream(body)) => {
                    tracing::debug!(
                        target: "mcp_connect::resume",
                        attempt,
                        delay_ms = delay.as_millis() as u64,
                        status = 200u16,
                        "stream resumed"
                    );
                    return Ok(body);
                }
                Ok(Resumed::Refused(status)) => {
                    tracing::debug!(
                        target: "mcp_connect::resume",
                        attempt,
                        delay_ms = delay.as_millis() as u64,
                        status,
                        "stream resumption refused"
                    );
                    return Err(TransportError::NotResumed {
                        cut: closure,
                        reason: ResumeError::Refused { status },
                    });
                }
                Err(
                    error @ (TransportError::SessionExpired { .. } | TransportError::Closed(_)),
                ) => return Err(error),
                Err(error) => {
                    tracing::debug!(
                        target: "mcp_connect::resume",
                        attempt,
                        delay_ms = delay.as_millis() as u64,
                        status = error.failure(mcp_connect_layers::Stage::REQUEST).http_status,
                        "stream resumption failed"
                    );
                    last_failure = Some(error);
                }
            }
        }
    }

    /// `GET` with `Last-Event-ID`: the stream again from after that event.
    async fn get_from(&self, last_event_id: &HeaderValue) -> Result<Resumed, TransportError> {
        self.check_open()?;
        let version = self.last_version.lock().expect("lock poisoned").clone();
        let session = self.session_id.lock().expect("lock poisoned").clone();
        let mut request = self.build(
            Method::GET,
            Bytes::new(),
            None,
            None,
            version.as_ref(),
            session.as_ref(),
        );
        let headers = request.headers_mut();
        headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        headers.remove(CONTENT_TYPE);
        headers.insert(LAST_EVENT_ID, last_event_id.clone());
        let response = self.send(request).await?;
        let (parts, body) = response.into_parts();
        match parts.status {
            status if status.is_success() && is_event_stream(&parts.headers) => {
                Ok(Resumed::Stream(body))
            }
            status if status.is_success() => Err(TransportError::ContentType),
            StatusCode::NOT_FOUND if session.is_some() => {
                // The session is gone: terminal, as on any request.
                // The request was delivered before its stream was cut:
                // this 404 refuses the resumption, not the request.
                let jsonrpc_code = match self
                    .failed_status(StatusCode::NOT_FOUND, &parts.headers, body, true)
                    .await
                {
                    Err(TransportError::SessionExpired { jsonrpc_code, .. }) => jsonrpc_code,
                    _ => None,
                };
                Err(TransportError::SessionExpired {
                    jsonrpc_code,
                    request_refused: false,
                })
            }
            status @ (StatusCode::METHOD_NOT_ALLOWED
            | StatusCode::BAD_REQUEST
            | StatusCode::NOT_FOUND) => Ok(Resumed::Refused(status.as_u16())),
            status => Err(TransportError::Status {
                status: status.as_u16(),
                retry_after: retry_after(&parts.headers),
            }),
        }
    }

    /// Handles one message from a reply; `Some` when it is the reply to `id`.
    async fn handle(
        &self,
        message: Incoming,
        id: &RequestId,
        version: Option<&ProtocolVersion>,
    ) -> Result<Option<Reply>, TransportError> {
        match message {
            Incoming::Response { id: got, result } if got == *id => Ok(Some(Ok(result))),
            Incoming::Error { id: got, error } if got.as_ref().is_none_or(|got| got == id) => {
                Ok(Some(Err(error)))
            }
            Incoming::Response { .. } | Incoming::Error { .. } => {
                self.skipped
                    .skip("a reply to an id no request is waiting for");
                Ok(None)
            }
            // Answered in line: this stream carries only this request's
            // traffic, and its reply may well wait for the answer.
            Incoming::Request { id, method, params } => {
                let response = self.inbound.answer(&id, &method, params).await;
                self.respond(response, version).await?;
                Ok(None)
            }
            Incoming::Notification { method, params } => {
                self.inbound.notify(method, params);
                Ok(None)
            }
        }
    }

    /// POSTs a response to a server-initiated request.
    async fn post_response(
        &self,
        body: Vec<u8>,
        version: Option<&ProtocolVersion>,
    ) -> Result<(), TransportError> {
        let session = self.session_id.lock().expect("lock poisoned").clone();
        let request = self.build(
            Method::POST,
            Bytes::from(body),
            None,
            None,
            version,
            session.as_ref(),
        );
        let response = self.send(request).await?;
        if !response.status().is_success() {
            tracing::debug!(
                status = response.status().as_u16(),
                "answer to a server request refused"
            );
        }
        Ok(())
    }

    /// GETs the standalone server stream. 405 (and 400, which some servers
    /// send instead) mean the server offers none; the modern era has none, so
    /// nothing is sent there.
    async fn get_stream(&self) -> Result<Option<ServerStream>, TransportError> {
        self.check_open()?;
        let version = self.last_version.lock().expect("lock poisoned").clone();
        if version.as_ref().is_some_and(|v| v.era() == Era::Modern) {
            return Ok(None);
        }
        let session = self.session_id.lock().expect("lock poisoned").clone();
        let mut request = self.build(
            Method::GET,
            Bytes::new(),
            None,
            None,
            version.as_ref(),
            session.as_ref(),
        );
        request
            .headers_mut()
            .insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        request.headers_mut().remove(CONTENT_TYPE);
        let response = self.send(request).await?;
        let (parts, body) = response.into_parts();
        match parts.status {
            StatusCode::METHOD_NOT_ALLOWED | StatusCode::BAD_REQUEST => Ok(None),
            status if status.is_success() && is_event_stream(&parts.headers) => {
                Ok(Some(ServerStream::new(body, self.max_message)))
            }
            status if status.is_success() => Err(TransportError::ContentType),
            status => match self
                .failed_status(status, &parts.headers, body, session.is_some())
                .await
            {
                Err(e) => Err(e),
                Ok(_) => Err(TransportError::Status {
                    status: status.as_u16(),
                    retry_after: None,
                }),
            },
        }
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
                &notification.method,
                None,
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
        {
            let mut closed = self.closed.lock().expect("lock poisoned");
            if closed.is_some() {
                // Already ended (expired or closed): keep the first closure, send nothing.
                return Ok(());
            }
            *closed = Some(Closure::Local);
        }
        let Some(session) = self.session_id.lock().expect("lock poisoned").take() else {
            return Ok(());
        };
        let version = self.last_version.lock().expect("lock poisoned").clone();
        let request = self.build(
            Method::DELETE,
            Bytes::new(),
            None,
            None,
            version.as_ref(),
            Some(&session),
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
        *self.closed.lock().expect("lock poisoned")
    }

    fn kind(&self) -> TransportKind {
        TransportKind::StreamableHttp
    }

    fn has_session_id(&self) -> bool {
        self.has_session()
    }

    fn skipped(&self) -> u64 {
        self.skipped.count()
    }

    fn http_requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }
}
