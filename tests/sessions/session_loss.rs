//! G16 (issue 24, items 1 and 2): the session-loss rule the long-lived
//! client, replay and the command share. A restarted server that answers
//! the old session id with 400 and a JSON-RPC error without id leaves the
//! client on a new session, not stuck; a 400 naming the request does not;
//! a server that refuses every new session the same way is not
//! reconnected to in a loop; the application widens or narrows the rule;
//! a session already known to be dead is replaced before a call is sent.

use std::time::Duration;

use crate::support::{watchdog, LegacyServer, Script, ScriptServer};
use mcp_connect::client::replay::ReplayPolicy;
use mcp_connect::client::session_loss::LossReason;
use mcp_connect::client::ClientError;
use mcp_connect::client::McpClientBuilder;
use mcp_connect::protocol::ProtocolVersion;
use mcp_connect::protocol::{GetPrompt, Ping};
use mcp_connect::session::SessionState;
use mcp_connect::testkit::UnknownSession;
use mcp_connect::{ConnectRequest, Connector, EstablishBuilder, McpClient};
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(20);

async fn server(answer: UnknownSession) -> (ScriptServer, LegacyServer) {
    let legacy = LegacyServer::new();
    legacy.answer_unknown_sessions(answer);
    let server = ScriptServer::start(legacy.clone().responder()).await;
    (server, legacy)
}

fn builder(server: &ScriptServer) -> McpClientBuilder {
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_pin(ProtocolVersion::V2025_11_25);
    McpClient::builder(EstablishBuilder::new(Connector::new()).build(), request)
}

fn client(server: &ScriptServer) -> McpClient {
    builder(server).build()
}

async fn call(client: &McpClient) -> Result<(), ClientError> {
    watchdog(LIMIT, client.call_tool("x", &json!({})))
        .await
        .map(drop)
}

/// G16: after a restart (every session forgotten), a 400 whose JSON-RPC
/// error has a `null` id is a session loss: the next call runs on
/// generation 2 and the failed one is not replayed.
#[tokio::test]
async fn a_400_without_id_after_a_restart_reconnects_for_the_next_call() {
    let (server, legacy) = server(UnknownSession::BadRequestWithoutId).await;
    let client = client(&server);
    call(&client).await.unwrap();
    legacy.expire_sessions();
    let error = call(&client).await.unwrap_err();
    assert!(error.is_session_lost(), "{error:?}");
    assert_eq!(error.generation(), Some(1));
    assert_eq!(error.call_error().unwrap().http_status(), Some(400));
    for _ in 0..3 {
        call(&client).await.unwrap();
    }
    assert_eq!(client.generation(), 2);
    assert_eq!(legacy.sessions_created(), 2);
    assert_eq!(legacy.tool_calls(), 4, "the refused call never ran");
    assert_eq!(server.count("tools/call"), 5, "nothing replayed");
}

/// G16: a 400 whose JSON-RPC error names the request's id is a handler's
/// answer: no reconnect, the generation stays.
#[tokio::test]
async fn a_400_naming_the_request_never_reconnects() {
    let (server, legacy) = server(UnknownSession::BadRequestWithId).await;
    let client = client(&server);
    call(&client).await.unwrap();
    legacy.expire_sessions();
    for _ in 0..3 {
        let error = call(&client).await.unwrap_err();
        assert!(!error.is_session_lost(), "{error:?}");
        assert_eq!(error.generation(), Some(1));
    }
    assert_eq!(client.generation(), 1);
    assert_eq!(legacy.sessions_created(), 1);
}

