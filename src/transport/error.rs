//! The transports' errors: the bytes did not go or come back as MCP.
//!
//! Owned here, beside the code that raises them, and re-exported at the
//! crate root; `crate::error` builds the crate's [`Error`](crate::Error) on
//! top of them and imports nothing back into the transports.

use std::error::Error as StdError;
use std::time::Duration;

use mcp_connect_layers::{CancelSource, Closure, Failure, FailureKind, Stage};

use super::SseTooLarge;
use crate::protocol::MessageError;

/// A boxed error from a user-supplied service (an HTTP client stack).
pub type BoxError = Box<dyn StdError + Send + Sync>;

/// A failure of a transport: the bytes did not go or come back as MCP.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TransportError {
    /// The connection could not be opened.
    #[error("could not connect")]
    Connect(#[source] BoxError),
    /// The host name did not resolve (tagged by the HTTP client's resolver).
    #[error("DNS resolution failed")]
    Dns(#[source] BoxError),
    /// The TLS handshake failed (tagged by the HTTP client's connector).
    #[error("TLS failed")]
    Tls(#[source] BoxError),
    /// The HTTP client stack failed for another reason (possibly the
    /// application's own error type, kept as the source).
    #[error("HTTP client failed")]
    Http(#[source] BoxError),
    /// The server redirected and the client's policy did not follow
    /// ([`RedirectPolicy`](super::RedirectPolicy)).
    #[error("the server redirected")]
    Redirect(#[source] RedirectRefused),
    /// The HTTP proxy failed or refused; a [`ProxyError`](super::ProxyError)
    /// in the source chain says how ([`TransportError::proxy_error`]).
    #[error("the proxy failed")]
    Proxy(#[source] BoxError),
    /// The connection broke before or while the response arrived.
    #[error("connection interrupted")]
    Interrupted(#[source] BoxError),
    /// The server answered an HTTP status without a JSON-RPC error body.
    #[error("unexpected HTTP status {status}")]
    Status {
        /// The status code.
        status: u16,
        /// The server's `Retry-After`, when it sent one in seconds.
        retry_after: Option<Duration>,
    },
    /// The server no longer knows this session (HTTP 404 on a request that
    /// carried the session id). The session is over.
    #[error("session expired (HTTP 404)")]
    SessionExpired {
        /// The JSON-RPC code of the error body, if it had one.
        jsonrpc_code: Option<i64>,
        /// Whether the 404 answered this request's own `POST`, so the
        /// server refused the request instead of running it. `false` when
        /// the request was delivered earlier and the 404 came later (to
        /// the `GET` resuming its reply stream).
        request_refused: bool,
    },
    /// Reading or writing a stream or pipe failed.
    #[error("I/O failed")]
    Io(#[source] std::io::Error),
    /// The transport is closed.
    #[error("transport closed ({0})")]
    Closed(Closure),
    /// A message or body exceeded its size bound.
    #[error("message exceeds {limit} bytes")]
    TooLarge {
        /// The configured bound.
        limit: usize,
    },
    /// An SSE line or event exceeded its size bound.
    #[error(transparent)]
    SseTooLarge(#[from] SseTooLarge),
    /// The server sent bytes that are not a JSON-RPC message.
    #[error("server sent a malformed message")]
    Malformed(#[source] MessageError),
    /// A successful HTTP response had a content type that carries no MCP.
    #[error("unexpected content type in a successful response")]
    ContentType,
    /// The response ended without answering the request.
    #[error("response ended without a reply to the request")]
    NoReply,
    /// An SSE stream was cut (`cut`: ended or broken) before the reply to
    /// the request, and could not be resumed with `GET` and
    /// `Last-Event-ID`; `reason` says why. The request was not sent again.
    #[error("reply stream cut ({cut}) and not resumed")]
    NotResumed {
        /// How the stream was cut: `Eof` or `Reset`.
        cut: Closure,
        /// Why it was not resumed.
        #[source]
        reason: ResumeError,
    },
    /// A request was sent with an id that is already awaiting its reply, so
    /// the two replies could not be told apart. Nothing was sent.
    #[error("request id is already in use by a pending request")]
    DuplicateId,
    /// A legacy SSE `endpoint` event named another origin than the SSE URL.
    #[error("SSE endpoint refused: it names another origin")]
    CrossOriginEndpoint,
    /// A legacy SSE `endpoint` event is not a URI reference.
    #[error("SSE endpoint is not a valid URI reference")]
    BadEndpoint,
    /// Ending the session (the HTTP `DELETE`) took longer than its bound;
    /// the session is closed here all the same.
    #[error("ending the session timed out")]
    CloseTimedOut,
    /// The server assigned a session id the spec does not allow (empty,
    /// longer than 256 bytes, or not visible ASCII). It was not kept and is
    /// never sent back.
    #[error("the server assigned an invalid session id")]
    InvalidSessionId,
    /// The server's program is not where it would be started from;
    /// nothing was started.
    #[error("the server's program was not found")]
    MissingProgram(#[source] MissingProgram),
    /// The server process could not be started.
    #[error("could not start the server process")]
    Spawn(#[source] std::io::Error),
    /// The server's working directory (`cwd`) is missing or is no
    /// directory; nothing was started.
    #[error("the server's working directory cannot be used")]
    WorkingDirectory(#[source] std::io::Error),
}

/// A stdio server's program that is not there: named with the `PATH`
/// searched (absent for a name with a `/`, which is not searched for).
/// Program names and `PATH`s are printed; arguments and other environment
/// values never are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingProgram {
    pub(crate) program: std::ffi::OsString,
    pub(crate) path: Option<std::ffi::OsString>,
}

impl MissingProgram {
    /// The program as written.
    pub fn program(&self) -> &std::ffi::OsStr {
        &self.program
    }

    /// The `PATH` it was searched on, for a bare name.
    pub fn path(&self) -> Option<&std::ffi::OsStr> {
        self.path.as_deref()
    }
}

impl std::fmt::Display for MissingProgram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let program = self.program.to_string_lossy();
        match &self.path {
            Some(path) => write!(
                f,
                "no executable `{program}` on the PATH the server runs with ({})",
                path.to_string_lossy()
            ),
            None => write!(f, "no executable file `{program}`"),
        }
    }
}

impl std::error::Error for MissingProgram {}

/// Why a cut SSE stream was not resumed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResumeError {
    /// The server sent no event id, so there is nothing to resume from.
    /// The source is the break, when the stream broke.
    #[error("the server gave no event id to resume from")]
    NoEventId(#[source] Option<BoxError>),
    /// The server answered the resumption `GET` with this status (405 when
    /// it offers no stream, 400 or 404 when it does not know the event id).
    #[error("the server refused to resume the stream (HTTP {status})")]
    Refused {
        /// The status code.
        status: u16,
    },
    /// The stream was cut again or could not be reopened this many times
    /// in a row; the source is the last failure, when it was one.
    #[error("gave up after {attempts} attempts to resume the stream")]
    Exhausted {
        /// Consecutive attempts made.
        attempts: u32,
        /// The last attempt's failure, when it failed (rather than being
        /// cut again).
        #[source]
        last: Option<Box<TransportError>>,
    },
}

impl ResumeError {
    /// The HTTP status of a refusal.
    pub fn http_status(&self) -> Option<u16> {
        match self {
            ResumeError::Refused { status } => Some(*status),
            _ => None,
        }
    }
}

impl TransportError {
    /// What the proxy did, for [`TransportError::Proxy`].
    pub fn proxy_error(&self) -> Option<&super::ProxyError> {
        match self {
            TransportError::Proxy(error) => super::chain::chain_find(error.as_ref()),
            _ => None,
        }
    }

    /// This error as a payload-free failure at `stage`.
    pub fn failure(&self, stage: Stage) -> Failure {
        use TransportError as T;
        match self {
            T::Connect(_) => Failure::new(stage, FailureKind::Connect),
            T::Dns(_) => Failure::new(stage, FailureKind::Dns),
            T::Tls(_) => Failure::new(stage, FailureKind::Tls),
            T::Http(_) => Failure::new(stage, FailureKind::Other),
            T::Proxy(error) => {
                match super::chain::chain_find::<super::ProxyError>(error.as_ref()) {
                    Some(super::ProxyError::Setting(_)) => {
                        Failure::new(stage, FailureKind::Configuration)
                    }
                    Some(proxy) => {
                        let failure = Failure::new(stage, FailureKind::Proxy);
                        match proxy.http_status() {
                            Some(status) => failure.with_http_status(status),
                            None => failure,
                        }
                    }
                    None => Failure::new(stage, FailureKind::Proxy),
                }
            }
            T::Redirect(refused) => {
                Failure::new(stage, FailureKind::HttpStatus).with_http_status(refused.status)
            }
            T::Interrupted(_) => {
                Failure::new(stage, FailureKind::Closed).with_closure(Closure::Reset)
            }
            T::Status {
                status,
                retry_after,
            } => {
                let failure = status_failure(stage, *status);
                match retry_after {
                    Some(after) => failure.with_retry_after(*after),
                    None => failure,
                }
            }
            T::SessionExpired { jsonrpc_code, .. } => {
                let failure = Failure::new(stage, FailureKind::Closed)
                    .with_closure(Closure::SessionExpired)
                    .with_http_status(404);
                match jsonrpc_code {
                    Some(code) => failure.with_jsonrpc_code(*code),
                    None => failure,
                }
            }
            T::Io(_) => Failure::new(stage, FailureKind::Io),
            T::CloseTimedOut => Failure::new(stage, FailureKind::Timeout)
                .with_cancel_source(CancelSource::RequestTimeout),
            // A broken stream is a broken connection, as `Interrupted`; one
            // that ended is a protocol failure, as `NoReply`.
            T::NotResumed { cut, reason } => {
                let failure = match cut {
                    Closure::Eof => Failure::new(stage, FailureKind::Protocol),
                    closure => Failure::new(stage, FailureKind::Closed).with_closure(*closure),
                };
                match reason.http_status() {
                    Some(status) => failure.with_http_status(status),
                    None => failure,
                }
            }
            T::DuplicateId => Failure::new(stage, FailureKind::Configuration),
            T::Closed(closure) => Failure::new(stage, FailureKind::Closed).with_closure(*closure),
            T::TooLarge { .. }
            | T::SseTooLarge(_)
            | T::Malformed(_)
            | T::ContentType
            | T::NoReply
            | T::CrossOriginEndpoint
            | T::BadEndpoint
            | T::InvalidSessionId => Failure::new(stage, FailureKind::Protocol),
            T::WorkingDirectory(_) | T::MissingProgram(_) => {
                Failure::new(stage, FailureKind::Configuration)
            }
            T::Spawn(e) => match e.kind() {
                std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied => {
                    Failure::new(stage, FailureKind::Configuration)
                }
                _ => Failure::new(stage, FailureKind::Io),
            },
        }
    }
}

pub(crate) fn status_failure(stage: Stage, status: u16) -> Failure {
    let kind = match status {
        401 | 403 => FailureKind::Auth,
        // Only a proxy asks for proxy credentials.
        407 => FailureKind::Proxy,
        429 => FailureKind::Throttled,
        _ => FailureKind::HttpStatus,
    };
    Failure::new(stage, kind).with_http_status(status)
}

/// Why a redirect was not followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RedirectReason {
    /// To another origin that was not allowed.
    OtherOrigin,
    /// 301, 302 or 303, which would turn a POST into a GET.
    ChangesMethod,
    /// More hops than the policy allows.
    TooMany,
}

impl RedirectReason {
    fn describe(self) -> &'static str {
        match self {
            RedirectReason::OtherOrigin => "to another origin",
            RedirectReason::ChangesMethod => "it would change the method",
            RedirectReason::TooMany => "too many hops",
        }
    }

    /// A stable, lower-case name for logs and machine-readable output.
    pub fn as_str(self) -> &'static str {
        match self {
            RedirectReason::OtherOrigin => "other-origin",
            RedirectReason::ChangesMethod => "changes-method",
            RedirectReason::TooMany => "too-many-hops",
        }
    }
}

/// A redirect the policy did not follow. Names the status, never the
/// `Location`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("HTTP {status}, not followed: {}", reason.describe())]
pub struct RedirectRefused {
    /// The redirect's status.
    pub status: u16,
    /// Why it was not followed.
    pub reason: RedirectReason,
}
