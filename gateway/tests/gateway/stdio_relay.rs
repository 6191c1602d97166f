//! Over stdio the connection is a 2025 session with its own member clients:
//! a member's sampling request during a call goes out as a line, the
//! client's answer line goes back to the member, and the call's answer
//! follows.

use std::sync::{Arc, Mutex};

use mcp_connect::testkit::{result, LegacyServer, Recorded, Script, ScriptServer};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};

use super::*;

/// The open `tools/call` stream and its request's id.
type Open = Arc<Mutex<Option<(UnboundedSender<String>, Value)>>>;

fn sse(message: &Value) -> String {
    format!("event: message\ndata: {message}\n\n")
}

/// A 2025 member whose `ask` samples the client on the call's stream and
/// answers with what the client said.
fn asking_member(legacy: LegacyServer, open: Open) -> impl Fn(&Recorded) -> Script + Send + Sync {
    move |request| match request.rpc_method() {
        "tools/list" => Script::Json(
            200,
            result(
                request,
                json!({ "tools": [{ "name": "ask",
                "inputSchema": { "type": "object" } }] }),
            ),
        ),
        "tools/call" => {
            let (stream, events) = unbounded_channel();
            let question = json!({ "jsonrpc": "2.0", "id": "q1",
                "method": "sampling/createMessage",
                "params": { "messages": [], "maxTokens": 5 } });
            stream.send(sse(&question)).unwrap();
            *open.lock().unwrap() = Some((stream, request.id()));
            Script::SseLive(events)
        }
        // The client's answer to the question, POSTed back.
        "" if request.body.get("result").is_some() => {
            if let Some((stream, id)) = open.lock().unwrap().take() {
                let said = request.body["result"]["content"]["text"].clone();
                let answer = json!({ "jsonrpc": "2.0", "id": id, "result": {
                    "content": [{ "type": "text", "text": said }] } });
                stream.send(sse(&answer)).unwrap();
            }
            Script::Status(202)
        }
        _ => legacy.respond(request),
    }
}

/// The next line the gateway wrote, as JSON.
async fn next<R: tokio::io::AsyncBufRead + Unpin>(lines: &mut tokio::io::Lines<R>) -> Value {
    let line = tokio::time::timeout(LIMIT, lines.next_line())
        .await
        .unwrap();
    serde_json::from_str(&line.unwrap().unwrap()).unwrap()
}

#[tokio::test]
async fn over_stdio_a_members_question_is_a_line_and_its_answer_goes_back() {
    let open = Open::default();
    let server = ScriptServer::start(asking_member(LegacyServer::new(), open)).await;
    let group = ServerGroup::new();
    group.add(member(&server.url(), "one")).unwrap();
    tokio::time::timeout(LIMIT, group.settled()).await.unwrap();
    let url = server.url();
    let gateway = Gateway::builder(group)
        .session_clients(own_clients(&url))
        .build();
    let (client, served) = tokio::io::duplex(64 * 1024);
    let (served_in, served_out) = tokio::io::split(served);
    let serving = tokio::spawn(async move { gateway.serve_stdio(served_in, served_out).await });
    let (client_in, mut client_out) = tokio::io::split(client);
    let mut lines = BufReader::new(client_in).lines();
    for message in [
        json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": { "sampling": {} },
            "clientInfo": { "name": "t", "version": "1" } } }),
        json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }),
        json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": { "name": "ask", "arguments": {} } }),
    ] {
        client_out
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
    }
    assert_eq!(next(&mut lines).await["id"], 1);
    let question = next(&mut lines).await;
    assert_eq!(question["method"], "sampling/createMessage", "{question}");
    let answer = json!({ "jsonrpc": "2.0", "id": question["id"], "result": {
        "role": "assistant", "model": "m",
        "content": { "type": "text", "text": "from the stdio client" } } });
    client_out
        .write_all(format!("{answer}\n").as_bytes())
        .await
        .unwrap();
    let called = next(&mut lines).await;
    assert_eq!(called["id"], 2, "{called}");
    assert_eq!(
        called["result"]["content"][0]["text"],
        "from the stdio client"
    );
    // The input's end is the session's: the member's session ends too.
    client_out.shutdown().await.unwrap();
    drop(client_out);
    tokio::time::timeout(LIMIT, serving)
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(server
        .recorded()
        .iter()
        .any(|r| r.method == http::Method::DELETE));
}
