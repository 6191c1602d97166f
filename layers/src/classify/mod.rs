//! Middleware that turns every failure into a structured, decided value.
//!
//! # Why
//!
//! Whether a failed establishment is worth a fresh attempt is a question
//! about *what* failed, and it must be answered the same way everywhere:
//! by the recovery layer deciding to retry, by diagnostics reporting, by
//! the application vetoing. Following tower-http's split of `classify`
//! (what is a failure) from `trace` (what to do about it), this layer only
//! decides; it never retries and never logs.
//!
//! The classifier sees both what the inner service returns and what it
//! fails with, like tower-http's `ClassifyResponse`: the response type's
//! [`ClassifyOutcome`] turns an outcome into `Ok` or a typed error (for
//! `http::Response`, a 503 becomes an error that keeps the response). Every
//! error leaving [`FailureClassifier`] is then a [`Classified`] carrying a
//! [`Decision`]. The default policy, [`Conservative`], allows a fresh
//! attempt only for transport closure (EOF, reset, child exit), I/O and
//! connection failures, probe or handshake timeouts, a peer that said it is
//! temporarily unavailable, and evidence of an older peer; it never allows
//! one for authorization failures, throttling, DNS or TLS failures, invalid
//! configuration, caller cancellation, the overall deadline, or fatal
//! protocol rejections. A request that is not safe to send twice
//! ([`Establishment::is_replay_safe`]) is only re-attempted after a failure
//! at the connect stage, before anything was sent.
//!
//! An error standing for several failures (Streamable HTTP, then the
//! HTTP+SSE fallback) is judged child by child: an ineligible child or an
//! application veto in *any* position wins. No decision reads a message:
//! policies see [`Failure`] data and may downcast each
//! child's error to their own types with [`Child::find`](crate::Child::find).
//!
//! ```
//! use mcp_connect_layers::classify::FailureClassifierLayer;
//!
//! #[derive(Debug)]
//! struct HostNotAllowed;
//! impl std::fmt::Display for HostNotAllowed {
//!     fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
//!         f.write_str("host not allowed")
//!     }
//! }
//! impl std::error::Error for HostNotAllowed {}
//!
//! // Never retry when the application's own HTTP layer refused the host.
//! let layer = FailureClassifierLayer::new().with_veto(|child| child.find::<HostNotAllowed>().is_some());
//! # let _ = layer;
//! ```

mod future;
mod layer;
mod policy;

use std::fmt;
use std::task::{Context, Poll};

use tower_service::Service;

pub use crate::decision::Decision;
pub use future::ResponseFuture;
pub use layer::FailureClassifierLayer;
pub use policy::{ClassifyPolicy, Conservative, Vetoing};

use crate::{Child, Classify, Establishment, Failure, Stage};

/// How a service's outcome, a response or an error, becomes a result whose
/// error is classified. Implemented on the *response* type.
///
/// A protocol whose failures are all errors passes the outcome through (the
/// response type is its session, say, and its error implements
/// [`Classify`]). `http::Response<B>` (feature `http`) turns an error status
/// into an error that keeps the response.
#[diagnostic::on_unimplemented(
    message = "the classifier cannot judge `Result<{Self}, {E}>`",
    label = "`{Self}` does not implement `ClassifyOutcome<{E}>`",
    note = "implement `mcp_connect_layers::classify::ClassifyOutcome` for the response type (pass the outcome through when every failure is an error), or enable the `http` feature of `mcp-connect-layers` for `http::Response<B>`"
)]
pub trait ClassifyOutcome<E>: Sized {
    /// The classified error.
    type Error: Classify + std::error::Error + 'static;

    /// A response: a success, or (an error status, say) the classified
    /// error that keeps it. By default every response is a success.
    fn classify_response(self) -> Result<Self, Self::Error> {
        Ok(self)
    }

    /// An error of the inner service, as the classified error.
    fn classify_error(error: E) -> Self::Error;
}

/// The service made by [`FailureClassifierLayer`].
#[derive(Debug, Clone)]
pub struct FailureClassifier<S, P> {
    inner: S,
    policy: P,
}

