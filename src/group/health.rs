//! Each server's health, and the stream of its changes.

use std::sync::Arc;

use mcp_connect_layers::{Failure, FailureKind};
use tokio::sync::broadcast;

/// Where a server of the group stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum HealthState {
    /// Its session is being established (first, after a restart, or after
    /// it failed and was restarted).
    Connecting,
    /// A lazy server not connected yet: its remembered tools (if any) are
    /// in the catalogue, and the first call routed to it connects it.
    Idle,
    /// It has a session, and the last call on it did not fail on transport.
    Ready,
    /// The last call or keepalive on it failed on transport (the
    /// connection refused, reset or closed, the session gone): its tools
    /// stay in the catalogue, and the group is building a new session in
    /// the background, paced by the client's cool-down.
    Degraded(Failure),
    /// It refused this client with 401 or 403: a person or a credential
    /// must act. Never retried by the group.
    NeedsAuthorization(Failure),
    /// Its establishment failed and the failure is not one a new attempt
    /// can fix ([`Conservative`](crate::layers::classify::Conservative)),
    /// or it failed at start. [`ServerGroup::restart`](super::ServerGroup::restart)
    /// tries again.
    Failed(Failure),
    /// Its circuit breaker (a call policy on its [`Server`](super::Server))
    /// is open after this failure: calls fail fast until the breaker lets a
    /// probe through, and a call that succeeds makes it ready again. Calls
    /// are still routed to it, so that the probe can go.
    CircuitOpen(Failure),
    /// It was removed from the group (the last change of a server).
    Removed,
}

impl HealthState {
    /// Whether calls are routed to it: ready, idle (the call connects it),
    /// degraded, or with its breaker open (which refuses them itself, and
    /// lets its probe through).
    pub fn is_usable(&self) -> bool {
        matches!(
            self,
            HealthState::Ready
                | HealthState::Idle
                | HealthState::Degraded(_)
                | HealthState::CircuitOpen(_)
        )
    }

    /// Whether its establishment is still under way.
    pub fn is_connecting(&self) -> bool {
        matches!(self, HealthState::Connecting)
    }

    /// A stable, lower-case name for logs and machine-readable output.
    pub fn as_str(&self) -> &'static str {
        match self {
            HealthState::Connecting => "connecting",
            HealthState::Idle => "idle",
            HealthState::Ready => "ready",
            HealthState::Degraded(_) => "degraded",
            HealthState::NeedsAuthorization(_) => "needs-authorization",
            HealthState::Failed(_) => "failed",
            HealthState::CircuitOpen(_) => "circuit-open",
            HealthState::Removed => "removed",
        }
    }

    /// The failure behind a degraded, unauthorized or failed state.
    pub fn failure(&self) -> Option<&Failure> {
        match self {
            HealthState::Degraded(failure)
            | HealthState::NeedsAuthorization(failure)
            | HealthState::Failed(failure)
            | HealthState::CircuitOpen(failure) => Some(failure),
            _ => None,
        }
    }

    /// The state an establishment that failed with `failure` leaves.
    pub(crate) fn after_failed_establishment(failure: Failure) -> Self {
        if failure.kind == FailureKind::Auth {
            HealthState::NeedsAuthorization(failure)
        } else {
            HealthState::Failed(failure)
        }
    }
}

/// A server's health and the generation of its current (or last) session:
/// 0 before the first, then as [`McpClient::generation`](crate::McpClient::generation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerHealth {
    /// Where it stands.
    pub state: HealthState,
    /// Its session's generation.
    pub generation: u64,
    /// When the group tries it again on its own, for a server that failed
    /// in a way an outage explains (see [`Server::with_retry`](super::Server::with_retry)).
    pub retry_at: Option<tokio::time::Instant>,
}

impl ServerHealth {
    pub(crate) fn new(state: HealthState, generation: u64) -> Self {
        ServerHealth {
            state,
            generation,
            retry_at: None,
        }
    }

    pub(crate) fn retrying_at(mut self, at: Option<tokio::time::Instant>) -> Self {
        self.retry_at = at;
        self
    }
}

/// Whether a failed establishment looks like an outage, which the group
/// outlasts by trying again: the connection failed, closed or timed out,
/// or the server answered 5xx or said it is unavailable. Never
/// authorization, configuration, DNS, TLS or another 4xx: trying again
/// cannot fix those.
pub(crate) fn is_outage(failure: &Failure) -> bool {
    failure.kind != FailureKind::Dns && mcp_connect_layers::policy::server_unwell(failure)
}

/// One change of one server's health.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HealthChange {
    /// The server's name in the group.
    pub server: Arc<str>,
    /// Its health from now on.
    pub health: ServerHealth,
}

/// The group's health changes, in the order they happened, from the
/// moment this receiver was made. A reader that falls more than the
/// channel's capacity behind loses the oldest changes (counted in
/// [`missed`](Self::missed)); [`ServerGroup::health`](super::ServerGroup::health)
/// always has the present.
#[derive(Debug)]
pub struct HealthChanges {
    receiver: broadcast::Receiver<HealthChange>,
    missed: u64,
}

impl HealthChanges {
    pub(crate) fn new(receiver: broadcast::Receiver<HealthChange>) -> Self {
        HealthChanges {
            receiver,
            missed: 0,
        }
    }

    /// The next change; `None` once the group is gone.
    pub async fn recv(&mut self) -> Option<HealthChange> {
        loop {
            match self.receiver.recv().await {
                Ok(change) => return Some(change),
                Err(broadcast::error::RecvError::Lagged(missed)) => self.missed += missed,
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    }

    /// How many changes this reader lost by falling behind.
    pub fn missed(&self) -> u64 {
        self.missed
    }
}
