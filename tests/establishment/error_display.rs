//! No `Display` repeats its source (issue 10, item 12): a chain printed link
//! by link (as `anyhow`, `eyre` and the command do) says each thing once.

use std::error::Error as StdError;
use std::time::Duration;

use crate::support::{legacy, watchdog, Script, ScriptServer};
use mcp_connect::layers::recovery::{Backoff, RecoveryPolicy};
use mcp_connect::protocol::ProtocolVersion;
use mcp_connect::{ConnectRequest, Connector, EstablishBuilder, McpClient};
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(20);

fn assert_says_each_thing_once(error: &(dyn StdError + 'static)) {
    let mut links = Vec::new();
    let mut current = Some(error);
    while let Some(link) = current {
        links.push(link.to_string());
        current = link.source();
    }
    for pair in links.windows(2) {
        assert!(
            !pair[0].contains(&pair[1]),
            "{:?} repeats its source {:?} (whole chain: {links:?})",
            pair[0],
            pair[1]
        );
    }
}

/// A refusing port, reserved for the rest of the test binary's life.
fn closed_port_url() -> String {
    static PORT: std::sync::LazyLock<crate::support::ClosedPort> =
        std::sync::LazyLock::new(crate::support::ClosedPort::new);
    PORT.url("/mcp")
}

#[tokio::test]
async fn establishment_and_client_errors_say_each_thing_once() {
    let url = closed_port_url();
    // Connector, stack without and with recovery, and the long-lived client.
    let direct = Connector::new()
        .connect(ConnectRequest::http(&url).unwrap())
        .await
        .unwrap_err();
    assert_says_each_thing_once(&direct);
    for policy in [
        RecoveryPolicy::disabled(),
        RecoveryPolicy::new().with_backoff(Backoff::NONE),
    ] {
        let stack = EstablishBuilder::new(Connector::new())
            .with_recovery(policy)
            .build();
        let error = watchdog(LIMIT, stack.connect(ConnectRequest::http(&url).unwrap()))
            .await
            .unwrap_err();
        assert_says_each_thing_once(&error);
        let client = McpClient::builder(stack, ConnectRequest::http(&url).unwrap()).build();
        let error = watchdog(LIMIT, client.call_tool("x", &json!({})))
            .await
            .unwrap_err();
        assert_says_each_thing_once(&error);
        let cooling = watchdog(LIMIT, client.call_tool("x", &json!({}))).await;
        if let Err(error) = cooling {
            assert_says_each_thing_once(&error);
        }
    }
}

#[tokio::test]
async fn call_errors_say_each_thing_once() {
    let server = ScriptServer::start(|request| match request.rpc_method() {
        "tools/call" => Script::Json(200, crate::support::error(request, -32602, None)),
        "tools/list" => Script::Status(500),
        _ => legacy(request),
    })
    .await;
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_pin(ProtocolVersion::V2025_11_25);
    let client =
        McpClient::builder(EstablishBuilder::new(Connector::new()).build(), request).build();
    let rpc = watchdog(LIMIT, client.call_tool("x", &json!({})))
        .await
        .unwrap_err();
    assert_says_each_thing_once(&rpc);
    assert!(rpc.to_string().starts_with("call_tool failed on session 1"));
    let status = watchdog(LIMIT, client.list_tools()).await.unwrap_err();
    assert_says_each_thing_once(&status);
}
