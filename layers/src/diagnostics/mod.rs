//! Payload-free lifecycle diagnostics through `tracing`, and the same
//! values for metrics.
//!
//! In the spirit of tower-http's `trace`, which acts on what `classify`
//! decided: this layer records *what happened* to an establishment, one
//! `establish` span per call with one `attempt` span per attempt, and an
//! event per stage transition carrying fields only: stage, outcome, elapsed
//! and remaining budget, the request's label, attempt number, failure kind,
//! closure category, HTTP status, JSON-RPC code, cancellation source, and at
//! the end the attempt count and why attempts stopped. A
//! [`LifecycleMetrics`] callback receives the same values.
//!
//! Events use the target `mcp_connect_layers::lifecycle`. Span names and the
//! target are fixed: `tracing` keeps them in static callsites, so they cannot
//! follow a runtime setting. What a protocol crate can set is the
//! `protocol` field on every span and event
//! ([`LifecycleDiagnosticsLayer::with_protocol`]), which filters and
//! dashboards can select on.
//!
//! When the deadline layer outside drops an establishment that did not end
//! in time (a service that cannot stop cooperatively, such as an HTTP client
//! stalled on a response), the outcome is still recorded, as a timeout by
//! the deadline or a cancellation by the caller.
//!
//! By construction it cannot leak: every value it sees is a
//! [`StageEvent`] or a [`Failure`],
//! plain enums and numbers that have no room for a header value, a session
//! id, a URL, a body, a tool argument or a server's message.
//!
//! It sits *outside* the recovery layer (an earlier design put it inside): from
//! there one span covers every attempt and the exhaustion reason is known,
//! while the per-attempt spans still come from the attempt numbers in the
//! stage events. A protocol's connector reports those events itself; for a
//! request that does not (a plain HTTP request), [`AttemptDiagnosticsLayer`]
//! reports each attempt from inside the recovery layer, so that the
//! classifier only decides. Without it, such a request gets no attempt
//! spans, and a success reports one attempt however many it took (a
//! failure's error still carries its count).

mod attempts;
mod future;
mod layer;
mod tracer;

use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tower_service::Service;

pub use attempts::{AttemptDiagnostics, AttemptDiagnosticsLayer, AttemptFuture};
pub use future::ResponseFuture;
pub use layer::LifecycleDiagnosticsLayer;

use crate::failure::Stop;
use crate::{Establishment, Failure, StageEvent};

/// One stage transition, with its context.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct StageRecord {
    /// The event.
    pub event: StageEvent,
    /// What was left of the overall deadline at the event.
    pub remaining: Option<Duration>,
    /// The request's label.
    pub label: &'static str,
}

/// How one establishment ended.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct OutcomeRecord {
    /// Whether it succeeded: for MCP, a session was established; for a
    /// plain HTTP client, a response came that the policy passes.
    pub succeeded: bool,
    /// How many attempts were made.
    pub attempts: u32,
    /// How long it took.
    pub elapsed: Duration,
    /// The failure that decided it, when it failed.
    pub failure: Option<Failure>,
    /// Why attempts stopped, when a recovery layer ran and failed.
    pub stop: Option<Stop>,
    /// The request's label.
    pub label: &'static str,
}

/// Receives the lifecycle values, for metrics. Called inline: keep it cheap.
pub trait LifecycleMetrics: Send + Sync + fmt::Debug {
    /// One stage transition.
    fn on_stage(&self, record: &StageRecord) {
        let _ = record;
    }

    /// The end of one establishment.
    fn on_outcome(&self, record: &OutcomeRecord) {
        let _ = record;
    }
}

/// No metrics.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoMetrics;

impl LifecycleMetrics for NoMetrics {}

/// The service made by [`LifecycleDiagnosticsLayer`].
#[derive(Debug, Clone)]
pub struct LifecycleDiagnostics<S> {
    inner: S,
    metrics: Option<Arc<dyn LifecycleMetrics>>,
    protocol: Option<&'static str>,
}

impl<S> LifecycleDiagnostics<S> {
    /// Wraps `inner`, reporting to `tracing` and, if given, `metrics`.
    pub fn new(inner: S, metrics: Option<Arc<dyn LifecycleMetrics>>) -> Self {
        LifecycleDiagnostics {
            inner,
            metrics,
            protocol: None,
        }
    }

    pub(crate) fn with_protocol(mut self, protocol: Option<&'static str>) -> Self {
        self.protocol = protocol;
        self
    }

    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The inner service, unwrapped.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S, Request> Service<Request> for LifecycleDiagnostics<S>
where
    S: Service<Request>,
    S::Error: crate::Classify,
    Request: Establishment,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        let label = request.label();
        let span = tracing::info_span!(
            target: tracer::TARGET,
            "establish",
            label,
            protocol = self.protocol
        );
        // Nobody listening (no subscriber wants these spans or the outcome
        // warning, no metrics): no tracer, no observer, no per-stage work.
        let listening = self.metrics.is_some()
            || !span.is_disabled()
            || tracing::enabled!(target: tracer::TARGET, tracing::Level::WARN);
        let tracer = listening.then(|| {
            let metrics = self.metrics.clone().unwrap_or_else(|| Arc::new(NoMetrics));
            let tracer = Arc::new(tracer::Tracer::new(
                span.clone(),
                request.deadline(),
                label,
                self.protocol,
                metrics,
            ));
            request.add_observer(tracer.clone());
            tracer
        });
        let request_deadline = request.deadline();
        let inner = {
            let _entered = span.enter();
            self.inner.call(request)
        };
        ResponseFuture::new(inner, span, tracer, request_deadline)
    }
}
