//! Turns stage events into spans, events and metrics calls.

use std::sync::{Arc, Mutex};

use tokio::time::Instant;
use tracing::Span;

use super::{LifecycleMetrics, OutcomeRecord, StageRecord};
use crate::{Failure, StageEvent, StageObserver, StageOutcome};

pub(crate) struct Tracer {
    span: Span,
    deadline: Option<Instant>,
    transport: &'static str,
    metrics: Arc<dyn LifecycleMetrics>,
    attempts: Mutex<Vec<(u32, Span)>>,
}

impl std::fmt::Debug for Tracer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracer")
            .field("transport", &self.transport)
            .finish_non_exhaustive()
    }
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

impl Tracer {
    pub(crate) fn new(
        span: Span,
        deadline: Option<Instant>,
        transport: &'static str,
        metrics: Arc<dyn LifecycleMetrics>,
    ) -> Self {
        Tracer {
            span,
            deadline,
            transport,
            metrics,
            attempts: Mutex::new(Vec::new()),
        }
    }

    fn attempt_span(&self, attempt: u32) -> Span {
        // Held for one map operation, which cannot panic: never poisoned.
        let mut attempts = self.attempts.lock().expect("tracer lock poisoned");
        if let Some((_, span)) = attempts.iter().find(|(n, _)| *n == attempt) {
            return span.clone();
        }
        let span = tracing::info_span!(parent: &self.span, "mcp.attempt", attempt);
        attempts.push((attempt, span.clone()));
        span
    }

    /// The final event and metrics call.
    pub(crate) fn finish(
        &self,
        elapsed: std::time::Duration,
        outcome: Result<(), (Failure, u32, Option<&'static str>)>,
    ) {
        let record = match outcome {
            Ok(()) => OutcomeRecord {
                established: true,
                attempts: self
                    .attempts
                    .lock()
                    .map(|a| a.len().max(1) as u32)
                    .unwrap_or(1),
                elapsed,
                failure: None,
                exhaustion: None,
                transport: self.transport,
            },
            Err((failure, attempts, exhaustion)) => OutcomeRecord {
                established: false,
                attempts,
                elapsed,
                failure: Some(failure),
                exhaustion,
                transport: self.transport,
            },
        };
        self.span.in_scope(|| match &record.failure {
            None => tracing::info!(
                target: "mcp_connect::lifecycle",
                outcome = "established",
                attempts = record.attempts,
                elapsed_ms = ms(record.elapsed),
                transport = record.transport,
            ),
            Some(failure) => tracing::warn!(
                target: "mcp_connect::lifecycle",
                outcome = "failed",
                attempts = record.attempts,
                elapsed_ms = ms(record.elapsed),
                transport = record.transport,
                stage = failure.stage.as_str(),
                kind = failure.kind.as_str(),
                closure = failure.closure.map(|c| c.as_str()),
                http_status = failure.http_status,
                jsonrpc_code = failure.jsonrpc_code,
                cancel_source = failure.cancel_source.map(|c| c.as_str()),
                exhaustion = record.exhaustion,
            ),
        });
        self.metrics.on_outcome(&record);
    }
}

impl StageObserver for Tracer {
    fn on_event(&self, event: &StageEvent) {
        let remaining = self
            .deadline
            .map(|d| d.saturating_duration_since(Instant::now()));
        let record = StageRecord {
            event: *event,
            remaining,
            transport: self.transport,
        };
        self.attempt_span(event.attempt).in_scope(|| match event.outcome {
            StageOutcome::Failed(failure) => tracing::info!(
                target: "mcp_connect::lifecycle",
                stage = event.stage.as_str(),
                outcome = "failed",
                attempt = event.attempt,
                elapsed_ms = ms(event.elapsed),
                remaining_ms = remaining.map(ms),
                transport = self.transport,
                kind = failure.kind.as_str(),
                closure = failure.closure.map(|c| c.as_str()),
                http_status = failure.http_status,
                jsonrpc_code = failure.jsonrpc_code,
                cancel_source = failure.cancel_source.map(|c| c.as_str()),
            ),
            outcome => tracing::debug!(
                target: "mcp_connect::lifecycle",
                stage = event.stage.as_str(),
                outcome = if outcome == StageOutcome::Started { "started" } else { "succeeded" },
                attempt = event.attempt,
                elapsed_ms = ms(event.elapsed),
                remaining_ms = remaining.map(ms),
                transport = self.transport,
            ),
        });
        self.metrics.on_stage(&record);
    }
}
