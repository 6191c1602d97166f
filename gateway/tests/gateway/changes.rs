//! `list_changed` reaches a 2025 session's GET stream, once per burst of
//! changes: two members added together are one notification, a member
//! removed is another, and a session that lists nothing new hears nothing.

use std::sync::{Arc, Mutex};

use http::Method;

use super::*;

/// Opens session `session`'s GET stream; what it carries, as it comes.
async fn listen(addr: SocketAddr, session: &str) -> Arc<Mutex<String>> {
    let client = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
        .build_http::<Full<Bytes>>();
    let request = Request::builder()
        .uri(format!("http://{addr}/mcp"))
        .header("accept", "text/event-stream")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-06-18")
        .body(Full::default())
        .unwrap();
    let response = client.request(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let heard = Arc::new(Mutex::new(String::new()));
    let into = Arc::clone(&heard);
    tokio::spawn(async move {
        let mut body = response.into_body();
        while let Some(Ok(frame)) = body.frame().await {
            if let Ok(data) = frame.into_data() {
                into.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&data));
            }
        }
    });
    heard
}

fn count(heard: &Mutex<String>, method: &str) -> usize {
    heard.lock().unwrap().matches(method).count()
}

#[tokio::test]
async fn members_added_together_are_one_list_changed_and_one_removed_another() {
    let demos = [
        DemoServer::start().await.unwrap(),
        DemoServer::start().await.unwrap(),
        DemoServer::start().await.unwrap(),
    ];
    let group = ServerGroup::new();
    group.add(member(&demos[0].url(), "one")).unwrap();
    tokio::time::timeout(LIMIT, group.settled()).await.unwrap();
    let addr = serve(Gateway::builder(group.clone()).build()).await;
    let (_, session, answer) =
        exchange(addr, Method::POST, &[JSON_IN, BOTH_OUT], &initialize()).await;
    assert_eq!(
        answer["result"]["capabilities"]["tools"]["listChanged"],
        true
    );
    let heard = listen(addr, &session.unwrap()).await;
    let tools = "notifications/tools/list_changed";

    group.add(member(&demos[1].url(), "two")).unwrap();
    group.add(member(&demos[2].url(), "three")).unwrap();
    tokio::time::timeout(LIMIT, group.settled()).await.unwrap();
    for _ in 0..100 {
        if count(&heard, tools) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Past the settling window: nothing more came of the same burst.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(count(&heard, tools), 1, "{}", heard.lock().unwrap());

    group.remove("three").await.unwrap();
    for _ in 0..100 {
        if count(&heard, tools) > 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(count(&heard, tools), 2, "{}", heard.lock().unwrap());
}

#[tokio::test]
async fn a_2026_client_listening_hears_list_changed_on_its_subscription() {
    let demos = [
        DemoServer::start().await.unwrap(),
        DemoServer::start().await.unwrap(),
    ];
    let group = ServerGroup::new();
    group.add(member(&demos[0].url(), "one")).unwrap();
    tokio::time::timeout(LIMIT, group.settled()).await.unwrap();
    let addr = serve(Gateway::builder(group.clone()).build()).await;
    // A client that reads notifications opens subscriptions/listen for the
    // list changes the gateway offers, acknowledged before it is ready.
    let (listener, mut heard) = mcp_connect::inbound::notification_channel(16);
    let request = ConnectRequest::http(&format!("http://{addr}/mcp"))
        .unwrap()
        .with_notifications(listener);
    let session = tokio::time::timeout(LIMIT, Connector::new().connect(request))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(session.era(), Era::Modern);

    group.add(member(&demos[1].url(), "two")).unwrap();
    let changed = tokio::time::timeout(LIMIT, async {
        loop {
            let notification = heard.recv().await.expect("the subscription is open");
            if notification.method == "notifications/tools/list_changed" {
                return notification;
            }
        }
    })
    .await
    .expect("a tools list_changed within the limit");
    assert!(changed
        .params
        .as_ref()
        .is_some_and(|p| p["_meta"]["io.modelcontextprotocol/subscriptionId"].is_number()));
}

/// A 2025 member with one resource, whose GET stream the test writes to.
fn watched_member(
    legacy: mcp_connect::testkit::LegacyServer,
    stream: Arc<Mutex<Option<tokio::sync::mpsc::UnboundedSender<String>>>>,
) -> impl Fn(&mcp_connect::testkit::Recorded) -> mcp_connect::testkit::Script + Send + Sync {
    use mcp_connect::testkit::{result, Script};
    move |request| match (request.method.clone(), request.rpc_method()) {
        (Method::GET, _) => {
            let (sender, events) = tokio::sync::mpsc::unbounded_channel();
            *stream.lock().unwrap() = Some(sender);
            Script::SseLive(events)
        }
        (_, "resources/list") => Script::Json(
            200,
            result(
                request,
                json!({ "resources": [
                    { "uri": "test://watched", "name": "watched" },
                    { "uri": "test://other", "name": "other" }] }),
            ),
        ),
        (_, "tools/list") => Script::Json(200, result(request, json!({ "tools": [] }))),
        // The legacy server's handshake, offering resources too.
        (_, "initialize") => match legacy.respond(request) {
            Script::JsonWith(status, mut body, headers) => {
                body["result"]["capabilities"]["resources"] = json!({ "subscribe": true });
                Script::JsonWith(status, body, headers)
            }
            other => other,
        },
        _ => legacy.respond(request),
    }
}

#[tokio::test]
async fn a_2026_client_subscribed_to_a_resource_hears_its_updates() {
    let stream = Arc::new(Mutex::new(None));
    let legacy = mcp_connect::testkit::LegacyServer::new();
    let server =
        mcp_connect::testkit::ScriptServer::start(watched_member(legacy, Arc::clone(&stream)))
            .await;
    let group = ServerGroup::new();
    group.add(member(&server.url(), "one")).unwrap();
    tokio::time::timeout(LIMIT, group.settled()).await.unwrap();
    let url = server.url();
    let gateway = Gateway::builder(group)
        .session_clients(own_clients(&url))
        .build();
    let addr = serve(gateway).await;
    let (listener, mut heard) = mcp_connect::inbound::notification_channel(16);
    let request = ConnectRequest::http(&format!("http://{addr}/mcp"))
        .unwrap()
        .with_notifications(listener);
    let session = tokio::time::timeout(LIMIT, Connector::new().connect(request))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(session.era(), Era::Modern);
    tokio::time::timeout(LIMIT, session.subscribe("test://watched"))
        .await
        .unwrap()
        .unwrap();
    // The member subscribed, on a session of its own with a GET stream.
    assert_eq!(server.recorded_for("resources/subscribe").len(), 1);
    let update = json!({ "jsonrpc": "2.0", "method": "notifications/resources/updated",
        "params": { "uri": "test://watched" } });
    let sender = stream
        .lock()
        .unwrap()
        .clone()
        .expect("the member's GET stream");
    sender.send(format!("data: {update}\n\n")).unwrap();
    let updated = tokio::time::timeout(LIMIT, async {
        loop {
            let notification = heard.recv().await.expect("the subscription is open");
            if notification.method == "notifications/resources/updated" {
                return notification;
            }
        }
    })
    .await
    .expect("the update within the limit");
    assert_eq!(updated.params.unwrap()["uri"], "test://watched");
}

#[tokio::test]
async fn a_listen_stream_subscribes_at_a_member_on_one_client_of_its_own() {
    let legacy = mcp_connect::testkit::LegacyServer::new();
    let server = mcp_connect::testkit::ScriptServer::start(watched_member(
        legacy.clone(),
        Arc::new(Mutex::new(None)),
    ))
    .await;
    let group = ServerGroup::new();
    group.add(member(&server.url(), "one")).unwrap();
    tokio::time::timeout(LIMIT, group.settled()).await.unwrap();
    let url = server.url();
    let gateway = Gateway::builder(group)
        .session_clients(own_clients(&url))
        .build();
    let addr = serve(gateway).await;
    let before = legacy.sessions_created();
    let listen = json!({ "jsonrpc": "2.0", "id": 9, "method": "subscriptions/listen",
        "params": { "notifications": { "resourceSubscriptions":
            ["test://watched", "test://other", "test://unknown"] },
            "_meta": { "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {} } } });
    let client = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
        .build_http::<Full<Bytes>>();
    let request = Request::post(format!("http://{addr}/mcp"))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "subscriptions/listen")
        .body(Full::new(Bytes::from(listen.to_string())))
        .unwrap();
    let response = client.request(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let mut body = response.into_body();
    let first = tokio::time::timeout(LIMIT, body.frame())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let first = String::from_utf8(first.into_data().unwrap().to_vec()).unwrap();
    let ack: Value = serde_json::from_str(first.split("data: ").nth(1).unwrap().trim()).unwrap();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        9
    );
    assert_eq!(
        ack["params"]["notifications"]["resourceSubscriptions"],
        json!(["test://watched", "test://other"]),
        "the unknown URI is not acknowledged"
    );
    assert_eq!(
        legacy.sessions_created() - before,
        1,
        "one member session for the stream"
    );
    assert_eq!(server.recorded_for("resources/subscribe").len(), 2);
}
