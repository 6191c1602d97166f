//! Shared test helpers: the crate's own testkit, plus a watchdog.
#![allow(dead_code, unused_imports)]

use std::future::Future;
use std::time::Duration;

pub use mcp_connect::testkit::{error, result, LegacyServer, Recorded, Script, ScriptServer};

pub mod sse_server {
    pub use mcp_connect::testkit::{SseBehaviour, SseServer};
}

/// A legacy server's normal answers without session checks: initialize
/// (with the session id `session-canary-0001`), initialized, tools, DELETE.
pub fn legacy(request: &Recorded) -> Script {
    match request.rpc_method() {
        "initialize" => Script::JsonWith(
            200,
            result(
                request,
                serde_json::json!({
                    "protocolVersion": request.body["params"]["protocolVersion"],
                    "capabilities": {},
                    "serverInfo": { "name": "scripted", "version": "1" }
                }),
            ),
            vec![("mcp-session-id", "session-canary-0001".to_owned())],
        ),
        "notifications/initialized" => Script::Status(202),
        "tools/call" => Script::Json(
            200,
            result(
                request,
                serde_json::json!({ "content": [{ "type": "text", "text": "ok" }] }),
            ),
        ),
        "" if request.method == http::Method::DELETE => Script::Status(200),
        _ => Script::Json(200, error(request, -32601, None)),
    }
}

/// Runs a test body with a watchdog so a regression fails instead of hanging.
pub async fn watchdog<F: Future<Output = T>, T>(limit: Duration, body: F) -> T {
    tokio::time::timeout(limit, body)
        .await
        .expect("watchdog: the test did not finish in time")
}
