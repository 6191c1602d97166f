//! The structured description of one failure.

use std::fmt;
use std::time::Duration;

use crate::Stage;

/// How a transport ended when it ended on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Closure {
    /// The peer closed its end cleanly (EOF on a stream or pipe).
    Eof,
    /// The connection was reset or broke mid-message.
    Reset,
    /// The server process exited.
    ProcessExit,
    /// The server declared the session gone (HTTP 404 on a session).
    SessionExpired,
    /// This side closed it.
    Local,
}

impl Closure {
    /// A stable, lower-case name for logs and machine-readable output.
    pub fn as_str(self) -> &'static str {
        match self {
            Closure::Eof => "eof",
            Closure::Reset => "reset",
            Closure::ProcessExit => "process_exit",
            Closure::SessionExpired => "session_expired",
            Closure::Local => "local",
        }
    }
}

impl fmt::Display for Closure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who or what stopped an operation before it finished.
///
/// The sources are kept apart on purpose: a caller that cancels must
/// never be told "timeout", and an overall deadline is a different fact from a
/// probe that took too long.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CancelSource {
    /// The caller cancelled (its token fired or it dropped the future).
    Caller,
    /// The probe limit expired.
    ProbeTimeout,
    /// The per-handshake limit expired.
    HandshakeTimeout,
    /// The overall establishment deadline expired.
    Deadline,
    /// The per-request limit of an established session expired.
    RequestTimeout,
    /// The limit on a wait for a person (an authorization page, say)
    /// expired; that wait does not count against the deadline.
    Interaction,
}

impl CancelSource {
    /// A stable, lower-case name for logs and machine-readable output.
    pub fn as_str(self) -> &'static str {
        match self {
            CancelSource::Caller => "caller",
            CancelSource::ProbeTimeout => "probe_timeout",
            CancelSource::HandshakeTimeout => "handshake_timeout",
            CancelSource::Deadline => "deadline",
            CancelSource::RequestTimeout => "request_timeout",
            CancelSource::Interaction => "interaction",
        }
    }
}

impl fmt::Display for CancelSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What kind of failure happened, independent of where.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FailureKind {
    /// The configuration is invalid; nothing was sent.
    Configuration,
    /// The host name did not resolve.
    Dns,
    /// TLS failed (handshake, certificate).
    Tls,
    /// The connection could not be opened (refused, unreachable).
    Connect,
    /// Reading or writing failed after the connection was open.
    Io,
    /// The transport closed; see [`Failure::closure`].
    Closed,
    /// A limit expired; see [`Failure::cancel_source`].
    Timeout,
    /// The caller cancelled.
    Cancelled,
    /// HTTP 401 or 403.
    Auth,
    /// HTTP 429; see [`Failure::retry_after`].
    Throttled,
    /// Any other unexpected HTTP status without a protocol error body.
    HttpStatus,
    /// The server answered with a protocol-level (JSON-RPC) error.
    Rpc,
    /// The server rejected this client outright (fatal, never retried).
    Rejected,
    /// No protocol version both sides allow.
    Version,
    /// The peer sent something that is not the protocol (malformed, oversized,
    /// uncorrelated, wrong content type).
    Protocol,
    /// The peer said it is temporarily unavailable (HTTP 502, 503, 504);
    /// [`Failure::retry_after`] keeps its `Retry-After`.
    Unavailable,
    /// The peer showed that it speaks only an older version of the protocol:
    /// an attempt planned for that version may succeed.
    Outdated,
    /// An HTTP proxy between the client and the server failed or refused:
    /// it asked for credentials (HTTP 407), refused the `CONNECT` tunnel,
    /// or could not be reached. A fresh session through the same proxy
    /// would meet the same proxy, so it is never retried by default.
    Proxy,
    /// Anything else, including an application's own error type.
    Other,
}

impl FailureKind {
    /// A stable, lower-case name for logs and machine-readable output.
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Configuration => "configuration",
            FailureKind::Dns => "dns",
            FailureKind::Tls => "tls",
            FailureKind::Connect => "connect",
            FailureKind::Io => "io",
            FailureKind::Closed => "closed",
            FailureKind::Timeout => "timeout",
            FailureKind::Cancelled => "cancelled",
            FailureKind::Auth => "auth",
            FailureKind::Throttled => "throttled",
            FailureKind::HttpStatus => "http_status",
            FailureKind::Rpc => "rpc",
            FailureKind::Rejected => "rejected",
            FailureKind::Version => "version",
            FailureKind::Protocol => "protocol",
            FailureKind::Unavailable => "unavailable",
            FailureKind::Outdated => "outdated",
            FailureKind::Proxy => "proxy",
            FailureKind::Other => "other",
        }
    }
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One failure as plain, payload-free data.
///
/// Built by [`Classify::failure`] from a typed error; consumed by layers that
/// decide (recovery) or report (diagnostics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Failure {
    /// Where it happened.
    pub stage: Stage,
    /// What happened.
    pub kind: FailureKind,
    /// How the transport ended, for [`FailureKind::Closed`].
    pub closure: Option<Closure>,
    /// The HTTP status, when there was one.
    pub http_status: Option<u16>,
    /// The JSON-RPC error code, when there was one.
    pub jsonrpc_code: Option<i64>,
    /// Who stopped it, for [`FailureKind::Timeout`] and [`FailureKind::Cancelled`].
    pub cancel_source: Option<CancelSource>,
    /// The server's `Retry-After`, kept for [`FailureKind::Throttled`] and
    /// [`FailureKind::Unavailable`].
    pub retry_after: Option<Duration>,
}

