//! The crate's error type: a stage and a typed kind, never a bare message.
//!
//! Every error can be turned into a payload-free [`Failure`] through
//! [`Classify`], which is what the layers of `mcp-connect-layers` act on.
//! Displays name the stage, the kind, status codes and JSON-RPC codes; they
//! never include a server's message, a body, a header value or a URL query.

use std::error::Error as StdError;
use std::fmt;
use std::time::Duration;

use mcp_connect_layers::{CancelSource, Child, Classify, Closure, Failure, FailureKind, Stage};

use crate::protocol::header_params::HeaderParamError;
use crate::protocol::{JsonError, MessageError, ProtocolVersion, RpcError};
use crate::transport::SseTooLarge;

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
    /// The server process could not be started.
    #[error("could not start the server process")]
    Spawn(#[source] std::io::Error),
}

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

/// Invalid configuration, found before any I/O.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The URL is not an absolute `http` or `https` URL.
    #[error("the server URL must be an absolute http:// or https:// URL")]
    Url,
    /// The URL names a port outside 1 to 65535.
    #[error("the server URL's port must be a number from 1 to 65535")]
    Port,
    /// A header name or value is invalid.
    #[error("invalid header")]
    Header,
    /// The header belongs to the HTTP framing or to the transport
    /// (`Host`, `Content-Length`, `Transfer-Encoding`, `Mcp-Session-Id`...).
    #[error("this header is set by the transport and cannot be configured")]
    ReservedHeader,
    /// The target is `https://` but the HTTP client cannot speak TLS (the
    /// default client built without the `rustls` feature). Nothing was sent.
    #[error("https:// needs TLS, which this HTTP client does not have (enable the `rustls` feature or give a TLS-capable client)")]
    TlsUnavailable,
    /// The stdio command is empty.
    #[error("the stdio command is empty")]
    EmptyCommand,
    /// The transport does not fit the target (e.g. stdio for a URL).
    #[error("transport {transport} cannot reach this target")]
    TransportMismatch {
        /// The requested transport.
        transport: &'static str,
    },
    /// A limit that must be positive is zero.
    #[error("limit {limit} must be greater than zero")]
    ZeroLimit {
        /// The limit's name, e.g. `probe_timeout`.
        limit: &'static str,
    },
    /// The pin or ceiling names a version this client does not speak, or
    /// they contradict each other.
    #[error("version policy: {0} is not a version this client allows")]
    Version(ProtocolVersion),
}

/// No protocol version both sides allow.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum VersionError {
    /// The server chose a version this client does not allow.
    #[error("server chose protocol version {offered}, which this client does not allow")]
    NotAllowed {
        /// What the server answered.
        offered: ProtocolVersion,
    },
    /// The server's supported versions share none with this client's.
    #[error("no protocol version in common with the server")]
    NoMutual,
}

