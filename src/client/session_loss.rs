//! When a failed call means the session itself is gone.
//!
//! One rule, shared by [`McpClient`](crate::McpClient) (which reconnects
//! for later calls only on a loss), by [`replay`](crate::client::replay) (which
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
//! with [`McpClientBuilder::with_session_loss`](crate::client::McpClientBuilder::with_session_loss):
//! a server that answers an unknown session with 401, say (an rmcp server
//! was reported doing so), can have that counted as a loss.
//!
//! A refusal that leaves the transport open (a 400 without id, or one the
//! application counts) is bounded by the client: when the first request on
//! the session that replaced a refused one is refused the same way, the
//! refusal is probably not about the session
//! ([`ClientError::RefusedAgain`](crate::client::ClientError::RefusedAgain)),
//! and that refusal replaces no session for a while: 5 s, doubling with
//! each time it happens again, at most 5 minutes, until a request
//! succeeds. Each refusal in that while fails with `RefusedAgain` too, so
//! that nobody reads it as the server's answer to the request (a server
//! group keeps a member's tools listed through it). Then it replaces one
//! session once more. A server refusing every session so costs a few
//! sessions an hour, never a loop; a server that restarted twice in a row
//! (the new session forgotten before its first request, found by the
//! simulation in `sim/`) is reconnected to within seconds instead of
//! never.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

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

/// How long a refusal that came again replaces no session, the first time;
/// each time it comes again this doubles, up to [`SUPPRESSED_AT_MOST`].
const SUPPRESSED_FIRST: Duration = Duration::from_secs(5);
const SUPPRESSED_AT_MOST: Duration = Duration::from_secs(300);

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
    /// A refusal that replaces no session until this instant (or until a
    /// request succeeds).
    suppressed: Option<(LossReason, Instant)>,
    /// How many times in a row a replacing session was refused again.
    again: u32,
}

/// What a failed call does to its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SessionFate {
    /// The session lives.
    Kept,
    /// The session is gone.
    Lost(LossReason),
    /// The new session was refused as the old one was, or a refusal came
    /// while such refusals replace no session: kept.
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
        let now = Instant::now();
        match self.suppressed {
            Some((suppressed, until)) if suppressed == reason && now < until => {
                return SessionFate::RefusedAgain(reason)
            }
            // The wait is over: this refusal replaces one session again.
            Some((suppressed, _)) if suppressed == reason => self.suppressed = None,
            _ => {}
        }
        if self.replaced == Some((generation, reason)) {
            self.replaced = None;
            let wait = SUPPRESSED_FIRST
                .saturating_mul(1 << self.again.min(16))
                .min(SUPPRESSED_AT_MOST);
            self.again += 1;
            self.suppressed = Some((reason, now + wait));
            return SessionFate::RefusedAgain(reason);
        }
        self.pending = Some(reason);
        SessionFate::Lost(reason)
    }

    pub(crate) fn on_session(&mut self, generation: u64) {
        self.replaced = self.pending.take().map(|reason| (generation, reason));
    }

    /// Whether a success would change nothing (what a client asks before
    /// taking its lock for [`on_success`](Self::on_success)).
    pub(crate) fn is_clear(&self) -> bool {
        self.replaced.is_none() && self.suppressed.is_none() && self.again == 0
    }

    pub(crate) fn on_success(&mut self) {
        self.replaced = None;
        self.suppressed = None;
        self.again = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A refusal that came again on the replacing session stops replacing
    /// sessions for 5 s, then 10 s, ... (issue 47: the simulation found a
    /// client held forever on a session the server had forgotten, after
    /// the server restarted twice in a row), and a success resets it.
    #[tokio::test(start_paused = true)]
    async fn a_refusal_that_came_again_replaces_sessions_again_after_a_growing_wait() {
        let refused = Some(LossReason::RefusedWithoutId);
        let mut suspicion = Suspicion::default();
        let mut generation = 1;
        let replace = |suspicion: &mut Suspicion, generation: &mut u64| {
            *generation += 1;
            suspicion.on_session(*generation);
        };
        for wait in [5, 10, 20] {
            assert!(matches!(
                suspicion.on_failure(generation, refused),
                SessionFate::Lost(_)
            ));
            replace(&mut suspicion, &mut generation);
            assert!(matches!(
                suspicion.on_failure(generation, refused),
                SessionFate::RefusedAgain(_)
            ));
            tokio::time::advance(Duration::from_secs(wait) - Duration::from_millis(1)).await;
            assert!(matches!(
                suspicion.on_failure(generation, refused),
                SessionFate::RefusedAgain(_)
            ));
            tokio::time::advance(Duration::from_millis(1)).await;
        }
        // A success forgets it all: the next refusal replaces at once, and
        // a refusal again waits the first wait.
        suspicion.on_success();
        assert!(matches!(
            suspicion.on_failure(generation, refused),
            SessionFate::Lost(_)
        ));
        replace(&mut suspicion, &mut generation);
        assert!(matches!(
            suspicion.on_failure(generation, refused),
            SessionFate::RefusedAgain(_)
        ));
        tokio::time::advance(Duration::from_secs(5)).await;
        assert!(matches!(
            suspicion.on_failure(generation, refused),
            SessionFate::Lost(_)
        ));
    }
}
