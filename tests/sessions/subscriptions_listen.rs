//! Issue 14, item 3: `subscriptions/listen` on the 2026-07-28 era, behind
//! the same API as the legacy era (a notification listener, `subscribe`,
//! `unsubscribe`). The acknowledgement is the session's, never the
//! application's; what a server does not acknowledge is a typed error.

use std::time::Duration;

use crate::support::{watchdog, Recorded, Script, ScriptServer};
use mcp_connect::error::SubscriptionError;
use mcp_connect::inbound::notification_channel;
use mcp_connect::request::Limits;
use mcp_connect::{ConnectRequest, Connector, ErrorKind};
use serde_json::{json, Value};

fn event(message: Value) -> String {
    format!("data: {message}\n\n")
}

fn tagged(method: &str, id: &Value, mut params: Value) -> String {
    params["_meta"] = json!({ "io.modelcontextprotocol/subscriptionId": id });
    event(json!({ "jsonrpc": "2.0", "method": method, "params": params }))
}

/// A modern server offering tool list changes and resource subscriptions.
/// `listen` answers each `subscriptions/listen`.
fn server(
    listen: impl Fn(&Recorded) -> Script + Send + Sync + 'static,
) -> impl Fn(&Recorded) -> Script + Send + Sync + 'static {
    move |request: &Recorded| match request.rpc_method() {
        "server/discover" => Script::Json(
            200,
            crate::support::result(
                request,
                json!({ "supportedVersions": ["2026-07-28"], "capabilities": {
                    "tools": { "listChanged": true },
                    "resources": { "subscribe": true } } }),
            ),
        ),
        "subscriptions/listen" => listen(request),
        _ => Script::Json(200, crate::support::error(request, -32601, None)),
    }
}

/// Acknowledges everything asked, then sends a tools list change and an
/// update for every subscribed resource, and stays open.
fn acknowledging(request: &Recorded) -> Script {
    let id = request.id();
    let asked = request.body["params"]["notifications"].clone();
    let mut events = vec![tagged(
        "notifications/subscriptions/acknowledged",
        &id,
        json!({ "notifications": asked }),
    )];
    events.push(tagged("notifications/tools/list_changed", &id, json!({})));
    for uri in asked["resourceSubscriptions"]
        .as_array()
        .into_iter()
        .flatten()
    {
        events.push(tagged(
            "notifications/resources/updated",
            &id,
            json!({ "uri": uri }),
        ));
    }
    Script::SseThenStall(events)
}

fn listens(server: &ScriptServer) -> Vec<Recorded> {
    server.recorded_for("subscriptions/listen")
}

