//! The response future: the inner future, cut at deadline + cleanup bound.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use super::{DeadlineError, DeadlinePause};

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
        // The cut before any pause, and the record of pauses.
        base: Instant,
        pause: Option<DeadlinePause>,
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
            base: cut,
            pause: None,
        }
    }

    pub(crate) fn with_pause(mut self, pause: Option<DeadlinePause>) -> Self {
        self.pause = pause;
        self
    }
}

/// While a pause is under way the cut is looked at again this often.
const WHILE_PAUSED: Duration = Duration::from_millis(100);

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
        loop {
            match this.cut.as_mut().poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(()) if *this.by_caller => {
                    return Poll::Ready(Err(DeadlineError::Cancelled))
                }
                Poll::Ready(()) => {
                    // Time spent waiting for a person moves the cut later.
                    let Some(pause) = this.pause.as_ref() else {
                        return Poll::Ready(Err(DeadlineError::Elapsed));
                    };
                    let now = Instant::now();
                    let moved = if pause.is_paused() {
                        now + WHILE_PAUSED
                    } else {
                        pause.extend(*this.base)
                    };
                    if moved <= now {
                        return Poll::Ready(Err(DeadlineError::Elapsed));
                    }
                    this.cut.as_mut().reset(moved);
                }
            }
        }
    }
}
