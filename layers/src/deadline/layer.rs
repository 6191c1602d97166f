//! The layer: its configuration and `fn layer`.

use std::time::Duration;

use tower_layer::Layer;

use super::Deadline;

/// Bounds a whole establishment by one deadline (see the [module docs](super)).
#[derive(Debug, Clone, Copy)]
pub struct DeadlineLayer {
    budget: Duration,
    cleanup: Option<Duration>,
}

impl DeadlineLayer {
    /// An overall budget, measured from the first `poll_ready` (or `call`).
    /// The cleanup bound is each request's own
    /// [`Establishment::cleanup_bound`](crate::Establishment::cleanup_bound)
    /// unless [`with_cleanup_bound`](Self::with_cleanup_bound) sets one.
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// use mcp_connect_layers::deadline::{DeadlineError, DeadlineLayer};
    /// use mcp_connect_layers::Envelope;
    /// use tower::{service_fn, ServiceBuilder, ServiceExt};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// // A service that never answers is cut at the deadline.
    /// let stalled = service_fn(|_: Envelope<()>| std::future::pending::<Result<(), std::io::Error>>());
    /// let outcome = ServiceBuilder::new()
    ///     .layer(DeadlineLayer::new(Duration::from_millis(20)))
    ///     .service(stalled)
    ///     .oneshot(Envelope::new(()))
    ///     .await;
    /// assert!(matches!(outcome, Err(DeadlineError::Elapsed)));
    /// # }
    /// ```
    pub fn new(budget: Duration) -> Self {
        DeadlineLayer {
            budget,
            cleanup: None,
        }
    }

    /// How long disposal may take after expiry or cancellation before the
    /// inner future is dropped.
    #[must_use]
    pub fn with_cleanup_bound(mut self, cleanup: Duration) -> Self {
        self.cleanup = Some(cleanup);
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
