//! G6 Veto: the application can narrow eligibility or veto recovery,
//! including for its own error types raised inside its HTTP client stack.

use std::time::Duration;

use crate::support::{watchdog, LegacyServer, Script, ScriptServer};
use bytes::Bytes;
use http_body_util::Full;
use mcp_connect::layers::classify::Decision;
use mcp_connect::layers::recovery::{Backoff, RecoveryPolicy};
use mcp_connect::layers::{Child, Closure, FailureKind};
use mcp_connect::transport::HttpClient;
use mcp_connect::{ConnectRequest, Connector, EstablishBuilder};

const LIMIT: Duration = Duration::from_secs(20);

/// The application's own error, raised by a layer of its HTTP client, with
/// an I/O reset as its cause (which alone would be eligible).
#[derive(Debug, thiserror::Error)]
#[error("egress policy closed the connection")]
struct EgressPolicy(#[source] std::io::Error);

fn stack_with_veto(
    client: HttpClient,
    veto: impl Fn(&Child<'_>) -> bool + Send + Sync + 'static,
) -> mcp_connect::Establish {
    EstablishBuilder::new(Connector::with_client(client))
        .with_recovery(RecoveryPolicy::new().with_backoff(Backoff::NONE))
        .with_veto(veto)
        .build()
}

/// G6: a veto that finds the application's own type in the chain stops
/// recovery for a failure the default rules would have retried.
#[tokio::test]
async fn veto_on_the_applications_own_error_type_stops_recovery() {
    let client = HttpClient::new(tower::service_fn(
        |_request: http::Request<Full<Bytes>>| async {
            Err::<http::Response<Full<Bytes>>, _>(EgressPolicy(std::io::Error::from(
                std::io::ErrorKind::ConnectionReset,
            )))
        },
    ));
    // Without the veto the reset is eligible: three attempts.
    let plain = stack_with_veto(client.clone(), |_| false);
    let error = watchdog(
        LIMIT,
        plain.connect(ConnectRequest::http("http://127.0.0.1:9/mcp").unwrap()),
    )
    .await
    .unwrap_err();
    assert_eq!(error.attempts(), 3);
    assert_eq!(error.failure().closure, Some(Closure::Reset));

    let vetoing = stack_with_veto(client, |child| child.find::<EgressPolicy>().is_some());
    let error = watchdog(
        LIMIT,
        vetoing.connect(ConnectRequest::http("http://127.0.0.1:9/mcp").unwrap()),
    )
    .await
    .unwrap_err();
    assert_eq!(error.attempts(), 1);
    assert!(matches!(
        error.primary().unwrap().decision(),
        Decision::Vetoed(_)
    ));
}

/// G6: a veto on plain failure data narrows eligibility.
#[tokio::test]
async fn veto_on_failure_data_narrows_eligibility() {
    let legacy = LegacyServer::new();
    let server = ScriptServer::start(move |r| match r.rpc_method() {
        "initialize" => Script::ResetBeforeHeaders,
        _ => legacy.respond(r),
    })
    .await;
    let stack = stack_with_veto(HttpClient::default_client(), |child| {
        child.failure.kind == FailureKind::Closed
    });
    let error = watchdog(
        LIMIT,
        stack.connect(ConnectRequest::http(&server.url()).unwrap()),
    )
    .await
    .unwrap_err();
    assert_eq!(error.attempts(), 1);
    assert_eq!(server.count("initialize"), 1);
}
