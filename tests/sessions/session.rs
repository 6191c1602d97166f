//! Established sessions: terminal states, fail-fast after closure, idempotent
//! close, and what errors show.

use std::time::{Duration, Instant};

use crate::support::watchdog;
use mcp_connect::demo::DemoServer;
use mcp_connect::error::TransportError;
use mcp_connect::layers::{Closure, FailureKind};
use mcp_connect::protocol::{Notification, ProtocolVersion, Request, RequestId};
use mcp_connect::session::SessionState;
use mcp_connect::transport::{MemoryTransport, Transport};
use mcp_connect::{ConnectRequest, Connector};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

const LIMIT: Duration = Duration::from_secs(10);

#[tokio::test]
async fn session_404_is_terminal_and_later_calls_fail_fast_without_a_request() {
    let server = DemoServer::start().await.unwrap();
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_pin(ProtocolVersion::V2025_11_25);
    let session = watchdog(LIMIT, Connector::new().connect(request))
        .await
        .unwrap();
    assert_eq!(
        session
            .call_tool("add", &json!({ "a": 1, "b": 2 }))
            .await
            .unwrap()
            .text(),
        "3"
    );
    server.expire_sessions();
    let error = session
        .call_tool("add", &json!({ "a": 1, "b": 2 }))
        .await
        .unwrap_err();
    let failure = error.failure();
    assert_eq!(failure.kind, FailureKind::Closed);
    assert_eq!(failure.closure, Some(Closure::SessionExpired));
    assert_eq!(failure.http_status, Some(404));
    assert_eq!(
        session.state(),
        SessionState::Closed(Closure::SessionExpired)
    );
    let seen = server.requests();
    let again = session.list_tools().await.unwrap_err();
    assert_eq!(again.failure().closure, Some(Closure::SessionExpired));
    session.close().await.unwrap();
    assert_eq!(
        server.requests(),
        seen,
        "nothing is sent on an expired session, not even DELETE"
    );
}

#[tokio::test]
async fn close_is_idempotent_and_ends_the_server_session_once() {
    let server = DemoServer::start().await.unwrap();
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_pin(ProtocolVersion::V2025_11_25);
    let session = watchdog(LIMIT, Connector::new().connect(request))
        .await
        .unwrap();
    assert_eq!(server.open_sessions(), 1);
    session.close().await.unwrap();
    assert_eq!(server.open_sessions(), 0);
    let after_first = server.requests();
    session.close().await.unwrap();
    assert_eq!(server.requests(), after_first);
    assert_eq!(session.state(), SessionState::Closed(Closure::Local));
    assert!(session.list_tools().await.is_err());
}

#[tokio::test]
async fn modern_session_against_the_demo_server_calls_tools() {
    let server = DemoServer::start().await.unwrap();
    let session = watchdog(
        LIMIT,
        Connector::new().connect(ConnectRequest::http(&server.url()).unwrap()),
    )
    .await
    .unwrap();
    assert_eq!(session.protocol_version(), &ProtocolVersion::V2026_07_28);
    assert_eq!(
        session.stats().http_requests,
        1,
        "one discover and nothing else"
    );
    let tools = session.list_tools().await.unwrap();
    assert_eq!(
        tools
            .tools
            .iter()
            .map(|t| t.name.as_str())
            .collect::<Vec<_>>(),
        ["add", "echo"]
    );
    assert_eq!(
        session
            .call_tool("echo", &json!({ "message": "hi" }))
            .await
            .unwrap()
            .text(),
        "hi"
    );
    assert_eq!(server.sessions_created(), 0, "modern is stateless");
    session.close().await.unwrap();
}

#[tokio::test]
async fn every_pending_waiter_fails_at_once_when_the_stream_closes() {
    let (transport, server) = MemoryTransport::pair(1 << 20);
    let (read, mut write) = tokio::io::split(server);
    let mut lines = BufReader::new(read).lines();
    let requests: Vec<Request> = (1..=3)
        .map(|id| Request::new(RequestId::Number(id), "slow", None))
        .collect();
    let pending =
        futures_util::future::join_all(requests.iter().map(|r| transport.request(r, None)));
    let server_side = async {
        for _ in 0..3 {
            lines.next_line().await.unwrap().unwrap();
        }
        // A server request and a reply with an unknown id before closing: both harmless.
        write
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"method\":\"ping\"}\n")
            .await
            .unwrap();
        write
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":99,\"result\":{}}\n")
            .await
            .unwrap();
        let ping_answer = lines.next_line().await.unwrap().unwrap();
        write.shutdown().await.unwrap();
        drop(write);
        ping_answer
    };
    let started = Instant::now();
    let (results, ping_answer) =
        watchdog(LIMIT, async { tokio::join!(pending, server_side) }).await;
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(ping_answer, r#"{"jsonrpc":"2.0","id":"s1","result":{}}"#);
    for result in results {
        assert!(
            matches!(result, Err(TransportError::Closed(Closure::Eof))),
            "{result:?}"
        );
    }
    assert_eq!(transport.closed(), Some(Closure::Eof));
    let late = transport
        .notify(
            &Notification {
                method: "x".into(),
                params: None,
            },
            None,
        )
        .await;
    assert!(matches!(late, Err(TransportError::Closed(Closure::Eof))));
}

