//! G3 Finite: attempts are bounded by count and by the overall deadline; no
//! attempt starts after the deadline or after caller cancellation.

use std::time::{Duration, Instant};

use crate::support::{recovering, watchdog, Events, LegacyServer, Script, ScriptServer};
use mcp_connect::layers::recovery::{Backoff, RecoveryPolicy, Stop};
use mcp_connect::layers::{CancelSource, FailureKind};
use mcp_connect::request::Limits;
use mcp_connect::{ConnectRequest, Connector, EstablishBuilder};
use tokio_util::sync::CancellationToken;

const LIMIT: Duration = Duration::from_secs(20);

async fn resets_every_initialize() -> ScriptServer {
    let legacy = LegacyServer::new();
    ScriptServer::start(move |r| match r.rpc_method() {
        "initialize" => Script::ResetBeforeHeaders,
        "" if r.method == http::Method::GET => Script::ResetBeforeHeaders,
        _ => legacy.respond(r),
    })
    .await
}

/// G3: attempts never exceed the cap.
#[tokio::test]
async fn attempts_never_exceed_the_cap() {
    for cap in [1, 2, 3, 5] {
        let server = resets_every_initialize().await;
        let events = Events::new();
        let request = ConnectRequest::http(&server.url())
            .unwrap()
            .with_observer(events.clone());
        let error = watchdog(LIMIT, recovering(cap).connect(request))
            .await
            .unwrap_err();
        assert_eq!(error.attempts(), cap);
        assert_eq!(events.attempts(), cap);
        // A cap of one is recovery off, and the error says so.
        let stop = if cap == 1 {
            Stop::RecoveryOff
        } else {
            Stop::MaxAttempts
        };
        assert_eq!(error.stop(), stop);
    }
}

/// G3: no attempt and no backoff starts after the deadline.
#[tokio::test(start_paused = true)]
async fn no_attempt_starts_after_the_deadline() {
    let legacy = LegacyServer::new();
    let server = ScriptServer::start(move |r| match r.rpc_method() {
        "initialize" => Script::Stall,
        _ => legacy.respond(r),
    })
    .await;
    let limits = Limits::default().with_handshake_timeout(Duration::from_millis(250));
    let deadline = tokio::time::Instant::now() + Duration::from_millis(600);
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_limits(limits)
        .with_deadline(deadline);
    let started = Instant::now();
    let error = watchdog(LIMIT, recovering(10).connect(request))
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert!(
        took < Duration::from_millis(600) + Duration::from_millis(400),
        "{took:?}"
    );
    assert!(
        error.attempts() < 10,
        "the deadline, not the cap, ended it: {}",
        error.attempts()
    );
    assert_eq!(error.stop(), Stop::Deadline);
    let failure = error.failure();
    assert_eq!(
        (failure.kind, failure.cancel_source),
        (FailureKind::Timeout, Some(CancelSource::Deadline))
    );
    let requests_at_return = server.recorded().len();
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        server.recorded().len(),
        requests_at_return,
        "nothing starts after the deadline"
    );
}

/// G3: the caller's cancellation during a backoff ends recovery at once.
#[tokio::test(start_paused = true)]
async fn cancellation_during_backoff_stops_recovery() {
    let server = resets_every_initialize().await;
    let token = CancellationToken::new();
    let stack = EstablishBuilder::new(Connector::new())
        .with_recovery(RecoveryPolicy::new().with_backoff(Backoff::new(
            Duration::from_secs(30),
            Duration::from_secs(30),
        )))
        .build();
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_cancellation(token.clone());
    let canceller = async {
        while server.count("initialize") == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        token.cancel();
    };
    let started = Instant::now();
    let (outcome, ()) = watchdog(LIMIT, async {
        tokio::join!(stack.connect(request), canceller)
    })
    .await;
    let error = outcome.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(5));
    // The full-jitter delay may be short enough to start attempt 2 before the
    // cancel; either way the caller's cancellation is what is reported.
    let failure = error.failure();
    assert_eq!(
        (failure.kind, failure.cancel_source),
        (FailureKind::Cancelled, Some(CancelSource::Caller))
    );
    let requests_at_return = server.recorded().len();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        server.recorded().len(),
        requests_at_return,
        "nothing starts after cancellation"
    );
}

/// Issue 17 (found by the soak): a server that never answers the `DELETE`
/// that ends its session cannot hold `close` past the close grace; the
/// session is closed all the same and the timeout is typed.
#[tokio::test]
async fn a_stalled_delete_cannot_hold_close() {
    let legacy = LegacyServer::new();
    let server = ScriptServer::start(move |r| match r.method {
        http::Method::DELETE => Script::Stall,
        _ => legacy.respond(r),
    })
    .await;
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_pin(mcp_connect::protocol::ProtocolVersion::V2025_11_25)
        .with_limits(Limits::default().with_close_grace(Duration::from_millis(200)));
    let session = watchdog(
        LIMIT,
        EstablishBuilder::new(Connector::new())
            .build()
            .connect(request),
    )
    .await
    .unwrap();
    let started = Instant::now();
    let error = watchdog(LIMIT, session.close()).await.unwrap_err();
    assert!(
        started.elapsed() < Duration::from_millis(1200),
        "{:?}",
        started.elapsed()
    );
    assert!(matches!(
        error.kind(),
        mcp_connect::ErrorKind::Transport(mcp_connect::error::TransportError::CloseTimedOut)
    ));
    assert_eq!(error.failure().kind, FailureKind::Timeout);
    assert!(session.state() != mcp_connect::session::SessionState::Open);
    // Closing again sends nothing more.
    watchdog(LIMIT, session.close()).await.unwrap();
    let deletes = server
        .recorded()
        .iter()
        .filter(|r| r.method == http::Method::DELETE)
        .count();
    assert_eq!(deletes, 1);
}
