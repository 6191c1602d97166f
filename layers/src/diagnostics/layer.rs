//! The layer: its configuration and `fn layer`.

use std::sync::Arc;

use tower_layer::Layer;

use super::{LifecycleDiagnostics, LifecycleMetrics};

/// Records every establishment through `tracing` (see the [module docs](super)).
#[derive(Debug, Clone)]
pub struct LifecycleDiagnosticsLayer {
    metrics: Option<Arc<dyn LifecycleMetrics>>,
}

impl LifecycleDiagnosticsLayer {
    /// Tracing only.
    pub fn new() -> Self {
        LifecycleDiagnosticsLayer { metrics: None }
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
        LifecycleDiagnostics::new(inner, self.metrics.clone())
    }
}