#[tokio::test]
async fn replies_are_matched_by_id_in_any_order() {
    let (transport, server) = MemoryTransport::pair(1 << 20);
    let (read, mut write) = tokio::io::split(server);
    let mut lines = BufReader::new(read).lines();
    let a = Request::new(RequestId::Number(1), "a", None);
    let b = Request::new(RequestId::Number(2), "b", None);
    let server_side = async {
        lines.next_line().await.unwrap();
        lines.next_line().await.unwrap();
        write
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":\"second\"}\n")
            .await
            .unwrap();
        write
            .write_all(
                b"{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32601,\"message\":\"m\"}}\n",
            )
            .await
            .unwrap();
    };
    let (ra, rb, ()) = watchdog(LIMIT, async {
        tokio::join!(
            transport.request(&a, None),
            transport.request(&b, None),
            server_side
        )
    })
    .await;
    assert_eq!(ra.unwrap().unwrap_err().code(), -32601);
    assert_eq!(rb.unwrap().unwrap().get(), "\"second\"");
    transport.close().await.unwrap();
}

/// Issue 10, item 4: a string request id through the public `Transport`
/// API is matched like a numeric one (it used to panic), and an id that is
/// already pending is a typed error, not a lost reply.
#[tokio::test]
async fn string_request_ids_are_served_and_duplicate_ids_are_refused() {
    let (transport, server) = MemoryTransport::pair(1 << 20);
    let (read, mut write) = tokio::io::split(server);
    let mut lines = BufReader::new(read).lines();
    let request = Request::new(RequestId::String("client-7".into()), "echo", None);
    let server_side = async {
        let line = lines.next_line().await.unwrap().unwrap();
        let sent: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(sent["id"], "client-7");
        write
            .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"client-7\",\"result\":\"back\"}\n")
            .await
            .unwrap();
    };
    let (reply, ()) = watchdog(LIMIT, async {
        tokio::join!(transport.request(&request, None), server_side)
    })
    .await;
    assert_eq!(reply.unwrap().unwrap().get(), "\"back\"");

    let first = transport.request(&request, None);
    let second = transport.request(&request, None);
    tokio::pin!(first);
    // Poll the first far enough to register its id, then send the second.
    let pending = std::future::poll_fn(|cx| {
        std::task::Poll::Ready(std::future::Future::poll(first.as_mut(), cx).is_pending())
    })
    .await;
    assert!(pending);
    let duplicate = watchdog(LIMIT, second).await.unwrap_err();
    assert!(
        matches!(duplicate, TransportError::DuplicateId),
        "{duplicate:?}"
    );
}

/// Issue 10, item 11: the per-request limit of an established session is
/// its own cancellation source, not the handshake's.
#[tokio::test(start_paused = true)]
async fn a_request_past_its_limit_reports_request_timeout() {
    use crate::support::{legacy, Script, ScriptServer};
    use mcp_connect::layers::CancelSource;
    use mcp_connect::request::Limits;

    let server = ScriptServer::start(|request| match request.rpc_method() {
        "tools/call" => Script::Stall,
        _ => legacy(request),
    })
    .await;
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_pin(ProtocolVersion::V2025_11_25)
        .with_limits(Limits::default().with_request_timeout(Duration::from_millis(200)));
    let session = watchdog(LIMIT, Connector::new().connect(request))
        .await
        .unwrap();
    let error = watchdog(LIMIT, session.call_tool("slow", &json!({})))
        .await
        .unwrap_err();
    let failure = error.failure();
    assert_eq!(failure.kind, FailureKind::Timeout);
    assert_eq!(failure.cancel_source, Some(CancelSource::RequestTimeout));
    assert_eq!(CancelSource::RequestTimeout.as_str(), "request_timeout");
}