impl<S, P> FailureClassifier<S, P> {
    /// Wraps `inner`, deciding its errors with `policy`.
    pub fn new(inner: S, policy: P) -> Self {
        FailureClassifier { inner, policy }
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

impl<S, P, Request> Service<Request> for FailureClassifier<S, P>
where
    S: Service<Request>,
    S::Response: ClassifyOutcome<S::Error>,
    P: ClassifyPolicy + Clone,
    Request: Establishment,
{
    type Response = S::Response;
    type Error = Classified<<S::Response as ClassifyOutcome<S::Error>>::Error>;
    type Future = ResponseFuture<S::Future, P>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        match self.inner.poll_ready(cx) {
            Poll::Ready(Err(error)) => {
                let error = S::Response::classify_error(error);
                Poll::Ready(Err(Classified::decide(error, &self.policy, true)))
            }
            Poll::Ready(Ok(())) => Poll::Ready(Ok(())),
            Poll::Pending => Poll::Pending,
        }
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let replay_safe = request.is_replay_safe();
        ResponseFuture::new(self.inner.call(request), self.policy.clone(), replay_safe)
    }
}

/// An error with the decision taken on it.
pub struct Classified<E> {
    error: E,
    decision: Decision,
}

impl<E> Classified<E>
where
    E: Classify + std::error::Error + 'static,
{
    /// Decides `error` with `policy`: every child is judged; the first
    /// ineligible or vetoed child decides; otherwise it is eligible when any
    /// child is. When the request was not `replay_safe`, an eligible
    /// failure after the connect stage becomes ineligible: the request may
    /// have been acted on.
    pub fn decide<P: ClassifyPolicy>(error: E, policy: &P, replay_safe: bool) -> Self {
        let mut decision = decide_children(&error.children(), policy);
        if !replay_safe && decision == Decision::Eligible {
            let failure = error.failure();
            if failure.stage != Stage::CONNECT {
                decision = Decision::Ineligible(failure);
            }
        }
        Classified { error, decision }
    }
}

pub(crate) fn decide_children<P: ClassifyPolicy>(children: &[Child<'_>], policy: &P) -> Decision {
    let mut eligible = false;
    for child in children {
        match policy.decide(child) {
            Decision::Eligible => eligible = true,
            refusal => return refusal,
        }
    }
    match (eligible, children.first()) {
        (true, _) => Decision::Eligible,
        (false, Some(first)) => Decision::Ineligible(first.failure),
        (false, None) => Decision::Ineligible(Failure::new(
            crate::Stage::REQUEST,
            crate::FailureKind::Other,
        )),
    }
}

impl<E> Classified<E> {
    /// The decision.
    pub fn decision(&self) -> &Decision {
        &self.decision
    }

    /// Whether a fresh attempt may follow.
    pub fn is_eligible(&self) -> bool {
        matches!(self.decision, Decision::Eligible)
    }

    /// The error.
    pub fn get_ref(&self) -> &E {
        &self.error
    }

    /// The error, unwrapped.
    pub fn into_inner(self) -> E {
        self.error
    }
}

impl<E: fmt::Debug> fmt::Debug for Classified<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Classified")
            .field("error", &self.error)
            .field("decision", &self.decision)
            .finish()
    }
}

impl<E: fmt::Display> fmt::Display for Classified<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

impl<E: std::error::Error> std::error::Error for Classified<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.error.source()
    }
}

impl<E> Classify for Classified<E>
where
    E: Classify + std::error::Error + 'static,
{
    fn failure(&self) -> Failure {
        match &self.decision {
            Decision::Eligible => self.error.failure(),
            Decision::Ineligible(failure) | Decision::Vetoed(failure) => *failure,
        }
    }

    fn children(&self) -> Vec<Child<'_>> {
        self.error.children()
    }

    fn attempts(&self) -> u32 {
        self.error.attempts()
    }

    fn stop(&self) -> Option<crate::failure::Stop> {
        self.error.stop()
    }
}

impl<E> crate::decision::Decided for Classified<E> {
    fn decision(&self) -> &Decision {
        Classified::decision(self)
    }
}
