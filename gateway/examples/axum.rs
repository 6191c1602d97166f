//! The gateway mounted in an axum application beside its own routes:
//! two demo servers behind one MCP endpoint at `http://127.0.0.1:PORT/mcp`.
//! Prints the URL, lists the tools through the gateway with this project's
//! own client, and exits (`--serve` keeps it running).

use std::time::Duration;

use axum::routing::get;
use axum::Router;
use mcp_connect::demo::DemoServer;
use mcp_connect::group::{Server, ServerGroup};
use mcp_connect::{ConnectRequest, Connector, EstablishBuilder};
use mcp_connect_gateway::Gateway;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (one, two) = (DemoServer::start().await?, DemoServer::start().await?);
    let stack = EstablishBuilder::new(Connector::new())
        .with_deadline(Duration::from_secs(10))
        .build();
    let group = ServerGroup::new();
    group.add(Server::new(
        stack.clone(),
        ConnectRequest::http(&one.url())?.with_name("one"),
    ))?;
    group.add(Server::new(
        stack,
        ConnectRequest::http(&two.url())?.with_name("two"),
    ))?;
    group.settled().await;

    let gateway = Gateway::builder(group.clone()).build();
    let app = Router::new()
        .route("/health", get(|| async { "ok" }))
        .route_service("/mcp", gateway);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    println!("serving at {url}");
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    let session = Connector::new()
        .connect(ConnectRequest::http(&url)?)
        .await?;
    let tools = session.list_tools().await?;
    for tool in &tools.tools {
        println!("tool: {}", tool.name);
    }
    session.close().await?;
    if std::env::args().any(|arg| arg == "--serve") {
        server.await??;
    }
    group.shutdown().await;
    Ok(())
}
