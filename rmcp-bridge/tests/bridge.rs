//! rmcp's client over the bridge against rmcp's own server and the
//! testkit's faulty and legacy servers.

mod support;

use std::sync::atomic::Ordering;
use std::time::Duration;

use mcp_connect::layers::recovery::{Backoff, RecoveryPolicy};
use mcp_connect::protocol::ProtocolVersion;
use mcp_connect::request::TransportMode;
use mcp_connect::testkit::{LegacyServer, Script, ScriptServer, SseBehaviour, SseServer};
use mcp_connect::{ConnectRequest, Connector, Establish, EstablishBuilder};
use rmcp::model::CallToolRequestParams;
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(20);

fn stack() -> Establish {
    EstablishBuilder::new(Connector::new())
        .with_recovery(
            RecoveryPolicy::new()
                .with_max_attempts(3)
                .with_backoff(Backoff::NONE),
        )
        .build()
}

fn call(name: &str, arguments: serde_json::Value) -> CallToolRequestParams {
    serde_json::from_value(json!({ "name": name, "arguments": arguments })).unwrap()
}

fn text(result: &rmcp::model::CallToolResult) -> String {
    let value = serde_json::to_value(result).unwrap();
    value["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

async fn within<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, future).await.expect("in time")
}

#[tokio::test(flavor = "multi_thread")]
async fn rmcp_lists_calls_samples_and_hears_progress_from_rmcps_server() {
    for version in [ProtocolVersion::V2025_11_25, ProtocolVersion::V2026_07_28] {
        let (url, seen) = support::start().await;
        let handler = support::Handler::default();
        let request = ConnectRequest::http(&url)
            .unwrap()
            .with_pin(version.clone());
        let client = within(mcp_connect_rmcp::connect(
            &stack(),
            request,
            handler.clone(),
        ))
        .await
        .unwrap();
        let info = client.peer_info().expect("server info");
        assert_eq!(info.protocol_version.to_string(), version.as_str());

        let tools = within(client.list_all_tools()).await.unwrap();
        let mut names: Vec<_> = tools.iter().map(|t| t.name.to_string()).collect();
        names.sort();
        assert_eq!(names, ["add", "ask", "slow"], "{version:?}");

        let sum = within(client.call_tool(call("add", json!({ "a": 2, "b": 3 }))))
            .await
            .unwrap();
        assert_eq!(text(&sum), "5");

        // A server request answered by rmcp's handler, through the session
        // (2026-07-28 has no server-to-client requests: its servers ask
        // with input_required results instead).
        if version == ProtocolVersion::V2025_11_25 {
            let asked = within(client.call_tool(call("ask", json!({}))))
                .await
                .unwrap();
            assert_eq!(text(&asked), "from the model");
            assert_eq!(handler.sampled.load(Ordering::Relaxed), 1);
        }

        // Progress notifications reach rmcp's handler.
        let params: CallToolRequestParams = serde_json::from_value(json!({
            "name": "slow", "arguments": {}, "_meta": { "progressToken": 7 }
        }))
        .unwrap();
        let done = within(client.call_tool(params)).await.unwrap();
        assert_eq!(text(&done), "done");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
        while handler.progress.lock().unwrap().len() < 3 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // rmcp runs each notification's handler on a task of its own, so
        // its handler may see them in any order; each arrives once.
        let mut progress = handler.progress.lock().unwrap().clone();
        progress.sort_by(f64::total_cmp);
        assert_eq!(progress, [1.0, 2.0, 3.0], "{version:?}");

        // Closing rmcp's service closes the session once.
        within(client.cancel()).await.unwrap();
        let deletes = seen.deletes.load(Ordering::Relaxed);
        let expected = if version == ProtocolVersion::V2025_11_25 {
            1
        } else {
            0
        };
        assert_eq!(
            deletes, expected,
            "DELETE once on a session, never on 2026 ({version:?})"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn rmcp_reaches_a_legacy_http_sse_server_through_the_bridge() {
    let server = SseServer::start(SseBehaviour::default()).await;
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_mode(TransportMode::Sse)
        .with_pin(ProtocolVersion::V2024_11_05);
    let client = within(mcp_connect_rmcp::connect(&stack(), request, ()))
        .await
        .unwrap();
    assert_eq!(
        client.peer_info().unwrap().protocol_version.to_string(),
        "2024-11-05"
    );
    let tools = within(client.list_all_tools()).await.unwrap();
    assert!(!tools.is_empty());
    let result = within(client.call_tool(call(&tools[0].name, json!({ "text": "hi" }))))
        .await
        .unwrap();
    assert_eq!(text(&result), "over sse");
    within(client.cancel()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cut_first_initialize_is_recovered_before_rmcp_starts() {
    let legacy = LegacyServer::new();
    let responder = legacy.clone();
    let cut = std::sync::atomic::AtomicBool::new(false);
    let server = ScriptServer::start(move |r| match r.rpc_method() {
        "initialize" if !cut.swap(true, Ordering::SeqCst) => Script::ResetBeforeHeaders,
        _ => responder.respond(r),
    })
    .await;
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_pin(ProtocolVersion::V2025_11_25);
    let client = within(mcp_connect_rmcp::connect(&stack(), request, ()))
        .await
        .unwrap();
    let result = within(client.call_tool(call("x", json!({}))))
        .await
        .unwrap();
    assert_eq!(text(&result), "ok");
    assert_eq!(legacy.sessions_created(), 1);
    assert_eq!(
        server.count("initialize"),
        2,
        "the cut one, then the fresh one"
    );
    within(client.cancel()).await.unwrap();
    assert_eq!(legacy.sessions_deleted(), 1, "closed once");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lost_session_closes_rmcps_transport_and_the_next_generation_is_one_call_away() {
    let legacy = LegacyServer::new();
    let server = ScriptServer::start(legacy.clone().responder()).await;
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_pin(ProtocolVersion::V2025_11_25);
    let clients = mcp_connect_rmcp::Reconnecting::new(stack(), request, ());
    let (client, generation) = within(clients.service()).await.unwrap();
    assert_eq!(generation, 1);
    within(client.call_tool(call("x", json!({}))))
        .await
        .unwrap();

    legacy.expire_sessions();
    let failed = within(client.call_tool(call("x", json!({})))).await;
    match failed {
        // Issue 41, item 9: the lost session is said, not an internal error.
        Err(rmcp::ServiceError::McpError(error)) => {
            let data = error.data.expect("data");
            assert_eq!(data[mcp_connect_rmcp::SESSION_LOST], true, "{data}");
        }
        other => panic!("the call on the lost session fails: {other:?}"),
    }
    let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
    while !client.is_transport_closed() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        client.is_transport_closed(),
        "rmcp sees its transport closed"
    );

    let (again, generation) = within(clients.service()).await.unwrap();
    assert_eq!(generation, 2);
    within(again.call_tool(call("x", json!({})))).await.unwrap();
    assert_eq!(legacy.tool_calls(), 2, "nothing replayed");
    assert_eq!(legacy.sessions_created(), 2);
    within(clients.close()).await;
}

/// Issue 41, item 9: a failed reconnect does not make the bridge forget its
/// generation: the next session is generation 2, not 1 again.
#[tokio::test(flavor = "multi_thread")]
async fn a_failed_reconnect_keeps_the_generation_count() {
    let legacy = LegacyServer::new();
    let server = ScriptServer::start(legacy.clone().responder()).await;
    let addr = server.addr();
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_pin(ProtocolVersion::V2025_11_25);
    let clients = mcp_connect_rmcp::Reconnecting::new(stack(), request, ());
    let (client, generation) = within(clients.service()).await.unwrap();
    assert_eq!(generation, 1);
    server.stop().await;
    let _ = within(client.call_tool(call("x", json!({})))).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(2);
    while !client.is_transport_closed() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        within(clients.service()).await.is_err(),
        "the server is down"
    );
    let _again = ScriptServer::start_on(addr, legacy.clone().responder())
        .await
        .expect("the port is free again");
    let (_, generation) = within(clients.service()).await.unwrap();
    assert_eq!(generation, 2);
    within(clients.close()).await;
}
