//! G11 Races: cancellation racing a late successful handshake disposes the
//! session that will not be returned and starts no further stage.

use mcp_connect::establish::stage;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::{alive, fixture, spawn_log, spawned, watchdog, LegacyServer, ScriptServer};
use mcp_connect::layers::{CancelSource, FailureKind, StageEvent, StageObserver, StageOutcome};
use mcp_connect::request::{Limits, TransportMode};
use mcp_connect::{ConnectRequest, Connector, EstablishBuilder};
use tokio_util::sync::CancellationToken;

const LIMIT: Duration = Duration::from_secs(20);

/// G11: the caller cancels exactly as the last handshake step succeeds; the
/// caller gets the cancellation and the server sees the session ended.
#[tokio::test]
async fn cancellation_racing_a_late_success_disposes_the_session() {
    let token = CancellationToken::new();
    let trigger = Arc::new(Mutex::new(Some(token.clone())));
    let legacy = LegacyServer::new();
    let responder = legacy.clone();
    let server = ScriptServer::start(move |r| {
        if r.rpc_method() == "notifications/initialized" {
            // The server accepts the last step and, in the same instant, the caller cancels.
            if let Some(token) = trigger.lock().unwrap().take() {
                token.cancel();
            }
        }
        responder.respond(r)
    })
    .await;
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_mode(TransportMode::StreamableHttp)
        .with_cancellation(token);
    let stack = EstablishBuilder::new(Connector::new()).build();
    let error = watchdog(LIMIT, stack.connect(request)).await.unwrap_err();
    let failure = error.failure();
    assert_eq!(
        (failure.kind, failure.cancel_source),
        (FailureKind::Cancelled, Some(CancelSource::Caller))
    );
    assert_eq!(legacy.sessions_created(), 1);
    assert_eq!(
        legacy.sessions_deleted(),
        1,
        "the session that will not be returned was ended"
    );
    assert_eq!(
        server.methods().last().map(String::as_str),
        Some("DELETE"),
        "no further stage"
    );
}

/// Cancels the caller's token the moment the last handshake step succeeds.
#[derive(Debug)]
struct CancelOnSuccess(CancellationToken);

impl StageObserver for CancelOnSuccess {
    fn on_event(&self, event: &StageEvent) {
        if event.stage == stage::INITIALIZED && event.outcome == StageOutcome::Succeeded {
            self.0.cancel();
        }
    }
}

/// G11: the same race over stdio: the handshake succeeds and the caller
/// cancels in the same instant; the process that will not be returned exits
/// and is reaped.
#[tokio::test]
async fn cancellation_racing_a_late_stdio_success_reaps_the_process() {
    let log = spawn_log("g11");
    let token = CancellationToken::new();
    let request = ConnectRequest::stdio(fixture(&["--spawn-log", log.to_str().unwrap()]))
        .with_limits(Limits::default().with_close_grace(Duration::from_millis(100)))
        .with_cancellation(token.clone())
        .with_observer(Arc::new(CancelOnSuccess(token)));
    let outcome = watchdog(LIMIT, Connector::new().connect(request)).await;
    let failure = outcome.unwrap_err().failure();
    assert_eq!(
        (failure.kind, failure.cancel_source),
        (FailureKind::Cancelled, Some(CancelSource::Caller))
    );
    let pids = spawned(&log);
    assert_eq!(pids.len(), 1);
    assert!(!alive(pids[0]), "process {} was reaped", pids[0]);
}

/// G11: a session that is returned was open at the moment of transfer.
#[tokio::test]
async fn a_returned_session_is_open() {
    let server = ScriptServer::start(LegacyServer::new().responder()).await;
    let token = CancellationToken::new();
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_cancellation(token.clone());
    let session = watchdog(LIMIT, Connector::new().connect(request))
        .await
        .unwrap();
    token.cancel();
    assert_eq!(
        session.state(),
        mcp_connect::session::SessionState::Open,
        "the caller owns it now"
    );
}
