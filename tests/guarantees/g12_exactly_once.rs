//! G12 Exactly once: partial sessions, transports, streams and child
//! processes are disposed exactly once; caller-owned HTTP clients and other
//! sessions are never disposed.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use crate::support::sse_server::{SseBehaviour, SseServer};
use crate::support::{
    alive, fixture, recovering_with, spawn_log, spawned, watchdog, LegacyServer, Script,
    ScriptServer,
};
use mcp_connect::demo::DemoServer;
use mcp_connect::request::{Limits, TransportMode};
use mcp_connect::transport::HttpClient;
use mcp_connect::{ConnectRequest, Connector};

const LIMIT: Duration = Duration::from_secs(30);

/// G12: every partial HTTP session is ended with exactly one DELETE, the
/// returned one with none until the caller closes it.
#[tokio::test]
async fn partial_sessions_are_deleted_exactly_once() {
    let legacy = LegacyServer::new();
    let responder = legacy.clone();
    let failures = AtomicU32::new(0);
    let server = ScriptServer::start(move |r| match r.rpc_method() {
        "notifications/initialized" if failures.fetch_add(1, Ordering::SeqCst) < 2 => {
            Script::ResetBeforeHeaders
        }
        _ => responder.respond(r),
    })
    .await;
    let client = HttpClient::default_client();
    let stack = recovering_with(Connector::with_client(client), 3);
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_mode(TransportMode::StreamableHttp);
    let session = watchdog(LIMIT, stack.connect(request)).await.unwrap();
    let mut deletes: HashMap<String, u32> = HashMap::new();
    for r in server
        .recorded()
        .iter()
        .filter(|r| r.method == http::Method::DELETE)
    {
        *deletes
            .entry(r.header("mcp-session-id").unwrap().to_owned())
            .or_default() += 1;
    }
    assert_eq!(
        deletes,
        HashMap::from([("session-1".to_owned(), 1), ("session-2".to_owned(), 1)])
    );
    assert_eq!(
        legacy.open_sessions(),
        1,
        "only the returned session is open"
    );
    session.close().await.unwrap();
    session.close().await.unwrap();
    assert_eq!(
        legacy.sessions_deleted(),
        3,
        "the caller's close ends the third, once"
    );
}

/// G12: every failed attempt's SSE stream is closed.
#[tokio::test(start_paused = true)]
async fn failed_attempts_close_their_sse_streams() {
    let behaviour = SseBehaviour {
        stall_initialize: true,
        ..SseBehaviour::default()
    };
    let server = SseServer::start(behaviour).await;
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_mode(TransportMode::Sse)
        .with_limits(Limits::default().with_handshake_timeout(Duration::from_millis(200)));
    let error = watchdog(LIMIT, recovering_with(Connector::new(), 2).connect(request))
        .await
        .unwrap_err();
    assert_eq!(error.attempts(), 2);
    assert_eq!(
        server.log().iter().filter(|l| l.starts_with("GET")).count(),
        2
    );
    watchdog(LIMIT, async {
        while server.open_streams() > 0 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
}

/// G12: every failed attempt's child process is stopped and reaped.
#[tokio::test]
async fn failed_attempts_reap_their_processes() {
    let log = spawn_log("g12");
    let command = fixture(&[
        "--spawn-log",
        log.to_str().unwrap(),
        "--stall-on",
        "initialize",
        "--ignore-eof",
    ]);
    let request = ConnectRequest::stdio(command).with_limits(
        Limits::default()
            .with_handshake_timeout(Duration::from_millis(200))
            .with_close_grace(Duration::from_millis(100)),
    );
    let error = watchdog(LIMIT, recovering_with(Connector::new(), 3).connect(request))
        .await
        .unwrap_err();
    assert_eq!(error.attempts(), 3);
    let pids = spawned(&log);
    assert_eq!(pids.len(), 3);
    for pid in pids {
        assert!(!alive(pid), "process {pid} was reaped");
    }
}

/// G12: the caller's HTTP client is never closed: it still works after
/// every kind of failure.
#[tokio::test]
async fn the_callers_http_client_still_works_after_every_failure() {
    let client = HttpClient::default_client();
    let connector = Connector::with_client(client.clone());
    for fault in [
        Script::ResetBeforeHeaders,
        Script::CloseBeforeHeaders,
        Script::Status(500),
    ] {
        let fault = std::sync::Mutex::new(Some(fault));
        let server = ScriptServer::start(move |_| {
            fault.lock().unwrap().take().unwrap_or(Script::Status(503))
        })
        .await;
        let _ = watchdog(
            LIMIT,
            recovering_with(connector.clone(), 2)
                .connect(ConnectRequest::http(&server.url()).unwrap()),
        )
        .await
        .unwrap_err();
    }
    let demo = DemoServer::start().await.unwrap();
    let session = watchdog(
        LIMIT,
        Connector::with_client(client).connect(ConnectRequest::http(&demo.url()).unwrap()),
    )
    .await
    .unwrap();
    session.close().await.unwrap();
}
