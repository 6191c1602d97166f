//! The attempt loop.
//!
//! Unlike the other layers' futures this one is an `async` block, boxed once
//! per establishment: the loop holds a service, a backoff sleep and a
//! cancellation wait across several attempts, and a hand-written state
//! machine for it would be longer than the logic. One allocation per
//! establishment is noise next to a TCP connection.

use std::future::Future;
use std::pin::Pin;

use crate::jitter::jitter;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;
use tower_service::Service;

use super::{Decided, RecoveryError, RecoveryPolicy, Stop};
use crate::decision::Decision;
use crate::{CancelSource, Classify, Failure, FailureKind, Reattempt};

/// The future returned by [`FreshSessionRecovery`](super::FreshSessionRecovery).
pub type ResponseFuture<T, E> = Pin<Box<dyn Future<Output = Result<T, RecoveryError<E>>> + Send>>;

pub(crate) fn run<S, Request>(
    first: S,
    policy: RecoveryPolicy,
    request: Request,
) -> ResponseFuture<S::Response, S::Error>
where
    S: Service<Request> + Clone + Send + 'static,
    S::Future: Send,
    S::Response: Send + 'static,
    S::Error: Decided + Classify + Send + 'static,
    Request: Reattempt + Send + 'static,
{
    Box::pin(async move {
        // A new generator for every establishment: connections that failed
        // together must not wait the same delays and return in lock-step.
        let mut rng = jitter();
        if let Some(budget) = &policy.budget {
            budget.deposit();
        }
        let deadline = request.deadline();
        let token = request.cancellation().cloned();
        let mut errors = Vec::new();
        let mut service = first;
        let mut current = request;
        loop {
            let attempt = errors.len() as u32 + 1;
            // The next attempt's request is made before this one is sent
            // (sending consumes it); none is made when no attempt can follow.
            let next = (attempt < policy.max_attempts).then(|| current.next_attempt(attempt + 1));
            let outcome = if attempt == 1 {
                service.call(current).await
            } else {
                service.clone().oneshot(current).await
            };
            let error = match outcome {
                Ok(response) => return Ok(response),
                Err(error) => error,
            };
            let refused = match error.decision() {
                Decision::Eligible => None,
                Decision::Ineligible(failure) | Decision::Vetoed(failure) => Some(refusal(failure)),
            };
            let retry_after = error.failure().retry_after;
            errors.push(error);
            // With a cap of one, "recovery is off" says more than "cap reached"
            // or "not eligible"; the deadline and the caller are still named.
            let off = policy.max_attempts == 1;
            let stop = if let Some(refused) = refused {
                Some(match refused {
                    Stop::NotEligible if off => Stop::RecoveryOff,
                    refused => refused,
                })
            } else if attempt >= policy.max_attempts {
                Some(if off {
                    Stop::RecoveryOff
                } else {
                    Stop::MaxAttempts
                })
            } else if token.as_ref().is_some_and(CancellationToken::is_cancelled) {
                Some(Stop::Cancelled)
            } else if deadline.is_some_and(|d| Instant::now() >= d) {
                Some(Stop::Deadline)
            } else {
                None
            };
            if let Some(stop) = stop {
                return Err(RecoveryError::new(errors, stop));
            }
            let next = match next {
                Some(Ok(next)) => next,
                Some(Err(stop)) => return Err(RecoveryError::new(errors, stop)),
                None => return Err(RecoveryError::new(errors, Stop::MaxAttempts)),
            };
            if policy.budget.as_ref().is_some_and(|b| !b.withdraw()) {
                return Err(RecoveryError::new(errors, Stop::Budget));
            }
            // The server's `Retry-After` is the shortest wait; the jitter
            // may make it longer, never shorter.
            let delay = policy
                .backoff
                .delay(attempt, &mut rng)
                .max(retry_after.unwrap_or_default());
            if let Some(stop) = back_off(delay, deadline, token.as_ref()).await {
                return Err(RecoveryError::new(errors, stop));
            }
            current = next;
        }
    })
}

/// Why an ineligible failure stops recovery: the deadline and the caller's
/// cancellation are named as such.
fn refusal(failure: &Failure) -> Stop {
    match (failure.kind, failure.cancel_source) {
        (FailureKind::Timeout, Some(CancelSource::Deadline)) => Stop::Deadline,
        (FailureKind::Cancelled, _) | (_, Some(CancelSource::Caller)) => Stop::Cancelled,
        _ => Stop::NotEligible,
    }
}

/// Sleeps `delay`; `Some` when the caller cancelled meanwhile, or at once
/// when the wait would reach the deadline (no attempt could start after it).
async fn back_off(
    delay: std::time::Duration,
    deadline: Option<Instant>,
    token: Option<&CancellationToken>,
) -> Option<Stop> {
    let wake = crate::instant::after(Instant::now(), delay);
    if deadline.is_some_and(|deadline| deadline <= wake) {
        // Waiting would only end at the deadline: say so now.
        return Some(Stop::Deadline);
    }
    let sleep = tokio::time::sleep_until(wake);
    match token {
        Some(token) => tokio::select! {
            biased;
            _ = token.cancelled() => return Some(Stop::Cancelled),
            _ = sleep => {}
        },
        None => sleep.await,
    }
    None
}
