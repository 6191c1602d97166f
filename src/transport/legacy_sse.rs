//! Legacy HTTP+SSE (2024-11-05): one long GET stream carries every reply;
//! each message is POSTed to an endpoint the server names in its first
//! `endpoint` event.
//!
//! The endpoint must have the SSE URL's origin (scheme, host, port): a
//! server naming another origin is refused, so a hostile or confused server
//! cannot redirect messages, and the headers (credentials) that go with
//! them, elsewhere. One reader task per session reads the stream; replies
//! are matched to waiters by id.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use futures_util::FutureExt;
use http::header::{HeaderMap, HeaderValue, ACCEPT, CONTENT_TYPE};
use http::uri::{Parts, PathAndQuery};
use http::{Method, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use mcp_connect_layers::Closure;
use tokio::task::JoinHandle;

use super::error::TransportError;
use super::http_shared::{client_error, collect, is_event_stream, retry_after, ERROR_BODY_LIMIT};
use super::waiters::{Dispatched, Waiters};
use super::{HttpBody, HttpClient, Reply, SseParser, Transport, TransportKind, TransportStats};
use crate::inbound::Inbound;
use crate::protocol::{Incoming, Notification, ProtocolVersion, Request};
use crate::transport::redact::SafeUri;

/// Where a legacy server sends its POSTs, checked and counted.
#[derive(Clone)]
struct Poster {
    client: HttpClient,
    endpoint: Uri,
    headers: HeaderMap,
    requests: Arc<AtomicU64>,
}

impl Poster {
    async fn post(&self, body: Vec<u8>) -> Result<http::Response<HttpBody>, TransportError> {
        let mut request = http::Request::new(Full::new(Bytes::from(body)));
        *request.method_mut() = Method::POST;
        *request.uri_mut() = self.endpoint.clone();
        let headers = request.headers_mut();
        headers.extend(self.headers.iter().map(|(k, v)| (k.clone(), v.clone())));
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        self.requests.fetch_add(1, Ordering::Relaxed);
        self.client.send(request).await.map_err(client_error)
    }
}

/// A legacy HTTP+SSE session.
pub struct LegacySse {
    poster: Poster,
    waiters: Arc<Waiters>,
    reader: JoinHandle<()>,
}

impl LegacySse {
    /// Opens the stream at `sse_url` and waits for its `endpoint` event,
    /// with what the server says on its own going to `inbound`. The caller
    /// bounds the wait; `headers` go on the GET and every POST and are
    /// never printed. Only the establishment opens one (a session needs
    /// its handshake).
    pub(crate) async fn connect_with(
        client: HttpClient,
        sse_url: Uri,
        mut headers: HeaderMap,
        max_message: usize,
        inbound: Arc<Inbound>,
    ) -> Result<LegacySse, TransportError> {
        for value in headers.values_mut() {
            value.set_sensitive(true);
        }
        let requests = Arc::new(AtomicU64::new(1));
        let mut get = http::Request::new(Full::new(Bytes::new()));
        *get.uri_mut() = sse_url.clone();
        get.headers_mut()
            .extend(headers.iter().map(|(k, v)| (k.clone(), v.clone())));
        get.headers_mut()
            .insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        let response = client.send(get).await.map_err(client_error)?;
        let (parts, mut body) = response.into_parts();
        if !parts.status.is_success() {
            return Err(TransportError::Status {
                status: parts.status.as_u16(),
                retry_after: retry_after(&parts.headers),
            });
        }
        if !is_event_stream(&parts.headers) {
            return Err(TransportError::ContentType);
        }
        let mut parser = SseParser::new(max_message);
        let endpoint = loop {
            if let Some(event) = parser.next_event()? {
                if event.event == "endpoint" {
                    break resolve_endpoint(&sse_url, &event.data)?;
                }
                continue;
            }
            match body.frame().await {
                None => return Err(TransportError::Closed(Closure::Eof)),
                Some(Err(e)) => return Err(TransportError::Interrupted(e)),
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        parser.push(&data);
                    }
                }
            }
        };
        let poster = Poster {
            client,
            endpoint,
            headers,
            requests,
        };
        let waiters = Arc::new(Waiters::default());
        let reader = tokio::spawn(read_stream(
            body,
            parser,
            Arc::clone(&waiters),
            poster.clone(),
            inbound,
        ));
        Ok(LegacySse {
            poster,
            waiters,
            reader,
        })
    }

    async fn exchange(&self, request: &Request) -> Result<Reply, TransportError> {
        let registration = self.waiters.register(&request.id)?;
        let response = self.poster.post(request.to_bytes()).await?;
        if let Some(reply) = self.refused(response).await? {
            return Ok(reply);
        }
        registration.reply().await
    }

    /// `None` when the POST was accepted (the reply comes on the stream);
    /// otherwise the JSON-RPC error or status that refused it.
    async fn refused(
        &self,
        response: http::Response<HttpBody>,
    ) -> Result<Option<Reply>, TransportError> {
        let (parts, body) = response.into_parts();
        let bytes = collect(body, ERROR_BODY_LIMIT).await.unwrap_or_default();
        if parts.status.is_success() {
            return Ok(None);
        }
        if parts.status == StatusCode::NOT_FOUND {
            // The server no longer knows this stream's session.
            self.waiters.finish(Closure::SessionExpired);
            self.reader.abort();
            return Err(TransportError::SessionExpired {
                jsonrpc_code: Incoming::error_in(&bytes).map(|e| e.code()),
                request_refused: true,
            });
        }
        match Incoming::error_in(&bytes) {
            // The message endpoint's URL names the session: every POST carries it.
            Some(error) => Ok(Some(Err(error
                .with_http_status(parts.status.as_u16())
                .with_session_request(true)))),
            None => Err(TransportError::Status {
                status: parts.status.as_u16(),
                retry_after: retry_after(&parts.headers),
            }),
        }
    }

    async fn post_only(&self, body: Vec<u8>) -> Result<(), TransportError> {
        if let Some(closure) = self.waiters.closed() {
            return Err(TransportError::Closed(closure));
        }
        let response = self.poster.post(body).await?;
        match self.refused(response).await? {
            None => Ok(()),
            Some(Err(error)) => Err(TransportError::Status {
                status: error.http_status().unwrap_or_default(),
                retry_after: None,
            }),
            Some(Ok(_)) => Ok(()),
        }
    }
}

