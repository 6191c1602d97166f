//! DeadlineLayer on synthetic services, in paused time: the clock starts
//! before readiness, `poll_ready` is bounded, the deadline travels down, and
//! the call returns by deadline + cleanup bound even if the inner service
//! ignores it.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use mcp_connect_layers::deadline::{DeadlineError, DeadlineLayer};
use mcp_connect_layers::{Envelope, Establishment};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tower::{Layer, Service, ServiceExt};

type Request = Envelope<()>;

fn request() -> Request {
    Envelope::new(())
}

/// Ready after `ready_after`; answers after `answer_after` (never if `None`);
/// records the request it was given.
#[derive(Clone)]
struct Slow {
    ready_at: Option<Instant>,
    answer_after: Option<Duration>,
    seen: Arc<Mutex<Option<Request>>>,
}

impl Service<Request> for Slow {
    type Response = ();
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = Result<(), std::io::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), std::io::Error>> {
        match self.ready_at {
            None => Poll::Ready(Ok(())),
            Some(at) if Instant::now() >= at => Poll::Ready(Ok(())),
            Some(at) => {
                let waker = cx.waker().clone();
                tokio::spawn(async move {
                    tokio::time::sleep_until(at).await;
                    waker.wake();
                });
                Poll::Pending
            }
        }
    }

    fn call(&mut self, request: Request) -> Self::Future {
        *self.seen.lock().unwrap() = Some(request);
        let after = self.answer_after;
        Box::pin(async move {
            match after {
                Some(after) => tokio::time::sleep(after).await,
                None => std::future::pending().await,
            }
            Ok(())
        })
    }
}

fn slow(
    ready_after: Option<Duration>,
    answer_after: Option<Duration>,
) -> (Slow, Arc<Mutex<Option<Request>>>) {
    let seen = Arc::new(Mutex::new(None));
    let service = Slow {
        ready_at: ready_after.map(|d| Instant::now() + d),
        answer_after,
        seen: Arc::clone(&seen),
    };
    (service, seen)
}

fn layer() -> DeadlineLayer {
    DeadlineLayer::new(Duration::from_secs(10)).with_cleanup_bound(Duration::from_secs(2))
}

#[tokio::test(start_paused = true)]
async fn poll_ready_is_bounded_by_the_budget() {
    let (inner, seen) = slow(Some(Duration::from_secs(3600)), Some(Duration::ZERO));
    let started = Instant::now();
    let outcome = layer().layer(inner).oneshot(request()).await;
    assert!(matches!(outcome, Err(DeadlineError::Elapsed)));
    assert_eq!(started.elapsed(), Duration::from_secs(10));
    assert!(seen.lock().unwrap().is_none(), "never called");
}

#[tokio::test(start_paused = true)]
async fn the_clock_starts_before_readiness_and_the_deadline_travels_down() {
    let (inner, seen) = slow(Some(Duration::from_secs(4)), Some(Duration::ZERO));
    let started = Instant::now();
    layer().layer(inner).oneshot(request()).await.unwrap();
    let request = seen.lock().unwrap().clone().unwrap();
    assert_eq!(
        request.started(),
        Some(started),
        "the start is the first poll_ready"
    );
    assert_eq!(
        request.deadline(),
        Some(started + Duration::from_secs(10)),
        "not reset by the wait"
    );
}

#[tokio::test(start_paused = true)]
async fn an_earlier_deadline_in_the_request_wins() {
    let (inner, seen) = slow(None, Some(Duration::ZERO));
    let earlier = Instant::now() + Duration::from_secs(3);
    let request = request().with_deadline(earlier);
    layer().layer(inner).oneshot(request).await.unwrap();
    assert_eq!(
        seen.lock().unwrap().as_ref().unwrap().deadline(),
        Some(earlier)
    );
}

#[tokio::test(start_paused = true)]
async fn an_inner_service_that_ignores_the_deadline_is_cut_at_deadline_plus_cleanup() {
    let (inner, _) = slow(None, None);
    let started = Instant::now();
    let outcome = layer().layer(inner).oneshot(request()).await;
    assert!(matches!(outcome, Err(DeadlineError::Elapsed)));
    assert_eq!(started.elapsed(), Duration::from_secs(12));
}

#[tokio::test(start_paused = true)]
async fn cancellation_shortens_the_cut_to_the_cleanup_bound() {
    let (inner, _) = slow(None, None);
    let token = CancellationToken::new();
    let request = request().with_cancellation(token.clone());
    let canceller = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_secs(1)).await;
        token.cancel();
    });
    let started = Instant::now();
    let outcome = layer().layer(inner).oneshot(request).await;
    canceller.await.unwrap();
    assert!(matches!(outcome, Err(DeadlineError::Cancelled)));
    assert_eq!(started.elapsed(), Duration::from_secs(3));
}

#[tokio::test(start_paused = true)]
async fn a_response_ready_at_the_cut_wins() {
    let (inner, _) = slow(None, Some(Duration::from_secs(12)));
    let outcome = layer().layer(inner).oneshot(request()).await;
    assert!(
        outcome.is_ok(),
        "the inner future is polled before the timer"
    );
}

/// A budget and a cleanup bound of `Duration::MAX` ("no limit") saturate at
/// a far-future deadline instead of overflowing `Instant` (a panic through
/// the public API before).
#[tokio::test(start_paused = true)]
async fn a_budget_of_duration_max_means_no_limit_without_panicking() {
    let (service, seen) = slow(Some(Duration::from_millis(5)), Some(Duration::from_secs(1)));
    let layer = DeadlineLayer::new(Duration::MAX).with_cleanup_bound(Duration::MAX);
    let started = Instant::now();
    layer.layer(service).oneshot(request()).await.unwrap();
    let deadline = seen.lock().unwrap().as_ref().unwrap().deadline().unwrap();
    assert!(deadline > started + Duration::from_secs(86_400 * 365));
}
