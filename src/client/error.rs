//! Why a call on an [`McpClient`](super::McpClient) failed.

use std::sync::Arc;
use std::time::Duration;

use mcp_connect_layers::policy::Refused;
use mcp_connect_layers::{Classify, Failure, FailureKind, Stage};

use crate::client::session_loss::LossReason;
use crate::error::Error;
use crate::establish::EstablishError;

/// Why a call on an [`McpClient`](super::McpClient) failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// No session could be established.
    #[error("no session could be established")]
    Connect(#[source] Arc<EstablishError>),
    /// The last reconnect failed recently; the client is backing off.
    #[error("no session: backing off for {retry_in:?} after a failed reconnect ({failure})")]
    CoolingDown {
        /// The failure of the last reconnect.
        failure: Failure,
        /// How long until the client tries again.
        retry_in: Duration,
        /// The establishment error that started the cool-down (none when
        /// sessions kept dying young instead).
        #[source]
        cause: Option<Arc<EstablishError>>,
    },
    /// The call itself failed on session `generation`.
    #[error("{operation} failed on session {generation}")]
    Call {
        /// The operation, e.g. `call_tool`.
        operation: &'static str,
        /// The session generation the call ran on.
        generation: u64,
        /// Whether the session was found dead and dropped (the next call
        /// builds a new one).
        session_lost: bool,
        /// The error.
        #[source]
        error: Error,
    },
    /// A call policy on this server's call path refused the call before it
    /// was sent: its bulkhead was full or its breaker open.
    #[error("a call policy refused the call")]
    Refused(#[source] Refused),
    /// A layer the application put on the call path failed the call with
    /// an error of its own (tower's `Timeout` elapsed, `LoadShed` shed it).
    #[error("a layer on the call path failed the call")]
    Layer(#[source] Arc<dyn std::error::Error + Send + Sync>),
    /// The server's result was larger than the cap the application put on
    /// this server's results ([`result_cap`](super::result_cap)); it was
    /// dropped unread.
    #[error("the result of {size} bytes is over the {limit}-byte cap on this server's results")]
    ResultTooLarge {
        /// The cap, in bytes.
        limit: usize,
        /// The result's size, in bytes.
        size: usize,
    },
    /// The client was dropped while a call through its call path was
    /// queued.
    #[error("the client is gone")]
    Gone,
    /// The first request on a session that replaced a refused one was
    /// refused the same way (`reason`): the refusal is probably not about
    /// the session. The session is kept, and this refusal replaces no
    /// session for a while (see [`crate::client::session_loss`]); a refusal in that
    /// while fails this way too. Not the server's answer to the request.
    #[error("{operation} was refused on session {generation} as a session before it was ({reason}); the session is kept")]
    RefusedAgain {
        /// The operation, e.g. `call_tool`.
        operation: &'static str,
        /// The session generation the call ran on.
        generation: u64,
        /// The refusal, as the session-loss rule named it.
        reason: LossReason,
        /// The error.
        #[source]
        error: Error,
    },
}

impl ClientError {
    /// Whether the call failed before any session had it: no session could
    /// be had, a call policy refused it, or the client was gone.
    pub(crate) fn before_any_session(&self) -> bool {
        matches!(
            self,
            ClientError::Connect(_)
                | ClientError::CoolingDown { .. }
                | ClientError::Refused(_)
                | ClientError::Gone
        )
    }

    /// The session generation the call ran on, when it ran.
    pub fn generation(&self) -> Option<u64> {
        match self {
            ClientError::Call { generation, .. } | ClientError::RefusedAgain { generation, .. } => {
                Some(*generation)
            }
            _ => None,
        }
    }

    /// Whether the session died with this call.
    pub fn is_session_lost(&self) -> bool {
        matches!(
            self,
            ClientError::Call {
                session_lost: true,
                ..
            }
        )
    }

    /// The call's own error, when the call ran.
    pub fn call_error(&self) -> Option<&Error> {
        match self {
            ClientError::Call { error, .. } | ClientError::RefusedAgain { error, .. } => {
                Some(error)
            }
            _ => None,
        }
    }
}

impl Classify for ClientError {
    fn failure(&self) -> Failure {
        match self {
            ClientError::Connect(e) => e.failure(),
            ClientError::CoolingDown { failure, .. } => *failure,
            ClientError::Refused(refused) => refused.failure(),
            ClientError::Gone => Failure::new(Stage::REQUEST, FailureKind::Closed),
            ClientError::ResultTooLarge { .. } => {
                Failure::new(Stage::REQUEST, FailureKind::Protocol)
            }
            ClientError::Layer(error) => layer_failure(error.as_ref()),
            ClientError::Call { error, .. } | ClientError::RefusedAgain { error, .. } => {
                error.failure()
            }
        }
    }
}

crate::error::report::reportable!(ClientError);

impl From<Refused> for ClientError {
    fn from(refused: Refused) -> Self {
        ClientError::Refused(refused)
    }
}

/// What a layer's own error says, as far as the layers know it: a
/// policy's refusal or an elapsed tower `Timeout` by type, anything else
/// `Other`.
fn layer_failure(error: &(dyn std::error::Error + 'static)) -> Failure {
    if let Some(refused) = error.downcast_ref::<Refused>() {
        return refused.failure();
    }
    if error.is::<tower::timeout::error::Elapsed>() {
        return Failure::new(Stage::REQUEST, FailureKind::Timeout);
    }
    Failure::new(Stage::REQUEST, FailureKind::Other)
}
