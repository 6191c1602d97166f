//! The response future: the inner future, with its outcome classified and
//! its error decided.

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use pin_project_lite::pin_project;

use super::{Classified, ClassifyOutcome, ClassifyPolicy};

pin_project! {
    /// The future returned by [`FailureClassifier`](super::FailureClassifier).
    #[derive(Debug)]
    pub struct ResponseFuture<F, P> {
        #[pin]
        inner: F,
        policy: P,
        replay_safe: bool,
    }
}

impl<F, P> ResponseFuture<F, P> {
    pub(crate) fn new(inner: F, policy: P, replay_safe: bool) -> Self {
        ResponseFuture {
            inner,
            policy,
            replay_safe,
        }
    }
}

impl<F, P, T, E> Future for ResponseFuture<F, P>
where
    F: Future<Output = Result<T, E>>,
    T: ClassifyOutcome<E>,
    P: ClassifyPolicy,
{
    type Output = Result<T, Classified<T::Error>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let outcome = match ready!(this.inner.poll(cx)) {
            Ok(response) => response.classify_response(),
            Err(error) => Err(T::classify_error(error)),
        };
        Poll::Ready(outcome.map_err(|e| Classified::decide(e, this.policy, *this.replay_safe)))
    }
}
