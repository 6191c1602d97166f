//! The establishment layers over a plain hyper-util HTTP client, with no MCP
//! involved: `DeadlineLayer`, `LifecycleDiagnosticsLayer` and
//! `FailureClassifierLayer` are ordinary tower middleware for any request
//! type that carries a deadline and any error that can be classified.
//!
//! Run: `cargo run --example http_layers` (it starts its own loopback
//! server: `/ok` answers 200, `/slow` never answers, `/busy` answers 503).

use std::convert::Infallible;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_util::future::BoxFuture;
use http_body_util::{BodyExt, Empty, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use mcp_connect::layers::classify::FailureClassifierLayer;
use mcp_connect::layers::deadline::{Budgeted, DeadlineLayer};
use mcp_connect::layers::diagnostics::{LifecycleDiagnosticsLayer, Observable};
use mcp_connect::layers::recovery::Outcome;
use mcp_connect::layers::{
    CancelSource, Classify, Failure, FailureKind, Stage, StageEvent, StageObserver, StageOutcome,
};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tower::{Service, ServiceBuilder, ServiceExt};

/// A GET that carries what the layers need.
struct Call {
    uri: http::Uri,
    deadline: Option<Instant>,
    started: Option<Instant>,
    observers: Vec<Arc<dyn StageObserver>>,
}

impl Budgeted for Call {
    fn deadline(&self) -> Option<Instant> {
        self.deadline
    }
    fn set_deadline(&mut self, deadline: Instant) {
        self.deadline = Some(deadline);
    }
    fn set_start(&mut self, started: Instant) {
        self.started = Some(started);
    }
    fn cancellation(&self) -> Option<&CancellationToken> {
        None
    }
}

impl Observable for Call {
    fn add_observer(&mut self, observer: Arc<dyn StageObserver>) {
        self.observers.push(observer);
    }
    fn transport_mode(&self) -> &'static str {
        "http"
    }
}

/// What a plain HTTP call fails with, classified from types and statuses.
#[derive(Debug, thiserror::Error)]
enum HttpFailure {
    #[error("HTTP client failed")]
    Client(#[source] hyper_util::client::legacy::Error),
    #[error("HTTP status {0}")]
    Status(u16),
    #[error("deadline reached")]
    Deadline,
}

impl Classify for HttpFailure {
    fn failure(&self) -> Failure {
        match self {
            HttpFailure::Client(e) if e.is_connect() => {
                Failure::new(Stage::Connect, FailureKind::Connect)
            }
            HttpFailure::Client(_) => Failure::new(Stage::Request, FailureKind::Io),
            HttpFailure::Status(status) => {
                let kind = if *status == 429 {
                    FailureKind::Throttled
                } else {
                    FailureKind::HttpStatus
                };
                Failure::new(Stage::Request, kind).with_http_status(*status)
            }
            HttpFailure::Deadline => Failure::new(Stage::Request, FailureKind::Timeout)
                .with_cancel_source(CancelSource::Deadline),
        }
    }
}

impl Outcome for HttpFailure {}

/// The existing client, adapted: it honours the deadline it is handed and
/// reports its one stage.
#[derive(Clone)]
struct Adapter(Client<hyper_util::client::legacy::connect::HttpConnector, Empty<Bytes>>);

impl Service<Call> for Adapter {
    type Response = http::StatusCode;
    type Error = HttpFailure;
    type Future = BoxFuture<'static, Result<http::StatusCode, HttpFailure>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), HttpFailure>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, call: Call) -> Self::Future {
        let client = self.0.clone();
        Box::pin(async move {
            let started = call.started.unwrap_or_else(Instant::now);
            let emit = |outcome| {
                let event = StageEvent::new(1, Stage::Request, started.elapsed(), outcome);
                call.observers.iter().for_each(|o| o.on_event(&event));
            };
            emit(StageOutcome::Started);
            let deadline = call
                .deadline
                .unwrap_or_else(|| Instant::now() + Duration::from_secs(30));
            let outcome =
                match tokio::time::timeout_at(deadline, client.get(call.uri.clone())).await {
                    Err(_) => Err(HttpFailure::Deadline),
                    Ok(Err(e)) => Err(HttpFailure::Client(e)),
                    Ok(Ok(response)) if response.status().is_success() => Ok(response.status()),
                    Ok(Ok(response)) => Err(HttpFailure::Status(response.status().as_u16())),
                };
            match &outcome {
                Ok(_) => emit(StageOutcome::Succeeded),
                Err(e) => emit(StageOutcome::Failed(e.failure())),
            }
            outcome
        })
    }
}

async fn serve(listener: tokio::net::TcpListener) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        tokio::spawn(async move {
            let service = hyper::service::service_fn(
                |request: http::Request<hyper::body::Incoming>| async move {
                    let status = match request.uri().path() {
                        "/ok" => 200,
                        "/busy" => 503,
                        _ => std::future::pending().await,
                    };
                    let mut response = http::Response::new(Full::new(Bytes::new()).boxed());
                    *response.status_mut() = http::StatusCode::from_u16(status).expect("valid");
                    Ok::<_, Infallible>(response)
                },
            );
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_max_level(tracing::Level::DEBUG)
        .init();
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
    let addr = listener.local_addr()?;
    tokio::spawn(serve(listener));

    let client = Client::builder(TokioExecutor::new()).build_http::<Empty<Bytes>>();
    let stack = ServiceBuilder::new()
        .layer(
            DeadlineLayer::new(Duration::from_millis(300))
                .with_cleanup_bound(Duration::from_millis(100)),
        )
        .layer(LifecycleDiagnosticsLayer::new())
        .layer(FailureClassifierLayer::new())
        .service(Adapter(client));

    let mut failures = 0;
    for path in ["/ok", "/busy", "/slow"] {
        let call = Call {
            uri: format!("http://{addr}{path}").parse()?,
            deadline: None,
            started: None,
            observers: Vec::new(),
        };
        match stack.clone().oneshot(call).await {
            Ok(status) => println!("{path}: {status}"),
            Err(error) => {
                failures += 1;
                let failure = error.failure();
                println!(
                    "{path}: {} (kind {}, status {:?}, limit {:?}, retry allowed: {})",
                    error,
                    failure.kind,
                    failure.http_status,
                    failure.cancel_source.map(|s| s.as_str()),
                    error.inner().is_some_and(|e| e.is_eligible()),
                );
            }
        }
    }
    assert_eq!(failures, 2, "/busy and /slow fail, each classified");
    Ok(())
}
