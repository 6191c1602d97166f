//! Interop against real MCP servers nobody here wrote (see
//! ../shared/peers/README.md). The peers are installed by
//! `.ci/install-peers.sh`; `.ci/run` runs these tests with `--ignored` and
//! `MCP_PEERS_DIR` set. Every peer binds 127.0.0.1 and is killed by pid when
//! its test ends.

use crate::support;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use mcp_connect::protocol::{Era, ProtocolVersion};
use mcp_connect::protocol::{ListResources, RawRequest, SetLoggingLevel};
use mcp_connect::session::Call;
use mcp_connect::transport::{StdioCommand, TransportKind};
use mcp_connect::{ConnectRequest, Connector, Session};
use serde_json::json;
use support::watchdog;
use tokio::process::{Child, Command};

const LIMIT: Duration = Duration::from_secs(60);

fn peers() -> PathBuf {
    PathBuf::from(
        std::env::var("MCP_PEERS_DIR")
            .expect("MCP_PEERS_DIR names the installed peers (.ci/install-peers.sh)"),
    )
}

fn everything_entry() -> PathBuf {
    peers().join("node/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

fn python() -> PathBuf {
    peers().join("venv/bin/python")
}

fn python_server() -> &'static str {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../tests/peers/python_server.py"
    )
}

fn loopback_preload() -> &'static str {
    concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/peers/loopback.cjs")
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A peer server process, killed (by its pid, through kill_on_drop) when dropped.
struct Peer {
    _child: Child,
    port: u16,
}

