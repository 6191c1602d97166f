//! A member whose listing was refused as the session before its own was,
//! while its client kept the session (the session-loss rule's guard
//! against reconnect loops, [`crate::client::session_loss`]).
//!
//! What the server offers is then unknown, not empty: its last listing
//! stays in the catalogue, calls are still routed to it, and the listing
//! is asked for again at the group's retry pace. It ends when a listing
//! is answered, when a call or a listing finds the session lost (a new
//! one is built, as after any loss), or when a call builds a new session.
//! Before this, the refusal read as a server declining to list, and a
//! server restarted twice in a row stayed ready without tools, out of
//! reach of the calls that would have brought it back (found by the
//! simulation in `sim/`, issue 47).

use mcp_connect_layers::Failure;
use tokio::sync::watch;

use super::health::HealthState;
use super::listing::ListingFailed;
use super::member::{step_after, Intent, Step, Supervisor};
use crate::client::Generation;

impl Supervisor {
    /// Degraded with its last listing until a listing is answered.
    pub(super) async fn refused(
        &mut self,
        failure: Failure,
        generations: &mut watch::Receiver<Generation>,
    ) -> Step {
        self.set(HealthState::Degraded(failure));
        let mut tries = 0u32;
        loop {
            tries = tries.saturating_add(1);
            let delay = self.member.retry.delay(tries, &mut self.rng);
            tokio::select! {
                () = tokio::time::sleep(delay) => {}
                () = self.member.wake.notified() => match self.member.take_intent() {
                    Intent::Restart => return self.restart().await,
                    // A routed call found the session lost.
                    Intent::Reconnect => return Step::Reconnect(failure),
                    Intent::Nothing => continue,
                },
                changed = generations.changed() => {
                    if changed.is_err() {
                        return Step::GroupGone;
                    }
                    generations.borrow_and_update();
                }
            }
            match self.refresh().await {
                Ok(()) => return Step::Serve,
                Err(ListingFailed::Refused(again)) => self.set(HealthState::Degraded(again)),
                Err(other) => return step_after(other),
            }
        }
    }
}
