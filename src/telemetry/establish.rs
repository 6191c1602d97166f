//! Establishment in the trace: one `establish` span per establishment
//! through the stack, one `establish attempt` child per attempt, each
//! stage an event of its attempt, and the establishment metrics. The
//! establishment of an `McpClient` that replaces a lost session links to
//! the span of the failed call that lost it ([`Cause`]).
//!
//! The events are the stage events every observer gets (stage, outcome,
//! elapsed since the establishment began, failure kind, cancellation
//! source, HTTP status), so a trace shows why a connection took 3 s: a
//! probe that stalled until its limit, then a fresh attempt.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures_util::future::BoxFuture;
use mcp_connect_layers::{Failure, StageEvent, StageObserver, StageOutcome};
use opentelemetry::trace::{
    FutureExt as _, Link, SpanContext, SpanKind, Status, TraceContextExt, Tracer,
};
use opentelemetry::{Context, KeyValue};

pub(crate) use super::outcome::{EstablishOutcome, Established, Peer};
use super::{names, Telemetry};

/// The span of the request whose failure lost the session an
/// establishment replaces: the `establish` span links to it (a link, not
/// a parent: the establishment serves the calls after it, not that one).
#[derive(Clone, Debug, Default)]
pub(crate) struct Cause(pub(super) Option<SpanContext>);

/// Runs one establishment through the stack (`establish`, given the
/// observer that counts its attempts) inside its `establish` span, linked
/// to its `cause`, and records its metrics; `outcome` reads what the span
/// records of its result.
pub(crate) fn establishment<T, E, F>(
    telemetry: &Telemetry,
    peer: Peer<'_>,
    cause: &Cause,
    establish: impl FnOnce(Arc<dyn StageObserver>) -> F,
    outcome: fn(&Result<T, E>) -> EstablishOutcome<'_>,
) -> BoxFuture<'static, Result<T, E>>
where
    F: Future<Output = Result<T, E>> + Send + 'static,
    T: 'static,
    E: 'static,
{
    let (establishment, counter) = Establishment::start(telemetry, peer, cause);
    let made = establish(counter).with_context(establishment.cx.clone());
    Box::pin(async move {
        let made = made.await;
        establishment.finish(outcome(&made));
        made
    })
}

/// Runs one attempt (`connect`, given the observer that writes its
/// stages) inside its `establish attempt` span; `failure` reads what
/// failed.
pub(crate) async fn attempt<T, E, F>(
    telemetry: &Telemetry,
    peer: Peer<'_>,
    attempt: u32,
    connect: impl FnOnce(Arc<dyn StageObserver>) -> F,
    failure: impl FnOnce(&Result<T, E>) -> Option<Failure>,
) -> Result<T, E>
where
    F: Future<Output = Result<T, E>>,
{
    let (span, stages) = AttemptSpan::start(telemetry, peer, attempt);
    let made = connect(stages).await;
    span.finish(failure(&made));
    made
}

/// The server's attributes: its name, `network.transport`, and for an HTTP
/// server `server.address` and `server.port`, for a stdio one its
/// program's file name.
pub(crate) fn target_attributes(peer: Peer<'_>) -> Vec<KeyValue> {
    let mut attributes = match peer.http {
        Some(url) => {
            let mut attributes = vec![KeyValue::new(names::NETWORK_TRANSPORT, "tcp")];
            if let Some(host) = url.host() {
                let host = host.trim_start_matches('[').trim_end_matches(']');
                // Shared, so cloning it onto every span costs no allocation.
                attributes.push(KeyValue::new(names::SERVER_ADDRESS, shared(host)));
            }
            let port = url.port_u16().unwrap_or(match url.scheme_str() {
                Some("https") => 443,
                _ => 80,
            });
            attributes.push(KeyValue::new(names::SERVER_PORT, i64::from(port)));
            attributes
        }
        None => {
            let mut attributes = vec![KeyValue::new(names::NETWORK_TRANSPORT, "pipe")];
            if let Some(program) = peer.program {
                let file = std::path::Path::new(program)
                    .file_name()
                    .map_or(program.into(), |name| name.to_string_lossy());
                attributes.push(KeyValue::new(names::PROCESS_EXECUTABLE, shared(&file)));
            }
            attributes
        }
    };
    attributes.push(KeyValue::new(names::SERVER_NAME, shared(peer.name)));
    attributes
}

