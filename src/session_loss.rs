//! When a failed call means the session itself is gone.
//!
//! One rule, shared by [`McpClient`](crate::McpClient) (which reconnects
//! for later calls only on a loss), by [`replay`](crate::replay) (which
//! may resend a call only after a loss that proves the call undelivered)
//! and by the command's watch mode. Decided on types, status codes, body
//! shape and ids, never on a message.
//!
//! The default rule ([`default_rule`]):
//!
//! - [`LossReason::Closed`]: the transport closed, broke or could not
//!   connect, or the HTTP client failed without a status. No answer came.
//! - [`LossReason::Expired`]: HTTP 404 to a request that carried the
//!   session id, as the spec says a server answers a session it no longer
//!   knows (the Python SDK does).
//! - [`LossReason::RefusedWithoutId`]: HTTP 400 whose body is a JSON-RPC
//!   error without an id (`"id": null`, or no `id` member at all, as
//!   server-everything 2026.8.31 sends it), answering a request that
//!   carried the session id. A handler's error names its request's id and
//!   comes with 200; an
//!   error without an id on a 400 comes from the transport, which refused
//!   the request before any handler saw it. That is how server-everything
//!   and the many servers built from the TypeScript SDK v1 examples answer
//!   a session id they do not know, for example after a restart.
//!
//! - [`LossReason::VersionRefused`]: the first request of a session that
//!   started from a remembered `server/discover` was refused for its
//!   version; the session closed itself.
//!
//! Never a loss: 401, 403, 429, 5xx, any other status, a proxy's failure
//! (the session lives on the server, not in the proxy), a 400 whose error
//! names the request's id, and every JSON-RPC error answered with 200.
//!
//! An application that knows a server better may widen or narrow the rule
//! with [`McpClient::with_session_loss`](crate::McpClient::with_session_loss):
//! a server that answers an unknown session with 401, say (an rmcp server
//! was reported doing so), can have that counted as a loss.
//!
//! A refusal that leaves the transport open (a 400 without id, or one the
//! application counts) is bounded by the client: when the first request on
//! the session that replaced a refused one is refused the same way, the
//! refusal is not about the session, and the client stops reconnecting for
//! that reason until a request has succeeded
//! ([`ClientError::RefusedAgain`](crate::client::ClientError::RefusedAgain)).

use std::fmt;
use std::sync::Arc;

use mcp_connect_layers::{Closure, FailureKind};

use crate::error::{Error, ErrorKind, TransportError, VersionError};

/// Why a failed call means its session is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum LossReason {
    /// The transport closed, broke or could not connect.
    Closed,
    /// HTTP 404 to a request that carried the session id.
    Expired,
    /// HTTP 400 with a JSON-RPC error without an id (`null` or missing), to
    /// a request that carried the session id: refused before any handler.
    RefusedWithoutId,
    /// The server refused the version a remembered `server/discover`
    /// named ([`VersionError::RememberedRefused`](crate::error::VersionError)):
    /// the session was closed, and the era cache forgot the server.
    VersionRefused,
    /// The application's rule counted a failure the default does not.
    Application,
}

impl LossReason {
    /// A short, stable name for diagnostics.
    pub fn as_str(self) -> &'static str {
        match self {
            LossReason::Closed => "closed",
            LossReason::Expired => "expired",
            LossReason::RefusedWithoutId => "refused_without_id",
            LossReason::VersionRefused => "version_refused",
            LossReason::Application => "application",
        }
    }

    /// Whether the server refused the request while the transport stayed
    /// open, so that a new session might be refused the same way.
    pub(crate) fn is_refusal(self) -> bool {
        matches!(self, LossReason::RefusedWithoutId | LossReason::Application)
    }
}

