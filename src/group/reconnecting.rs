//! A degraded member's way back: a new session built in the background,
//! paced by the client's cool-down, and held behind the group's storm
//! gate when many servers lost theirs together (`storm.rs`).

use mcp_connect_layers::classify::Conservative;
use mcp_connect_layers::Failure;
use tokio::sync::watch;

use super::health::HealthState;
use super::listing::ListingFailed;
use super::member::{Intent, Step, Supervisor};
use super::storm::{self, Admission, StormGate};
use crate::client::{ClientError, Generation};

impl Supervisor {
    /// Degraded: builds a new session in the background, paced by the
    /// client's cool-down, until one is usable or a failure forbids more.
    pub(super) async fn reconnect(
        &mut self,
        failure: Failure,
        generations: &mut watch::Receiver<Generation>,
    ) -> Step {
        self.set(HealthState::Degraded(failure));
        if self.storm(StormGate::lost).is_none() {
            return Step::GroupGone;
        }
        loop {
            if self.member.take_intent() == Intent::Restart {
                return self.restart().await;
            }
            // Many lost together: one probe reconnects, the others wait.
            let name = &self.member.name;
            let Some(admission) = self.storm(|gate| gate.admit(name)) else {
                return Step::GroupGone;
            };
            if let Admission::Held(held) = admission {
                tokio::select! {
                    () = storm::released(held, &mut self.rng) => {}
                    () = self.member.wake.notified() => {}
                }
                continue;
            }
            match self.member.client.session().await {
                Ok(_) => {
                    self.storm(StormGate::reached);
                    generations.borrow_and_update();
                    match self.refresh().await {
                        Ok(()) => return Step::Serve,
                        Err(ListingFailed::Transport(failure)) => {
                            self.set(HealthState::Degraded(failure));
                        }
                        Err(ListingFailed::Refused(failure)) => return Step::Refused(failure),
                        Err(ListingFailed::Unserved(failure)) => return Step::Failed(failure),
                    }
                }
                Err(ClientError::CoolingDown { retry_in, .. }) => {
                    tokio::select! {
                        () = tokio::time::sleep(retry_in) => {}
                        () = self.member.wake.notified() => {}
                    }
                }
                Err(error) => {
                    let failure = self.keep(error);
                    if !Conservative::allows(&failure) {
                        self.storm(|gate| gate.gave_up(&self.member.name));
                        return Step::Failed(failure);
                    }
                    self.set(HealthState::Degraded(failure));
                }
            }
        }
    }

    /// `look` at the group's storm gate; `None` when the group is gone.
    /// The group is held only for the look, never across an await: it ends
    /// when the application lets go of it.
    fn storm<T>(&self, look: impl FnOnce(&StormGate) -> T) -> Option<T> {
        self.group.upgrade().map(|group| look(&group.storm))
    }
}