async fn read_stream(
    mut body: HttpBody,
    mut parser: SseParser,
    waiters: Arc<Waiters>,
    poster: Poster,
    inbound: Arc<Inbound>,
) {
    let closure = loop {
        match parser.next_event() {
            Err(e) => {
                waiters.fail_all(|| TransportError::SseTooLarge(e));
                break Closure::Reset;
            }
            Ok(Some(event)) => {
                if !event.is_message() || event.data.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let Ok(messages) = Incoming::parse_many(&event.data) else {
                    waiters.skip("an event that is not a JSON-RPC message");
                    continue;
                };
                for message in messages {
                    match waiters.dispatch(message) {
                        Dispatched::Done => {}
                        Dispatched::Notification(method, params) => inbound.notify(method, params),
                        Dispatched::Request(id, method, params) => {
                            // Its own task: replies keep flowing meanwhile. It
                            // holds no handle on the stream, and ends with the
                            // handler or when the POST fails.
                            let (poster, inbound) = (poster.clone(), Arc::clone(&inbound));
                            tokio::spawn(async move {
                                let response = inbound.answer(&id, &method, params).await;
                                if let Ok(response) = poster.post(response).await {
                                    let _ = collect(response.into_body(), ERROR_BODY_LIMIT).await;
                                }
                            });
                        }
                    }
                }
                continue;
            }
            Ok(None) => {}
        }
        match body.frame().await {
            None => break Closure::Eof,
            Some(Err(_)) => break Closure::Reset,
            Some(Ok(frame)) => {
                if let Ok(data) = frame.into_data() {
                    parser.push(&data);
                }
            }
        }
    };
    waiters.finish(closure);
}

