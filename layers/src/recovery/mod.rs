//! Bounded, opt-in recovery of a failed establishment on a genuinely fresh
//! transport, session and process.
//!
//! # Why not `tower::retry`
//!
//! Retrying a connection establishment is not retrying a request:
//!
//! - every attempt must start from nothing. The inner service is a
//!   *make-service* (each call builds a new transport and runs the
//!   handshake), and the previous attempt is fully disposed before the next
//!   begins, so nothing half-open is ever reused;
//! - the decision is taken on a classified failure (see
//!   [`classify`](crate::classify)), never on a bare error, and a veto in any
//!   child of an aggregate error wins;
//! - attempts are bounded twice: by count and by the request's absolute
//!   deadline. No attempt and no backoff starts after the deadline or after
//!   the caller cancelled; `tower::retry` has neither bound and, under an
//!   outer timeout, loses the last error;
//! - on exhaustion the *first* attempt's error stays primary with its source
//!   chain, and later attempts are kept beside it, because the first failure
//!   is the one that says what is wrong with the server; a caller
//!   cancellation or a vetoed failure in a later attempt is still what the
//!   error reports through [`Classify`].
//!
//! What it reuses from tower: the [`Budget`](tower::retry::budget::Budget)
//! trait and [`TpsBudget`](tower::retry::budget::TpsBudget), so that many
//! connections failing together cannot storm a server, and tower's RNG for
//! the backoff. The backoff itself is "full jitter" (a uniform delay in
//! `[0, min(max, base * 2^n)]`), which tower's exponential backoff is not,
//! and its sleep ends at the deadline or on cancellation.
//!
//! Each attempt's request comes from
//! [`Reattempt::next_attempt`], made before
//! the previous attempt is sent, so the request type chooses what changes
//! between attempts (a different plan for an older peer, say) and what never
//! does; a request that cannot be sent again (an HTTP request with a
//! streaming body) ends recovery with [`Stop::NotReplayable`] instead of
//! being sent half-empty. A `Retry-After` the peer sent with an eligible
//! failure is the shortest wait before the next attempt; when it reaches
//! past the deadline, recovery stops at once with [`Stop::Deadline`].

mod error;
mod future;
mod layer;
mod policy;

use std::task::{Context, Poll};

use tower_service::Service;

pub use crate::decision::Decided;
pub use crate::failure::Stop;
pub use error::RecoveryError;
pub use future::ResponseFuture;
pub use layer::FreshSessionRecoveryLayer;
pub use policy::{Backoff, RecoveryPolicy};

use crate::{Classify, Reattempt};

/// The service made by [`FreshSessionRecoveryLayer`].
#[derive(Debug, Clone)]
pub struct FreshSessionRecovery<S> {
    inner: S,
    policy: RecoveryPolicy,
}

impl<S> FreshSessionRecovery<S> {
    /// Wraps a make-service.
    pub fn new(inner: S, policy: RecoveryPolicy) -> Self {
        FreshSessionRecovery { inner, policy }
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

impl<S, Request> Service<Request> for FreshSessionRecovery<S>
where
    S: Service<Request> + Clone + Send + 'static,
    S::Future: Send,
    S::Response: Send + 'static,
    S::Error: Decided + Classify + Send + 'static,
    Request: Reattempt + Send + 'static,
{
    type Response = S::Response;
    type Error = RecoveryError<S::Error>;
    type Future = ResponseFuture<S::Response, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner
            .poll_ready(cx)
            .map_err(|error| RecoveryError::new(vec![error], Stop::NotEligible))
    }

    fn call(&mut self, request: Request) -> Self::Future {
        // The readied service serves the first attempt; clones serve the rest.
        let clone = self.inner.clone();
        let first = std::mem::replace(&mut self.inner, clone);
        future::run(first, self.policy.clone(), request)
    }
}
