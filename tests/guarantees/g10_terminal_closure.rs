//! G10 Terminal closure: a transport that closes faults every pending
//! waiter at once, stops its receive loop, and is never returned as a
//! usable session.

use mcp_connect::establish::stage;
use std::time::{Duration, Instant};

use crate::support::sse_server::{SseBehaviour, SseServer};
use crate::support::{fixture, watchdog, LegacyServer, Script, ScriptServer};
use mcp_connect::layers::{Closure, FailureKind};
use mcp_connect::request::{Limits, TransportMode};
use mcp_connect::session::SessionState;
use mcp_connect::{ConnectRequest, Connector};
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(20);

/// G10: EOF and reset while `initialize` is in flight end the attempt with
/// the closure category; no session is returned.
#[tokio::test]
async fn eof_and_reset_during_initialize_are_closures() {
    for (fault, closure) in [
        (
            (|| Script::CloseBeforeHeaders) as fn() -> Script,
            Closure::Reset,
        ),
        (
            || Script::BreakMidBody("text/event-stream", "id: 1\ndata:\n\n".into()),
            Closure::Reset,
        ),
        (|| Script::ResetBeforeHeaders, Closure::Reset),
    ] {
        let legacy = LegacyServer::new();
        let server = ScriptServer::start(move |r| match r.rpc_method() {
            "initialize" => fault(),
            _ => legacy.respond(r),
        })
        .await;
        let request = ConnectRequest::http(&server.url())
            .unwrap()
            .with_mode(TransportMode::StreamableHttp);
        let error = watchdog(LIMIT, Connector::new().connect(request))
            .await
            .unwrap_err();
        let failure = error.failure();
        assert_eq!(
            (failure.stage, failure.kind, failure.closure),
            (stage::INITIALIZE, FailureKind::Closed, Some(closure))
        );
    }
    // Over stdio: the child exits during initialize.
    let request =
        ConnectRequest::stdio(fixture(&["--exit-on", "initialize"])).with_limits(Limits::default());
    let error = watchdog(LIMIT, Connector::new().connect(request))
        .await
        .unwrap_err();
    assert_eq!(error.failure().closure, Some(Closure::ProcessExit));
}

/// G10: every pending waiter completes with the closure when the SSE stream
/// ends, and later requests fail fast.
#[tokio::test]
async fn pending_waiters_fail_at_once_when_the_stream_ends() {
    let server = SseServer::start(SseBehaviour {
        close_on_call: true,
        ..SseBehaviour::default()
    })
    .await;
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_mode(TransportMode::Sse);
    let session = watchdog(LIMIT, Connector::new().connect(request))
        .await
        .unwrap();
    let started = Instant::now();
    // Several requests wait on the stream; the first tools/call makes the server close it.
    let pending = {
        let args = json!({});
        futures_util::future::join_all((0..4).map(|_| session.call_tool("x", &args))).await
    };
    let results = pending;
    assert!(started.elapsed() < Duration::from_secs(2));
    for result in results {
        assert_eq!(result.unwrap_err().failure().closure, Some(Closure::Eof));
    }
    assert_eq!(session.state(), SessionState::Closed(Closure::Eof));
}

/// G10: when a stdio server dies, every waiter completes with the closure,
/// and the session's tasks stop by themselves.
#[tokio::test(flavor = "current_thread")]
async fn child_exit_fails_waiters_and_leaves_no_task_running() {
    let metrics = tokio::runtime::Handle::current().metrics();
    let before = metrics.num_alive_tasks();
    let request = ConnectRequest::stdio(fixture(&["--exit-on", "tools/call"]))
        .with_limits(Limits::default().with_close_grace(Duration::from_millis(100)));
    let session = watchdog(LIMIT, Connector::new().connect(request))
        .await
        .unwrap();
    assert!(
        metrics.num_alive_tasks() > before,
        "the session runs its reader"
    );
    let started = Instant::now();
    let waiting = {
        let args = json!({});
        futures_util::future::join_all((0..3).map(|_| session.call_tool("x", &args))).await
    };
    for result in waiting {
        assert_eq!(
            result.unwrap_err().failure().closure,
            Some(Closure::ProcessExit)
        );
    }
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(session.state(), SessionState::Closed(Closure::ProcessExit));
    watchdog(LIMIT, async {
        while metrics.num_alive_tasks() > before {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    session.close().await.unwrap();
}

/// G10: an HTTP session the server forgot (404) is terminal with the
/// session-expired category, and the session is never reused.
#[tokio::test]
async fn an_expired_http_session_is_terminal() {
    let legacy = LegacyServer::new();
    let server = ScriptServer::start(legacy.clone().responder()).await;
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_mode(TransportMode::StreamableHttp);
    let session = watchdog(LIMIT, Connector::new().connect(request))
        .await
        .unwrap();
    legacy.expire_sessions();
    let pending = {
        let args = json!({});
        futures_util::future::join_all((0..3).map(|_| session.call_tool("x", &args))).await
    };
    for result in pending {
        assert_eq!(
            result.unwrap_err().failure().closure,
            Some(Closure::SessionExpired)
        );
    }
    let before = server.recorded().len();
    assert!(session.call_tool("x", &json!({})).await.is_err());
    assert_eq!(server.recorded().len(), before, "fails fast, nothing sent");
}
