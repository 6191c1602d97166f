//! Per-server call policies: middleware for the calls made to one server,
//! each off until it is put on a call path, each sharing its state across
//! clones so that it belongs to the server, not to one connection.
//!
//! - [`BulkheadLayer`]: at most N calls in flight, a bounded queue behind
//!   them, a bounded wait in it; a full queue fails fast.
//! - [`CircuitBreakerLayer`]: opens after consecutive failures that say the
//!   server is unwell (by default transport failures, timeouts, 5xx and
//!   "unavailable"; never an answer that names the request, a 4xx, a
//!   throttle or the caller's cancellation), fails fast while open, lets
//!   one probe through after a jittered, growing wait.
//! - [`RateLimitRetryLayer`]: waits out a throttle the server stated (a
//!   429's `Retry-After`, or a JSON-RPC rate-limit error's delay), clamped
//!   and jittered, and sends the call once more; a throttled call was not
//!   processed, so that is not a replay.
//!
//! A refusal by a policy is a [`Refused`], which the service's error type
//! takes `From`. Where tower already has the middleware (a per-connection
//! `ConcurrencyLimit`, `LoadShed`, `Hedge`, `Balance`) this module does not
//! repeat it; these differ in sharing state across the clones a client
//! makes per call and in failing fast with a typed, classified refusal.

mod breaker;
mod bulkhead;
mod rate_limit;

use std::time::Duration;

pub use breaker::{
    BreakerConfig, CircuitBreaker, CircuitBreakerLayer, CircuitState, NoProbe, Probe,
};
pub use bulkhead::{Bulkhead, BulkheadLayer};
pub use rate_limit::{RateLimitRetry, RateLimitRetryLayer};

use crate::{Classify, Failure, FailureKind, Stage};

/// A call a policy refused to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Refused {
    /// The server's bulkhead had every permit in use and its queue was
    /// full, or the wait in the queue reached its bound.
    BulkheadFull,
    /// The server's breaker is open; a probe may go in `retry_in`.
    CircuitOpen {
        /// Until the breaker lets a probe through.
        retry_in: Duration,
    },
}

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Refused::BulkheadFull => f.write_str("the server's bulkhead is full"),
            Refused::CircuitOpen { retry_in } => {
                write!(f, "the server's circuit breaker is open for {retry_in:?}")
            }
        }
    }
}

impl std::error::Error for Refused {}

impl Classify for Refused {
    fn failure(&self) -> Failure {
        let failure = Failure::new(Stage::REQUEST, FailureKind::Unavailable);
        match self {
            Refused::BulkheadFull => failure,
            Refused::CircuitOpen { retry_in } => failure.with_retry_after(*retry_in),
        }
    }
}

/// Whether a failure says the server is unwell, as the default breaker
/// counts: the connection failed, closed or timed out, or the server said
/// it is unavailable or answered 5xx. An answer naming the request (a
/// JSON-RPC error), any other status, a throttle, authorization, the
/// caller's cancellation and a bad configuration are the call's, not the
/// server's health.
pub fn server_unwell(failure: &Failure) -> bool {
    match failure.kind {
        FailureKind::Connect
        | FailureKind::Dns
        | FailureKind::Io
        | FailureKind::Closed
        | FailureKind::Unavailable
        | FailureKind::Proxy => true,
        FailureKind::Timeout => failure.cancel_source != Some(crate::CancelSource::Caller),
        FailureKind::HttpStatus => failure
            .http_status
            .is_some_and(|s| (500..=599).contains(&s)),
        _ => false,
    }
}

/// A wait of `base` doubled `exponent` times, capped at `max`, then
/// jittered into its upper half (never shorter than half of it), so a
/// fleet that saw one server fail together does not come back in step.
pub(crate) fn jittered(
    base: Duration,
    max: Duration,
    exponent: u32,
    rng: &mut impl tower::util::rng::Rng,
) -> Duration {
    let ceiling = base
        .checked_mul(1u32 << exponent.min(16))
        .unwrap_or(max)
        .min(max);
    let half = ceiling / 2;
    half + half.mul_f64(rng.next_f64())
}

/// A policy's response future.
pub type BoxFuture<T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send>>;