/// G16, bounded: a server that answers 400 without id to every request on
/// every session is not a session problem. The first refusal replaces the
/// session; the new session's first request refused the same way is
/// `RefusedAgain` and keeps the session; later refusals reconnect no more
/// (and fail as `RefusedAgain` too) until a request succeeds, after which
/// the rule holds again.
#[tokio::test]
async fn a_new_session_refused_the_same_way_stops_the_reconnects() {
    let legacy = LegacyServer::new();
    let responder = legacy.clone();
    let refusing = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let refuse = std::sync::Arc::clone(&refusing);
    let server = ScriptServer::start(move |r| {
        if r.rpc_method() == "tools/call" && refuse.load(std::sync::atomic::Ordering::SeqCst) {
            return Script::Json(
                400,
                json!({ "jsonrpc": "2.0", "id": null, "error": { "code": -32000, "message": "no" } }),
            );
        }
        responder.respond(r)
    })
    .await;
    let client = client(&server);
    let first = call(&client).await.unwrap_err();
    assert!(first.is_session_lost(), "{first:?}");
    let second = call(&client).await.unwrap_err();
    assert!(
        matches!(
            second,
            ClientError::RefusedAgain {
                generation: 2,
                reason: LossReason::RefusedWithoutId,
                ..
            }
        ),
        "{second:?}"
    );
    // Each later refusal says so too (issue 47: a group read one as the
    // server declining its listing and showed the member without tools).
    for _ in 0..5 {
        let error = call(&client).await.unwrap_err();
        assert!(
            matches!(error, ClientError::RefusedAgain { generation: 2, .. }),
            "{error:?}"
        );
    }
    assert_eq!(legacy.sessions_created(), 2, "no loop, no storm");

    // A success ends the suspicion: the rule holds again.
    watchdog(LIMIT, client.send(GetPrompt::new("p")))
        .await
        .unwrap();
    let error = call(&client).await.unwrap_err();
    assert!(error.is_session_lost(), "{error:?}");
    refusing.store(false, std::sync::atomic::Ordering::SeqCst);
    // Two sessions in a row died young: the next waits out the cool-down
    // (issue 40, item 9), then is built.
    match call(&client).await {
        Ok(()) => {}
        Err(ClientError::CoolingDown { retry_in, .. }) => {
            tokio::time::sleep(retry_in).await;
            call(&client).await.unwrap();
        }
        Err(other) => panic!("{other:?}"),
    }
    assert_eq!(client.generation(), 3);
}

/// G16: the application widens the rule for a server it knows answers an
/// unknown session with 401, and narrows it to leave 400 without id alone.
#[tokio::test]
async fn the_application_widens_and_narrows_the_rule() {
    let (server, legacy) = server(UnknownSession::Status(401)).await;
    let plain = client(&server);
    call(&plain).await.unwrap();
    legacy.expire_sessions();
    let error = call(&plain).await.unwrap_err();
    assert!(!error.is_session_lost(), "401 is never a loss by default");

    let widened = builder(&server)
        .with_session_loss(|signal| {
            signal.default.is_some()
                || (signal.has_session_id && signal.error.http_status() == Some(401))
        })
        .build();
    call(&widened).await.unwrap();
    legacy.expire_sessions();
    let error = call(&widened).await.unwrap_err();
    assert!(error.is_session_lost(), "{error:?}");
    call(&widened).await.unwrap();
    assert_eq!(widened.generation(), 2);

    let (server, legacy) = server_without_id().await;
    let narrowed = builder(&server)
        .with_session_loss(|signal| {
            signal
                .default
                .is_some_and(|r| r != LossReason::RefusedWithoutId)
        })
        .build();
    call(&narrowed).await.unwrap();
    legacy.expire_sessions();
    let error = call(&narrowed).await.unwrap_err();
    assert!(!error.is_session_lost(), "{error:?}");
    assert_eq!(narrowed.generation(), 1);
}

async fn server_without_id() -> (ScriptServer, LegacyServer) {
    server(UnknownSession::BadRequestWithoutId).await
}

/// Replay shares the rule: a call refused with 400 without id never ran,
/// so `ReplayPolicy::Undelivered` sends it once on the new session.
#[tokio::test]
async fn a_call_refused_without_id_is_replayed_when_asked() {
    let (server, legacy) = server(UnknownSession::BadRequestWithoutId).await;
    let client = builder(&server)
        .with_replay(ReplayPolicy::Undelivered)
        .build();
    call(&client).await.unwrap();
    legacy.expire_sessions();
    call(&client).await.unwrap();
    assert_eq!(client.generation(), 2);
    assert_eq!(legacy.tool_calls(), 2, "each call ran once");
}

/// Item 2: a session whose state is terminal before a call (here its
/// server forgot it and a request on it was refused with 404, which ends
/// the transport) is replaced before the call is sent: the call succeeds
/// on the next generation with replay off.
#[tokio::test]
async fn a_session_known_dead_is_replaced_before_the_call() {
    let (server, legacy) = server(UnknownSession::NotFound).await;
    let client = client(&server);
    call(&client).await.unwrap();
    let (session, generation) = client.session().await.unwrap();
    legacy.expire_sessions();
    // Someone else's use of the session finds it gone, ending the transport.
    assert!(session.send(Ping).await.is_err());
    assert!(matches!(session.state(), SessionState::Closed(_)));
    call(&client).await.unwrap();
    assert_eq!((generation, client.generation()), (1, 2));
    assert_eq!(legacy.tool_calls(), 2);
}

