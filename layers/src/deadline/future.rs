//! The response future: the inner future, cut at deadline + cleanup bound.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use super::DeadlineError;

pin_project! {
    /// The future returned by [`Deadline`](super::Deadline). Polled in this
    /// order: the inner future (a finished establishment wins), then the
    /// caller's cancellation (which shortens the cut to the cleanup bound),
    /// then the cut.
    #[derive(Debug)]
    pub struct ResponseFuture<F> {
        #[pin]
        inner: F,
        #[pin]
        cut: Sleep,
        #[pin]
        cancelled: Option<WaitForCancellationFutureOwned>,
        cleanup: Duration,
        by_caller: bool,
    }
}

impl<F> ResponseFuture<F> {
    pub(crate) fn new(
        inner: F,
        cut: Instant,
        cleanup: Duration,
        cancel: Option<CancellationToken>,
    ) -> Self {
        ResponseFuture {
            inner,
            cut: tokio::time::sleep_until(cut),
            cancelled: cancel.map(CancellationToken::cancelled_owned),
            cleanup,
            by_caller: false,
        }
    }
}

impl<F, T, E> Future for ResponseFuture<F>
where
    F: Future<Output = Result<T, E>>,
{
    type Output = Result<T, DeadlineError<E>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        if let Poll::Ready(outcome) = this.inner.poll(cx) {
            return Poll::Ready(outcome.map_err(DeadlineError::Inner));
        }
        if let Some(cancelled) = this.cancelled.as_mut().as_pin_mut() {
            if cancelled.poll(cx).is_ready() {
                this.cancelled.set(None);
                *this.by_caller = true;
                let cut = crate::instant::after(Instant::now(), *this.cleanup);
                if cut < this.cut.deadline() {
                    this.cut.as_mut().reset(cut);
                }
            }
        }
        match this.cut.poll(cx) {
            Poll::Ready(()) if *this.by_caller => Poll::Ready(Err(DeadlineError::Cancelled)),
            Poll::Ready(()) => Poll::Ready(Err(DeadlineError::Elapsed)),
            Poll::Pending => Poll::Pending,
        }
    }
}
