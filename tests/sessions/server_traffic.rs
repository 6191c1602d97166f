//! Issue 13: what the server says on its own reaches the application, and
//! each request has its own cancellation, timeout and progress.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::support::{legacy, watchdog, Recorded, Script, ScriptServer};
use mcp_connect::inbound::{notification_channel, ClientHandler};
use mcp_connect::layers::CancelSource;
use mcp_connect::protocol::server_requests::CreateMessageResult;
use mcp_connect::protocol::ListTools;
use mcp_connect::protocol::RawRequest;
use mcp_connect::protocol::RpcError;
use mcp_connect::session::Call;
use mcp_connect::session::RequestOptions;
use mcp_connect::{ConnectRequest, Connector, ErrorKind};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

fn event(message: Value) -> String {
    format!("event: message\ndata: {message}\n\n")
}

/// A 2025 server whose `tools/call` answers with `call`, whose GET stream
/// is refused (405), and which takes client responses with 202.
fn server(
    call: impl Fn(&Recorded) -> Script + Send + Sync + 'static,
) -> impl Fn(&Recorded) -> Script + Send + Sync + 'static {
    move |request: &Recorded| {
        if request.method == http::Method::GET {
            return Script::Status(405);
        }
        if request.body.get("method").is_none() && request.body.get("id").is_some() {
            return Script::Status(202); // a response to a server request
        }
        match request.rpc_method() {
            "server/discover" => Script::Status(400),
            "tools/call" => call(request),
            _ => legacy(request),
        }
    }
}

fn sampling_request() -> Value {
    json!({ "jsonrpc": "2.0", "id": "s-1", "method": "sampling/createMessage",
            "params": { "messages": [], "maxTokens": 5 } })
}

fn responses(server: &ScriptServer) -> Vec<Value> {
    server
        .recorded()
        .into_iter()
        .filter(|r| r.body.get("method").is_none() && r.body.get("id").is_some())
        .map(|r| r.body)
        .collect()
}

