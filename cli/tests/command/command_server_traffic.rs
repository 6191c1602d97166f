//! Issue 13: the command offers exactly the server-request answers it was
//! given, and answers with them.

use crate::support::{legacy, Recorded, Script, ScriptServer};
use serde_json::json;

fn server(request: &Recorded) -> Script {
    match request.rpc_method() {
        "server/discover" => Script::Status(400),
        "tools/call" => Script::Sse(vec![
            format!(
                "event: message\ndata: {}\n\n",
                json!({ "jsonrpc": "2.0", "id": "r", "method": "roots/list" })
            ),
            format!(
                "event: message\ndata: {}\n\n",
                crate::support::result(
                    request,
                    json!({ "content": [{ "type": "text", "text": "ok" }] })
                )
            ),
        ]),
        _ if request.body.get("method").is_none() && request.body.get("id").is_some() => {
            Script::Status(202)
        }
        _ => legacy(request),
    }
}

#[tokio::test]
async fn only_what_was_asked_for_is_offered_and_used() {
    let server = ScriptServer::start(server).await;
    let url = server.url();
    let output = crate::support::cli::run_async(&[
        &url,
        "--root",
        "/srv/my project",
        "--elicit",
        "defaults",
        "--call-tool",
        "any",
    ])
    .await;
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    let initialize = server
        .recorded()
        .into_iter()
        .find(|r| r.rpc_method() == "initialize")
        .unwrap();
    assert_eq!(
        initialize.body["params"]["capabilities"],
        json!({ "roots": { "listChanged": false }, "elicitation": { "form": {} } })
    );
    let answer = server
        .recorded()
        .into_iter()
        .find(|r| r.body["id"] == "r" && r.body.get("method").is_none())
        .expect("the roots request was answered");
    assert_eq!(
        answer.body["result"]["roots"][0],
        json!({ "uri": "file:///srv/my%20project", "name": "my project" })
    );
}
