//! G4 Conservative: recovery only for transport closure, I/O failure,
//! handshake or probe timeout and legacy-era signals; never for 401/403,
//! 429 (keeping Retry-After), DNS or TLS failures, invalid configuration,
//! the application's own errors, caller cancellation or fatal rejections.

use std::net::SocketAddr;
use std::time::Duration;

use crate::support::sse_server::{SseBehaviour, SseServer};
use crate::support::{
    error, recovering, recovering_with, watchdog, Events, LegacyServer, Script, ScriptServer,
};
use bytes::Bytes;
use http_body_util::Full;
use mcp_connect::layers::{CancelSource, Classify, FailureKind};
use mcp_connect::protocol::ProtocolVersion;
use mcp_connect::request::Limits;
use mcp_connect::transport::HttpClient;
use mcp_connect::{ConnectRequest, Connector};
use tokio_util::sync::CancellationToken;

const LIMIT: Duration = Duration::from_secs(20);

async fn initialize_answered(status: u16) -> ScriptServer {
    let legacy = LegacyServer::new();
    ScriptServer::start(move |r| match r.rpc_method() {
        "initialize" => Script::StatusWith(status, vec![("retry-after", "9".into())]),
        _ => legacy.respond(r),
    })
    .await
}

/// G4: 401, 403 and 429 stop after one attempt; 429 keeps its Retry-After.
#[tokio::test]
async fn auth_and_throttling_stop_after_one_attempt() {
    for (status, kind) in [
        (401, FailureKind::Auth),
        (403, FailureKind::Auth),
        (429, FailureKind::Throttled),
    ] {
        let server = initialize_answered(status).await;
        let error = watchdog(
            LIMIT,
            recovering(3).connect(ConnectRequest::http(&server.url()).unwrap()),
        )
        .await
        .unwrap_err();
        assert_eq!(error.attempts(), 1, "status {status}");
        let failure = error.failure();
        assert_eq!((failure.kind, failure.http_status), (kind, Some(status)));
        if status == 429 {
            assert_eq!(failure.retry_after, Some(Duration::from_secs(9)));
        }
        assert_eq!(server.count("initialize"), 1);
    }
}

/// G4: the same when the auth failure is the second child of an aggregate
/// whose first child (the Streamable HTTP 404) is eligible.
#[tokio::test]
async fn auth_failure_as_the_second_child_of_an_aggregate_still_stops() {
    for status in [401, 403, 429] {
        let behaviour = SseBehaviour {
            post_to_sse_url: 404,
            get_status: status,
            ..SseBehaviour::default()
        };
        let server = SseServer::start(behaviour).await;
        let error = watchdog(
            LIMIT,
            recovering(3).connect(ConnectRequest::http(&server.url()).unwrap()),
        )
        .await
        .unwrap_err();
        assert_eq!(error.attempts(), 1, "status {status}");
        let children = error.children();
        assert_eq!(children.len(), 2);
        assert_eq!(
            children[0].failure.http_status,
            Some(404),
            "the eligible child comes first"
        );
        assert_eq!(
            error.failure().http_status,
            Some(status),
            "the vetoing child is what is reported"
        );
        assert_eq!(
            server.log().iter().filter(|l| l.starts_with("GET")).count(),
            1
        );
    }
}

/// G4: a DNS failure, tagged by the resolver, never earns a fresh attempt.
#[tokio::test]
async fn dns_failure_stops_after_one_attempt() {
    let resolver = tower::service_fn(|_name| async {
        Err::<std::vec::IntoIter<SocketAddr>, _>(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "no such host",
        ))
    });
    let connector = Connector::with_client(HttpClient::with_resolver(resolver));
    let events = Events::new();
    let request = ConnectRequest::http("http://mcp.example.test/mcp")
        .unwrap()
        .with_observer(events.clone());
    let error = watchdog(LIMIT, recovering_with(connector, 3).connect(request))
        .await
        .unwrap_err();
    assert_eq!(error.failure().kind, FailureKind::Dns);
    assert_eq!((error.attempts(), events.attempts()), (1, 1));
}