#[tokio::test]
async fn a_server_request_on_a_post_reply_stream_reaches_the_handler() {
    watchdog(Duration::from_secs(10), async {
        let server = ScriptServer::start(server(|request| {
            Script::Sse(vec![
                event(sampling_request()),
                event(crate::support::result(request, json!({ "content": [] }))),
            ])
        }))
        .await;
        let handler = ClientHandler::new().on_sampling(|request| async move {
            assert_eq!(request.max_tokens, 5);
            Ok(CreateMessageResult::text("canned", "hi"))
        });
        let request = ConnectRequest::http(&server.url())
            .unwrap()
            .with_handler(handler);
        let session = Connector::new().connect(request).await.unwrap();
        session.call_tool("any", &json!({})).await.unwrap();
        let answered = responses(&server);
        assert_eq!(answered.len(), 1, "{answered:?}");
        assert_eq!(answered[0]["id"], "s-1");
        assert_eq!(answered[0]["result"]["model"], "canned");
        // Declared because it is answered; nothing else is.
        let initialize = server
            .recorded()
            .into_iter()
            .find(|r| r.rpc_method() == "initialize")
            .unwrap();
        assert_eq!(
            initialize.body["params"]["capabilities"],
            json!({ "sampling": {} })
        );
        session.close().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn without_a_handler_nothing_is_declared_and_requests_get_method_not_found() {
    watchdog(Duration::from_secs(10), async {
        let server = ScriptServer::start(server(|request| {
            Script::Sse(vec![
                event(sampling_request()),
                event(crate::support::result(request, json!({ "content": [] }))),
            ])
        }))
        .await;
        let session = Connector::new()
            .connect(ConnectRequest::http(&server.url()).unwrap())
            .await
            .unwrap();
        session.call_tool("any", &json!({})).await.unwrap();
        let answered = responses(&server);
        assert_eq!(answered[0]["error"]["code"], -32601);
        let initialize = server
            .recorded()
            .into_iter()
            .find(|r| r.rpc_method() == "initialize")
            .unwrap();
        assert_eq!(initialize.body["params"]["capabilities"], json!({}));
        assert_eq!(
            server
                .recorded()
                .iter()
                .filter(|r| r.method == http::Method::GET)
                .count(),
            0,
            "no GET stream without a handler or listener"
        );
    })
    .await;
}

#[tokio::test]
async fn a_handler_that_panics_answers_an_internal_error_and_the_session_lives() {
    watchdog(Duration::from_secs(10), async {
        let server = ScriptServer::start(server(|request| {
            Script::Sse(vec![
                event(sampling_request()),
                event(crate::support::result(request, json!({ "content": [] }))),
            ])
        }))
        .await;
        let handler = ClientHandler::new().on_sampling(|_| async { panic!("handler bug") });
        let request = ConnectRequest::http(&server.url())
            .unwrap()
            .with_handler(handler);
        let session = Connector::new().connect(request).await.unwrap();
        session.call_tool("any", &json!({})).await.unwrap();
        session.call_tool("again", &json!({})).await.unwrap();
        let answered = responses(&server);
        assert_eq!(answered.len(), 2);
        assert!(answered.iter().all(|a| a["error"]["code"] == -32603));
    })
    .await;
}

#[tokio::test]
async fn a_listener_that_never_reads_never_stalls_the_session() {
    watchdog(Duration::from_secs(10), async {
        let server = ScriptServer::start(server(|request| {
            let mut events: Vec<String> = (0..50)
                .map(|i| {
                    event(json!({ "jsonrpc": "2.0", "method": "notifications/message",
                                       "params": { "level": "info", "data": i } }))
                })
                .collect();
            events.push(event(crate::support::result(
                request,
                json!({ "content": [] }),
            )));
            Script::Sse(events)
        }))
        .await;
        let (listener, notifications) = notification_channel(4);
        let request = ConnectRequest::http(&server.url())
            .unwrap()
            .with_notifications(listener);
        let session = Connector::new().connect(request).await.unwrap();
        session.call_tool("any", &json!({})).await.unwrap();
        assert_eq!(
            notifications.dropped(),
            46,
            "four kept, the rest dropped and counted"
        );
    })
    .await;
}

#[tokio::test]
async fn cancelling_a_request_tells_the_server_and_the_session_goes_on() {
    watchdog(Duration::from_secs(10), async {
        let server = ScriptServer::start(server(|request| {
            if request.body["params"]["name"] == "slow" {
                Script::Stall
            } else {
                Script::Json(
                    200,
                    crate::support::result(request, json!({ "content": [] })),
                )
            }
        }))
        .await;
        let session = Connector::new()
            .connect(ConnectRequest::http(&server.url()).unwrap())
            .await
            .unwrap();
        let token = CancellationToken::new();
        let canceller = token.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            canceller.cancel();
        });
        let options = RequestOptions::new().with_cancellation(token);
        let started = std::time::Instant::now();
        let error = session
            .send(
                Call::new(RawRequest::new(
                    "tools/call",
                    Some(json!({ "name": "slow", "arguments": {} })),
                ))
                .with_options(options.clone()),
            )
            .await
            .unwrap_err();
        assert!(matches!(error.kind(), ErrorKind::Cancelled), "{error}");
        assert!(started.elapsed() < Duration::from_millis(500));
        let call_id = server
            .recorded()
            .into_iter()
            .find(|r| r.body["params"]["name"] == "slow")
            .unwrap()
            .id();
        // The notice goes out as the request ends.
        let notice = crate::support::cancellation(&server).await;
        let notice = notice.expect("notifications/cancelled sent");
        assert_eq!(notice.body["params"]["requestId"], call_id);
        session.call_tool("fast", &json!({})).await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn dropping_the_request_future_cancels_it_too() {
    watchdog(Duration::from_secs(10), async {
        let server = ScriptServer::start(server(|_| Script::Stall)).await;
        let session = Connector::new()
            .connect(ConnectRequest::http(&server.url()).unwrap())
            .await
            .unwrap();
        let arguments = json!({});
        let call = session.call_tool("slow", &arguments);
        let _ = tokio::time::timeout(Duration::from_millis(100), call).await;
        let seen = crate::support::cancellation(&server).await;
        assert!(
            seen.is_some(),
            "the abandoned call is cancelled on the wire"
        );
    })
    .await;
}

fn paced_progress(request: &Recorded) -> Script {
    let token = request.body["params"]["_meta"]["progressToken"].clone();
    let step = Duration::from_millis(150);
    let mut events: Vec<(Duration, String)> = (1..=3)
        .map(|i| {
            (
                step,
                event(
                    json!({ "jsonrpc": "2.0", "method": "notifications/progress",
                                 "params": { "progressToken": token, "progress": i, "total": 3 } }),
                ),
            )
        })
        .collect();
    events.push((
        step,
        event(crate::support::result(request, json!({ "content": [] }))),
    ));
    Script::SsePaced(events)
}

#[tokio::test]
async fn progress_reaches_the_callback_and_resets_the_timeout() {
    watchdog(Duration::from_secs(10), async {
        let server = ScriptServer::start(server(paced_progress)).await;
        let session = Connector::new()
            .connect(ConnectRequest::http(&server.url()).unwrap())
            .await
            .unwrap();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&seen);
        let params = json!({ "name": "long", "arguments": {} });
        // 250 ms alone would expire before the reply at 600 ms; every
        // report (150 ms apart) restarts it.
        let options = RequestOptions::new()
            .with_timeout(Duration::from_millis(250))
            .with_progress(move |p| record.lock().unwrap().push((p.progress, p.total)))
            .reset_timeout_on_progress(Duration::from_secs(5));
        session
            .send(
                Call::new(RawRequest::new("tools/call", Some(params.clone())))
                    .with_options(options.clone()),
            )
            .await
            .unwrap();
        assert_eq!(
            *seen.lock().unwrap(),
            [(1.0, Some(3.0)), (2.0, Some(3.0)), (3.0, Some(3.0))]
        );
        // Without the reset the same request times out, as its own source.
        let options = RequestOptions::new()
            .with_timeout(Duration::from_millis(250))
            .with_progress(|_| {});
        let error = session
            .send(
                Call::new(RawRequest::new("tools/call", Some(params)))
                    .with_options(options.clone()),
            )
            .await
            .unwrap_err();
        assert!(
            matches!(
                error.kind(),
                ErrorKind::Timeout(CancelSource::RequestTimeout)
            ),
            "{error}"
        );
    })
    .await;
}

#[tokio::test]
async fn the_total_bounds_what_progress_can_extend() {
    watchdog(Duration::from_secs(10), async {
        let server = ScriptServer::start(server(paced_progress)).await;
        let session = Connector::new()
            .connect(ConnectRequest::http(&server.url()).unwrap())
            .await
            .unwrap();
        let options = RequestOptions::new()
            .with_timeout(Duration::from_millis(250))
            .reset_timeout_on_progress(Duration::from_millis(400));
        let started = std::time::Instant::now();
        let error = session
            .send(
                Call::new(RawRequest::new(
                    "tools/call",
                    Some(json!({ "name": "long" })),
                ))
                .with_options(options.clone()),
            )
            .await
            .unwrap_err();
        assert!(matches!(
            error.kind(),
            ErrorKind::Timeout(CancelSource::RequestTimeout)
        ));
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(390) && took < Duration::from_millis(550),
            "{took:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn handler_errors_are_sent_as_json_rpc_errors() {
    watchdog(Duration::from_secs(10), async {
        let server = ScriptServer::start(server(|request| {
            Script::Sse(vec![
                event(json!({ "jsonrpc": "2.0", "id": 9, "method": "roots/list" })),
                event(crate::support::result(request, json!({ "content": [] }))),
            ])
        }))
        .await;
        let handler = ClientHandler::new()
            .on_roots(|_| async { Err(RpcError::new(-32002, "no roots today", None)) });
        let request = ConnectRequest::http(&server.url())
            .unwrap()
            .with_handler(handler);
        let session = Connector::new().connect(request).await.unwrap();
        session.call_tool("any", &json!({})).await.unwrap();
        let answered = responses(&server);
        assert_eq!(answered[0]["error"]["code"], -32002);
        assert_eq!(answered[0]["id"], 9);
    })
    .await;
}

/// Over stdio the reader hands the request to a task of its own: the
/// handler's answer goes back on stdin while the call it belongs to waits.
#[tokio::test]
async fn a_stdio_server_request_reaches_the_handler() {
    watchdog(Duration::from_secs(10), async {
        let handler = ClientHandler::new().with_roots(vec![("file:///srv/app".into(), None)]);
        let request = ConnectRequest::stdio(crate::support::fixture(&[])).with_handler(handler);
        let session = Connector::new().connect(request).await.unwrap();
        let result = session.call_tool("ask", &json!({})).await.unwrap();
        assert_eq!(result.text(), "file:///srv/app");
        session.close().await.unwrap();
    })
    .await;
}

fn paged(request: &Recorded, pages: &[(&str, Option<&str>)]) -> Script {
    // Page i is asked for with cursor "c{i}" (none for the first).
    let cursor = request.body["params"]["cursor"].as_str().unwrap_or("");
    let (name, next) = pages
        .iter()
        .enumerate()
        .find(|(i, _)| {
            if *i == 0 {
                cursor.is_empty()
            } else {
                cursor == format!("c{i}")
            }
        })
        .map(|(_, page)| *page)
        .unwrap_or(("missing", None));
    let mut result = json!({ "tools": [{ "name": name, "inputSchema": { "type": "object",
        "properties": { "x": { "$ref": "#/$defs/x" } }, "$defs": { "x": { "type": "string" } } } }] });
    if let Some(next) = next {
        result["nextCursor"] = json!(next);
    }
    Script::Json(200, crate::support::result(request, result))
}

#[tokio::test]
async fn listings_follow_every_page_and_stop_a_cursor_loop() {
    watchdog(Duration::from_secs(10), async {
        let pages = |request: &Recorded| match request.rpc_method() {
            "tools/list" => Some(paged(
                request,
                &[("a", Some("c1")), ("b", Some("c2")), ("c", None)],
            )),
            _ => None,
        };
        let three = ScriptServer::start(move |request: &Recorded| {
            pages(request).unwrap_or_else(|| server(|_| Script::Status(500))(request))
        })
        .await;
        let session = Connector::new()
            .connect(ConnectRequest::http(&three.url()).unwrap())
            .await
            .unwrap();
        let tools = session.list_tools().await.unwrap().tools;
        let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        // The schema is kept as sent: `$ref` untouched.
        assert_eq!(
            tools[0].input_schema["properties"]["x"]["$ref"],
            "#/$defs/x"
        );
        let first = session.send(ListTools::first()).await.unwrap();
        assert_eq!(first.next_cursor.as_deref(), Some("c1"));

        let looping = ScriptServer::start(move |request: &Recorded| match request.rpc_method() {
            // c1 -> c2 -> c1 ...
            "tools/list" => paged(
                request,
                &[("a", Some("c1")), ("b", Some("c2")), ("c", Some("c1"))],
            ),
            _ => server(|_| Script::Status(500))(request),
        })
        .await;
        let session = Connector::new()
            .connect(ConnectRequest::http(&looping.url()).unwrap())
            .await
            .unwrap();
        let error = session.list_tools().await.unwrap_err();
        assert!(
            matches!(
                error.kind(),
                ErrorKind::Pagination(mcp_connect::error::PaginationError::CursorRepeated)
            ),
            "{error}"
        );
        assert_eq!(looping.count("tools/list"), 3, "stopped at the repeat");
    })
    .await;
}

/// A cancelled request leaves no task behind: over stdio (no server tasks in
/// this process) the count of live tasks is back where it was.
#[tokio::test]
async fn a_cancelled_request_leaves_no_task_behind() {
    watchdog(Duration::from_secs(10), async {
        let request = ConnectRequest::stdio(crate::support::fixture(&["--stall-on", "tools/call"]));
        let session = Connector::new().connect(request).await.unwrap();
        let metrics = tokio::runtime::Handle::current().metrics();
        let before = metrics.num_alive_tasks();
        for _ in 0..5 {
            let token = CancellationToken::new();
            let options = RequestOptions::new().with_cancellation(token.clone());
            let call = session.send(
                Call::new(RawRequest::new("tools/call", Some(json!({ "name": "x" }))))
                    .with_options(options.clone()),
            );
            let canceller = async {
                tokio::time::sleep(Duration::from_millis(20)).await;
                token.cancel();
            };
            let (outcome, ()) = tokio::join!(call, canceller);
            assert!(matches!(outcome.unwrap_err().kind(), ErrorKind::Cancelled));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(metrics.num_alive_tasks(), before, "no task left behind");
        session.close().await.unwrap();
    })
    .await;
}

/// Issue 25: one channel serves two servers; every notification says which
/// server sent it (the request's name, or by default the target as printed)
/// and reads typed when its method is a known one.
#[tokio::test]
async fn notifications_name_their_server_and_read_typed() {
    use mcp_connect::inbound::{Known, ListKind};
    watchdog(Duration::from_secs(10), async {
        let start = || {
            ScriptServer::start(server(|request| {
                Script::Sse(vec![
                    event(
                        json!({ "jsonrpc": "2.0", "method": "notifications/tools/list_changed" }),
                    ),
                    event(json!({ "jsonrpc": "2.0", "method": "notifications/message",
                                  "params": { "level": "warning", "data": "d", "extra": 1 } })),
                    event(crate::support::result(request, json!({ "content": [] }))),
                ])
            }))
        };
        let (named, unnamed) = (start().await, start().await);
        let (listener, mut notifications) = notification_channel(16);
        let first = ConnectRequest::http(&named.url())
            .unwrap()
            .with_name("files")
            .with_notifications(listener.clone());
        let second = ConnectRequest::http(&format!("{}?token=secret", unnamed.url()))
            .unwrap()
            .with_notifications(listener);
        let default_name = second.name().to_owned();
        assert!(!default_name.contains("secret"), "{default_name}");
        for request in [first, second] {
            let session = Connector::new().connect(request).await.unwrap();
            session.call_tool("any", &json!({})).await.unwrap();
            session.close().await.unwrap();
        }
        let mut seen = Vec::new();
        while let Some(notification) = notifications.try_recv() {
            seen.push((notification.server.to_string(), notification.known()));
        }
        assert_eq!(seen.len(), 4, "{seen:?}");
        for (i, server) in ["files", default_name.as_str()].iter().enumerate() {
            assert_eq!(seen[2 * i].0, *server);
            assert_eq!(seen[2 * i].1, Known::ListChanged(ListKind::Tools));
            match &seen[2 * i + 1].1 {
                Known::Log(message) => {
                    assert_eq!(message.level, "warning");
                    assert_eq!(message.extra.get("extra"), Some(&json!(1)));
                }
                other => panic!("{other:?}"),
            }
        }
    })
    .await;
}
