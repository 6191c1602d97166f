//! The layer: its configuration and `fn layer`.

use tower_layer::Layer;

use super::{FreshSessionRecovery, RecoveryPolicy};

/// Makes fresh attempts after eligible failures (see the [module docs](super)).
///
/// Opt-in by construction: without this layer an establishment is one
/// attempt, and [`RecoveryPolicy::disabled`] makes the layer a pass-through
/// that still reports its one attempt.
#[derive(Debug, Clone, Default)]
pub struct FreshSessionRecoveryLayer {
    policy: RecoveryPolicy,
}

impl FreshSessionRecoveryLayer {
    /// A layer with `policy`.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU32, Ordering};
    /// use std::sync::Arc;
    ///
    /// use mcp_connect_layers::classify::{ClassifyOutcome, FailureClassifierLayer};
    /// use mcp_connect_layers::recovery::{Backoff, FreshSessionRecoveryLayer, RecoveryPolicy};
    /// use mcp_connect_layers::{Classify, Closure, Envelope, Failure, FailureKind, Stage};
    /// use tower::{service_fn, ServiceBuilder, ServiceExt};
    ///
    /// #[derive(Debug)]
    /// struct Reset;
    /// impl std::fmt::Display for Reset {
    ///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    ///         f.write_str("connection reset")
    ///     }
    /// }
    /// impl std::error::Error for Reset {}
    /// impl Classify for Reset {
    ///     fn failure(&self) -> Failure {
    ///         Failure::new(Stage::HANDSHAKE, FailureKind::Closed).with_closure(Closure::Reset)
    ///     }
    /// }
    ///
    /// struct Connection;
    /// impl ClassifyOutcome<Reset> for Connection {
    ///     type Error = Reset;
    ///     fn classify_error(error: Reset) -> Reset {
    ///         error
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// // A make-service whose first two connections are reset.
    /// let made = Arc::new(AtomicU32::new(0));
    /// let count = made.clone();
    /// let connect = service_fn(move |_: Envelope<&str>| {
    ///     let n = count.fetch_add(1, Ordering::SeqCst);
    ///     async move { if n < 2 { Err(Reset) } else { Ok(Connection) } }
    /// });
    /// let policy = RecoveryPolicy::new().with_max_attempts(3).with_backoff(Backoff::NONE);
    /// let stack = ServiceBuilder::new()
    ///     .layer(FreshSessionRecoveryLayer::new(policy))
    ///     .layer(FailureClassifierLayer::new())
    ///     .service(connect);
    /// assert!(stack.oneshot(Envelope::new("server")).await.is_ok());
    /// assert_eq!(made.load(Ordering::SeqCst), 3);
    /// # }
    /// ```
    pub fn new(policy: RecoveryPolicy) -> Self {
        FreshSessionRecoveryLayer { policy }
    }
}

impl<S> Layer<S> for FreshSessionRecoveryLayer {
    type Service = FreshSessionRecovery<S>;

    fn layer(&self, inner: S) -> Self::Service {
        FreshSessionRecovery::new(inner, self.policy.clone())
    }
}
