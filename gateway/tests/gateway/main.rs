//! The gateway mounted in a hyper server on loopback, in front of demo
//! servers: this project's own client of either era lists and calls
//! through it, and the HTTP rules hold for a raw client.

use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use mcp_connect::demo::DemoServer;
use mcp_connect::group::{Server, ServerGroup};
use mcp_connect::protocol::{Era, ProtocolVersion};
use mcp_connect::{ConnectRequest, Connector, EstablishBuilder};
use mcp_connect_gateway::Gateway;
use serde_json::{json, Value};
use tower_service::Service as _;

mod cancelled;
mod changes;
#[cfg(feature = "oauth")]
mod exchange;
#[cfg(feature = "oauth")]
mod governance;
mod replicas;
#[cfg(feature = "oauth")]
mod resource_server;
mod rounds;
mod stdio_relay;
#[cfg(feature = "otel")]
mod telemetry;

const LIMIT: Duration = Duration::from_secs(20);

/// Serves `gateway` at `http://ADDR/mcp` until the test ends.
async fn serve(gateway: Gateway) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    serve_on(listener, gateway)
}

/// Serves `gateway` on `listener` until the test ends.
fn serve_on(listener: tokio::net::TcpListener, gateway: Gateway) -> SocketAddr {
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let _ = stream.set_nodelay(true);
            let gateway = gateway.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |request| {
                    let mut gateway = gateway.clone();
                    async move { gateway.call(request).await }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    addr
}

/// Each session's (or 2026-07-28 round's) own client of the member
/// `one` at `url`, as `serve` makes them.
fn own_clients(
    url: &str,
) -> impl Fn(&str, mcp_connect_gateway::SessionRelay) -> Option<mcp_connect::McpClient>
       + Send
       + Sync
       + 'static {
    let url = url.to_owned();
    move |_, relay| {
        let stack = EstablishBuilder::new(Connector::new()).build();
        let request = relay.apply(ConnectRequest::http(&url).unwrap().with_name("one"));
        Some(mcp_connect::McpClient::builder(stack, request).build())
    }
}

fn member(url: &str, name: &str) -> Server {
    let stack = EstablishBuilder::new(Connector::new())
        .with_deadline(Duration::from_secs(5))
        .build();
    Server::new(stack, ConnectRequest::http(url).unwrap().with_name(name))
}

/// A group of two demo servers, settled, and the gateway over it.
async fn two_demos() -> (Vec<DemoServer>, ServerGroup, SocketAddr) {
    let demos = vec![
        DemoServer::start().await.unwrap(),
        DemoServer::start().await.unwrap(),
    ];
    let group = ServerGroup::new();
    group.add(member(&demos[0].url(), "one")).unwrap();
    group.add(member(&demos[1].url(), "two")).unwrap();
    tokio::time::timeout(LIMIT, group.settled()).await.unwrap();
    let addr = serve(Gateway::builder(group.clone()).build()).await;
    (demos, group, addr)
}

#[tokio::test]
async fn a_client_of_either_era_lists_and_calls_two_members_through_the_gateway() {
    let (demos, _group, addr) = two_demos().await;
    let url = format!("http://{addr}/mcp");
    for pin in [Some(ProtocolVersion::V2025_11_25), None] {
        let mut request = ConnectRequest::http(&url).unwrap();
        if let Some(version) = &pin {
            request = request.with_pin(version.clone());
        }
        let session = tokio::time::timeout(LIMIT, Connector::new().connect(request))
            .await
            .unwrap()
            .unwrap();
        let era = if pin.is_some() {
            Era::Legacy
        } else {
            Era::Modern
        };
        assert_eq!(session.era(), era);
        let listed = session.list_tools().await.unwrap();
        let mut names: Vec<_> = listed.tools.iter().map(|t| t.name.as_str()).collect();
        names.sort();
        // Both members offer `add` and `echo`: each under its server's name.
        assert_eq!(names, ["one__add", "one__echo", "two__add", "two__echo"]);
        let sum = session
            .call_tool("two__add", &json!({ "a": 2, "b": 3 }))
            .await
            .unwrap();
        assert_eq!(sum.text(), "5", "{era:?}");
        let echoed = session
            .call_tool("one__echo", &json!({ "message": "hi" }))
            .await
            .unwrap();
        assert_eq!(echoed.text(), "hi");
        let unknown = session
            .call_tool("three__add", &json!({}))
            .await
            .unwrap_err();
        assert_eq!(unknown.jsonrpc_code(), Some(-32602), "{unknown:?}");
        session.close().await.unwrap();
    }
    // Each member served its own calls.
    assert!(demos.iter().all(|d| d.requests() > 0));
}

