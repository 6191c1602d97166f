//! One [`Stage::REQUEST`] event per attempt, for requests that report no
//! stages of their own.
//!
//! A protocol's connector reports its stages (connect, probe, handshake) to
//! the request's observers itself. A plain HTTP client does not, so the
//! establishment span that [`LifecycleDiagnosticsLayer`] opens outside the
//! recovery layer would show no attempts. [`AttemptDiagnosticsLayer`]
//! fills that gap from *inside* the recovery layer, where each attempt is
//! one call: it reports the attempt's start, and its end with the failure
//! the classifier under it decided, to the same observers (the diagnostics
//! layer's tracer among them). A request that reports its own stages
//! ([`Establishment::reports_stages`]) passes through untouched.
//!
//! Place it between the recovery layer and the classifier:
//!
//! ```text
//! DeadlineLayer > LifecycleDiagnosticsLayer > FreshSessionRecoveryLayer
//!     > AttemptDiagnosticsLayer > FailureClassifierLayer > client
//! ```
//!
//! [`LifecycleDiagnosticsLayer`]: super::LifecycleDiagnosticsLayer

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use pin_project_lite::pin_project;
use tokio::time::Instant;
use tower_layer::Layer;
use tower_service::Service;

use crate::{Classify, Establishment, Stage, StageEvent, StageObserver, StageOutcome};

/// Reports each attempt of a request that reports no stages, from inside
/// the recovery layer (see the [diagnostics docs](super)).
///
/// ```
/// use std::time::Duration;
///
/// use mcp_connect_layers::classify::FailureClassifierLayer;
/// use mcp_connect_layers::diagnostics::{AttemptDiagnosticsLayer, LifecycleDiagnosticsLayer};
/// use mcp_connect_layers::recovery::{FreshSessionRecoveryLayer, RecoveryPolicy};
/// use tower::ServiceBuilder;
///
/// let layers = ServiceBuilder::new()
///     .layer(LifecycleDiagnosticsLayer::new())
///     .layer(FreshSessionRecoveryLayer::new(RecoveryPolicy::new()))
///     .layer(AttemptDiagnosticsLayer::new())
///     .layer(FailureClassifierLayer::new());
/// # let _ = layers;
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct AttemptDiagnosticsLayer {
    _private: (),
}

impl AttemptDiagnosticsLayer {
    /// The layer.
    pub fn new() -> Self {
        AttemptDiagnosticsLayer::default()
    }
}

impl<S> Layer<S> for AttemptDiagnosticsLayer {
    type Service = AttemptDiagnostics<S>;

    fn layer(&self, inner: S) -> Self::Service {
        AttemptDiagnostics { inner }
    }
}

/// The service made by [`AttemptDiagnosticsLayer`].
#[derive(Debug, Clone)]
pub struct AttemptDiagnostics<S> {
    inner: S,
}

impl<S> AttemptDiagnostics<S> {
    /// The inner service, unwrapped.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S, Request> Service<Request> for AttemptDiagnostics<S>
where
    S: Service<Request>,
    S::Error: Classify,
    Request: Establishment,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = AttemptFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let reporter = (!request.reports_stages() && !request.observers().is_empty())
            .then(|| Reporter::new(&request));
        if let Some(reporter) = &reporter {
            reporter.emit(StageOutcome::Started, None);
        }
        AttemptFuture {
            inner: self.inner.call(request),
            reporter,
        }
    }
}

pin_project! {
    /// The future returned by [`AttemptDiagnostics`].
    #[derive(Debug)]
    pub struct AttemptFuture<F> {
        #[pin]
        inner: F,
        reporter: Option<Reporter>,
    }
}

impl<F, T, E> Future for AttemptFuture<F>
where
    F: Future<Output = Result<T, E>>,
    E: Classify,
{
    type Output = Result<T, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let outcome = ready!(this.inner.poll(cx));
        if let Some(reporter) = this.reporter.take() {
            match &outcome {
                Ok(_) => reporter.emit(StageOutcome::Succeeded, None),
                Err(error) => {
                    let failure = error.failure();
                    reporter.emit(StageOutcome::Failed(failure), failure.http_status);
                }
            }
        }
        Poll::Ready(outcome)
    }
}

/// The attempt's observers, number and start.
#[derive(Debug)]
struct Reporter {
    observers: Vec<Arc<dyn StageObserver>>,
    attempt: u32,
    started: Instant,
}

impl Reporter {
    fn new<R: Establishment>(request: &R) -> Self {
        Reporter {
            observers: request.observers().to_vec(),
            attempt: request.attempt(),
            started: request.started().unwrap_or_else(Instant::now),
        }
    }

    fn emit(&self, outcome: StageOutcome, http_status: Option<u16>) {
        let event = StageEvent::new(
            self.attempt,
            Stage::REQUEST,
            self.started.elapsed(),
            outcome,
        )
        .with_http_status(http_status);
        for observer in &self.observers {
            observer.on_event(&event);
        }
    }
}
