//! The layer: its configuration and `fn layer`.

use std::sync::Arc;

use tower_layer::Layer;

use super::{LifecycleDiagnostics, LifecycleMetrics, NoMetrics};

/// Records every establishment through `tracing` (see the [module docs](super)).
#[derive(Debug, Clone)]
pub struct LifecycleDiagnosticsLayer {
    metrics: Arc<dyn LifecycleMetrics>,
}

impl LifecycleDiagnosticsLayer {
    /// Tracing only.
    pub fn new() -> Self {
        LifecycleDiagnosticsLayer {
            metrics: Arc::new(NoMetrics),
        }
    }

    /// Also calls `metrics` with every value.
    pub fn with_metrics(mut self, metrics: Arc<dyn LifecycleMetrics>) -> Self {
        self.metrics = metrics;
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
        LifecycleDiagnostics::new(inner, Arc::clone(&self.metrics))
    }
}
