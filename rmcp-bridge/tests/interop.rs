//! rmcp's client over the bridge against real servers: server-everything
//! (Streamable HTTP, HTTP+SSE, stdio) and the Python SDK (both eras). Needs
//! the peers `.ci/install-peers.sh` installs, named by `MCP_PEERS_DIR`;
//! ignored otherwise (`cargo test -- --ignored`).

mod support;

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::Ordering;
use std::time::Duration;

use mcp_connect::protocol::ProtocolVersion;
use mcp_connect::request::TransportMode;
use mcp_connect::transport::StdioCommand;
use mcp_connect::{ConnectRequest, Connector, EstablishBuilder};
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use serde_json::json;
use tokio::process::{Child, Command};

const LIMIT: Duration = Duration::from_secs(60);

fn peers() -> PathBuf {
    PathBuf::from(std::env::var("MCP_PEERS_DIR").expect("MCP_PEERS_DIR names the installed peers"))
}

fn everything() -> PathBuf {
    peers().join("node/node_modules/@modelcontextprotocol/server-everything/dist/index.js")
}

fn python() -> PathBuf {
    peers().join("venv/bin/python")
}

fn repository(path: &str) -> String {
    format!("{}/../{path}", env!("CARGO_MANIFEST_DIR"))
}

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
        within(async {
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

    async fn everything(mode: &str) -> Peer {
        let port = free_port();
        let mut command = Command::new("node");
        command
            .args(["--require", &repository("tests/peers/loopback.cjs")])
            .arg(everything())
            .arg(mode)
            .env("PORT", port.to_string());
        Peer::start(command, port).await
    }

    async fn python(transport: &str) -> Peer {
        let port = free_port();
        let mut command = Command::new(python());
        command.args([
            &repository("tests/peers/python_server.py"),
            transport,
            &port.to_string(),
        ]);
        Peer::start(command, port).await
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn within<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, future).await.expect("in time")
}

type Client = RunningService<RoleClient, support::Handler>;

async fn connect(request: ConnectRequest, handler: &support::Handler) -> Client {
    let stack = EstablishBuilder::new(Connector::new()).build();
    within(mcp_connect_rmcp::connect(&stack, request, handler.clone()))
        .await
        .expect("establishes")
}

fn call(name: &str, arguments: serde_json::Value) -> CallToolRequestParams {
    serde_json::from_value(json!({ "name": name, "arguments": arguments })).unwrap()
}

fn text(result: &rmcp::model::CallToolResult) -> String {
    serde_json::to_value(result).unwrap()["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// server-everything through rmcp's typed API: tools, a sum, progress to
/// rmcp's handler and, where the transport carries server requests, a
/// sampling request answered by rmcp's handler.
async fn everything_round_trip(request: ConnectRequest, sampling: bool) {
    let handler = support::Handler::default();
    let client = connect(request, &handler).await;
    // server-everything is a 2025-11-25 server on every transport.
    assert_eq!(
        client.peer_info().unwrap().protocol_version.to_string(),
        "2025-11-25"
    );
    assert!(client.peer_info().unwrap().capabilities.tools.is_some());
    // The capability-gated tools appear once initialization completes.
    let mut names = Vec::new();
    for _ in 0..50 {
        names = within(client.list_all_tools())
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name.to_string())
            .collect::<Vec<_>>();
        if !sampling || names.iter().any(|n| n == "trigger-sampling-request") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(names.iter().any(|n| n == "get-sum"), "{names:?}");
    let sum = within(client.call_tool(call("get-sum", json!({ "a": 2, "b": 3 }))))
        .await
        .unwrap();
    assert!(text(&sum).contains('5'), "{}", text(&sum));

    let params: CallToolRequestParams = serde_json::from_value(json!({
        "name": "trigger-long-running-operation",
        "arguments": { "duration": 1, "steps": 4 },
        "_meta": { "progressToken": "bridge-progress" }
    }))
    .unwrap();
    within(client.call_tool(params)).await.unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while handler.progress.lock().unwrap().len() < 4 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut progress = handler.progress.lock().unwrap().clone();
    progress.sort_by(f64::total_cmp);
    assert_eq!(progress, [1.0, 2.0, 3.0, 4.0]);

    if sampling {
        let sampled = within(client.call_tool(call(
            "trigger-sampling-request",
            json!({ "prompt": "hi", "maxTokens": 5 }),
        )))
        .await
        .unwrap();
        let all = serde_json::to_string(&sampled).unwrap();
        assert!(all.contains("from the model"), "{all}");
        assert_eq!(handler.sampled.load(Ordering::Relaxed), 1);
    }
    within(client.cancel()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs the interop peers: run through .ci/run"]
async fn server_everything_over_streamable_http() {
    let peer = Peer::everything("streamableHttp").await;
    everything_round_trip(ConnectRequest::http(&peer.url("/mcp")).unwrap(), true).await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs the interop peers: run through .ci/run"]
async fn server_everything_over_http_sse() {
    let peer = Peer::everything("sse").await;
    let request = ConnectRequest::http(&peer.url("/sse"))
        .unwrap()
        .with_mode(TransportMode::Sse);
    everything_round_trip(request, true).await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs the interop peers: run through .ci/run"]
async fn server_everything_over_stdio() {
    let command =
        StdioCommand::new("node").args([everything().display().to_string(), "stdio".into()]);
    everything_round_trip(ConnectRequest::stdio(command), true).await;
}

/// The Python SDK on both eras: tools, a sum, and `greet`, whose question
/// (an elicitation: a server request on 2025-11-25, an `input_required`
/// round on 2026-07-28) is answered by rmcp's handler.
async fn python_round_trip(request: ConnectRequest, version: &str) {
    let handler = support::Handler::default();
    let client = connect(request, &handler).await;
    assert_eq!(
        client.peer_info().unwrap().protocol_version.to_string(),
        version
    );
    let mut names: Vec<String> = within(client.list_all_tools())
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    names.sort();
    assert!(names.iter().any(|n| n == "add"), "{names:?}");
    let sum = within(client.call_tool(call("add", json!({ "a": 2, "b": 3 }))))
        .await
        .unwrap();
    assert_eq!(text(&sum), "5");
    if version == "2026-07-28" {
        let greeted = within(client.call_tool(call("greet", json!({}))))
            .await
            .unwrap();
        assert_eq!(text(&greeted), "Hello, Ada!");
    }
    within(client.cancel()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs the interop peers: run through .ci/run"]
async fn python_sdk_modern_over_streamable_http() {
    let peer = Peer::python("streamable-http").await;
    python_round_trip(
        ConnectRequest::http(&peer.url("/mcp")).unwrap(),
        "2026-07-28",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs the interop peers: run through .ci/run"]
async fn python_sdk_legacy_over_streamable_http() {
    let peer = Peer::python("streamable-http").await;
    let request = ConnectRequest::http(&peer.url("/mcp"))
        .unwrap()
        .with_pin(ProtocolVersion::V2025_11_25);
    python_round_trip(request, "2025-11-25").await;
}

#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs the interop peers: run through .ci/run"]
async fn python_sdk_modern_over_stdio() {
    let command = StdioCommand::new(python())
        .args([repository("tests/peers/python_server.py"), "stdio".into()]);
    python_round_trip(ConnectRequest::stdio(command), "2026-07-28").await;
}

/// Issue 66: rmcp's client through the gateway (the library crate, served
/// by hyper here) in front of two members, server-everything over HTTP and
/// over stdio, in both eras: both members' tools listed and called under
/// their members' names, progress to rmcp's handler, and in a 2025 session
/// a member's sampling request answered by rmcp's handler.
#[tokio::test(flavor = "multi_thread")]
#[ignore = "needs the interop peers: run through .ci/run"]
async fn rmcp_client_through_the_gateway_in_both_eras() {
    use mcp_connect::group::{Server, ServerGroup};
    use mcp_connect::inbound::ClientHandler;
    use mcp_connect::protocol::server_requests::CreateMessageResult;
    use mcp_connect_gateway::Gateway;
    use tower_service::Service as _;

    let http = Peer::everything("streamableHttp").await;
    let stack = EstablishBuilder::new(Connector::new()).build();
    let members = [
        ConnectRequest::http(&http.url("/mcp"))
            .unwrap()
            .with_name("http"),
        ConnectRequest::stdio(
            StdioCommand::new("node").args([everything().display().to_string(), "stdio".into()]),
        )
        .with_name("stdio"),
    ];
    // The group's own clients answer sampling too, so that server-everything
    // lists the tool gated on it.
    let canned = ClientHandler::new()
        .on_sampling(|_| async { Ok(CreateMessageResult::text("canned", "gateway canned")) });
    let group = ServerGroup::new();
    for request in &members {
        let request = request.clone().with_handler(canned.clone());
        group.add(Server::new(stack.clone(), request)).unwrap();
    }
    within(group.settled()).await;
    let made = members.clone();
    let gateway = Gateway::builder(group.clone())
        .session_clients(move |name, relay| {
            let request = made.iter().find(|r| r.name() == name)?.clone();
            Some(mcp_connect::McpClient::builder(stack.clone(), relay.apply(request)).build())
        })
        .build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let gateway = gateway.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    let mut gateway = gateway.clone();
                    async move { gateway.call(request).await }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    });

    for legacy in [true, false] {
        let handler = support::Handler::default();
        let mut request = ConnectRequest::http(&url).unwrap();
        if legacy {
            request = request.with_pin(ProtocolVersion::V2025_11_25);
        }
        let client = connect(request, &handler).await;
        let names: Vec<String> = within(client.list_all_tools())
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name.to_string())
            .collect();
        for member in ["http", "stdio"] {
            let name = format!("{member}__get-sum");
            assert!(names.contains(&name), "{names:?}");
            let sum = within(client.call_tool(call(&name, json!({ "a": 2, "b": 3 }))))
                .await
                .unwrap();
            assert!(text(&sum).contains('5'), "{}", text(&sum));
        }
        let params: CallToolRequestParams = serde_json::from_value(json!({
            "name": "http__trigger-long-running-operation",
            "arguments": { "duration": 1, "steps": 4 },
            "_meta": { "progressToken": "through-the-gateway" }
        }))
        .unwrap();
        within(client.call_tool(params)).await.unwrap();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while handler.progress.lock().unwrap().len() < 4 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(
            handler.progress.lock().unwrap().len(),
            4,
            "legacy: {legacy}"
        );
        // Both eras: in 2026-07-28 the member's question is an
        // input_required round, answered by the same rmcp handler.
        let sampled = within(client.call_tool(call(
            "http__trigger-sampling-request",
            json!({ "prompt": "hi", "maxTokens": 5 }),
        )))
        .await
        .unwrap();
        let all = serde_json::to_string(&sampled).unwrap();
        assert!(all.contains("from the model"), "legacy {legacy}: {all}");
        assert_eq!(handler.sampled.load(Ordering::Relaxed), 1);
        within(client.cancel()).await.unwrap();
    }
    group.shutdown().await;
}
