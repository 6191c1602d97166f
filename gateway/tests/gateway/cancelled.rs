//! A client's cancellation reaches the member: a 2025 session's
//! `notifications/cancelled`, and a 2026-07-28 client closing its stream,
//! each end in the member's own `notifications/cancelled` for the request
//! the gateway made for it.

use mcp_connect::testkit::{result, LegacyServer, Recorded, Script, ScriptServer};

use super::*;

/// A 2025 member whose one tool, `slow`, never answers.
fn slow_member(legacy: LegacyServer) -> impl Fn(&Recorded) -> Script + Send + Sync + 'static {
    move |request| match request.rpc_method() {
        "tools/list" => Script::Json(
            200,
            result(
                request,
                json!({ "tools": [{ "name": "slow",
                "inputSchema": { "type": "object" } }] }),
            ),
        ),
        "tools/call" => Script::SseThenStall(Vec::new()),
        "notifications/cancelled" => Script::Status(202),
        _ => legacy.respond(request),
    }
}

/// Sends `body` with `headers` and leaves the answer unread (a stream that
/// stays open); the response, to drop when the client gives up.
async fn open_call(
    addr: SocketAddr,
    headers: &[(&str, &str)],
    body: &Value,
) -> http::Response<hyper::body::Incoming> {
    let client = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
        .build_http::<Full<Bytes>>();
    let mut request = Request::post(format!("http://{addr}/mcp"));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap();
    client.request(request).await.unwrap()
}

/// Waits until the member has seen `count` of `method`; what it saw.
async fn seen(server: &ScriptServer, method: &str, count: usize) -> Vec<Recorded> {
    for _ in 0..200 {
        let seen = server.recorded_for(method);
        if seen.len() >= count {
            return seen;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the member never saw {count} {method}");
}

#[tokio::test]
async fn a_clients_cancellation_reaches_the_member_in_either_era() {
    let server = ScriptServer::start(slow_member(LegacyServer::new())).await;
    let group = ServerGroup::new();
    group.add(member(&server.url(), "one")).unwrap();
    tokio::time::timeout(LIMIT, group.settled()).await.unwrap();
    let addr = serve(Gateway::builder(group).build()).await;

    // A 2025 session says notifications/cancelled.
    let (_, session, _) = exchange(
        addr,
        http::Method::POST,
        &[JSON_IN, BOTH_OUT],
        &initialize(),
    )
    .await;
    let session = session.unwrap();
    let named = [
        JSON_IN,
        BOTH_OUT,
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-06-18"),
    ];
    let call = json!({ "jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": { "name": "slow", "arguments": {} } });
    let _stream = open_call(addr, &named, &call).await;
    let upstream = seen(&server, "tools/call", 1).await;
    let cancel = json!({ "jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": { "requestId": 5 } });
    let (status, _, _) = exchange(addr, http::Method::POST, &named, &cancel.to_string()).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let cancelled = seen(&server, "notifications/cancelled", 1).await;
    assert_eq!(cancelled[0].body["params"]["requestId"], upstream[0].id());

    // A 2026-07-28 client closes the stream its call is answered on.
    let meta = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}, "progressToken": "p" });
    let call = json!({ "jsonrpc": "2.0", "id": 6, "method": "tools/call",
        "params": { "name": "slow", "arguments": {}, "_meta": meta } });
    let modern = [
        JSON_IN,
        BOTH_OUT,
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "slow"),
    ];
    let stream = open_call(addr, &modern, &call).await;
    assert_eq!(stream.status(), StatusCode::OK);
    let upstream = seen(&server, "tools/call", 2).await;
    drop(stream);
    let cancelled = seen(&server, "notifications/cancelled", 2).await;
    assert_eq!(cancelled[1].body["params"]["requestId"], upstream[1].id());
}