/// A string attribute value that clones without allocating.
pub(crate) fn shared(text: &str) -> opentelemetry::Value {
    opentelemetry::Value::String(std::sync::Arc::<str>::from(text).into())
}

fn failure_attributes(failure: &Failure, into: &mut Vec<KeyValue>) {
    into.push(KeyValue::new(names::FAILURE_KIND, failure.kind.as_str()));
    if let Some(source) = failure.cancel_source {
        into.push(KeyValue::new(names::CANCEL_SOURCE, source.as_str()));
    }
    if let Some(status) = failure.http_status {
        into.push(KeyValue::new(names::HTTP_STATUS, i64::from(status)));
    }
    if let Some(code) = failure.jsonrpc_code {
        into.push(KeyValue::new(names::RPC_STATUS, code.to_string()));
    }
}

/// Marks a span failed with `failure`: its attributes, `error.type` (the
/// failure kind) and an `Error` status without a description.
fn mark_failed(span: &opentelemetry::trace::SpanRef<'_>, failure: &Failure) {
    let mut attributes = Vec::new();
    failure_attributes(failure, &mut attributes);
    attributes.push(KeyValue::new(names::ERROR_TYPE, failure.kind.as_str()));
    for attribute in attributes {
        span.set_attribute(attribute);
    }
    span.set_status(Status::error(""));
}

/// One establishment through the stack: its span, and what the attempts
/// under it report.
struct Establishment {
    telemetry: Telemetry,
    /// The server's attributes, on the span and every metric.
    server: Vec<KeyValue>,
    cx: Context,
    started: Instant,
    attempts: Arc<AtomicU32>,
}

impl Establishment {
    /// Starts the span of establishing `peer`; the observer counts its
    /// attempts (the caller adds it to the request).
    fn start(
        telemetry: &Telemetry,
        peer: Peer<'_>,
        cause: &Cause,
    ) -> (Establishment, Arc<dyn StageObserver>) {
        let parent = Context::current();
        let tracer = telemetry.tracer();
        let server = target_attributes(peer);
        let links: Vec<Link> = cause
            .0
            .iter()
            .filter(|cause| cause.is_valid())
            .map(|cause| Link::with_context(cause.clone()))
            .collect();
        let span = tracer
            .span_builder("establish")
            .with_kind(SpanKind::Internal)
            .with_attributes(server.clone())
            .with_links(links)
            .start_with_context(tracer, &parent);
        let attempts = Arc::new(AtomicU32::new(0));
        let counter = Arc::new(AttemptCounter(Arc::clone(&attempts)));
        let establishment = Establishment {
            telemetry: telemetry.clone(),
            server,
            cx: parent.with_span(span),
            started: Instant::now(),
            attempts,
        };
        (establishment, counter)
    }

    /// Ends the span: established (with era, transport and version) or
    /// failed (with the failure), and records the metrics.
    fn finish(self, outcome: EstablishOutcome<'_>) {
        let (outcome, attempts) = match outcome {
            Ok(established) => (Ok(established), None),
            Err((failure, attempts)) => (Err(failure), attempts),
        };
        let attempts = attempts.unwrap_or_else(|| self.attempts.load(Ordering::Relaxed).max(1));
        let span = self.cx.span();
        let mut labels = Vec::new();
        match outcome {
            Ok(established) => {
                labels.push(KeyValue::new(names::OUTCOME, "established"));
                span.set_attribute(KeyValue::new(names::ERA, established.era));
                span.set_attribute(KeyValue::new(names::TRANSPORT, established.transport));
                span.set_attribute(KeyValue::new(
                    names::PROTOCOL_VERSION,
                    established.version.to_owned(),
                ));
            }
            Err(failure) => {
                labels.push(KeyValue::new(names::OUTCOME, "failed"));
                labels.push(KeyValue::new(names::ERROR_TYPE, failure.kind.as_str()));
                mark_failed(&span, &failure);
            }
        }
        span.set_attribute(KeyValue::new(names::ATTEMPTS, i64::from(attempts)));
        span.end();
        labels.extend(self.server.iter().cloned());
        let inner = &self.telemetry.inner;
        inner
            .establishment
            .record(self.started.elapsed().as_secs_f64(), &labels);
        inner.attempts.record(u64::from(attempts), &labels);
    }
}

