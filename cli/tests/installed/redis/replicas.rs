//! Issue 66, replicas: two `mcp-connect serve` processes sharing a real
//! Redis (`--state-store`, sealed with `--store-key-env`) behind no load
//! balancer but the test itself, which sends a 2025 session's requests to
//! each in turn: every call answered, one `initialize` upstream for the
//! session, its end seen by both, and Redis holding no address in clear.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use mcp_connect::demo::DemoServer;
use serde_json::{json, Value};

use crate::support::cli::serve_with_env;
use crate::support::redis::Redis;
use crate::support::watchdog;

const KEY_HEX: &str = "2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b2b";

type Raw = Client<HttpConnector, Full<Bytes>>;

/// `method` to `url` in `session` with `body`: the status, the session a
/// response opened, and the JSON-RPC answer (a stream's last event).
async fn send(
    client: &Raw,
    method: http::Method,
    url: &str,
    session: Option<&str>,
    body: Option<Value>,
) -> (http::StatusCode, Option<String>, Value) {
    let mut request = http::Request::builder()
        .method(method)
        .uri(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(session) = session {
        request = request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25");
    }
    let body = body.map_or_else(Bytes::new, |b| Bytes::from(b.to_string()));
    let response = client
        .request(request.body(Full::new(body)).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let id = (response.headers().get("mcp-session-id")).map(|v| v.to_str().unwrap().to_owned());
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    let last = text.lines().rev().find_map(|l| l.strip_prefix("data: "));
    (
        status,
        id,
        serde_json::from_str(last.unwrap_or(&text)).unwrap_or(Value::Null),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server (apt-get install redis-server); CI runs it"]
async fn a_session_alternating_between_two_replicas_is_served_by_both_and_initialized_once() {
    watchdog(Duration::from_secs(60), async {
        let redis = Redis::start();
        let demo = DemoServer::start().await.unwrap();
        let dir = std::env::temp_dir().join(format!("mcp-connect-replicas-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.join("servers.json");
        let servers = json!({ "mcpServers": { "one": { "url": demo.url() } } });
        std::fs::write(&config, servers.to_string()).unwrap();
        let config = config.to_str().unwrap();
        let store = redis.url();
        let extra = [
            "--state-store",
            &store,
            "--store-key-env",
            "MCP_TEST_STORE_KEY",
        ];
        let env = [("MCP_TEST_STORE_KEY", KEY_HEX)];
        let (mut a, url_a) = serve_with_env(config, &extra, &env).await;
        let (mut b, url_b) = serve_with_env(config, &extra, &env).await;
        let client: Raw = Client::builder(TokioExecutor::new()).build_http();
        let initialize = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": { "name": "replicas", "version": "1" } } });
        let post = http::Method::POST;
        let (status, session, _) =
            send(&client, post.clone(), &url_a, None, Some(initialize)).await;
        assert_eq!(status, 200);
        let session = session.expect("a session");
        // The replicas' groups speak 2026-07-28 to the member (no session);
        // a 2025 session's own client of it opens one.
        let before = demo.sessions_created();
        for id in 1..=20u64 {
            let url = if id % 2 == 0 { &url_a } else { &url_b };
            let call = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": { "name": "add", "arguments": { "a": id, "b": 1 } } });
            let (status, _, answer) =
                send(&client, post.clone(), url, Some(&session), Some(call)).await;
            assert_eq!(status, 200, "call {id} through {url}: {answer}");
            assert_eq!(answer["result"]["content"][0]["text"], (id + 1).to_string());
        }
        assert_eq!(
            demo.sessions_created() - before,
            1,
            "one initialize upstream for the session, whichever replica a call reached"
        );
        // Redis names the owner of one session, sealed: no address, no id.
        let keys = redis.cli(&["--scan", "--pattern", "mcp-connect:owner:*"]);
        assert_eq!(keys.lines().count(), 1, "{keys}");
        let value = redis.cli(&["GET", keys.trim()]);
        assert!(!value.contains("127.0.0.1") && !value.contains(&session));
        assert!(!keys.contains(&session));
        // Ended through the replica that does not hold it.
        let open = demo.open_sessions();
        let (status, _, _) =
            send(&client, http::Method::DELETE, &url_b, Some(&session), None).await;
        assert_eq!(status, 200);
        assert_eq!(
            demo.open_sessions(),
            open - 1,
            "the member saw its session end"
        );
        for url in [&url_a, &url_b] {
            let ping = json!({ "jsonrpc": "2.0", "id": 99, "method": "ping" });
            let (status, _, _) = send(&client, post.clone(), url, Some(&session), Some(ping)).await;
            assert_eq!(status, 404);
        }
        assert_eq!(
            redis
                .cli(&["--scan", "--pattern", "mcp-connect:owner:*"])
                .trim(),
            ""
        );
        for child in [&mut a, &mut b] {
            child.kill().unwrap();
            child.wait().unwrap();
        }
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await;
}

/// Issue 68: a quota shared by two `serve` processes through one Redis
/// (`--quota` with `--state-store`): the fourth call of a 3/hour quota is
/// refused whichever process it reaches, with the time to wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs redis-server (apt-get install redis-server); CI runs it"]
async fn two_replicas_share_one_quota_through_redis() {
    use mcp_connect::{ConnectRequest, Connector};
    watchdog(Duration::from_secs(60), async {
        let redis = Redis::start();
        let demo = DemoServer::start().await.unwrap();
        let dir = std::env::temp_dir().join(format!("mcp-connect-quota-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let config = dir.join("servers.json");
        let servers = json!({ "mcpServers": { "one": { "url": demo.url() } } });
        std::fs::write(&config, servers.to_string()).unwrap();
        let config = config.to_str().unwrap();
        let store = redis.url();
        let extra = [
            "--state-store",
            &store,
            "--store-key-env",
            "MCP_TEST_STORE_KEY",
            "--quota",
            "3/hour",
        ];
        let env = [("MCP_TEST_STORE_KEY", KEY_HEX)];
        let (mut a, url_a) = serve_with_env(config, &extra, &env).await;
        let (mut b, url_b) = serve_with_env(config, &extra, &env).await;
        let mut sessions = Vec::new();
        for url in [&url_a, &url_b] {
            let request = ConnectRequest::http(url).unwrap();
            sessions.push(Connector::new().connect(request).await.unwrap());
        }
        // The member may still be starting behind each: wait for its tool.
        for session in &sessions {
            for _ in 0..200 {
                if !session.list_tools().await.unwrap().tools.is_empty() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
        }
        let add = json!({ "a": 1, "b": 2 });
        let mut answers = Vec::new();
        for n in 0..4 {
            answers.push(sessions[n % 2].call_tool("add", &add).await);
        }
        assert!(answers[..3].iter().all(Result::is_ok), "{answers:?}");
        let refused = answers[3].as_ref().unwrap_err();
        assert_eq!(refused.jsonrpc_code(), Some(-32023), "{refused:?}");
        let wait =
            (refused.rpc_error().and_then(|e| e.data())).and_then(|d| d["retryAfterMs"].as_u64());
        assert!(wait.is_some_and(|ms| ms > 1_000_000), "{wait:?}");
        assert_eq!(demo.tool_calls(), 3, "a refused call reached the member");
        // Redis names no principal or tool in clear.
        let keys = redis.cli(&["--scan", "--pattern", "mcp-connect:bucket:*"]);
        assert_eq!(keys.lines().count(), 1, "{keys}");
        assert!(!keys.contains("anonymous") && !keys.contains("add"));
        let _ = a.kill();
        let _ = b.kill();
        let _ = a.wait();
        let _ = b.wait();
        let _ = std::fs::remove_dir_all(dir);
    })
    .await;
}
