//! The client's pacing after failures: the cool-down after failed
//! reconnects (full jitter, 100 ms doubling to 30 s, the caller's own
//! [`Backoff`] instead when given), and sessions that die young
//! ([`STABLE_AFTER`]), which from the second in a row wait it out too, so
//! a server that dies just after every start is not respawned several
//! times a second.

use std::sync::Arc;
use std::time::Duration;

use mcp_connect_layers::recovery::Backoff;
use mcp_connect_layers::{Failure, FailureKind, Stage};
use tokio::time::Instant;

use super::{ClientError, McpClient, State};
use crate::establish::EstablishError;

/// The cool-down after failed reconnects: full jitter under a ceiling of
/// 100 ms doubling to 30 s.
pub(super) const COOL_DOWN: Backoff =
    Backoff::new(Duration::from_millis(100), Duration::from_secs(30));

/// A session that lived less than this before it died was short-lived:
/// from the second such session in a row, the next establishment waits out
/// the cool-down as after a failed reconnect, so a server that dies just
/// after every start is not respawned several times a second. Short, so
/// that a server whose sessions expire after a second or two of idleness
/// (the Python SDK's `session_idle_timeout`) is reconnected to at once.
pub const STABLE_AFTER: Duration = Duration::from_secs(1);

/// When the last session was made, and how many in a row died young.
#[derive(Default)]
pub(super) struct Flaps {
    pub(super) established: Option<Instant>,
    pub(super) short_lived: u32,
}

impl McpClient {
    /// Calls fail fast with `failure` (and its `cause`) for the
    /// cool-down's delay after `failures` in a row; the delay.
    pub(super) fn start_cool_down(
        &self,
        failures: u32,
        failure: Failure,
        cause: Option<Arc<EstablishError>>,
    ) -> Duration {
        let mut shared = self.shared();
        let pause = self.inner.cool_down.delay(failures, &mut shared.jitter);
        // A caller's cool-down may be `Duration::MAX`: saturate.
        shared.state = State::CoolingDown {
            until: mcp_connect_layers::instant::after(Instant::now(), pause),
            failures,
            failure,
            cause,
        };
        pause
    }

    /// Counts the session that just died if it died young; from the second
    /// in a row, starts the cool-down instead of building at once (the
    /// first is free: one early loss is what reconnecting is for).
    pub(super) fn after_a_short_life(&self) -> Option<ClientError> {
        let short_lived = {
            let mut shared = self.shared();
            let flaps = &mut shared.flaps;
            let established = flaps.established.take()?;
            if established.elapsed() < STABLE_AFTER {
                flaps.short_lived = flaps.short_lived.saturating_add(1);
            } else {
                flaps.short_lived = 0;
            }
            flaps.short_lived
        };
        if short_lived < 2 {
            return None;
        }
        let failure = Failure::new(Stage::REQUEST, FailureKind::Closed);
        let pause = self.start_cool_down(short_lived - 1, failure, None);
        tracing::debug!(
            target: "mcp_connect::client",
            short_lived,
            "sessions keep dying young; cooling down before the next"
        );
        Some(ClientError::CoolingDown {
            failure,
            retry_in: pause,
            cause: None,
        })
    }
}
