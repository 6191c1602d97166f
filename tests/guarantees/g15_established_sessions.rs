//! G15 Established sessions: a 404 on a session is terminal; a GET answered
//! 405 is not an error.

use std::time::Duration;

use crate::support::{watchdog, LegacyServer, Script, ScriptServer};
use http::Method;
use mcp_connect::layers::Closure;
use mcp_connect::protocol::ProtocolVersion;
use mcp_connect::session::SessionState;
use mcp_connect::{ConnectRequest, Connector};
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(10);

/// G15: 404 on an established session ends it for good.
#[tokio::test]
async fn a_404_on_the_session_is_terminal() {
    let legacy = LegacyServer::new();
    let server = ScriptServer::start(legacy.clone().responder()).await;
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_pin(ProtocolVersion::V2025_11_25);
    let session = watchdog(LIMIT, Connector::new().connect(request))
        .await
        .unwrap();
    session.call_tool("x", &json!({})).await.unwrap();
    legacy.expire_sessions();
    let failure = session
        .call_tool("x", &json!({}))
        .await
        .unwrap_err()
        .failure();
    assert_eq!(
        (failure.closure, failure.http_status),
        (Some(Closure::SessionExpired), Some(404))
    );
    assert_eq!(
        session.state(),
        SessionState::Closed(Closure::SessionExpired)
    );
    assert_eq!(legacy.sessions_created(), 1, "never silently replaced");
}

/// G15: a standalone GET answered 405 means "no stream", and the session
/// goes on.
#[tokio::test]
async fn a_get_answered_405_is_not_an_error() {
    let legacy = LegacyServer::new();
    let server = ScriptServer::start(move |r| match r.method {
        Method::GET => Script::Status(405),
        _ => legacy.respond(r),
    })
    .await;
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_pin(ProtocolVersion::V2025_11_25);
    let session = watchdog(LIMIT, Connector::new().connect(request))
        .await
        .unwrap();
    assert!(session.server_stream().await.unwrap().is_none());
    assert_eq!(session.state(), SessionState::Open);
    session.call_tool("x", &json!({})).await.unwrap();
}
