//! The layer: its configuration and `fn layer`.

use tower_layer::Layer;

use super::policy::{Conservative, Vetoing};
use super::FailureClassifier;
use crate::Child;

/// Decides every error of the wrapped service (see the [module docs](super)).
#[derive(Debug, Clone, Default)]
pub struct FailureClassifierLayer<P = Conservative> {
    policy: P,
}

impl FailureClassifierLayer<Conservative> {
    /// The conservative default policy.
    pub fn new() -> Self {
        FailureClassifierLayer {
            policy: Conservative,
        }
    }
}

impl<P> FailureClassifierLayer<P> {
    /// Any policy.
    pub fn with_policy<Q>(self, policy: Q) -> FailureClassifierLayer<Q> {
        FailureClassifierLayer { policy }
    }

    /// Adds an application veto: when `veto` returns `true` for any child,
    /// no fresh attempt follows, whatever the other children say.
    pub fn with_veto<F>(self, veto: F) -> FailureClassifierLayer<Vetoing<P, F>>
    where
        F: Fn(&Child<'_>) -> bool,
    {
        FailureClassifierLayer {
            policy: Vetoing::new(self.policy, veto),
        }
    }
}

impl<S, P: Clone> Layer<S> for FailureClassifierLayer<P> {
    type Service = FailureClassifier<S, P>;

    fn layer(&self, inner: S) -> Self::Service {
        FailureClassifier::new(inner, self.policy.clone())
    }
}
