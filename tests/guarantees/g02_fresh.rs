//! G2 Fresh: every attempt gets a new transport, session and (stdio)
//! process; identities differ, and the failed attempt is disposed exactly
//! once.

use std::collections::HashSet;
use std::time::Duration;

use crate::support::{
    alive, fixture, recovering, spawn_log, spawned, watchdog, Events, LegacyServer, Script,
    ScriptServer,
};
use mcp_connect::protocol::ProtocolVersion;
use mcp_connect::request::Limits;
use mcp_connect::ConnectRequest;

const LIMIT: Duration = Duration::from_secs(20);

/// A legacy server that misbehaves with `fault` on the first request of
/// `method`, then behaves.
async fn faulty_once(method: &'static str, fault: fn() -> Script) -> (ScriptServer, LegacyServer) {
    let legacy = LegacyServer::new();
    let responder = legacy.clone();
    let seen = std::sync::atomic::AtomicBool::new(false);
    let server = ScriptServer::start(move |r| {
        if r.rpc_method() == method && !seen.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return fault();
        }
        responder.respond(r)
    })
    .await;
    (server, legacy)
}

async fn assert_fresh_after(method: &'static str, fault: fn() -> Script, limits: Limits) {
    let (server, legacy) = faulty_once(method, fault).await;
    let events = Events::new();
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_limits(limits)
        .with_observer(events.clone());
    let session = watchdog(LIMIT, recovering(3).connect(request))
        .await
        .unwrap();
    assert_eq!(
        events.attempts(),
        2,
        "{method}: one failed attempt, one fresh one"
    );
    // The second attempt ran on its own TCP connection.
    let recorded = server.recorded();
    let first_attempt_connection = recorded
        .iter()
        .find(|r| r.rpc_method() == method)
        .unwrap()
        .connection();
    let last_connection = recorded.last().unwrap().connection();
    assert_ne!(
        first_attempt_connection, last_connection,
        "{method}: a new connection"
    );
    assert_eq!(session.protocol_version(), &ProtocolVersion::V2025_11_25);
    session.close().await.unwrap();
    let _ = legacy;
}

/// G2: transport closure (the connection closed before the reply's headers).
#[tokio::test]
async fn fresh_attempt_after_transport_closure_runs_on_a_new_connection() {
    assert_fresh_after(
        "initialize",
        || Script::CloseBeforeHeaders,
        Limits::default(),
    )
    .await;
}

/// G2: an I/O failure (the connection broke in the middle of the reply body).
#[tokio::test]
async fn fresh_attempt_after_a_broken_reply_runs_on_a_new_connection() {
    assert_fresh_after(
        "initialize",
        || Script::BreakMidBody("application/json", "{\"jsonrpc\":\"2.0\",".into()),
        Limits::default(),
    )
    .await;
}

/// G2: an `initialize` that never answers, cut by the handshake limit.
#[tokio::test(start_paused = true)]
async fn fresh_attempt_after_an_initialize_timeout_runs_on_a_new_connection() {
    let limits = Limits::default().with_handshake_timeout(Duration::from_millis(300));
    assert_fresh_after("initialize", || Script::Stall, limits).await;
}

/// G2: a session that was opened and then failed is a different session
/// from the one that is returned, and it was ended exactly once.
#[tokio::test]
async fn fresh_attempt_gets_a_new_session_and_the_failed_one_is_deleted_once() {
    let (server, legacy) =
        faulty_once("notifications/initialized", || Script::ResetBeforeHeaders).await;
    let session = watchdog(
        LIMIT,
        recovering(3).connect(ConnectRequest::http(&server.url()).unwrap()),
    )
    .await
    .unwrap();
    assert_eq!(legacy.sessions_created(), 2);
    assert_eq!(
        session.server_info().version,
        "2",
        "the returned session is the second one"
    );
    let deletes: Vec<_> = server
        .recorded()
        .into_iter()
        .filter(|r| r.method == http::Method::DELETE)
        .map(|r| r.header("mcp-session-id").unwrap().to_owned())
        .collect();
    assert_eq!(
        deletes,
        ["session-1"],
        "the failed session was ended exactly once"
    );
    assert_eq!(legacy.open_sessions(), 1);
    session.close().await.unwrap();
    assert_eq!(legacy.open_sessions(), 0);
}

/// G2: over stdio every attempt is a new process, and the failed one is
/// reaped.
#[tokio::test]
async fn fresh_attempt_over_stdio_spawns_a_new_process() {
    let log = spawn_log("g02");
    let log_arg = log.to_str().unwrap();
    let command = fixture(&[
        "--spawn-log",
        log_arg,
        "--faulty-spawns",
        "1",
        "--exit-on",
        "initialize",
    ]);
    let events = Events::new();
    let request = ConnectRequest::stdio(command).with_observer(events.clone());
    let session = watchdog(LIMIT, recovering(3).connect(request))
        .await
        .unwrap();
    let pids = spawned(&log);
    assert_eq!(pids.len(), 2);
    assert_eq!(
        pids.iter().collect::<HashSet<_>>().len(),
        2,
        "distinct processes"
    );
    assert!(!alive(pids[0]), "the failed attempt's process was reaped");
    assert_eq!(session.server_info().version, pids[1].to_string());
    assert_eq!(events.attempts(), 2);
    session.close().await.unwrap();
    assert!(!alive(pids[1]));
}