impl fmt::Display for LossReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the default rule says of `error`, a failed call on an established
/// session: the reason its session is gone, or `None` when the server was
/// talking and the session lives.
pub fn default_rule(error: &Error) -> Option<LossReason> {
    match error.kind() {
        // An HTTP client error with no status classifies as `Other`, yet
        // the connection it ran on is gone all the same.
        ErrorKind::Transport(TransportError::Http(_)) => return Some(LossReason::Closed),
        ErrorKind::Rpc(rpc)
            if rpc.http_status() == Some(400)
                && rpc.id_is_null()
                && rpc.answered_session_request() =>
        {
            return Some(LossReason::RefusedWithoutId)
        }
        ErrorKind::Version(VersionError::RememberedRefused) => {
            return Some(LossReason::VersionRefused)
        }
        _ => {}
    }
    let failure = error.failure();
    match failure.kind {
        FailureKind::Closed if failure.closure == Some(Closure::SessionExpired) => {
            Some(LossReason::Expired)
        }
        FailureKind::Closed | FailureKind::Io | FailureKind::Connect => Some(LossReason::Closed),
        _ => None,
    }
}

/// Whether the default rule counts `error` as a loss of its session.
pub fn session_lost(error: &Error) -> bool {
    default_rule(error).is_some()
}

/// What an application's session-loss rule is asked about one failed call.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct LossSignal<'a> {
    /// The call's error.
    pub error: &'a Error,
    /// What the default rule says.
    pub default: Option<LossReason>,
    /// Whether the session has a server-assigned id that every request on
    /// it carries (Streamable HTTP with a session, legacy HTTP+SSE).
    pub has_session_id: bool,
}

/// An application's session-loss rule: `true` when the session is gone.
type Hook = dyn Fn(&LossSignal<'_>) -> bool + Send + Sync;

/// The session-loss rule a client applies: the default, or the
/// application's hook over it.
#[derive(Clone, Default)]
pub(crate) struct SessionLossRule {
    hook: Option<Arc<Hook>>,
}

impl SessionLossRule {
    pub(crate) fn new(hook: impl Fn(&LossSignal<'_>) -> bool + Send + Sync + 'static) -> Self {
        SessionLossRule {
            hook: Some(Arc::new(hook)),
        }
    }

    /// The verdict on one failed call.
    pub(crate) fn judge(&self, error: &Error, has_session_id: bool) -> Option<LossReason> {
        let default = default_rule(error);
        let Some(hook) = &self.hook else {
            return default;
        };
        let signal = LossSignal {
            error,
            default,
            has_session_id,
        };
        match (hook(&signal), default) {
            (false, _) => None,
            (true, Some(reason)) => Some(reason),
            (true, None) => Some(LossReason::Application),
        }
    }
}

impl fmt::Debug for SessionLossRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionLossRule")
            .field("hook", &self.hook.is_some())
            .finish()
    }
}

/// What the client remembers of refusals that replaced a session, so a
/// server that refuses every new session the same way is not reconnected
/// to in a loop.
#[derive(Debug, Default)]
pub(crate) struct Suspicion {
    /// The refusal that dropped the last session, for the next one.
    pending: Option<LossReason>,
    /// The generation made to replace a refused session, and the refusal,
    /// until a request succeeds.
    replaced: Option<(u64, LossReason)>,
    /// A refusal that no longer replaces sessions, until a request succeeds.
    suppressed: Option<LossReason>,
}

/// What a failed call does to its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SessionFate {
    /// The session lives.
    Kept,
    /// The session is gone.
    Lost(LossReason),
    /// The new session was refused as the old one was: kept, and the
    /// refusal no longer counts until a request succeeds.
    RefusedAgain(LossReason),
}

impl Suspicion {
    pub(crate) fn on_failure(
        &mut self,
        generation: u64,
        reason: Option<LossReason>,
    ) -> SessionFate {
        let Some(reason) = reason else {
            return SessionFate::Kept;
        };
        if !reason.is_refusal() {
            self.pending = None;
            return SessionFate::Lost(reason);
        }
        if self.suppressed == Some(reason) {
            return SessionFate::Kept;
        }
        if self.replaced == Some((generation, reason)) {
            self.replaced = None;
            self.suppressed = Some(reason);
            return SessionFate::RefusedAgain(reason);
        }
        self.pending = Some(reason);
        SessionFate::Lost(reason)
    }

    pub(crate) fn on_session(&mut self, generation: u64) {
        self.replaced = self.pending.take().map(|reason| (generation, reason));
    }

    pub(crate) fn on_success(&mut self) {
        self.replaced = None;
        self.suppressed = None;
    }
}
