//! The layer: its configuration and `fn layer`.

use std::sync::Arc;

use tower_layer::Layer;

use super::{LifecycleDiagnostics, LifecycleMetrics};

/// Records every establishment through `tracing` (see the [module docs](super)).
#[derive(Debug, Clone)]
pub struct LifecycleDiagnosticsLayer {
    metrics: Option<Arc<dyn LifecycleMetrics>>,
    protocol: Option<&'static str>,
}

impl LifecycleDiagnosticsLayer {
    /// Tracing only.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use std::time::Duration;
    ///
    /// use mcp_connect_layers::classify::{ClassifyOutcome, FailureClassifierLayer};
    /// use mcp_connect_layers::deadline::DeadlineLayer;
    /// use mcp_connect_layers::diagnostics::{LifecycleDiagnosticsLayer, LifecycleMetrics, OutcomeRecord};
    /// use mcp_connect_layers::{Classify, Envelope, Failure, FailureKind, Stage};
    /// use tower::{service_fn, ServiceBuilder, ServiceExt};
    ///
    /// #[derive(Debug, Default)]
    /// struct Established(Mutex<Vec<bool>>);
    /// impl LifecycleMetrics for Established {
    ///     fn on_outcome(&self, record: &OutcomeRecord) {
    ///         self.0.lock().unwrap().push(record.succeeded);
    ///     }
    /// }
    ///
    /// #[derive(Debug)]
    /// struct Refused;
    /// impl std::fmt::Display for Refused {
    ///     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
    ///         f.write_str("refused")
    ///     }
    /// }
    /// impl std::error::Error for Refused {}
    /// impl Classify for Refused {
    ///     fn failure(&self) -> Failure {
    ///         Failure::new(Stage::CONNECT, FailureKind::Connect)
    ///     }
    /// }
    /// struct Connection;
    /// impl ClassifyOutcome<Refused> for Connection {
    ///     type Error = Refused;
    ///     fn classify_error(error: Refused) -> Refused {
    ///         error
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let metrics = Arc::new(Established::default());
    /// let stack = ServiceBuilder::new()
    ///     .layer(DeadlineLayer::new(Duration::from_secs(1)))
    ///     .layer(LifecycleDiagnosticsLayer::new().with_protocol("my-protocol").with_metrics(metrics.clone()))
    ///     .layer(FailureClassifierLayer::new())
    ///     .service(service_fn(|_: Envelope<()>| async { Err::<Connection, _>(Refused) }));
    /// assert!(stack.oneshot(Envelope::new(())).await.is_err());
    /// assert_eq!(*metrics.0.lock().unwrap(), [false]);
    /// # }
    /// ```
    pub fn new() -> Self {
        LifecycleDiagnosticsLayer {
            metrics: None,
            protocol: None,
        }
    }

    /// Sets the `protocol` field on every span and event (a stable,
    /// lower-case name such as `"my-protocol"`).
    #[must_use]
    pub fn with_protocol(mut self, protocol: &'static str) -> Self {
        self.protocol = Some(protocol);
        self
    }

    /// Also calls `metrics` with every value.
    #[must_use]
    pub fn with_metrics(mut self, metrics: Arc<dyn LifecycleMetrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }
}

impl Default for LifecycleDiagnosticsLayer {
    fn default() -> Self {
        Self::new()
    }
}

impl<S> Layer<S> for LifecycleDiagnosticsLayer {
    type Service = LifecycleDiagnostics<S>;

    fn layer(&self, inner: S) -> Self::Service {
        LifecycleDiagnostics::new(inner, self.metrics.clone()).with_protocol(self.protocol)
    }
}
