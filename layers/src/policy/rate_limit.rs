//! Waiting out a throttle the server stated, and sending the call again.
//!
//! A throttled call (a [`FailureKind::Throttled`] failure: HTTP 429, or a
//! JSON-RPC rate-limit error) was refused before it ran, so sending it
//! again after the delay the server gave is not a replay. The delay is
//! clamped to `max_wait` (a longer one goes to the caller as the throttle
//! it is) and jittered upward by up to a tenth, so callers throttled
//! together do not return together; never shorter than the server asked.
//! At most `max_retries` sends more (default one); dropping the future
//! ends the wait. A throttle without a delay is not retried: guessing
//! one hits a throttled server harder.

use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use crate::jitter::{jitter, Jitter};
use tower::util::rng::Rng as _;
use tower_layer::Layer;
use tower_service::Service;

use super::BoxFuture;
use crate::{Classify, FailureKind};

/// Puts a [`RateLimitRetry`] around a service.
#[derive(Debug, Clone)]
pub struct RateLimitRetryLayer {
    max_wait: Duration,
    max_retries: u32,
    rng: Arc<Mutex<Jitter>>,
}

impl Default for RateLimitRetryLayer {
    fn default() -> Self {
        Self::new()
    }
}

impl RateLimitRetryLayer {
    /// One more send after a stated delay of at most 10 s.
    pub fn new() -> Self {
        RateLimitRetryLayer {
            max_wait: Duration::from_secs(10),
            max_retries: 1,
            rng: Arc::new(Mutex::new(jitter())),
        }
    }

    /// Waits at most `max_wait` (a longer stated delay is not waited).
    #[must_use]
    pub fn with_max_wait(mut self, max_wait: Duration) -> Self {
        self.max_wait = max_wait;
        self
    }

    /// Sends at most `max_retries` more times.
    #[must_use]
    pub fn with_max_retries(mut self, max_retries: u32) -> Self {
        self.max_retries = max_retries;
        self
    }

    /// The wait before the next send, when the failure is a throttle with
    /// a stated delay within the bound.
    fn wait_for(&self, failure: &crate::Failure) -> Option<Duration> {
        if failure.kind != FailureKind::Throttled {
            return None;
        }
        let stated = failure.retry_after?;
        if stated > self.max_wait {
            return None;
        }
        let jitter = {
            // Held for one draw, which cannot panic.
            let mut rng = self
                .rng
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            rng.next_f64()
        };
        Some(stated + stated.mul_f64(0.1 * jitter))
    }
}

impl<S> Layer<S> for RateLimitRetryLayer {
    type Service = RateLimitRetry<S>;

    fn layer(&self, inner: S) -> RateLimitRetry<S> {
        RateLimitRetry {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service made by [`RateLimitRetryLayer`].
#[derive(Debug, Clone)]
pub struct RateLimitRetry<S> {
    inner: S,
    layer: RateLimitRetryLayer,
}

impl<S, R> Service<R> for RateLimitRetry<S>
where
    S: Service<R> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Classify + Send + 'static,
    S::Response: Send + 'static,
    R: Clone + Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = BoxFuture<Result<S::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: R) -> Self::Future {
        let layer = self.layer.clone();
        let mut next = self.inner.clone();
        let first = self.inner.call(request.clone());
        Box::pin(async move {
            let mut outcome = first.await;
            for _ in 0..layer.max_retries {
                let wait = match &outcome {
                    Err(error) => layer.wait_for(&error.failure()),
                    Ok(_) => None,
                };
                let Some(wait) = wait else { break };
                tokio::time::sleep(wait).await;
                std::future::poll_fn(|cx| next.poll_ready(cx)).await?;
                outcome = next.call(request.clone()).await;
            }
            outcome
        })
    }
}
