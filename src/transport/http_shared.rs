//! Helpers both HTTP transports (Streamable HTTP and legacy HTTP+SSE) use:
//! reading bodies within a limit, content types, `Retry-After`, and sorting
//! an HTTP client's failure by the types in its source chain; and one
//! whole exchange for the client's own small requests.

use std::time::Duration;

use bytes::Bytes;
use http::header::{HeaderMap, CONTENT_TYPE};
use http_body_util::BodyExt;

use super::chain::{chain_find, chain_has};
use super::connect_error::{DnsError, TlsError};
use super::error::{BoxError, TransportError};
use super::HttpBody;

pub(crate) const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// Reads what has already arrived after the reply, without waiting: when
/// the server ended the stream right after its reply (as most do), the body
/// reaches its end here and hyper can pool the connection for the next
/// request instead of closing it. Anything still to come is not waited for.
pub(crate) fn finish_if_ended(body: &mut HttpBody) {
    use futures_util::FutureExt as _;
    // A few frames at most: the chunked terminator, perhaps an empty frame.
    for _ in 0..4 {
        match body.frame().now_or_never() {
            Some(Some(Ok(_))) => continue,
            _ => return,
        }
    }
}

pub(crate) fn is_event_stream(headers: &HeaderMap) -> bool {
    content_type_is(headers, "text/event-stream")
}

pub(crate) fn is_json(headers: &HeaderMap) -> bool {
    content_type_is(headers, "application/json")
}

fn content_type_is(headers: &HeaderMap, expected: &str) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case(expected))
}

/// The server's `Retry-After` (delay-seconds or an HTTP-date).
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    mcp_connect_layers::http::retry_after(headers)
}

/// Reads a whole body, refusing more than `limit` bytes. A body that
/// arrives in one frame (the usual JSON reply) is returned without a copy.
pub(crate) async fn collect(mut body: HttpBody, limit: usize) -> Result<Bytes, TransportError> {
    let mut first: Option<Bytes> = None;
    let mut joined: Option<bytes::BytesMut> = None;
    let mut length = 0;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(TransportError::Interrupted)?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        length += data.len();
        if length > limit {
            return Err(TransportError::TooLarge { limit });
        }
        match (&mut joined, first.take()) {
            (Some(joined), _) => joined.extend_from_slice(&data),
            (None, None) => first = Some(data),
            (None, Some(earlier)) => {
                let mut buffer = bytes::BytesMut::with_capacity(length);
                buffer.extend_from_slice(&earlier);
                buffer.extend_from_slice(&data);
                joined = Some(buffer);
            }
        }
    }
    Ok(match joined {
        Some(joined) => joined.freeze(),
        None => first.unwrap_or_default(),
    })
}

/// Sends `request` through `client` and reads the whole answer, its body
/// at most `limit` bytes: the client's own small exchanges (authorization
/// metadata and tokens, a registry's `server.json`), not MCP messages.
pub(crate) async fn exchange(
    client: &super::HttpClient,
    request: http::Request<http_body_util::Full<Bytes>>,
    limit: usize,
) -> Result<(http::response::Parts, Bytes), TransportError> {
    let response = client.send(request).await.map_err(client_error)?;
    let (parts, body) = response.into_parts();
    Ok((parts, collect(body, limit).await?))
}

/// Sorts an HTTP client failure by the types in its source chain.
pub(crate) fn client_error(error: BoxError) -> TransportError {
    // First: a proxy's failure holds the TCP or DNS error of reaching it.
    if chain_has::<super::ProxyError>(error.as_ref()) {
        return TransportError::Proxy(error);
    }
    if chain_has::<DnsError>(error.as_ref()) {
        return TransportError::Dns(error);
    }
    if chain_has::<TlsError>(error.as_ref()) {
        return TransportError::Tls(error);
    }
    // TLS 1.3: a server's refusal of the client certificate comes after
    // the handshake, with the first response.
    #[cfg(feature = "rustls")]
    if chain_has::<rustls::Error>(error.as_ref()) {
        return TransportError::Tls(error);
    }
    if let Some(refused) = chain_find::<super::error::RedirectRefused>(error.as_ref()) {
        return TransportError::Redirect(refused.clone());
    }
    let mut connect = false;
    let mut interrupted = false;
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error.as_ref());
    while let Some(e) = source {
        if let Some(e) = e.downcast_ref::<hyper_util::client::legacy::Error>() {
            connect |= e.is_connect();
        } else if let Some(e) = e.downcast_ref::<hyper::Error>() {
            interrupted |= e.is_incomplete_message() || e.is_closed() || e.is_canceled();
        } else if let Some(e) = e.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind as K;
            interrupted |= matches!(
                e.kind(),
                K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe | K::UnexpectedEof
            );
        }
        source = e.source();
    }
    if connect {
        TransportError::Connect(error)
    } else if interrupted {
        TransportError::Interrupted(error)
    } else {
        TransportError::Http(error)
    }
}
