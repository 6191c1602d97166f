//! Bad input from servers and callers: each case gives a typed error, loses
//! nothing, and nothing hangs.

use mcp_connect::establish::stage;
use std::time::Duration;

use crate::support::{error, legacy, result, watchdog, Script, ScriptServer};
use mcp_connect::error::{ConfigError, TransportError, VersionError};
use mcp_connect::layers::{FailureKind, Stage};
use mcp_connect::protocol::ProtocolVersion;
use mcp_connect::request::{Limits, VersionPolicy};
use mcp_connect::{ConnectRequest, Connector, Error, ErrorKind, Session};
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(10);

async fn connect_with(server: &ScriptServer, limits: Limits) -> Result<Session, Error> {
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_limits(limits);
    watchdog(LIMIT, Connector::new().connect(request)).await
}

/// A legacy server whose `tools/call` answer is scripted.
async fn call_answered(call: fn(&crate::support::Recorded) -> Script) -> ScriptServer {
    ScriptServer::start(move |r| match r.rpc_method() {
        "server/discover" => Script::Status(404),
        "tools/call" => call(r),
        _ => legacy(r),
    })
    .await
}

fn transport_error(error: &Error) -> &TransportError {
    match error.kind() {
        ErrorKind::Transport(e) => e,
        other => panic!("expected a transport error, got {other:?}"),
    }
}

#[tokio::test]
async fn malformed_json_reply_is_a_typed_protocol_error() {
    let server = call_answered(|_| {
        Script::Raw(
            200,
            "application/json",
            "{\"jsonrpc\": \"2.0\", \"id\": 3, ".into(),
        )
    })
    .await;
    let session = connect_with(&server, Limits::default()).await.unwrap();
    let error = session.call_tool("x", &json!({})).await.unwrap_err();
    assert!(
        matches!(transport_error(&error), TransportError::Malformed(_)),
        "{error:?}"
    );
    assert_eq!(
        (error.stage(), error.failure().kind),
        (Stage::REQUEST, FailureKind::Protocol)
    );
}

/// Issue 24, item 3.9 (one rule for every transport): a reply to an id no
/// request waits for is dropped and counted; over HTTP the body then ends
/// without this request's reply, which is `NoReply`.
#[tokio::test]
async fn reply_with_an_unknown_id_is_dropped_and_counted() {
    let server =
        call_answered(|_| Script::Json(200, json!({ "jsonrpc": "2.0", "id": 999, "result": {} })))
            .await;
    let session = connect_with(&server, Limits::default()).await.unwrap();
    let error = session.call_tool("x", &json!({})).await.unwrap_err();
    assert!(
        matches!(transport_error(&error), TransportError::NoReply),
        "{error:?}"
    );
    assert_eq!(session.stats().skipped, 1);
}

/// Item 3.9: a stray reply beside the real one, in a batch body or on an
/// SSE reply stream (with an event that is not JSON-RPC), is dropped; the
/// request gets its own reply.
#[tokio::test]
async fn a_stray_reply_beside_the_real_one_is_dropped_over_http() {
    fn stray() -> serde_json::Value {
        json!({ "jsonrpc": "2.0", "id": 999, "result": {} })
    }
    fn content() -> serde_json::Value {
        json!({ "content": [{ "type": "text", "text": "ok" }] })
    }
    let batch = call_answered(|r| Script::Json(200, json!([stray(), result(r, content())]))).await;
    let session = connect_with(&batch, Limits::default()).await.unwrap();
    assert_eq!(
        session.call_tool("x", &json!({})).await.unwrap().text(),
        "ok"
    );
    assert_eq!(session.stats().skipped, 1);
    let stream = call_answered(|r| {
        Script::Sse(vec![
            "data: this is not JSON-RPC\n\n".to_owned(),
            format!("data: {}\n\n", stray()),
            format!("data: {}\n\n", result(r, content())),
        ])
    })
    .await;
    let session = connect_with(&stream, Limits::default()).await.unwrap();
    assert_eq!(
        session.call_tool("x", &json!({})).await.unwrap().text(),
        "ok"
    );
    assert_eq!(session.stats().skipped, 2);
}

