//! G5 Aggregates: when an attempt fails with several errors every child is
//! inspected, and a veto in any child wins whatever its position. No
//! decision is taken by parsing an error message.
//!
//! The layers are generic, so this test drives them with a synthetic
//! make-service whose errors carry any list of child failures, all with the
//! same message.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use mcp_connect::establish::stage::{self, EraSignals};
use mcp_connect::layers::classify::{ClassifyOutcome, FailureClassifierLayer};
use mcp_connect::layers::recovery::{Backoff, FreshSessionRecoveryLayer, RecoveryPolicy};
use mcp_connect::layers::{Child, Classify, Closure, Envelope, Failure, FailureKind};
use tower::{Service, ServiceBuilder, ServiceExt};

/// One child error; every one prints the same words.
#[derive(Debug)]
struct Part(Failure);

impl std::fmt::Display for Part {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection failed")
    }
}
impl std::error::Error for Part {}

/// An attempt that failed in several ways.
#[derive(Debug)]
struct Aggregate(Vec<Part>);

impl std::fmt::Display for Aggregate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("connection failed")
    }
}
impl std::error::Error for Aggregate {}

impl Classify for Aggregate {
    fn failure(&self) -> Failure {
        self.0[0].0
    }
    fn children(&self) -> Vec<Child<'_>> {
        self.0
            .iter()
            .map(|p| Child {
                failure: p.0,
                error: p,
            })
            .collect()
    }
}

type Request = Envelope<()>;

fn request() -> Request {
    Envelope::new(())
}

/// Every failure is an error: `()` is never a failure.
impl ClassifyOutcome<Aggregate> for () {
    type Error = Aggregate;
    fn classify_error(error: Aggregate) -> Aggregate {
        error
    }
}

/// A make-service that always fails with the same children, counting calls.
#[derive(Clone)]
struct AlwaysFails(Vec<Failure>, Arc<AtomicU32>);

impl Service<Request> for AlwaysFails {
    type Response = ();
    type Error = Aggregate;
    type Future = std::future::Ready<Result<(), Aggregate>>;
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Aggregate>> {
        Poll::Ready(Ok(()))
    }
    fn call(&mut self, _: Request) -> Self::Future {
        self.1.fetch_add(1, Ordering::SeqCst);
        std::future::ready(Err(Aggregate(self.0.iter().copied().map(Part).collect())))
    }
}

fn not_found() -> Failure {
    Failure::new(stage::INITIALIZE, FailureKind::HttpStatus).with_http_status(404)
}
fn unauthorized() -> Failure {
    Failure::new(stage::SSE_ENDPOINT, FailureKind::Auth).with_http_status(401)
}
fn reset() -> Failure {
    Failure::new(stage::SSE_ENDPOINT, FailureKind::Closed).with_closure(Closure::Reset)
}

async fn attempts_for(children: Vec<Failure>) -> (u32, Failure) {
    let calls = Arc::new(AtomicU32::new(0));
    let stack = ServiceBuilder::new()
        .layer(FreshSessionRecoveryLayer::new(
            RecoveryPolicy::new().with_backoff(Backoff::NONE),
        ))
        .layer(FailureClassifierLayer::new().with_policy(EraSignals))
        .service(AlwaysFails(children, Arc::clone(&calls)));
    let error = stack.oneshot(request()).await.unwrap_err();
    assert_eq!(error.attempts(), calls.load(Ordering::SeqCst));
    (error.attempts(), error.failure())
}

/// G5: an ineligible child stops recovery in either position.
#[tokio::test]
async fn an_ineligible_child_wins_in_either_position() {
    assert_eq!(
        attempts_for(vec![not_found(), unauthorized()]).await,
        (1, unauthorized())
    );
    assert_eq!(
        attempts_for(vec![unauthorized(), not_found()]).await,
        (1, unauthorized())
    );
}

/// G5: only when every child is eligible does recovery go on.
#[tokio::test]
async fn all_eligible_children_allow_fresh_attempts() {
    let (attempts, failure) = attempts_for(vec![not_found(), reset()]).await;
    assert_eq!(attempts, 3);
    assert_eq!(
        failure,
        not_found(),
        "the primary child of the first attempt"
    );
}

/// G5 and G6: an application veto is asked about every child, and wins in
/// any position; the words of the errors (all identical here) play no part.
#[tokio::test]
async fn a_veto_in_any_child_wins_and_every_child_is_inspected() {
    for children in [vec![not_found(), reset()], vec![reset(), not_found()]] {
        let inspected = Arc::new(AtomicU32::new(0));
        let seen = Arc::clone(&inspected);
        let calls = Arc::new(AtomicU32::new(0));
        let stack = ServiceBuilder::new()
            .layer(FreshSessionRecoveryLayer::new(
                RecoveryPolicy::new().with_backoff(Backoff::NONE),
            ))
            .layer(
                FailureClassifierLayer::new()
                    .with_policy(EraSignals)
                    .with_veto(move |child: &Child<'_>| {
                        seen.fetch_add(1, Ordering::SeqCst);
                        child.failure.closure == Some(Closure::Reset)
                    }),
            )
            .service(AlwaysFails(children.clone(), Arc::clone(&calls)));
        let error = stack.oneshot(request()).await.unwrap_err();
        assert_eq!(error.attempts(), 1, "{children:?}");
        assert_eq!(error.failure(), reset());
        assert!(inspected.load(Ordering::SeqCst) >= 1);
    }
}
