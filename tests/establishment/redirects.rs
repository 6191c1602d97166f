//! Issue 27, item 3: the default client's redirect policy. 307 and 308 on
//! the same origin are followed (method and body kept, at most 3 hops);
//! another origin, 301/302/303 and a fourth hop are typed failures that
//! name the status, never retried; credentials never reach another origin.

use std::time::Duration;

use mcp_connect::error::ErrorKind;
use mcp_connect::error::TransportError;
use mcp_connect::layers::FailureKind;
use mcp_connect::protocol::ProtocolVersion;
use mcp_connect::transport::{HttpClient, RedirectPolicy, RedirectReason};
use mcp_connect::{ConnectRequest, Connector};
use serde_json::json;

use crate::support::{legacy, watchdog, Recorded, Script, ScriptServer};

/// Redirects `/mcp` to `/a`, `/a` to `/b`, ... through `hops` hops (307
/// then 308 alternately), the last one serving a legacy server.
fn chain(hops: usize) -> impl Fn(&Recorded) -> Script + Send + Sync + 'static {
    move |request| {
        let path = request.route();
        let index = match path {
            "/mcp" => 0,
            other => other
                .trim_start_matches("/hop")
                .parse::<usize>()
                .unwrap_or(usize::MAX),
        };
        if index < hops {
            let status = if index % 2 == 0 { 307 } else { 308 };
            return Script::StatusWith(status, vec![("location", format!("/hop{}", index + 1))]);
        }
        legacy(request)
    }
}

type Failed = dyn std::error::Error + 'static;

/// A request for `url` that goes straight to `initialize`.
fn pinned(url: &str) -> ConnectRequest {
    ConnectRequest::http(url)
        .unwrap()
        .with_pin(ProtocolVersion::LATEST_LEGACY)
}

/// A server that answers everything with `status` to `location`.
async fn redirecting(status: u16, location: String) -> ScriptServer {
    ScriptServer::start(move |_| Script::StatusWith(status, vec![("location", location.clone())]))
        .await
}

fn transport_error(error: &Failed) -> Option<&TransportError> {
    let mut source: Option<&Failed> = Some(error);
    while let Some(e) = source {
        if let Some(mcp) = e.downcast_ref::<mcp_connect::Error>() {
            if let ErrorKind::Transport(t) = mcp.kind() {
                return Some(t);
            }
        }
        source = e.source();
    }
    None
}

fn refused(error: &Failed) -> (u16, RedirectReason) {
    match transport_error(error) {
        Some(TransportError::Redirect(refused)) => (refused.status, refused.reason),
        other => panic!("not a refused redirect: {other:?} ({error})"),
    }
}

#[tokio::test]
async fn same_origin_307_and_308_are_followed_with_method_and_body() {
    watchdog(Duration::from_secs(20), async {
        let server = ScriptServer::start(chain(2)).await;
        let session = Connector::new()
            .connect(ConnectRequest::http(&server.url()).unwrap())
            .await
            .expect("followed to /hop2");
        let result = session.call_tool("any", &json!({})).await.unwrap();
        assert!(result.text().contains("ok"));
        // Every hop kept the POST and its body.
        let initialize: Vec<_> = server
            .recorded()
            .into_iter()
            .filter(|r| r.rpc_method() == "initialize")
            .collect();
        assert_eq!(
            initialize
                .iter()
                .map(|r| r.route().to_owned())
                .collect::<Vec<_>>(),
            vec!["/mcp", "/hop1", "/hop2"]
        );
        assert!(initialize.iter().all(|r| r.method == http::Method::POST));
        session.close().await.unwrap();
    })
    .await;
}

#[tokio::test]
async fn a_fourth_hop_stops_at_three_and_is_not_retried() {
    watchdog(Duration::from_secs(20), async {
        let server = ScriptServer::start(chain(4)).await;
        let stack = crate::support::recovering(3);
        let error = stack.connect(pinned(&server.url())).await.unwrap_err();
        assert_eq!(
            refused(error.error().expect("an MCP error")),
            (308, RedirectReason::TooMany)
        );
        let failure = error.failure();
        assert_eq!(failure.kind, FailureKind::HttpStatus);
        assert_eq!(
            failure.http_status,
            Some(308),
            "the fourth redirect, /hop3's"
        );
        // The original request and three hops, once: never a fresh attempt.
        assert_eq!(server.count("initialize"), 4, "{:?}", server.methods());
        assert!(
            !error.to_string().contains("hop"),
            "the Location is never shown: {error}"
        );
    })
    .await;
}

#[tokio::test]
async fn another_origin_is_refused_and_receives_nothing() {
    watchdog(Duration::from_secs(20), async {
        let elsewhere = ScriptServer::start(legacy).await;
        let server = redirecting(307, elsewhere.url()).await;
        let error = Connector::new()
            .connect(pinned(&server.url()))
            .await
            .unwrap_err();
        assert_eq!(refused(&error), (307, RedirectReason::OtherOrigin));
        assert_eq!(elsewhere.connections(), 0, "the other origin got nothing");

        // 301, 302 and 303 would turn the POST into a GET: refused.
        for status in [301u16, 302, 303] {
            let server = redirecting(status, "/mcp2".to_owned()).await;
            let error = Connector::new()
                .connect(pinned(&server.url()))
                .await
                .unwrap_err();
            assert_eq!(refused(&error), (status, RedirectReason::ChangesMethod));
        }
    })
    .await;
}

/// An origin the application allowed gets the hop, without the
/// credentials: no `Authorization`, no header marked sensitive (every
/// header a caller sets).
#[tokio::test]
async fn an_allowed_origin_is_followed_without_credentials() {
    watchdog(Duration::from_secs(20), async {
        let elsewhere = ScriptServer::start(legacy).await;
        let server = redirecting(308, elsewhere.url()).await;
        let client = HttpClient::builder()
            .redirects(RedirectPolicy::new().allowing(&elsewhere.url().parse().unwrap()))
            .build();
        // Every header a caller gives is marked sensitive.
        let request = pinned(&server.url())
            .with_header("authorization", "Bearer tok-canary-5519")
            .unwrap()
            .with_header("x-api-key", "key-canary-7731")
            .unwrap();
        let session = Connector::with_client(client)
            .connect(request)
            .await
            .expect("followed");
        let seen = elsewhere.recorded();
        assert!(!seen.is_empty());
        for request in &seen {
            assert!(
                request.header("authorization").is_none(),
                "{:?}",
                request.route()
            );
            assert!(request.header("x-api-key").is_none());
        }
        // The first origin got them, as it was meant to.
        assert_eq!(
            server.recorded()[0].header("authorization"),
            Some("Bearer tok-canary-5519")
        );
        session.close().await.unwrap();

        // Following turned off: the redirect is the status it is.
        let client = HttpClient::builder()
            .redirects(RedirectPolicy::none())
            .build();
        let error = Connector::with_client(client)
            .connect(pinned(&server.url()))
            .await
            .unwrap_err();
        assert!(
            matches!(
                transport_error(&error),
                Some(TransportError::Status { status: 308, .. })
            ),
            "{error}"
        );
        assert_eq!(error.failure().kind, FailureKind::HttpStatus);
    })
    .await;
}