#[tokio::test]
async fn oversized_sse_event_and_oversized_json_body_are_refused() {
    let limits = Limits::default().with_max_message_bytes(4096);
    let server =
        call_answered(|_| Script::Sse(vec![format!("data: {}\n\n", "x".repeat(10_000))])).await;
    let session = connect_with(&server, limits).await.unwrap();
    let error = session.call_tool("x", &json!({})).await.unwrap_err();
    assert!(
        matches!(transport_error(&error), TransportError::SseTooLarge(_)),
        "{error:?}"
    );

    let server = call_answered(|r| {
        Script::Json(
            200,
            result(
                r,
                json!({ "content": [{ "type": "text", "text": "y".repeat(10_000) }] }),
            ),
        )
    })
    .await;
    let session = connect_with(&server, limits).await.unwrap();
    let error = session.call_tool("x", &json!({})).await.unwrap_err();
    assert!(
        matches!(
            transport_error(&error),
            TransportError::TooLarge { limit: 4096 }
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_server_answering_a_version_we_do_not_speak_is_refused() {
    let server = ScriptServer::start(|r| match r.rpc_method() {
        "server/discover" => Script::Status(404),
        "initialize" => Script::Json(
            200,
            result(
                r,
                json!({ "protocolVersion": "2099-01-01", "capabilities": {}, "serverInfo": {} }),
            ),
        ),
        _ => legacy(r),
    })
    .await;
    let error = connect_with(&server, Limits::default()).await.unwrap_err();
    match error.kind() {
        ErrorKind::Version(VersionError::NotAllowed { offered }) => {
            assert_eq!(offered.as_str(), "2099-01-01")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(server.methods(), ["server/discover", "initialize"]);
}

#[tokio::test]
async fn an_html_page_is_not_an_mcp_server() {
    // A web server that answers everything with a 200 page.
    let server =
        ScriptServer::start(|_| Script::Raw(200, "text/html", "<html>hello</html>".into())).await;
    let error = connect_with(&server, Limits::default()).await.unwrap_err();
    assert!(
        matches!(transport_error(&error), TransportError::ContentType),
        "{error:?}"
    );
    assert_eq!(error.failure().kind, FailureKind::Protocol);

    // One that answers everything with a 404 page: the probe reads as legacy,
    // initialize then fails with the status.
    let server =
        ScriptServer::start(|_| Script::Raw(404, "text/html", "<h1>Not Found</h1>".into())).await;
    let error = connect_with(&server, Limits::default()).await.unwrap_err();
    let failure = error.failure();
    assert_eq!(
        (failure.stage, failure.kind, failure.http_status),
        (stage::INITIALIZE, FailureKind::HttpStatus, Some(404))
    );
}

#[tokio::test]
async fn initialize_result_of_the_wrong_shape_is_a_typed_error() {
    let server = ScriptServer::start(|r| match r.rpc_method() {
        "server/discover" => Script::Status(404),
        "initialize" => Script::Json(200, result(r, json!({ "capabilities": {} }))),
        _ => legacy(r),
    })
    .await;
    let error = connect_with(&server, Limits::default()).await.unwrap_err();
    assert!(matches!(error.kind(), ErrorKind::Result(_)), "{error:?}");
}

#[tokio::test(start_paused = true)]
async fn a_stalled_initialize_ends_at_the_handshake_limit() {
    let server = ScriptServer::start(|r| match r.rpc_method() {
        "server/discover" => Script::Json(400, error(r, -32601, None)),
        "initialize" => Script::Stall,
        _ => legacy(r),
    })
    .await;
    let limits = Limits::default().with_handshake_timeout(Duration::from_millis(200));
    let error = connect_with(&server, limits).await.unwrap_err();
    let failure = error.failure();
    assert_eq!(
        (failure.stage, failure.kind),
        (stage::INITIALIZE, FailureKind::Timeout)
    );
}

#[test]
fn invalid_urls_headers_and_versions_are_configuration_errors() {
    for url in ["", "ftp://example.com/mcp", "/mcp", "http://", "not a url"] {
        let error = ConnectRequest::http(url).unwrap_err();
        assert!(
            matches!(error.kind(), ErrorKind::Config(ConfigError::Url)),
            "{url:?}"
        );
        assert_eq!(error.stage(), Stage::CONFIGURE);
    }
    let request = ConnectRequest::http("http://127.0.0.1:1/mcp").unwrap();
    assert!(request.clone().with_header("bad header", "x").is_err());
    assert!(request
        .clone()
        .with_header("authorization", "line\nbreak")
        .is_err());
    assert!(VersionPolicy::Pin(ProtocolVersion::new("2099-01-01"))
        .validate()
        .is_err());
}

/// Issue 10, item 2: `http::Uri` reads an unrepresentable port as "no
/// port" (then port 80); here it is a typed error.
#[test]
fn ports_outside_1_to_65535_are_configuration_errors() {
    for url in [
        "http://127.0.0.1:99999/mcp",
        "http://127.0.0.1:65536/mcp",
        "http://127.0.0.1:4294967376/mcp",
        "http://127.0.0.1:0/mcp",
        "https://user:pw@example.com:70000/mcp",
        "http://[::1]:99999/mcp",
    ] {
        let error = ConnectRequest::http(url).unwrap_err();
        assert!(
            matches!(error.kind(), ErrorKind::Config(ConfigError::Port)),
            "{url:?}: {error:?}"
        );
    }
    for url in [
        "http://127.0.0.1:65535/mcp",
        "http://[::1]:8080/mcp",
        "http://h/mcp",
    ] {
        assert!(ConnectRequest::http(url).is_ok(), "{url}");
    }
}

/// Issue 10, item 7: headers that belong to the framing or the transport
/// are refused; limits of zero and transports that do not fit the target
/// fail validation before any I/O.
#[tokio::test]
async fn reserved_headers_zero_limits_and_misfit_transports_are_refused_before_io() {
    let server = ScriptServer::start(legacy).await;
    let request = ConnectRequest::http(&server.url()).unwrap();
    for name in [
        "Host",
        "content-length",
        "Transfer-Encoding",
        "Connection",
        "Upgrade",
        "Mcp-Session-Id",
        "MCP-Protocol-Version",
        "Content-Type",
    ] {
        let error = request.clone().with_header(name, "x").unwrap_err();
        assert!(
            matches!(error.kind(), ErrorKind::Config(ConfigError::ReservedHeader)),
            "{name}"
        );
    }
    assert!(request.clone().with_header("X-Api-Key", "x").is_ok());
    let misfits = [
        request
            .clone()
            .with_limits(Limits::default().with_probe_timeout(Duration::ZERO)),
        request
            .clone()
            .with_limits(Limits::default().with_max_message_bytes(0)),
        request
            .clone()
            .with_mode(mcp_connect::request::TransportMode::Stdio),
        ConnectRequest::stdio(mcp_connect::transport::StdioCommand::new("cat"))
            .with_mode(mcp_connect::request::TransportMode::Sse),
        request.clone().with_ceiling(ProtocolVersion::new("2026")),
    ];
    for bad in misfits {
        let error = bad.validate().unwrap_err();
        assert_eq!(error.failure().kind, FailureKind::Configuration, "{bad:?}");
        let error = watchdog(LIMIT, Connector::new().connect(bad))
            .await
            .unwrap_err();
        assert_eq!(error.failure().kind, FailureKind::Configuration);
    }
    assert!(server.recorded().is_empty(), "nothing was sent");
}

/// Limits of `Duration::MAX` mean "no limit"; they must not overflow an
/// `Instant` (a panic through the public API before).
#[tokio::test]
async fn limits_of_duration_max_do_not_panic() {
    let server = ScriptServer::start(legacy).await;
    let limits = Limits::default()
        .with_probe_timeout(Duration::MAX)
        .with_handshake_timeout(Duration::MAX)
        .with_request_timeout(Duration::MAX);
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_pin(ProtocolVersion::V2025_11_25)
        .with_limits(limits);
    let session = watchdog(LIMIT, Connector::new().connect(request))
        .await
        .unwrap();
    watchdog(LIMIT, session.call_tool("x", &json!({})))
        .await
        .unwrap();
    let stack = mcp_connect::EstablishBuilder::new(Connector::new())
        .with_deadline(Duration::MAX)
        .build();
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_pin(ProtocolVersion::V2025_11_25)
        .with_limits(limits);
    watchdog(LIMIT, stack.connect(request)).await.unwrap();
}

#[tokio::test]
async fn an_unknown_pinned_version_fails_before_any_io() {
    let server = ScriptServer::start(legacy).await;
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_pin(ProtocolVersion::new("2099-01-01"));
    let error = watchdog(LIMIT, Connector::new().connect(request))
        .await
        .unwrap_err();
    assert_eq!(error.failure().kind, FailureKind::Configuration);
    assert!(server.recorded().is_empty());
}

#[tokio::test]
async fn a_chunked_200_carrying_a_correlated_json_rpc_error_is_that_error() {
    let server = call_answered(|r| {
        let body = error(r, -32603, None).to_string();
        let (a, b) = body.split_at(body.len() / 2);
        Script::Chunked(vec![a.to_owned(), b.to_owned()])
    })
    .await;
    let session = connect_with(&server, Limits::default()).await.unwrap();
    let error = session.call_tool("x", &json!({})).await.unwrap_err();
    let failure = error.failure();
    assert_eq!(
        (failure.kind, failure.jsonrpc_code, failure.http_status),
        (FailureKind::Rpc, Some(-32603), None)
    );
    assert_eq!(
        error.rpc_error().unwrap().message(),
        "scripted error",
        "the server's words stay reachable"
    );
}

#[tokio::test]
async fn a_404_invalid_session_on_a_later_post_ends_the_session() {
    let server = call_answered(|r| {
        Script::Raw(
            404,
            "text/plain",
            format!("invalid session for {}", r.id()).into(),
        )
    })
    .await;
    let session = connect_with(&server, Limits::default()).await.unwrap();
    let error = session.call_tool("x", &json!({})).await.unwrap_err();
    assert!(
        matches!(
            transport_error(&error),
            TransportError::SessionExpired {
                jsonrpc_code: None,
                request_refused: true
            }
        ),
        "{error:?}"
    );
    assert_eq!(
        session.state(),
        mcp_connect::session::SessionState::Closed(mcp_connect::layers::Closure::SessionExpired)
    );
}

#[tokio::test]
async fn userinfo_leaves_the_url_and_travels_as_basic_authorization() {
    let server = ScriptServer::start(legacy).await;
    let url = server.url().replace("http://", "http://alice:s3cret@");
    let request = ConnectRequest::http(&url)
        .unwrap()
        .with_pin(ProtocolVersion::V2025_11_25);
    assert!(!format!("{request:?}").contains("s3cret"));
    watchdog(LIMIT, Connector::new().connect(request))
        .await
        .unwrap();
    let init = &server.recorded()[0];
    // base64("alice:s3cret")
    assert_eq!(init.header("authorization"), Some("Basic YWxpY2U6czNjcmV0"));
    assert!(init.header("host").is_some_and(|h| !h.contains('@')));
}

/// Issue 24, item 3.5: userinfo is percent-decoded before it becomes Basic
/// credentials, as RFC 3986 and curl have it.
#[tokio::test]
async fn userinfo_is_percent_decoded_into_basic_credentials() {
    use base64::Engine as _;
    let server = ScriptServer::start(legacy).await;
    for (userinfo, expected) in [
        ("user:p%40ss%3Aw0rd", "user:p@ss:w0rd"),
        ("us%3Aer:pw", "us:er:pw"),
        ("only%20user", "only user:"),
        ("caf%C3%A9:%E2%9C%93", "café:✓"),
    ] {
        let url = server
            .url()
            .replace("http://", &format!("http://{userinfo}@"));
        let request = ConnectRequest::http(&url)
            .unwrap()
            .with_pin(ProtocolVersion::V2025_11_25);
        let session = watchdog(LIMIT, Connector::new().connect(request))
            .await
            .unwrap();
        session.close().await.unwrap();
        let sent = server.recorded().pop().unwrap();
        let encoded = base64::engine::general_purpose::STANDARD.encode(expected);
        assert_eq!(
            sent.header("authorization"),
            Some(format!("Basic {encoded}").as_str()),
            "{userinfo}"
        );
    }
}

/// Issue 41, item 11: every limit, and the deadline over them, may be 0,
/// 1 ns or `Duration::MAX`: no panic (the close bound of a disposed
/// attempt, `close_grace * 3`, overflowed), and a typed outcome, against
/// an HTTP server and a stdio server that exits on the probe (so an
/// attempt's transport is disposed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_limit_from_zero_to_duration_max_gives_a_typed_outcome() {
    use mcp_connect::layers::recovery::RecoveryPolicy;
    use mcp_connect::{EstablishBuilder, McpClient};
    let server = ScriptServer::start(|r| match r.rpc_method() {
        "server/discover" => Script::Status(404),
        _ => legacy(r),
    })
    .await;
    let values = [Duration::ZERO, Duration::from_nanos(1), Duration::MAX];
    let limits = |which: usize, value: Duration| {
        let limits = Limits::default();
        match which {
            0 => limits.with_probe_timeout(value),
            1 => limits.with_handshake_timeout(value),
            2 => limits.with_request_timeout(value),
            3 => limits.with_close_grace(value),
            _ => limits,
        }
    };
    for which in 0..5 {
        for value in values {
            let deadline = if which == 4 {
                value
            } else {
                Duration::from_secs(10)
            };
            let targets = [
                ConnectRequest::http(&server.url()).unwrap(),
                ConnectRequest::stdio(crate::support::fixture(&["--exit-on", "server/discover"])),
            ];
            for request in targets {
                let stack = EstablishBuilder::new(Connector::new())
                    .with_deadline(deadline)
                    .with_recovery(RecoveryPolicy::new().with_max_attempts(2))
                    .build();
                let request = request.with_limits(limits(which, value));
                let outcome = watchdog(LIMIT, async {
                    let client = McpClient::builder(stack, request).connect().await?;
                    let called = client.call_tool("x", &json!({})).await.map(drop);
                    let _ = client.close().await;
                    called
                })
                .await;
                if let Err(error) = outcome {
                    // Typed: a failure with a kind, printed whole.
                    let _ = error.failure().kind;
                    assert!(!error.to_string().is_empty());
                }
            }
        }
    }
}
