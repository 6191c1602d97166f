//! A stdio server: spawn it, establish, call a tool, close (stdin EOF, then
//! SIGTERM, then SIGKILL, always reaped).
//!
//! Run: `cargo run --example stdio -- COMMAND ARGS...`, e.g.
//! `cargo run --example stdio -- npx -y @modelcontextprotocol/server-everything stdio`.

use mcp_connect::transport::StdioCommand;
use mcp_connect::{ConnectRequest, Connector};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let Some(program) = args.next() else {
        eprintln!("usage: stdio COMMAND ARGS...");
        std::process::exit(2);
    };
    let command = StdioCommand::new(program).args(args);
    let session = Connector::new()
        .connect(ConnectRequest::stdio(command))
        .await?;
    println!(
        "established {} {} with {} {}",
        session.era(),
        session.protocol_version(),
        session.server_info().name,
        session.server_info().version
    );
    for tool in session.list_tools().await?.tools {
        println!("tool: {}", tool.name);
    }
    session.close().await?;
    Ok(())
}
