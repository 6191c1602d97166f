//! The optional standalone GET stream of Streamable HTTP: opened only on
//! request; 405 (or 400) is not an error; the modern era has none.

use std::time::Duration;

use crate::support::{legacy, watchdog, Script, ScriptServer};
use http::Method;
use mcp_connect::protocol::{Incoming, ProtocolVersion, RequestId};
use mcp_connect::{ConnectRequest, Connector, Session};
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(10);

async fn legacy_session(server: &ScriptServer) -> Session {
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_pin(ProtocolVersion::V2025_11_25);
    watchdog(LIMIT, Connector::new().connect(request))
        .await
        .unwrap()
}

#[tokio::test]
async fn get_answered_405_or_400_means_no_stream_and_is_not_an_error() {
    for status in [405, 400] {
        let server = ScriptServer::start(move |r| match r.method {
            Method::GET => Script::Status(status),
            _ => legacy(r),
        })
        .await;
        let session = legacy_session(&server).await;
        assert!(
            session.server_stream().await.unwrap().is_none(),
            "status {status}"
        );
        assert_eq!(
            server.methods(),
            ["initialize", "notifications/initialized", "GET"]
        );
        assert_eq!(
            server.recorded()[2].header("accept"),
            Some("text/event-stream")
        );
        assert_eq!(
            server.recorded()[2].header("mcp-session-id"),
            Some("session-canary-0001")
        );
        // The session is unaffected.
        session.call_tool("x", &json!({})).await.unwrap();
    }
}

#[tokio::test]
async fn no_get_stream_is_opened_unless_asked() {
    let server = ScriptServer::start(legacy).await;
    let session = legacy_session(&server).await;
    session.call_tool("x", &json!({})).await.unwrap();
    session.close().await.unwrap();
    assert!(!server.methods().contains(&"GET".to_owned()));
}

#[tokio::test]
async fn server_notifications_and_requests_arrive_on_the_stream_and_are_answered() {
    let server = ScriptServer::start(|r| match (&r.method, r.rpc_method()) {
        (&Method::GET, _) => Script::Sse(vec![
            "id: 0\ndata:\n\n".into(),
            "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\",\"params\":{\"n\":1}}\n\n".into(),
            "data: {\"jsonrpc\":\"2.0\",\"id\":\"q1\",\"method\":\"roots/list\"}\n\n".into(),
        ]),
        (_, "") => Script::Status(202),
        _ => legacy(r),
    })
    .await;
    let session = legacy_session(&server).await;
    let mut stream = session.server_stream().await.unwrap().expect("a stream");
    match watchdog(LIMIT, stream.next()).await.unwrap().unwrap() {
        Incoming::Notification { method, params } => {
            assert_eq!(method, "notifications/tools/list_changed");
            assert_eq!(params, Some(json!({ "n": 1 })));
        }
        other => panic!("{other:?}"),
    }
    let id = match watchdog(LIMIT, stream.next()).await.unwrap().unwrap() {
        Incoming::Request { id, method, .. } => {
            assert_eq!(method, "roots/list");
            id
        }
        other => panic!("{other:?}"),
    };
    assert_eq!(id, RequestId::String("q1".into()));
    session
        .respond(&id, Ok(json!({ "roots": [] })))
        .await
        .unwrap();
    assert!(
        watchdog(LIMIT, stream.next()).await.is_none(),
        "the server ended the stream"
    );
    let answer = server.recorded().into_iter().last().unwrap();
    assert_eq!(
        answer.body,
        json!({ "jsonrpc": "2.0", "id": "q1", "result": { "roots": [] } })
    );
    assert_eq!(answer.header("mcp-session-id"), Some("session-canary-0001"));
}

#[tokio::test]
async fn the_modern_era_has_no_get_stream_and_sends_nothing() {
    let server = ScriptServer::start(|r| match r.rpc_method() {
        "server/discover" => Script::Json(
            200,
            crate::support::result(
                r,
                json!({ "supportedVersions": ["2026-07-28"], "capabilities": {} }),
            ),
        ),
        _ => Script::Status(500),
    })
    .await;
    let session = watchdog(
        LIMIT,
        Connector::new().connect(ConnectRequest::http(&server.url()).unwrap()),
    )
    .await
    .unwrap();
    assert!(session.server_stream().await.unwrap().is_none());
    assert_eq!(server.methods(), ["server/discover"]);
}
