//! G13 Precedence: on exhaustion the first attempt's error (with its source
//! chain) is primary and later attempts are listed separately; caller
//! cancellation and security failures are never hidden behind a
//! compatibility error; a failing cleanup never replaces the primary error.

use mcp_connect::establish::stage;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::support::{recovering, watchdog, LegacyServer, Script, ScriptServer};
use mcp_connect::error::TransportError;
use mcp_connect::layers::recovery::Stop;
use mcp_connect::layers::{CancelSource, Classify, Closure, FailureKind};
use mcp_connect::request::{Limits, TransportMode};
use mcp_connect::{ConnectRequest, ErrorKind};
use tokio_util::sync::CancellationToken;

const LIMIT: Duration = Duration::from_secs(20);

/// A server whose n-th `initialize` (from 1) gets `script(n)`.
async fn initialize_by_attempt(script: fn(u32) -> Option<Script>) -> ScriptServer {
    let legacy = LegacyServer::new();
    let n = AtomicU32::new(0);
    ScriptServer::start(move |r| {
        if r.rpc_method() == "initialize" {
            if let Some(fault) = script(n.fetch_add(1, Ordering::SeqCst) + 1) {
                return fault;
            }
        }
        legacy.respond(r)
    })
    .await
}

/// G13: the first attempt's error is primary, with its source chain; the
/// later ones are kept in order.
#[tokio::test]
async fn first_attempts_error_is_primary_and_later_ones_are_listed() {
    let server = initialize_by_attempt(|n| {
        Some(if n == 1 {
            Script::ResetBeforeHeaders
        } else {
            Script::Status(404)
        })
    })
    .await;
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_mode(TransportMode::StreamableHttp);
    let error = watchdog(LIMIT, recovering(3).connect(request))
        .await
        .unwrap_err();
    assert_eq!(error.stop(), Stop::MaxAttempts);
    let primary = error.error().unwrap();
    assert!(
        matches!(
            primary.kind(),
            ErrorKind::Transport(TransportError::Interrupted(_))
        ),
        "{primary:?}"
    );
    assert!(
        std::error::Error::source(primary).is_some(),
        "the primary keeps its chain"
    );
    assert_eq!(error.later().len(), 2);
    for later in error.later() {
        assert_eq!(later.failure().http_status, Some(404));
    }
    let failure = error.failure();
    assert_eq!(
        (failure.stage, failure.closure),
        (stage::INITIALIZE, Some(Closure::Reset))
    );
    assert!(std::error::Error::source(&error).is_some());
}

/// G13: a security failure on a later attempt is what is reported, never
/// hidden behind the first attempt's compatibility error.
#[tokio::test]
async fn a_later_security_failure_is_reported_as_such() {
    let server = initialize_by_attempt(|n| {
        Some(if n == 1 {
            Script::Status(404)
        } else {
            Script::Status(403)
        })
    })
    .await;
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_mode(TransportMode::StreamableHttp);
    let error = watchdog(LIMIT, recovering(3).connect(request))
        .await
        .unwrap_err();
    assert_eq!((error.attempts(), error.stop()), (2, Stop::NotEligible));
    assert_eq!(error.primary().unwrap().failure().http_status, Some(404));
    let failure = error.failure();
    assert_eq!(
        (failure.kind, failure.http_status),
        (FailureKind::Auth, Some(403))
    );
}

/// G13: a caller cancellation during a later attempt is reported as the
/// caller's, not as the first attempt's failure and not as a timeout.
#[tokio::test]
async fn a_later_cancellation_is_reported_as_the_callers() {
    let server = initialize_by_attempt(|n| {
        Some(if n == 1 {
            Script::ResetBeforeHeaders
        } else {
            Script::Stall
        })
    })
    .await;
    let token = CancellationToken::new();
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_cancellation(token.clone());
    let cancel = async {
        while server.count("initialize") < 2 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        token.cancel();
    };
    let stack = recovering(3);
    let (outcome, ()) = watchdog(LIMIT, async {
        tokio::join!(stack.connect(request), cancel)
    })
    .await;
    let error = outcome.unwrap_err();
    assert_eq!((error.attempts(), error.stop()), (2, Stop::Cancelled));
    let failure = error.failure();
    assert_eq!(
        (failure.kind, failure.cancel_source),
        (FailureKind::Cancelled, Some(CancelSource::Caller))
    );
    assert_eq!(
        error.primary().unwrap().failure().closure,
        Some(Closure::Reset)
    );
}

/// G13: when disposing the failed attempt fails too (its DELETE is reset),
/// the attempt's own error stays the error.
#[tokio::test]
async fn a_failing_cleanup_never_replaces_the_primary_error() {
    let legacy = LegacyServer::new();
    let server = ScriptServer::start(move |r| match (r.method.as_str(), r.rpc_method()) {
        (_, "notifications/initialized") => Script::ResetBeforeHeaders,
        ("DELETE", _) => Script::ResetBeforeHeaders,
        _ => legacy.respond(r),
    })
    .await;
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_mode(TransportMode::StreamableHttp)
        .with_limits(Limits::default());
    let error = watchdog(LIMIT, recovering(1).connect(request))
        .await
        .unwrap_err();
    assert_eq!(
        server.methods().last().map(String::as_str),
        Some("DELETE"),
        "disposal was attempted"
    );
    let failure = error.failure();
    assert_eq!(
        (failure.stage, failure.kind, failure.closure),
        (
            stage::INITIALIZED,
            FailureKind::Closed,
            Some(Closure::Reset)
        )
    );
    assert_eq!(error.children().len(), 1, "nothing about the cleanup");
}
