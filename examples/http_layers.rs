//! The four establishment layers over a plain `hyper_util` HTTP client, with
//! no MCP and no adapter: `http::Request` and `http::Response` already speak
//! the layers' traits (feature `http` of `mcp-connect-layers`, on in
//! `mcp-connect`).
//!
//! Run: `cargo run --example http_layers`. It starts a loopback server whose
//! paths show each behaviour: `/flaky` answers 503, 503, then 200; `/auth`
//! 401; `/throttle` 429 with `Retry-After`; `/stall` never answers; `/busy`
//! always 503, asked with a POST. Set `RUST_LOG=mcp_connect_layers=debug` to
//! see the payload-free spans and events.

use std::convert::Infallible;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Request, Response};
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use mcp_connect::layers::classify::FailureClassifierLayer;
use mcp_connect::layers::deadline::DeadlineLayer;
use mcp_connect::layers::diagnostics::{AttemptDiagnosticsLayer, LifecycleDiagnosticsLayer};
use mcp_connect::layers::recovery::{FreshSessionRecoveryLayer, RecoveryPolicy};
use mcp_connect::layers::Classify;
use tower::{ServiceBuilder, ServiceExt};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .init();
    let base = serve().await;

    // The whole integration: a client, the four layers (diagnostics in
    // two parts: the establishment outside recovery, each attempt inside).
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let svc = ServiceBuilder::new()
        .layer(DeadlineLayer::new(Duration::from_secs(2)))
        .layer(LifecycleDiagnosticsLayer::new())
        .layer(FreshSessionRecoveryLayer::new(RecoveryPolicy::new()))
        .layer(AttemptDiagnosticsLayer::new())
        .layer(FailureClassifierLayer::new())
        .service(client);

    for (method, path) in [
        ("GET", "/flaky"),
        ("GET", "/auth"),
        ("GET", "/throttle"),
        ("POST", "/busy"),
        ("GET", "/stall"),
    ] {
        let request = Request::builder()
            .method(method)
            .uri(format!("{base}{path}"))
            .body(Full::default())?;
        let started = Instant::now();
        let outcome = svc.clone().oneshot(request).await;
        let took = started.elapsed().as_millis();
        match outcome {
            Ok(response) => println!("{method} {path:<9} -> {} in {took} ms", response.status()),
            Err(error) => println!(
                "{method} {path:<9} -> {} in {took} ms ({error})",
                error.failure(),
            ),
        }
    }
    Ok(())
}

/// The loopback server; returns its base URL.
async fn serve() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    let flaky = Arc::new(AtomicU32::new(0));
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let flaky = Arc::clone(&flaky);
            let service = hyper::service::service_fn(move |request: Request<_>| {
                let flaky = Arc::clone(&flaky);
                async move { Ok::<_, Infallible>(answer(request.uri().path(), &flaky).await) }
            });
            tokio::spawn(
                hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service),
            );
        }
    });
    base
}

async fn answer(path: &str, flaky: &AtomicU32) -> Response<Full<Bytes>> {
    let code = match path {
        "/flaky" if flaky.fetch_add(1, Ordering::SeqCst) % 3 < 2 => 503,
        "/auth" => 401,
        "/throttle" => 429,
        "/busy" => 503,
        "/stall" => return std::future::pending().await,
        _ => 200,
    };
    let mut response = Response::builder().status(code);
    if code == 429 {
        response = response.header("retry-after", "1");
    }
    response.body(Full::default()).expect("response")
}
