//! Issue 15: a reply stream (or the standalone GET stream) that a server or
//! proxy cuts is continued with `GET` and `Last-Event-ID` after the server's
//! `retry:`, never by sending the request again; what cannot be resumed is
//! a typed error within a bounded time.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::watchdog;
use mcp_connect::error::{ResumeError, TransportError};
use mcp_connect::inbound::notification_channel;
use mcp_connect::protocol::RawRequest;
use mcp_connect::session::Call;
use mcp_connect::session::RequestOptions;
use mcp_connect::testkit::{Resumable, ResumableServer};
use mcp_connect::{ConnectRequest, Connector, ErrorKind, EstablishBuilder, McpClient, Session};
use serde_json::{json, Value};

const LIMIT: Duration = Duration::from_secs(15);

async fn connect(server: &ResumableServer) -> Session {
    Connector::new()
        .connect(ConnectRequest::http(&server.url()).unwrap())
        .await
        .unwrap()
}

/// Calls `slow` with a progress callback; the reply text and the progress
/// values seen, in order.
async fn call(session: &Session) -> (Result<String, mcp_connect::Error>, Vec<f64>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    let options =
        RequestOptions::new().with_progress(move |p| sink.lock().unwrap().push(p.progress));
    let reply = session
        .send(
            Call::new(RawRequest::new(
                "tools/call",
                Some(json!({ "name": "slow", "arguments": {} })),
            ))
            .with_options(options.clone()),
        )
        .await
        .map(|raw| {
            let value: Value = serde_json::from_str(raw.get()).unwrap();
            value["content"][0]["text"].as_str().unwrap().to_owned()
        });
    let progress = seen.lock().unwrap().clone();
    (reply, progress)
}

async fn resumed_once_per_cut(behaviour: Resumable, cuts: usize) {
    let server = ResumableServer::start(behaviour).await;
    let session = connect(&server).await;
    let (reply, progress) = watchdog(LIMIT, call(&session)).await;
    assert_eq!(reply.unwrap(), "done");
    assert_eq!(
        progress,
        [1.0, 2.0, 3.0, 4.0],
        "every report once, in order"
    );
    assert_eq!(
        server.count("tools/call"),
        1,
        "the request was never sent again"
    );
    let resumptions = server.resumptions();
    assert_eq!(resumptions.len(), cuts, "{resumptions:?}");
    assert!(resumptions.iter().all(Option::is_some));
}

#[tokio::test]
async fn a_stream_cut_after_its_priming_event_is_resumed() {
    resumed_once_per_cut(Resumable::new().notifications(4).cut_after([1]), 1).await;
}

#[tokio::test]
async fn a_stream_cut_halfway_is_resumed_after_the_last_event_seen() {
    let behaviour = Resumable::new().notifications(4).cut_after([3]);
    let server = ResumableServer::start(behaviour).await;
    let session = connect(&server).await;
    let (reply, progress) = watchdog(LIMIT, call(&session)).await;
    assert_eq!(reply.unwrap(), "done");
    assert_eq!(progress, [1.0, 2.0, 3.0, 4.0]);
    // Events 0..=2 were delivered: the resumption starts after event 2.
    assert_eq!(server.resumptions(), [Some("s0-e2".to_owned())]);
}

#[tokio::test(start_paused = true)]
async fn a_stream_cut_twice_in_a_row_is_resumed_twice() {
    resumed_once_per_cut(Resumable::new().notifications(4).cut_after([2, 2]), 2).await;
}

#[tokio::test(start_paused = true)]
async fn a_broken_connection_is_resumed_like_an_ended_stream() {
    resumed_once_per_cut(
        Resumable::new()
            .notifications(4)
            .cut_after([2, 2])
            .breaking(),
        2,
    )
    .await;
}

