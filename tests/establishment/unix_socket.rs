//! Streamable HTTP over a Unix socket (issue 45, item 5): the URL gives
//! the path and `Host`, the socket the connection; both eras work over it,
//! the socket is part of the server's identity, and TLS is never faked.

use std::path::PathBuf;
use std::time::Duration;

use crate::support::watchdog;
use mcp_connect::demo::DemoServer;
use mcp_connect::layers::FailureKind;
use mcp_connect::protocol::{Era, ProtocolVersion};
use mcp_connect::{ConnectRequest, Connector};
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(10);

fn socket_path(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("mcp-connect-{}-{name}.sock", std::process::id()))
}

fn over(socket: &std::path::Path) -> ConnectRequest {
    ConnectRequest::http("http://localhost/mcp")
        .unwrap()
        .with_unix_socket(socket)
}

#[tokio::test]
async fn both_eras_are_reached_over_a_unix_socket() {
    let socket = socket_path("eras");
    let server = DemoServer::start_on_unix_socket(&socket).await.unwrap();
    let connector = Connector::new();

    let modern = watchdog(LIMIT, connector.connect(over(&socket)))
        .await
        .unwrap();
    assert_eq!(modern.era(), Era::Modern);
    let sum = modern
        .call_tool("add", &json!({ "a": 2, "b": 3 }))
        .await
        .unwrap();
    let text = serde_json::to_value(&sum.content).unwrap();
    assert_eq!(text[0]["text"], "5", "{text}");

    let legacy = over(&socket).with_pin(ProtocolVersion::V2025_11_25);
    let legacy = watchdog(LIMIT, connector.connect(legacy)).await.unwrap();
    assert_eq!(legacy.era(), Era::Legacy);
    assert_eq!(server.sessions_created(), 1);
    legacy.close().await.unwrap();
    assert!(server.requests() >= 3);
    let _ = std::fs::remove_file(&socket);
}

#[tokio::test]
async fn the_socket_selects_the_server_and_https_is_refused_unsent() {
    let url = "http://localhost/mcp";
    let tcp = ConnectRequest::http(url).unwrap();
    let one = over(&socket_path("one"));
    let two = over(&socket_path("two"));
    let identities = [&tcp, &one, &two].map(|r| r.target().identity());
    assert!(identities[0] != identities[1] && identities[1] != identities[2]);
    assert_eq!(
        one.target().unix_socket(),
        Some(socket_path("one").as_path())
    );
    assert!(!format!("{:?}", one.target()).is_empty());

    // No socket there: a connect failure a fresh attempt may retry.
    let error = watchdog(LIMIT, Connector::new().connect(one))
        .await
        .unwrap_err();
    assert_eq!(error.failure().kind, FailureKind::Connect, "{error}");

    // TLS over the socket would be a lie: refused before any I/O.
    let secure = ConnectRequest::http("https://localhost/mcp")
        .unwrap()
        .with_unix_socket(socket_path("tls"));
    let error = watchdog(LIMIT, Connector::new().connect(secure))
        .await
        .unwrap_err();
    assert_eq!(error.failure().kind, FailureKind::Configuration, "{error}");
}
