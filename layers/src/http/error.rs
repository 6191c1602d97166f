//! What an HTTP exchange fails with, and how each failure is classified.

use std::fmt;
use std::time::{Duration, SystemTime};

use http::header::RETRY_AFTER;
use http::{HeaderMap, StatusCode};

use crate::classify::ClassifyOutcome;
use crate::{Classify, Closure, Failure, FailureKind, Stage};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// An HTTP exchange that failed: an error status (the whole response is
/// kept) or the client's own error (kept as the source).
pub struct HttpError<B> {
    failure: Failure,
    repr: Repr<B>,
}

enum Repr<B> {
    Status(http::Response<B>),
    Client(BoxError),
}

impl<B> HttpError<B> {
    /// An error status.
    pub fn from_response(response: http::Response<B>) -> Self {
        HttpError {
            failure: status_failure(response.status(), response.headers()),
            repr: Repr::Status(response),
        }
    }

    /// The client's own error, classified by what its source chain holds.
    pub fn from_client(error: impl Into<BoxError>) -> Self {
        let error = error.into();
        HttpError {
            failure: client_failure(&*error),
            repr: Repr::Client(error),
        }
    }

    /// The status, when the server answered.
    pub fn status(&self) -> Option<StatusCode> {
        match &self.repr {
            Repr::Status(response) => Some(response.status()),
            Repr::Client(_) => None,
        }
    }

    /// The response, when the server answered.
    pub fn response(&self) -> Option<&http::Response<B>> {
        match &self.repr {
            Repr::Status(response) => Some(response),
            Repr::Client(_) => None,
        }
    }

    /// The response, unwrapped, when the server answered.
    pub fn into_response(self) -> Option<http::Response<B>> {
        match self.repr {
            Repr::Status(response) => Some(response),
            Repr::Client(_) => None,
        }
    }
}

/// Never prints a header, a body or the client error's own words (those
/// are in the [`source`](std::error::Error::source)).
impl<B> fmt::Debug for HttpError<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpError")
            .field("failure", &self.failure)
            .finish_non_exhaustive()
    }
}

impl<B> fmt::Display for HttpError<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.repr {
            Repr::Status(response) => write!(f, "HTTP status {}", response.status()),
            Repr::Client(_) => write!(f, "HTTP request failed: {}", self.failure.kind),
        }
    }
}

impl<B> std::error::Error for HttpError<B> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.repr {
            Repr::Status(_) => None,
            Repr::Client(error) => Some(&**error),
        }
    }
}

impl<B> Classify for HttpError<B> {
    fn failure(&self) -> Failure {
        self.failure
    }
}

/// 1xx-3xx pass; 4xx and 5xx become an [`HttpError`] that keeps the
/// response; the client's errors become one that keeps the error.
impl<B, E> ClassifyOutcome<E> for http::Response<B>
where
    B: 'static,
    E: Into<BoxError>,
{
    type Error = HttpError<B>;

    fn classify_response(self) -> Result<Self, HttpError<B>> {
        if self.status().as_u16() >= 400 {
            Err(HttpError::from_response(self))
        } else {
            Ok(self)
        }
    }

    fn classify_error(error: E) -> HttpError<B> {
        HttpError::from_client(error)
    }
}

fn status_failure(status: StatusCode, headers: &HeaderMap) -> Failure {
    let kind = match status.as_u16() {
        401 | 403 => FailureKind::Auth,
        // Only a proxy asks for proxy credentials.
        407 => FailureKind::Proxy,
        429 => FailureKind::Throttled,
        502..=504 => FailureKind::Unavailable,
        _ => FailureKind::HttpStatus,
    };
    let failure = Failure::new(Stage::REQUEST, kind).with_http_status(status.as_u16());
    match (kind, retry_after(headers)) {
        (FailureKind::Throttled | FailureKind::Unavailable, Some(wait)) => {
            failure.with_retry_after(wait)
        }
        _ => failure,
    }
}

