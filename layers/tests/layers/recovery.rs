//! FreshSessionRecoveryLayer on a synthetic make-service: the shared retry
//! budget and the backoff stop recovery as documented.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use mcp_connect_layers::classify::ClassifyOutcome;
use mcp_connect_layers::classify::FailureClassifierLayer;
use mcp_connect_layers::recovery::{Backoff, FreshSessionRecoveryLayer, RecoveryPolicy, Stop};
use mcp_connect_layers::{Classify, Closure, Envelope, Failure, FailureKind, Stage};
use tokio::time::Instant;
use tower::retry::budget::TpsBudget;
use tower::{Service, ServiceBuilder, ServiceExt};

#[derive(Debug)]
struct Reset;

impl std::fmt::Display for Reset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection reset")
    }
}
impl std::error::Error for Reset {}
impl Classify for Reset {
    fn failure(&self) -> Failure {
        Failure::new(Stage::HANDSHAKE, FailureKind::Closed).with_closure(Closure::Reset)
    }
}

type Request = Envelope<()>;

fn request() -> Request {
    Envelope::new(())
}

/// Every failure is an error: `()` is never a failure.
impl ClassifyOutcome<Reset> for () {
    type Error = Reset;
    fn classify_error(error: Reset) -> Reset {
        error
    }
}

#[derive(Clone)]
struct AlwaysResets(Arc<AtomicU32>);

impl<R> Service<R> for AlwaysResets {
    type Response = ();
    type Error = Reset;
    type Future = std::future::Ready<Result<(), Reset>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Reset>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, _: R) -> Self::Future {
        self.0.fetch_add(1, Ordering::SeqCst);
        std::future::ready(Err(Reset))
    }
}

/// Many establishments failing together draw on one budget: once it is
/// spent, each stops after its first attempt.
#[tokio::test(start_paused = true)]
async fn an_empty_shared_budget_stops_recovery() {
    // No minimum, 10% of deposits may be retried.
    let budget = Arc::new(TpsBudget::new(Duration::from_secs(10), 0, 0.1));
    let policy = RecoveryPolicy::new()
        .with_backoff(Backoff::NONE)
        .with_budget(budget);
    let calls = Arc::new(AtomicU32::new(0));
    let stack = ServiceBuilder::new()
        .layer(FreshSessionRecoveryLayer::new(policy))
        .layer(FailureClassifierLayer::new())
        .service(AlwaysResets(Arc::clone(&calls)));
    let mut stops = Vec::new();
    for _ in 0..20 {
        let error = stack.clone().oneshot(request()).await.unwrap_err();
        stops.push(error.stop());
    }
    let budgeted = stops.iter().filter(|s| **s == Stop::Budget).count();
    assert!(
        budgeted >= 15,
        "most establishments found the budget empty: {stops:?}"
    );
    assert!(
        calls.load(Ordering::SeqCst) < 20 * 3,
        "far fewer than 3 attempts each"
    );
}

/// The backoff sleeps between attempts (full jitter, never above the cap).
#[tokio::test(start_paused = true)]
async fn backoff_spaces_the_attempts_within_its_cap() {
    let policy = RecoveryPolicy::new()
        .with_max_attempts(3)
        .with_backoff(Backoff::new(Duration::from_secs(1), Duration::from_secs(2)));
    let calls = Arc::new(AtomicU32::new(0));
    let stack = ServiceBuilder::new()
        .layer(FreshSessionRecoveryLayer::new(policy))
        .layer(FailureClassifierLayer::new())
        .service(AlwaysResets(Arc::clone(&calls)));
    let started = Instant::now();
    let error = stack.oneshot(request()).await.unwrap_err();
    assert_eq!((error.attempts(), error.stop()), (3, Stop::MaxAttempts));
    assert!(
        started.elapsed() <= Duration::from_secs(3),
        "1 s + 2 s at most: {:?}",
        started.elapsed()
    );
}

/// Records when each attempt started.
#[derive(Clone)]
struct TimedResets(Arc<std::sync::Mutex<Vec<Instant>>>);

impl Service<Request> for TimedResets {
    type Response = ();
    type Error = Reset;
    type Future = std::future::Ready<Result<(), Reset>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Reset>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, _: Request) -> Self::Future {
        self.0.lock().unwrap().push(Instant::now());
        std::future::ready(Err(Reset))
    }
}