impl Failure {
    /// A failure with only its stage and kind set.
    pub fn new(stage: Stage, kind: FailureKind) -> Self {
        Failure {
            stage,
            kind,
            closure: None,
            http_status: None,
            jsonrpc_code: None,
            cancel_source: None,
            retry_after: None,
        }
    }

    /// The same failure with another kind (e.g. a status re-read as evidence
    /// of an older peer).
    #[must_use]
    pub fn with_kind(mut self, kind: FailureKind) -> Self {
        self.kind = kind;
        self
    }

    /// Sets the closure category.
    #[must_use]
    pub fn with_closure(mut self, closure: Closure) -> Self {
        self.closure = Some(closure);
        self
    }

    /// Sets the HTTP status.
    #[must_use]
    pub fn with_http_status(mut self, status: u16) -> Self {
        self.http_status = Some(status);
        self
    }

    /// Sets the JSON-RPC error code.
    #[must_use]
    pub fn with_jsonrpc_code(mut self, code: i64) -> Self {
        self.jsonrpc_code = Some(code);
        self
    }

    /// Sets the cancellation source.
    #[must_use]
    pub fn with_cancel_source(mut self, source: CancelSource) -> Self {
        self.cancel_source = Some(source);
        self
    }

    /// Sets the server's `Retry-After`.
    #[must_use]
    pub fn with_retry_after(mut self, retry_after: Duration) -> Self {
        self.retry_after = Some(retry_after);
        self
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed: {}", self.stage, self.kind)?;
        if let Some(closure) = self.closure {
            write!(f, " ({closure})")?;
        }
        if let Some(status) = self.http_status {
            write!(f, ", HTTP {status}")?;
        }
        if let Some(code) = self.jsonrpc_code {
            write!(f, ", JSON-RPC {code}")?;
        }
        if let Some(source) = self.cancel_source {
            write!(f, ", by {source}")?;
        }
        Ok(())
    }
}

/// One failure inside an error, with the error value it came from, so a
/// policy can downcast it (to an application's own error type, say) without
/// ever reading its message.
#[derive(Clone, Copy)]
pub struct Child<'a> {
    /// The failure as data.
    pub failure: Failure,
    /// The error it came from, with its source chain.
    pub error: &'a (dyn std::error::Error + 'static),
}

impl fmt::Debug for Child<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Child")
            .field("failure", &self.failure)
            .finish_non_exhaustive()
    }
}

impl Child<'_> {
    /// The first error of type `T` in this child's source chain, itself
    /// included.
    pub fn find<T: std::error::Error + 'static>(&self) -> Option<&T> {
        let mut current: Option<&(dyn std::error::Error + 'static)> = Some(self.error);
        while let Some(error) = current {
            if let Some(found) = error.downcast_ref::<T>() {
                return Some(found);
            }
            current = error.source();
        }
        None
    }
}

/// Turns a typed error into [`Failure`]s.
///
/// An error that stands for several (an attempt that failed on one transport
/// and then on another) returns every child from [`Classify::children`], so a
/// policy inspects each one rather than only the first. An error that ended
/// several attempts says so through [`Classify::attempts`] and
/// [`Classify::stop`]; the defaults describe one attempt.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be classified",
    label = "this error type does not implement `Classify`",
    note = "the layers decide on `Failure` values: implement `mcp_connect_layers::Classify` for the inner service's error type (its `failure` method is the only one required)"
)]
pub trait Classify {
    /// The failure this error stands for: its primary child, or for a
    /// decided outcome the failure that decided it.
    fn failure(&self) -> Failure;

    /// Every failure inside this error, the primary first. The default is the
    /// error alone.
    fn children(&self) -> Vec<Child<'_>>
    where
        Self: std::error::Error + Sized + 'static,
    {
        vec![Child {
            failure: self.failure(),
            error: self,
        }]
    }

    /// How many attempts this error ended.
    fn attempts(&self) -> u32 {
        1
    }

    /// Why attempts stopped, when a recovery layer ran.
    fn stop(&self) -> Option<Stop> {
        None
    }
}

/// Why recovery stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Stop {
    /// The last failure was not eligible for a fresh attempt (or was vetoed).
    NotEligible,
    /// The attempt cap was reached.
    MaxAttempts,
    /// The request's plan has no further attempt.
    NoPlan,
    /// The shared retry budget is empty.
    Budget,
    /// The overall deadline passed before another attempt could start.
    Deadline,
    /// The caller cancelled between attempts.
    Cancelled,
    /// Recovery is off (a cap of one attempt): the single attempt failed.
    RecoveryOff,
    /// The request cannot be sent again (its body cannot be cloned).
    NotReplayable,
}

impl Stop {
    /// A stable, lower-case name for logs and machine-readable output.
    pub fn as_str(self) -> &'static str {
        match self {
            Stop::NotEligible => "not_eligible",
            Stop::MaxAttempts => "max_attempts",
            Stop::NoPlan => "no_plan",
            Stop::Budget => "budget",
            Stop::Deadline => "deadline",
            Stop::Cancelled => "cancelled",
            Stop::RecoveryOff => "recovery_off",
            Stop::NotReplayable => "not_replayable",
        }
    }

    /// A short phrase for people: what ended the attempts.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            Stop::NotEligible => "the failure is not one a fresh attempt can fix",
            Stop::MaxAttempts => "attempt cap reached",
            Stop::NoPlan => "no further attempt planned",
            Stop::Budget => "the shared retry budget is empty",
            Stop::Deadline => "the deadline passed",
            Stop::Cancelled => "the caller cancelled",
            Stop::RecoveryOff => "recovery is off",
            Stop::NotReplayable => "the request cannot be sent again",
        }
    }
}
