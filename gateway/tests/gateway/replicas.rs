//! Two replicas sharing an owner store: a 2025 session opened on one is
//! served by either, its member session opened once, its stream and its
//! end reaching the replica that holds it.

use std::sync::Arc;

use http::Method;
use mcp_connect::store::{MemoryOwnerStore, OwnerStore};
use mcp_connect::transport::HttpClient;

use super::*;

/// A replica over its own group of `member`, each session with its own
/// client of it, claiming sessions in `owners`.
async fn replica(member_url: &str, owners: &Arc<MemoryOwnerStore>) -> SocketAddr {
    let group = ServerGroup::new();
    group.add(super::member(member_url, "one")).unwrap();
    tokio::time::timeout(LIMIT, group.settled()).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let me: http::Uri = format!("http://{}/mcp", listener.local_addr().unwrap())
        .parse()
        .unwrap();
    let url = member_url.to_owned();
    let gateway = Gateway::builder(group)
        .session_clients(own_clients(&url))
        .replicas(Arc::clone(owners), &me, HttpClient::http_only())
        .build();
    serve_on(listener, gateway)
}

fn call(id: u64) -> String {
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": { "name": "add", "arguments": { "a": id, "b": 1 } } })
    .to_string()
}

#[tokio::test]
async fn a_session_opened_on_one_replica_is_served_by_either_and_ends_on_both() {
    let demo = DemoServer::start().await.unwrap();
    let owners = Arc::new(MemoryOwnerStore::new());
    let replicas = [
        replica(&demo.url(), &owners).await,
        replica(&demo.url(), &owners).await,
    ];
    let before = demo.sessions_created();
    let (status, session, _) = exchange(
        replicas[0],
        Method::POST,
        &[JSON_IN, BOTH_OUT],
        &initialize(),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let session = session.unwrap();
    let named = [
        JSON_IN,
        BOTH_OUT,
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-06-18"),
    ];
    for id in 1..=20u64 {
        let replica = replicas[usize::try_from(id % 2).unwrap()];
        let (status, _, answer) = exchange(replica, Method::POST, &named, &call(id)).await;
        assert_eq!(status, StatusCode::OK, "call {id}");
        assert_eq!(answer["result"]["content"][0]["text"], (id + 1).to_string());
    }
    assert_eq!(
        demo.sessions_created() - before,
        1,
        "one member session for the one downstream session, whichever replica served it"
    );
    // The session's own stream, opened through the other replica.
    let listening = [("accept", "text/event-stream"), named[2], named[3]];
    let (status, kind) = opened(replicas[1], &listening).await;
    assert_eq!(
        (status, kind.as_deref()),
        (StatusCode::OK, Some("text/event-stream"))
    );
    // DELETE through the other replica ends it where it is held.
    let open = demo.open_sessions();
    let (status, _, _) = exchange(replicas[1], Method::DELETE, &named[2..], "").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        demo.open_sessions(),
        open - 1,
        "the member saw its session end"
    );
    for replica in replicas {
        let (status, _, _) = exchange(replica, Method::POST, &named, &call(21)).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }
    assert_eq!(owners.owner(&session).await.unwrap(), None);
}

#[tokio::test]
async fn a_session_whose_owner_is_gone_is_not_found_and_forgotten() {
    let demo = DemoServer::start().await.unwrap();
    let owners = Arc::new(MemoryOwnerStore::new());
    let replica = replica(&demo.url(), &owners).await;
    // A replica that held it died: nothing listens there now.
    let dead = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let gone = format!("http://{}/mcp", dead.local_addr().unwrap());
    drop(dead);
    let session = "0123456789abcdef0123456789abcdef";
    owners.claim(session, &gone, LIMIT).await.unwrap();
    let named = [
        JSON_IN,
        BOTH_OUT,
        ("mcp-session-id", session),
        ("mcp-protocol-version", "2025-06-18"),
    ];
    let (status, _, answer) = exchange(replica, Method::POST, &named, &call(1)).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(answer["error"]["message"], "Session not found");
    assert_eq!(owners.owner(session).await.unwrap(), None);
}
