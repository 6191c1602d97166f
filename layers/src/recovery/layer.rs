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