/// Remembers the highest attempt number seen.
#[derive(Debug)]
struct AttemptCounter(Arc<AtomicU32>);

impl StageObserver for AttemptCounter {
    fn on_event(&self, event: &StageEvent) {
        self.0.fetch_max(event.attempt, Ordering::Relaxed);
    }
}

/// One attempt's span, and the observer that writes its stages.
struct AttemptSpan {
    cx: Context,
}

impl AttemptSpan {
    /// Starts attempt number `attempt` as a child of the current context;
    /// the observer writes its stages (the caller adds it to the request).
    fn start(
        telemetry: &Telemetry,
        peer: Peer<'_>,
        attempt: u32,
    ) -> (AttemptSpan, Arc<dyn StageObserver>) {
        let parent = Context::current();
        let tracer = telemetry.tracer();
        let server = target_attributes(peer);
        let mut attributes = server.clone();
        attributes.push(KeyValue::new(names::ATTEMPT, i64::from(attempt)));
        let span = tracer
            .span_builder("establish attempt")
            .with_kind(SpanKind::Internal)
            .with_attributes(attributes)
            .start_with_context(tracer, &parent);
        let cx = parent.with_span(span);
        let stages = Arc::new(Stages {
            cx: cx.clone(),
            server,
            telemetry: telemetry.clone(),
            begun: Mutex::new(HashMap::new()),
        });
        (AttemptSpan { cx }, stages)
    }

    /// Ends the attempt's span.
    fn finish(self, failure: Option<Failure>) {
        let span = self.cx.span();
        if let Some(failure) = failure {
            mark_failed(&span, &failure);
        }
        span.end();
    }
}

/// Writes each stage event on its attempt's span and times each stage.
struct Stages {
    cx: Context,
    /// The server's attributes, on the stage metric.
    server: Vec<KeyValue>,
    telemetry: Telemetry,
    /// When each stage began, since the establishment began.
    begun: Mutex<HashMap<&'static str, Duration>>,
}

impl std::fmt::Debug for Stages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stages").finish_non_exhaustive()
    }
}

impl StageObserver for Stages {
    fn on_event(&self, event: &StageEvent) {
        let stage = event.stage.as_str();
        let mut attributes = vec![
            KeyValue::new(names::STAGE, stage),
            KeyValue::new(names::ATTEMPT, i64::from(event.attempt)),
            KeyValue::new(names::ELAPSED_MS, event.elapsed.as_secs_f64() * 1000.0),
        ];
        let outcome = match &event.outcome {
            StageOutcome::Started => {
                self.begun
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(stage, event.elapsed);
                "started"
            }
            StageOutcome::Succeeded => "succeeded",
            StageOutcome::Failed(failure) => {
                failure_attributes(failure, &mut attributes);
                "failed"
            }
            _ => "other",
        };
        attributes.push(KeyValue::new(names::OUTCOME, outcome));
        if let Some(status) = event.http_status {
            if !attributes
                .iter()
                .any(|kv| kv.key.as_str() == names::HTTP_STATUS)
            {
                attributes.push(KeyValue::new(names::HTTP_STATUS, i64::from(status)));
            }
        }
        if outcome != "started" {
            let begun = self
                .begun
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(stage);
            if let Some(begun) = begun {
                let took = event.elapsed.saturating_sub(begun).as_secs_f64();
                let mut labels = vec![
                    KeyValue::new(names::STAGE, stage),
                    KeyValue::new(names::OUTCOME, outcome),
                ];
                labels.extend(self.server.iter().cloned());
                self.telemetry.inner.stage.record(took, &labels);
            }
        }
        self.cx.span().add_event("stage", attributes);
    }
}
