//! Turns stage events into spans, events and metrics calls.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;
use tracing::Span;

use super::{LifecycleMetrics, OutcomeRecord, StageRecord};
use crate::failure::Stop;
use crate::{CancelSource, Failure, FailureKind, Stage, StageEvent, StageObserver, StageOutcome};

/// The target of every span and event.
pub(crate) const TARGET: &str = "mcp_connect_layers::lifecycle";

/// How an establishment ended, as the tracer needs it.
pub(crate) enum Ended {
    Established,
    /// The failure, the attempts and why they stopped.
    Failed(Failure, u32, Option<Stop>),
    /// Dropped unfinished: by the deadline or by the caller.
    Dropped(FailureKind, CancelSource),
}

#[derive(Default)]
struct Seen {
    /// One span per attempt, made at the attempt's first event.
    attempts: Vec<(u32, Span)>,
    /// The last stage an event named, for an establishment cut mid-stage.
    last_stage: Option<Stage>,
}

pub(crate) struct Tracer {
    span: Span,
    deadline: Option<Instant>,
    label: &'static str,
    protocol: Option<&'static str>,
    metrics: Arc<dyn LifecycleMetrics>,
    seen: Mutex<Seen>,
}

impl std::fmt::Debug for Tracer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracer")
            .field("label", &self.label)
            .finish_non_exhaustive()
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

impl Tracer {
    pub(crate) fn new(
        span: Span,
        deadline: Option<Instant>,
        label: &'static str,
        protocol: Option<&'static str>,
        metrics: Arc<dyn LifecycleMetrics>,
    ) -> Self {
        Tracer {
            span,
            deadline,
            label,
            protocol,
            metrics,
            seen: Mutex::new(Seen::default()),
        }
    }

    fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        // Held for a few vector operations, which cannot panic: never poisoned.
        self.seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn attempt_span(&self, event: &StageEvent) -> Span {
        let mut seen = self.seen();
        seen.last_stage = Some(event.stage);
        if let Some((_, span)) = seen.attempts.iter().find(|(n, _)| *n == event.attempt) {
            return span.clone();
        }
        let span = tracing::info_span!(
            target: TARGET,
            parent: &self.span,
            "attempt",
            attempt = event.attempt,
            protocol = self.protocol
        );
        seen.attempts.push((event.attempt, span.clone()));
        span
    }

    /// The final event and metrics call.
    pub(crate) fn finish(&self, elapsed: Duration, ended: Ended) {
        let (attempts_seen, last_stage) = {
            let seen = self.seen();
            (seen.attempts.len().max(1) as u32, seen.last_stage)
        };
        let (failure, attempts, stop) = match ended {
            Ended::Established => (None, attempts_seen, None),
            Ended::Failed(failure, attempts, stop) => (Some(failure), attempts, stop),
            Ended::Dropped(kind, source) => {
                let stage = last_stage.unwrap_or(Stage::REQUEST);
                let failure = Failure::new(stage, kind).with_cancel_source(source);
                let stop = match source {
                    CancelSource::Caller => Stop::Cancelled,
                    _ => Stop::Deadline,
                };
                (Some(failure), attempts_seen, Some(stop))
            }
        };
        let record = OutcomeRecord {
            succeeded: failure.is_none(),
            attempts,
            elapsed,
            failure,
            stop,
            label: self.label,
        };
        self.span.in_scope(|| match &record.failure {
            None => tracing::info!(
                target: TARGET,
                outcome = "succeeded",
                attempts = record.attempts,
                elapsed_ms = ms(record.elapsed),
                label = record.label,
                protocol = self.protocol,
            ),
            Some(failure) => tracing::warn!(
                target: TARGET,
                outcome = "failed",
                attempts = record.attempts,
                elapsed_ms = ms(record.elapsed),
                label = record.label,
                protocol = self.protocol,
                stage = failure.stage.as_str(),
                kind = failure.kind.as_str(),
                closure = failure.closure.map(|c| c.as_str()),
                http_status = failure.http_status,
                jsonrpc_code = failure.jsonrpc_code,
                cancel_source = failure.cancel_source.map(|c| c.as_str()),
                stop = record.stop.map(Stop::as_str),
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
            label: self.label,
        };
        self.attempt_span(event).in_scope(|| match event.outcome {
            StageOutcome::Failed(failure) => tracing::info!(
                target: TARGET,
                stage = event.stage.as_str(),
                outcome = "failed",
                attempt = event.attempt,
                elapsed_ms = ms(event.elapsed),
                remaining_ms = remaining.map(ms),
                label = self.label,
                kind = failure.kind.as_str(),
                closure = failure.closure.map(|c| c.as_str()),
                http_status = failure.http_status,
                jsonrpc_code = failure.jsonrpc_code,
                cancel_source = failure.cancel_source.map(|c| c.as_str()),
            ),
            outcome => tracing::debug!(
                target: TARGET,
                stage = event.stage.as_str(),
                outcome = if outcome == StageOutcome::Started { "started" } else { "succeeded" },
                attempt = event.attempt,
                elapsed_ms = ms(event.elapsed),
                remaining_ms = remaining.map(ms),
                label = self.label,
            ),
        });
        self.metrics.on_stage(&record);
    }
}
