//! The response future: the inner future, with its error decided.

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use pin_project_lite::pin_project;

use super::{Classified, ClassifyPolicy};
use crate::Classify;

pin_project! {
    /// The future returned by [`FailureClassifier`](super::FailureClassifier).
    #[derive(Debug)]
    pub struct ResponseFuture<F, P> {
        #[pin]
        inner: F,
        policy: P,
    }
}

impl<F, P> ResponseFuture<F, P> {
    pub(crate) fn new(inner: F, policy: P) -> Self {
        ResponseFuture { inner, policy }
    }
}

impl<F, P, T, E> Future for ResponseFuture<F, P>
where
    F: Future<Output = Result<T, E>>,
    E: Classify + std::error::Error + 'static,
    P: ClassifyPolicy,
{
    type Output = Result<T, Classified<E>>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let outcome = ready!(this.inner.poll(cx));
        Poll::Ready(outcome.map_err(|error| Classified::decide(error, this.policy)))
    }
}
