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
    ///
    /// ```
    /// use mcp_connect_layers::classify::{ClassifyOutcome, Decision, FailureClassifierLayer};
    /// use mcp_connect_layers::{Classify, Envelope, Failure, FailureKind, Stage};
    /// use tower::{service_fn, ServiceBuilder, ServiceExt};
    ///
    /// #[derive(Debug)]
    /// struct Unauthorized;
    /// impl std::fmt::Display for Unauthorized {
    ///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    ///         f.write_str("unauthorized")
    ///     }
    /// }
    /// impl std::error::Error for Unauthorized {}
    /// impl Classify for Unauthorized {
    ///     fn failure(&self) -> Failure {
    ///         Failure::new(Stage::HANDSHAKE, FailureKind::Auth).with_http_status(401)
    ///     }
    /// }
    ///
    /// struct Connection;
    /// impl ClassifyOutcome<Unauthorized> for Connection {
    ///     type Error = Unauthorized;
    ///     fn classify_error(error: Unauthorized) -> Unauthorized {
    ///         error
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let connect = service_fn(|_: Envelope<()>| async { Err::<Connection, _>(Unauthorized) });
    /// let error = ServiceBuilder::new()
    ///     .layer(FailureClassifierLayer::new())
    ///     .service(connect)
    ///     .oneshot(Envelope::new(()))
    ///     .await
    ///     .err()
    ///     .unwrap();
    /// // A 401 never earns a fresh attempt.
    /// assert!(matches!(error.decision(), Decision::Ineligible(_)));
    /// # }
    /// ```
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