/// The delay before the second attempt of one establishment through `stack`.
async fn first_delay<S>(stack: &S, starts: &std::sync::Mutex<Vec<Instant>>) -> Duration
where
    S: Service<Request> + Clone,
{
    starts.lock().unwrap().clear();
    let _ = stack.clone().oneshot(request()).await;
    let starts = starts.lock().unwrap();
    starts[1] - starts[0]
}

/// Issue 10, item 10: establishments through one stack (one cloned policy)
/// draw their jitter independently, so a fleet that failed together does
/// not come back in lock-step; over many, the first delay is spread evenly
/// over `[0, base]`.
#[tokio::test(start_paused = true)]
async fn each_establishment_draws_its_own_jitter() {
    // Paused time sleeps in whole milliseconds: a long base keeps the
    // rounding from making equal delays out of different draws.
    let base = Duration::from_secs(1000);
    let policy = RecoveryPolicy::new()
        .with_max_attempts(2)
        .with_backoff(Backoff::new(base, base));
    let starts = Arc::new(std::sync::Mutex::new(Vec::new()));
    let stack = ServiceBuilder::new()
        .layer(FreshSessionRecoveryLayer::new(policy))
        .layer(FailureClassifierLayer::new())
        .service(TimedResets(Arc::clone(&starts)));

    let a = first_delay(&stack, &starts).await;
    let b = first_delay(&stack, &starts).await;
    assert_ne!(a, b, "two establishments waited exactly the same backoff");

    const RUNS: usize = 400;
    let mut delays = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        delays.push(first_delay(&stack, &starts).await.as_secs_f64() / 1000.0);
    }
    assert!(delays.iter().all(|d| (0.0..=1.0).contains(d)));
    let mut distinct = delays.clone();
    distinct.sort_by(f64::total_cmp);
    distinct.dedup();
    assert!(
        distinct.len() > RUNS * 95 / 100,
        "{} distinct",
        distinct.len()
    );
    // Uniform on [0, 1]: each quarter holds about 100 of 400; a quarter
    // below 60 or above 140 is more than 4.6 standard deviations out.
    for quarter in 0..4 {
        let low = quarter as f64 / 4.0;
        let count = delays
            .iter()
            .filter(|d| **d >= low && **d < low + 0.25)
            .count();
        assert!((60..=140).contains(&count), "quarter {quarter}: {count}");
    }
    // The mean of 400 uniform draws has a standard deviation of 0.0144:
    // 0.43..0.57 is about five of them, so this fails on a skew, not by chance.
    let mean = delays.iter().sum::<f64>() / RUNS as f64;
    assert!((0.43..=0.57).contains(&mean), "mean {mean}");
}

/// Issue 10, item 9: with recovery off the error says so, not "attempt cap".
#[tokio::test]
async fn with_recovery_off_the_error_says_so() {
    let stack = ServiceBuilder::new()
        .layer(FreshSessionRecoveryLayer::new(RecoveryPolicy::disabled()))
        .layer(FailureClassifierLayer::new())
        .service(AlwaysResets(Arc::new(AtomicU32::new(0))));
    let error = stack.oneshot(request()).await.unwrap_err();
    assert_eq!((error.attempts(), error.stop()), (1, Stop::RecoveryOff));
    let shown = error.to_string();
    assert_eq!(shown, "gave up after 1 attempt: recovery is off");
    assert!(!shown.contains("max_attempts"));
}

/// A backoff capped at `Duration::MAX` does not overflow the wake instant.
#[tokio::test(start_paused = true)]
async fn a_huge_backoff_ends_at_the_deadline_without_panicking() {
    let policy = RecoveryPolicy::new().with_backoff(Backoff::new(Duration::MAX, Duration::MAX));
    let stack = ServiceBuilder::new()
        .layer(FreshSessionRecoveryLayer::new(policy))
        .layer(FailureClassifierLayer::new())
        .service(AlwaysResets(Arc::new(AtomicU32::new(0))));
    let deadline = Instant::now() + Duration::from_secs(5);
    let error = stack
        .oneshot(Envelope::new(()).with_deadline(deadline))
        .await
        .unwrap_err();
    assert_eq!(error.stop(), Stop::Deadline);
    assert!(Instant::now() <= deadline + Duration::from_millis(1));
}