/// A raw exchange with the gateway: the status, the session header and
/// the JSON body (`Null` when empty).
async fn exchange(
    addr: SocketAddr,
    method: http::Method,
    headers: &[(&str, &str)],
    body: &str,
) -> (StatusCode, Option<String>, Value) {
    let client = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
        .build_http::<Full<Bytes>>();
    let mut request = Request::builder()
        .method(method)
        .uri(format!("http://{addr}/mcp"));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(Full::new(Bytes::from(body.to_owned())))
        .unwrap();
    let response = client.request(request).await.unwrap();
    let status = response.status();
    let session =
        (response.headers().get("mcp-session-id")).map(|v| v.to_str().unwrap().to_owned());
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    // A stream's answer is its last event.
    let text = String::from_utf8_lossy(&bytes);
    let last = text.lines().rev().find_map(|l| l.strip_prefix("data: "));
    let body = serde_json::from_str(last.unwrap_or(&text)).unwrap_or(Value::Null);
    (status, session, body)
}

/// A GET's status and content type, its body left unread.
async fn opened(addr: SocketAddr, headers: &[(&str, &str)]) -> (StatusCode, Option<String>) {
    let client = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
        .build_http::<Full<Bytes>>();
    let mut request = Request::builder().uri(format!("http://{addr}/mcp"));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = client
        .request(request.body(Full::default()).unwrap())
        .await
        .unwrap();
    let content_type =
        (response.headers().get("content-type")).map(|v| v.to_str().unwrap().to_owned());
    (response.status(), content_type)
}

const JSON_IN: (&str, &str) = ("content-type", "application/json");
const BOTH_OUT: (&str, &str) = ("accept", "application/json, text/event-stream");

fn initialize() -> String {
    json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": { "name": "raw", "version": "1" } } })
    .to_string()
}

