//! The connector as a tower service, composed with `ServiceBuilder` over the
//! caller's own hyper client.
//!
//! Run: `cargo run --example service_builder [URL]` (with no URL it starts
//! the built-in demo server).

use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use mcp_connect::demo::DemoServer;
use mcp_connect::transport::HttpClient;
use mcp_connect::{ConnectRequest, Connector};
use tower::{ServiceBuilder, ServiceExt};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let demo;
    let url = match std::env::args().nth(1) {
        Some(url) => url,
        None => {
            demo = DemoServer::start().await?;
            demo.url()
        }
    };

    // The application's own HTTP client: pooled hyper-util over plain TCP,
    // with a tower layer of its own. The connector only ever clones it.
    let hyper_client =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build_http::<Full<Bytes>>();
    let http = HttpClient::new(
        ServiceBuilder::new()
            .map_request(|mut request: http::Request<Full<Bytes>>| {
                request.headers_mut().insert(
                    "user-agent",
                    http::HeaderValue::from_static("my-service/1.0"),
                );
                request
            })
            .service(hyper_client),
    );

    // At most 8 establishments at once, whatever the callers do.
    let connect = ServiceBuilder::new()
        .concurrency_limit(8)
        .service(Connector::with_client(http));

    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let request = ConnectRequest::http(&url)?.with_deadline(deadline);
    let session = connect.oneshot(request).await?;
    println!(
        "established {} {} with {}",
        session.era(),
        session.protocol_version(),
        session.server_info().name
    );
    let tools = session.list_tools().await?;
    println!(
        "tools: {:?}",
        tools.tools.iter().map(|t| &t.name).collect::<Vec<_>>()
    );
    session.close().await?;
    Ok(())
}