#[tokio::test(start_paused = true)]
async fn the_server_retry_is_respected() {
    let behaviour = Resumable::new()
        .notifications(4)
        .cut_after([2])
        .retry_ms([Some(400)]);
    let server = ResumableServer::start(behaviour).await;
    let session = connect(&server).await;
    watchdog(LIMIT, call(&session)).await.0.unwrap();
    let wait = server.waits()[0];
    assert!(
        wait >= Duration::from_millis(400) && wait <= Duration::from_millis(480),
        "waited {wait:?} for a retry of 400 ms"
    );
}

fn not_resumed(error: &mcp_connect::Error) -> &ResumeError {
    match error.kind() {
        ErrorKind::Transport(TransportError::NotResumed { reason, .. }) => reason,
        other => panic!("not a resumption failure: {other:?}"),
    }
}

#[tokio::test]
async fn a_refused_resumption_is_a_typed_error_in_bounded_time() {
    let server = ResumableServer::start(Resumable::new().cut_after([1]).refuse(405)).await;
    let session = connect(&server).await;
    let started = Instant::now();
    let error = watchdog(LIMIT, call(&session)).await.0.unwrap_err();
    assert!(matches!(
        not_resumed(&error),
        ResumeError::Refused { status: 405 }
    ));
    assert_eq!(error.failure().http_status, Some(405));
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(server.count("tools/call"), 1);
    assert_eq!(server.resumptions().len(), 1, "one refusal is final");
}

#[tokio::test]
async fn a_stream_without_event_ids_cannot_be_resumed() {
    let server = ResumableServer::start(Resumable::new().cut_after([2]).without_ids()).await;
    let session = connect(&server).await;
    let error = watchdog(LIMIT, call(&session)).await.0.unwrap_err();
    assert!(matches!(not_resumed(&error), ResumeError::NoEventId(_)));
    assert!(server.resumptions().is_empty(), "no GET without an id");
}

#[tokio::test(start_paused = true)]
async fn a_stream_cut_again_and_again_without_progress_is_given_up() {
    let behaviour = Resumable::new()
        .cut_after([1, 0, 0, 0, 0, 0])
        .retry_ms([Some(50)]);
    let server = ResumableServer::start(behaviour).await;
    let session = connect(&server).await;
    let error = watchdog(LIMIT, call(&session)).await.0.unwrap_err();
    assert!(
        matches!(
            not_resumed(&error),
            ResumeError::Exhausted { attempts: 3, .. }
        ),
        "{error}"
    );
    assert_eq!(server.resumptions().len(), 3);
    assert_eq!(server.count("tools/call"), 1);
}

#[tokio::test(start_paused = true)]
async fn a_cut_standalone_stream_is_resumed_with_its_notifications_intact() {
    let behaviour = Resumable::new().standalone(5).cut_after([2, 2]);
    let server = ResumableServer::start(behaviour).await;
    let (listener, mut notifications) = notification_channel(16);
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_notifications(listener);
    let _session = Connector::new().connect(request).await.unwrap();
    let mut data = Vec::new();
    while data.len() < 5 {
        let notification = watchdog(LIMIT, notifications.recv()).await.unwrap();
        assert_eq!(notification.method, "notifications/message");
        data.push(notification.params.unwrap()["data"].as_u64().unwrap());
    }
    assert_eq!(data, [1, 2, 3, 4, 5], "each once, in order");
    assert_eq!(
        server.resumptions(),
        [None, Some("s0-e1".to_owned()), Some("s0-e3".to_owned())]
    );
}

#[tokio::test(start_paused = true)]
async fn the_long_lived_client_rides_a_cut_stream_without_losing_its_session() {
    let server = ResumableServer::start(Resumable::new().cut_after([1])).await;
    let client = McpClient::builder(
        EstablishBuilder::new(Connector::new()).build(),
        ConnectRequest::http(&server.url()).unwrap(),
    )
    .build();
    let generations = client.generations();
    for _ in 0..3 {
        let result = watchdog(LIMIT, client.call_tool("slow", &json!({})))
            .await
            .unwrap();
        assert_eq!(result.text(), "done");
    }
    assert_eq!(generations.borrow().number, 1, "no session was lost");
    assert_eq!(server.count("initialize"), 1);
    assert_eq!(server.count("tools/call"), 3);
}