/// Resolves the `endpoint` event's URI reference against the SSE URL and
/// refuses any other origin.
pub(crate) fn resolve_endpoint(base: &Uri, data: &[u8]) -> Result<Uri, TransportError> {
    let text = std::str::from_utf8(data)
        .map_err(|_| TransportError::BadEndpoint)?
        .trim();
    let lower = text.to_ascii_lowercase();
    let first_slash = text.find('/').unwrap_or(text.len());
    let resolved = if lower.starts_with("http://") || lower.starts_with("https://") {
        text.parse().map_err(|_| TransportError::BadEndpoint)?
    } else if text[..first_slash].contains(':') {
        // Another scheme (`javascript:`, `file:`...) is never an endpoint.
        return Err(TransportError::BadEndpoint);
    } else if text.starts_with("//") {
        format!("{}:{text}", base.scheme_str().unwrap_or("http"))
            .parse()
            .map_err(|_| TransportError::BadEndpoint)?
    } else {
        let path_and_query = if text.starts_with('/') {
            text.to_owned()
        } else {
            let dir = base.path().rsplit_once('/').map_or("", |(dir, _)| dir);
            format!("{dir}/{text}")
        };
        let mut parts = Parts::from(base.clone());
        parts.path_and_query =
            Some(PathAndQuery::try_from(path_and_query).map_err(|_| TransportError::BadEndpoint)?);
        Uri::from_parts(parts).map_err(|_| TransportError::BadEndpoint)?
    };
    let origin = |uri: &Uri| {
        let scheme = uri.scheme_str().map(str::to_ascii_lowercase);
        let port = uri.port_u16().or(match scheme.as_deref() {
            Some("https") => Some(443),
            Some("http") => Some(80),
            _ => None,
        });
        (scheme, uri.host().map(str::to_ascii_lowercase), port)
    };
    if origin(&resolved) != origin(base) {
        return Err(TransportError::CrossOriginEndpoint);
    }
    Ok(resolved)
}

impl fmt::Debug for LegacySse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The endpoint's query holds the server's session id: path only.
        f.debug_struct("LegacySse")
            .field("endpoint", &SafeUri(&self.poster.endpoint))
            .finish_non_exhaustive()
    }
}

impl Drop for LegacySse {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

impl super::sealed::Sealed for LegacySse {}

impl Transport for LegacySse {
    fn request<'a>(
        &'a self,
        request: &'a Request,
        _version: Option<&'a ProtocolVersion>,
    ) -> BoxFuture<'a, Result<Reply, TransportError>> {
        self.exchange(request).boxed()
    }

    fn notify<'a>(
        &'a self,
        notification: &'a Notification,
        _version: Option<&'a ProtocolVersion>,
    ) -> BoxFuture<'a, Result<(), TransportError>> {
        self.post_only(notification.to_bytes()).boxed()
    }

    fn respond<'a>(
        &'a self,
        response: Vec<u8>,
        _version: Option<&'a ProtocolVersion>,
    ) -> BoxFuture<'a, Result<(), TransportError>> {
        self.post_only(response).boxed()
    }

    fn close(&self) -> BoxFuture<'_, Result<(), TransportError>> {
        // HTTP+SSE has no explicit end: closing the stream ends the session.
        self.waiters.finish(Closure::Local);
        self.reader.abort();
        Box::pin(async { Ok(()) })
    }

    fn closed(&self) -> Option<Closure> {
        self.waiters.closed()
    }

    fn kind(&self) -> TransportKind {
        TransportKind::Sse
    }

    fn stats(&self) -> TransportStats {
        TransportStats {
            http_requests: self.poster.requests.load(Ordering::Relaxed),
            session_id: true,
            skipped: self.waiters.skipped(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Uri {
        "http://127.0.0.1:8080/mcp/sse?token=x".parse().unwrap()
    }

    #[test]
    fn endpoint_references_resolve_against_the_sse_url() {
        let resolve =
            |data: &str| resolve_endpoint(&base(), data.as_bytes()).map(|u| u.to_string());
        assert_eq!(
            resolve("/message?sessionId=1").unwrap(),
            "http://127.0.0.1:8080/message?sessionId=1"
        );
        assert_eq!(
            resolve("messages/?session_id=2").unwrap(),
            "http://127.0.0.1:8080/mcp/messages/?session_id=2"
        );
        assert_eq!(
            resolve("http://127.0.0.1:8080/m").unwrap(),
            "http://127.0.0.1:8080/m"
        );
        assert_eq!(
            resolve("//127.0.0.1:8080/m").unwrap(),
            "http://127.0.0.1:8080/m"
        );
    }

    #[test]
    fn other_origins_are_refused() {
        for data in [
            "http://evil.example/m",
            "https://127.0.0.1:8080/m",
            "http://127.0.0.1:9090/m",
            "//evil.example/m",
        ] {
            assert!(
                matches!(
                    resolve_endpoint(&base(), data.as_bytes()),
                    Err(TransportError::CrossOriginEndpoint)
                ),
                "{data}"
            );
        }
        assert!(matches!(
            resolve_endpoint(&base(), b"not a uri \x7f"),
            Err(TransportError::BadEndpoint)
        ));
    }
}
