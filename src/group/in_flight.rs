//! The calls routed to a member and not yet answered: counted so that a
//! removed member is closed only after them (bounded), and a member with
//! an idle bound is never closed under a call and counts its idleness
//! from the end of the last one.

use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use super::member::Member;

/// How long [`drained`] waits for a removed member's calls.
pub(super) const DRAIN_BOUND: Duration = Duration::from_secs(5);

/// A routed call under way on a member; counted until dropped.
pub(super) struct CallUnderWay(Arc<Member>);

impl CallUnderWay {
    pub(super) fn begin(member: Arc<Member>) -> Self {
        member.calls.send_modify(|calls| *calls += 1);
        member.touch();
        CallUnderWay(member)
    }
}

impl Deref for CallUnderWay {
    type Target = Member;

    fn deref(&self) -> &Member {
        &self.0
    }
}

impl Drop for CallUnderWay {
    fn drop(&mut self) {
        // Touched first: the idle timer, woken by the count, reads it.
        self.0.touch();
        self.0.calls.send_modify(|calls| *calls -= 1);
    }
}

/// Waits until no routed call is under way on `member`, at most `bound`.
/// True when none is.
pub(super) async fn drained(member: &Member, bound: Duration) -> bool {
    let mut calls = member.calls.subscribe();
    tokio::time::timeout(bound, calls.wait_for(|calls| *calls == 0))
        .await
        .is_ok_and(|waited| waited.is_ok())
}
