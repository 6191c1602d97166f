//! Issue 14, item 1 (SEP-2322): a 2026-07-28 result that asks for input is
//! never mistaken for a success. The handler answers the input requests and
//! the request is sent again with the answers and the server's state; with
//! no handler, an unknown result type, or a server that never stops asking,
//! the call fails with a typed error.

use std::time::Duration;

use crate::support::{watchdog, Recorded, Script, ScriptServer};
use mcp_connect::error::InputRequiredError;
use mcp_connect::inbound::{elicitation_defaults, ClientHandler};
use mcp_connect::protocol::server_requests::ElicitResult;
use mcp_connect::session::MAX_INPUT_ROUNDS;
use mcp_connect::{ConnectRequest, Connector, ErrorKind};
use serde_json::{json, Value};

fn discover(request: &Recorded) -> Script {
    Script::Json(
        200,
        crate::support::result(
            request,
            json!({ "supportedVersions": ["2026-07-28"], "capabilities": { "tools": {} } }),
        ),
    )
}

/// A modern server whose `tools/call` answers with `call`.
fn modern(
    call: impl Fn(&Recorded) -> Value + Send + Sync + 'static,
) -> impl Fn(&Recorded) -> Script + Send + Sync + 'static {
    move |request: &Recorded| match request.rpc_method() {
        "server/discover" => discover(request),
        "tools/call" => Script::Json(200, crate::support::result(request, call(request))),
        _ => Script::Json(200, crate::support::error(request, -32601, None)),
    }
}

fn asks_once(request: &Recorded) -> Value {
    if request.body["params"].get("requestState").is_some() {
        json!({ "resultType": "complete", "content": [{ "type": "text", "text": "done" }] })
    } else {
        json!({ "resultType": "input_required", "requestState": "opaque-1",
                "inputRequests": { "ask": { "method": "elicitation/create", "params": {
                    "message": "name?", "requestedSchema": { "type": "object",
                        "properties": { "name": { "type": "string", "default": "Ada" } } } } } } })
    }
}

fn calls(server: &ScriptServer) -> Vec<Recorded> {
    server.recorded_for("tools/call")
}

#[tokio::test]
async fn input_is_answered_and_the_request_sent_again_with_the_state() {
    watchdog(Duration::from_secs(10), async {
        let server = ScriptServer::start(modern(asks_once)).await;
        let handler = ClientHandler::new().on_elicitation(|request| async move {
            Ok(ElicitResult::accept(elicitation_defaults(&request)))
        });
        let request = ConnectRequest::http(&server.url())
            .unwrap()
            .with_handler(handler);
        let session = Connector::new().connect(request).await.unwrap();
        let result = session
            .call_tool("greet", &json!({ "x": 1 }))
            .await
            .unwrap();
        assert_eq!(result.text(), "done");
        let calls = calls(&server);
        assert_eq!(calls.len(), 2);
        let retry = &calls[1].body;
        assert_ne!(calls[0].id(), calls[1].id(), "the retry is a new request");
        assert_eq!(
            retry["params"]["requestState"], "opaque-1",
            "echoed verbatim"
        );
        assert_eq!(
            retry["params"]["inputResponses"]["ask"]["content"]["name"],
            "Ada"
        );
        assert_eq!(
            retry["params"]["arguments"]["x"], 1,
            "the original request, again"
        );
        assert!(
            retry["params"]["_meta"].is_object(),
            "still a 2026-07-28 request"
        );
        assert!(calls[0].body["params"].get("inputResponses").is_none());
    })
    .await;
}

#[tokio::test]
async fn a_request_state_alone_is_echoed_without_responses() {
    watchdog(Duration::from_secs(10), async {
        let server = ScriptServer::start(modern(|request| {
            if request.body["params"].get("requestState").is_some() {
                json!({ "content": [] })
            } else {
                json!({ "resultType": "input_required", "requestState": "busy-1" })
            }
        }))
        .await;
        let session = Connector::new()
            .connect(ConnectRequest::http(&server.url()).unwrap())
            .await
            .unwrap();
        session.call_tool("t", &json!({})).await.unwrap();
        let retry = &calls(&server)[1].body;
        assert_eq!(retry["params"]["requestState"], "busy-1");
        assert!(retry["params"].get("inputResponses").is_none());
    })
    .await;
}

#[tokio::test]
async fn without_a_handler_input_required_is_a_typed_error_not_an_empty_success() {
    watchdog(Duration::from_secs(10), async {
        let server = ScriptServer::start(modern(asks_once)).await;
        let session = Connector::new()
            .connect(ConnectRequest::http(&server.url()).unwrap())
            .await
            .unwrap();
        let error = session.call_tool("greet", &json!({})).await.unwrap_err();
        assert!(
            matches!(
                error.kind(),
                ErrorKind::InputRequired(InputRequiredError::Unanswered { code: -32601 })
            ),
            "{error}"
        );
        assert_eq!(calls(&server).len(), 1, "nothing re-sent");
    })
    .await;
}

#[tokio::test]
async fn unknown_result_types_and_endless_asking_are_typed_errors() {
    watchdog(Duration::from_secs(10), async {
        let server = ScriptServer::start(modern(|_| json!({ "resultType": "hologram" }))).await;
        let session = Connector::new()
            .connect(ConnectRequest::http(&server.url()).unwrap())
            .await
            .unwrap();
        let error = session.call_tool("t", &json!({})).await.unwrap_err();
        assert!(matches!(
            error.kind(),
            ErrorKind::InputRequired(InputRequiredError::UnknownResultType)
        ));

        let endless = ScriptServer::start(modern(
            |_| json!({ "resultType": "input_required", "requestState": "again" }),
        ))
        .await;
        let session = Connector::new()
            .connect(ConnectRequest::http(&endless.url()).unwrap())
            .await
            .unwrap();
        let error = session.call_tool("t", &json!({})).await.unwrap_err();
        assert!(matches!(
            error.kind(),
            ErrorKind::InputRequired(InputRequiredError::TooManyRounds { .. })
        ));
        assert_eq!(calls(&endless).len() as u32, MAX_INPUT_ROUNDS + 1);

        let malformed =
            ScriptServer::start(modern(|_| json!({ "resultType": "input_required" }))).await;
        let session = Connector::new()
            .connect(ConnectRequest::http(&malformed.url()).unwrap())
            .await
            .unwrap();
        let error = session.call_tool("t", &json!({})).await.unwrap_err();
        assert!(matches!(
            error.kind(),
            ErrorKind::InputRequired(InputRequiredError::Malformed)
        ));
    })
    .await;
}
