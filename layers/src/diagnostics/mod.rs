//! Payload-free lifecycle diagnostics through `tracing`, and the same
//! values for metrics.
//!
//! In the spirit of tower-http's `trace`, which acts on what `classify`
//! decided: this layer records *what happened* to an establishment, one
//! `mcp.establish` span per call with one `mcp.attempt` span per attempt,
//! and an event per stage transition carrying fields only: stage, outcome,
//! elapsed and remaining budget, transport mode, attempt number, failure
//! kind, closure category, HTTP status, JSON-RPC code, cancellation source,
//! and at the end the attempt count and exhaustion reason. A
//! [`LifecycleMetrics`] callback receives the same values.
//!
//! By construction it cannot leak: every value it sees is a
//! [`StageEvent`] or a [`Failure`],
//! plain enums and numbers that have no room for a header value, a session
//! id, a URL, a body, a tool argument or a server's message.
//!
//! It sits *outside* the recovery layer (an earlier design put it inside): from
//! there one span covers every attempt and the exhaustion reason is known,
//! while the per-attempt spans still come from the attempt numbers in the
//! stage events.

mod future;
mod layer;
mod tracer;

use std::fmt;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tower_service::Service;

pub use future::ResponseFuture;
pub use layer::LifecycleDiagnosticsLayer;

use crate::deadline::Budgeted;
use crate::{Failure, StageEvent, StageObserver};

/// A request whose stage events can be observed.
pub trait Observable: Budgeted {
    /// Adds an observer for every stage event of this establishment.
    fn add_observer(&mut self, observer: Arc<dyn StageObserver>);

    /// The configured transport mode, as a stable lower-case name.
    fn transport_mode(&self) -> &'static str;
}

/// One stage transition, with its context.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct StageRecord {
    /// The event.
    pub event: StageEvent,
    /// What was left of the overall deadline at the event.
    pub remaining: Option<Duration>,
    /// The configured transport mode.
    pub transport: &'static str,
}

/// How one establishment ended.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct OutcomeRecord {
    /// Whether a session was established.
    pub established: bool,
    /// How many attempts were made.
    pub attempts: u32,
    /// How long it took.
    pub elapsed: Duration,
    /// The failure that decided it, when it failed.
    pub failure: Option<Failure>,
    /// Why recovery stopped, when it ran and failed.
    pub exhaustion: Option<&'static str>,
    /// The configured transport mode.
    pub transport: &'static str,
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
}

impl<S> LifecycleDiagnostics<S> {
    /// Wraps `inner`, reporting to `tracing` and, if given, `metrics`.
    pub fn new(inner: S, metrics: Option<Arc<dyn LifecycleMetrics>>) -> Self {
        LifecycleDiagnostics { inner, metrics }
    }

    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<S, Request> Service<Request> for LifecycleDiagnostics<S>
where
    S: Service<Request>,
    S::Error: crate::Classify + crate::recovery::Outcome + std::error::Error + 'static,
    Request: Observable,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        let transport = request.transport_mode();
        let span = tracing::info_span!("mcp.establish", transport);
        // Nobody listening (no subscriber wants these spans or the outcome
        // warning, no metrics): no tracer, no observer, no per-stage work.
        let listening = self.metrics.is_some()
            || !span.is_disabled()
            || tracing::enabled!(target: "mcp_connect::lifecycle", tracing::Level::WARN);
        let tracer = listening.then(|| {
            let metrics = self.metrics.clone().unwrap_or_else(|| Arc::new(NoMetrics));
            let tracer = Arc::new(tracer::Tracer::new(
                span.clone(),
                request.deadline(),
                transport,
                metrics,
            ));
            request.add_observer(tracer.clone());
            tracer
        });
        let inner = {
            let _entered = span.enter();
            self.inner.call(request)
        };
        ResponseFuture::new(inner, span, tracer)
    }
}
