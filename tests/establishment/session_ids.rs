//! Issue 24, items 3.2 and 3.8: the session id comes from the `initialize`
//! response only, and only when the spec allows it (visible ASCII, bounded
//! length); an invalid one is a typed protocol failure at establishment
//! and is never sent back.

use std::time::Duration;

use crate::support::{error, result, watchdog, Recorded, Script, ScriptServer};
use mcp_connect::error::TransportError;
use mcp_connect::layers::FailureKind;
use mcp_connect::{ConnectRequest, Connector, ErrorKind};
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(20);

/// A legacy server that assigns `id` on `initialize` and, on the refused
/// probe, `probe-session`.
fn assigning(id: &'static [u8]) -> impl Fn(&Recorded) -> Script + Send + Sync + 'static {
    move |r: &Recorded| match r.rpc_method() {
        "server/discover" => Script::JsonWith(
            400,
            error(r, -32000, None),
            vec![("mcp-session-id", "probe-session".into())],
        ),
        "initialize" => Script::JsonWithBytes(
            200,
            result(
                r,
                json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "serverInfo": { "name": "ids", "version": "1" }
                }),
            ),
            vec![("mcp-session-id", id.to_vec())],
        ),
        "notifications/initialized" => Script::Status(202),
        "tools/call" => Script::Json(
            200,
            result(r, json!({ "content": [{ "type": "text", "text": "ok" }] })),
        ),
        _ => Script::Status(200),
    }
}

/// Item 3.2: an id set on the refused probe is not kept; the one the
/// `initialize` response assigns is sent on every later request.
#[tokio::test]
async fn the_session_id_comes_from_the_initialize_response_only() {
    let server = ScriptServer::start(assigning(b"init-session")).await;
    let session = watchdog(
        LIMIT,
        Connector::new().connect(ConnectRequest::http(&server.url()).unwrap()),
    )
    .await
    .unwrap();
    session.call_tool("x", &json!({})).await.unwrap();
    session.close().await.unwrap();
    let sent: Vec<(String, Option<String>)> = server
        .recorded()
        .iter()
        .map(|r| {
            (
                format!("{} {}", r.method, r.rpc_method()),
                r.header("mcp-session-id").map(str::to_owned),
            )
        })
        .collect();
    let expected = |what: &str, id: Option<&str>| (what.to_owned(), id.map(str::to_owned));
    assert_eq!(
        sent,
        vec![
            expected("POST server/discover", None),
            expected("POST initialize", None),
            expected("POST notifications/initialized", Some("init-session")),
            expected("POST tools/call", Some("init-session")),
            expected("DELETE ", Some("init-session")),
        ]
    );
}

/// Item 3.8: ids with a byte outside visible ASCII, a tab, a space, an
/// empty one, or one of 100 KB fail establishment as a protocol failure
/// (`InvalidSessionId`), and no later request carries them.
#[tokio::test]
async fn an_invalid_session_id_fails_establishment_and_is_never_echoed() {
    let long: &'static [u8] = Box::leak(vec![b'a'; 100_000].into_boxed_slice());
    let cases: [(&str, &'static [u8]); 6] = [
        ("0xFF", b"abc\xffdef"),
        ("tab", b"abc\tdef"),
        ("space", b"abc def"),
        ("empty", b""),
        ("100 KB", long),
        ("257 bytes", Box::leak(vec![b'b'; 257].into_boxed_slice())),
    ];
    for (name, id) in cases {
        let server = ScriptServer::start(assigning(id)).await;
        let error = watchdog(
            LIMIT,
            Connector::new().connect(ConnectRequest::http(&server.url()).unwrap()),
        )
        .await
        .unwrap_err();
        assert!(
            matches!(
                error.kind(),
                ErrorKind::Transport(TransportError::InvalidSessionId)
            ),
            "{name}: {error:?}"
        );
        assert_eq!(error.failure().kind, FailureKind::Protocol, "{name}");
        assert!(
            server
                .recorded()
                .iter()
                .all(|r| r.header("mcp-session-id").is_none()
                    && r.headers.get("mcp-session-id").is_none()),
            "{name}: the id was sent back"
        );
    }
    // At the bound, visible ASCII from `!` to `~`, it is kept.
    let edge: &'static [u8] = Box::leak(
        (0x21u8..=0x7E)
            .cycle()
            .take(256)
            .collect::<Vec<u8>>()
            .into_boxed_slice(),
    );
    let server = ScriptServer::start(assigning(edge)).await;
    let session = watchdog(
        LIMIT,
        Connector::new().connect(ConnectRequest::http(&server.url()).unwrap()),
    )
    .await
    .unwrap();
    session.close().await.unwrap();
    let last = server.recorded().pop().unwrap();
    assert_eq!(last.headers.get("mcp-session-id").unwrap().as_bytes(), edge);
}