impl Peer {
    async fn start(mut command: Command, port: u16) -> Peer {
        let child = command
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("peer starts");
        watchdog(Duration::from_secs(20), async {
            while tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_err()
            {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await;
        Peer {
            _child: child,
            port,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Kills the process and waits for it, so its port is free again.
    async fn stop(mut self) {
        let _ = self._child.kill().await;
    }
}

async fn everything_http() -> Peer {
    everything_http_on(free_port()).await
}

async fn everything_http_on(port: u16) -> Peer {
    let mut command = Command::new("node");
    command
        .args(["--require", loopback_preload()])
        .arg(everything_entry())
        .arg("streamableHttp")
        .env("PORT", port.to_string());
    Peer::start(command, port).await
}

async fn python_http() -> Peer {
    python_http_on(free_port()).await
}

async fn python_http_on(port: u16) -> Peer {
    let mut command = Command::new(python());
    command.args([python_server(), "streamable-http", &port.to_string()]);
    Peer::start(command, port).await
}

async fn connect(request: ConnectRequest) -> Session {
    watchdog(LIMIT, Connector::new().connect(request))
        .await
        .expect("establishes")
}

async fn assert_everything_sum(session: &Session) {
    let result = session
        .call_tool("get-sum", &json!({ "a": 2, "b": 3 }))
        .await
        .unwrap();
    assert!(!result.is_error);
    assert!(result.text().contains('5'), "{}", result.text());
}

#[tokio::test]
#[ignore = "needs the interop peers: run through .ci/run"]
async fn server_everything_over_streamable_http_is_legacy_2025_11_25() {
    let peer = everything_http().await;
    let session = connect(ConnectRequest::http(&peer.url("/mcp")).unwrap()).await;
    assert_eq!(session.era(), Era::Legacy);
    assert_eq!(session.protocol_version(), &ProtocolVersion::V2025_11_25);
    assert_eq!(session.transport_kind(), TransportKind::StreamableHttp);
    assert_eq!(session.server_info().name, "mcp-servers/everything");
    assert_everything_sum(&session).await;
    session.close().await.unwrap();
}

#[tokio::test]
#[ignore = "needs the interop peers: run through .ci/run"]
async fn server_everything_over_stdio_is_legacy_2025_11_25() {
    let command =
        StdioCommand::new("node").args([everything_entry().into_os_string(), "stdio".into()]);
    let session = connect(ConnectRequest::stdio(command)).await;
    assert_eq!(session.era(), Era::Legacy);
    assert_eq!(session.protocol_version(), &ProtocolVersion::V2025_11_25);
    assert_everything_sum(&session).await;
    session.close().await.unwrap();
}

#[tokio::test]
#[ignore = "needs the interop peers: run through .ci/run"]
async fn python_sdk_over_streamable_http_is_modern_2026_07_28() {
    let peer = python_http().await;
    let session = connect(ConnectRequest::http(&peer.url("/mcp")).unwrap()).await;
    assert_eq!(session.era(), Era::Modern);
    assert_eq!(session.protocol_version(), &ProtocolVersion::V2026_07_28);
    assert_eq!(session.server_info().name, "python-peer");
    let result = session
        .call_tool("add", &json!({ "a": 2, "b": 3 }))
        .await
        .unwrap();
    assert_eq!(result.text(), "5");
    session.close().await.unwrap();
}

#[tokio::test]
#[ignore = "needs the interop peers: run through .ci/run"]
async fn python_sdk_over_a_unix_socket_in_both_eras() {
    let socket = std::env::temp_dir().join(format!("mcp-python-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&socket);
    let mut command = Command::new(python());
    command
        .args([python_server(), "streamable-http-uds"])
        .arg(&socket)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true);
    let _peer = command.spawn().expect("peer starts");
    watchdog(Duration::from_secs(20), async {
        while tokio::net::UnixStream::connect(&socket).await.is_err() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await;
    // The SDK's DNS-rebinding guard wants a Host with a port; no TCP port
    // is opened (the socket carries the connection).
    let over = || {
        ConnectRequest::http("http://127.0.0.1:8000/mcp")
            .unwrap()
            .with_unix_socket(&socket)
    };
    for (request, era, version) in [
        (over(), Era::Modern, ProtocolVersion::V2026_07_28),
        (
            over().with_pin(ProtocolVersion::V2025_11_25),
            Era::Legacy,
            ProtocolVersion::V2025_11_25,
        ),
    ] {
        let session = connect(request).await;
        assert_eq!(session.era(), era);
        assert_eq!(session.protocol_version(), &version);
        assert_eq!(session.server_info().name, "python-peer");
        let result = session
            .call_tool("add", &json!({ "a": 2, "b": 3 }))
            .await
            .unwrap();
        assert_eq!(result.text(), "5");
        session.close().await.unwrap();
    }
    let _ = std::fs::remove_file(&socket);
}

/// The 2026-07-28 features the Python peer offers: a listing, a call, a
/// multi-round-trip tool answered by the elicitation handler, and a
/// `subscriptions/listen` subscription hearing a tools list change and a
/// resource update.
async fn python_modern_features(request: ConnectRequest) {
    use mcp_connect::inbound::{notification_channel, ClientHandler};

    let (listener, mut notifications) = notification_channel(16);
    let handler = ClientHandler::new().on_elicitation(|_| async move {
        let content = json!({ "name": "Ada" })
            .as_object()
            .cloned()
            .unwrap_or_default();
        Ok(mcp_connect::protocol::server_requests::ElicitResult::accept(content))
    });
    let session = connect(request.with_handler(handler).with_notifications(listener)).await;
    assert_eq!(session.era(), Era::Modern);
    let tools = session.list_tools().await.unwrap();
    let mut names: Vec<_> = tools.tools.iter().map(|t| t.name.as_str()).collect();
    names.sort();
    assert_eq!(names, ["add", "echo", "greet", "touch", "traced_spans"]);
    assert!(tools.excluded.is_empty());

    let greeted = session.call_tool("greet", &json!({})).await.unwrap();
    assert!(!greeted.is_error);
    assert_eq!(greeted.text(), "Hello, Ada!");

    session.subscribe("note://config").await.unwrap();
    session
        .call_tool("touch", &json!({ "uri": "note://config" }))
        .await
        .unwrap();
    let mut heard = Vec::new();
    while heard.len() < 2 {
        let notification = watchdog(Duration::from_secs(10), notifications.recv())
            .await
            .expect("the listener is open");
        heard.push(notification.method);
    }
    heard.sort();
    assert_eq!(
        heard,
        [
            "notifications/resources/updated",
            "notifications/tools/list_changed"
        ]
    );
    session.close().await.unwrap();
}

#[tokio::test]
#[ignore = "needs the interop peers: run through .ci/run"]
async fn python_sdk_2026_features_over_streamable_http() {
    let peer = python_http().await;
    python_modern_features(ConnectRequest::http(&peer.url("/mcp")).unwrap()).await;
}

#[tokio::test]
#[ignore = "needs the interop peers: run through .ci/run"]
async fn python_sdk_2026_features_over_stdio() {
    let command = StdioCommand::new(python()).args([python_server(), "stdio"]);
    python_modern_features(ConnectRequest::stdio(command)).await;
}

#[tokio::test]
#[ignore = "needs the interop peers: run through .ci/run"]
async fn python_sdk_pinned_to_2025_11_25_is_legacy() {
    let peer = python_http().await;
    let request = ConnectRequest::http(&peer.url("/mcp"))
        .unwrap()
        .with_pin(ProtocolVersion::V2025_11_25);
    let session = connect(request).await;
    assert_eq!(session.era(), Era::Legacy);
    assert_eq!(session.protocol_version(), &ProtocolVersion::V2025_11_25);
    let result = session
        .call_tool("add", &json!({ "a": 2, "b": 3 }))
        .await
        .unwrap();
    assert_eq!(result.text(), "5");
    session.close().await.unwrap();
}

#[tokio::test]
#[ignore = "needs the interop peers: run through .ci/run"]
async fn python_sdk_over_stdio_is_modern() {
    let command = StdioCommand::new(python()).args([python_server(), "stdio"]);
    let session = connect(ConnectRequest::stdio(command)).await;
    assert_eq!(session.era(), Era::Modern);
    assert_eq!(session.protocol_version(), &ProtocolVersion::V2026_07_28);
    let result = session
        .call_tool("add", &json!({ "a": 2, "b": 3 }))
        .await
        .unwrap();
    assert_eq!(result.text(), "5");
    session.close().await.unwrap();
}

#[tokio::test]
#[ignore = "needs the interop peers: run through .ci/run"]
async fn python_sdk_http_session_expiry_is_terminal() {
    use mcp_connect::layers::Closure;
    let port = free_port();
    let mut command = Command::new(python());
    command.args([python_server(), "streamable-http", &port.to_string(), "1"]);
    let peer = Peer::start(command, port).await;
    let request = ConnectRequest::http(&peer.url("/mcp"))
        .unwrap()
        .with_pin(ProtocolVersion::V2025_11_25);
    let session = connect(request).await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let error = session
        .call_tool("add", &json!({ "a": 2, "b": 3 }))
        .await
        .unwrap_err();
    let failure = error.failure();
    assert_eq!(
        (failure.closure, failure.http_status),
        (Some(Closure::SessionExpired), Some(404))
    );
    session.close().await.unwrap();
}

mod auto_detection {
    //! `--transport auto` with a plain URL reaches every kind of HTTP server,
    //! and a second connection through the same era cache costs less.

    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;

    use mcp_connect::era_cache::EraCache;
    use mcp_connect::transport::HttpClient;

    use super::*;

    fn counting_connector() -> (Connector, Arc<AtomicU64>) {
        let count = Arc::new(AtomicU64::new(0));
        let client = HttpClient::default_client().counting(Arc::clone(&count));
        (Connector::with_client(client), count)
    }

    /// Connects twice through one cache; returns the session facts and both
    /// establishment request counts.
    async fn twice(
        url: &str,
        tool: (&str, serde_json::Value),
    ) -> (TransportKind, ProtocolVersion, u64, u64) {
        let cache = EraCache::new();
        let mut counts = Vec::new();
        let mut facts = None;
        for _ in 0..2 {
            let (connector, count) = counting_connector();
            let request = ConnectRequest::http(url)
                .unwrap()
                .with_era_cache(cache.clone());
            let session = watchdog(LIMIT, connector.connect(request))
                .await
                .expect("establishes");
            counts.push(count.load(Ordering::Relaxed));
            let result = session.call_tool(tool.0, &tool.1).await.unwrap();
            assert!(result.text().contains('5'), "{}", result.text());
            facts = Some((session.transport_kind(), session.protocol_version().clone()));
            session.close().await.unwrap();
        }
        let (kind, version) = facts.unwrap();
        (kind, version, counts[0], counts[1])
    }

    fn sum() -> (&'static str, serde_json::Value) {
        ("get-sum", json!({ "a": 2, "b": 3 }))
    }

    fn add() -> (&'static str, serde_json::Value) {
        ("add", json!({ "a": 2, "b": 3 }))
    }

    #[tokio::test]
    #[ignore = "needs the interop peers: run through .ci/run"]
    async fn server_everything_sse_is_reached_from_its_sse_url() {
        let port = free_port();
        let mut command = Command::new("node");
        command
            .args(["--require", loopback_preload()])
            .arg(everything_entry())
            .arg("sse")
            .env("PORT", port.to_string());
        let peer = Peer::start(command, port).await;
        let (kind, version, first, second) = twice(&peer.url("/sse"), sum()).await;
        assert_eq!(
            (kind, version),
            (TransportKind::Sse, ProtocolVersion::V2025_11_25)
        );
        assert_eq!(
            (first, second),
            (5, 3),
            "the cache skips the probe and the doomed initialize POST"
        );
    }

    #[tokio::test]
    #[ignore = "needs the interop peers: run through .ci/run"]
    async fn python_sdk_sse_is_reached_from_its_sse_url() {
        let port = free_port();
        let mut command = Command::new(python());
        command.args([python_server(), "sse", &port.to_string()]);
        let peer = Peer::start(command, port).await;
        let (kind, version, first, second) = twice(&peer.url("/sse"), add()).await;
        assert_eq!(
            (kind, version),
            (TransportKind::Sse, ProtocolVersion::V2025_11_25)
        );
        assert_eq!((first, second), (5, 3));
    }

    #[tokio::test]
    #[ignore = "needs the interop peers: run through .ci/run"]
    async fn server_everything_streamable_http_is_legacy_and_the_cache_skips_the_probe() {
        let peer = everything_http().await;
        let (kind, version, first, second) = twice(&peer.url("/mcp"), sum()).await;
        assert_eq!(
            (kind, version),
            (TransportKind::StreamableHttp, ProtocolVersion::V2025_11_25)
        );
        assert_eq!((first, second), (3, 2));
    }

    #[tokio::test]
    #[ignore = "needs the interop peers: run through .ci/run"]
    async fn python_sdk_streamable_http_is_modern_in_one_request_either_way() {
        let peer = python_http().await;
        let (kind, version, first, second) = twice(&peer.url("/mcp"), add()).await;
        assert_eq!(
            (kind, version),
            (TransportKind::StreamableHttp, ProtocolVersion::V2026_07_28)
        );
        // server/discover is the whole modern handshake: nothing left to skip.
        assert_eq!((first, second), (1, 1));
    }
}

/// Issue 6: the command's watch mode survives a real session expiry
/// (Python `mcp` with a 1-second idle timeout) and reports the generation
/// increasing.
/// The call lines of a watch run (three `add` calls, 2.5 s apart) against
/// the Python SDK with a 1-second idle timeout, with `extra` arguments.
async fn watch_across_real_session_expiry(extra: &[&str]) -> (Vec<serde_json::Value>, Option<i32>) {
    let port = free_port();
    let mut command = Command::new(python());
    command.args([python_server(), "streamable-http", &port.to_string(), "1"]);
    let peer = Peer::start(command, port).await;
    let url = peer.url("/mcp");
    let mut args = vec![
        "--json",
        "--pin",
        "2025-11-25",
        "--call-tool",
        "add",
        "--args",
        r#"{"a":2,"b":3}"#,
        "--repeat",
        "3",
        "--interval",
        "2500ms",
    ];
    args.extend_from_slice(extra);
    args.push(&url);
    let output = watchdog(
        LIMIT,
        Command::new(env!("CARGO_BIN_EXE_mcp-connect"))
            .args(&args)
            .output(),
    )
    .await
    .unwrap();
    let calls = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|l| l["event"] == "call")
        .collect();
    (calls, output.status.code())
}

#[tokio::test]
#[ignore = "needs the interop peers: run through .ci/run"]
async fn watch_mode_survives_real_session_expiry() {
    let (calls, _) = watch_across_real_session_expiry(&[]).await;
    assert_eq!(calls.len(), 3);
    assert_eq!(
        (calls[0]["ok"].as_bool(), calls[0]["generation"].as_u64()),
        (Some(true), Some(1))
    );
    assert_eq!(
        (calls[1]["ok"].as_bool(), calls[1]["http_status"].as_u64()),
        (Some(false), Some(404)),
        "{calls:?}"
    );
    assert_eq!(calls[1]["session_lost"], true);
    assert_eq!(
        (
            calls[2]["ok"].as_bool(),
            calls[2]["generation"].as_u64(),
            calls[2]["reconnected"].as_bool()
        ),
        (Some(true), Some(2), Some(true))
    );
}

/// Issue 13: with the handlers declared, server-everything's
/// capability-gated tools appear, and calling them round-trips a sampling
/// and an elicitation request through the handler.
#[tokio::test]
#[ignore = "needs the interop peers: run through .ci/run"]
async fn server_everything_sampling_and_elicitation_round_trip() {
    use mcp_connect::inbound::{elicitation_defaults, ClientHandler};
    use mcp_connect::protocol::server_requests::{CreateMessageResult, ElicitResult};
    let peer = everything_http().await;
    let handler = ClientHandler::new()
        .on_sampling(|request| async move {
            assert!(!request.messages.is_empty());
            Ok(CreateMessageResult::text("canned", "canned reply"))
        })
        .on_elicitation(|request| async move {
            Ok(ElicitResult::accept(elicitation_defaults(&request)))
        });
    let request = ConnectRequest::http(&peer.url("/mcp"))
        .unwrap()
        .with_handler(handler);
    let session = connect(request).await;
    // The gated tools are registered once initialization completes.
    let mut names = Vec::new();
    for _ in 0..50 {
        names = session
            .list_tools()
            .await
            .unwrap()
            .tools
            .into_iter()
            .map(|t| t.name)
            .collect::<Vec<_>>();
        if names.iter().any(|n| n == "trigger-sampling-request") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        names.iter().any(|n| n == "trigger-sampling-request"),
        "{names:?}"
    );
    assert!(
        names.iter().any(|n| n == "trigger-elicitation-request"),
        "{names:?}"
    );
    let sampled = watchdog(
        LIMIT,
        session.call_tool(
            "trigger-sampling-request",
            &json!({ "prompt": "hi", "maxTokens": 5 }),
        ),
    )
    .await
    .unwrap();
    assert!(
        sampled.text().contains("canned reply"),
        "{}",
        sampled.text()
    );
    let elicited = watchdog(
        LIMIT,
        session.call_tool("trigger-elicitation-request", &json!({})),
    )
    .await
    .unwrap();
    assert!(!elicited.is_error, "{}", elicited.text());
    session.close().await.unwrap();

    // Without handlers the gated tools are not offered.
    let plain = connect(ConnectRequest::http(&peer.url("/mcp")).unwrap()).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let names: Vec<String> = plain
        .list_tools()
        .await
        .unwrap()
        .tools
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert!(
        !names.iter().any(|n| n == "trigger-sampling-request"),
        "{names:?}"
    );
    plain.close().await.unwrap();
}

/// Issue 13: every progress step of a long operation reaches the request's
/// callback; simulated logging reaches the listener (the first message is
/// sent at once, on the GET stream the session owns).
#[tokio::test]
#[ignore = "needs the interop peers: run through .ci/run"]
async fn server_everything_progress_and_logging_reach_the_application() {
    use mcp_connect::inbound::notification_channel;
    use mcp_connect::session::RequestOptions;
    use std::sync::{Arc, Mutex};
    let peer = everything_http().await;
    let (listener, mut notifications) = notification_channel(64);
    let request = ConnectRequest::http(&peer.url("/mcp"))
        .unwrap()
        .with_notifications(listener);
    let session = connect(request).await;
    let steps = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&steps);
    let options =
        RequestOptions::new().with_progress(move |p| record.lock().unwrap().push(p.progress));
    let params = json!({ "name": "trigger-long-running-operation",
                         "arguments": { "duration": 1, "steps": 4 } });
    watchdog(
        LIMIT,
        session.send(
            Call::new(RawRequest::new("tools/call", Some(params))).with_options(options.clone()),
        ),
    )
    .await
    .unwrap();
    assert_eq!(*steps.lock().unwrap(), [1.0, 2.0, 3.0, 4.0]);

    session.send(SetLoggingLevel::new("debug")).await.unwrap();
    session
        .call_tool("toggle-simulated-logging", &json!({}))
        .await
        .unwrap();
    let logged = watchdog(LIMIT, async {
        loop {
            let notification = notifications.recv().await.expect("listener open");
            if notification.method == "notifications/message" {
                return notification;
            }
        }
    })
    .await;
    assert!(logged.params.unwrap()["level"].is_string());
    session
        .call_tool("toggle-simulated-logging", &json!({}))
        .await
        .unwrap();
    // Resources: every page.
    let resources = session
        .send(ListResources::all())
        .await
        .map(|page| page.items)
        .unwrap();
    assert!(!resources.is_empty());
    session.close().await.unwrap();
}

/// Issue 13: the command prints progress as numbers, offers only the
/// server-request answers it was given, and prints notifications by method.
#[tokio::test]
#[ignore = "needs the interop peers: run through .ci/run"]
async fn the_command_prints_progress_and_notifications_from_server_everything() {
    let peer = everything_http().await;
    let url = peer.url("/mcp");
    let output = support::cli::run_async(&[
        &url,
        "--json",
        "--call-tool",
        "trigger-long-running-operation",
        "--args",
        r#"{"duration":1,"steps":3}"#,
    ])
    .await;
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    let lines = support::cli::json_lines(&output);
    let progress: Vec<f64> = lines
        .iter()
        .filter(|l| l["event"] == "progress")
        .map(|l| l["progress"].as_f64().unwrap())
        .collect();
    assert_eq!(progress, [1.0, 2.0, 3.0]);

    let output = support::cli::run_async(&[
        &url,
        "--json",
        "--notifications",
        "--sample",
        "canned",
        "--root",
        "/srv/project",
        "--call-tool",
        "toggle-simulated-logging",
        "--repeat",
        "2",
        "--interval",
        "1s",
    ])
    .await;
    let lines = support::cli::json_lines(&output);
    assert!(
        lines
            .iter()
            .any(|l| l["event"] == "notification" && l["method"] == "notifications/message"),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        !text.contains("-level message"),
        "no notification payload is printed"
    );
}

/// Issue 17: the same watch run with `--replay undelivered` succeeds on
/// every call: each call the expired session refused (404 to its own POST)
/// is sent once on the new session.
#[tokio::test]
#[ignore = "needs the interop peers: run through .ci/run"]
async fn watch_mode_with_replay_succeeds_on_every_call_across_real_session_expiry() {
    let (calls, code) = watch_across_real_session_expiry(&["--replay", "undelivered"]).await;
    let shape: Vec<(Option<bool>, Option<u64>)> = calls
        .iter()
        .map(|c| (c["ok"].as_bool(), c["generation"].as_u64()))
        .collect();
    assert_eq!(
        shape,
        [
            (Some(true), Some(1)),
            (Some(true), Some(2)),
            (Some(true), Some(3))
        ]
    );
    assert_eq!(code, Some(0));
}

/// Issue 24, item 1 (G16): `McpClient` against server-everything, killed and
/// restarted on the same port. The restarted server answers the old session
/// id with HTTP 400 and a JSON-RPC error whose id is `null`; that is a
/// session loss, so the next call runs on a new session instead of failing
/// with 400 forever.
#[tokio::test]
#[ignore = "needs the interop peers: run through .ci/run"]
async fn mcp_client_survives_a_restart_of_server_everything() {
    use mcp_connect::{EstablishBuilder, McpClient};
    let peer = everything_http().await;
    let port = peer.port;
    let client = McpClient::builder(
        EstablishBuilder::new(Connector::new()).build(),
        ConnectRequest::http(&peer.url("/mcp")).unwrap(),
    )
    .build();
    let sum = || async {
        watchdog(
            LIMIT,
            client.call_tool("get-sum", &json!({ "a": 2, "b": 3 })),
        )
        .await
    };
    assert!(sum().await.unwrap().text().contains('5'));
    peer.stop().await;
    let peer = everything_http_on(port).await;
    let error = sum().await.unwrap_err();
    assert!(error.is_session_lost(), "{error:?}");
    assert_eq!(error.call_error().unwrap().http_status(), Some(400));
    for _ in 0..3 {
        assert!(sum().await.unwrap().text().contains('5'));
    }
    assert_eq!(client.generation(), 2);
    client.close().await.unwrap();
    peer.stop().await;
}

/// Issue 24, item 2 (G16): server-everything over stdio killed with
/// SIGKILL; the session is known dead, so `McpClient` replaces it before
/// the next call, which succeeds on generation 2 with replay off.
#[tokio::test]
#[ignore = "needs the interop peers: run through .ci/run"]
async fn mcp_client_replaces_a_killed_stdio_server_before_the_next_call() {
    use mcp_connect::session::SessionState;
    use mcp_connect::transport::StdioTransport;
    use mcp_connect::{EstablishBuilder, McpClient};
    let command =
        StdioCommand::new("node").args([everything_entry().into_os_string(), "stdio".into()]);
    let client = McpClient::builder(
        EstablishBuilder::new(Connector::new()).build(),
        ConnectRequest::stdio(command),
    )
    .build();
    let sum = || async {
        watchdog(
            LIMIT,
            client.call_tool("get-sum", &json!({ "a": 2, "b": 3 })),
        )
        .await
    };
    assert!(sum().await.unwrap().text().contains('5'));
    let (session, _) = client.session().await.unwrap();
    let pid = session
        .transport_as::<StdioTransport>()
        .and_then(StdioTransport::pid)
        .unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .unwrap();
    watchdog(LIMIT, async {
        while session.state() == SessionState::Open {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    drop(session);
    assert!(sum().await.unwrap().text().contains('5'));
    assert_eq!(client.generation(), 2);
    client.close().await.unwrap();
}

/// Issue 26: one `mcpServers` config with server-everything over
/// Streamable HTTP and over stdio and the Python SDK on the 2026 era, in
/// one group: all three established, one tool called on each through its
/// catalogue name (the names the two server-everything entries share are
/// prefixed; the Python SDK's `add` is its own).
#[tokio::test]
#[ignore = "needs the interop peers: run through .ci/run"]
async fn a_config_of_three_real_servers_is_one_catalogue() {
    use mcp_connect::config::ServersConfig;
    use mcp_connect::group::{HealthState, ServerGroup};
    use mcp_connect::EstablishBuilder;

    let everything = everything_http().await;
    let python = python_http().await;
    let text = json!({ "mcpServers": {
        "everything-http": { "type": "http", "url": everything.url("/mcp") },
        "everything-stdio": { "command": "node", "args": ["${env:PEERS}/node/node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio"] },
        "python": { "url": python.url("/mcp") },
    }})
    .to_string();
    let peers = peers().display().to_string();
    let config = ServersConfig::parse_with(&text, &|name| (name == "PEERS").then(|| peers.clone()))
        .expect("a valid config");
    assert_eq!(config.errors().count(), 0);
    let group = ServerGroup::new();
    let stack = EstablishBuilder::new(Connector::new()).build();
    assert!(group.add_config(&config, &stack).is_empty());
    watchdog(LIMIT, group.settled()).await;
    for (name, health) in group.healths() {
        assert_eq!(health.state, HealthState::Ready, "{name}: {health:?}");
    }
    let catalogue = group.catalogue();
    let names: Vec<&str> = catalogue.tools().iter().map(|t| t.name.as_str()).collect();
    assert!(names.contains(&"everything-http__get-sum"), "{names:?}");
    assert!(names.contains(&"everything-stdio__get-sum"), "{names:?}");
    assert!(names.contains(&"add"), "{names:?}");
    assert!(!names.contains(&"get-sum"), "{names:?}");
    for tool in [
        "everything-http__get-sum",
        "everything-stdio__get-sum",
        "add",
    ] {
        let result = watchdog(LIMIT, group.call_tool(tool, &json!({ "a": 2, "b": 3 })))
            .await
            .unwrap_or_else(|e| panic!("{tool}: {e}"));
        assert!(!result.is_error, "{tool}");
        assert!(result.text().contains('5'), "{tool}: {}", result.text());
    }
    let eras: Vec<(String, Era)> = {
        let mut eras = Vec::new();
        for name in group.names() {
            let (session, _) = group.client(&name).unwrap().session().await.unwrap();
            eras.push((name.to_string(), session.era()));
        }
        eras
    };
    assert_eq!(
        eras,
        vec![
            ("everything-http".to_owned(), Era::Legacy),
            ("everything-stdio".to_owned(), Era::Legacy),
            ("python".to_owned(), Era::Modern),
        ]
    );
    group.shutdown().await;
    everything.stop().await;
    python.stop().await;
}

/// Issue 44, item 3: a member whose server (the Python SDK's) is down when
/// the group starts is tried again on its own and is ready within its
/// backoff after the server starts, with no call from the application.
#[tokio::test]
#[ignore = "needs the interop peers: run through .ci/run"]
async fn a_python_server_down_at_start_is_ready_once_it_starts() {
    use mcp_connect::group::{HealthState, Server, ServerGroup};
    use mcp_connect::layers::recovery::Backoff;
    use mcp_connect::EstablishBuilder;

    watchdog(LIMIT, async {
        let port = free_port();
        let group = ServerGroup::builder()
            .with_retry(Backoff::new(
                Duration::from_millis(200),
                Duration::from_secs(1),
            ))
            .build();
        let request = ConnectRequest::http(&format!("http://127.0.0.1:{port}/mcp"))
            .unwrap()
            .with_name("python");
        let stack = EstablishBuilder::new(Connector::new())
            .with_deadline(Duration::from_secs(5))
            .build();
        group.add(Server::new(stack, request)).unwrap();
        group.settled().await;
        let health = group.health("python").unwrap();
        assert!(matches!(health.state, HealthState::Failed(_)), "{health:?}");
        assert!(health.retry_at.is_some(), "{health:?}");

        let python = python_http_on(port).await;
        let up = tokio::time::Instant::now();
        while group.health("python").unwrap().state != HealthState::Ready {
            assert!(
                up.elapsed() < Duration::from_secs(10),
                "not ready: {:?}",
                group.health("python")
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        // Within the backoff's ceiling (1 s) and one establishment.
        assert!(up.elapsed() < Duration::from_secs(3), "{:?}", up.elapsed());
        let result = group
            .call_tool("add", &json!({ "a": 2, "b": 3 }))
            .await
            .unwrap();
        assert!(result.text().contains('5'), "{}", result.text());
        group.shutdown().await;
        python.stop().await;
    })
    .await;
}

/// Issue 28: the Python SDK (with its OpenTelemetry SDK recording) reads
/// the trace context this client puts in `params._meta`: its span for the
/// call is a child of ours, in our trace, on both eras.
mod trace_context {
    use opentelemetry_sdk::propagation::TraceContextPropagator;
    use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};

    use super::*;

    #[tokio::test]
    #[ignore = "needs the interop peers: run through .ci/run"]
    async fn the_python_sdks_span_is_a_child_of_ours() {
        let peer = python_http().await;
        let spans = InMemorySpanExporter::default();
        let tracers = SdkTracerProvider::builder()
            .with_simple_exporter(spans.clone())
            .build();
        let meters = opentelemetry_sdk::metrics::SdkMeterProvider::builder().build();
        let telemetry = mcp_connect::telemetry::Telemetry::new(&tracers, &meters)
            .with_propagator(TraceContextPropagator::new());
        for pin in [None, Some(ProtocolVersion::V2025_11_25)] {
            let mut request = ConnectRequest::http(&peer.url("/mcp"))
                .unwrap()
                .with_telemetry(telemetry.clone());
            if let Some(version) = pin.clone() {
                request = request.with_pin(version);
            }
            let session = connect(request).await;
            let sum = session
                .call_tool("add", &json!({ "a": 2, "b": 3 }))
                .await
                .unwrap();
            assert_eq!(sum.text(), "5");
            let ours = spans
                .get_finished_spans()
                .unwrap()
                .into_iter()
                .rev()
                .find(|s| s.name == "tools/call add")
                .expect("our span");
            let theirs = session.call_tool("traced_spans", &json!({})).await.unwrap();
            let theirs: Vec<serde_json::Value> = serde_json::from_str(&theirs.text()).unwrap();
            let trace_id = ours.span_context.trace_id().to_string();
            let span_id = ours.span_context.span_id().to_string();
            let child = theirs
                .iter()
                .find(|s| s["parent_span_id"] == span_id.as_str())
                .unwrap_or_else(|| panic!("a child of {span_id} in {theirs:?} ({pin:?})"));
            assert_eq!(child["trace_id"], trace_id.as_str());
            session.close().await.unwrap();
        }
    }
}

/// Issue 43: the per-server policies and the telemetry that names each
/// server, against real servers.
mod call_policies {
    use super::*;
    use mcp_connect::client::circuit_breaker;
    use mcp_connect::client::ClientError;
    use mcp_connect::group::{Server, ServerGroup};
    use mcp_connect::layers::policy::{BreakerConfig, CircuitState, Refused};
    use mcp_connect::telemetry::{names, Telemetry};
    use mcp_connect::{EstablishBuilder, McpClient};
    use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};

    #[tokio::test]
    #[ignore = "needs the interop peers: run through .ci/run"]
    async fn a_breaker_opens_on_a_killed_server_everything_and_closes_after_its_restart() {
        watchdog(LIMIT, async {
            let port = free_port();
            let peer = everything_http_on(port).await;
            // Half-open, a `ping` goes first.
            let breaker = circuit_breaker(
                BreakerConfig::default()
                    .with_threshold(2)
                    .with_open_for(Duration::from_millis(300), Duration::from_secs(1)),
            );
            let request = ConnectRequest::http(&peer.url("/mcp")).unwrap();
            let client =
                McpClient::builder(EstablishBuilder::new(Connector::new()).build(), request)
                    .with_call_layer(breaker.clone())
                    .build();
            let arguments = json!({ "a": 2, "b": 3 });
            let sum = || client.call_tool("get-sum", &arguments);
            assert!(sum().await.unwrap().text().contains('5'));

            peer.stop().await;
            // The call that finds the session dead, then a refused reconnect.
            sum().await.unwrap_err();
            sum().await.unwrap_err();
            assert!(
                matches!(breaker.state(), CircuitState::Open { .. }),
                "{:?}",
                breaker.state()
            );
            let refused = sum().await.unwrap_err();
            assert!(
                matches!(refused, ClientError::Refused(Refused::CircuitOpen { .. })),
                "{refused:?}"
            );

            let _back = everything_http_on(port).await;
            let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
            loop {
                if let Ok(result) = sum().await {
                    assert!(result.text().contains('5'));
                    break;
                }
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "never closed: {:?}",
                    breaker.state()
                );
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            assert_eq!(breaker.state(), CircuitState::Closed { failures: 0 });
        })
        .await;
    }

    #[tokio::test]
    #[ignore = "needs the interop peers: run through .ci/run"]
    async fn telemetry_names_each_member_of_a_group_of_real_servers() {
        watchdog(LIMIT, async {
            let spans = InMemorySpanExporter::default();
            let tracers = SdkTracerProvider::builder()
                .with_simple_exporter(spans.clone())
                .build();
            let meters = opentelemetry_sdk::metrics::SdkMeterProvider::builder().build();
            let group = ServerGroup::builder()
                .with_telemetry(Telemetry::new(&tracers, &meters))
                .build();
            let stack = EstablishBuilder::new(Connector::new()).build();
            let everything = StdioCommand::new("node")
                .args([everything_entry().into_os_string(), "stdio".into()]);
            let python = python_http().await;
            group
                .add(Server::new(
                    stack.clone(),
                    ConnectRequest::stdio(everything).with_name("everything"),
                ))
                .unwrap();
            group
                .add(Server::new(
                    stack,
                    ConnectRequest::http(&python.url("/mcp"))
                        .unwrap()
                        .with_name("python"),
                ))
                .unwrap();
            group.settled().await;
            for name in ["everything", "python"] {
                let state = group.health(name).unwrap().state;
                assert!(state.is_usable(), "{name}: {state:?}");
            }
            // Only server-everything has it: its name is its own.
            group
                .call_tool("get-sum", &json!({ "a": 2, "b": 3 }))
                .await
                .unwrap();
            let finished = spans.get_finished_spans().unwrap();
            let named = |server: &str| {
                finished.iter().any(|span| {
                    span.attributes.iter().any(|kv| {
                        kv.key.as_str() == names::SERVER_NAME && kv.value.as_str() == server
                    })
                })
            };
            assert!(named("everything"), "no span names everything");
            assert!(named("python"), "no span names python");
            let program = finished.iter().any(|span| {
                span.attributes.iter().any(|kv| {
                    kv.key.as_str() == names::PROCESS_EXECUTABLE && kv.value.as_str() == "node"
                })
            });
            assert!(program, "the stdio member's spans name its program");
            group.shutdown().await;
        })
        .await;
    }
}

mod gateway_clients;
