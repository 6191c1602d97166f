//! How many members are connecting and how many are usable, kept as each
//! health changes, so that a wait on the group ([`settled`], [`first_usable`])
//! costs the same with ten servers as with ten thousand. Walking every
//! member on every change made a starting group's waits O(n^2).
//!
//! [`settled`]: super::ServerGroup::settled
//! [`first_usable`]: super::ServerGroup::first_usable

use std::sync::atomic::{AtomicUsize, Ordering};

use super::HealthState;

/// The counts, read together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Counts {
    pub(super) connecting: usize,
    pub(super) usable: usize,
}

/// The counts as they move; each change is made under the member's health
/// lock, so a member is counted once.
#[derive(Debug, Default)]
pub(super) struct HealthCounts {
    connecting: AtomicUsize,
    usable: AtomicUsize,
}

impl HealthCounts {
    /// A member joined, connecting (the state every member starts in).
    pub(super) fn added(&self) {
        self.connecting.fetch_add(1, Ordering::AcqRel);
    }

    /// A member went from `from` to `to`.
    pub(super) fn moved(&self, from: HealthState, to: HealthState) {
        let step = |counter: &AtomicUsize, was: bool, is: bool| match (was, is) {
            (false, true) => {
                counter.fetch_add(1, Ordering::AcqRel);
            }
            (true, false) => {
                counter.fetch_sub(1, Ordering::AcqRel);
            }
            _ => {}
        };
        step(&self.connecting, from.is_connecting(), to.is_connecting());
        step(&self.usable, from.is_usable(), to.is_usable());
    }

    pub(super) fn now(&self) -> Counts {
        Counts {
            connecting: self.connecting.load(Ordering::Acquire),
            usable: self.usable.load(Ordering::Acquire),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_is_counted_in_the_state_it_is_in() {
        let counts = HealthCounts::default();
        counts.added();
        counts.added();
        assert_eq!(
            counts.now(),
            Counts {
                connecting: 2,
                usable: 0
            }
        );
        counts.moved(HealthState::Connecting, HealthState::Ready);
        assert_eq!(
            counts.now(),
            Counts {
                connecting: 1,
                usable: 1
            }
        );
        counts.moved(HealthState::Ready, HealthState::Connecting);
        counts.moved(HealthState::Connecting, HealthState::Idle);
        assert_eq!(
            counts.now(),
            Counts {
                connecting: 1,
                usable: 1
            }
        );
        counts.moved(HealthState::Connecting, HealthState::Removed);
        counts.moved(HealthState::Idle, HealthState::Removed);
        assert_eq!(
            counts.now(),
            Counts {
                connecting: 0,
                usable: 0
            }
        );
    }
}
