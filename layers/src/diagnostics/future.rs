//! The response future: the inner future inside the establishment span,
//! with the outcome recorded when it ends.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use pin_project_lite::pin_project;
use tokio::time::Instant;
use tracing::Span;

use super::tracer::Tracer;
use crate::recovery::Outcome;
use crate::Classify;

pin_project! {
    /// The future returned by [`LifecycleDiagnostics`](super::LifecycleDiagnostics).
    #[derive(Debug)]
    pub struct ResponseFuture<F> {
        #[pin]
        inner: F,
        span: Span,
        tracer: Option<Arc<Tracer>>,
        started: Instant,
    }
}

impl<F> ResponseFuture<F> {
    pub(crate) fn new(inner: F, span: Span, tracer: Option<Arc<Tracer>>) -> Self {
        ResponseFuture {
            inner,
            span,
            tracer,
            started: Instant::now(),
        }
    }
}

impl<F, T, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<T, E>>,
    E: Classify + Outcome,
{
    type Output = Result<T, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let outcome = {
            let _entered = this.span.enter();
            ready!(this.inner.poll(cx))
        };
        if let Some(tracer) = this.tracer {
            let elapsed = this.started.elapsed();
            match &outcome {
                Ok(_) => tracer.finish(elapsed, Ok(())),
                Err(e) => tracer.finish(elapsed, Err((e.failure(), e.attempts(), e.exhaustion()))),
            }
        }
        Poll::Ready(outcome)
    }
}