/// Item 2, over HTTP: the session's GET stream (opened because the
/// application listens for notifications) is cut, and its resumption gets
/// 404 for the session. The session is then known dead, so the next call
/// goes to a new session instead of failing first.
#[tokio::test]
async fn a_session_whose_stream_saw_a_404_is_replaced_before_the_call() {
    use mcp_connect::inbound::notification_channel;
    let legacy = LegacyServer::new();
    let responder = legacy.clone();
    let server = ScriptServer::start(move |r| {
        if r.method == http::Method::GET {
            let session = r.header("mcp-session-id").unwrap_or_default();
            return match (r.header("last-event-id"), session) {
                // The first session's stream: one event with an id and a
                // short retry, then it ends; its resumption finds the
                // session gone.
                (None, "session-1") => {
                    Script::Sse(vec!["id: e1\nretry: 10\ndata: \n\n".to_owned()])
                }
                (Some(_), _) => Script::Status(404),
                _ => Script::SseThenStall(vec![]),
            };
        }
        responder.respond(r)
    })
    .await;
    let (listener, _notifications) = notification_channel(8);
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_pin(ProtocolVersion::V2025_11_25)
        .with_notifications(listener);
    let client =
        McpClient::builder(EstablishBuilder::new(Connector::new()).build(), request).build();
    let (session, _) = watchdog(LIMIT, client.session()).await.unwrap();
    watchdog(LIMIT, async {
        while session.state() == SessionState::Open {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    drop(session);
    call(&client).await.unwrap();
    assert_eq!(client.generation(), 2);
    assert_eq!(legacy.tool_calls(), 1);
    assert_eq!(
        server.count("tools/call"),
        1,
        "nothing sent to the dead session"
    );
}

/// Issue 40, item 9: a server that dies just after every start (the stdio
/// fixture exits on each call) is not respawned on every call: from the
/// second short-lived session in a row the next one waits out the
/// cool-down, so a second and a half of calls makes a handful of spawns,
/// not one per call.
#[tokio::test]
async fn a_server_that_dies_after_every_start_is_paced_by_the_cool_down() {
    let log = crate::support::spawn_log("flapping");
    let command = crate::support::fixture(&[
        "--spawn-log",
        log.to_str().unwrap(),
        "--exit-on",
        "tools/call",
    ]);
    let request = ConnectRequest::stdio(command).with_pin(ProtocolVersion::V2025_11_25);
    let client =
        McpClient::builder(EstablishBuilder::new(Connector::new()).build(), request).build();
    let started = std::time::Instant::now();
    let (mut calls, mut cooling) = (0, 0);
    while started.elapsed() < Duration::from_millis(1500) {
        calls += 1;
        if let Err(ClientError::CoolingDown { retry_in, .. }) = call(&client).await {
            cooling += 1;
            tokio::time::sleep(retry_in.min(Duration::from_millis(5))).await;
        }
    }
    let spawns = crate::support::spawned(&log).len();
    assert!(cooling > 0, "{calls} calls, none cooled down");
    assert!(
        spawns <= 10,
        "{spawns} spawns in 1.5 s for a server that dies after every start ({calls} calls)"
    );
    // The application's own close starts afresh: no penalty.
    client.close().await.unwrap();
    let _ = std::fs::remove_file(log);
}

/// Issue 41, item 1: a deadline or a token given for the first connect
/// bounds that connect only. Once the deadline has passed or the token is
/// cancelled, a session that died is still replaced (every call failed
/// "no session could be established" forever); the client-wide shutdown
/// token ends every establishment.
#[tokio::test(start_paused = true)]
async fn a_start_up_deadline_or_token_binds_the_first_connect_only() {
    let (server, legacy) = server(UnknownSession::Status(404)).await;
    let start_up = tokio_util::sync::CancellationToken::new();
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_pin(ProtocolVersion::V2025_11_25)
        .with_deadline(tokio::time::Instant::now() + Duration::from_millis(300))
        .with_cancellation(start_up.clone());
    let stack = EstablishBuilder::new(Connector::new()).build();
    let client = watchdog(LIMIT, McpClient::builder(stack, request).connect())
        .await
        .unwrap();
    call(&client).await.unwrap();
    tokio::time::sleep(Duration::from_millis(400)).await;
    start_up.cancel();
    legacy.expire_sessions();
    let lost = call(&client).await.unwrap_err();
    assert!(lost.is_session_lost(), "{lost:?}");
    call(&client)
        .await
        .expect("a new session, past the start-up deadline");
    assert_eq!(client.generation(), 2);

    // The shutdown token: cancelled, no establishment starts.
    let shutdown = tokio_util::sync::CancellationToken::new();
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_pin(ProtocolVersion::V2025_11_25);
    let stack = EstablishBuilder::new(Connector::new()).build();
    let client = McpClient::builder(stack, request)
        .with_shutdown(shutdown.clone())
        .build();
    call(&client).await.unwrap();
    shutdown.cancel();
    legacy.expire_sessions();
    let _ = call(&client).await;
    let refused = call(&client).await.unwrap_err();
    assert!(
        matches!(
            refused.failure().kind,
            mcp_connect::layers::FailureKind::Cancelled
        ),
        "{refused:?}"
    );
}