#[tokio::test]
async fn a_listening_application_subscribes_at_establishment_to_what_the_server_offers() {
    watchdog(Duration::from_secs(10), async {
        let server = ScriptServer::start(server(acknowledging)).await;
        let (listener, mut notifications) = notification_channel(16);
        let request = ConnectRequest::http(&server.url())
            .unwrap()
            .with_notifications(listener);
        let session = Connector::new().connect(request).await.unwrap();
        let listen = &listens(&server)[0];
        assert_eq!(
            listen.body["params"]["notifications"],
            json!({ "toolsListChanged": true }),
            "only what the capabilities offer"
        );
        assert!(listen.body["params"]["_meta"].is_object());
        assert_eq!(listen.header("mcp-method"), Some("subscriptions/listen"));
        let first = notifications.recv().await.unwrap();
        assert_eq!(
            first.method, "notifications/tools/list_changed",
            "the acknowledgement is not the application's"
        );

        session.subscribe("file:///a").await.unwrap();
        let second = &listens(&server)[1];
        assert_eq!(
            second.body["params"]["notifications"],
            json!({ "toolsListChanged": true, "resourceSubscriptions": ["file:///a"] })
        );
        let mut heard = Vec::new();
        while heard.len() < 2 {
            heard.push(notifications.recv().await.unwrap().method);
        }
        heard.sort();
        assert_eq!(
            heard,
            [
                "notifications/resources/updated",
                "notifications/tools/list_changed"
            ]
        );

        session.unsubscribe("file:///a").await.unwrap();
        assert_eq!(
            listens(&server)[2].body["params"]["notifications"],
            json!({ "toolsListChanged": true })
        );
        session.close().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn without_a_listener_nothing_is_subscribed_until_asked() {
    watchdog(Duration::from_secs(10), async {
        let server = ScriptServer::start(server(acknowledging)).await;
        let session = Connector::new()
            .connect(ConnectRequest::http(&server.url()).unwrap())
            .await
            .unwrap();
        assert!(listens(&server).is_empty());
        session.subscribe("file:///a").await.unwrap();
        assert_eq!(
            listens(&server)[0].body["params"]["notifications"],
            json!({ "resourceSubscriptions": ["file:///a"] }),
            "no list changes for an application that does not read them"
        );
        session.unsubscribe("file:///a").await.unwrap();
        assert_eq!(listens(&server).len(), 1, "nothing left to hear");
    })
    .await;
}

#[tokio::test]
async fn a_resource_the_server_does_not_acknowledge_is_a_typed_error() {
    watchdog(Duration::from_secs(10), async {
        let server = ScriptServer::start(server(|request| {
            Script::SseThenStall(vec![tagged(
                "notifications/subscriptions/acknowledged",
                &request.id(),
                json!({ "notifications": {} }),
            )])
        }))
        .await;
        let session = Connector::new()
            .connect(ConnectRequest::http(&server.url()).unwrap())
            .await
            .unwrap();
        let error = session.subscribe("file:///a").await.unwrap_err();
        assert!(
            matches!(
                error.kind(),
                ErrorKind::Subscription(SubscriptionError::NotAcknowledged)
            ),
            "{error}"
        );
    })
    .await;
}

#[tokio::test]
async fn a_stream_that_ends_unacknowledged_or_a_refusal_fails_the_subscribe_only() {
    watchdog(Duration::from_secs(10), async {
        let ends = ScriptServer::start(server(|_| Script::Sse(vec![]))).await;
        let (listener, _notifications) = notification_channel(4);
        let request = ConnectRequest::http(&ends.url())
            .unwrap()
            .with_notifications(listener);
        let session = Connector::new().connect(request).await.unwrap();
        let error = session.subscribe("file:///a").await.unwrap_err();
        assert!(
            matches!(
                error.kind(),
                ErrorKind::Subscription(SubscriptionError::Ended)
            ),
            "{error}"
        );

        let refuses = ScriptServer::start(server(|r| {
            Script::Json(200, crate::support::error(r, -32601, None))
        }))
        .await;
        let (listener, _notifications) = notification_channel(4);
        let request = ConnectRequest::http(&refuses.url())
            .unwrap()
            .with_notifications(listener);
        let session = Connector::new().connect(request).await.unwrap();
        let error = session.subscribe("file:///a").await.unwrap_err();
        assert!(matches!(error.kind(), ErrorKind::Rpc(rpc) if rpc.code() == -32601));
        assert!(session.call_tool("t", &json!({})).await.is_err());
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_stalled_acknowledgement_is_bounded_by_the_request_timeout() {
    watchdog(Duration::from_secs(10), async {
        let server = ScriptServer::start(server(|_| Script::SseThenStall(vec![]))).await;
        let request = ConnectRequest::http(&server.url())
            .unwrap()
            .with_limits(Limits::default().with_request_timeout(Duration::from_millis(300)));
        let session = Connector::new().connect(request).await.unwrap();
        let started = std::time::Instant::now();
        let error = session.subscribe("file:///a").await.unwrap_err();
        assert!(matches!(error.kind(), ErrorKind::Timeout(_)), "{error}");
        assert!(started.elapsed() < Duration::from_secs(2));
    })
    .await;
}

/// The long-lived client subscribes again on its next session, on the
/// modern era as on the legacy one.
#[tokio::test]
async fn the_long_lived_client_subscribes_again_on_its_next_session() {
    use std::sync::atomic::{AtomicBool, Ordering};

    use mcp_connect::{EstablishBuilder, McpClient};

    watchdog(Duration::from_secs(20), async {
        let broken = AtomicBool::new(false);
        let listen = server(acknowledging);
        let server = ScriptServer::start(move |r: &Recorded| match r.rpc_method() {
            "tools/call" if !broken.swap(true, Ordering::SeqCst) => Script::CloseBeforeHeaders,
            "tools/call" => Script::Json(200, crate::support::result(r, json!({ "content": [] }))),
            _ => listen(r),
        })
        .await;
        let client = McpClient::builder(
            EstablishBuilder::new(Connector::new()).build(),
            ConnectRequest::http(&server.url()).unwrap(),
        )
        .build();
        let mut generations = client.generations();
        client.subscribe("file:///a").await.unwrap();
        assert_eq!(listens(&server).len(), 1);

        let lost = client.call_tool("t", &json!({})).await.unwrap_err();
        assert!(lost.is_session_lost(), "{lost}");
        client.call_tool("t", &json!({})).await.unwrap();
        let report = *generations.borrow_and_update();
        assert_eq!((report.number, report.resubscribed), (2, 1));
        let renewed = &listens(&server)[1];
        assert_eq!(
            renewed.body["params"]["notifications"]["resourceSubscriptions"],
            json!(["file:///a"])
        );
    })
    .await;
}
