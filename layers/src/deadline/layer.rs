//! The layer: its configuration and `fn layer`.

use std::time::Duration;

use tower_layer::Layer;

use super::Deadline;

/// Bounds a whole establishment by one deadline (see the [module docs](super)).
#[derive(Debug, Clone, Copy)]
pub struct DeadlineLayer {
    budget: Duration,
    cleanup: Duration,
}

impl DeadlineLayer {
    /// An overall budget, measured from the first `poll_ready` (or `call`).
    /// The cleanup bound defaults to 6 s: three steps of the default
    /// 2-second close grace.
    pub fn new(budget: Duration) -> Self {
        DeadlineLayer {
            budget,
            cleanup: Duration::from_secs(6),
        }
    }

    /// How long disposal may take after expiry or cancellation before the
    /// inner future is dropped.
    pub fn with_cleanup_bound(mut self, cleanup: Duration) -> Self {
        self.cleanup = cleanup;
        self
    }

    /// The overall budget.
    pub fn budget(&self) -> Duration {
        self.budget
    }
}

impl<S> Layer<S> for DeadlineLayer {
    type Service = Deadline<S>;

    fn layer(&self, inner: S) -> Self::Service {
        Deadline::new(inner, self.budget, self.cleanup)
    }
}
