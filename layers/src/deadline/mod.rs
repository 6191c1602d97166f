//! One absolute deadline for a whole establishment, started before any I/O.
//!
//! # Why not `tower::timeout`
//!
//! `tower::timeout::Timeout` bounds one call's future, starting when `call`
//! is made; it does not bound `poll_ready`, knows nothing of attempts, and
//! reports only "elapsed". An establishment needs more:
//!
//! - the clock starts at the first `poll_ready` (or at `call` when the
//!   service was ready), before any transport I/O, and `poll_ready` itself
//!   is bounded;
//! - the *absolute* deadline travels down inside the request
//!   ([`Establishment::set_deadline`]), so every stage below (TCP/TLS connect,
//!   HTTP headers, the SSE `endpoint` event, discovery, `initialize`,
//!   backoff sleeps, every recovery attempt) waits at most for what is
//!   left, a new attempt never resets it, and none starts after it. Stages
//!   below report which limit fired: the caller, the probe limit, the
//!   handshake limit or this overall deadline are four different
//!   [`CancelSource`](crate::CancelSource)s;
//! - expiry is cooperative first: the stages below stop their reads and
//!   sends at the deadline and dispose of what they opened, then return
//!   their typed error, which keeps the last real error of the attempt.
//!
//! # The cleanup contract
//!
//! On expiry or caller cancellation, disposal (closing streams, ending
//! sessions, a child process's close ladder) has its own bound: the
//! request's [`Establishment::cleanup_bound`] (zero for an HTTP request, whose
//! future is cleaned up by dropping it), or the one set with
//! [`DeadlineLayer::with_cleanup_bound`]. This layer guarantees
//! the call returns by *deadline + cleanup bound* (or *cancellation +
//! cleanup bound*): if the inner future has not finished by then it is
//! dropped (dropping closes sockets and kills child processes) and
//! [`DeadlineError::Elapsed`] or [`DeadlineError::Cancelled`] is returned.
//! The only thing that can extend that is code that ignores cancellation
//! by blocking a thread (a synchronous handler inside the application's own
//! HTTP stack, say): an async future can always be dropped, a blocked
//! thread cannot.

mod error;
mod future;
mod layer;

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use tokio::time::{Instant, Sleep};
use tower_service::Service;

use crate::instant::after;
use crate::Establishment;

pub use crate::pause::{DeadlinePause, PauseGuard};
pub use error::DeadlineError;
pub use future::ResponseFuture;
pub use layer::DeadlineLayer;

/// The service made by [`DeadlineLayer`].
#[derive(Debug)]
pub struct Deadline<S> {
    inner: S,
    budget: Duration,
    /// The layer's cleanup bound; `None` takes the request's own.
    cleanup: Option<Duration>,
    /// When the caller first asked for readiness.
    started: Option<Instant>,
    /// The timer bounding readiness, made only if the inner service is not
    /// ready at once (the common case allocates nothing).
    timer: Option<Pin<Box<Sleep>>>,
}

impl<S: Clone> Clone for Deadline<S> {
    fn clone(&self) -> Self {
        Deadline {
            inner: self.inner.clone(),
            budget: self.budget,
            cleanup: self.cleanup,
            started: None,
            timer: None,
        }
    }
}

impl<S> Deadline<S> {
    /// Wraps `inner` with an overall `budget` and a `cleanup` bound
    /// (`None`: each request's own [`Establishment::cleanup_bound`]).
    pub fn new(inner: S, budget: Duration, cleanup: Option<Duration>) -> Self {
        Deadline {
            inner,
            budget,
            cleanup,
            started: None,
            timer: None,
        }
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

impl<S, Request> Service<Request> for Deadline<S>
where
    S: Service<Request>,
    Request: Establishment,
{
    type Response = S::Response;
    type Error = DeadlineError<S::Error>;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        let started = *self.started.get_or_insert_with(Instant::now);
        match self.inner.poll_ready(cx) {
            Poll::Ready(outcome) => Poll::Ready(outcome.map_err(DeadlineError::Inner)),
            Poll::Pending => {
                let budget = self.budget;
                let timer = self.timer.get_or_insert_with(|| {
                    Box::pin(tokio::time::sleep_until(after(started, budget)))
                });
                ready!(timer.as_mut().poll(cx));
                self.started = None;
                self.timer = None;
                Poll::Ready(Err(DeadlineError::Elapsed))
            }
        }
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        self.timer = None;
        let started = self.started.take().unwrap_or_else(Instant::now);
        let own = after(started, self.budget);
        let deadline = match request.deadline() {
            Some(earlier) if earlier < own => earlier,
            _ => own,
        };
        request.set_deadline(started, deadline);
        // A request that keeps a pause gets this call's; its waits for a
        // person move the cut later.
        request.set_deadline_pause(DeadlinePause::new());
        let pause = request.deadline_pause().cloned();
        let cleanup = self.cleanup.unwrap_or_else(|| request.cleanup_bound());
        let cancel = request.cancellation().cloned();
        ResponseFuture::new(
            self.inner.call(request),
            after(deadline, cleanup),
            cleanup,
            cancel,
        )
        .with_pause(pause)
    }
}
