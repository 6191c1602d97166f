//! rmcp's typed client where rmcp alone cannot go: a legacy HTTP+SSE server
//! (rmcp 3.11 has no HTTP+SSE client), and a server whose first
//! `initialize` is cut (rmcp has no fresh-session recovery). Both are
//! loopback testkit servers; the same code reaches real ones.
//!
//! ```text
//! cargo run --manifest-path rmcp-bridge/Cargo.toml --example rmcp_bridge
//! ```

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use mcp_connect::layers::recovery::RecoveryPolicy;
use mcp_connect::request::TransportMode;
use mcp_connect::testkit::{LegacyServer, Script, ScriptServer, SseBehaviour, SseServer};
use mcp_connect::{ConnectRequest, Connector, EstablishBuilder};
use rmcp::model::{CallToolRequestParams, ClientConfig};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // One stack for both: a 10 s deadline over everything, and up to three
    // attempts, each on a fresh transport and session.
    let stack = EstablishBuilder::new(Connector::new())
        .with_deadline(Duration::from_secs(10))
        .with_recovery(RecoveryPolicy::new().with_max_attempts(3))
        .build();

    // 1. A 2024-11-05 server that speaks only HTTP+SSE.
    let sse = SseServer::start(SseBehaviour::default()).await;
    let request = ConnectRequest::http(&sse.url())?.with_mode(TransportMode::Sse);
    let client = mcp_connect_rmcp::connect(&stack, request, ClientConfig::default()).await?;
    let version = client
        .peer_info()
        .map(|info| info.protocol_version.to_string());
    let tools = client.list_all_tools().await?;
    let result = client
        .call_tool(CallToolRequestParams::new(tools[0].name.clone()))
        .await?;
    println!(
        "HTTP+SSE server: protocol {}, {} tool(s), {} answered: {}",
        version.unwrap_or_default(),
        tools.len(),
        tools[0].name,
        first_text(&result)
    );
    client.cancel().await?;

    // 2. A 2025-11-25 server whose first `initialize` is reset.
    let legacy = LegacyServer::new();
    let cut = AtomicBool::new(false);
    let responder = legacy.clone();
    let server = ScriptServer::start(move |request| match request.rpc_method() {
        "initialize" if !cut.swap(true, Ordering::SeqCst) => Script::ResetBeforeHeaders,
        _ => responder.respond(request),
    })
    .await;
    let request = ConnectRequest::http(&server.url())?;
    let client = mcp_connect_rmcp::connect(&stack, request, ClientConfig::default()).await?;
    let result = client.call_tool(CallToolRequestParams::new("work")).await?;
    println!(
        "server with a cut initialize: {} initialize requests, 1 session, the call answered: {}",
        server.count("initialize"),
        first_text(&result)
    );
    client.cancel().await?;
    Ok(())
}

fn first_text(result: &rmcp::model::CallToolResult) -> String {
    serde_json::to_value(result).unwrap_or_default()["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}
