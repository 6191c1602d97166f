//! Issue 17: the opt-in replay of provably undelivered requests. With
//! `ReplayPolicy::Undelivered` an `McpClient` sends a failed call once more
//! on its new session only when the failure proves the server never
//! received it (no connection could be opened, or its own POST was refused
//! with 404 for an unknown session); every other failure is never sent
//! again, and the default never replays anything. Server-side counts prove
//! each call ran at most once.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::support::{watchdog, LegacyServer, Script, ScriptServer};
use mcp_connect::client::replay::ReplayPolicy;
use mcp_connect::client::replay::{undelivered, Undelivered};
use mcp_connect::error::TransportError;
use mcp_connect::layers::FailureKind;
use mcp_connect::protocol::ProtocolVersion;
use mcp_connect::transport::HttpClient;
use mcp_connect::{ConnectRequest, Connector, EstablishBuilder, McpClient};
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(20);

fn client_for(url: &str, connector: Connector, replay: ReplayPolicy) -> McpClient {
    let request = ConnectRequest::http(url)
        .unwrap()
        .with_pin(ProtocolVersion::V2025_11_25);
    McpClient::builder(EstablishBuilder::new(connector).build(), request)
        .with_replay(replay)
        .build()
}

fn client(server: &ScriptServer, replay: ReplayPolicy) -> McpClient {
    client_for(&server.url(), Connector::new(), replay)
}

async fn call(client: &McpClient) -> Result<(), mcp_connect::client::ClientError> {
    client.call_tool("x", &json!({ "n": 1 })).await.map(drop)
}

#[tokio::test]
async fn a_call_refused_for_an_unknown_session_is_sent_once_on_the_new_session() {
    let legacy = LegacyServer::new();
    let server = ScriptServer::start(legacy.clone().responder()).await;
    let client = client(&server, ReplayPolicy::Undelivered);
    watchdog(LIMIT, call(&client)).await.unwrap();

    legacy.expire_sessions();
    watchdog(LIMIT, call(&client)).await.unwrap();
    assert_eq!(client.generation(), 2);
    assert_eq!(legacy.tool_calls(), 2, "each call ran exactly once");
    assert_eq!(
        server.count("tools/call"),
        3,
        "the refused POST, then the replay"
    );
    assert_eq!(legacy.sessions_created(), 2);
}

#[tokio::test]
async fn the_default_never_sends_a_call_again() {
    let legacy = LegacyServer::new();
    let server = ScriptServer::start(legacy.clone().responder()).await;
    let client = client(&server, ReplayPolicy::default());
    watchdog(LIMIT, call(&client)).await.unwrap();

    legacy.expire_sessions();
    let error = watchdog(LIMIT, call(&client)).await.unwrap_err();
    assert!(error.is_session_lost());
    assert_eq!(
        undelivered(error.call_error().unwrap()),
        Some(Undelivered::UnknownSession),
        "the evidence was there; the policy said no"
    );
    assert_eq!(server.count("tools/call"), 2);
    assert_eq!(legacy.tool_calls(), 1);
}

#[tokio::test]
async fn a_replay_is_sent_once_even_when_it_is_refused_again() {
    let legacy = LegacyServer::new();
    let responder = legacy.clone();
    // Every session is forgotten as soon as a call arrives on it.
    let server = ScriptServer::start(move |r| {
        if r.rpc_method() == "tools/call" {
            responder.expire_sessions();
        }
        responder.respond(r)
    })
    .await;
    let client = client(&server, ReplayPolicy::Undelivered);
    let error = watchdog(LIMIT, call(&client)).await.unwrap_err();
    assert!(error.is_session_lost());
    assert_eq!(error.failure().http_status, Some(404));
    assert_eq!(server.count("tools/call"), 2, "the call and one replay");
    assert_eq!(legacy.tool_calls(), 0);
    assert_eq!(legacy.sessions_created(), 2);
}

/// A resolver that answers `localhost` with the live server's address, or,
/// once after `refuse_next` is set, with a loopback address nobody listens
/// on (the connector keeps the URL's port, so the address must differ).
#[derive(Clone)]
struct Flaky {
    live: SocketAddr,
    closed: SocketAddr,
    refuse_next: Arc<AtomicBool>,
}

impl Flaky {
    fn new(live: SocketAddr) -> Flaky {
        Flaky {
            live,
            closed: SocketAddr::from(([127, 0, 0, 2], live.port())),
            refuse_next: Arc::new(AtomicBool::new(false)),
        }
    }

