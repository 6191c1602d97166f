//! A member whose establishment failed: out of the catalogue (a lazy
//! member keeps its remembered tools, degraded), tried again at the
//! group's retry pace when the failure is an outage, until the application
//! restarts it or a call through its client builds a session.

use mcp_connect_layers::{Failure, FailureKind};
use std::sync::PoisonError;
use tokio::sync::watch;
use tokio::time::Instant;

use super::health::{is_outage, HealthState};
use super::member::{sleep_until, step_after, Intent, Step, Supervisor};
use crate::client::Generation;

impl Supervisor {
    /// Not usable: out of the catalogue, until the application restarts
    /// it, or until a call through its own client (`ServerGroup::client`)
    /// builds a session.
    pub(super) async fn failed(
        &mut self,
        failure: Failure,
        generations: &mut watch::Receiver<Generation>,
    ) -> Step {
        // A lazy member keeps its remembered tools listed while its server
        // cannot be reached, degraded: a call routed to one of them tries
        // to connect under its own bound, and the server's own listing
        // replaces them when it is back. Others leave the catalogue.
        let remembered = (self.member.lazy)
            .then(|| self.remembered_listing())
            .flatten();
        let keeps_tools = remembered.is_some() && failure.kind != FailureKind::Auth;
        self.publish(remembered.filter(|_| keeps_tools));
        // An outage is outlasted: the group tries again on its own, paced
        // by a fully jittered backoff that grows with each failure in a row.
        let retry_at = is_outage(&failure).then(|| {
            self.failures_in_a_row = self.failures_in_a_row.saturating_add(1);
            let delay = self
                .member
                .retry
                .delay(self.failures_in_a_row, &mut self.rng);
            Instant::now() + delay
        });
        *self
            .member
            .retry_at
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = retry_at;
        self.set(match keeps_tools {
            true => HealthState::Degraded(failure),
            false => HealthState::after_failed_establishment(failure),
        });
        loop {
            tokio::select! {
                () = sleep_until(retry_at) => {
                    *self.member.retry_at.lock().unwrap_or_else(PoisonError::into_inner) = None;
                    // Also ends the client's cool-down: this is the pace.
                    let _ = self.member.client.close().await;
                    return Step::Again;
                }
                () = self.member.wake.notified() => {
                    if self.member.take_intent() == Intent::Restart {
                        return self.restart().await;
                    }
                }
                changed = generations.changed() => {
                    if changed.is_err() {
                        return Step::GroupGone;
                    }
                    generations.borrow_and_update();
                    return match self.refresh().await {
                        Ok(()) => Step::Serve,
                        Err(failed) => step_after(failed),
                    };
                }
            }
        }
    }
}