#[tokio::test]
async fn the_http_rules_hold_for_a_raw_client() {
    let group = ServerGroup::new();
    let gateway = Gateway::builder(group)
        .max_body(4096)
        .max_sessions(2)
        .build();
    let addr = serve(gateway).await;
    let post = http::Method::POST;
    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" }).to_string();

    // DNS rebinding: a foreign Host or Origin is refused before anything.
    let (status, ..) = exchange(
        addr,
        post.clone(),
        &[("host", "evil.example"), JSON_IN, BOTH_OUT],
        &initialize(),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let origin = ("origin", "https://evil.example");
    let (status, ..) = exchange(
        addr,
        post.clone(),
        &[origin, JSON_IN, BOTH_OUT],
        &initialize(),
    )
    .await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    // JSON in, JSON and SSE accepted out, a bounded body.
    let (status, ..) = exchange(
        addr,
        post.clone(),
        &[("content-type", "text/plain"), BOTH_OUT],
        &initialize(),
    )
    .await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let (status, ..) = exchange(
        addr,
        post.clone(),
        &[JSON_IN, ("accept", "application/json")],
        &initialize(),
    )
    .await;
    assert_eq!(status, StatusCode::NOT_ACCEPTABLE);
    let (status, ..) = exchange(addr, post.clone(), &[JSON_IN, BOTH_OUT], &"x".repeat(5000)).await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    let (status, _, body) = exchange(addr, post.clone(), &[JSON_IN, BOTH_OUT], "{ not json").await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (StatusCode::BAD_REQUEST, &json!(-32700))
    );
    let (status, ..) = exchange(
        addr,
        post.clone(),
        &[JSON_IN, BOTH_OUT, ("mcp-protocol-version", "1999-01-01")],
        &list,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);

    // Sessions: none is 400, an unknown one 404, DELETE ends one.
    let (status, ..) = exchange(addr, post.clone(), &[JSON_IN, BOTH_OUT], &list).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    let (status, ..) = exchange(
        addr,
        post.clone(),
        &[JSON_IN, BOTH_OUT, ("mcp-session-id", "nope")],
        &list,
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, session, body) =
        exchange(addr, post.clone(), &[JSON_IN, BOTH_OUT], &initialize()).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["result"]["protocolVersion"], "2025-06-18");
    let session = session.expect("a session id");
    assert_eq!(session.len(), 32);
    let with = ("mcp-session-id", session.as_str());
    let initialized =
        json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }).to_string();
    let (status, ..) = exchange(addr, post.clone(), &[JSON_IN, BOTH_OUT, with], &initialized).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    // No member is usable (there is none): the listing is empty, not an error.
    let (status, _, body) = exchange(addr, post.clone(), &[JSON_IN, BOTH_OUT, with], &list).await;
    assert_eq!(
        (status, &body["result"]["tools"]),
        (StatusCode::OK, &json!([]))
    );
    // The session's own stream opens (its body is read no further: it
    // stays open while the session lives); without a session, 405.
    let (status, content_type) = opened(addr, &[with, ("accept", "text/event-stream")]).await;
    assert_eq!(
        (status, content_type.as_deref()),
        (StatusCode::OK, Some("text/event-stream"))
    );
    let (status, _) = opened(addr, &[("accept", "text/event-stream")]).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    // The cap: two sessions at most.
    let (status, ..) = exchange(addr, post.clone(), &[JSON_IN, BOTH_OUT], &initialize()).await;
    assert_eq!(status, StatusCode::OK);
    let (status, ..) = exchange(addr, post.clone(), &[JSON_IN, BOTH_OUT], &initialize()).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    let (status, ..) = exchange(addr, http::Method::DELETE, &[with], "").await;
    assert_eq!(status, StatusCode::OK);
    let (status, ..) = exchange(addr, post.clone(), &[JSON_IN, BOTH_OUT, with], &list).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, ..) = exchange(addr, post.clone(), &[JSON_IN, BOTH_OUT], &initialize()).await;
    assert_eq!(status, StatusCode::OK, "a closed session frees its place");

    // 2026-07-28: the version and method headers must match the request.
    let discover = json!({ "jsonrpc": "2.0", "id": 3, "method": "server/discover", "params": {
        "_meta": { "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                   "io.modelcontextprotocol/clientCapabilities": {} } } })
    .to_string();
    let modern = [
        JSON_IN,
        BOTH_OUT,
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "server/discover"),
    ];
    let (status, _, body) = exchange(addr, post.clone(), &modern, &discover).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["result"]["supportedVersions"], json!(["2026-07-28"]));
    let wrong = [
        JSON_IN,
        BOTH_OUT,
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/list"),
    ];
    let (status, _, body) = exchange(addr, post.clone(), &wrong, &discover).await;
    assert_eq!(
        (status, &body["error"]["code"], &body["id"]),
        (StatusCode::BAD_REQUEST, &json!(-32020), &json!(3))
    );
    // No `_meta` under the modern header: invalid params, with the id.
    let bare = json!({ "jsonrpc": "2.0", "id": 4, "method": "server/discover" }).to_string();
    let (status, _, body) = exchange(addr, post.clone(), &modern, &bare).await;
    assert_eq!(
        (status, &body["error"]["code"], &body["id"]),
        (StatusCode::BAD_REQUEST, &json!(-32602), &json!(4))
    );
    // A method the era removed: 404 with method-not-found.
    let ping = json!({ "jsonrpc": "2.0", "id": 5, "method": "ping", "params": {
        "_meta": { "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                   "io.modelcontextprotocol/clientCapabilities": {} } } })
    .to_string();
    let ping_headers = [
        JSON_IN,
        BOTH_OUT,
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "ping"),
    ];
    let (status, _, body) = exchange(addr, post.clone(), &ping_headers, &ping).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (StatusCode::NOT_FOUND, &json!(-32601))
    );
    // A listing says how long it may be kept, and by whom.
    let list = json!({ "jsonrpc": "2.0", "id": 6, "method": "tools/list", "params": {
        "_meta": { "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                   "io.modelcontextprotocol/clientCapabilities": {} } } })
    .to_string();
    let list_headers = [
        JSON_IN,
        BOTH_OUT,
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/list"),
    ];
    let (status, _, body) = exchange(addr, post.clone(), &list_headers, &list).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["result"]["cacheScope"], "public");
    assert_eq!(body["result"]["ttlMs"], 60_000);
    assert_eq!(body["result"]["resultType"], "complete");
}

#[tokio::test]
async fn a_dead_member_hides_no_tools_and_none_usable_is_an_error() {
    let alive = DemoServer::start().await.unwrap();
    // A port nothing listens on: the member's establishment is refused.
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap()
    };
    // A server that accepts and never answers: its member stays connecting
    // until its deadline (5 s).
    let stalled = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let stalled_addr = stalled.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = stalled.accept().await {
            held.push(stream);
        }
    });
    let group = ServerGroup::new();
    group.add(member(&alive.url(), "alive")).unwrap();
    group
        .add(member(&format!("http://{closed}/mcp"), "dead"))
        .unwrap();
    group
        .add(member(&format!("http://{stalled_addr}/mcp"), "stalled"))
        .unwrap();
    let started = tokio::time::Instant::now();
    while !group.health("alive").unwrap().state.is_usable() {
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "alive never ready"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let addr = serve(Gateway::builder(group.clone()).build()).await;
    let (_, session, _) = exchange(
        addr,
        http::Method::POST,
        &[JSON_IN, BOTH_OUT],
        &initialize(),
    )
    .await;
    let session = session.unwrap();
    let with = ("mcp-session-id", session.as_str());
    let list = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" }).to_string();
    let (_, _, body) = exchange(addr, http::Method::POST, &[JSON_IN, BOTH_OUT, with], &list).await;
    let names: Vec<_> = body["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].clone())
        .collect();
    assert_eq!(names, [json!("add"), json!("echo")], "{body}");
    // The healthy member's call, while the stalled one still connects.
    let call = json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": { "name": "add", "arguments": { "a": 2, "b": 2 } } })
    .to_string();
    let (status, _, body) =
        exchange(addr, http::Method::POST, &[JSON_IN, BOTH_OUT, with], &call).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["result"]["content"][0]["text"], "4", "{body}");
    assert!(
        group.health("stalled").unwrap().state.is_connecting(),
        "the stalled member is still starting: nothing waited for it"
    );
    assert!(started.elapsed() < Duration::from_secs(3));

    let only_dead = ServerGroup::new();
    only_dead
        .add(member(&format!("http://{closed}/mcp"), "dead"))
        .unwrap();
    tokio::time::timeout(LIMIT, only_dead.settled())
        .await
        .unwrap();
    let addr = serve(Gateway::builder(only_dead).build()).await;
    let (_, session, _) = exchange(
        addr,
        http::Method::POST,
        &[JSON_IN, BOTH_OUT],
        &initialize(),
    )
    .await;
    let session = session.unwrap();
    let with = ("mcp-session-id", session.as_str());
    let (status, _, body) =
        exchange(addr, http::Method::POST, &[JSON_IN, BOTH_OUT, with], &list).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["error"]["code"], json!(-32603), "{body}");
    drop(alive);
}

#[tokio::test]
async fn over_stdio_the_connection_is_the_session() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let (_demos, group, _) = two_demos().await;
    let gateway = Gateway::builder(group).build();
    let (client, server) = tokio::io::duplex(64 * 1024);
    let (server_in, server_out) = tokio::io::split(server);
    let serving = tokio::spawn(async move { gateway.serve_stdio(server_in, server_out).await });
    let (client_in, mut client_out) = tokio::io::split(client);
    let modern = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28" });
    let requests = [
        json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-03-26", "capabilities": {},
            "clientInfo": { "name": "t", "version": "1" } } }),
        // A notification gets no line.
        json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
        json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/list" }),
        json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call",
            "params": { "name": "one__add", "arguments": { "a": 4, "b": 5 } } }),
        json!({ "jsonrpc": "2.0", "id": 4, "method": "server/discover",
            "params": { "_meta": modern } }),
        json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/list",
            "params": { "_meta": { "io.modelcontextprotocol/protocolVersion": "2030-01-01" } } }),
    ];
    for request in &requests {
        client_out
            .write_all(format!("{request}\n").as_bytes())
            .await
            .unwrap();
    }
    client_out.write_all(b"not json\n").await.unwrap();
    let mut lines = BufReader::new(client_in).lines();
    let mut answers = std::collections::BTreeMap::new();
    for _ in 0..6 {
        let line = tokio::time::timeout(LIMIT, lines.next_line())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        let answer: Value = serde_json::from_str(&line).unwrap();
        answers.insert(answer["id"].to_string(), answer);
    }
    assert_eq!(answers["1"]["result"]["protocolVersion"], "2025-03-26");
    assert_eq!(answers["2"]["result"]["tools"].as_array().unwrap().len(), 4);
    assert_eq!(answers["3"]["result"]["content"][0]["text"], "9");
    assert_eq!(
        answers["4"]["result"]["supportedVersions"],
        json!(["2026-07-28"])
    );
    assert_eq!(answers["5"]["error"]["code"], json!(-32022));
    assert_eq!(answers["null"]["error"]["code"], json!(-32700));
    client_out.shutdown().await.unwrap();
    tokio::time::timeout(LIMIT, serving)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
}
