//! When a failed call may be sent once more: only on proof that the server
//! never received it.
//!
//! [`McpClient`](crate::McpClient) never replays a call by default: after a
//! transport failure it cannot know whether the server acted on the
//! request, and a tool call may have effects. Some failures do prove the
//! request never reached the server's handler, and for those an
//! application may opt in to one more attempt on the new session with
//! [`ReplayPolicy::Undelivered`]. The evidence that counts, decided on the
//! error's types and never on its message:
//!
//! - [`Undelivered::NotConnected`]: the HTTP client could not open a
//!   connection for the request (DNS, TCP connect, TLS handshake; hyper's
//!   `is_connect`), so not one byte of it was written. A pooled connection
//!   found closed before the request was written is retried by hyper itself
//!   and never reaches here.
//! - [`Undelivered::UnknownSession`]: the server answered the request's own
//!   `POST`, which carried the session id, with HTTP 404: the server no
//!   longer knows the session and refuses the request without running it
//!   (MCP 2025-03-26 and later, Streamable HTTP; the legacy HTTP+SSE
//!   message endpoint likewise); or with HTTP 400 and a JSON-RPC error
//!   without id, the transport's refusal before any handler
//!   ([`LossReason::RefusedWithoutId`]).
//!
//! The evidence counts only when the session-loss rule (see
//! [`crate::client::session_loss`]) found the session lost, so the call goes to a
//! new session, never twice to the same one.
//!
//! What does not count, though the session is lost all the same: a 404 on
//! the `GET` that resumes a cut reply stream (the request was delivered
//! before the cut), a call that was waiting for its reply when another
//! request found the session gone, a connection reset or a stream that
//! ended after the request was written, a stdio child that exited (a pipe
//! write may have been read before the exit), and every timeout.

use crate::client::session_loss::{default_rule, LossReason};
use crate::error::{Error, ErrorKind, TransportError, VersionError};

/// Which failed calls an [`McpClient`](crate::McpClient) sends once more on
/// its next session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum ReplayPolicy {
    /// No failed call is ever sent again (the default).
    #[default]
    Never,
    /// A call that provably never reached the server (see [`Undelivered`])
    /// is sent once on the new session; its outcome is the call's.
    Undelivered,
}

/// The proof that a failed request never reached the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Undelivered {
    /// No connection could be opened for it (DNS, TCP connect or TLS).
    NotConnected,
    /// Its own `POST` was refused for an unknown session: 404, or 400 with
    /// a JSON-RPC error without id.
    UnknownSession,
    /// The server refused the version a remembered `server/discover`
    /// named, before running anything. An [`McpClient`](crate::McpClient)
    /// sends such a call once on the new session whatever its
    /// [`ReplayPolicy`]: the session it went to was a guess the server
    /// corrected, as with a 401 cured by authorizing.
    VersionRefused,
}

impl Undelivered {
    /// A short, stable name for diagnostics.
    pub fn as_str(self) -> &'static str {
        match self {
            Undelivered::NotConnected => "not_connected",
            Undelivered::UnknownSession => "unknown_session",
            Undelivered::VersionRefused => "version_refused",
        }
    }
}

/// The proof in `error` that its request never reached the server, if it
/// holds one.
pub fn undelivered(error: &Error) -> Option<Undelivered> {
    match error.kind() {
        ErrorKind::Transport(
            TransportError::Connect(_) | TransportError::Dns(_) | TransportError::Tls(_),
        ) => Some(Undelivered::NotConnected),
        ErrorKind::Transport(TransportError::SessionExpired {
            request_refused: true,
            ..
        }) => Some(Undelivered::UnknownSession),
        _ if default_rule(error) == Some(LossReason::RefusedWithoutId) => {
            Some(Undelivered::UnknownSession)
        }
        ErrorKind::Version(VersionError::RememberedRefused) => Some(Undelivered::VersionRefused),
        _ => None,
    }
}
