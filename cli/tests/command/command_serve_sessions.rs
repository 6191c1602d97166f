//! `mcp-connect serve`'s session hygiene (issue 66): each downstream
//! session's upstream sessions are its own and end with it. A DELETE ends
//! the member's session before it is answered; 2,000 sessions abandoned
//! without one end at the idle bound, the member's with them, and the
//! gateway's memory comes back to within 5 MB of where it was.

use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt as _;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use mcp_connect::demo::DemoServer;
use serde_json::{json, Value};

use crate::support::cli::serve;

type Raw = Client<HttpConnector, Full<Bytes>>;

/// POSTs `body` in `session`: the new session's id (from `initialize`)
/// and the JSON-RPC answer (the last event of a stream, or the body).
async fn post(
    client: &Raw,
    url: &str,
    session: Option<&str>,
    body: Value,
) -> (Option<String>, Value) {
    let mut request = http::Request::post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(session) = session {
        request = request
            .header("mcp-session-id", session)
            .header("mcp-protocol-version", "2025-11-25");
    }
    let request = request
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    let response = client.request(request).await.unwrap();
    let id = (response.headers().get("mcp-session-id")).map(|v| v.to_str().unwrap().to_owned());
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    let last = (text.lines().rev().find_map(|l| l.strip_prefix("data: ")))
        .unwrap_or(&text)
        .to_owned();
    (id, serde_json::from_str(&last).unwrap_or(Value::Null))
}

/// A new session that called `add` once: its id.
async fn used_session(client: &Raw, url: &str) -> String {
    let initialize = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": { "name": "hygiene", "version": "1" } } });
    let (id, _) = post(client, url, None, initialize).await;
    let id = id.expect("a session");
    let call = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": { "name": "add", "arguments": { "a": 1, "b": 2 } } });
    let (_, answer) = post(client, url, Some(&id), call).await;
    assert_eq!(answer["result"]["content"][0]["text"], "3", "{answer}");
    id
}