    fn connector(&self) -> Connector {
        let flaky = self.clone();
        let resolver = tower::service_fn(move |_name| {
            let addr = match flaky.refuse_next.swap(false, Ordering::SeqCst) {
                true => flaky.closed,
                false => flaky.live,
            };
            std::future::ready(Ok::<_, std::io::Error>(std::iter::once(addr)))
        });
        Connector::with_client(HttpClient::http_only_with_resolver(resolver))
    }
}

#[tokio::test]
async fn a_call_whose_connection_was_refused_is_sent_once_on_the_new_session() {
    let legacy = LegacyServer::new();
    let first = ScriptServer::start(legacy.clone().responder()).await;
    let addr = first.addr();
    let flaky = Flaky::new(addr);
    let url = format!("http://localhost:{}/mcp", addr.port());
    let client = client_for(&url, flaky.connector(), ReplayPolicy::Undelivered);
    watchdog(LIMIT, call(&client)).await.unwrap();

    // The server restarts (its connections close with it) and the next
    // connection attempt is refused.
    first.stop().await;
    let restarted = LegacyServer::new();
    let second = ScriptServer::start_on(addr, restarted.clone().responder())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    flaky.refuse_next.store(true, Ordering::SeqCst);
    watchdog(LIMIT, call(&client)).await.unwrap();
    assert_eq!(client.generation(), 2);
    assert_eq!(second.count("tools/call"), 1, "sent once, where it ran");
    assert_eq!(restarted.tool_calls(), 1);
    assert_eq!(legacy.tool_calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_server_that_stays_down_gets_no_replay_and_the_call_fails_once() {
    let legacy = LegacyServer::new();
    let first = ScriptServer::start(legacy.clone().responder()).await;
    let addr = first.addr();
    let client = client(&first, ReplayPolicy::Undelivered);
    watchdog(LIMIT, call(&client)).await.unwrap();
    first.stop().await;

    let error = watchdog(LIMIT, call(&client)).await.unwrap_err();
    assert!(error.is_session_lost());
    assert_eq!(error.failure().kind, FailureKind::Connect);
    assert_eq!(
        undelivered(error.call_error().unwrap()),
        Some(Undelivered::NotConnected)
    );
    // Back up: the next call builds a session (after the cool-down).
    let restarted = LegacyServer::new();
    let _second = ScriptServer::start_on(addr, restarted.clone().responder())
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    watchdog(LIMIT, call(&client)).await.unwrap();
    assert_eq!(restarted.tool_calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_delivered_call_is_never_sent_again() {
    // A reply stream cut after its priming event, whose resumption is
    // refused with 404: the session is gone, but the request was delivered.
    let legacy = LegacyServer::new();
    let responder = legacy.clone();
    let server = ScriptServer::start(move |r| match (r.method.as_str(), r.rpc_method()) {
        ("POST", "tools/call") => Script::SseThenBreak(vec!["id: e1\ndata:\n\n".into()]),
        ("GET", _) if r.header("last-event-id").is_some() => {
            responder.expire_sessions();
            Script::Status(404)
        }
        _ => responder.respond(r),
    })
    .await;
    let first = client(&server, ReplayPolicy::Undelivered);
    let error = watchdog(LIMIT, call(&first)).await.unwrap_err();
    assert!(error.is_session_lost());
    let call_error = error.call_error().unwrap();
    assert!(matches!(
        call_error.kind(),
        mcp_connect::ErrorKind::Transport(TransportError::SessionExpired {
            request_refused: false,
            ..
        })
    ));
    assert_eq!(undelivered(call_error), None);
    assert_eq!(server.count("tools/call"), 1, "never sent again");

    // A reply broken mid-body: delivered, never sent again either.
    let broken = ScriptServer::start(move |r| match r.rpc_method() {
        "tools/call" => Script::BreakMidBody("application/json", "{\"jsonrpc\":".into()),
        _ => legacy.respond(r),
    })
    .await;
    let second = client(&broken, ReplayPolicy::Undelivered);
    let error = watchdog(LIMIT, call(&second)).await.unwrap_err();
    assert!(error.is_session_lost());
    assert_eq!(undelivered(error.call_error().unwrap()), None);
    assert_eq!(broken.count("tools/call"), 1);
}