/// G4: a TLS failure (an https:// URL on a plain-HTTP server) never earns a
/// fresh attempt.
#[tokio::test]
async fn tls_failure_stops_after_one_attempt() {
    let server = ScriptServer::start(LegacyServer::new().responder()).await;
    let url = server.url().replace("http://", "https://");
    let error = watchdog(
        LIMIT,
        recovering(3).connect(ConnectRequest::http(&url).unwrap()),
    )
    .await
    .unwrap_err();
    assert_eq!(error.failure().kind, FailureKind::Tls);
    assert_eq!(error.attempts(), 1);
}

#[derive(Debug, thiserror::Error)]
#[error("the application's policy refused this host")]
struct HostRefused;

/// G4: an error the application's own HTTP stack raised never earns a
/// fresh attempt by default.
#[tokio::test]
async fn application_error_from_its_http_stack_stops_after_one_attempt() {
    let client = HttpClient::new(tower::service_fn(
        |_request: http::Request<Full<Bytes>>| async {
            Err::<http::Response<Full<Bytes>>, _>(HostRefused)
        },
    ));
    let request = ConnectRequest::http("http://127.0.0.1:9/mcp").unwrap();
    let error = watchdog(
        LIMIT,
        recovering_with(Connector::with_client(client), 3).connect(request),
    )
    .await
    .unwrap_err();
    assert_eq!(error.attempts(), 1);
    assert_eq!(error.failure().kind, FailureKind::Other);
    assert!(
        error.children()[0].find::<HostRefused>().is_some(),
        "the application's type is kept"
    );
}

/// G4: the caller's cancellation never earns a fresh attempt and is never
/// reported as a timeout.
#[tokio::test]
async fn caller_cancellation_stops_after_one_attempt() {
    let legacy = LegacyServer::new();
    let server = ScriptServer::start(move |r| match r.rpc_method() {
        "initialize" => Script::Stall,
        _ => legacy.respond(r),
    })
    .await;
    let token = CancellationToken::new();
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_cancellation(token.clone());
    let cancel = async {
        while server.count("initialize") == 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        token.cancel();
    };
    let stack = recovering(3);
    let (outcome, ()) = watchdog(LIMIT, async {
        tokio::join!(stack.connect(request), cancel)
    })
    .await;
    let error = outcome.unwrap_err();
    assert_eq!(error.attempts(), 1);
    let failure = error.failure();
    assert_eq!(
        (failure.kind, failure.cancel_source),
        (FailureKind::Cancelled, Some(CancelSource::Caller))
    );
}

/// G4: fatal rejections and invalid configuration stop at once.
#[tokio::test]
async fn rejections_and_bad_configuration_stop_after_one_attempt() {
    let server = ScriptServer::start(|r| match r.rpc_method() {
        "server/discover" => Script::Json(400, error(r, -32021, None)),
        _ => Script::Status(500),
    })
    .await;
    let error = watchdog(
        LIMIT,
        recovering(3).connect(ConnectRequest::http(&server.url()).unwrap()),
    )
    .await
    .unwrap_err();
    assert_eq!(
        (error.attempts(), error.failure().kind),
        (1, FailureKind::Rejected)
    );

    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_pin(ProtocolVersion::new("1999-01-01"));
    let error = watchdog(LIMIT, recovering(3).connect(request))
        .await
        .unwrap_err();
    assert_eq!(
        (error.attempts(), error.failure().kind),
        (1, FailureKind::Configuration)
    );
}

/// G4: what is eligible does earn fresh attempts (the rules are not "never").
#[tokio::test]
async fn probe_timeout_and_resets_are_eligible() {
    let legacy = LegacyServer::new();
    let server = ScriptServer::start(move |r| match r.rpc_method() {
        "server/discover" => Script::Stall,
        _ => legacy.respond(r),
    })
    .await;
    let limits = Limits::default().with_probe_timeout(Duration::from_millis(200));
    let request = ConnectRequest::http(&server.url())
        .unwrap()
        .with_limits(limits);
    let session = watchdog(LIMIT, recovering(3).connect(request))
        .await
        .unwrap();
    assert_eq!(
        session.protocol_version(),
        &ProtocolVersion::V2025_11_25,
        "attempt 2 went initialize-first"
    );
}
