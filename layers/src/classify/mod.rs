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
//! Every error leaving [`FailureClassifier`] is a [`Classified`] carrying a
//! [`Decision`]. The default policy, [`Conservative`], allows a fresh
//! attempt only for transport closure (EOF, reset, child exit), I/O and
//! connection failures, probe or handshake timeouts, and legacy-era
//! signals; it never allows one for 401/403, 429, DNS or TLS failures,
//! invalid configuration, caller cancellation, the overall deadline, or
//! fatal protocol rejections.
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

pub use future::ResponseFuture;
pub use layer::FailureClassifierLayer;
pub use policy::{ClassifyPolicy, Conservative, Decision, Vetoing};

use crate::{Child, Classify, Failure};

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
    S::Error: Classify + std::error::Error + 'static,
    P: ClassifyPolicy + Clone,
{
    type Response = S::Response;
    type Error = Classified<S::Error>;
    type Future = ResponseFuture<S::Future, P>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner
            .poll_ready(cx)
            .map_err(|error| Classified::decide(error, &self.policy))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        ResponseFuture::new(self.inner.call(request), self.policy.clone())
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
    /// child is.
    pub fn decide<P: ClassifyPolicy>(error: E, policy: &P) -> Self {
        let decision = decide_children(&error.children(), policy);
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
            crate::Stage::Connect,
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
}