/// A new session at `url` that called `add` once, once the gateway lists
/// it (the member settles after `serve` says where it serves): its id.
pub(crate) async fn used_session_at(url: &str) -> String {
    let client: Raw = Client::builder(TokioExecutor::new()).build_http();
    let initialize = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": { "name": "otlp", "version": "1" } } });
    let (id, _) = post(&client, url, None, initialize).await;
    let id = id.expect("a session");
    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" });
    for _ in 0..200 {
        let (_, listed) = post(&client, url, Some(&id), list.clone()).await;
        if listed["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty())
        {
            let call = json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": { "name": "add", "arguments": { "a": 1, "b": 2 } } });
            let (_, answer) = post(&client, url, Some(&id), call).await;
            assert_eq!(answer["result"]["content"][0]["text"], "3", "{answer}");
            return id;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the gateway listed no tool within 10 s");
}

/// The process's resident memory, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    for _ in 0..600 {
        if done() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("not within 30 s: {what}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quiet_stream_carries_keepalive_comments() {
    let demo = DemoServer::start().await.unwrap();
    let dir = std::env::temp_dir().join(format!("mcp-connect-keepalive-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("servers.json");
    let servers = json!({ "mcpServers": { "demo": { "url": demo.url() } } });
    std::fs::write(&config, servers.to_string()).unwrap();
    let (mut child, url) = serve(config.to_str().unwrap(), &["--keepalive", "200ms"]).await;
    let client: Raw = Client::builder(TokioExecutor::new()).build_http();
    let initialize = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": { "name": "keepalive", "version": "1" } } });
    let (id, _) = post(&client, &url, None, initialize).await;
    let get = http::Request::get(&url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", id.unwrap())
        .body(Full::default())
        .unwrap();
    let mut body = client.request(get).await.unwrap().into_body();
    // The member may settle after the session opened: its list_changed
    // comes first then, and the quiet is counted from it.
    let mut started = std::time::Instant::now();
    let frame = loop {
        let frame = tokio::time::timeout(Duration::from_secs(5), body.frame())
            .await
            .expect("a frame within 5 s")
            .unwrap()
            .unwrap()
            .into_data()
            .unwrap();
        if !frame.starts_with(b"event: message") {
            break frame;
        }
        assert!(String::from_utf8_lossy(&frame).contains("list_changed"));
        started = std::time::Instant::now();
    };
    assert_eq!(frame, Bytes::from_static(b": keepalive\n\n"));
    assert!(
        started.elapsed() >= Duration::from_millis(150),
        "{:?}",
        started.elapsed()
    );
    let _ = child.kill();
    let _ = child.wait();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_ended_or_abandoned_ends_its_members_sessions_and_gives_back_its_memory() {
    let demo = DemoServer::start().await.unwrap();
    let dir = std::env::temp_dir().join(format!("mcp-connect-hygiene-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("servers.json");
    let servers = json!({ "mcpServers": { "demo": { "url": demo.url() } } });
    std::fs::write(&config, servers.to_string()).unwrap();
    let config = config.to_str().unwrap().to_owned();
    let (mut child, url) = serve(
        &config,
        &["--session-idle-timeout", "2s", "--max-sessions", "5000"],
    )
    .await;
    let pid = child.id();
    let client: Raw = Client::builder(TokioExecutor::new()).build_http();
    // The member may still be starting: a listing shows it once it is.
    // (The group's own client speaks 2026-07-28 with it: no session.)
    let list = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {
        "_meta": { "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                   "io.modelcontextprotocol/clientCapabilities": {} } } });
    for attempt in 0.. {
        let request = http::Request::post(&url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2026-07-28")
            .header("mcp-method", "tools/list")
            .body(Full::new(Bytes::from(list.to_string())))
            .unwrap();
        let bytes = client
            .request(request)
            .await
            .unwrap()
            .into_body()
            .collect()
            .await
            .unwrap();
        let listed: Value = serde_json::from_slice(&bytes.to_bytes()).unwrap();
        if listed["result"]["tools"]
            .as_array()
            .is_some_and(|t| !t.is_empty())
        {
            break;
        }
        assert!(attempt < 600, "the member was never listed");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // DELETE: the member's session is gone when the answer comes.
    let id = used_session(&client, &url).await;
    assert_eq!(demo.open_sessions(), 1, "this session's own");
    let delete = http::Request::delete(&url)
        .header("mcp-session-id", &id)
        .body(Full::default())
        .unwrap();
    assert_eq!(client.request(delete).await.unwrap().status(), 200);
    assert_eq!(
        demo.open_sessions(),
        0,
        "the member saw the session end at once"
    );

    // 2,000 sessions, each with its member session, abandoned; twice, so
    // that memory kept per session would show as growth.
    let before = rss_kib(pid);
    for round in 0..2 {
        let created = demo.sessions_created();
        futures_util::stream::iter(0..2_000)
            .for_each_concurrent(32, |_| {
                let (client, url) = (client.clone(), url.clone());
                async move {
                    used_session(&client, &url).await;
                }
            })
            .await;
        assert_eq!(demo.sessions_created() - created, 2_000);
        let peak = rss_kib(pid);
        // One idle bound (2 s) and the sweep after it: every one of them ends.
        eventually("the abandoned sessions' member sessions end", || {
            demo.open_sessions() == 0
        })
        .await;
        // The command hands freed memory back within a second of sessions
        // ending.
        tokio::time::sleep(Duration::from_millis(2_500)).await;
        let after = rss_kib(pid);
        let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .unwrap()
            .count();
        let threads = std::fs::read_dir(format!("/proc/{pid}/task"))
            .unwrap()
            .count();
        eprintln!("round {round}: {fds} fds, {threads} threads");
        eprintln!("round {round}: gateway RSS {before} KiB before, {peak} KiB with 2,000 sessions, {after} KiB after");
    }
    let after = rss_kib(pid);
    assert!(after <= before + 5 * 1024, "{before} KiB -> {after} KiB");
    let _ = nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGTERM,
    );
    let _ = child.wait();
}

/// `--state-store` shares sessions through Redis only, sealed: a replica
/// hands a client's request (and its token) to the address Redis holds.
#[test]
fn shared_sessions_need_a_sealed_redis_and_an_address() {
    let config =
        std::env::temp_dir().join(format!("mcp-connect-state-{}.json", std::process::id()));
    std::fs::write(&config, r#"{ "mcpServers": {} }"#).unwrap();
    let config = config.to_str().unwrap();
    let redis = "redis://:store-canary@127.0.0.1:1/";
    for (extra, said) in [
        (&["--state-store", "/tmp/file"][..], "a Redis URL"),
        (
            &["--state-store", redis, "--store-in-clear"][..],
            "must be sealed",
        ),
        (&["--state-store", redis][..], "--store-key-env"),
        (
            &[
                "--state-store",
                redis,
                "--store-in-clear",
                "--listen",
                "0.0.0.0:0",
            ][..],
            "--bearer-token-env",
        ),
    ] {
        let mut args = vec!["serve", "--config", config];
        args.extend_from_slice(extra);
        let output = crate::support::cli::run(&args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{extra:?}: {stderr}");
        assert!(stderr.contains(said), "{extra:?}: {stderr}");
        assert!(!stderr.contains("store-canary"), "{stderr}");
    }
    let _ = std::fs::remove_file(config);
}
