//! Legacy HTTP+SSE servers (the 2024-11-05 transport): the fallback ladder,
//! the explicit mode, the same-origin rule, bounds, and closure.

use mcp_connect::establish::stage;
use std::time::{Duration, Instant};

use crate::support::sse_server::{SseBehaviour, SseServer};
use crate::support::{watchdog, ScriptServer};
use mcp_connect::error::TransportError;
use mcp_connect::layers::{Classify, Closure, FailureKind};
use mcp_connect::protocol::ProtocolVersion;
use mcp_connect::request::{Limits, TransportMode};
use mcp_connect::transport::TransportKind;
use mcp_connect::{ConnectRequest, Connector, ErrorKind};
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(10);

#[tokio::test]
async fn sse_only_server_is_reached_through_the_ladder_from_a_plain_url() {
    let server = SseServer::start(SseBehaviour::default()).await;
    let session = watchdog(
        LIMIT,
        Connector::new().connect(ConnectRequest::http(&server.url()).unwrap()),
    )
    .await
    .unwrap();
    assert_eq!(session.transport_kind(), TransportKind::Sse);
    assert_eq!(session.protocol_version(), &ProtocolVersion::V2025_11_25);
    assert_eq!(session.server_info().name, "sse-only");
    let result = session.call_tool("x", &json!({})).await.unwrap();
    assert_eq!(result.text(), "over sse");
    session.close().await.unwrap();
    assert_eq!(
        server.log(),
        [
            "POST /sse server/discover",
            "POST /sse initialize",
            "GET /sse",
            "POST /message initialize",
            "POST /message notifications/initialized",
            "POST /message tools/call",
        ]
    );
}

#[tokio::test]
async fn explicit_sse_mode_skips_the_streamable_http_requests() {
    let server = SseServer::start(SseBehaviour::default()).await;
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_mode(TransportMode::Sse);
    let session = watchdog(LIMIT, Connector::new().connect(request))
        .await
        .unwrap();
    assert_eq!(session.transport_kind(), TransportKind::Sse);
    assert_eq!(
        session.stats().http_requests,
        3,
        "GET, initialize, initialized"
    );
    assert_eq!(server.log()[0], "GET /sse");
}

#[tokio::test]
async fn an_endpoint_on_another_origin_is_refused_and_nothing_is_sent_there() {
    let elsewhere = ScriptServer::start(crate::support::legacy).await;
    let behaviour = SseBehaviour {
        endpoint: Some(elsewhere.url()),
        ..SseBehaviour::default()
    };
    let server = SseServer::start(behaviour).await;
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_mode(TransportMode::Sse);
    let error = watchdog(LIMIT, Connector::new().connect(request))
        .await
        .unwrap_err();
    assert!(
        matches!(
            error.kind(),
            ErrorKind::Transport(TransportError::CrossOriginEndpoint)
        ),
        "{error:?}"
    );
    assert_eq!(error.stage(), stage::SSE_ENDPOINT);
    assert_eq!(elsewhere.connections(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_stream_that_never_names_its_endpoint_ends_at_the_handshake_limit() {
    let behaviour = SseBehaviour {
        endpoint: None,
        ..SseBehaviour::default()
    };
    let server = SseServer::start(behaviour).await;
    let limits = Limits::default().with_handshake_timeout(Duration::from_millis(300));
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_mode(TransportMode::Sse)
        .with_limits(limits);
    let started = Instant::now();
    let error = watchdog(LIMIT, Connector::new().connect(request))
        .await
        .unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(2));
    let failure = error.failure();
    assert_eq!(
        (failure.stage, failure.kind),
        (stage::SSE_ENDPOINT, FailureKind::Timeout)
    );
}

#[tokio::test]
async fn when_sse_fails_too_both_failures_are_kept_streamable_http_first() {
    let behaviour = SseBehaviour {
        post_to_sse_url: 404,
        get_status: 404,
        ..SseBehaviour::default()
    };
    let server = SseServer::start(behaviour).await;
    let error = watchdog(
        LIMIT,
        Connector::new().connect(ConnectRequest::http(&server.url()).unwrap()),
    )
    .await
    .unwrap_err();
    let children = error.children();
    assert_eq!(children.len(), 2, "{error:?}");
    assert_eq!(
        (children[0].failure.stage, children[0].failure.http_status),
        (stage::INITIALIZE, Some(404))
    );
    assert_eq!(
        (children[1].failure.stage, children[1].failure.http_status),
        (stage::SSE_ENDPOINT, Some(404))
    );
    assert_eq!(error.also().len(), 1);
    assert!(
        std::error::Error::source(&error.also()[0]).is_some(),
        "the SSE error keeps its chain"
    );
}

#[tokio::test]
async fn auth_and_server_errors_on_initialize_never_fall_back_to_sse() {
    for status in [401, 403, 429, 500] {
        let behaviour = SseBehaviour {
            post_to_sse_url: status,
            ..SseBehaviour::default()
        };
        let server = SseServer::start(behaviour).await;
        let error = watchdog(
            LIMIT,
            Connector::new().connect(ConnectRequest::http(&server.url()).unwrap()),
        )
        .await
        .unwrap_err();
        assert_eq!(error.failure().http_status, Some(status));
        assert!(
            !server.log().iter().any(|l| l.starts_with("GET")),
            "status {status}: {:?}",
            server.log()
        );
    }
}

#[tokio::test]
async fn a_stream_that_closes_fails_the_pending_request_at_once() {
    let behaviour = SseBehaviour {
        close_on_call: true,
        ..SseBehaviour::default()
    };
    let server = SseServer::start(behaviour).await;
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_mode(TransportMode::Sse);
    let session = watchdog(LIMIT, Connector::new().connect(request))
        .await
        .unwrap();
    let error = watchdog(LIMIT, session.call_tool("x", &json!({})))
        .await
        .unwrap_err();
    assert_eq!(error.failure().closure, Some(Closure::Eof));
    assert!(
        session.call_tool("x", &json!({})).await.is_err(),
        "terminal"
    );
}
