//! The crate's error type: a stage and a typed kind, never a bare message.
//!
//! Every error can be turned into a payload-free [`Failure`] through
//! [`Classify`], which is what the layers of `mcp-connect-layers` act on.
//! Displays name the stage, the kind, status codes and JSON-RPC codes; they
//! never include a server's message, a body, a header value or a URL query.

use std::error::Error as StdError;
use std::fmt;

use mcp_connect_layers::{CancelSource, Child, Classify, Failure, FailureKind, Stage};

use crate::protocol::header_params::HeaderParamError;
use crate::protocol::{JsonError, ProtocolVersion, RpcError};
use crate::transport::error::status_failure;

// The transports own their errors; the crate's `Error` wraps them.
pub mod report;

pub use crate::inbound::InputRequiredError;
pub use crate::transport::error::{BoxError, ResumeError, TransportError};

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
    /// A Unix socket with an `https://` URL: nothing speaks TLS over the
    /// socket ([`ConnectRequest::with_unix_socket`](crate::ConnectRequest::with_unix_socket)).
    #[error("a Unix socket is reached with an http:// URL (no TLS is spoken over it)")]
    SocketNeedsHttp,
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
    /// The server refused the version a remembered `server/discover`
    /// result named, on the session's first request (which it did not
    /// run). The era cache forgot the server; the next establishment runs
    /// the full ladder.
    #[error("the server refused the remembered protocol version")]
    RememberedRefused,
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
    /// A task (SEP-2663) gave no result: cancelled, or its state was
    /// malformed.
    #[error("the task gave no result")]
    Task(#[source] crate::extensions::tasks::TaskError),
    /// A skill's file failed its verification (SEP-2640) and was not used.
    #[cfg(feature = "skills")]
    #[error("the skill's file failed verification")]
    Skill(#[source] crate::extensions::skills::SkillError),
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

    /// A failure of the authorization stage.
    pub(crate) fn authorization(error: crate::auth::AuthError) -> Self {
        Error::new(crate::auth::AUTHORIZE, ErrorKind::Auth(error))
    }

    /// The stage it happened in.
    pub fn stage(&self) -> Stage {
        self.stage
    }

    /// What happened.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// What happened, owned.
    pub(crate) fn into_kind(self) -> ErrorKind {
        self.kind
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

crate::error::report::reportable!(Error);

impl StdError for Error {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.kind.source()
    }
}

fn rpc_failure(stage: Stage, error: &RpcError, otherwise: FailureKind) -> Failure {
    if error.code() == crate::protocol::codes::RATE_LIMITED {
        return rate_limited(stage, error);
    }
    let failure = match error.http_status() {
        Some(status @ (401 | 403 | 429 | 500..)) => status_failure(stage, status),
        Some(status) => Failure::new(stage, otherwise).with_http_status(status),
        None => Failure::new(stage, otherwise),
    };
    failure.with_jsonrpc_code(error.code())
}

/// A JSON-RPC rate-limit refusal: throttled, with the delay its
/// `data.retryAfterMs` states (at most a day; a value that is not a
/// non-negative integer is no delay), which wins over a `Retry-After`.
fn rate_limited(stage: Stage, error: &RpcError) -> Failure {
    const LONGEST: u64 = 86_400_000;
    let mut failure = Failure::new(stage, FailureKind::Throttled).with_jsonrpc_code(error.code());
    if let Some(status) = error.http_status() {
        failure = failure.with_http_status(status);
    }
    let stated = error
        .data()
        .and_then(|data| data.get("retryAfterMs"))
        .and_then(serde_json::Value::as_u64);
    match stated {
        Some(ms) => failure.with_retry_after(std::time::Duration::from_millis(ms.min(LONGEST))),
        None => failure,
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
            ErrorKind::Auth(crate::auth::AuthError::Store(_)) => {
                Failure::new(stage, FailureKind::Configuration)
            }
            ErrorKind::Auth(_) => Failure::new(stage, FailureKind::Auth),
            ErrorKind::Pagination(_)
            | ErrorKind::InputRequired(_)
            | ErrorKind::InvalidTool(_)
            | ErrorKind::Subscription(_) => Failure::new(stage, FailureKind::Protocol),
            #[cfg(feature = "skills")]
            ErrorKind::Skill(_) => Failure::new(stage, FailureKind::Protocol),
            ErrorKind::Task(crate::extensions::tasks::TaskError::Cancelled) => {
                Failure::new(stage, FailureKind::Cancelled)
            }
            ErrorKind::Task(_) => Failure::new(stage, FailureKind::Protocol),
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
