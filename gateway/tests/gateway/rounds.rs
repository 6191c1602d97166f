//! A member's question during a 2026-07-28 client's call: the client gets
//! an `input_required` result, answers it, and the member's call goes on
//! with the answer; a question of a capability the client did not declare
//! is -32021 naming it.

use mcp_connect::inbound::{elicitation_defaults, ClientHandler};
use mcp_connect::protocol::server_requests::ElicitResult;
use mcp_connect::testkit::{error, result, Recorded, Script, ScriptServer};

use super::*;

/// A 2026-07-28 member whose `greet` asks the client's name once, then
/// greets whoever the answer names.
fn member_server(request: &Recorded) -> Script {
    let answer = match request.rpc_method() {
        "server/discover" => json!({ "supportedVersions": ["2026-07-28"],
            "capabilities": { "tools": {} } }),
        "tools/list" => json!({ "tools": [{ "name": "greet",
            "inputSchema": { "type": "object" } }] }),
        "tools/call" => match request.body["params"]["inputResponses"]["ask"].get("content") {
            Some(content) => json!({ "resultType": "complete", "content": [{ "type": "text",
                "text": format!("hello {}", content["name"].as_str().unwrap_or("?")) }] }),
            None => json!({ "resultType": "input_required", "requestState": "member-state",
                "inputRequests": { "ask": { "method": "elicitation/create", "params": {
                    "message": "name?", "requestedSchema": { "type": "object",
                        "properties": { "name": { "type": "string", "default": "Ada" } } } } } } }),
        },
        _ => return Script::Json(200, error(request, -32601, None)),
    };
    Script::Json(200, result(request, answer))
}

async fn gateway_over(url: &str) -> SocketAddr {
    let group = ServerGroup::new();
    group.add(member(url, "one")).unwrap();
    tokio::time::timeout(LIMIT, group.settled()).await.unwrap();
    let url = url.to_owned();
    let gateway = Gateway::builder(group)
        .session_clients(own_clients(&url))
        .build();
    serve(gateway).await
}

#[tokio::test]
async fn a_members_question_is_an_input_round_for_a_2026_client() {
    let server = ScriptServer::start(member_server).await;
    let addr = gateway_over(&server.url()).await;
    let handler = ClientHandler::new().on_elicitation(|request| async move {
        Ok(ElicitResult::accept(elicitation_defaults(&request)))
    });
    let request = ConnectRequest::http(&format!("http://{addr}/mcp"))
        .unwrap()
        .with_handler(handler);
    let session = tokio::time::timeout(LIMIT, Connector::new().connect(request))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(session.era(), Era::Modern);
    let greeted = tokio::time::timeout(LIMIT, session.call_tool("greet", &json!({})))
        .await
        .unwrap();
    let greeted = greeted.unwrap_or_else(|e| {
        panic!(
            "{}; upstream: {:?}",
            e.report(),
            server
                .recorded()
                .iter()
                .map(|r| r.body.clone())
                .collect::<Vec<_>>()
        )
    });
    assert_eq!(greeted.text(), "hello Ada");
    // The member asked once and was answered once: two calls upstream.
    assert_eq!(server.recorded_for("tools/call").len(), 2);
    // A second request's round runs on the member client the first one
    // used: no new establishment (one discover by the group's client, one
    // by the round's).
    let again = tokio::time::timeout(LIMIT, session.call_tool("greet", &json!({})))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(again.text(), "hello Ada");
    assert_eq!(server.recorded_for("server/discover").len(), 2);

    // A client that cannot be asked: -32021, naming what it lacks.
    let bare = ConnectRequest::http(&format!("http://{addr}/mcp")).unwrap();
    let bare = Connector::new().connect(bare).await.unwrap();
    let refused = tokio::time::timeout(LIMIT, bare.call_tool("greet", &json!({})))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(refused.jsonrpc_code(), Some(-32021), "{refused:?}");
}

/// A 2026-07-28 member whose `chatty` logs at two levels while it runs.
fn chatty_member(request: &Recorded) -> Script {
    let log = |level: &str, data: &str| {
        let message = json!({ "jsonrpc": "2.0", "method": "notifications/message",
            "params": { "level": level, "data": data } });
        format!("data: {message}\n\n")
    };
    match request.rpc_method() {
        "tools/call" => {
            let done = result(
                request,
                json!({ "resultType": "complete",
                "content": [{ "type": "text", "text": "done" }] }),
            );
            Script::Sse(vec![
                log("info", "info-canary"),
                log("debug", "debug-canary"),
                format!("data: {done}\n\n"),
            ])
        }
        "tools/list" => Script::Json(
            200,
            result(
                request,
                json!({ "tools": [{ "name": "chatty",
                "inputSchema": { "type": "object" } }] }),
            ),
        ),
        _ => member_server(request),
    }
}

#[tokio::test]
async fn a_2026_request_hears_the_members_log_messages_at_its_level_only() {
    let server = ScriptServer::start(chatty_member).await;
    let addr = gateway_over(&server.url()).await;
    let headers = [
        JSON_IN,
        BOTH_OUT,
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "chatty"),
    ];
    let client = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
        .build_http::<Full<Bytes>>();
    let mut said = Vec::new();
    for level in [Some("info"), None] {
        let mut meta = json!({ "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {} });
        if let Some(level) = level {
            meta["io.modelcontextprotocol/logLevel"] = json!(level);
        }
        let call = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": { "name": "chatty", "arguments": {}, "_meta": meta } });
        let mut request = Request::post(format!("http://{addr}/mcp"));
        for (name, value) in headers {
            request = request.header(name, value);
        }
        let request = request
            .body(Full::new(Bytes::from(call.to_string())))
            .unwrap();
        let response = tokio::time::timeout(LIMIT, client.request(request))
            .await
            .unwrap()
            .unwrap();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        said.push(String::from_utf8_lossy(&body).into_owned());
    }
    assert!(said[0].contains("info-canary"), "{}", said[0]);
    assert!(!said[0].contains("debug-canary"), "{}", said[0]);
    assert!(said[0].contains("done"), "{}", said[0]);
    // No level: no log message, only the answer.
    assert!(!said[1].contains("canary"), "{}", said[1]);
    assert!(said[1].contains("done"), "{}", said[1]);
}
