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
    /// use std::sync::Arc;
    /// use mcp_connect_layers::diagnostics::{LifecycleDiagnosticsLayer, LifecycleMetrics, OutcomeRecord};
    ///
    /// #[derive(Debug)]
    /// struct Count;
    /// impl LifecycleMetrics for Count {
    ///     fn on_outcome(&self, record: &OutcomeRecord) {
    ///         let _ = (record.established, record.attempts, record.failure);
    ///     }
    /// }
    ///
    /// let layer = LifecycleDiagnosticsLayer::new()
    ///     .with_protocol("my-protocol")
    ///     .with_metrics(Arc::new(Count));
    /// # let _ = layer;
    /// ```
    pub fn new() -> Self {
        LifecycleDiagnosticsLayer {
            metrics: None,
            protocol: None,
        }
    }

    /// Sets the `protocol` field on every span and event (a stable,
    /// lower-case name such as `"mcp"`).
    pub fn with_protocol(mut self, protocol: &'static str) -> Self {
        self.protocol = Some(protocol);
        self
    }

    /// Also calls `metrics` with every value.
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
