//! G16 Manager: a long-lived client reconnects for later calls only when the
//! failure is a transport failure or a session expiry (no HTTP status, or
//! 404). 500, 429, 403 and JSON-RPC errors reach the caller with no
//! reconnect and the session generation unchanged. The failed call is
//! never replayed.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::support::{error, result, watchdog, LegacyServer, Recorded, Script, ScriptServer};
use mcp_connect::client::McpClientBuilder;
use mcp_connect::client::{ClientError, Reconnect};
use mcp_connect::layers::{Closure, FailureKind};
use mcp_connect::protocol::ProtocolVersion;
use mcp_connect::protocol::{GetPrompt, ReadResource};
use mcp_connect::{ConnectRequest, Connector, EstablishBuilder, McpClient};
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(20);

/// A scripted answer.
type Fault = fn(&Recorded) -> Script;

/// A legacy server whose first answer to `method` is `fault`.
async fn first_fails(
    method: &'static str,
    fault: fn(&Recorded) -> Script,
) -> (ScriptServer, LegacyServer) {
    let legacy = LegacyServer::new();
    let responder = legacy.clone();
    let fired = AtomicBool::new(false);
    let server = ScriptServer::start(move |r| {
        if r.rpc_method() == method && !fired.swap(true, Ordering::SeqCst) {
            return fault(r);
        }
        responder.respond(r)
    })
    .await;
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

async fn call(client: &McpClient, method: &str) -> Result<(), ClientError> {
    match method {
        "tools/call" => client.call_tool("x", &json!({ "n": 1 })).await.map(drop),
        "prompts/get" => client.send(GetPrompt::new("p")).await.map(drop),
        "resources/read" => client.send(ReadResource::new("file:///x")).await.map(drop),
        other => unreachable!("{other}"),
    }
}

/// Asserts that `fault` on a tool call reaches the caller with no reconnect:
/// the session stays, the generation stays 1, no spare session is made, and
/// nothing is replayed.
async fn never_reconnects(name: &str, fault: fn(&Recorded) -> Script) -> ClientError {
    let (server, legacy) = first_fails("tools/call", fault).await;
    let client = client(&server);
    let error = watchdog(LIMIT, call(&client, "tools/call"))
        .await
        .unwrap_err();
    assert!(!error.is_session_lost(), "{name}");
    assert_eq!(error.generation(), Some(1), "{name}");
    watchdog(LIMIT, call(&client, "tools/call")).await.unwrap();
    assert_eq!(
        client.generation(),
        1,
        "{name}: the same session serves the next call"
    );
    assert_eq!(
        legacy.sessions_created(),
        1,
        "{name}: no spare session was made"
    );
    assert_eq!(server.count("tools/call"), 2, "{name}: nothing replayed");
    error
}

/// G16: HTTP 500 reaches the caller with no reconnect.
#[tokio::test]
async fn http_500_never_reconnects() {
    never_reconnects("500", |_| Script::Status(500)).await;
}

/// G16: HTTP 429 reaches the caller with its Retry-After and no reconnect.
#[tokio::test]
async fn http_429_never_reconnects_and_keeps_retry_after() {
    let error = never_reconnects("429", |_| {
        Script::StatusWith(429, vec![("retry-after", "5".into())])
    })
    .await;
    assert_eq!(error.failure().retry_after, Some(Duration::from_secs(5)));
}

/// G16: HTTP 403 and 401 reach the caller with no reconnect.
#[tokio::test]
async fn http_403_and_401_never_reconnect() {
    never_reconnects("403", |_| Script::Status(403)).await;
    never_reconnects("401", |_| Script::Status(401)).await;
}

/// G16: a JSON-RPC error reaches the caller with no reconnect.
#[tokio::test]
async fn json_rpc_errors_never_reconnect() {
    never_reconnects("JSON-RPC error", |r| {
        Script::Json(200, error(r, -32603, None))
    })
    .await;
    never_reconnects("JSON-RPC error at 500", |r| {
        Script::Json(500, error(r, -32603, None))
    })
    .await;
}

/// G16: a 404 on the session, and a status-less transport failure, reach the
/// caller; the next call runs on a new session (generation 2); the failed
/// call is not replayed. The same for get_prompt and read_resource.
#[tokio::test]
async fn session_expiry_and_transport_failure_reconnect_for_the_next_call() {
    let faults: [(&str, Fault); 3] = [
        ("404 with a JSON-RPC body", |r| {
            Script::Json(404, error(r, -32600, None))
        }),
        ("404 without a body", |_| Script::Status(404)),
        ("reset", |_| Script::ResetBeforeHeaders),
    ];
    for method in ["tools/call", "prompts/get", "resources/read"] {
        for (name, fault) in faults {
            let (server, legacy) = first_fails(method, fault).await;
            let client = client(&server);
            let error = watchdog(LIMIT, call(&client, method)).await.unwrap_err();
            assert!(error.is_session_lost(), "{method} {name}");
            assert_eq!(error.generation(), Some(1));
            watchdog(LIMIT, call(&client, method)).await.unwrap();
            assert_eq!(client.generation(), 2, "{method} {name}");
            assert_eq!(legacy.sessions_created(), 2);
            assert_eq!(
                server.count(method),
                2,
                "{method} {name}: the failed call was not replayed"
            );
        }
    }
}

/// G16: on the modern era a 404 whose body is a JSON-RPC method-not-found is
/// an application error, not a session expiry.
#[tokio::test]
async fn modern_404_method_not_found_is_an_application_error() {
    let server = ScriptServer::start(|r| match r.rpc_method() {
        "server/discover" => Script::Json(
            200,
            result(
                r,
                json!({ "supportedVersions": ["2026-07-28"], "capabilities": {} }),
            ),
        ),
        _ => Script::Json(404, error(r, -32601, None)),
    })
    .await;
    let client = McpClient::builder(
        EstablishBuilder::new(Connector::new()).build(),
        ConnectRequest::http(&server.url()).unwrap(),
    )
    .build();
    let error = watchdog(LIMIT, client.call_tool("missing", &json!({})))
        .await
        .unwrap_err();
    assert!(!error.is_session_lost());
    assert_eq!(
        (error.failure().kind, error.failure().http_status),
        (FailureKind::Rpc, Some(404))
    );
    let _ = watchdog(LIMIT, client.call_tool("missing", &json!({}))).await;
    assert_eq!(client.generation(), 1);
    assert_eq!(server.count("server/discover"), 1);
}

/// G16: sixteen callers on a dead session cause exactly one reconnect.
#[tokio::test]
async fn concurrent_callers_on_a_dead_session_share_one_reconnect() {
    let legacy = LegacyServer::new();
    let server = ScriptServer::start(legacy.clone().responder()).await;
    let client = client(&server);
    watchdog(LIMIT, call(&client, "tools/call")).await.unwrap();
    legacy.expire_sessions();
    let calls = (0..16).map(|_| {
        let client = client.clone();
        tokio::spawn(async move { call(&client, "tools/call").await })
    });
    let outcomes = watchdog(LIMIT, futures_util::future::join_all(calls)).await;
    let lost = outcomes
        .iter()
        .filter(|o| {
            o.as_ref()
                .unwrap()
                .as_ref()
                .is_err_and(ClientError::is_session_lost)
        })
        .count();
    assert!(lost >= 1);
    watchdog(LIMIT, call(&client, "tools/call")).await.unwrap();
    assert_eq!(legacy.sessions_created(), 2, "exactly one reconnect");
    assert_eq!(client.generation(), 2);
}

/// G16: a server that stays down is not stormed: after a failed reconnect,
/// calls fail fast until the backoff has passed.
#[tokio::test]
async fn a_reconnect_storm_is_bounded() {
    let legacy = LegacyServer::new();
    let responder = legacy.clone();
    let down = Arc::new(AtomicBool::new(false));
    let is_down = Arc::clone(&down);
    let server = ScriptServer::start(move |r| {
        if is_down.load(Ordering::SeqCst) {
            Script::ResetBeforeHeaders
        } else {
            responder.respond(r)
        }
    })
    .await;
    let client = client(&server);
    watchdog(LIMIT, call(&client, "tools/call")).await.unwrap();
    down.store(true, Ordering::SeqCst);
    let attempts_before = server.count("initialize");
    for _ in 0..50 {
        let _ = watchdog(LIMIT, call(&client, "tools/call")).await;
    }
    let reconnects = server.count("initialize") - attempts_before;
    assert!(
        reconnects <= 2,
        "{reconnects} establishment attempts for 50 calls"
    );
    let error = watchdog(LIMIT, call(&client, "tools/call"))
        .await
        .unwrap_err();
    assert!(
        matches!(error, ClientError::CoolingDown { .. }),
        "{error:?}"
    );
}

/// G16: with background reconnects the next call finds the new session ready.
#[tokio::test]
async fn background_reconnect_prepares_the_next_session() {
    let (server, legacy) = first_fails("tools/call", |_| Script::ResetBeforeHeaders).await;
    let client = builder(&server)
        .with_reconnect(Reconnect::InBackground)
        .build();
    let error = watchdog(LIMIT, call(&client, "tools/call"))
        .await
        .unwrap_err();
    assert_eq!(error.failure().closure, Some(Closure::Reset));
    watchdog(LIMIT, async {
        while legacy.sessions_created() < 2 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    let initializes = AtomicU32::new(server.count("initialize") as u32);
    watchdog(LIMIT, call(&client, "tools/call")).await.unwrap();
    assert_eq!(
        server.count("initialize") as u32,
        initializes.load(Ordering::SeqCst),
        "already built"
    );
    assert_eq!(client.generation(), 2);
}

/// Issue 10, item 10: the cool-down after a failed reconnect is jittered
/// per client, so clients that lost one server together do not retry in
/// lock-step (with a fixed 100 ms they would all wait within a millisecond
/// of each other).
#[tokio::test]
async fn cool_downs_of_clients_that_failed_together_are_spread() {
    let port = crate::support::ClosedPort::new();
    let url = port.url("/mcp");
    let mut waits = Vec::new();
    for _ in 0..20 {
        let request = ConnectRequest::http(&url).unwrap();
        let client =
            McpClient::builder(EstablishBuilder::new(Connector::new()).build(), request).build();
        let first = watchdog(LIMIT, call(&client, "tools/call")).await;
        assert!(matches!(first, Err(ClientError::Connect(_))), "{first:?}");
        if let Err(ClientError::CoolingDown { retry_in, .. }) =
            watchdog(LIMIT, call(&client, "tools/call")).await
        {
            assert!(retry_in <= Duration::from_millis(100));
            waits.push(retry_in);
        }
    }
    let (least, most) = (waits.iter().min().unwrap(), waits.iter().max().unwrap());
    assert!(
        *most - *least > Duration::from_millis(30),
        "cool-downs spread over only {:?}: {waits:?}",
        *most - *least
    );
}

/// Issue 13: subscriptions made through the client are renewed on every
/// new session before it serves a call, and the application is told; the
/// handler and listener of the request serve every generation.
#[tokio::test]
async fn subscriptions_are_renewed_on_a_new_session_and_reported() {
    let legacy = LegacyServer::new();
    let responder = legacy.clone();
    let server = ScriptServer::start(move |r| responder.respond(r)).await;
    let client = client(&server);
    let mut generations = client.generations();
    watchdog(LIMIT, client.subscribe("file:///watched"))
        .await
        .unwrap();
    assert_eq!(generations.borrow_and_update().number, 1);
    assert_eq!(server.count("resources/subscribe"), 1);

    legacy.expire_sessions();
    let error = watchdog(LIMIT, call(&client, "tools/call"))
        .await
        .unwrap_err();
    assert!(error.is_session_lost());
    watchdog(LIMIT, call(&client, "tools/call")).await.unwrap();
    let report = *generations.borrow_and_update();
    assert_eq!(
        (
            report.number,
            report.resubscribed,
            report.resubscribe_failed
        ),
        (2, 1, 0)
    );
    assert_eq!(server.count("resources/subscribe"), 2, "renewed once");

    client.unsubscribe("file:///watched").await.unwrap();
    legacy.expire_sessions();
    let _ = call(&client, "tools/call").await;
    // The second session in a row that died young: its successor waits
    // out the cool-down first (issue 40, item 9).
    if let Err(ClientError::CoolingDown { retry_in, .. }) = call(&client, "tools/call").await {
        tokio::time::sleep(retry_in).await;
        watchdog(LIMIT, call(&client, "tools/call")).await.unwrap();
    }
    assert_eq!(
        server.count("resources/subscribe"),
        2,
        "not renewed after unsubscribe"
    );
}

/// Issue 17: the cool-down is the application's to choose, even "forever"
/// (`Duration::MAX`): it saturates instead of overflowing.
#[tokio::test]
async fn an_unbounded_cool_down_saturates() {
    use mcp_connect::layers::recovery::Backoff;
    let server = ScriptServer::start(|_| Script::ResetBeforeHeaders).await;
    let client = builder(&server)
        .with_cool_down(Backoff::new(Duration::MAX, Duration::MAX))
        .build();
    let first = watchdog(LIMIT, call(&client, "tools/call"))
        .await
        .unwrap_err();
    assert!(matches!(first, ClientError::Connect(_)));
    let second = watchdog(LIMIT, call(&client, "tools/call"))
        .await
        .unwrap_err();
    assert!(
        matches!(second, ClientError::CoolingDown { retry_in, .. } if retry_in > Duration::from_secs(86_400)),
        "{second:?}"
    );
}

/// Issue 25: the client's state is not locked across an establishment.
/// While one caller's reconnect waits on a server that never answers,
/// closing the client and asking its generation return at once, and the
/// waiting caller still gets its own bounded answer.
#[tokio::test(start_paused = true)]
async fn closing_never_waits_for_a_reconnect_in_progress() {
    watchdog(LIMIT, async {
        let server = ScriptServer::start(|_| Script::Stall).await;
        let deadline = Duration::from_secs(3);
        let stack = EstablishBuilder::new(Connector::new())
            .with_deadline(deadline)
            .build();
        let client =
            McpClient::builder(stack, ConnectRequest::http(&server.url()).unwrap()).build();
        let building = tokio::spawn({
            let client = client.clone();
            async move { client.session().await.map(|_| ()) }
        });
        // Let the build start and stall on the server.
        while server.recorded().is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        let started = std::time::Instant::now();
        client.close().await.unwrap();
        assert_eq!(client.generation(), 0);
        assert!(
            started.elapsed() < Duration::from_millis(500),
            "close waited {:?} for the establishment",
            started.elapsed()
        );
        let outcome = building.await.unwrap();
        assert!(
            matches!(outcome, Err(ClientError::Connect(_))),
            "{outcome:?}"
        );
    })
    .await;
}

/// Issue 42, item 4: a call refused during the cool-down keeps the
/// establishment error that started it (its whole chain prints in one
/// report, the connect failure at the bottom), and the classification's
/// questions need no trait import.
#[tokio::test]
async fn a_cool_down_keeps_the_error_that_started_it() {
    let port = crate::support::ClosedPort::new();
    let request = ConnectRequest::http(&port.url("/mcp")).unwrap();
    let client =
        McpClient::builder(EstablishBuilder::new(Connector::new()).build(), request).build();
    let first = watchdog(LIMIT, call(&client, "tools/call"))
        .await
        .unwrap_err();
    assert!(matches!(first, ClientError::Connect(_)), "{first:?}");
    let second = watchdog(LIMIT, call(&client, "tools/call"))
        .await
        .unwrap_err();
    let ClientError::CoolingDown { cause, .. } = &second else {
        panic!("{second:?}");
    };
    let cause = cause.as_ref().expect("the establishment error is kept");
    assert_eq!(cause.failure(), first.failure());
    assert_eq!(second.failure().kind, FailureKind::Connect);
    assert!(!second.is_timeout() && !second.is_auth() && !second.is_session_lost());
    assert_eq!(second.http_status(), None);
    // The chain goes down to what the connector said.
    let report = second.report().to_string();
    assert!(
        report.starts_with("no session: backing off")
            && report.ends_with(&cause.report().to_string()),
        "{report}"
    );
}

/// A dead session is disposed of without holding up the call that
/// replaces it (issue 47; the simulation found a group call waiting on the
/// `DELETE` of its member's dead session before its establishment began,
/// outside that establishment's deadline). Here the `DELETE` takes 2 s to
/// be answered: the call that lost the session fails at once, the next one
/// is served by a new session at once, and the
/// `DELETE` is still sent, once. Before, the call that lost the session
/// waited the 2 s out.
#[tokio::test(start_paused = true)]
async fn a_dead_sessions_disposal_never_holds_up_the_next_call() {
    let legacy = LegacyServer::new();
    let responder = legacy.clone();
    let fired = AtomicBool::new(false);
    let server = ScriptServer::start(move |r| {
        if r.rpc_method() == "tools/call" && !fired.swap(true, Ordering::SeqCst) {
            return Script::CloseBeforeHeaders;
        }
        if r.method.as_str() == "DELETE" {
            return Script::Delayed(Duration::from_secs(2), Box::new(responder.respond(r)));
        }
        responder.respond(r)
    })
    .await;
    let client = client(&server);
    let started = std::time::Instant::now();
    let first = watchdog(LIMIT, call(&client, "tools/call")).await;
    assert!(first.unwrap_err().is_session_lost());
    let lost = started.elapsed();
    watchdog(LIMIT, call(&client, "tools/call")).await.unwrap();
    let both = started.elapsed();
    assert!(
        both < Duration::from_millis(1_000),
        "lost {lost:?}, both {both:?}"
    );
    assert_eq!(client.generation(), 2);
    let deletes =
        crate::support::deletes_after_disposal(&server, &legacy, Duration::from_millis(300)).await;
    assert_eq!(deletes, 1, "disposed exactly once");
}