/// What went wrong, without where.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ErrorKind {
    /// Invalid configuration.
    #[error("invalid configuration")]
    Config(#[source] ConfigError),
    /// The transport failed.
    #[error("transport failed")]
    Transport(#[source] TransportError),
    /// The server answered with a JSON-RPC error.
    #[error("server answered with an error")]
    Rpc(#[source] RpcError),
    /// The server rejected this client (`-32020`, `-32021`); never downgraded.
    #[error("server rejected the client")]
    Rejected(#[source] RpcError),
    /// No protocol version both sides allow.
    #[error("protocol version mismatch")]
    Version(#[source] VersionError),
    /// A result did not have the shape the protocol requires.
    #[error("server result has the wrong shape")]
    Result(#[source] JsonError),
    /// A limit expired.
    #[error("timed out ({0})")]
    Timeout(CancelSource),
    /// The caller cancelled.
    #[error("cancelled by the caller")]
    Cancelled,
    /// The server's result asked for input this client could not give, or
    /// has a result type this client does not know.
    #[error("the server's result could not be completed")]
    InputRequired(#[source] InputRequiredError),
    /// A paginated listing did not end: a cursor came back, or it went past
    /// the page limit.
    #[error("paginated listing did not end")]
    Pagination(#[source] PaginationError),
    /// Authorization failed (the authorization stage, or a server that
    /// still refuses the token).
    #[error("authorization failed")]
    Auth(#[source] crate::auth::AuthError),
    /// A 2026-07-28 subscription (`subscriptions/listen`) was not set up.
    #[error("the subscription was not set up")]
    Subscription(#[source] SubscriptionError),
    /// The tool's `x-mcp-header` declarations are invalid, so it was left
    /// out of the listing and is never called (2026-07-28 era).
    #[error("the tool declares invalid headers and is never called")]
    InvalidTool(#[source] HeaderParamError),
}

/// Why a 2026-07-28 result (`resultType`) could not be turned into a
/// completed one. Never a default: an unknown type is this error, not an
/// empty success.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InputRequiredError {
    /// The server asked for input (sampling, elicitation, roots) that no
    /// handler answers, or the handler refused it with this JSON-RPC code.
    #[error("no handler answered the server's input request")]
    Unanswered {
        /// The handler's error code (`-32601` when there is no handler).
        code: i64,
    },
    /// The server kept asking past the round limit.
    #[error("more than {limit} input rounds")]
    TooManyRounds {
        /// The round limit.
        limit: u32,
    },
    /// An `input_required` result with neither `inputRequests` nor
    /// `requestState`, or with input requests of the wrong shape.
    #[error("malformed input_required result")]
    Malformed,
    /// A `resultType` this client does not know.
    #[error("unknown result type")]
    UnknownResultType,
}

/// Why a 2026-07-28 subscription (`subscriptions/listen`) was not set up.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SubscriptionError {
    /// The server ended the subscription (or its stream) before
    /// acknowledging it.
    #[error("the subscription ended before the server acknowledged it")]
    Ended,
    /// The server acknowledged the subscription without a resource it was
    /// asked for; that resource is not subscribed.
    #[error("the server did not acknowledge a requested resource")]
    NotAcknowledged,
}

/// Why a paginated listing was stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PaginationError {
    /// The server sent a cursor it had already sent (a loop).
    #[error("the server repeated a cursor")]
    CursorRepeated,
    /// More pages than the limit.
    #[error("more than {limit} pages")]
    TooManyPages {
        /// The page limit.
        limit: usize,
    },
}

/// An establishment or session error: the stage it happened in and what
/// happened, with the full source chain kept.
///
/// When one attempt failed in several ways (Streamable HTTP, then the
/// HTTP+SSE fallback), the first is the primary error and the others are kept
/// in order in [`also`](Self::also), each with its own source chain.
pub struct Error {
    stage: Stage,
    kind: ErrorKind,
    also: Vec<Error>,
}

impl Error {
    pub(crate) fn new(stage: Stage, kind: ErrorKind) -> Self {
        Error {
            stage,
            kind,
            also: Vec::new(),
        }
    }

    /// Keeps a later failure beside this (primary) one.
    pub(crate) fn with_also(mut self, later: Error) -> Self {
        self.also.push(later);
        self
    }

    /// Later failures of the same attempt, after the primary one.
    pub fn also(&self) -> &[Error] {
        &self.also
    }

    pub(crate) fn transport(stage: Stage, error: TransportError) -> Self {
        Error::new(stage, ErrorKind::Transport(error))
    }

    pub(crate) fn config(error: ConfigError) -> Self {
        Error::new(Stage::CONFIGURE, ErrorKind::Config(error))
    }

    /// The stage it happened in.
    pub fn stage(&self) -> Stage {
        self.stage
    }

    /// What happened.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// The HTTP status involved, if any.
    pub fn http_status(&self) -> Option<u16> {
        self.failure().http_status
    }

    /// The JSON-RPC error code involved, if any.
    pub fn jsonrpc_code(&self) -> Option<i64> {
        self.failure().jsonrpc_code
    }

    /// The server's JSON-RPC error, if that is what this is.
    pub fn rpc_error(&self) -> Option<&RpcError> {
        match &self.kind {
            ErrorKind::Rpc(e) | ErrorKind::Rejected(e) => Some(e),
            _ => None,
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut debug = f.debug_struct("Error");
        debug.field("stage", &self.stage).field("kind", &self.kind);
        if !self.also.is_empty() {
            debug.field("also", &self.also);
        }
        debug.finish()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed: {}", self.stage, self.kind)?;
        for later in &self.also {
            write!(f, "; then {later}")?;
        }
        Ok(())
    }
}

impl StdError for Error {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.kind.source()
    }
}

fn status_failure(stage: Stage, status: u16) -> Failure {
    let kind = match status {
        401 | 403 => FailureKind::Auth,
        429 => FailureKind::Throttled,
        _ => FailureKind::HttpStatus,
    };
    Failure::new(stage, kind).with_http_status(status)
}

fn rpc_failure(stage: Stage, error: &RpcError, otherwise: FailureKind) -> Failure {
    let failure = match error.http_status() {
        Some(status @ (401 | 403 | 429 | 500..)) => status_failure(stage, status),
        Some(status) => Failure::new(stage, otherwise).with_http_status(status),
        None => Failure::new(stage, otherwise),
    };
    failure.with_jsonrpc_code(error.code())
}

impl TransportError {
    /// This error as a payload-free failure at `stage`.
    pub fn failure(&self, stage: Stage) -> Failure {
        use TransportError as T;
        match self {
            T::Connect(_) => Failure::new(stage, FailureKind::Connect),
            T::Dns(_) => Failure::new(stage, FailureKind::Dns),
            T::Tls(_) => Failure::new(stage, FailureKind::Tls),
            T::Http(_) => Failure::new(stage, FailureKind::Other),
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
            T::Spawn(e) => match e.kind() {
                std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied => {
                    Failure::new(stage, FailureKind::Configuration)
                }
                _ => Failure::new(stage, FailureKind::Io),
            },
        }
    }
}

impl Classify for Error {
    fn failure(&self) -> Failure {
        let stage = self.stage;
        match &self.kind {
            ErrorKind::Config(_) => Failure::new(stage, FailureKind::Configuration),
            ErrorKind::Transport(e) => e.failure(stage),
            ErrorKind::Rpc(e) => rpc_failure(stage, e, FailureKind::Rpc),
            ErrorKind::Rejected(e) => rpc_failure(stage, e, FailureKind::Rejected),
            ErrorKind::Version(_) => Failure::new(stage, FailureKind::Version),
            ErrorKind::Result(_) => Failure::new(stage, FailureKind::Protocol),
            ErrorKind::Timeout(source) => {
                Failure::new(stage, FailureKind::Timeout).with_cancel_source(*source)
            }
            ErrorKind::Cancelled => {
                Failure::new(stage, FailureKind::Cancelled).with_cancel_source(CancelSource::Caller)
            }
            ErrorKind::Auth(crate::auth::AuthError::PersonTimeout(_)) => {
                Failure::new(stage, FailureKind::Timeout)
                    .with_cancel_source(CancelSource::Interaction)
            }
            ErrorKind::Auth(_) => Failure::new(stage, FailureKind::Auth),
            ErrorKind::Pagination(_)
            | ErrorKind::InputRequired(_)
            | ErrorKind::InvalidTool(_)
            | ErrorKind::Subscription(_) => Failure::new(stage, FailureKind::Protocol),
        }
    }

    fn children(&self) -> Vec<Child<'_>> {
        let mut children = vec![Child {
            failure: self.failure(),
            error: self,
        }];
        for later in &self.also {
            children.extend(later.children());
        }
        children
    }
}
