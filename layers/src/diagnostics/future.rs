//! The response future: the inner future inside the establishment span,
//! with the outcome recorded when it ends, or when it is dropped unfinished.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use pin_project_lite::pin_project;
use tokio::time::Instant;
use tracing::Span;

use super::tracer::{Ended, Tracer};
use crate::{CancelSource, Classify, FailureKind};

pin_project! {
    /// The future returned by [`LifecycleDiagnostics`](super::LifecycleDiagnostics).
    #[derive(Debug)]
    pub struct ResponseFuture<F> {
        #[pin]
        inner: F,
        span: Span,
        tracer: Option<Arc<Tracer>>,
        started: Instant,
        deadline: Option<Instant>,
    }

    impl<F> PinnedDrop for ResponseFuture<F> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            // Still here: the deadline layer outside cut the establishment,
            // or the caller dropped it. Which one, the clock says.
            if let Some(tracer) = this.tracer.take() {
                let (kind, source) = if this.deadline.is_some_and(|d| Instant::now() >= d) {
                    (FailureKind::Timeout, CancelSource::Deadline)
                } else {
                    (FailureKind::Cancelled, CancelSource::Caller)
                };
                tracer.finish(this.started.elapsed(), Ended::Dropped(kind, source));
            }
        }
    }
}

impl<F> ResponseFuture<F> {
    pub(crate) fn new(
        inner: F,
        span: Span,
        tracer: Option<Arc<Tracer>>,
        deadline: Option<Instant>,
    ) -> Self {
        ResponseFuture {
            inner,
            span,
            tracer,
            started: Instant::now(),
            deadline,
        }
    }
}

impl<F, T, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<T, E>>,
    E: Classify,
{
    type Output = Result<T, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let outcome = {
            let _entered = this.span.enter();
            ready!(this.inner.poll(cx))
        };
        if let Some(tracer) = this.tracer.take() {
            let elapsed = this.started.elapsed();
            match &outcome {
                Ok(_) => tracer.finish(elapsed, Ended::Established),
                Err(e) => {
                    tracer.finish(elapsed, Ended::Failed(e.failure(), e.attempts(), e.stop()))
                }
            }
        }
        Poll::Ready(outcome)
    }
}
