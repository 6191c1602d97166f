//! Time that does not count against the deadline: a wait for a person.
//!
//! Some establishments stop for a person (an authorization page, a
//! confirmation prompt). That wait has its own limit; charging it to the
//! establishment deadline would make every deadline either too short for
//! the person or too long for the machine. A stage that waits for a person
//! holds a [`PauseGuard`]; the deadline layer, and every stage below that
//! reads [`Establishment::deadline`](crate::Establishment::deadline) through
//! the pause, moves the deadline later by the time paused.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

/// A shared record of the time an establishment spent waiting for a
/// person. Cheap to clone; clones share the record.
#[derive(Clone, Default)]
pub struct DeadlinePause {
    state: Arc<Mutex<State>>,
}

#[derive(Default)]
struct State {
    total: Duration,
    since: Option<Instant>,
    depth: u32,
}

impl DeadlinePause {
    /// A record with nothing paused.
    pub fn new() -> Self {
        DeadlinePause::default()
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // Held for a few arithmetic operations that cannot panic.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Pauses the deadline until the guard is dropped. Pauses may nest; the
    /// time counts once.
    pub fn pause(&self) -> PauseGuard {
        let mut state = self.state();
        if state.depth == 0 {
            state.since = Some(Instant::now());
        }
        state.depth += 1;
        PauseGuard {
            pause: self.clone(),
        }
    }

    /// The time paused so far, the pause under way included.
    pub fn paused(&self) -> Duration {
        let state = self.state();
        state.total + state.since.map_or(Duration::ZERO, |since| since.elapsed())
    }

    /// Whether a pause is under way.
    pub fn is_paused(&self) -> bool {
        self.state().depth > 0
    }

    /// `deadline` moved later by the time paused.
    pub fn extend(&self, deadline: Instant) -> Instant {
        crate::instant::after(deadline, self.paused())
    }
}

impl fmt::Debug for DeadlinePause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeadlinePause")
            .field("paused", &self.paused())
            .finish()
    }
}

/// Keeps the deadline paused while held.
#[derive(Debug)]
#[must_use = "the pause ends when the guard is dropped"]
pub struct PauseGuard {
    pause: DeadlinePause,
}

impl Drop for PauseGuard {
    fn drop(&mut self) {
        let mut state = self.pause.state();
        state.depth -= 1;
        if state.depth == 0 {
            if let Some(since) = state.since.take() {
                state.total += since.elapsed();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn paused_time_moves_the_deadline() {
        let pause = DeadlinePause::new();
        let deadline = Instant::now() + Duration::from_secs(1);
        {
            let _outer = pause.pause();
            let _inner = pause.pause();
            tokio::time::advance(Duration::from_secs(5)).await;
            assert!(pause.is_paused());
        }
        assert!(!pause.is_paused());
        tokio::time::advance(Duration::from_secs(2)).await;
        assert_eq!(pause.paused(), Duration::from_secs(5));
        assert_eq!(pause.extend(deadline), deadline + Duration::from_secs(5));
    }
}
