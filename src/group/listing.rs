//! When a member may list a kind again ([`RELIST_INTERVAL`], coalesced per
//! kind), and why a listing did not complete (the connection, a refusal of
//! the session, or a listing that cannot be had).

use mcp_connect_layers::{Failure, FailureKind};
use tokio::time::{Duration, Instant};

use crate::client::ClientError;
use crate::inbound::ListKind;

/// The least time between two listings of one kind of one member.
pub const RELIST_INTERVAL: Duration = Duration::from_millis(250);

/// Why a listing did not complete.
pub(super) enum ListingFailed {
    /// On the connection: build a new session.
    Transport(Failure),
    /// Refused as the session before this one was, and the client kept
    /// the session ([`ClientError::RefusedAgain`]): what the server offers
    /// is unknown, not empty.
    Refused(Failure),
    /// The listing could not be had (timed out, over a limit, no
    /// listing): the member has failed.
    Unserved(Failure),
}

/// The kinds a member must list again, and when it may.
#[derive(Default)]
pub(super) struct Relist {
    pub(super) pending: Vec<ListKind>,
    pub(super) last: Option<Instant>,
}

impl Relist {
    pub(super) fn add(&mut self, kind: ListKind) {
        if !self.pending.contains(&kind) {
            self.pending.push(kind);
        }
    }

    /// When the pending kinds may be listed: at once, or
    /// [`RELIST_INTERVAL`] after the last listing.
    pub(super) fn due(&self) -> Option<Instant> {
        if self.pending.is_empty() {
            return None;
        }
        Some(
            self.last
                .map_or_else(Instant::now, |last| last + RELIST_INTERVAL),
        )
    }
}

/// Whether a call failed on the connection (refused, broken, closed, the
/// session gone) rather than on the server's answer.
pub(super) fn on_transport(error: &ClientError) -> bool {
    error.is_session_lost()
        || matches!(
            error.failure().kind,
            FailureKind::Connect | FailureKind::Io | FailureKind::Closed
        )
}
