//! The connector seam (issue 47): the default client's pool over a
//! connector the application supplies (a simulated network, a prepared
//! socket). Every connection goes through it, and its failures are typed
//! as failures to connect, so recovery and the classifier treat them as
//! they treat TCP's.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::support::watchdog;
use mcp_connect::demo::DemoServer;
use mcp_connect::layers::FailureKind;
use mcp_connect::transport::{HttpClient, TcpConnectError};
use mcp_connect::{ConnectRequest, Connector};
use serde_json::json;

const LIMIT: Duration = Duration::from_secs(10);

type Stream = hyper_util::rt::TokioIo<tokio::net::TcpStream>;
type Connecting =
    std::pin::Pin<Box<dyn std::future::Future<Output = std::io::Result<Stream>> + Send>>;

/// Connects every request to `target`, whatever the URL says, counting
/// the connections it opens.
fn connector(
    target: std::net::SocketAddr,
    opened: Arc<AtomicUsize>,
) -> impl tower::Service<http::Uri, Response = Stream, Error = std::io::Error, Future = Connecting> + Clone
{
    tower::service_fn(move |_uri: http::Uri| {
        let opened = Arc::clone(&opened);
        Box::pin(async move {
            opened.fetch_add(1, Ordering::Relaxed);
            let stream = tokio::net::TcpStream::connect(target).await?;
            Ok(hyper_util::rt::TokioIo::new(stream))
        }) as Connecting
    })
}

#[tokio::test]
async fn every_connection_goes_through_the_applications_connector() {
    let server = DemoServer::start().await.unwrap();
    let opened = Arc::new(AtomicUsize::new(0));
    let http = HttpClient::builder().build_with_connector(connector(server.addr(), opened.clone()));
    // The URL names a host that resolves nowhere: only the connector
    // decides where the connection goes.
    let request = ConnectRequest::http("http://simulated.invalid/mcp").unwrap();
    let session = watchdog(LIMIT, Connector::with_client(http).connect(request))
        .await
        .unwrap();
    let sum = session
        .call_tool("add", &json!({ "a": 2, "b": 3 }))
        .await
        .unwrap();
    assert!(!sum.is_error);
    session.close().await.unwrap();
    assert!(
        opened.load(Ordering::Relaxed) >= 1,
        "pooled, through the connector"
    );
}

/// The application's connector fails with an error type of its own.
#[derive(Debug)]
struct NoRoute;

impl std::fmt::Display for NoRoute {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("no route in the simulated network")
    }
}

impl std::error::Error for NoRoute {}

#[tokio::test]
async fn a_connector_that_cannot_connect_fails_as_a_connect_failure() {
    let refusing = tower::service_fn(|_uri: http::Uri| {
        std::future::ready(Err::<hyper_util::rt::TokioIo<tokio::net::TcpStream>, _>(
            NoRoute,
        ))
    });
    let http = HttpClient::builder().build_with_connector(refusing);
    let request = ConnectRequest::http("http://simulated.invalid/mcp").unwrap();
    let error = watchdog(LIMIT, Connector::with_client(http).connect(request))
        .await
        .unwrap_err();
    assert_eq!(error.failure().kind, FailureKind::Connect, "{error}");
    // Typed where it happened, the application's own error kept below.
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(&error);
    let mut tagged = false;
    while let Some(cause) = source {
        tagged |= cause.downcast_ref::<TcpConnectError>().is_some();
        source = cause.source();
    }
    assert!(tagged, "{error:?}");
}