/// What the client's error chain says, read from types only: `hyper_util`'s
/// "could not connect" flag, `hyper`'s "closed before a response" and
/// "cancelled before sending" flags, and `std::io::ErrorKind`.
fn client_failure(error: &(dyn std::error::Error + 'static)) -> Failure {
    let mut connecting = false;
    let mut current = Some(error);
    while let Some(error) = current {
        if let Some(client) = error.downcast_ref::<hyper_util::client::legacy::Error>() {
            connecting |= client.is_connect();
        }
        if let Some(hyper) = error.downcast_ref::<hyper::Error>() {
            if hyper.is_canceled() {
                // Dispatch gave up before writing: nothing was sent.
                return Failure::new(Stage::CONNECT, FailureKind::Closed)
                    .with_closure(Closure::Reset);
            }
            if hyper.is_incomplete_message() {
                return Failure::new(Stage::REQUEST, FailureKind::Closed)
                    .with_closure(Closure::Eof);
            }
        }
        if let Some(io) = error.downcast_ref::<std::io::Error>() {
            if let Some(failure) = io_failure(io, connecting) {
                return failure;
            }
        }
        current = error.source();
    }
    let stage = if connecting {
        Stage::CONNECT
    } else {
        Stage::REQUEST
    };
    Failure::new(stage, FailureKind::Other)
}

fn io_failure(error: &std::io::Error, connecting: bool) -> Option<Failure> {
    use std::io::ErrorKind as K;
    let failure = match error.kind() {
        K::ConnectionRefused
        | K::TimedOut
        | K::HostUnreachable
        | K::NetworkUnreachable
        | K::AddrNotAvailable
            if connecting =>
        {
            Failure::new(Stage::CONNECT, FailureKind::Connect)
        }
        K::ConnectionReset | K::ConnectionAborted | K::BrokenPipe => {
            Failure::new(Stage::REQUEST, FailureKind::Closed).with_closure(Closure::Reset)
        }
        K::UnexpectedEof => {
            Failure::new(Stage::REQUEST, FailureKind::Closed).with_closure(Closure::Eof)
        }
        _ => return None,
    };
    Some(failure)
}

/// A `Retry-After` header as a wait from now: delay-seconds, or an
/// HTTP-date (a date in the past is no wait). `None` when absent or
/// malformed.
///
/// ```
/// use std::time::Duration;
/// use http::HeaderMap;
/// use mcp_connect_layers::http::retry_after;
///
/// let mut headers = HeaderMap::new();
/// headers.insert("retry-after", "3".parse().unwrap());
/// assert_eq!(retry_after(&headers), Some(Duration::from_secs(3)));
/// ```
pub fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn response(status: u16, retry: Option<&str>) -> http::Response<()> {
        let mut builder = http::Response::builder().status(status);
        if let Some(retry) = retry {
            builder = builder.header("retry-after", retry);
        }
        builder.body(()).unwrap()
    }

    fn classify(status: u16, retry: Option<&str>) -> Failure {
        match ClassifyOutcome::<std::io::Error>::classify_response(response(status, retry)) {
            Err(error) => error.failure(),
            Ok(_) => panic!("{status} passed"),
        }
    }

    #[test]
    fn statuses() {
        assert!(ClassifyOutcome::<std::io::Error>::classify_response(response(200, None)).is_ok());
        assert!(ClassifyOutcome::<std::io::Error>::classify_response(response(304, None)).is_ok());
        assert_eq!(classify(401, None).kind, FailureKind::Auth);
        assert_eq!(classify(403, None).kind, FailureKind::Auth);
        let throttled = classify(429, Some("7"));
        assert_eq!(throttled.kind, FailureKind::Throttled);
        assert_eq!(throttled.retry_after, Some(Duration::from_secs(7)));
        let busy = classify(503, Some("2"));
        assert_eq!(
            (busy.kind, busy.http_status),
            (FailureKind::Unavailable, Some(503))
        );
        assert_eq!(busy.retry_after, Some(Duration::from_secs(2)));
        assert_eq!(classify(500, None).kind, FailureKind::HttpStatus);
        assert_eq!(classify(407, None).kind, FailureKind::Proxy);
        assert_eq!(classify(404, Some("2")).retry_after, None);
    }

    #[test]
    fn retry_after_forms() {
        let at = |value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(RETRY_AFTER, value.parse().unwrap());
            retry_after(&headers)
        };
        assert_eq!(at(" 12 "), Some(Duration::from_secs(12)));
        assert_eq!(at("Wed, 21 Oct 2015 07:28:00 GMT"), Some(Duration::ZERO));
        let later = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(120));
        let wait = at(&later).unwrap();
        assert!(wait > Duration::from_secs(100) && wait <= Duration::from_secs(120));
        assert_eq!(at("soon"), None);
        assert_eq!(at("-1"), None);
    }

    #[test]
    fn io_errors_by_kind_only() {
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        assert_eq!(
            client_failure(&refused).kind,
            FailureKind::Other,
            "not while connecting"
        );
        assert_eq!(
            io_failure(&refused, true).unwrap().kind,
            FailureKind::Connect
        );
        let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
        let failure = client_failure(&reset);
        assert_eq!(
            (failure.kind, failure.closure),
            (FailureKind::Closed, Some(Closure::Reset))
        );
        let other = std::io::Error::other("dns: no such host");
        assert_eq!(client_failure(&other).kind, FailureKind::Other);
    }
}
